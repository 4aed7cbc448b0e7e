"""Processes working in a folder (its cwd, an open file) make it in use, whoever started them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core import processes, sessions
from tests.support import SandboxEnv

# The file's name comes through the environment, so only the open file can show it (a name
# on the command line counts on its own).
HOLD = "import os, time; f = open(os.environ['HOLD']); print('open', flush=True); time.sleep(60)"


def hold(path: Path, cwd: str | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", HOLD], stdout=subprocess.PIPE, cwd=cwd,
                            env={**os.environ, "HOLD": str(path)})



def until_found(folder: Path) -> str | None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        found = sessions.liveness().process_inside(os.path.realpath(folder))
        if found:
            return found
        time.sleep(0.02)
    return None


def test_a_process_working_in_a_folder_is_found_and_gone_once_it_ends(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = sandbox.user_tmp / "tmp.dev-server"
    (folder / "sub").mkdir(parents=True)
    other = sandbox.user_tmp / "tmp.other"
    other.mkdir()
    started.append(subprocess.Popen(["sleep", "60"], cwd=folder / "sub"))
    assert until_found(folder) == os.path.realpath(folder / "sub")
    assert sessions.liveness().process_inside(os.path.realpath(other)) is None
    started.pop().kill()
    time.sleep(0.1)
    assert sessions.liveness().process_inside(os.path.realpath(folder)) is None


def test_a_file_held_open_is_found(sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = sandbox.user_tmp / "scratch"
    folder.mkdir()
    (folder / "notes.txt").write_text("x")
    proc = hold(folder / "notes.txt")
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"open\n"
    assert until_found(folder) == os.path.realpath(folder / "notes.txt")


def test_the_kernel_follows_a_folder_that_was_moved(sandbox: SandboxEnv,
                                                    started: list[subprocess.Popen[bytes]]) -> None:
    """A folder moved aside for its removal still shows the process inside, at its new place."""
    folder = sandbox.user_tmp / "moving"
    folder.mkdir()
    started.append(subprocess.Popen(["sleep", "60"], cwd=folder))
    assert until_found(folder)
    moved = sandbox.user_tmp / "moved-aside"
    folder.rename(moved)
    assert until_found(moved) == os.path.realpath(moved)


def test_this_process_is_not_counted(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = sandbox.user_tmp / "mine"
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert processes.first_inside(os.path.realpath(folder), processes.paths_in_use()) is None


def test_sockets_pipes_and_deleted_files_are_not_paths(sandbox: SandboxEnv,
                                                       started: list[subprocess.Popen[bytes]]) -> None:
    folder = sandbox.user_tmp / "gone"
    folder.mkdir()
    (folder / "f").write_text("x")
    proc = hold(folder / "f", cwd="/")
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"open\n"
    (folder / "f").unlink()  # only `<path> (deleted)` is left in the process's table
    used = processes.paths_in_use()
    assert all(p.startswith("/") and not p.endswith("(deleted)") for p in used)
    assert processes.first_inside(os.path.realpath(folder), used) is None


def test_a_forked_copy_of_this_process_is_not_counted_but_a_child_program_is(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """The scanner's helper is a fork of this process that inherits its open folder handles;
    it is part of the looking, not a user of the folder. A program this process starts is."""
    folder = sandbox.user_tmp / "forked"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    child = os.fork()
    if child == 0:  # the copy: holds `fd` into the folder, as the scanner's helper would
        time.sleep(3)
        os._exit(0)
    try:
        os.close(fd)
        time.sleep(0.2)
        assert processes.first_inside(os.path.realpath(folder), processes.paths_in_use()) is None
        started.append(subprocess.Popen(["sleep", "60"], cwd=folder))
        assert until_found(folder) == os.path.realpath(folder)
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_a_path_on_a_command_line_counts_but_not_on_this_process_callers(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """`tail -f /tmp/x/log` names what it uses; the shell that ran `claudetto release PATH`
    names what it asked this process to act on."""
    folder = sandbox.user_tmp / "named"
    folder.mkdir()
    (folder / "log").write_text("x")
    started.append(subprocess.Popen(["sh", "-c", "sleep 60; true", str(folder / "log")], cwd="/"))
    assert until_found(folder) == os.path.realpath(folder / "log")
    started.pop().kill()
    script = ("import sys; from app.core import processes; "
              "print(processes.first_inside(sys.argv[1], processes.paths_in_use()))")
    nested = subprocess.run(["sh", "-c", f'"$0" -c "{script}" "$1"; true', sys.executable,
                             os.path.realpath(folder)], capture_output=True, text=True, check=True,
                            cwd=Path(__file__).resolve().parents[2])
    assert nested.stdout.strip() == "None", nested.stderr


@pytest.mark.parametrize("written", ["{rel}", "--root={rel}", "--root={abs}"])
def test_a_relative_path_or_an_options_value_on_a_command_line_counts(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], written: str) -> None:
    """`node dist/server.js` typed in the folder above, or `--root=dist`: every sweep keeps the
    folder the server reads as it goes, though it holds none of it open; an argument that
    names another folder keeps nothing."""
    parent = sandbox.user_tmp / "tmp.project"
    served = parent / "dist"
    served.mkdir(parents=True)
    (parent / "other").mkdir()
    arg = written.format(rel="dist/site", abs=served / "site")
    started.append(subprocess.Popen(["sh", "-c", "sleep 60; true", arg], cwd=parent))
    assert until_found(served) == os.path.realpath(served / "site")
    assert sessions.liveness().process_inside(os.path.realpath(parent / "other")) is None


def test_a_git_this_process_runs_is_no_use_of_its_folder_but_a_users_git_is(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """The dashboard runs `git status` in a worktree from one thread while another judges
    that worktree: claudetto's own git (its environment marked by app/core/git.py) must not
    keep the worktree `in_use`; the same program started by anyone else does, and so does
    what a marked process of another claudetto runs."""
    from app.core import git

    ours, users, others = (sandbox.user_tmp / name for name in ("ours", "users", "another-claudetto"))
    for folder in (ours, users, others):
        folder.mkdir()
    started.append(subprocess.Popen(["sleep", "60"], cwd=ours, env=git.environment()))
    started.append(subprocess.Popen(["sleep", "60"], cwd=users, env=dict(os.environ)))
    started.append(subprocess.Popen(["sleep", "60"], cwd=others,
                                    env={**git.environment(), git.HELPER_MARK: str(os.getpid() + 1)}))
    assert until_found(users) and until_found(others)
    assert processes.first_inside(os.path.realpath(ours), processes.paths_in_use()) is None
