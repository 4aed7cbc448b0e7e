"""Red team, round thirteen: the session-start cleanup and liveness.

Found and fixed: a Claude of a second config folder (`CLAUDE_CONFIG_DIR=~/.claude-work`)
whose sessions file could not be read at the cleanup's look (caught half rewritten) was
passed over, where one of our own config folder makes every session unsure: the old
folder of the session it had resumed went. A Claude whose command line names the session
(`claude --resume <id>` before its sessions file is written, `claude -p --bare --resume`,
which runs no hook, a fork's parent) held nothing: the month-old folder it resumed went.
The notes of which Claude ran which id were written into the user's own clone at
`<tmp>/claudetto`. A run under `sudo` keeping the home left root's 0600 lock files and
journal in the user's state: no removal was ever journaled again.

What held: an old session folder holding a FIFO, a device node and names that are not
UTF-8 (in it, and in its project folder's name) goes, whole, journaled, and nothing hangs;
links to the home put in Claude's temp folder take nothing of it; a worktree of the user's
repository with work only there keeps its old session folder.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.core import paths, sessions
from app.core.claude_process import start_of
from app.core.earlier_sessions import FILE_NAME, places
from tests.core.test_other_configs import other_claude
from tests.core.test_red_team_6_removal import AS_A_USER, as_a_user_works
from tests.core.test_red_team_9_removal import clean_json
from tests.core.test_red_team_10_liveness import settled
from tests.core.test_red_team_11_cleanup import Headless
from tests.hooks.test_checkouts import Claude
from tests.support import SandboxEnv, git, make_repo, running_claudes, set_mtime

_clean = clean_json  # `claudetto clean --json`, its report
DAY = 86_400


def _old_folder(sandbox: SandboxEnv, slug: str, sid: str, age_s: float = 31 * DAY,
                inner: tuple[str, str, str] = ("tasks", "b1.output", "build log\n")) -> Path:
    """`claude-<uid>/<slug>/<sid>/tasks/b1.output` (`inner`: folder, file, text), all `age_s` old."""
    folder = sandbox.claude_tmp / slug / sid
    (folder / inner[0]).mkdir(parents=True)
    (folder / inner[0] / inner[1]).write_text(inner[2])
    for path in (folder / inner[0] / inner[1], folder / inner[0], folder):
        set_mtime(path, age_s)
    return folder


def _journaled(path: Path) -> list[str]:
    file = paths.journal_file()
    lines = [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []
    return [str(line.get("result")) for line in lines if line.get("path") == str(path)]


# --- liveness ---------------------------------------------------------------------------------


def test_a_second_accounts_claude_whose_file_is_caught_half_written_keeps_its_old_folder(
        sandbox: SandboxEnv) -> None:
    """A second account's Claude resumed a month-old session; its sessions file is being
    rewritten (cut short) when the cleanup reads it. Before: passed over, as if no Claude
    ran there, and the resumed session's folder went."""
    config = sandbox.home / ".claude-work"
    child, sid = other_claude(config, str(sandbox.home))
    try:
        folder = _old_folder(sandbox, "-srv-work", sid)
        file = config / "sessions" / f"{child.pid}.json"
        file.write_text(file.read_text()[:40])
        _clean()
        assert (folder / "tasks" / "b1.output").is_file()
        file.write_text(json.dumps({"pid": child.pid, "sessionId": sid, "cwd": "/srv/work"}))
        _clean()
        assert folder.is_dir()  # readable again: live by its id
    finally:
        child.kill()
        child.wait()
    _clean()
    assert not folder.exists()  # its Claude ended: the folder is an ended session's


@pytest.fixture
def claude_running(sandbox: SandboxEnv) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """`claude ARGS...` as a running process with no sessions file (`running_claudes`)."""
    with running_claudes(sandbox.root) as launch:
        yield launch


@pytest.mark.parametrize("args", [
    ["--resume", "{sid}"],  # between its start and its sessions file, or an older Claude that writes none
    ["-r", "{sid}"],
    ["--resume={sid}"],
    ["-r{sid}"],
    ["-p", "--bare", "--resume", "{sid}", "--output-format", "json", "go on"],  # headless: --bare runs no hook
    ["--resume", "{sid}", "--fork-session"],  # the parent's scratchpad is in the conversation
    ["--session-id", "{sid}"],
])
def test_a_claude_whose_command_line_names_an_old_session_keeps_its_folder_while_it_runs(
        sandbox: SandboxEnv, claude_running: Callable[..., subprocess.Popen[bytes]], args: list[str]) -> None:
    """Before: a Claude that names the session on its command line but in no sessions file
    (one starting, whose file is not written yet; `claude -p --bare --resume`, the mode the
    docs advise for scripts, which runs no hook that could note it; a fork in a new process)
    held nothing, and the month-old folder it
    resumes went at another session's cleanup."""
    sid = str(uuid.uuid4())
    folder = _old_folder(sandbox, "-srv-work", sid)
    proc = claude_running(*(arg.format(sid=sid) for arg in args))
    report = _clean()
    assert (folder / "tasks" / "b1.output").is_file(), report
    proc.kill()
    proc.wait()
    _clean()
    assert not folder.exists()


def test_two_claudes_resuming_old_sessions_opened_together_keep_both_folders(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`claude --resume X` and `claude --resume Y` in two terminals at once, each session's
    start firing before its Claude has written its sessions file: the first start's cleanup
    runs (the second skips it, busy). Before: the other Claude, found by no file and noted by
    no hook (its hook finds no Claude with a file above it), held nothing, and the folder it
    was resuming went."""
    project = tmp_path / "proj"
    project.mkdir()
    slug = paths.project_slug(str(project))
    ids = [str(uuid.uuid4()) for _ in range(2)]
    folders = [_old_folder(sandbox, slug, sid) for sid in ids]
    runs = [Headless(sandbox, sid, project, []) for sid in ids]
    try:
        for run in runs:
            run.start(source="resume")
        settled(sandbox)
        assert all((folder / "tasks" / "b1.output").is_file() for folder in folders)
    finally:
        for run in runs:
            run.exit()
    _clean()
    assert not any(folder.exists() for folder in folders)


def test_a_resume_search_term_or_another_program_naming_an_id_holds_nothing(
        sandbox: SandboxEnv, claude_running: Callable[..., subprocess.Popen[bytes]],
        started: list[subprocess.Popen[bytes]]) -> None:
    """`claude --resume fix-login` opens the picker with a search term: no id. A program that
    is not Claude naming an id (`less <id>.log`... `sleep`) is no Claude running it."""
    sid = str(uuid.uuid4())
    folder = _old_folder(sandbox, "-srv-work", sid)
    claude_running("--resume", "fix-login")
    started.append(subprocess.Popen(["sh", "-c", 'sleep 60; : --resume "$0"', sid]))
    _clean()
    assert not folder.exists()


def test_the_claude_that_ends_a_session_it_was_started_to_resume_does_not_keep_it_live(
        sandbox: SandboxEnv, claude_running: Callable[..., subprocess.Popen[bytes]]) -> None:
    """At the end of the session for good its Claude still runs (its SessionEnd hook): its
    command line names the session, but it is the one exiting, as its file says."""
    sid = str(uuid.uuid4())
    proc = claude_running("--resume", sid)
    sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId=sid, cwd="/srv/work",
                          procStart=start_of(proc.pid))
    assert sessions.liveness().has(sid)
    assert not sessions.liveness(ending_session=sid).has(sid)
    assert not sessions.liveness(ending_session=sid, ending_pid=proc.pid).has(sid)


def test_a_headless_run_of_the_same_session_keeps_it_live_when_the_interactive_one_ends_it(
        sandbox: SandboxEnv, claude_running: Callable[..., subprocess.Popen[bytes]]) -> None:
    """`claude --resume X` in a terminal, and a script's `claude -p --resume X "..."` beside it,
    which keeps no sessions file. Before: when the terminal's Claude ended X for good, every
    Claude without a file naming X was taken for the one exiting, the headless run too, and
    X's folder and outputs were judged as an ended session's while it still ran them."""
    sid = str(uuid.uuid4())
    terminal = claude_running("--resume", sid)
    sandbox.write_session(str(terminal.pid), pid=terminal.pid, sessionId=sid, cwd="/srv/work",
                          procStart=start_of(terminal.pid))
    headless = claude_running("-p", "--resume", sid, "summarize")
    assert sessions.liveness(ending_session=sid).has(sid)
    assert sessions.liveness(ending_session=sid, ending_pid=terminal.pid).has(sid)
    headless.kill()
    headless.wait()
    assert not sessions.liveness(ending_session=sid).has(sid)


@pytest.mark.parametrize("written", ["before", "after"])
def test_a_crashs_half_written_sessions_file_whose_pid_another_process_got_since_holds_nothing(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], written: str) -> None:
    """A Claude killed while it rewrote its file left it half written; its pid went to another
    program started since. Before: the file, unreadable while a process of its name's pid ran,
    made every session unsure, and nothing a session holds went for as long as that program
    ran. A file last written before its pid's process started is not that process's. One
    written since (`after`: the running Claude's own, caught half rewritten) still is."""
    folder = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    other = subprocess.Popen(["sleep", "60"])
    started.append(other)
    assert start_of(other.pid)
    file = sandbox.write_session(str(other.pid), pid=other.pid)
    file.write_text(f'{{"pid": {other.pid}, "sessionId": "')
    if written == "before":
        set_mtime(file, 3600)
    _clean()
    assert folder.exists() == (written == "after")


# --- the notes of which Claude ran which id -----------------------------------------------------


def test_the_notes_are_never_written_into_a_users_clone_named_like_the_log_root(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`<tmp>/claudetto` is the user's own clone (the gate-log rule already leaves such a
    root alone). Before: every SessionStart wrote `claude-processes.json` and its lock into
    it, two files the user never made in their working tree."""
    clone = make_repo(paths.log_root(), files={"README.md": "mine\n"})
    project = tmp_path / "proj"
    project.mkdir()
    claude = Claude(sandbox, str(uuid.uuid4()), project)
    try:
        claude.start()
        settled(sandbox)
        assert not any(FILE_NAME in name for name in os.listdir(clone))
        assert FILE_NAME not in git(clone, "status", "--porcelain", "--untracked-files=all")
        first = claude.session_id
        claude.session_id = str(uuid.uuid4())
        claude.write_file()
        claude.start("clear")
        assert sessions.liveness().has(first)  # noted in claudetto's own state
    finally:
        claude.proc.kill()
        claude.proc.wait()


def test_the_shared_notes_named_through_a_link_are_one_place(sandbox: SandboxEnv, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """claudetto's state named through a link to the log root (`CLAUDETTO_HOME=~/ct` with
    `~/ct` -> `<tmp>/claudetto`) is the shared place itself: one file, noted once."""
    paths.log_root().mkdir(parents=True)
    os.symlink(paths.log_root(), tmp_path / "ct")
    monkeypatch.setenv("CLAUDETTO_HOME", str(tmp_path / "ct"))
    assert places() == [str(tmp_path / "ct" / FILE_NAME)]


# --- what goes, whatever it holds -------------------------------------------------------------


def test_an_old_folder_holding_a_fifo_and_a_device_node_goes_without_hanging(sandbox: SandboxEnv) -> None:
    """(Held.) Nothing reads the FIFO (no writer would ever come) nor the device: unlinked."""
    folder = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    os.mkfifo(folder / "tasks" / "pipe")
    os.mknod(folder / "tasks" / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    set_mtime(folder / "tasks", 31 * DAY)
    set_mtime(folder, 31 * DAY)
    report = _clean()
    assert not folder.exists() and _journaled(folder) == ["removed"], report
    assert os.path.exists("/dev/null") and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_names_that_are_not_utf8_go_and_are_journaled(sandbox: SandboxEnv) -> None:
    """(Held.) A file name of Latin-1 bytes inside, and a project folder whose name is not
    UTF-8 (a path Claude slugged from raw bytes): both folders go, each journaled."""
    inside = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    (Path(os.fsdecode(os.path.join(os.fsencode(inside), b"caf\xe9.txt")))).write_bytes(b"x")
    set_mtime(inside, 31 * DAY)
    odd = _old_folder(sandbox, os.fsdecode(b"-srv-\xff\xfe"), str(uuid.uuid4()))
    report = _clean()
    assert not inside.exists() and not odd.exists(), report
    assert _journaled(inside) == ["removed"] and _journaled(odd) == ["removed"]


def test_links_to_the_home_put_in_claudes_temp_folder_by_hand_take_nothing_of_it(sandbox: SandboxEnv) -> None:
    """(Held.) `ln -s ~ ...` as a probe's name, as a session folder's, as a project folder's,
    and inside an old session folder: the one inside goes with its folder, the others stay,
    and never what they point at."""
    (sandbox.home / "thesis.tex").write_text("years of work\n")
    sid = str(uuid.uuid4())
    links = [sandbox.claude_tmp / "fswatch-probe-home", sandbox.claude_tmp / "-home-me" / sid,
             sandbox.claude_tmp / "-home-me-proj"]
    links[1].parent.mkdir(parents=True)
    for link in links:
        os.symlink(sandbox.home, link)
        os.utime(link, (0, 0), follow_symlinks=False)
    folder = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    os.symlink(sandbox.home, folder / "tasks" / "home")
    set_mtime(folder / "tasks", 31 * DAY)
    set_mtime(folder, 31 * DAY)
    report = _clean()
    assert (sandbox.home / "thesis.tex").read_text() == "years of work\n", report
    assert not folder.exists()  # its link went with it
    assert all(os.path.islink(link) for link in links)  # the removal takes no link for a folder
    assert report["unknown_kept"] == 2


def test_an_old_folder_holding_a_worktree_of_the_users_repository_with_work_only_there_is_kept(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """(Held.) `git worktree add <session folder>/tasks/wt` of the user's repository: a commit
    on its new branch only, and an edit not committed; kept, and git still knows it."""
    repo = make_repo(tmp_path / "repo", files={"a.txt": "a\n"})
    folder = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    worktree = folder / "tasks" / "wt"
    git(repo, "worktree", "add", "-q", "-b", "spike", str(worktree))
    (worktree / "b.txt").write_text("b\n")
    git(worktree, "add", "b.txt")
    git(worktree, "commit", "-qm", "spike")
    (worktree / "a.txt").write_text("edited\n")
    for path in (folder / "tasks", folder):
        set_mtime(path, 31 * DAY)
    _clean()
    assert (worktree / "a.txt").read_text() == "edited\n"
    assert str(worktree) in git(repo, "worktree", "list")


# --- a run as another user ----------------------------------------------------------------------


@pytest.mark.skipif(not as_a_user_works(), reason="needs root and setpriv to act as a plain user")
def test_files_a_run_as_another_user_left_in_the_state_never_stop_every_removal(sandbox: SandboxEnv) -> None:
    """`sudo claudetto clean` keeping the user's HOME (macOS's sudo, `sudo -E`) made the
    state's lock files as root, mode 0600 (here: of another uid, the test's user being root
    without its override of permissions). Before: the user's next cleanup could open neither:
    it ran without its own lock, the journal's (and a journal made by that run) refused every
    line, and nothing was ever removed again (`journal`), by any cleanup or GC. Another
    user's file this user cannot open in its own state folder is set aside and made anew."""
    folder = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    sandbox.state.mkdir(exist_ok=True)
    theirs = json.dumps({"path": "/x", "result": "removed", "id": "ab12"}) + "\n"
    for name in ("journal.jsonl.lock", "hygiene.lock", "journal.jsonl"):
        lock = sandbox.state / name
        lock.write_text(theirs if name == "journal.jsonl" else "")
        lock.chmod(0o600)
        os.chown(lock, 65534, 65534)
    done = subprocess.run([*AS_A_USER, sys.executable, "-P", "-c",
                           "import sys; from app.cli import main; sys.exit(main())", "clean", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert not folder.exists() and _journaled(folder) == ["removed"]
    assert all((sandbox.state / name).stat().st_uid == os.getuid()
               for name in ("journal.jsonl.lock", "hygiene.lock", "journal.jsonl"))
    aside = [p for p in sandbox.state.iterdir() if p.name.startswith("journal.jsonl.corrupt-")]
    assert [p.read_text() for p in aside] == [theirs]  # set aside whole, not lost
