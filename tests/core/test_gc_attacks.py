"""The output GC tried as an attacker would, with ordinary commands a session runs: unique
git work inside an old output, data in use, liveness that follows the process, a removal
killed halfway, a journal that cannot be written. Each case failed before its fix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import gc, journal, paths, removal
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, many_files, run_cli, set_mtime
from tests.support import add_record as record

DAY = 86_400
OLD = 8 * DAY




def by_path(report: gc.GcReport) -> dict[str, tuple[str, str]]:
    return {e.path: (e.status, e.reason) for e in report.entries}


def files_under(path: Path) -> int:
    return sum(len(names) for _, _, names in os.walk(path))


@pytest.fixture
def runner() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(["sleep", "120"])
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def clone_of(origin: Path, where: Path) -> Path:
    git(where.parent, "clone", "-q", str(origin), str(where))
    return where


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "origin", files={"a.txt": "a\n", ".gitignore": "build/\nnode_modules/\n.env\n"})


# --- unique work inside an old output --------------------------------------------------------


@pytest.mark.parametrize("work", ["dirty", "untracked", "ignored_env", "secret_in_build", "commit", "stash"])
def test_an_old_clone_with_its_own_work_is_kept(sandbox: SandboxEnv, origin: Path, work: str) -> None:
    clone = clone_of(origin, sandbox.user_tmp / "tool")
    if work == "dirty":
        (clone / "a.txt").write_text("changed\n")
    elif work == "untracked":
        (clone / "new.py").write_text("x = 1\n")
    elif work == "ignored_env":
        (clone / ".env").write_text("TOKEN=1\n")
    elif work == "secret_in_build":
        (clone / "build").mkdir()
        (clone / "build" / ".env").write_text("TOKEN=1\n")
    elif work == "commit":
        (clone / "b.txt").write_text("b\n")
        git(clone, "add", "b.txt")
        git(clone, "commit", "-qm", "local only")
    elif work == "stash":
        (clone / "a.txt").write_text("stashed\n")
        git(clone, "stash", "-q")
    set_mtime(clone, OLD)
    record("s1", clone, "copy")
    expected = "unmerged" if work in ("commit", "stash") else "dirty"
    report = gc.sweep()
    assert by_path(report)[str(clone)] == ("kept", expected)
    assert (clone / ".git").is_dir()


def test_an_old_clean_clone_goes(sandbox: SandboxEnv, origin: Path) -> None:
    """The other side: a clone with nothing of its own (regenerable content only) is an output."""
    clone = clone_of(origin, sandbox.user_tmp / "tool")
    (clone / "node_modules").mkdir()
    (clone / "node_modules" / "x.js").write_text("1")
    set_mtime(clone, OLD)
    record("s1", clone, "copy")
    assert by_path(gc.sweep())[str(clone)] == ("removed", "age")
    assert not clone.exists()


def test_a_clone_whose_worktree_lives_beside_it_keeps_the_only_commit(sandbox: SandboxEnv, origin: Path) -> None:
    clone = clone_of(origin, sandbox.user_tmp / "tool")
    beside = sandbox.user_tmp / "tool-wt"
    git(clone, "worktree", "add", "-q", "-b", "feature", str(beside))
    (beside / "c.txt").write_text("c\n")
    git(beside, "add", "c.txt")
    git(beside, "commit", "-qm", "only here")
    only = git(beside, "rev-parse", "HEAD")
    for path, kind in ((clone, "copy"), (beside, "worktree")):
        set_mtime(path, OLD)
        record("s1", path, kind)
    report = by_path(gc.sweep())
    assert report[str(beside)] == ("kept", "unmerged")
    assert report[str(clone)] == ("kept", "unmerged")
    assert git(beside, "cat-file", "-t", only) == "commit"


def test_a_dirty_worktree_of_another_repository_inside_a_temp_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    other = make_repo(tmp_path / "elsewhere")
    temp = sandbox.user_tmp / "tmp.abcdefgh12"
    temp.mkdir()
    git(other, "worktree", "add", "-q", "-b", "side", str(temp / "wt"))
    (temp / "wt" / "notes.md").write_text("unsaved\n")
    set_mtime(temp, OLD)
    record("s1", temp, "temp", cwd=tmp_path)  # recorded by a session of no repository at all
    assert by_path(gc.sweep())[str(temp)] == ("kept", "dirty")
    assert (temp / "wt" / "notes.md").read_text() == "unsaved\n"


# --- in use -------------------------------------------------------------------------------


def test_a_config_folder_of_a_running_claude_is_in_use(sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    config = sandbox.user_tmp / "cfg"
    (config / "sessions").mkdir(parents=True)
    (config / "sessions" / f"{runner.pid}.json").write_text(json.dumps(
        {"pid": runner.pid, "sessionId": "other", "procStart": proc_start_time(runner.pid)}))
    set_mtime(config, OLD)
    record("recorder-long-gone", config, "config")
    assert by_path(gc.sweep())[str(config)] == ("kept", "in_use")
    assert config.is_dir()


def test_records_stay_live_while_the_claude_process_runs_after_clear(
        sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    """/clear gives the running process a new session id: what the old id recorded is still
    its process's, so it stays until that process ends."""
    sandbox.write_session(str(runner.pid), pid=runner.pid, sessionId="after-clear",
                          procStart=proc_start_time(runner.pid), cwd="/elsewhere")
    temp = sandbox.user_tmp / "tmp.cleared0001"
    temp.mkdir()
    set_mtime(temp, OLD)
    record("before-clear", temp, claude_pid=runner.pid, claude_start=proc_start_time(runner.pid))
    assert by_path(gc.sweep())[str(temp)] == ("kept", "live")
    runner.kill()
    runner.wait()
    assert by_path(gc.sweep())[str(temp)] == ("removed", "age")


def test_a_reused_pid_does_not_keep_records_alive(sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    temp = sandbox.user_tmp / "tmp.reused00001"
    temp.mkdir()
    set_mtime(temp, OLD)
    record("gone", temp, claude_pid=runner.pid, claude_start="1")  # same pid, other start
    assert by_path(gc.sweep())[str(temp)] == ("removed", "age")


def test_a_session_ending_with_resume_keeps_its_cwd(sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    temp = sandbox.user_tmp / "tmp.resumed0001"
    temp.mkdir()
    set_mtime(temp, OLD)
    sandbox.write_session(str(runner.pid), pid=runner.pid, sessionId="s1", cwd=str(temp),
                          procStart=proc_start_time(runner.pid))
    record("other", temp)
    report = gc.sweep(ending_session="s1", end_reason="resume")
    assert by_path(report)[str(temp)] == ("kept", "live")
    report = gc.sweep(ending_session="s1", end_reason="prompt_input_exit")
    assert by_path(report)[str(temp)] == ("removed", "age")


def test_an_unreadable_sessions_file_of_a_running_pid_keeps_everything(
        sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    (sandbox.sessions / f"{runner.pid}.json").write_text('{"pid": ')  # torn mid-rewrite
    temp = sandbox.user_tmp / "tmp.unsure00001"
    temp.mkdir()
    set_mtime(temp, OLD)
    record("s1", temp)
    assert by_path(gc.sweep())[str(temp)] == ("kept", "in_use")
    assert temp.is_dir()


def test_liveness_is_checked_again_at_the_moment_of_removal(
        sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    """A session that starts inside the folder after the judgement keeps it: the folder is
    put back where it was, whole."""
    temp = sandbox.user_tmp / "tmp.lateuser001"
    temp.mkdir()
    (temp / "work.txt").write_text("mine\n")
    set_mtime(temp, OLD)
    record("s1", temp)

    def a_session_starts_there(_: str) -> None:
        sandbox.write_session(str(runner.pid), pid=runner.pid, sessionId="late", cwd=str(temp),
                              procStart=proc_start_time(runner.pid))

    report = gc.sweep(_before_remove=a_session_starts_there)
    assert by_path(report)[str(temp)] == ("kept", "live")
    assert (temp / "work.txt").read_text() == "mine\n"
    assert [e["result"] for e in journal.read_entries()] == ["kept"]


def test_a_secret_written_just_before_removal_keeps_the_clone(sandbox: SandboxEnv, origin: Path) -> None:
    clone = clone_of(origin, sandbox.user_tmp / "tool")
    set_mtime(clone, OLD)
    record("s1", clone, "copy")

    def write_env(target: str) -> None:
        Path(target, ".env").write_text("TOKEN=late\n")

    report = gc.sweep(_before_remove=write_env)
    assert by_path(report)[str(clone)] == ("kept", "dirty")
    assert (clone / ".env").read_text() == "TOKEN=late\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_a_bind_mount_inside_an_old_output_is_never_emptied(sandbox: SandboxEnv, tmp_path: Path) -> None:
    data = tmp_path / "precious"
    data.mkdir()
    (data / "keep.txt").write_text("do not delete\n")
    temp = sandbox.user_tmp / "tmp.mounted0001"
    (temp / "mnt").mkdir(parents=True)
    if subprocess.run(["mount", "--bind", str(data), str(temp / "mnt")], check=False,
                      capture_output=True).returncode != 0:
        pytest.skip("mount --bind is not allowed here")
    try:
        set_mtime(temp, OLD)
        record("s1", temp)
        assert by_path(gc.sweep())[str(temp)] == ("kept", "in_use")
        assert (data / "keep.txt").read_text() == "do not delete\n"
        # and removal itself refuses it, saying why in the journal
        result = removal.remove(temp, sandbox.user_tmp, "gc")
        assert (result.status, result.reason) == ("refused", "mount")
        assert journal.read_entries()[-1]["reason"] == "mount"
        assert (data / "keep.txt").exists()
    finally:
        subprocess.run(["umount", str(temp / "mnt")], check=False)


# --- all or nothing, journal first --------------------------------------------------------


def test_the_journal_comes_first(sandbox: SandboxEnv) -> None:
    temp = sandbox.user_tmp / "tmp.nojournal1"
    temp.mkdir()
    (temp / "f").write_text("x")
    set_mtime(temp, OLD)
    record("s1", temp)
    paths.journal_file().parent.mkdir(parents=True, exist_ok=True)
    paths.journal_file().mkdir()  # nothing can be appended to it
    result = run_cli("gc", "--json")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "journal" in result.stderr
    assert (temp / "f").read_text() == "x"


def test_the_journal_comes_first_in_the_core(sandbox: SandboxEnv) -> None:
    temp = sandbox.user_tmp / "tmp.nojournal2"
    temp.mkdir()
    (temp / "f").write_text("x")
    set_mtime(temp, OLD)
    record("s1", temp)
    paths.journal_file().parent.mkdir(parents=True, exist_ok=True)
    paths.journal_file().mkdir()
    report = gc.sweep()
    assert by_path(report)[str(temp)] == ("kept", "journal") and report.journal_failed
    assert (temp / "f").read_text() == "x"
    assert not any(paths.trash_dir().iterdir()) if paths.trash_dir().exists() else True


_KILLABLE = """
import sys
from app.core import gc
gc.sweep(trash=False, _before_remove=lambda _: print("REMOVING", flush=True))
"""


def test_a_removal_killed_halfway_is_all_or_nothing(sandbox: SandboxEnv) -> None:
    """SIGKILL in the middle of a 40,000-file removal: the folder is either whole where it
    was, or wholly in the trash (renamed in one step) where the next purge finishes it; its
    journal line was written before the first file went."""
    temp = sandbox.user_tmp / "tmp.killed00001"
    for d in range(40):
        sub = temp / f"d{d}"
        sub.mkdir(parents=True)
        # one file and 999 hard links to it: as many entries to move and unlink (what a kill
        # can cut), ~4 times cheaper to make than 1,000 new files
        many_files(sub, ["f0"])
        for f in range(1, 1000):
            os.link(sub / "f0", sub / f"f{f}")
    total = files_under(temp)
    set_mtime(temp, OLD)
    record("s1", temp)
    proc = subprocess.Popen([sys.executable, "-P", "-c", _KILLABLE], stdout=subprocess.PIPE, env=dict(os.environ))
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"REMOVING"
    time.sleep(0.15)  # into the purge
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if temp.exists():
        assert files_under(temp) == total  # untouched
        return
    lines = journal.read_entries()
    if not lines:  # killed while it waited, pending, in the trash: the next purge puts it back whole
        removal.purge_trash()
        assert files_under(temp) == total
        return
    assert [e["result"] for e in lines] == ["removed"] and lines[0]["path"] == str(temp)
    assert any(paths.trash_dir().iterdir())  # the rest waits in the trash
    removal.purge_trash()
    assert not any(paths.trash_dir().iterdir())
    assert not temp.exists()


def test_a_folder_name_cannot_forge_a_gc_report_line(sandbox: SandboxEnv) -> None:
    temp = sandbox.user_tmp / "tmp.x\nGC removed=999 freed=1 dry_run=false"
    temp.mkdir()
    set_mtime(temp, OLD)
    record("s1", temp)
    result = run_cli("gc", "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    (summary,) = [line for line in lines if line.startswith("GC ")]
    assert summary.startswith("GC removed=1 freed=") and summary.endswith(" dry_run=true")
    assert any("tmp.x\\nGC removed=999" in line for line in lines)


def test_a_fifo_among_the_records_or_as_a_log_never_hangs(sandbox: SandboxEnv, tmp_path: Path) -> None:
    paths.gc_dir().mkdir(parents=True, exist_ok=True)
    os.mkfifo(paths.gc_dir() / "fifo-session.json")
    log_file = paths.session_log(None, None)  # a command run by hand logs here (no session)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(log_file)
    command = [sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())", "gc", "--json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=20, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["entries"] == []
    log_file.unlink()  # the same run with a plain log: it is the file this command writes
    subprocess.run(command, capture_output=True, text=True, timeout=20, cwd=tmp_path, check=True)
    assert log_file.is_file() and log_file.read_text()
