"""The life of one `--demo` sandbox: a folder in the temp folder named after the owning
process (pid and start time, also in a marker file inside), the environment and the current
folder pointed at it, and its removal exactly once, on a normal exit, an exception, SIGTERM
or SIGHUP (a closed terminal). A process killed outright (SIGKILL, a crash) cannot clean
up, so every start removes the demo sandboxes whose owner is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.sandbox.build import Sandbox, build_sandbox

# --- the demo run: one sandbox per process, removed once ---------------------------------------

DEMO_PREFIX = "claudetto-demo-"
DEMO_MARKER = ".claudetto-demo"
#: claudetto-demo-<pid>-<start time in clock ticks, or x where unknown>-<mkdtemp suffix>
_DEMO_NAME = re.compile(r"^claudetto-demo-([0-9]+)-([0-9]+|x)-[A-Za-z0-9_]+$")
ENV_NAMES = ("HOME", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "TMPDIR", "CLAUDETTO_HOME",
             "CLAUDETTO_MANAGED_SETTINGS")


def demo_owner(name: str) -> tuple[int, str | None] | None:
    """The owning pid and start time a demo folder's name carries, or None for any other name."""
    found = _DEMO_NAME.match(name)
    if found is None:
        return None
    start = found.group(2)
    return int(found.group(1)), None if start == "x" else start


def _marker_text(pid: int, start: str | None) -> str:
    return f"{pid} {start or 'x'}\n"


def _is_our_demo(path: str, pid: int, start: str | None) -> bool:
    """A folder of ours (this user's, a real folder) holding the marker its name promises;
    an empty one is the start of a demo that died before it wrote the marker."""
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return False
        entries = os.listdir(path)
        if not entries:
            return True
        marker = os.path.join(path, DEMO_MARKER)
        mst = os.lstat(marker)
        if not stat.S_ISREG(mst.st_mode) or mst.st_size > 64:
            return False
        with open(marker, encoding="ascii", errors="replace") as fh:
            return fh.read() == _marker_text(pid, start)
    except OSError:
        return False


def remove_stale_demos(folder: str | None = None) -> list[str]:
    """Remove the demo sandboxes in `folder` (the temp folder) whose owning process is gone;
    returns their paths. Only folders named and marked as claudetto demos of this user; a
    symlink is never followed (rmtree removes links, not what they point at)."""
    from app.core.sessions import process_running

    folder = folder or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [entry.name for entry in os.scandir(folder) if entry.name.startswith(DEMO_PREFIX)]
    except OSError:
        return removed
    for name in names:
        owner = demo_owner(name)
        if owner is None:
            continue
        pid, start = owner
        if pid == os.getpid() or process_running(pid, start):
            continue
        path = os.path.join(folder, name)
        if _is_our_demo(path, pid, start):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def make_demo_folder(folder: str | None = None) -> Path:
    """A fresh folder for this process's sandbox, named and marked with its owner."""
    from app.core.sessions import proc_start_time

    pid = os.getpid()
    start = proc_start_time(pid)
    base = tempfile.mkdtemp(prefix=f"{DEMO_PREFIX}{pid}-{start or 'x'}-", dir=folder)
    with open(os.path.join(base, DEMO_MARKER), "w", encoding="ascii") as fh:
        fh.write(_marker_text(pid, start))
    return Path(base)


class DemoRun:
    """`with DemoRun() as box:` builds the sandbox, points os.environ and the current folder at
    it, and removes it once on the way out.

    SIGTERM and SIGHUP end the run too: the first one calls `on_signal` (the TUI asks its app
    to exit, so the terminal is restored) and gives it GRACE_S to get out of the `with`; after
    that, or when there is no `on_signal`, or on a second signal, the run is cut short (a
    SystemExit, so the removal still runs). A main thread that never comes back is covered by
    a timer that removes the sandbox and ends the process itself. `signalled` keeps the
    signal, so the caller can exit with 128 + its number.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)
    GRACE_S = 3.0

    def __init__(self, *, cwd: str = "home", folder: str | None = None) -> None:
        self.cwd = cwd  # "home" or "project": where the current folder goes
        self.folder = folder
        self.on_signal: Callable[[], None] | None = None
        self.signalled: int | None = None
        self.base: Path | None = None
        self.box: Sandbox | None = None
        self._state = "new"  # new -> live -> removing -> removed
        self._lock = threading.Lock()
        self._saved: dict[str, str | None] = {}
        self._here: str | None = None
        self._handlers: dict[int, Any] = {}
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Sandbox:
        remove_stale_demos(self.folder)
        self._state = "live"
        self._install_handlers()
        try:
            self.base = self._make_folder()
            self.box = build_sandbox(self.base)
            self._saved = {name: os.environ.get(name) for name in ENV_NAMES}
            os.environ.update(self.box.env)
            with contextlib.suppress(OSError):
                self._here = os.getcwd()
            # the current folder's repository is a known project: keep the real one out
            os.chdir(self.box.project if self.cwd == "project" else self.box.home)
        except BaseException:
            self._finish()
            raise
        return self.box

    def _make_folder(self) -> Path:
        """The sandbox's folder, made with the end signals held back: one arriving between
        mkdtemp and the assignment would leave a folder nobody knows to remove."""
        if threading.current_thread() is not threading.main_thread():
            return make_demo_folder(self.folder)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)
        try:
            self.base = make_demo_folder(self.folder)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a held signal is handled here
        return self.base

    def __exit__(self, *exc: object) -> None:
        self._finish()

    def _finish(self) -> None:
        self.remove()
        if self._timer is not None:
            self._timer.cancel()
        for signum, handler in self._handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)
        self._handlers.clear()

    def remove(self) -> None:
        """Put the environment back, stop the sandbox's processes and remove its folder; once,
        whichever thread or signal gets here first."""
        with self._lock:
            if self._state in ("removing", "removed"):
                return
            self._state = "removing"
            try:
                if self._here is not None:
                    with contextlib.suppress(OSError):
                        os.chdir(self._here)
                if self.box is not None:
                    self.box.close()
                for name, value in self._saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
                if self.base is not None:
                    shutil.rmtree(self.base, ignore_errors=True)
            finally:
                self._state = "removed"

    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; a test's thread does without
        for signum in self.SIGNALS:
            self._handlers[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        first = self.signalled is None
        if first:
            self.signalled = signum
        if self._state != "live":
            return  # the removal is under way or done: the process is on its way out
        if first and self.on_signal is not None:
            try:
                self.on_signal()
            except Exception:  # noqa: BLE001 - no app to ask (not started, or gone): cut short
                pass
            else:
                self._timer = threading.Timer(self.GRACE_S, self._give_up, args=(signum,))
                self._timer.daemon = True
                self._timer.start()
                return
        raise SystemExit(128 + signum)

    def _give_up(self, signum: int) -> None:
        """The app did not get out in time: remove the sandbox from here and end the process."""
        self.remove()
        os._exit(128 + signum)
