"""Red team, round fourteen: the session-start cleanup, liveness and the removal core.

Found and fixed (liveness): a Claude that goes on with a session its command line names by
no id held nothing, so the month-old folder of that session went at another session's
cleanup: `claude --continue` (`-c`, `-pc`, `claude -p --bare -c` from a script, which writes
no sessions file and runs no hook) goes on with the newest conversation of its folder, and
`claude --resume NAME` with the session titled NAME (`claude -n NAME`, `/rename`); a
transcript vanishing while read dropped the whole folder's; a FIFO named like a transcript
would have held the look for a title for ever (app/core/continued_sessions.py).

Found and fixed (hangs): a remote mount that stopped answering (an `sshfs` whose host went
away) held the cleanup for ever, its lock with it, so no session start cleaned again: a
mount inside an old session folder (the measure looked at each mount point before asking
whether it was one; the dashboard's breakdown too), inside a worktree or a clone there
(`git status` walked into it, 120 s a call), a session working on one, a known project on
one (every look at who is live made the cwd a real path; `.claude.json`'s project was asked
whether it was a folder), a `claude -c` working on one, one mounted on a session's folder
itself (app/core/hung_mounts.py).

What held: an old session folder pinned with `chattr +a` or `+i` between the judgement and
the removal stays whole, journaled `failed`, and goes once unpinned; a `claude -c` in a
subfolder of a checkout keeps its own folder's newest session beside the top's; a local
session's hooks and its detached cleanup never wait on a dead `sshfs` holding all of the above.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.core import paths
from app.core.claude_process import start_of
from tests.core.test_red_team_9_removal import clean_json
from tests.core.test_red_team_13_cleanup import _old_folder as old_session_folder
from tests.support import (
    SandboxEnv,
    hung_fuse_mounts,
    make_repo,
    run_cli,
    running_claudes,
    set_mtime,
)

_clean = clean_json  # `claudetto clean --json`, its report
DAY = 86_400


def _old_folder(sandbox: SandboxEnv, slug: str, sid: str, age_s: float = 31 * DAY) -> Path:
    """`claude-<uid>/<slug>/<sid>/scratchpad/notes.md`, all `age_s` old."""
    return old_session_folder(sandbox, slug, sid, age_s, ("scratchpad", "notes.md", "plan of the migration\n"))


@pytest.fixture
def claude_in(sandbox: SandboxEnv) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """`claude ARGS...` running in a folder, with no sessions file (a headless run)."""
    with running_claudes(sandbox.root) as launch:
        yield lambda cwd, *args: launch(*args, cwd=cwd)

def kept_while_it_runs(proc: subprocess.Popen[bytes], kept: Path, gone: Path) -> None:
    """A cleanup while `proc` runs keeps the session folder `kept` (and removes `gone`); one
    after it ended removes `kept` too."""
    report = _clean()
    assert (kept / "scratchpad" / "notes.md").is_file(), report
    assert not gone.exists()
    proc.kill()
    proc.wait()
    _clean()
    assert not kept.exists()


def _transcript(sandbox: SandboxEnv, project: Path, sid: str, age_s: float) -> Path:
    folder = sandbox.config / "projects" / paths.project_slug(str(project))
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / f"{sid}.jsonl"
    file.write_text(json.dumps({"sessionId": sid, "cwd": str(project), "type": "user"}) + "\n")
    set_mtime(file, age_s)
    return file


@pytest.mark.parametrize("args", [
    ["-p", "--bare", "--continue", "go on"],
    ["-p", "-c", "go on"],
    ["--continue"],
    ["-c"],
    ["-pc", "go on"],
])
def test_a_claude_continuing_the_last_session_of_its_folder_keeps_its_old_folder(
        sandbox: SandboxEnv, claude_in: Callable[..., subprocess.Popen[bytes]], tmp_path: Path,
        args: list[str]) -> None:
    """LOSS (fixed). `claude -p --bare --continue "go on"` (a script going on with yesterday's
    task, no sessions file, no hook) in a project last used 40 days ago: it goes on with the
    newest conversation of its folder, under its id, in its temp folder. Before: it held
    nothing, and its scratchpad went at another session's cleanup. A session of the folder
    started since (a newer transcript) does not make it lose it; an older one goes."""
    project = tmp_path / "proj"
    project.mkdir()
    slug = paths.project_slug(str(project))
    older, last = str(uuid.uuid4()), str(uuid.uuid4())
    _transcript(sandbox, project, older, 60 * DAY)
    _transcript(sandbox, project, last, 40 * DAY)
    kept = _old_folder(sandbox, slug, last, 40 * DAY)
    gone = _old_folder(sandbox, slug, older, 60 * DAY)
    proc = claude_in(project, *args)
    _transcript(sandbox, project, str(uuid.uuid4()), 0)  # another session of the folder since
    kept_while_it_runs(proc, kept, gone)



def _titled(file: Path, title: str) -> None:
    """What `/rename TITLE` (or `claude -n TITLE`) appends to the transcript, its age kept."""
    st = file.stat()
    sid = file.name.removesuffix(".jsonl")
    with file.open("a") as fh:
        fh.write(json.dumps({"type": "custom-title", "customTitle": title, "sessionId": sid}) + "\n")
    import os

    os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("args", [
    ["-p", "--bare", "--resume", "auth-refactor", "go on"],
    ["--resume=Auth-Refactor"],
    ["-r", "auth-refactor"],
])
def test_a_claude_resuming_a_session_by_its_title_keeps_its_old_folder(
        sandbox: SandboxEnv, claude_in: Callable[..., subprocess.Popen[bytes]], tmp_path: Path,
        args: list[str]) -> None:
    """LOSS (fixed). `claude -n auth-refactor` a month ago; now a script's `claude -p --bare
    --resume auth-refactor "go on"`: Claude resolves the title to the session and goes on with
    it, no sessions file, no hook. Before: a title is no id, it held nothing, and the
    session's scratchpad went at another session's cleanup. A session of another title, and
    the picker's search term that no title has (`claude --resume fix-login`), hold nothing."""
    project = tmp_path / "proj"
    project.mkdir()
    slug = paths.project_slug(str(project))
    named, other = str(uuid.uuid4()), str(uuid.uuid4())
    _titled(_transcript(sandbox, project, named, 45 * DAY), "auth-refactor")
    _titled(_transcript(sandbox, project, other, 40 * DAY), "billing")
    kept = _old_folder(sandbox, slug, named, 45 * DAY)
    gone = _old_folder(sandbox, slug, other, 40 * DAY)
    proc = claude_in(project, *args)
    claude_in(project, "--resume", "fix-login")
    kept_while_it_runs(proc, kept, gone)


def test_a_fifo_named_like_a_transcript_never_hangs_the_look_for_a_title(
        sandbox: SandboxEnv, claude_in: Callable[..., subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """A FIFO named `<id>.jsonl` in the project's transcripts, with a `claude --resume NAME`
    running: the look for the title reads regular files only (opened plainly, it waited for a
    writer that never came, and the cleanup with it)."""
    import os

    project = tmp_path / "proj"
    project.mkdir()
    folder = sandbox.config / "projects" / paths.project_slug(str(project))
    folder.mkdir(parents=True)
    os.mkfifo(folder / f"{uuid.uuid4()}.jsonl")
    sid = str(uuid.uuid4())
    gone = _old_folder(sandbox, paths.project_slug(str(project)), sid)
    claude_in(project, "-p", "--resume", "auth-refactor", "go on")
    _clean()
    assert not gone.exists()


def test_a_claude_continuing_in_a_subfolder_keeps_its_folders_last_session_beside_the_tops(
        sandbox: SandboxEnv, claude_in: Callable[..., subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """(Held.) `cd ~/proj/api && claude -p --bare -c`: the newest conversation of `api`'s own
    transcripts (40 days old) is the one it goes on with, though the checkout's top has a newer
    one (31 days): each folder's newest counts, not the newest of both."""
    project = tmp_path / "proj"
    make_repo(project)
    sub = project / "api"
    sub.mkdir()
    own, top = str(uuid.uuid4()), str(uuid.uuid4())
    _transcript(sandbox, sub, own, 40 * DAY)
    _transcript(sandbox, project, top, 31 * DAY)
    kept = _old_folder(sandbox, paths.project_slug(str(sub)), own, 40 * DAY)
    claude_in(sub, "-p", "--bare", "-c", "go on")
    report = _clean()
    assert (kept / "scratchpad" / "notes.md").is_file(), report


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chattr)")
@pytest.mark.parametrize("flag", ["a", "i"])
def test_a_session_folder_made_append_only_or_immutable_after_its_judgement_stays_whole(
        sandbox: SandboxEnv, flag: str) -> None:
    """(Held.) `chattr +a` (or `+i`) on an old session folder between the cleanup's judgement
    and its removal (the user pins it: it cannot be renamed into the trash, and emptied in
    place it would be half deleted): nothing of it goes, no line says it went, and once the
    flag is cleared the next cleanup takes it whole."""
    from app.core import hygiene

    sid = str(uuid.uuid4())
    folder = _old_folder(sandbox, "-srv-work", sid)

    def pin(_: str) -> None:
        if subprocess.run(["chattr", f"+{flag}", str(folder)], capture_output=True, check=False).returncode:
            pytest.skip(f"chattr +{flag} is not supported here")

    try:
        report = hygiene.run_cleanup([], _before_remove=pin)
        assert (folder / "scratchpad" / "notes.md").read_text() == "plan of the migration\n"
        assert report.folders == 0 and report.bytes == 0
        assert "removed" not in _results(folder), _results(folder)
    finally:
        subprocess.run(["chattr", f"-{flag}", str(folder)], capture_output=True, check=False)
    set_mtime(folder, 40 * DAY)
    assert _clean()["cleaned"] == {"folders": 1, "bytes": 12288, "files": 1, "worktrees": 0, "probes": 0}
    assert not folder.exists()
    assert _results(folder)[-1] == "removed"


def _results(path: Path) -> list[str]:
    file = paths.journal_file()
    lines = [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []
    return [str(line.get("result")) for line in lines if line.get("path") == str(path)]


@pytest.fixture
def hung_fuse() -> Iterator[Callable[[Path], None]]:
    """A FUSE mount whose server never answers (an `sshfs` whose host went away): any look at
    the mount point itself waits. Aborted (its device closed) and unmounted at the end."""
    with hung_fuse_mounts() as mount:
        yield mount


def test_a_hung_fuse_mount_in_an_old_session_folder_is_never_waited_on(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None]) -> None:
    """HANG (fixed). Claude's Bash ran `sshfs host: $scratchpad/remote`; the host went away,
    the session ended a month ago. Before: the cleanup's measure looked at the mount point
    itself (one `lstat` of each entry, before it asked whether it was one) and waited for
    ever, holding the cleanup's lock: `claudetto clean` never returned, and no session start
    cleaned anything again. Now a listed mount point is passed over unlooked at, and the
    folder is kept (a mount inside)."""
    sid = str(uuid.uuid4())
    folder = _old_folder(sandbox, "-srv-work", sid)
    hung_fuse(folder / "scratchpad" / "remote")
    set_mtime(folder / "scratchpad", 31 * DAY)
    set_mtime(folder, 31 * DAY)
    done = run_cli("clean", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    assert (folder / "scratchpad" / "notes.md").is_file()



def test_the_disk_browser_lists_a_hung_fuse_mount_without_looking_at_it(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None], tmp_path: Path) -> None:
    """The dashboard's breakdown of a folder holding the hung mount: its own entry, empty,
    and the rest measured (a look at it waited for ever, in a subprocess here)."""
    top = tmp_path / "top"
    (top / "own").mkdir(parents=True)
    (top / "own" / "f").write_bytes(b"o" * 5000)
    hung_fuse(top / "remote")
    probe = ("import json, sys; from app.core.scanner import children; "
             "print(json.dumps(sorted((c.path, c.files) for c in children(sys.argv[1]))))")
    done = subprocess.run([sys.executable, "-P", "-c", probe, str(top)], capture_output=True, text=True,
                          timeout=30, check=False, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[str(top / "own"), 1], [str(top / "remote"), 0]]


def test_an_old_worktree_holding_a_hung_fuse_mount_is_kept_without_waiting(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None], tmp_path: Path) -> None:
    """HANG (fixed). The same mount in an old, clean, merged worktree: `git status` waited on
    it (up to its 120 s bound, each call), the cleanup with it. A worktree holding a mount
    point is kept `in_use` before git is asked (its removal would be refused anyway)."""
    from tests.support import git

    repo = make_repo(tmp_path / "proj")
    tree = repo / ".claude" / "worktrees" / "wt"
    git(repo, "worktree", "add", "-q", "-b", "worktree-wt", str(tree))
    hung_fuse(tree / "remote")
    set_mtime(tree, 40 * DAY)
    done = run_cli("clean", "--json", str(repo), timeout=60)
    assert done.returncode == 0, done.stderr
    assert tree.is_dir()
    assert {"path": str(tree), "reason": "in_use"} in json.loads(done.stdout)["worktrees_kept"]


def test_a_clone_holding_a_hung_fuse_mount_in_an_old_session_folder_is_kept_without_waiting(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None]) -> None:
    """HANG (fixed). `git clone` into the scratchpad, then `sshfs host: clone/remote`: the
    last look at the clone's work ran `git status`, which walked into the dead mount and
    waited up to its bound (120 s) for each call. A repository holding a mount point is
    kept `in_use` before git is asked (the removal would refuse it anyway)."""
    import time

    sid = str(uuid.uuid4())
    folder = _old_folder(sandbox, "-srv-work", sid)
    clone = make_repo(folder / "scratchpad" / "clone")
    hung_fuse(clone / "remote")
    for path in (folder / "scratchpad", folder):
        set_mtime(path, 31 * DAY)
    began = time.monotonic()
    done = run_cli("clean", "--json", timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - began < 30
    assert (folder / "scratchpad" / "notes.md").is_file()


def test_a_session_working_on_a_hung_fuse_mount_holds_no_other_cleanup(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None], tmp_path: Path,
        claude_in: Callable[..., subprocess.Popen[bytes]]) -> None:
    """HANG (fixed). A second session works in a project on an `sshfs` whose host went away.
    Before: every look at who is live made its cwd a real path (a look at the dead mount) and
    waited for ever: `claudetto clean`, the session start's cleanup (its lock held for good),
    WorktreeRemove. Now that cwd is compared as written, never looked at (logged); the
    session stays live by its id."""
    remote = tmp_path / "remote"
    hung_fuse(remote)
    proc = claude_in(tmp_path)
    sid = str(uuid.uuid4())
    sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId=sid, cwd=str(remote / "proj"),
                          procStart=start_of(proc.pid))
    gone = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    kept = _old_folder(sandbox, paths.project_slug(str(remote / "proj")), sid)
    done = run_cli("clean", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    assert not gone.exists()
    assert kept.is_dir()


def test_a_known_project_on_a_hung_fuse_mount_holds_no_cleanup(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None], tmp_path: Path) -> None:
    """HANG (fixed). Last week's project on the dev box's `sshfs` (in `.claude.json`, as
    Claude records every project); the laptop is offline now. Before: every cleanup looked
    at the project (`isdir`, its git root, its settings) and waited for ever, holding the
    lock. Now it is passed over, logged, and the rest is cleaned."""
    remote = tmp_path / "devbox"
    hung_fuse(remote)
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(remote / "api"): {}}}))
    gone = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    done = run_cli("clean", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    assert not gone.exists()


def test_a_claude_continuing_on_a_hung_fuse_mount_holds_no_cleanup(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None], tmp_path: Path,
        claude_in: Callable[..., subprocess.Popen[bytes]]) -> None:
    """HANG (fixed with the above). `claude -p --bare -c` started in a project on the `sshfs`
    before its host went away: the folder its conversations are kept under was looked for by
    its checkout's top, a look at the dead mount. Now its own folder's newest session is kept
    and nothing there is looked at."""
    remote = tmp_path / "devbox"
    (remote / "api").mkdir(parents=True)
    proc = claude_in(remote / "api", "-p", "--bare", "-c", "go on")
    sid = str(uuid.uuid4())
    _transcript(sandbox, remote / "api", sid, 40 * DAY)
    kept = _old_folder(sandbox, paths.project_slug(str(remote / "api")), sid)
    hung_fuse(remote)  # mounted over it after the Claude went in: its cwd is under the mount point
    gone = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    done = run_cli("clean", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    assert not gone.exists()
    assert kept.is_dir()
    assert proc.poll() is None


def test_the_hooks_of_a_local_session_never_wait_on_a_hung_fuse_mount(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None], tmp_path: Path,
        claude_in: Callable[..., subprocess.Popen[bytes]]) -> None:
    """Everything on the dead `sshfs` at once (a project in `.claude.json`, a session working
    there, a `claude -c` in it) while a local session's hooks run as Claude runs them: each
    returns at once, and the detached cleanup the session start leaves finishes."""
    import time

    from tests.support import run_hook

    remote = tmp_path / "devbox"
    (remote / "api").mkdir(parents=True)
    claude_in(remote / "api", "-c")
    other = claude_in(tmp_path)
    hung_fuse(remote)
    sandbox.write_session(str(other.pid), pid=other.pid, sessionId=str(uuid.uuid4()), cwd=str(remote / "api"),
                          procStart=start_of(other.pid))
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(remote / "api"): {}}}))
    project = make_repo(tmp_path / "local")
    sid = str(uuid.uuid4())
    gone = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    base = {"session_id": sid, "cwd": str(project), "transcript_path": str(tmp_path / "t.jsonl")}
    for event, extra in [("SessionStart", {"source": "startup"}), ("UserPromptSubmit", {"prompt": "hi"}),
                         ("SessionEnd", {"reason": "other"})]:
        began = time.monotonic()
        done = run_hook({**base, "hook_event_name": event, **extra}, cwd=project, timeout=20)
        assert done.returncode == 0, (event, done.stderr)
        assert time.monotonic() - began < 5, event
    deadline = time.monotonic() + 30
    while gone.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not gone.exists()


def test_a_hung_fuse_mount_as_an_old_session_folder_itself_is_never_waited_on(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None]) -> None:
    """HANG (fixed). The dead `sshfs` mounted on a session's folder itself: the cleanup's
    look at each entry of Claude's temp folder waited on it for ever. It is passed over now
    (nothing of it judged, nothing journaled), and the rest is cleaned."""
    other = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    hung_fuse(sandbox.claude_tmp / "-srv-work" / str(uuid.uuid4()))
    done = run_cli("clean", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    assert not other.exists()


def test_gc_never_waits_on_a_hung_fuse_mount_inside_an_old_output(
        sandbox: SandboxEnv, hung_fuse: Callable[[Path], None]) -> None:
    """(Held, with the measure's fix above.) `claudetto gc` on an old recorded output with the
    dead `sshfs` inside, and a clone holding another: it returns, keeps both, and takes an old
    output beside them."""
    from tests.support import add_record

    out = sandbox.user_tmp / "tmp.Hung1"
    (out / "data").mkdir(parents=True)
    hung_fuse(out / "data" / "remote")
    clone = make_repo(sandbox.user_tmp / "tmp.Hung2")
    hung_fuse(clone / "remote")
    plain = sandbox.user_tmp / "tmp.Plain"
    plain.mkdir()
    (plain / "x.txt").write_text("x\n")
    for path in (out / "data", out, clone, plain / "x.txt", plain):
        set_mtime(path, 10 * DAY)
    for path in (out, clone, plain):
        add_record("s-old", path)
    done = run_cli("gc", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    assert out.is_dir() and clone.is_dir()
    assert not plain.exists(), done.stdout
