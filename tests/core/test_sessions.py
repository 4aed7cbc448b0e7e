"""Liveness with real processes: a live child, a dead pid, a reused pid, no pid, bad files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from app.core import sessions
from tests.support import SandboxEnv


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def by_id(current: str | None = None) -> dict[str | None, sessions.Session]:
    return {s.session_id: s for s in sessions.read_sessions(current)}


def test_a_running_child_is_live_with_its_proc_start(sandbox: SandboxEnv, child) -> None:
    start = sessions.proc_start_time(child.pid)
    assert start is not None and start.isdigit()
    sandbox.write_session(str(child.pid), pid=child.pid, sessionId="live", cwd="/w", status="busy", procStart=start)
    found = by_id()["live"]
    assert found.live and found.status == "busy" and found.pid == child.pid


def test_a_dead_pid_is_not_live(sandbox: SandboxEnv) -> None:
    pid = dead_pid()
    sandbox.write_session(str(pid), pid=pid, sessionId="dead", cwd="/w")
    assert by_id()["dead"].live is False
    assert "dead" not in sessions.live_session_ids()


def test_a_reused_pid_is_not_live(sandbox: SandboxEnv, child) -> None:
    start = int(sessions.proc_start_time(child.pid) or 0)
    sandbox.write_session(str(child.pid), pid=child.pid, sessionId="reused", procStart=start - 1)
    assert by_id()["reused"].live is False
    sandbox.write_session(str(child.pid), pid=child.pid, sessionId="reused", procStart=str(start))
    assert by_id()["reused"].live is True


def test_a_zombie_is_not_live(sandbox: SandboxEnv) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    import time

    deadline = time.time() + 10
    while time.time() < deadline and sessions.proc_start_time(proc.pid) is not None:
        with open(f"/proc/{proc.pid}/stat", "rb") as fh:
            if b") Z " in fh.read():
                break
        time.sleep(0.01)
    sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId="zombie")
    try:
        assert by_id()["zombie"].live is False
    finally:
        proc.wait()


def test_a_file_without_pid_counts_as_live(sandbox: SandboxEnv) -> None:
    sandbox.write_session("nopid", sessionId="unsure", cwd="/w")
    assert by_id()["unsure"].live is True


def test_the_current_session_is_live_even_when_its_process_is_gone(sandbox: SandboxEnv) -> None:
    pid = dead_pid()
    sandbox.write_session(str(pid), pid=pid, sessionId="me")
    assert by_id("me")["me"].live is True
    assert "me" in sessions.live_session_ids("me")
    assert "other" in sessions.live_session_ids("other")


def test_legacy_files_take_the_pid_from_the_name(sandbox: SandboxEnv, child) -> None:
    sandbox.write_session(f"pid-{child.pid}", session_id="old-live", cwd="/a")
    pid = dead_pid()
    sandbox.write_session(f"pid-{pid}", session_id="old-dead", cwd="/b")
    found = by_id()
    assert found["old-live"].live and found["old-live"].cwd == "/a"
    assert not found["old-dead"].live


def test_unreadable_and_odd_files_are_skipped_and_logged(sandbox: SandboxEnv, child) -> None:
    from app.core.log import current_log

    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    # names of pids that run nowhere: an unreadable file of a dead process protects nothing
    (sandbox.sessions / "4194301.json").write_text("{torn")
    (sandbox.sessions / "4194302.json").write_text("[1, 2]")
    (sandbox.sessions / "4194303.json").write_bytes(b"\xff\xfe")
    (sandbox.sessions / "notes.txt").write_text("ignored")
    sandbox.write_session("4", pid="not-a-number", sessionId=12, cwd=["x"], status=None)
    sandbox.write_session(str(child.pid), pid=child.pid, sessionId="ok")
    found = sessions.read_sessions()
    assert sorted(found, key=lambda s: s.session_id or "")[0].session_id is None
    assert {s.session_id for s in found} == {None, "ok"}
    odd = next(s for s in found if s.session_id is None)
    assert odd.pid is None and odd.cwd is None and odd.live  # no usable pid: keep
    assert current_log().read_text().count("sessions: skipped") == 3


def test_live_cwds_are_real_paths(sandbox: SandboxEnv, child, tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    sandbox.write_session(str(child.pid), pid=child.pid, sessionId="a", cwd=str(link))
    assert sessions.live_cwds() == [str(real)]
    assert sessions.live_cwds(current_cwd=str(tmp_path)) == [str(real), str(tmp_path)]


def test_odd_pids_never_crash_a_sweep(sandbox: SandboxEnv) -> None:
    for n, pid in enumerate((2**31, 2**63, 999999999, 0, -5)):
        sandbox.write_session(f"odd{n}", pid=pid, sessionId=f"odd{n}")
    found = by_id()
    # too big for any pid_max: no process runs there, so it protects nothing
    assert [found[f"odd{n}"].live for n in range(3)] == [False, False, False]
    # 0 and below name process groups, not a process: no usable pid, so kept as live
    assert found["odd3"].live and found["odd4"].live
    assert sessions.process_running(2**40) is False and sessions.process_running(0) is False


def test_an_unreadable_file_of_a_running_pid_is_unsure_so_live(sandbox: SandboxEnv, child) -> None:
    """Claude rewrites its file on every status change: a torn read of a running session's
    file must not make that session dead. Read again after a pause; still torn: unsure."""
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    (sandbox.sessions / f"{child.pid}.json").write_text('{"pid": ')
    (found,) = sessions.read_sessions()
    assert found.live and found.unreadable and found.pid == child.pid
    assert sessions.unsure_sessions() == [found]


def test_a_torn_file_that_heals_during_the_pause_is_read(sandbox: SandboxEnv, child) -> None:
    import threading

    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    file = sandbox.sessions / f"{child.pid}.json"
    file.write_text("")

    def heal() -> None:
        file.write_text(json.dumps({"pid": child.pid, "sessionId": "healed", "cwd": "/x"}))

    timer = threading.Timer(sessions.REREAD_PAUSE_S / 4, heal)
    timer.start()
    try:
        (found,) = sessions.read_sessions()
    finally:
        timer.join()
    assert found.session_id == "healed" and not found.unreadable and found.live


def test_a_fifo_in_sessions_never_hangs(sandbox: SandboxEnv) -> None:
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    os.mkfifo(sandbox.sessions / "4194304.json")
    assert sessions.read_sessions() == []


def test_pid_domain_of_another_machine_or_namespace_is_live(sandbox: SandboxEnv) -> None:
    """Its pid means nothing here: a dead-looking pid of another pid namespace is kept."""
    machine, namespace = sessions._own_pid_domain()
    sandbox.write_session("a", pid=4194301, sessionId="other-machine", pidDomain=f"linux:beef:{namespace}")
    sandbox.write_session("b", pid=4194302, sessionId="other-ns", pidDomain=f"linux:{machine}:1")
    sandbox.write_session("c", pid=4194303, sessionId="same", pidDomain=f"linux:{machine}:{namespace}")
    found = by_id()
    assert found["other-machine"].live and found["other-ns"].live
    assert not found["same"].live


def test_procstart_compared_with_ps_without_proc(sandbox: SandboxEnv, child) -> None:
    """macOS writes `ps -o lstart=` text; where /proc is missing that is what is compared."""
    import subprocess

    text = subprocess.run(["ps", "-o", "lstart=", "-p", str(child.pid)], capture_output=True,
                          text=True, check=True).stdout
    assert sessions._ps_start_matches(child.pid, text)
    assert sessions._ps_start_matches(child.pid, "  " + "  ".join(text.split()) + " ")
    assert not sessions._ps_start_matches(child.pid, "Thu Jan  1 00:00:00 1970")
