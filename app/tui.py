"""The Textual app: small; it declares the screens (MODES) and owns the shared store.

Every screen is a mode, so each keeps its state while another is shown. The store judges,
measures and reads sessions in its own workers (app/data/store.py); the screens subscribe.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.worker import Worker, WorkerState

from app.commands import KeyCommands, SessionCommands
from app.core.outputs import Judged, judge
from app.data.store import Store
from app.screens import confirm
from app.screens.checkouts import CheckoutsScreen
from app.screens.help import HelpScreen
from app.screens.ledger import LedgerScreen
from app.screens.memory import MemoryScreen
from app.screens.outputs import OutputsScreen
from app.screens.overview import OverviewScreen
from app.screens.sessions import SessionsScreen
from app.widgets.plain import visible

#: (key, mode, screen, title, what it shows): the header's tabs and the app's bindings
SCREENS = (
    ("1", "overview", OverviewScreen, "Overview", "What can go now, what went, who is growing"),
    ("2", "sessions", SessionsScreen, "Sessions", "Live and stale sessions"),
    ("3", "outputs", OutputsScreen, "Outputs", "Everything the sweeps judge"),
    ("4", "checkouts", CheckoutsScreen, "Checkouts", "Every .claude/worktrees checkout"),
    ("5", "ledger", LedgerScreen, "Ledger", "Files changed after Claude's last edit"),
    ("6", "memory", MemoryScreen, "Memory", "Remembered facts the tree no longer bears out"),
)


class ClaudettoApp(App[None]):
    """The dashboard: sessions, everything the sweeps judge, checkouts, ledger, memory."""

    TITLE = "claudetto"
    CSS_PATH = "tui.tcss"
    MODES = {mode: screen for _key, mode, screen, _title, _what in SCREENS}
    DEFAULT_MODE = "overview"
    COMMANDS = App.COMMANDS | {KeyCommands, SessionCommands}
    BINDINGS = [
        # ctrl+c too, a terminal's reflex: Textual's own only said "Press [b]ctrl+q[/b]", markup and all
        Binding("q,ctrl+c", "quit", "Quit", key_display="q", id="quit", tooltip="Leave claudetto"),
        Binding("question_mark", "help", "Help", key_display="?", id="help", tooltip="Every key and what it does"),
        *(Binding(key, f"switch_mode('{mode}')", title, show=False, id=mode, tooltip=what)
          for key, mode, _screen, title, what in SCREENS),
        Binding("r", "rejudge", "Refresh", show=False, id="refresh", tooltip="Judge every output again"),
    ]

    def __init__(self, *, read_only: bool = False, clock: Callable[[], float] | None = None,
                 judge_outputs: Callable[[], Judged] | None = None, poll_s: float = 1.0,
                 confirm_guard_s: float | None = None) -> None:
        """`confirm_guard_s`: how long a question takes no answer once shown (app/screens/confirm.py)."""
        super().__init__()
        self.confirm_guard_s = confirm.GUARD_S if confirm_guard_s is None else confirm_guard_s
        self.read_only = read_only
        self.clock = clock or time.time
        self.poll_s = poll_s
        self.store = Store(self, judge_outputs or judge)
        self.tabs = [(key, mode, title) for key, mode, _screen, title, _what in SCREENS]
        self.event_loop: asyncio.AbstractEventLoop | None = None
        if read_only:
            self.sub_title = "read-only"

    def on_mount(self) -> None:
        self.event_loop = asyncio.get_running_loop()
        self.store.start(self.poll_s)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The store's workers run on the app: a failed one is shown, never left waiting."""
        if event.state == WorkerState.ERROR:
            self.store.worker_failed(event.worker)

    def exit_from_signal(self) -> None:
        """Ask the app to exit from a signal handler: through the loop's wake-up pipe, so the
        loop wakes now and the exit runs as a normal one (the terminal is restored)."""
        if self.event_loop is None or self.event_loop.is_closed() or not self.is_running:
            raise RuntimeError("the app is not running")
        self.event_loop.call_soon_threadsafe(self.exit)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """A notification names paths, branches and errors as they are: never read as markup
        (a folder named `[bold]` is shown so), control characters drawn (app/widgets/plain.py)."""
        super().notify(visible(message, lines=True), title=visible(title), severity=severity, timeout=timeout,
                       markup=markup)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_rejudge(self) -> None:
        self.store.refresh()
        self.notify("Judging every output again")


def run_tui(*, demo: bool = False, read_only: bool = False) -> int:
    """Run the dashboard; `demo` runs it on a sandbox that is removed however the app ends
    (quit, an error, SIGTERM, SIGHUP); 128 + the signal's number when a signal ended it."""
    from app.sandbox import DemoRun, remove_stale_demos

    if not demo:
        remove_stale_demos()
        app = ClaudettoApp(read_only=read_only)
        with ends_on_signals(app) as got:
            app.run()
        return 128 + got[0] if got else 0
    run = DemoRun(cwd="home")
    with run:
        app = ClaudettoApp(read_only=read_only)
        run.on_signal = app.exit_from_signal
        app.run()
    return 128 + run.signalled if run.signalled else 0


@contextmanager
def ends_on_signals(app: ClaudettoApp) -> Iterator[list[int]]:
    """SIGTERM and SIGHUP (a closed terminal) end the app as `q` does: a removal running stops
    between two items, each whole or gone and journaled, and the terminal is given back.
    Python's default ends the process on the spot: an item cut in the middle of its removal,
    and the terminal left on the dashboard's screen in raw mode. A second signal, or one
    before the app runs, ends it at once (a SystemExit, so `finally` blocks still run).
    Yields the signals received, in order."""
    got: list[int] = []

    def ask_to_end(signum: int, _frame: object) -> None:
        got.append(signum)
        if len(got) == 1:
            try:
                app.exit_from_signal()
                return
            except RuntimeError:
                pass
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():  # only the main thread may handle signals
        yield got
        return
    saved = {signum: signal.signal(signum, ask_to_end) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield got
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
