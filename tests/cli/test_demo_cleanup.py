"""The demo sandbox goes away however `claudetto --demo` ends: SIGTERM, SIGHUP (a closed
terminal), a signal while it is still being built, an app that does not get out in time; and
a start removes the sandboxes of demos whose process is gone, never a live one's."""

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

from app.core.sessions import proc_start_time
from tests.support import ROOT, SandboxEnv

BIN = Path(sys.executable).parent
TMUX = shutil.which("tmux")


def demo_folders(sandbox: SandboxEnv) -> list[Path]:
    return sorted(p for p in sandbox.user_tmp.iterdir() if p.name.startswith("claudetto-demo-"))


def wait_until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return proc_start_time(pid) is None or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"


class Tmux:
    """A private tmux server (its own socket) running one command in a real terminal."""

    def __init__(self, folder: Path) -> None:
        assert TMUX is not None
        self.socket = str(folder / "tmux.sock")
        self.base = [TMUX, "-S", self.socket, "-f", "/dev/null"]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, env=dict(os.environ),
                              timeout=30, check=False)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "demo").stdout


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if TMUX is None:
        pytest.skip("tmux is not installed")
    server = Tmux(tmp_path)
    try:
        yield server
    finally:
        server.run("kill-server")


def start_demo(tmux: Tmux, sandbox: SandboxEnv, tmp_path: Path) -> tuple[int, Path, Path]:
    """`claudetto --demo` in a 120x36 terminal, up and drawn; its pid, sandbox and exit file."""
    exit_file = tmp_path / "exit-code"
    command = f"{BIN / 'claudetto'} --demo; echo $? > {exit_file}; sleep 30"
    started = tmux.run("new-session", "-d", "-s", "demo", "-x", "120", "-y", "36", "-c", str(tmp_path), command)
    assert started.returncode == 0, started.stderr
    wait_until(lambda: len(demo_folders(sandbox)) == 1, 180, "the demo sandbox was not made")
    folder = demo_folders(sandbox)[0]
    pid = int(folder.name.split("-")[2])
    wait_until(lambda: "Overview" in tmux.screen() and "live" in tmux.screen(), 180, "the dashboard was not drawn")
    assert (folder / "home" / ".claude" / "sessions").is_dir()
    return pid, folder, exit_file


def test_sigterm_removes_the_sandbox_and_restores_the_terminal(tmux: Tmux, sandbox: SandboxEnv,
                                                               tmp_path: Path) -> None:
    pid, folder, exit_file = start_demo(tmux, sandbox, tmp_path)
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: exit_file.exists() and exit_file.read_text().strip(), 20, "claudetto did not exit")
    assert exit_file.read_text().strip() == "143"  # 128 + SIGTERM
    assert not folder.exists() and demo_folders(sandbox) == []
    assert "Overview" not in tmux.screen()  # the app left the alternate screen: the shell is back


def test_a_closed_terminal_sighup_removes_the_sandbox(tmux: Tmux, sandbox: SandboxEnv, tmp_path: Path) -> None:
    pid, folder, _ = start_demo(tmux, sandbox, tmp_path)
    children = [int(p.stem) for p in (folder / "home" / ".claude" / "sessions").glob("*.json")
                if p.stem.isdigit() and int(p.stem) < 4194301]
    assert len(children) == 2
    tmux.run("kill-session", "-t", "demo")  # the terminal goes away: SIGHUP to its processes
    wait_until(lambda: gone(pid), 20, "claudetto did not exit on SIGHUP")
    assert not folder.exists() and demo_folders(sandbox) == []
    wait_until(lambda: all(gone(c) for c in children), 10, "the live sessions' processes stayed")


def test_sighup_sent_to_the_process_alone(tmux: Tmux, sandbox: SandboxEnv, tmp_path: Path) -> None:
    pid, folder, exit_file = start_demo(tmux, sandbox, tmp_path)
    os.kill(pid, signal.SIGHUP)
    wait_until(lambda: exit_file.exists() and exit_file.read_text().strip(), 20, "claudetto did not exit")
    assert exit_file.read_text().strip() == str(128 + signal.SIGHUP)
    assert not folder.exists()


def test_a_signal_while_the_sandbox_is_built_still_removes_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    proc = subprocess.Popen([str(BIN / "claudetto"), "--demo", "sessions", "--json"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        wait_until(lambda: bool(demo_folders(sandbox)) or proc.poll() is not None, 60, "no sandbox")
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (143, -signal.SIGTERM) or proc.returncode == 0  # 0: it had finished first
    assert b"Traceback" not in err
    assert demo_folders(sandbox) == []


HUNG_APP = """
import sys, time
from app.sandbox import DemoRun
run = DemoRun()
run.GRACE_S = 1.0
with run as box:
    run.on_signal = lambda: None   # an app that is asked to exit and never does
    print(box.root, flush=True)
    while True:
        time.sleep(0.1)
"""


def test_an_app_that_does_not_exit_is_ended_and_its_sandbox_removed(sandbox: SandboxEnv, tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-P", "-c", HUNG_APP], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    try:
        assert proc.stdout is not None
        root = Path(proc.stdout.readline().strip())
        assert root.is_dir() and root.name.startswith("claudetto-demo-")
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143 and 0.9 < time.monotonic() - started < 15
    assert not root.exists()


SIGNAL_AT_MKDTEMP = """
import os, signal, sys
import app.sandbox.demo as demo
from app.sandbox import DemoRun
made = demo.make_demo_folder
def made_then_signalled(folder=None):
    path = made(folder)
    print(path, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)  # the folder exists, the run does not know it yet
    return path
demo.make_demo_folder = made_then_signalled
with DemoRun() as box:
    pass
"""


def test_a_signal_right_after_the_folder_is_made_still_removes_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-P", "-c", SIGNAL_AT_MKDTEMP], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60, check=False)
    root = Path(done.stdout.strip())
    assert root.name.startswith("claudetto-demo-"), done.stderr
    assert "Traceback" not in done.stderr
    assert not root.exists() and demo_folders(sandbox) == []


def fake_demo(sandbox: SandboxEnv, pid: int, start: str | None, suffix: str, *,
              marker: str | None = "same") -> Path:
    folder = sandbox.user_tmp / f"claudetto-demo-{pid}-{start or 'x'}-{suffix}"
    (folder / "home" / ".claude").mkdir(parents=True)
    (folder / "utmp" / "big.bin").parent.mkdir(parents=True)
    (folder / "utmp" / "big.bin").write_bytes(b"d" * 100_000)
    if marker == "same":
        (folder / ".claudetto-demo").write_text(f"{pid} {start or 'x'}\n")
    elif marker is not None:
        (folder / ".claudetto-demo").write_text(marker)
    return folder


def test_a_start_removes_sandboxes_of_dead_demos_only(sandbox: SandboxEnv, tmp_path: Path) -> None:
    dead = subprocess.Popen(["sleep", "60"])
    dead_start = proc_start_time(dead.pid)
    dead.kill()
    dead.wait()
    live = subprocess.Popen(["sleep", "60"])
    try:
        live_start = proc_start_time(live.pid)
        assert dead_start and live_start
        stale = fake_demo(sandbox, dead.pid, dead_start, "ab12cd34")
        empty = sandbox.user_tmp / f"claudetto-demo-{dead.pid}-{dead_start}-ee11ff22"
        empty.mkdir()  # a demo that died before it wrote its marker
        reused = fake_demo(sandbox, live.pid, str(int(live_start) - 500), "re55us44")  # the pid lives on in another process
        alive = fake_demo(sandbox, live.pid, live_start, "al11ve22")
        unmarked = fake_demo(sandbox, dead.pid, dead_start, "zz99yy88", marker=None)
        wrong = fake_demo(sandbox, dead.pid, dead_start, "qq77ww66", marker="someone else\n")
        target = tmp_path / "precious"
        target.mkdir()
        (target / "keep.txt").write_text("mine")
        (target / ".claudetto-demo").write_text(f"{dead.pid} {dead_start}\n")
        link = sandbox.user_tmp / f"claudetto-demo-{dead.pid}-{dead_start}-11link11"
        link.symlink_to(target)
        other = sandbox.user_tmp / "claudetto-demo-notes"
        other.mkdir()

        done = subprocess.run([str(BIN / "claudetto"), "--demo", "sessions", "--json"], cwd=tmp_path,
                              capture_output=True, text=True, env=dict(os.environ), timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert len(json.loads(done.stdout)["sessions"]) == 3  # the demo's, not ours

        assert not stale.exists() and not empty.exists() and not reused.exists()
        assert alive.is_dir() and (alive / "utmp" / "big.bin").exists()
        assert unmarked.is_dir() and wrong.is_dir() and other.is_dir()
        assert link.is_symlink() and (target / "keep.txt").read_text() == "mine"
        assert sorted(p.name for p in demo_folders(sandbox)) == sorted(
            p.name for p in (alive, unmarked, wrong, link, other))  # and this run's own went too
    finally:
        live.kill()
        live.wait()
