"""What every screen of the dashboard has: typed access to the app and its store, the header
and footer around its own widgets, and a failed worker shown to the user.

A screen built around one table names it (`TABLE`) and, when it tells the highlighted row in
full below, its detail pane (`DETAIL`): the base composes them between the header and the
footer (with what the screen puts above and below the table), fits the table to the width,
and shows the highlighted row in the pane.

A worker that raises must never leave a screen waiting for an answer that will not come:
`on_worker_state_changed` hears of every worker the screen started, and a failed one is
shown (an error notification) and handed to `worker_failed`, where a screen puts its state
back (the Outputs screen ends "A removal is already running." there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input
from textual.worker import Worker, WorkerState

from app.widgets.detail import DetailPane, DetailPlan
from app.widgets.table import Fit, Table, TablePlan, fit

if TYPE_CHECKING:
    from app.data.store import Store
    from app.tui import ClaudettoApp


def claudetto(app: object) -> ClaudettoApp:
    """The running app, typed (a screen's or a widget's `self.app`)."""
    return cast("ClaudettoApp", app)


class ClaudettoScreen(Screen[None]):
    """A screen of the dashboard (one per file in app/screens/). A screen built around one
    table names it (`TABLE`): its columns are fitted to the width on mount and on every
    resize, it has the focus, and its data is read (`action_refresh`) once mounted. Its
    `DETAIL` pane, when it has one, tells the highlighted row (`detail`) in full."""

    TABLE: ClassVar[TablePlan | None] = None
    DETAIL: ClassVar[DetailPlan | None] = None
    fitted: Fit  # the columns chosen for the current width
    held: tuple[ModalScreen[Any], Any] | None = None  # a question waiting for this screen to be shown

    def compose(self) -> ComposeResult:
        """The header, the table between what the screen puts above and below it, the
        footer. A screen laid out otherwise composes its own."""
        from app.widgets.totals import TotalsBar  # here: app/widgets/totals.py imports this module

        if self.TABLE is None:
            return
        yield TotalsBar(self.mode)
        yield from self.above_table()
        yield Table(id=self.TABLE.selector.removeprefix("#"), cursor_type="row", zebra_stripes=True)
        if self.DETAIL is not None:
            yield DetailPane(self.DETAIL)
        yield from self.below_table()
        yield Footer(compact=True)

    def above_table(self) -> ComposeResult:
        """What goes between the header and the table (a filter box, say)."""
        return ()

    def below_table(self) -> ComposeResult:
        """What goes between the table (and its detail pane) and the footer."""
        return ()

    @property
    def mode(self) -> str:
        """The app's mode this screen is: the header marks it ("" for a screen of no mode)."""
        return next((mode for mode, screen in self.app.MODES.items() if screen is type(self)), "")

    def on_mount(self) -> None:
        if self.TABLE is not None:
            self.refit(self.app.size.width)
            self.query_one(self.TABLE.selector, Table).focus()
            self.action_refresh()

    def action_refresh(self) -> None:
        """Read the screen's data again (a screen with a source of its own says how)."""

    def refit(self, width: int) -> None:
        """Fit the table's columns to `width`; when they change its rows are made again,
        the cursor staying on its row."""
        assert self.TABLE is not None
        fitted = fit(self.TABLE.columns, width, self.TABLE.min_rest)
        if fitted == getattr(self, "fitted", None):
            return
        self.fitted = fitted
        table = self.query_one(self.TABLE.selector, Table)
        cursor = table.cursor_key()
        table.set_columns(fitted)
        self.show_rows()
        table.move_to(cursor)

    def show_rows(self) -> None:
        """Show the screen's data in its table (a screen with a TABLE says how)."""

    @property
    def detail_pane(self) -> DetailPane:
        assert self.DETAIL is not None
        return self.query_one(self.DETAIL.selector, DetailPane)

    @on(DataTable.RowHighlighted)
    def highlight_moved(self, event: DataTable.RowHighlighted) -> None:
        if self.TABLE is not None and event.data_table.id == self.TABLE.selector.removeprefix("#"):
            self.show_detail()

    def show_detail(self) -> None:
        """Tell the highlighted row in the detail pane, or why no row is highlighted."""
        if self.TABLE is None or self.DETAIL is None:
            return
        key = self.query_one(self.TABLE.selector, Table).cursor_key()
        self.detail_pane.show(self.detail(key) if key else None)

    def detail(self, key: str) -> Text | None:
        """The row `key` told in full; None when the screen has no such row (a screen with a
        DETAIL says how)."""
        return None

    def on_resize(self, event: events.Resize) -> None:
        if self.TABLE is not None:
            self.refit(event.size.width)

    @property
    def claudetto(self) -> ClaudettoApp:
        return claudetto(self.app)

    @property
    def store(self) -> Store:
        return self.claudetto.store

    def now(self) -> float:
        return self.claudetto.clock()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """As the app's: what a screen says is never read as markup (it names paths)."""
        self.app.notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def ask(self, modal: ModalScreen[Any], answered: Any, what: str) -> None:
        """Ask `modal` on this screen. A question that comes from a worker (a dry run takes
        seconds) waits while the person is elsewhere: on another screen, under a dialog, or
        typing in a text box of this one. Pushed at once it came up on top of what they were
        doing, and a `y` meant for that (another question, a word typed in the filter)
        answered it unread. `what` names it in the note that says where it waits."""
        self.held = (modal, answered)
        if self.ask_held():
            return
        if self.app.screen is self:
            self.notify(f"{what} is ready: it asks when you leave the text box.")
            return
        tab = next(((key, title) for key, mode, title in self.claudetto.tabs if mode == self.mode), None)
        where = f"{tab[1]} ({tab[0]})" if tab else "its screen"
        self.notify(f"{what} is ready: its question waits on {where}.")

    @on(events.ScreenResume)
    @on(events.DescendantBlur)
    @on(events.DescendantFocus)
    def ask_held(self) -> bool:
        """Ask the held question when this screen is shown and nothing is being typed in it;
        whether it was asked."""
        if self.held is None or self.app.screen is not self or isinstance(self.focused, Input):
            return False
        held, self.held = self.held, None
        self.app.push_screen(*held)
        return True

    def refuse_read_only(self) -> bool:
        """True (and says why) when the app runs with --read-only."""
        if self.claudetto.read_only:
            self.notify("Read-only: every change is disabled (started with --read-only).", severity="warning")
        return self.claudetto.read_only

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker this screen started ends here: its result, or its failure shown."""
        worker = event.worker
        if event.state == WorkerState.SUCCESS:
            self.worker_done(worker)
        elif event.state == WorkerState.ERROR:
            error = worker.error
            self.notify(f"{worker.name or 'A worker'} failed: {type(error).__name__}: {error}",
                        title="Something went wrong", severity="error", timeout=10)
            self.worker_failed(worker)

    def worker_done(self, worker: Worker[Any]) -> None:
        """Show what `worker` returned (`worker.result`)."""

    def worker_failed(self, worker: Worker[Any]) -> None:
        """Put the screen's state back after `worker` raised (the notification is shown)."""
