"""Red team, round seventeen: the session-start cleanup and liveness, as they really run.

Each test starts from something a Claude session or its user does with ordinary commands.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.core.test_red_team_14_cleanup import _old_folder
from tests.core.test_red_team_14_cleanup import hung_fuse as hung_fuse  # the fixture
from tests.core.test_red_team_16_cleanup import NOBODY, _clean_as_nobody, as_nobody
from tests.core.test_red_team_16_cleanup import nobody_sandbox as nobody_sandbox  # the fixture
from tests.support import SandboxEnv, claude_worktree, git, make_repo

DAY = 86_400
CLI = [sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())"]


def _clean_within(seconds: float, started: list[subprocess.Popen[bytes]], cwd: Path | None = None) -> dict[str, Any]:
    """`claudetto clean --json` (in `cwd`), which must be done within `seconds` (killed at the
    test's end when it is not: never waited on longer)."""
    clean = subprocess.Popen([*CLI, "clean", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    started.append(clean)
    began = time.monotonic()
    try:
        out, errors = clean.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"claudetto clean took more than {seconds} s")
    assert clean.returncode == 0, errors
    report: dict[str, Any] = json.loads(out)
    report["took_s"] = time.monotonic() - began
    return report


def _aged(top: Path, age_s: float) -> None:
    """Every entry at and below `top` made `age_s` old (FIFOs and links included, not followed)."""
    when = time.time() - age_s
    for path in [*top.rglob("*"), top]:
        os.utime(path, (when, when), follow_symlinks=False)


# --- a FIFO where git reads --------------------------------------------------------------------


@pytest.mark.parametrize("fifo", [".gitignore", "docs/.gitignore", ".gitattributes", ".git/info/exclude",
                                  ".git/index", ".git/packed-refs", ".git/config.worktree",
                                  ".git/sharedindex." + "0" * 40])
def test_a_fifo_git_would_read_in_an_old_session_folder_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], fifo: str) -> None:
    """HANG. A session's scratch repository (`git init` in its scratchpad) where a script made
    a FIFO named like a file git reads (`mkfifo .gitignore` for a log pipe, a test of a
    tool's FIFO handling). git opens it to read and waits for a writer that never comes:
    before, every `git status` of the cleanup's judgement waited the full 120 s of the git
    timeout, past the whole cleanup's SWEEP_TIMEOUT_MS, at every session start, and a second
    such folder made it four minutes. claudetto's own look at git's files for what git status
    does not show (`config.worktree`, a split index's `sharedindex.*`) waited for ever. The
    folder is kept (unsure), quickly, and the cleanup goes on to the folder after it."""
    sid = str(uuid.uuid4())
    folder = _old_folder(sandbox, "-srv-work", sid)
    repo = make_repo(folder / "scratchpad" / "repo", files={"a.txt": "work\n"})
    (repo / Path(fifo).parent).mkdir(parents=True, exist_ok=True)
    if (repo / fifo).exists():
        (repo / fifo).unlink()
    os.mkfifo(repo / fifo)
    _aged(folder, 31 * DAY)
    other = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()), 30.5 * DAY)  # judged after it
    report = _clean_within(60, started)  # before: 120 s at least, each git call waiting its whole timeout
    assert report["took_s"] < 40, report
    assert (repo / "a.txt").is_file(), report
    assert (repo / fifo).exists()
    assert not other.exists(), report





@pytest.mark.parametrize("fifo", ["logs/HEAD", "ORIG_HEAD"])
def test_a_fifo_in_place_of_an_old_worktrees_reflog_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], tmp_path: Path, fifo: str) -> None:
    """HANG. A month-old `.claude/worktrees/fix` whose HEAD reflog (`.git/worktrees/fix/logs/HEAD`)
    or `ORIG_HEAD` a script replaced with a FIFO (a tool logging git's moves through a pipe):
    the look for commits left behind on a detached HEAD, or dropped by a reset, read it with a
    plain open and waited for ever, the cleanup's lock held. One that is no regular file is
    unsure: the worktree is kept, at once."""
    proj = make_repo(tmp_path / "proj")
    tree = claude_worktree(proj, "fix")
    git(tree, "commit", "-q", "--allow-empty", "-m", "tried")
    git(tree, "reset", "-q", "--hard", "HEAD~1")  # ORIG_HEAD, and a reset in the reflog
    admin = proj / ".git" / "worktrees" / "fix" / fifo
    admin.unlink()
    os.mkfifo(admin)
    _aged(tree, 40 * DAY)
    report = _clean_within(30, started, cwd=proj)
    assert (tree / "README.md").is_file(), report
    assert report["worktrees_kept"], report


def test_a_fifo_in_place_of_a_home_worktrees_commondir_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """HANG. `~/feature`, a worktree of `~/proj`, whose admin folder's `commondir` is a FIFO.
    Before an old clone goes, each folder of the home is asked whether it borrows the clone's
    objects: the look at `~/feature`'s `commondir` (a plain open) waited for ever, the
    cleanup's lock held. It is read as state files are: the clone goes, at once."""
    proj = make_repo(sandbox.home / "proj")
    git(proj, "worktree", "add", "-q", str(sandbox.home / "feature"))
    commondir = proj / ".git" / "worktrees" / "feature" / "commondir"
    commondir.unlink()
    os.mkfifo(commondir)
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    _pushed_clone(folder, tmp_path)
    _aged(folder, 31 * DAY)
    report = _clean_within(30, started)
    assert not folder.exists(), report


def test_a_fifo_in_place_of_a_worktrees_gitdir_in_an_old_clone_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """HANG. A session's clone (every commit pushed) with a worktree the user made elsewhere
    (`git worktree add ~/feature`), whose entry's `gitdir` file in the clone is a FIFO.
    Whether that worktree still needs the clone's objects read the file with a plain open
    and waited for ever. It cannot be told: the clone is kept, at once."""
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    clone = _pushed_clone(folder, tmp_path)
    git(clone, "worktree", "add", "-q", "--detach", str(sandbox.home / "feature"))
    gitdir = clone / ".git" / "worktrees" / "feature" / "gitdir"
    gitdir.unlink()
    os.mkfifo(gitdir)
    _aged(folder, 31 * DAY)
    report = _clean_within(30, started)
    assert (clone / "README.md").is_file(), report

# --- a dead remote mount a running process names ------------------------------------------------


def test_a_claude_config_folder_on_a_dead_remote_mount_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], hung_fuse: Callable[[Path], None],
        tmp_path: Path) -> None:
    """HANG. A second account's config folder kept on a remote mount (`CLAUDE_CONFIG_DIR=
    ~/remote/.claude-work claude`, the `sshfs` behind `~/remote` since gone dead), the Claude
    (or the shell that exported it) still running with our home. Every look at who is live
    read that config folder's sessions: its real path was asked of the dead mount, which
    never answers, and the cleanup waited for ever with its lock held. Now it is not looked
    at (its sessions cannot be read: unsure, so nothing a session may hold goes), and the
    cleanup ends. (`started` before `hung_fuse`: a cleanup still waiting is killed once the
    mount is cut.)"""
    remote = tmp_path / "remote"
    hung_fuse(remote)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(sandbox.home), "CLAUDE_CONFIG_DIR": f"{remote}/.claude-work"}
    started.append(subprocess.Popen(["/bin/sleep", "60"], cwd="/", env=env))
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    _clean_within(40, started)
    assert (folder / "scratchpad" / "notes.md").is_file()


def test_a_socket_bound_on_a_dead_remote_mount_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], hung_fuse: Callable[[Path], None],
        tmp_path: Path) -> None:
    """HANG. A dev server listening on a unix socket in a project on a network home
    (`~/nfs/app/run/dev.sock`), the server behind the mount since gone dead. Every look at
    who uses a folder read the kernel's list of bound sockets and made each socket's folder a
    real path: the look at the dead mount waited for ever, the cleanup and its lock with it.
    Such a socket is taken as it was bound."""
    remote = tmp_path / "nfs"
    (remote / "app" / "run").mkdir(parents=True)
    sock = remote / "app" / "run" / "dev.sock"
    server = subprocess.Popen([sys.executable, "-c", "import socket, sys, time\n"
                               "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()\n"
                               "print('up', flush=True); time.sleep(120)", str(sock)],
                              cwd="/", stdout=subprocess.PIPE)
    started.append(server)
    assert server.stdout is not None and server.stdout.readline() == b"up\n"
    hung_fuse(remote)  # the network home stops answering, the server still bound there
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    _clean_within(40, started)
    assert not folder.exists()



def test_a_worktree_whose_repository_lies_on_a_dead_remote_mount_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], hung_fuse: Callable[[Path], None],
        tmp_path: Path) -> None:
    """HANG. A project on an `sshfs` mount (`~/remote/proj`); the session ran `git worktree
    add $scratchpad/wt` there, so the checkout's `.git` file names a git dir on the mount.
    The host went away, the session a month ago. Judging the checkout looked at its git dir
    on the dead mount and waited for ever, the cleanup's lock held. The folder is kept
    (its repository cannot be read), at once."""
    remote = tmp_path / "remote"
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    tree = folder / "scratchpad" / "wt"
    tree.mkdir()
    (tree / "notes.md").write_text("half done\n")
    (tree / ".git").write_text(f"gitdir: {remote}/proj/.git/worktrees/wt\n")
    _aged(folder, 31 * DAY)
    hung_fuse(remote)
    report = _clean_within(40, started)
    assert (tree / "notes.md").is_file(), report


def test_a_clone_whose_worktree_lies_on_a_dead_remote_mount_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], hung_fuse: Callable[[Path], None],
        tmp_path: Path) -> None:
    """HANG. The other way round: a session's clone in its scratchpad, and a worktree of it
    the user made on an `sshfs` mount (`git worktree add ~/remote/wt`), the host since gone.
    Whether that worktree still needs the clone's objects was asked of the dead mount, for
    ever. It cannot be told: the clone is kept (`unmerged`), at once."""
    remote = tmp_path / "remote"
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    clone = _pushed_clone(folder, tmp_path)  # every commit on a remote: only the worktree holds it
    git(clone, "worktree", "add", "-q", "--detach", str(remote / "wt"))
    _aged(folder, 31 * DAY)
    hung_fuse(remote)
    report = _clean_within(40, started)
    assert (clone / "README.md").is_file(), report


def _pushed_clone(folder: Path, tmp_path: Path) -> Path:
    """A clone in `folder`'s scratchpad with every commit on its remote (`tmp_path/origin.git`)."""
    clone = make_repo(folder / "scratchpad" / "clone")
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "origin.git"))
    git(clone, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(clone, "push", "-q", "-u", "origin", "main")
    return clone


def test_a_worktree_in_the_home_of_a_project_on_a_dead_remote_mount_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], hung_fuse: Callable[[Path], None],
        tmp_path: Path) -> None:
    """HANG. `git worktree add ~/feature` from a project on an `sshfs` mount, the host since
    gone. Whether a clone about to go lends its objects to a repository of the home
    (`git clone --shared`) was asked of each folder of the home: `~/feature`'s `.git` names a
    git dir on the dead mount, and the look there waited for ever. Such a folder is passed
    over, as a folder of the home on the mount itself is; the old clone goes."""
    remote = tmp_path / "remote"
    feature = sandbox.home / "feature"
    feature.mkdir()
    (feature / ".git").write_text(f"gitdir: {remote}/proj/.git/worktrees/feature\n")
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    _pushed_clone(folder, tmp_path)
    _aged(folder, 31 * DAY)
    hung_fuse(remote)
    report = _clean_within(40, started)
    assert not folder.exists(), report


def test_a_git_waiting_on_a_dead_remote_mount_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], hung_fuse: Callable[[Path], None],
        tmp_path: Path) -> None:
    """HANG. A session's scratch repository whose config names a file on an `sshfs` mount
    (`git config core.excludesFile ~/remote/ignore`, shared ignore rules kept there), the
    host since gone. Every git status of the judgement waited on the dead mount for the
    whole git timeout (120 s), past the cleanup's deadline, at every session start. A
    judging git found waiting on a remote mount that does not answer is stopped: the folder
    is kept (unsure), at once, and the cleanup goes on."""
    remote = tmp_path / "remote"
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    repo = make_repo(folder / "scratchpad" / "repo")
    git(repo, "config", "core.excludesFile", str(remote / "ignore"))
    _aged(folder, 31 * DAY)
    other = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()), 30.5 * DAY)  # judged after it
    hung_fuse(remote)
    report = _clean_within(40, started)
    assert (repo / "README.md").is_file(), report
    assert not other.exists(), report


# --- a process naming the folder through a symlink ---------------------------------------------


def test_a_server_started_through_a_symlink_to_an_old_session_folder_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """LOSS. `ln -s <session folder> ~/demo`, then `python3 ~/demo/scratchpad/serve.py &` from
    the home: the server read its script and closed it, works in the home, and reads its
    templates from the folder as it goes. Its command line names the folder only through the
    link, and a path named there was compared as written: the month-old folder went under
    the running server. A path a command line names counts by its real path too."""
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    (folder / "scratchpad" / "serve.py").write_text("import time\ntime.sleep(120)\n")
    _aged(folder, 31 * DAY)
    link = sandbox.home / "demo"
    link.symlink_to(folder)
    server = subprocess.Popen([sys.executable, str(link / "scratchpad" / "serve.py")], cwd=sandbox.home)
    started.append(server)
    time.sleep(0.3)  # it has read its script, and closed it
    report = _clean_within(40, started)
    assert (folder / "scratchpad" / "notes.md").is_file(), report
    server.kill()
    server.wait()
    report = _clean_within(40, started)
    assert not folder.exists(), report

# --- a root process a user started, then left ----------------------------------------------------


def _can_set_loginuid() -> bool:
    done = subprocess.run(["sh", "-c", "echo 4294967295 > /proc/self/loginuid"], capture_output=True, check=False)
    return done.returncode == 0


@as_nobody
@pytest.mark.skipif(os.geteuid() != 0 or not _can_set_loginuid(), reason="needs root to set a loginuid")
def test_a_root_process_a_user_started_with_sudo_and_left_keeps_that_users_old_folder(
        nobody_sandbox: tuple[SandboxEnv, dict[str, str]]) -> None:
    """LOSS. `cd <old session folder>/scratchpad && sudo python3 -m http.server 80 &`, then the
    user closed the terminal: `sudo` and its command are root's and no longer below any
    process of the user, so a cleanup run by that user (who cannot read where root's
    processes work) passed them over, and emptied the folder the server serves from. The
    kernel's audit login uid (`/proc/<pid>/loginuid`, readable by every user) still names the
    user who logged in: a process of another user whose parent carries this user's login uid
    was started in this user's login session, as `sudo` starts it. Unsure: kept while it
    runs. (Here the login uid is set by hand, as the login's PAM does.)"""
    env, variables = nobody_sandbox
    folder = env.root / "ctmp" / f"claude-{NOBODY}" / "-work-site" / str(uuid.uuid4())
    served = folder / "scratchpad"
    served.mkdir(parents=True)
    (served / "index.html").write_text("the site\n")
    for path in (folder.parent.parent, folder.parent, folder, served, served / "index.html"):
        os.chown(path, NOBODY, NOBODY)
    _aged(folder, 40 * DAY)
    # `sudo` (root, the user's login uid) and below it the command, both in the folder; their
    # parent is no process of the user's (the terminal is gone)
    sudo = subprocess.Popen(["sh", "-c", f"echo {NOBODY} > /proc/self/loginuid; sleep 120 & wait"],
                            cwd=served, start_new_session=True)
    children: list[str] = []
    try:
        deadline = time.monotonic() + 5
        while not children:
            assert time.monotonic() < deadline
            time.sleep(0.02)
            children = Path(f"/proc/{sudo.pid}/task/{sudo.pid}/children").read_text().split()
        report = _clean_as_nobody(variables)
        assert (served / "index.html").is_file(), report
    finally:
        for child in children:
            os.kill(int(child), 9)
        sudo.kill()
        sudo.wait()
    report = _clean_as_nobody(variables)  # the server stopped: the old folder goes
    assert not folder.exists(), report


def _write_quietly(fifo: Path, text: str) -> None:
    """Write `text` into `fifo`; a reader that opened it only to let the writer go (the git
    was stopped) may have closed it already."""
    with contextlib.suppress(BrokenPipeError):
        fifo.write_text(text)


def test_git_running_the_users_own_programs_may_wait_on_a_fifo_of_theirs(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A git that judges is stopped once it waits to open a FIFO; one that runs the
    repository's hooks (WorktreeCreate's `git worktree add`) runs the user's programs, which
    may wait on a FIFO of theirs for a while (here: an alias reading one its writer opens a
    second later): that one is let be."""
    import threading

    from app.core import git as git_adapter

    repo = make_repo(tmp_path / "repo")
    fifo = tmp_path / "pipe"
    alias = ["-c", f"alias.wait=!cat {fifo}", "wait"]
    for hooks, ok in ((True, True), (False, False)):
        os.mkfifo(fifo)
        writer = threading.Timer(1.5, _write_quietly, (fifo, "done\n"))
        writer.start()
        began = time.monotonic()
        done = git_adapter.run(alias, cwd=str(repo), hooks=hooks, timeout=20)
        took = time.monotonic() - began
        if not ok:  # stopped: the writer finds a reader of its own, or none waits
            with open(fifo, "rb"):
                pass
        writer.join()
        fifo.unlink()
        assert done.ok is ok, done.error
        assert (done.text == "done\n") if ok else ("FIFO" in done.error and took < 1.5), (done.error, took)
