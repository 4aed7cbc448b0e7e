"""Red team, round seven: liveness and "in use" under odd processes. Each case drives the
question every sweep asks before a removal (`sessions.liveness()`, `process_inside`) with a
real process in an odd state: stopped, chrooted, in another mount namespace, with its main
thread gone, running a deleted program, loading from a folder its environment names."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import processes, sessions, socket_files
from tests.core.test_processes import until_found
from tests.support import SandboxEnv

SLEEP = ["sleep", "60"]
SID = "7e1d2c3b-4a5f-4e6d-8c7b-9a0f1e2d3c4b"


def folder_in(sandbox: SandboxEnv, name: str = "work") -> Path:
    folder = sandbox.claude_tmp / "-work-proj" / SID / name
    folder.mkdir(parents=True)
    return folder


def ready(proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def python(code: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, **kwargs)  # type: ignore[call-overload]


def session_file(sandbox: SandboxEnv, pid: int, **fields: object) -> None:
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    data = {"pid": pid, "sessionId": SID, "cwd": "/work/proj", **fields}
    (sandbox.sessions / f"{pid}.json").write_text(json.dumps(data))


# --- what held: these are found as they are -----------------------------------------------------


def test_a_stopped_process_still_holds_its_folder_and_its_session_is_live(
        sandbox: SandboxEnv, live_pid: int) -> None:
    folder = folder_in(sandbox)
    proc = subprocess.Popen(SLEEP, cwd=folder)
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        os.kill(live_pid, signal.SIGSTOP)
        session_file(sandbox, live_pid)
        assert until_found(folder) == os.path.realpath(folder)
        assert SID in sessions.liveness().ids
    finally:
        os.kill(live_pid, signal.SIGCONT)
        proc.kill()
        proc.wait()


def test_a_directory_held_only_as_an_o_path_handle_or_a_closed_mapping_is_found(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    by_handle, by_map = folder_in(sandbox, "handle"), folder_in(sandbox, "mapped")
    (by_map / "data.bin").write_bytes(b"x" * 4096)
    started.append(ready(python(
        "import mmap, os, time\n"
        "h = os.open(os.environ['HANDLE'], os.O_PATH | os.O_DIRECTORY)\n"
        "fd = os.open(os.environ['MAP'], os.O_RDONLY); m = mmap.mmap(fd, 4096, prot=mmap.PROT_READ); os.close(fd)\n"
        "print('ready', flush=True); time.sleep(60)",
        cwd="/", env={**os.environ, "HANDLE": str(by_handle), "MAP": str(by_map / "data.bin")})))
    used = processes.paths_in_use()
    assert str(by_handle) in used
    assert str(by_map / "data.bin") in used


def test_a_chrooted_process_is_found_at_its_folder_as_seen_from_here(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    if os.getuid() != 0:
        pytest.skip("chroot needs root")
    folder = folder_in(sandbox, "jail")
    started.append(ready(python(
        "import os, time; os.chroot(os.environ['JAIL']); os.chdir('/'); print('ready', flush=True); time.sleep(60)",
        cwd="/", env={"JAIL": str(folder), "PATH": os.environ["PATH"]})))
    assert until_found(folder) == os.path.realpath(folder)


def test_a_shell_of_a_tmux_server_working_in_the_folder_keeps_it(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("no tmux")
    folder = folder_in(sandbox)
    sock = tmp_path / "tmux.sock"
    subprocess.run(["tmux", "-S", str(sock), "new-session", "-d", "-c", str(folder), "sleep 60"], check=True,
                   cwd="/")
    try:
        assert until_found(folder) == os.path.realpath(folder)
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], check=False)


def test_an_abstract_socket_named_like_a_path_in_the_folder_keeps_nothing(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """An abstract socket (`@/path`) has no file: nothing in the folder is cut off."""
    folder = sandbox.user_tmp / "s"  # short: an abstract name has the 108-byte limit too
    folder.mkdir()
    if len(str(folder)) > 90:
        pytest.skip("the sandbox's path is too long for a socket name")
    started.append(ready(python(
        "import os, socket, time; s = socket.socket(socket.AF_UNIX); s.bind('\\0' + os.environ['AT'] + '/srv.sock');"
        "s.listen(); print('ready', flush=True); time.sleep(60)", cwd="/", env={**os.environ, "AT": str(folder)})))
    assert processes.first_inside(os.path.realpath(folder), processes.paths_in_use()) is None


# --- what went wrong, now fixed ----------------------------------------------------------------


@pytest.mark.parametrize("start", ["", "  ", "Mon Nov 30 20:25:40 2026", "12a"])
def test_a_proc_start_of_another_format_cannot_be_compared_so_the_running_session_is_live(
        sandbox: SandboxEnv, live_pid: int, start: str) -> None:
    """An empty procStart, or one in the `ps -o lstart` text of another platform, says
    nothing about the process now running under the pid: unsure, so live. A number that
    differs is still a reused pid."""
    session_file(sandbox, live_pid, procStart=start)
    assert SID in sessions.liveness().ids
    session_file(sandbox, live_pid, procStart="1")
    assert SID not in sessions.liveness().ids


LEADER_GONE = (
    "import ctypes, os, sys, threading, time\n"
    "def work():\n"
    "    os.chdir(os.environ['WORK']); f = open('notes.txt'); print('ready', flush=True); time.sleep(60)\n"
    "threading.Thread(target=work).start(); time.sleep(0.3)\n"
    "ctypes.CDLL(None).pthread_exit(None)\n"
)


@pytest.fixture
def leader_gone(sandbox: SandboxEnv) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A process whose main thread ended while another thread works on: /proc/<pid> shows
    a zombie with no cwd, no open files, no mappings; its threads hold all of them."""
    folder = folder_in(sandbox)
    (folder / "notes.txt").write_text("n\n")
    proc = ready(python(LEADER_GONE, cwd="/", env={**os.environ, "WORK": str(folder)}))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.02)
    try:
        yield proc, folder
    finally:
        proc.kill()
        proc.wait()


def test_a_process_whose_main_thread_ended_is_live_and_holds_its_threads_folder(
        sandbox: SandboxEnv, leader_gone: tuple[subprocess.Popen[bytes], Path]) -> None:
    proc, folder = leader_gone
    session_file(sandbox, proc.pid)
    assert SID in sessions.liveness().ids
    assert processes.first_inside(os.path.realpath(folder), processes.paths_in_use()) is not None


def test_a_thread_with_a_folder_of_its_own_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """`unshare(CLONE_FS)` gives a thread its own working folder: /proc/<pid>/cwd shows only
    the main thread's."""
    folder = folder_in(sandbox)
    started.append(ready(python(
        "import ctypes, os, threading, time\n"
        "def work():\n"
        "    assert ctypes.CDLL(None).unshare(0x200) == 0; os.chdir(os.environ['WORK'])\n"
        "    print('ready', flush=True); time.sleep(60)\n"
        "threading.Thread(target=work).start(); time.sleep(60)",
        cwd="/", env={**os.environ, "WORK": str(folder)})))
    assert processes.first_inside(os.path.realpath(folder), processes.paths_in_use()) is not None


def test_a_program_deleted_while_it_runs_keeps_the_folder_it_runs_from(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """A rebuilt binary (or a venv's python replaced by an upgrade) leaves the running one
    reading `<path> (deleted)`: it still runs from that folder and loads from it."""
    folder = folder_in(sandbox, "build")
    program = folder / "server"
    shutil.copy2(shutil.which("sleep") or "/bin/sleep", program)
    started.append(subprocess.Popen(["server", "60"], executable=program, cwd="/"))
    time.sleep(0.1)
    program.unlink()
    assert processes.first_inside(os.path.realpath(folder), processes.paths_in_use()) is not None


def test_a_folder_removed_and_made_again_under_a_shell_is_kept(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """`rm -rf build && mkdir build` under a shell: its cwd reads `<path> (deleted)`; the
    shell goes on at that name (`cd .`), and it can still climb to the folder above."""
    folder = folder_in(sandbox, "build")
    started.append(subprocess.Popen(SLEEP, cwd=folder))
    time.sleep(0.1)
    folder.rmdir()
    folder.mkdir()
    used = processes.paths_in_use()
    assert processes.first_inside(os.path.realpath(folder), used) is not None
    assert processes.first_inside(os.path.realpath(folder.parent), used) is not None


@pytest.mark.parametrize("key", ["PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "NODE_PATH"])
def test_a_folder_a_process_loads_from_by_its_environment_is_in_use(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], key: str) -> None:
    """A shell with a venv's `bin` on its PATH, a server with its libraries on
    LD_LIBRARY_PATH, PYTHONPATH or NODE_PATH: it loads from there lazily, holding nothing
    open meanwhile. An entry above the folders (`/usr/bin`, `/tmp`) keeps none of them."""
    folder = folder_in(sandbox, "venv")
    env = {"PATH": "/usr/bin:/bin", key: f"/usr/lib:{folder / 'bin'}:relative/x"}
    started.append(subprocess.Popen(["/bin/sleep", "60"], cwd="/", env=env))
    assert until_found(folder) == os.path.realpath(folder / "bin")
    started.append(subprocess.Popen(["/bin/sleep", "60"], cwd="/", env={"PATH": f"/tmp:{sandbox.claude_tmp}"}))
    started.pop(0).kill()
    time.sleep(0.1)
    assert processes.first_inside(os.path.realpath(folder), processes.paths_in_use()) is None


def _unshare_works() -> bool:
    if os.getuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "true"], check=False,
                          capture_output=True).returncode == 0


def test_a_process_in_another_mount_namespace_is_found_at_the_folder_it_works_in_here(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """A container (`docker run -v $PWD:/app`, rootless podman) works in a folder bind-mounted
    under another name: its cwd reads `/app`, the name in its own mount namespace. The mount
    tables of both namespaces give the folder's name here."""
    if not _unshare_works():
        pytest.skip("no mount namespaces here")
    folder = folder_in(sandbox)
    (folder / "sub").mkdir()
    app = tmp_path / "app"
    app.mkdir()
    started.append(subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"mount --bind '{folder}' '{app}' && cd '{app}/sub' && echo ready && exec sleep 60"],
        stdout=subprocess.PIPE, cwd="/"))
    ready(started[-1])
    time.sleep(0.1)
    used = processes.paths_in_use()
    assert processes.first_inside(os.path.realpath(folder), used) == os.path.realpath(folder / "sub")


def test_a_socket_bound_through_a_folder_handle_past_the_108_byte_limit_is_found_by_its_file(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """A socket path is limited to 108 bytes: a server in a deep folder binds
    `/proc/self/fd/<n>/srv.sock` through a handle on it, then closes it. That name is the
    server's own: read here, `/proc/self` is the reader, whose handle <n> may be another
    folder altogether (here: one with no socket). Only the file's identity places it."""
    from tests.core.test_process_env_sockets import sock_diag  # noqa: F401 - skips without netlink

    folder = folder_in(sandbox, "d" * 60) / ("e" * 60)
    folder.mkdir()
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    handle = os.open(decoy, os.O_RDONLY | os.O_DIRECTORY)
    try:
        started.append(ready(python(
            "import os, socket, time\n"
            f"fd = os.open(os.environ['DEEP'], os.O_RDONLY)\nassert fd == {handle}\n"
            "s = socket.socket(socket.AF_UNIX); s.bind(f'/proc/self/fd/{fd}/srv.sock'); s.listen()\n"
            "os.close(fd); print('ready', flush=True); time.sleep(60)",
            cwd="/", env={**os.environ, "DEEP": str(folder)}, pass_fds=tuple(range(3, handle)))))
        assert len(str(folder / "srv.sock")) > 108 and (folder / "srv.sock").is_socket()
        used = processes.paths_in_use()
        if not socket_files._dump():
            pytest.skip("no netlink sock_diag here")
        assert processes.first_inside(os.path.realpath(folder), used) == str(folder / "srv.sock")
    finally:
        os.close(handle)


# --- a process of another user that cannot be read ----------------------------------------------

USER = 4242
READ_AS_USER = ("import json, os, sys; from app.core import processes as p; used = p.paths_in_use();"
                "print(json.dumps([p.first_inside(f, used) for f in sys.argv[1:]]))")


@pytest.fixture
def as_user(request: pytest.FixtureRequest) -> Iterator[tuple[list[str], Path]]:
    """Runs as uid 4242 (or the uid the test names: claudetto for a user who is not root),
    with a folder of that user's; skipped where that cannot be done (not root, no setpriv)."""
    import tempfile

    if os.getuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    user = getattr(request, "param", USER)
    drop = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"]
    if subprocess.run([*drop, sys.executable, "-c", "import app"], cwd=Path(__file__).parents[2],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("this interpreter or the project is not readable by another user")
    base = Path(tempfile.mkdtemp(prefix="rt7-"))
    try:
        base.chmod(0o755)
        folder = base / "work"
        folder.mkdir()
        os.chown(folder, user, user)
        yield drop, folder
    finally:
        shutil.rmtree(base)


def test_a_process_of_another_user_started_by_one_of_ours_makes_every_folder_unsure(
        as_user: tuple[list[str], Path], started: list[subprocess.Popen[bytes]]) -> None:
    """`sudo -s` in a worktree: a root process, started by the user's shell, whose working
    folder the user cannot read. It may work in any folder, so none goes while it runs."""
    drop, folder = as_user
    setuid_python = folder.parent / "python-setuid"
    shutil.copy2(os.path.realpath("/usr/bin/python3"), setuid_python)
    setuid_python.chmod(0o4755)
    # the user's shell waits elsewhere; the process it started (euid root) works in the folder
    started.append(subprocess.Popen(
        [*drop, "sh", "-c", f"cd / && '{setuid_python}' -c \"import os, time; os.chdir('{folder}'); "
                            f"print('ready', flush=True); time.sleep(60)\"; true"],
        stdout=subprocess.PIPE))
    ready(started[-1])
    other = folder.parent / "other"
    done = subprocess.run([*drop, sys.executable, "-c", READ_AS_USER, str(folder), str(other)],
                          cwd=Path(__file__).parents[2], capture_output=True, text=True, check=False,
                          env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ["PATH"],
                               "CLAUDETTO_HOME": str(folder / "state")})
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert json.loads(done.stdout) == [str(folder), str(other)]


@pytest.mark.parametrize("as_user", [USER + 1], indirect=True)  # apart from the test above, run alongside
def test_a_daemon_of_another_user_nobody_here_started_is_passed_over(
        as_user: tuple[list[str], Path], started: list[subprocess.Popen[bytes]]) -> None:
    """Root's own processes (every system daemon) cannot be read by a user either: nothing
    ties them to this user, and counting them would keep everything for ever."""
    drop, folder = as_user
    started.append(subprocess.Popen(SLEEP, cwd="/"))
    done = subprocess.run([*drop, sys.executable, "-c", READ_AS_USER, str(folder)],
                          cwd=Path(__file__).parents[2], capture_output=True, text=True, check=False,
                          env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": os.environ["PATH"],
                               "CLAUDETTO_HOME": str(folder / "state")})
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert json.loads(done.stdout) == [None]


READ_LIVENESS = "import json; from app.core import sessions; print(json.dumps(sorted(sessions.liveness().ids)))"


@pytest.mark.parametrize("hidepid", [False, True])
def test_a_session_of_another_users_claude_is_judged_by_its_pid_even_where_proc_hides_it(
        as_user: tuple[list[str], Path], live_pid: int, hidepid: bool) -> None:
    """The sessions file names a pid of another user's process: the signal says it runs
    (EPERM), its start time is read from /proc and compared. Where /proc hides other users'
    processes (`hidepid=2`), the start cannot be read: unsure, so live, never "it ended"."""
    drop, folder = as_user
    if hidepid and not _unshare_works():
        pytest.skip("no mount namespaces here")
    config = folder / "config"
    (config / "sessions").mkdir(parents=True)
    start = Path(f"/proc/{live_pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    for sid, written in (("same", start), ("reused", str(int(start) + 1))):
        pid_file = config / "sessions" / f"{sid}.json"
        pid_file.write_text(json.dumps({"pid": live_pid, "sessionId": sid, "cwd": "/work", "procStart": written}))
    subprocess.run(["chown", "-R", f"{USER}:{USER}", str(config)], check=True)
    command = [*drop, sys.executable, "-B", "-c", READ_LIVENESS]
    if hidepid:
        inner = " ".join(f"'{c}'" for c in command)
        command = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                   f"mount -t proc -o hidepid=2 proc /proc && exec {inner}"]
    done = subprocess.run(command, cwd=Path(__file__).parents[2], capture_output=True, text=True, check=False,
                          env={"PATH": os.environ["PATH"], "HOME": str(folder), "CLAUDE_CONFIG_DIR": str(config),
                               "CLAUDETTO_HOME": str(folder / "state"), "TMPDIR": str(folder)})
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert json.loads(done.stdout) == (["reused", "same"] if hidepid else ["same"])


# --- driven through the cleanup, as a session start runs it ---------------------------------------


def old_session_folder(sandbox: SandboxEnv, sid: str) -> Path:
    from tests.support import set_mtime

    folder = sandbox.claude_tmp / "-work-proj" / sid
    (folder / "scratchpad" / "bin").mkdir(parents=True)
    (folder / "scratchpad" / "notes.txt").write_text("n\n")
    for path in (folder / "scratchpad" / "bin", folder / "scratchpad", folder):
        set_mtime(path, 40 * 86400)
    return folder


def test_clean_keeps_the_folder_of_a_session_whose_claude_lost_its_main_thread(
        sandbox: SandboxEnv, leader_gone: tuple[subprocess.Popen[bytes], Path]) -> None:
    from tests.support import run_cli

    proc, _ = leader_gone
    other = "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"
    folder = old_session_folder(sandbox, other)
    sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId=other, cwd="/work/proj",
                          procStart=Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    done = run_cli("clean", "--json")
    assert done.returncode == 0, done.stderr
    assert (folder / "scratchpad" / "notes.txt").exists()


def test_clean_keeps_an_old_session_folder_a_running_shell_has_on_its_path(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    from tests.support import run_cli

    folder = old_session_folder(sandbox, "1d2e3f4a-5b6c-4d7e-8f9a-0b1c2d3e4f5a")
    started.append(subprocess.Popen(["/bin/sleep", "60"], cwd="/",
                                    env={"PATH": f"{folder / 'scratchpad' / 'bin'}:/usr/bin:/bin"}))
    done = run_cli("clean", "--json")
    assert done.returncode == 0, done.stderr
    assert (folder / "scratchpad" / "notes.txt").exists()
    started.pop().kill()
    time.sleep(0.1)
    assert run_cli("clean", "--json").returncode == 0
    assert not folder.exists()  # the same folder goes once nothing loads from it


def test_a_thread_with_a_table_of_open_files_of_its_own_keeps_the_folder_of_its_file(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """`unshare(CLONE_FILES)` gives a thread its own table of open files: /proc/<pid>/fd
    shows only the main thread's."""
    folder = folder_in(sandbox)
    (folder / "log.txt").write_text("x\n")
    started.append(ready(python(
        "import ctypes, os, threading, time\n"
        "def work():\n"
        "    assert ctypes.CDLL(None).unshare(0x400) == 0; f = open(os.environ['HOLD'])\n"
        "    print('ready', flush=True); time.sleep(60)\n"
        "threading.Thread(target=work).start(); time.sleep(60)",
        cwd="/", env={**os.environ, "HOLD": str(folder / "log.txt")})))
    assert str(folder / "log.txt") in processes.paths_in_use()


def test_a_process_working_in_the_folder_under_another_name_bind_mounted_here_keeps_it(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`mount --bind <worktree> /mnt/wt` and a shell in /mnt/wt: the same folder under
    another name in this very mount namespace."""
    if not _unshare_works():
        pytest.skip("no mount namespaces here")
    folder = folder_in(sandbox)
    (folder / "sub").mkdir()
    alias = tmp_path / "alias"
    alias.mkdir()
    script = ("import json, os, subprocess, sys, time; from app.core import processes as p;"
              "s = subprocess.Popen(['sleep', '60'], cwd=sys.argv[2] + '/sub'); time.sleep(0.2);"
              "print(json.dumps(p.first_inside(sys.argv[1], p.paths_in_use()))); s.kill()")
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"mount --bind '{folder}' '{alias}' && exec '{sys.executable}' -B -c \"{script}\" '{folder}' '{alias}'"],
        cwd=Path(__file__).parents[2], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) is not None
