"""Red team, round nine: liveness and "in use" against processes that re-exec, hop from pid
to pid, wait at a FIFO, live in another pid namespace, or run by the thousand, and a scan
that cannot read the list of processes at all. Every case uses real processes and asks the
question a sweep asks before a removal (`sessions.liveness()`, `process_inside`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import processes, sessions
from app.core.claude_process import start_of
from tests.core.test_processes import until_found
from tests.support import SandboxEnv

SID = "9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def folder_in(sandbox: SandboxEnv, name: str = "work") -> Path:
    folder = sandbox.claude_tmp / "-work-proj" / SID / name
    folder.mkdir(parents=True)
    return folder


def session_file(sandbox: SandboxEnv, pid: int, name: str | None = None, **fields: object) -> Path:
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    data = {"pid": pid, "sessionId": SID, "cwd": "/work/proj", **fields}
    path = sandbox.sessions / (name or f"{pid}.json")
    path.write_text(json.dumps(data))
    return path


def inside_now(folder: Path) -> str | None:
    """One fresh reading, as a removal's last check makes it."""
    return processes.first_inside(os.path.realpath(folder), processes.paths_in_use())


@pytest.fixture
def group() -> Iterator[list[int]]:
    """Process groups a test starts (a process that forks on and on): killed whole at its end."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- losses found and fixed ----------------------------------------------------------------


@pytest.mark.parametrize("reader", ["shell", "python"])
def test_a_reader_waiting_at_a_fifo_in_the_folder_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], reader: str) -> None:
    # `read line < $dir/fifo` waits inside open() for a writer: no handle yet, a cwd elsewhere,
    # and its command line names no path. Removing the FIFO leaves it waiting for ever.
    folder = folder_in(sandbox)
    os.mkfifo(folder / "jobs")
    env = {**os.environ, "FIFO": str(folder / "jobs")}
    argv = (["bash", "-c", 'read line < "$FIFO"'] if reader == "shell"
            else [sys.executable, "-c", "import os; open(os.environ['FIFO'])"])
    started.append(subprocess.Popen(argv, cwd="/", env=env))
    assert until_found(folder) == os.path.realpath(folder / "jobs")
    started[0].kill()
    started[0].wait()
    assert inside_now(folder) is None


def test_a_reader_waiting_at_a_fifo_by_a_relative_name_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = folder_in(sandbox)
    os.mkfifo(folder / "jobs")
    # opened relative to a working folder above it, then holding nothing of the folder itself
    started.append(subprocess.Popen(["bash", "-c", f"read line < {folder.name}/jobs"], cwd=folder.parent))
    assert until_found(folder) == os.path.realpath(folder / "jobs")


def test_a_process_hopping_from_pid_to_pid_in_the_folder_is_found(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], group: list[int]) -> None:
    # Each generation forks the next and leaves: the pid listed first is gone when it is read,
    # and its child was not listed. The reading lists the processes again for those.
    folder = folder_in(sandbox)
    started += [subprocess.Popen(["sleep", "60"]) for _ in range(300)]  # a long first round
    hopper = subprocess.Popen(["bash", "-c", "h() { sleep 0.005; h & exit; }; h"], cwd=folder,
                              start_new_session=True)
    group.append(hopper.pid)
    time.sleep(0.2)
    assert all(inside_now(folder) == os.path.realpath(folder) for _ in range(5))


def test_a_scan_that_cannot_list_the_processes_keeps_every_folder(sandbox: SandboxEnv) -> None:
    # Out of file handles (a low RLIMIT_NOFILE, a removal holding its folders open) the list
    # of /proc cannot be read: that is no "nobody uses it".
    folder = folder_in(sandbox)
    code = f"""
import os, resource
from app.core import processes
print(processes.first_inside({str(folder)!r}, processes.paths_in_use()), flush=True)
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
print(processes.first_inside({str(folder)!r}, processes.paths_in_use()), flush=True)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).parents[2], check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["None", str(folder)]


# --- what held ----------------------------------------------------------------------------


def test_a_claude_that_re_execs_itself_under_another_name_stays_live_and_in_its_folder(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    # The launcher execs node (`exec -a`): same pid, same start, another comm and cmdline.
    folder = folder_in(sandbox)
    proc = subprocess.Popen(["bash", "-c", "read go; exec -a claude sleep 60"], cwd=folder, stdin=subprocess.PIPE)
    started.append(proc)
    time.sleep(0.1)
    session_file(sandbox, proc.pid, procStart=start_of(proc.pid))
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.close()
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"claude\0"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert os.readlink(f"/proc/{proc.pid}/exe").endswith("/sleep")
    assert SID in sessions.liveness().ids
    assert until_found(folder) == os.path.realpath(folder)


def test_a_sessions_file_naming_a_thread_of_the_claude_process_is_live(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    code = ("import threading, time, ctypes\n"
            "threading.Thread(target=lambda: (print(ctypes.CDLL(None).gettid(), flush=True), time.sleep(60))).start()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    started.append(proc)
    assert proc.stdout is not None
    tid = int(proc.stdout.readline())
    assert tid != proc.pid and str(tid) not in os.listdir("/proc")  # a thread: not listed, yet there
    session_file(sandbox, tid)
    assert SID in sessions.liveness().ids
    session_file(sandbox, tid, procStart=start_of(tid))
    assert SID in sessions.liveness().ids
    proc.kill()
    proc.wait()
    assert SID not in sessions.liveness().ids


def test_a_claude_in_its_own_pid_namespace_is_live_and_its_folder_in_use(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], group: list[int]) -> None:
    if subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"], check=False).returncode:
        pytest.skip("no pid namespaces here")
    folder = folder_in(sandbox)
    proc = subprocess.Popen(["unshare", "-p", "-f", "--mount-proc", "sh", "-c",
                             "readlink /proc/self/ns/pid; cut -d' ' -f22 /proc/1/stat; exec sleep 60"],
                            cwd=folder, stdout=subprocess.PIPE, start_new_session=True)
    started.append(proc)
    group.append(proc.pid)  # the namespace's pid 1 outlives `unshare`: the group ends both
    assert proc.stdout is not None
    namespace = proc.stdout.readline().decode().strip()
    inner_start = proc.stdout.readline().decode().strip()
    machine = Path("/etc/machine-id").read_text().strip() if Path("/etc/machine-id").exists() else "m"
    # Its file names pid 1 there; pid 1 here is another process with another start.
    assert start_of(1) != inner_start
    session_file(sandbox, 1, procStart=inner_start, pidDomain=f"linux:{machine}:{namespace}")
    assert SID in sessions.liveness().ids
    assert until_found(folder) == os.path.realpath(folder)
    # an older Claude writes no domain: its pid there and its start find it here (NSpid)
    session_file(sandbox, 1, procStart=inner_start)
    assert SID in sessions.liveness().ids
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while SID in sessions.liveness().ids:  # its pid 1 is reaped by the kernel a moment later
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["directory handle", "lock inherited", "symlinked cwd", "traced"])
def test_a_folder_held_in_an_odd_way_is_in_use(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], how: str) -> None:
    folder = folder_in(sandbox)
    (folder / "lock").touch()
    (sandbox.root / "link").symlink_to(folder)
    env = {**os.environ, "D": str(folder)}
    if how == "directory handle":  # `exec 3<dir`: only fd 3 names it
        started.append(subprocess.Popen(["bash", "-c", 'exec 3<"$D"; exec sleep 60'], cwd="/", env=env))
    elif how == "lock inherited":  # flock(1)'s opener left, the lock lives in its child
        started.append(subprocess.Popen(["bash", "-c", '(flock 9; exec sleep 60) 9>"$D/lock"'], cwd="/", env=env))
    elif how == "symlinked cwd":
        started.append(subprocess.Popen(["sleep", "60"], cwd=sandbox.root / "link"))
    else:
        traced = subprocess.Popen(["sleep", "60"], cwd=folder)
        started.append(traced)
        started.append(subprocess.Popen(["strace", "-p", str(traced.pid)], stderr=subprocess.DEVNULL))
    assert until_found(folder) is not None


def test_an_inotify_watch_alone_does_not_keep_a_folder(sandbox: SandboxEnv,
                                                       started: list[subprocess.Popen[bytes]]) -> None:
    # documented: a folder only watched (an editor's file tree) is not in use
    folder = folder_in(sandbox)
    code = ("import ctypes, os, sys, time\nlibc = ctypes.CDLL(None)\nfd = libc.inotify_init()\n"
            "assert libc.inotify_add_watch(fd, os.environ['D'].encode(), 0xfff) > 0\nprint('ready', flush=True)\n"
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd="/", env={**os.environ, "D": str(folder)},
                            stdout=subprocess.PIPE)
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert inside_now(folder) is None


def test_two_thousand_processes_the_scan_stays_right_and_bounded(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = folder_in(sandbox)
    started += [subprocess.Popen(["sleep", "120"], cwd="/") for _ in range(2000)]
    started.append(subprocess.Popen(["sleep", "120"], cwd=folder))
    begun = time.monotonic()
    used = processes.paths_in_use()
    took = time.monotonic() - begun
    assert processes.first_inside(os.path.realpath(folder), used) == os.path.realpath(folder)
    assert isinstance(used, processes.PathsInUse) and used.hidden is None  # no "unsure" for all
    assert took < 20, took


def test_a_sessions_folder_that_is_a_symlink_is_read(sandbox: SandboxEnv, live_pid: int) -> None:
    real = sandbox.root / "elsewhere-sessions"
    real.mkdir()
    sandbox.sessions.parent.mkdir(parents=True, exist_ok=True)
    sandbox.sessions.symlink_to(real)
    session_file(sandbox, live_pid, procStart=start_of(live_pid))
    assert SID in sessions.liveness().ids


def test_a_huge_sessions_file_of_a_running_pid_is_unsure(sandbox: SandboxEnv, live_pid: int) -> None:
    path = session_file(sandbox, live_pid)
    data = json.loads(path.read_text())
    data["padding"] = "x" * (10 << 20)
    path.write_text(json.dumps(data))
    live = sessions.liveness()
    assert live.unsure  # read only in part: what it holds is unknown, everything is kept


def test_a_session_id_in_two_files_one_dead_one_live_is_live(sandbox: SandboxEnv, live_pid: int) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    session_file(sandbox, dead.pid)
    session_file(sandbox, live_pid, procStart=start_of(live_pid))
    assert SID in sessions.liveness().ids
    assert SID in sessions.liveness(ending_pid=dead.pid).ids


def test_a_session_file_rewritten_while_a_sweep_reads_it_never_drops_the_session(
        sandbox: SandboxEnv, live_pid: int) -> None:
    # Claude rewrites it in place on every status change; a reader may meet it empty or cut.
    path = session_file(sandbox, live_pid, procStart=start_of(live_pid))
    whole = path.read_bytes()
    stop = threading.Event()

    def rewrite() -> None:
        while not stop.is_set():
            with open(path, "wb") as fh:
                fh.write(whole[: len(whole) // 2])
                fh.flush()
                fh.write(whole[len(whole) // 2:])

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            live = sessions.liveness()
            assert SID in live.ids or live.unsure
    finally:
        stop.set()
        writer.join()


def test_a_folder_on_the_command_line_of_the_claude_a_sweep_runs_under_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    # `claude --add-dir <folder>` reads and writes there as it goes, holding nothing open;
    # its hooks (the SessionEnd sweep) and `claudetto gc` from its Bash tool run below it.
    # The shells between (`uv run claudetto release PATH`) still name only what they ask for.
    folder = folder_in(sandbox, "added")
    asked = folder_in(sandbox, "asked")
    script = ("import sys; from app.core import processes; used = processes.paths_in_use(); "
              "print(processes.first_inside(sys.argv[1], used), processes.first_inside(sys.argv[2], used))")
    inner = 'sh -c \'"$0" -c "$1" "$2" "$3"; true\' "$PY" "$SCRIPT" "$F" "$A"; true'
    env = {**os.environ, "PY": sys.executable, "SCRIPT": script, "F": str(folder), "A": str(asked)}
    claude = subprocess.Popen(["bash", "-c", f"read go; {inner}", "claude", "--add-dir", str(folder)],
                              cwd=Path(__file__).resolve().parents[2], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    started.append(claude)
    session_file(sandbox, claude.pid, procStart=start_of(claude.pid))
    out, _ = claude.communicate(b"go\n", timeout=60)
    assert out.decode().split() == [os.path.realpath(folder), "None"]


def test_a_folder_mounted_into_another_mount_namespace_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    # `docker run -v <folder>:/data nginx`: the server reads /data as requests come, holding
    # nothing of it open, its working folder elsewhere; only the container's mount table
    # shows the folder. Deleted, /data is an empty deleted folder under it.
    if subprocess.run(["unshare", "-m", "true"], check=False).returncode:
        pytest.skip("no mount namespaces here")
    folder = folder_in(sandbox, "volume")
    (folder / "index.html").write_text("hi")
    target = sandbox.root / "data"
    target.mkdir()
    proc = subprocess.Popen(["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$1" && echo ready && cd / && exec sleep 60',
                             str(folder), str(target)], stdout=subprocess.PIPE)
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert not os.path.ismount(target)  # not here: only in its namespace
    assert until_found(folder) == os.path.realpath(folder)
    assert inside_now(sandbox.root / "data") is None  # its name there names nothing here
    moved = sandbox.root / "moved"
    folder.rename(moved)  # a removal's first step: the kernel follows the mount's source
    assert inside_now(moved) == os.path.realpath(moved)
    proc.kill()
    proc.wait()
    assert inside_now(moved) is None


def test_a_server_in_another_network_namespace_keeps_the_folder_of_its_socket(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    # A sandbox without network (`unshare -n`, bwrap --unshare-net) binds its socket in a
    # list of sockets of its own; the server then works elsewhere, holding `socket:[n]` only.
    if subprocess.run(["unshare", "-n", "true"], check=False).returncode:
        pytest.skip("no network namespaces here")
    folder = sandbox.user_tmp / "tmp.s"  # a socket's name is at most 108 bytes
    folder.mkdir()
    code = ("import os, socket, sys, time\ns = socket.socket(socket.AF_UNIX)\ns.bind(os.environ.pop('SOCK'))\ns.listen()\n"
            "os.chdir('/')\nprint('ready', flush=True)\ntime.sleep(60)")
    proc = subprocess.Popen(["unshare", "-n", sys.executable, "-c", code], stdout=subprocess.PIPE, cwd="/",
                            env={**os.environ, "SOCK": str(folder / "dev.sock")})
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert until_found(folder) == os.path.realpath(folder / "dev.sock")
    proc.kill()
    proc.wait()
    assert inside_now(folder) is None


def test_an_overlay_of_another_mount_namespace_keeps_its_upper_layer(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    # a sandbox's overlay (`bwrap --overlay`, rootless podman) writes every change into its
    # upper layer; the mount is only in its namespace and has a device of its own
    if subprocess.run(["unshare", "-m", "true"], check=False).returncode:
        pytest.skip("no mount namespaces here")
    folder = folder_in(sandbox, "layers")
    for name in ("lower", "upper", "work"):
        (folder / name).mkdir()
    merged = sandbox.root / "merged"
    merged.mkdir()
    options = f"lowerdir={folder}/lower,upperdir={folder}/upper,workdir={folder}/work"
    proc = subprocess.Popen(["unshare", "-m", "sh", "-c", 'mount -t overlay overlay -o "$0" "$1" && echo ready && '
                             'cd / && exec sleep 60', options, str(merged)], stdout=subprocess.PIPE)
    started.append(proc)
    assert proc.stdout is not None
    if proc.stdout.readline() != b"ready\n":
        pytest.skip("no overlay mounts here")
    assert until_found(folder / "upper") is not None
    proc.kill()
    proc.wait()
    assert inside_now(folder) is None


def test_stale_sessions_files_a_crash_left_empty_cost_one_pause_not_one_each(
        sandbox: SandboxEnv, live_pid: int) -> None:
    # A full disk or a crash mid-write leaves empty files of dead pids; each is read again
    # after a pause (Claude may be rewriting it). A removal asks liveness at its last check:
    # a pause per file made every removal wait seconds, and a SessionEnd sweep miss its budget.
    sandbox.sessions.mkdir(parents=True)
    for n in range(100):
        (sandbox.sessions / f"{3_000_000 + n}.json").write_bytes(b"")
    session_file(sandbox, live_pid, procStart=start_of(live_pid))
    begun = time.monotonic()
    live = sessions.liveness()
    assert time.monotonic() - begun < 100 * sessions.REREAD_PAUSE_S / 4
    assert SID in live.ids and not live.unsure


@pytest.mark.parametrize("key", ["HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "CLAUDE_CONFIG_DIR"])
def test_a_folder_a_running_job_has_as_its_home_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], key: str) -> None:
    # `HOME=$(mktemp -d) npm test`, a Claude with a throwaway config: written lazily, nothing
    # held open between writes, its working folder elsewhere
    folder = folder_in(sandbox, "home")
    started.append(subprocess.Popen(["sleep", "60"], cwd="/", env={**os.environ, key: str(folder)}))
    assert until_found(folder) == os.path.realpath(folder)
    started.pop().kill()
    assert inside_now(folder) is None


def test_a_pid_domain_written_as_claude_writes_it_is_this_one(sandbox: SandboxEnv, live_pid: int) -> None:
    # Claude writes `linux:<machine-id>:` + readlink(/proc/self/ns/pid) verbatim:
    # `linux:4e75...:pid:[4026531836]`. Read as another machine's, every file of a crashed
    # Claude stayed live for ever, and kept its session's folders.
    machine = Path("/etc/machine-id").read_text().strip()
    domain = f"linux:{machine}:{os.readlink('/proc/self/ns/pid')}"
    assert domain.count(":") == 3
    dead = subprocess.Popen(["true"])
    dead.wait()
    session_file(sandbox, dead.pid, pidDomain=domain)
    assert SID not in sessions.liveness().ids
    session_file(sandbox, live_pid, procStart=start_of(live_pid), pidDomain=domain)
    assert SID in sessions.liveness().ids
    other = f"linux:{machine}:pid:[1]"  # another pid namespace: unsure, live
    session_file(sandbox, dead.pid, pidDomain=other)
    (sandbox.sessions / f"{live_pid}.json").unlink()
    assert SID in sessions.liveness().ids


def test_a_shell_waiting_for_a_file_in_the_folder_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    # `until [ -f <folder>/ready ]; do sleep 1; done` run in the background: it holds nothing,
    # works elsewhere, and only its script names the folder. Removed, it waits for ever.
    folder = folder_in(sandbox, "waited")
    script = f"until [ -f '{folder}/ready' ]; do sleep 0.2; done"
    started.append(subprocess.Popen(["bash", "-c", script], cwd="/"))
    assert until_found(folder) == os.path.realpath(folder / "ready")
    started.pop().kill()
    assert inside_now(folder) is None
