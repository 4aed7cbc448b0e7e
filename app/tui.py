"""The Textual app: small; it declares the screens (MODES) and owns the shared outputs store.

Sessions and Outputs are modes, so each keeps its state while the other is shown. Judging
and measuring run in the store's workers; their Messages land here and go to the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.app import App
from textual.binding import Binding

from app.commands import OutputCommands, SessionCommands, ViewCommands
from app.core.outputs import Judged, judge
from app.screens.help import HelpScreen
from app.screens.outputs import OutputsScreen
from app.screens.sessions import SessionsScreen
from app.widgets.store import OutputsJudged, OutputStore, SessionsRead, SizesMeasured


class ClaudettoApp(App[None]):
    """The dashboard: live sessions, everything the sweeps judge, removals approved by hand."""

    TITLE = "claudetto"
    CSS_PATH = "tui.tcss"
    MODES = {"sessions": SessionsScreen, "outputs": OutputsScreen}
    DEFAULT_MODE = "sessions"
    COMMANDS = App.COMMANDS | {ViewCommands, SessionCommands, OutputCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit", id="quit", tooltip="Leave claudetto"),
        Binding("question_mark", "help", "Help", key_display="?", id="help", tooltip="Every key and what it does"),
        Binding("1", "switch_mode('sessions')", "Sessions", show=False, id="sessions", tooltip="Live and stale sessions"),
        Binding("2", "switch_mode('outputs')", "Outputs", show=False, id="outputs", tooltip="Everything the sweeps judge"),
        Binding("r", "rejudge", "Refresh", show=False, id="refresh", tooltip="Judge every output again"),
    ]

    def __init__(self, *, read_only: bool = False, clock: Callable[[], float] | None = None,
                 judge_outputs: Callable[[], Judged] | None = None, poll_s: float = 1.0) -> None:
        super().__init__()
        self.read_only = read_only
        self.clock = clock or time.time
        self.poll_s = poll_s
        self.store = OutputStore(self, judge_outputs or judge)
        self.event_loop: asyncio.AbstractEventLoop | None = None
        if read_only:
            self.sub_title = "read-only"

    def on_mount(self) -> None:
        self.event_loop = asyncio.get_running_loop()
        self.store.poll_sessions()
        self.store.refresh()
        self.set_interval(self.poll_s, self.store.poll_sessions, name="poll sessions")

    def on_sessions_read(self, message: SessionsRead) -> None:
        self.store.apply_sessions(message)

    def on_outputs_judged(self, message: OutputsJudged) -> None:
        self.store.apply_judged(message)

    def on_sizes_measured(self, message: SizesMeasured) -> None:
        self.store.apply_sizes(message)

    def exit_from_signal(self) -> None:
        """Ask the app to exit from a signal handler: through the loop's wake-up pipe, so the
        loop wakes now and the exit runs as a normal one (the terminal is restored)."""
        if self.event_loop is None or self.event_loop.is_closed() or not self.is_running:
            raise RuntimeError("the app is not running")
        self.event_loop.call_soon_threadsafe(self.exit)

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
        ClaudettoApp(read_only=read_only).run()
        return 0
    run = DemoRun(cwd="home")
    with run:
        app = ClaudettoApp(read_only=read_only)
        run.on_signal = app.exit_from_signal
        app.run()
    return 128 + run.signalled if run.signalled else 0
