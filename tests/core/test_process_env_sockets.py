"""The temp folder a process's environment names, and the unix sockets servers listen on
under a name that no longer leads to their file: what they keep, and the bounds (a temp
folder above the folders keeps nothing, a socket file nobody listens on keeps nothing, an
environment that cannot be read is passed over)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.core import processes, sessions, socket_files
from tests.core.test_processes import until_found
from tests.support import ROOT, SandboxEnv

SLEEP = ["sleep", "60"]
NOBODY = 65534


def session_folder(sandbox: SandboxEnv) -> Path:
    folder = sandbox.claude_tmp / "-work-proj" / "2b0c3f4e-2a1d-4c5b-9e8f-1a2b3c4d5e6f" / "scratchpad"
    folder.mkdir(parents=True)
    return folder


def job(tmpdir: str, key: str = "TMPDIR", **kwargs: Any) -> subprocess.Popen[bytes]:
    """A job started with its temp folder set, working elsewhere, holding nothing open."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TMP", "TEMP")}
    return subprocess.Popen(SLEEP, cwd="/", env={**env, key: tmpdir}, **kwargs)


# --- the temp folder of a process's environment ---------------------------------------------


@pytest.mark.parametrize("key", ["TMPDIR", "TMP", "TEMP"])
def test_a_folder_a_running_job_has_as_its_temp_folder_is_in_use(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], key: str) -> None:
    folder = session_folder(sandbox)
    started.append(job(str(folder), key))
    assert until_found(folder.parent) == os.path.realpath(folder)
    started.pop().kill()
    time.sleep(0.1)
    assert sessions.liveness().process_inside(os.path.realpath(folder.parent)) is None


def test_a_temp_folder_named_through_a_symlink_or_with_a_trailing_slash_is_its_real_folder(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    folder = session_folder(sandbox)
    link = tmp_path / "short"
    link.symlink_to(folder.parent)
    started.append(job(f"{link}/scratchpad/"))
    assert until_found(folder.parent) == os.path.realpath(folder)


def test_a_temp_folder_above_the_folders_keeps_none_of_them(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """Every shell has TMPDIR=/tmp: that keeps nothing below it. Nor does a job whose temp
    folder is `claude-<uid>` itself or a project folder above the session's."""
    folder = session_folder(sandbox)
    for above in ("/tmp", "/", str(sandbox.claude_tmp), str(folder.parent.parent)):
        started.append(job(above))
    used = processes.paths_in_use()
    assert os.path.realpath(folder.parent.parent) in used  # read, and above: no keep
    assert processes.first_inside(os.path.realpath(folder.parent), used) is None
    assert processes.first_inside(os.path.realpath(folder), used) is None


def test_a_relative_or_empty_temp_folder_names_nothing(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = session_folder(sandbox)
    started.append(subprocess.Popen(SLEEP, cwd="/", env={"TMPDIR": "scratchpad", "TMP": "", "TEMP": "./x"}))
    # relative to this process's folder it would name the session's: it names nothing
    relative = os.path.relpath(folder, os.getcwd())
    started.append(subprocess.Popen(SLEEP, cwd="/", env={"TMPDIR": relative}))
    time.sleep(0.1)
    assert processes.first_inside(os.path.realpath(folder.parent), processes.paths_in_use()) is None


def test_only_the_variable_itself_counts_not_one_whose_name_ends_alike(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = session_folder(sandbox)
    started.append(subprocess.Popen(SLEEP, cwd="/", env={"MY_TMPDIR": str(folder), "XTEMP": str(folder)}))
    time.sleep(0.1)
    assert processes.first_inside(os.path.realpath(folder.parent), processes.paths_in_use()) is None


def _runs_as_nobody(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "pass"], user=NOBODY, group=NOBODY, extra_groups=[],
                              capture_output=True, check=False)
    except OSError:
        return False  # an interpreter under a folder only its owner may enter
    return done.returncode == 0


def test_a_process_whose_environment_cannot_be_read_is_passed_over(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """A process of another user (or one that made itself undumpable) hides its environment:
    its temp folder is unknown, the reading goes on with the others, and nothing fails."""
    hidden, shown = session_folder(sandbox), tmp_path / "shown"
    shown.mkdir()
    as_other: dict[str, Any] = {}
    python = sys.executable
    if os.getuid() == 0:  # root reads every environment: the reader drops to nobody
        python = next((p for p in (sys.executable, shutil.which("python3"), "/usr/bin/python3")
                       if p and os.path.exists(p) and _runs_as_nobody(p)), "")
        if not python:
            pytest.skip("no interpreter the user nobody can run")
        as_other = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    undumpable = subprocess.Popen(
        [sys.executable, "-c", "import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); "
                               "print('ready', flush=True); time.sleep(60)"],
        cwd="/", env={"TMPDIR": str(hidden)}, stdout=subprocess.PIPE)
    started.append(undumpable)
    assert undumpable.stdout is not None and undumpable.stdout.readline() == b"ready\n"
    started.append(job(str(shown), **as_other))
    script = ("import json, os, sys; from app.core import processes as p; used = p.paths_in_use();"
              "print(json.dumps([p.first_inside(os.path.realpath(f), used) for f in sys.argv[1:]]))")
    done = subprocess.run([python, "-c", script, str(hidden.parent), str(shown)], cwd=ROOT, capture_output=True,
                          text=True, check=False, env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ["PATH"]},
                          **as_other)
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert json.loads(done.stdout) == [None, os.path.realpath(shown)]


# --- socket files -----------------------------------------------------------------------------


@pytest.fixture
def sock_diag(sandbox: SandboxEnv) -> None:
    """The kernel's socket diagnostics answer here (Linux with unix_diag), or the test is
    skipped: without them nothing more than `/proc/net/unix`'s names is known."""
    probe = socket.socket(socket.AF_UNIX)
    path = sandbox.user_tmp / "probe.sock"
    try:
        probe.bind(str(path))
        probe.listen()
        placed, _ = socket_files.bound_socket_files()
        if str(path) not in placed:
            pytest.skip("no netlink sock_diag here")
    finally:
        probe.close()
        path.unlink(missing_ok=True)


needs_sock_diag = pytest.mark.usefixtures("sock_diag")


SERVER = ("import os, socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen();"
          "os.chdir(sys.argv[2]); print('ready', flush=True); time.sleep(60)")


def server(bind: str, cwd: Path, then: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, bind, str(then)], cwd=cwd, stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


@needs_sock_diag
def test_a_socket_bound_by_a_relative_name_is_found_by_its_file(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    folder = session_folder(sandbox)
    (folder / "deep" / "er").mkdir(parents=True)
    started.append(server("srv.sock", folder / "deep" / "er", tmp_path))
    other = sandbox.claude_tmp / "-work-proj" / "other"
    (other / "sub").mkdir(parents=True)
    assert until_found(folder.parent) == os.path.realpath(folder / "deep" / "er" / "srv.sock")
    assert processes.first_inside(os.path.realpath(other), processes.paths_in_use()) is None  # walked, nothing
    started.pop().kill()
    time.sleep(0.1)
    assert sessions.liveness().process_inside(os.path.realpath(folder.parent)) is None


@needs_sock_diag
def test_a_socket_file_no_server_listens_on_keeps_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    folder = session_folder(sandbox)
    here = os.getcwd()
    closed = socket.socket(socket.AF_UNIX)
    try:
        os.chdir(folder)
        closed.bind("left.sock")
    finally:
        os.chdir(here)
        closed.close()
    assert (folder / "left.sock").is_socket()
    assert processes.first_inside(os.path.realpath(folder.parent), processes.paths_in_use()) is None


@needs_sock_diag
def test_a_socket_in_a_folder_renamed_since_the_bind_is_found_where_it_is_now(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """The kernel's list still names the old path; a removal moves a folder aside before
    its last check, and a user may rename one."""
    first = tmp_path / "first"
    first.mkdir()
    started.append(server(str(first / "srv.sock"), first, tmp_path))
    folder = session_folder(sandbox)
    moved = folder / "moved"
    first.rename(moved)
    assert until_found(folder) == os.path.realpath(moved / "srv.sock")


@needs_sock_diag
def test_a_socket_linked_into_place_under_another_name_is_placed_without_a_walk(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """ssh's ControlMaster binds a temporary name, links the final one, unlinks the first:
    the file is found in the folder its name names."""
    folder = sandbox.user_tmp / "ssh"  # a bound name is at most 107 bytes
    folder.mkdir()
    started.append(server(str(folder / "cm.tmp123"), folder, Path("/")))
    os.link(folder / "cm.tmp123", folder / "cm")
    (folder / "cm.tmp123").unlink()
    placed, unplaced = socket_files.bound_socket_files()
    ident = socket_files._identity(str(folder / "cm"))
    assert str(folder / "cm") in placed and ident not in unplaced


@needs_sock_diag
def test_a_removed_socket_file_of_a_live_server_asks_for_no_walk(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = sandbox.user_tmp
    started.append(server(str(folder / "gone.sock"), folder, Path("/")))
    ident = socket_files._identity(str(folder / "gone.sock"))
    (folder / "gone.sock").unlink()
    placed, unplaced = socket_files.bound_socket_files()
    assert ident is not None and ident not in unplaced and str(folder / "gone.sock") not in placed


@needs_sock_diag
def test_a_walk_past_its_bound_keeps_the_folder(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder too big to look through while a server listens on an unplaced socket on its
    device is kept: unsure, as with anything else unsure. A folder on no such device is not."""
    folder = session_folder(sandbox)
    for n in range(30):
        (folder / f"f{n}").write_text("x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    started.append(server("srv.sock", elsewhere, Path("/")))
    monkeypatch.setattr(socket_files, "WALK_MAX_ENTRIES", 10)
    used = processes.paths_in_use()
    assert processes.first_inside(os.path.realpath(folder), used) == os.path.realpath(folder)
    assert processes.first_inside("/proc/self", used) is None
