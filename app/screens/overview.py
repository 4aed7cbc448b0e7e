"""Overview, the first screen: what can go now (by kind), the biggest items, the space freed
per day (a bar chart from the journal), and for each live session the size of what it made
and how fast that grows (a sparkline over the last minutes): which session is filling the
disk right now, at a glance.

Everything but the chart comes from the store; the chart reads the journal in a worker.
Enter (or `o`) on a biggest item shows it on Outputs; on a live session, its row on Sessions.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Label
from textual.worker import Worker

from app import format as fmt
from app.core.sessions import Session
from app.core.verdict import Verdict
from app.data import overview
from app.screens.base import ClaudettoScreen
from app.screens.sessions import project_name
from app.widgets.charts import DayBars
from app.widgets.empty import EmptyState
from app.widgets.table import Col, Fit, Table, fit
from app.widgets.totals import TotalsBar

BIGGEST = 30  # the table scrolls: as many as the screen's height shows
BIGGEST_COLUMNS = (Col("size", "size", 10), Col("verdict", "verdict", 20, drop=1), Col("path", "path"))
GROWING_COLUMNS = (Col("session", "session", 8), Col("project", "project", 10, drop=1), Col("size", "made", 9),
                   Col("rate", "growing", 12), Col("growth", "last 10 minutes"))
NARROW = 100  # below this many columns the panels stack and the screen scrolls


class OverviewScreen(ClaudettoScreen):
    """Reclaimable by kind, biggest items, freed per day, live sessions growing."""

    CSS_PATH = "overview.tcss"
    plans: tuple[Fit, Fit]  # the biggest items' and the live sessions' columns
    filled = False  # the first judgement and its sizes are in: the biggest items' cursor stays on its item
    BINDINGS = [
        Binding("o", "open", "Open", id="overview-open",
                tooltip="Show the highlighted item on Outputs, or the session on Sessions (or enter)"),
        Binding("tab", "app.focus_next", "Next panel", id="overview-next", tooltip="Move to the next table"),
        Binding("r", "refresh", "Refresh", id="overview-refresh", tooltip="Judge every output again, read the journal"),
    ]

    def compose(self) -> ComposeResult:
        yield TotalsBar("overview")
        yield EmptyState()
        with VerticalScroll(id="overview"):
            with Horizontal(classes="row"):
                with Vertical(classes="panel", id="reclaim-panel"):
                    yield Label("Reclaimable now", classes="panel-title", id="reclaim-title")
                    yield Table(id="kinds", cursor_type="row", show_cursor=False)
                with Vertical(classes="panel", id="freed-panel"):
                    yield Label("Freed per day (the journal)", classes="panel-title")
                    yield DayBars(id="freed")
            with Horizontal(classes="row", id="bottom-row"):
                with Vertical(classes="panel", id="biggest-panel"):
                    yield Label("Biggest items", classes="panel-title")
                    yield Table(id="biggest", cursor_type="row")
                with Vertical(classes="panel", id="growing-panel"):
                    yield Label("Live sessions: what each made, and how fast it grows", classes="panel-title")
                    yield Table(id="growing", cursor_type="row")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        for key, label, width in (("kind", "kind", 14), ("items", "items", 6), ("size", "size", 10)):
            self.query_one("#kinds", Table).add_column(label, key=key, width=width)
        self.set_columns()
        for signal in (self.store.changed, self.store.sized, self.store.sessions_changed):
            signal.subscribe(self, lambda _d: self.show_store())
        self.show_store()
        self.read_journal()
        # tab goes between the two tables `o` opens a row of (the scroll follows the focus);
        # the kinds' table has no cursor and the scroll itself nothing to open
        self.query_one("#kinds", Table).can_focus = False
        self.query_one("#overview", VerticalScroll).can_focus = False
        self.query_one("#biggest", Table).focus()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW, "-narrow")
        self.set_columns()
        self.show_store()

    def set_columns(self) -> None:
        """The path and the sparkline take what the panel's width leaves."""
        width = self.app.size.width - 1  # the screen's scrollbar
        panel = width - 2 if width < NARROW else width // 2 - 2
        plans = (fit(BIGGEST_COLUMNS, panel, 16), fit(GROWING_COLUMNS, panel, 8))
        if plans == getattr(self, "plans", None):
            return
        self.plans = plans
        self.query_one("#biggest", Table).set_columns(plans[0])
        self.query_one("#growing", Table).set_columns(plans[1])

    # --- from the store ---------------------------------------------------------------------

    def show_store(self) -> None:
        store = self.store
        self.query_one(EmptyState).display = store.found_nothing
        sizes = {v.path: store.size(v) for v in store.rows.values()}
        kinds = overview.reclaimable_by_kind(store.rows.values(), sizes)
        total = sum(k.size for k in kinds)
        self.query_one("#reclaim-title", Label).update(
            f"Reclaimable now: {fmt.size(total)}" if store.judged else "Reclaimable now: judging…")
        self.query_one("#kinds", Table).sync(
            {k.kind: k for k in kinds}, lambda _key, k: [k.kind, f"{k.count:,}", fmt.size(k.size)])
        biggest = overview.biggest_items(store.rows.values(), store.size, BIGGEST)
        table = self.query_one("#biggest", Table)
        table.sync({f"{v.rule}:{v.path}": (v, store.size(v)) for v in biggest}, self.biggest_cells)
        order = [f"{v.rule}:{v.path}" for v in biggest]
        if table.keys_in_order() != order:
            # once the list is in, the cursor stays on the item read, whatever grew past it:
            # on the first row it stayed put, on another item that `o` then opened
            table.order({key: at for at, key in enumerate(order)}.__getitem__, stay=self.filled)
        self.filled = self.filled or (store.judged and not store.progress.running)
        self.show_growing()

    def biggest_cells(self, _key: str, row: tuple[Verdict, int | None]) -> list[Text]:
        verdict, size = row
        values = {"size": fmt.size(size), "verdict": fmt.verdict_cell(verdict.action, verdict.reason),
                  "path": fmt.compact_path(verdict.path, self.plans[0].rest, verdict.project)}
        return [Text(values[key], no_wrap=True, overflow="ellipsis") for key in self.plans[0].keys]

    def show_growing(self) -> None:
        live = {s.file: s for s in self.store.sessions if s.live and s.session_id}
        rows = {file: (s, tuple(self.store.growth.get(s.session_id or "", []))) for file, s in live.items()}
        table = self.query_one("#growing", Table)
        table.sync(rows, self.growing_cells)

        def by(file: str) -> tuple[float, str]:
            samples = rows[file][1]
            return (-(samples[-1][1] if samples else 0), file)

        if table.keys_in_order() != sorted(rows, key=by):
            table.order(by)

    def growing_cells(self, _key: str, row: tuple[Session, tuple[tuple[float, int], ...]]) -> list[Text]:
        session, samples = row
        made = samples[-1][1] if samples else None
        rate = overview.growth_rate(list(samples))
        values = {"session": Text((session.session_id or "-")[:8]), "project": Text(project_name(session.cwd)),
                  "size": Text(fmt.size(made)), "rate": Text(fmt.rate(rate), style="bold red" if rate and rate > 0 else ""),
                  "growth": Text(fmt.sparkline([b for _t, b in samples], self.plans[1].rest), style="cyan")}
        return [values[key] for key in self.plans[1].keys]

    # --- the journal ------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="journal", exit_on_error=False, name="Reading the journal")
    def read_journal(self) -> dict[str, int]:
        return overview.read_freed_per_day()

    def on_screen_resume(self) -> None:
        """Shown again: what the other screens removed meanwhile is in the journal now, and
        today's bar must show it (it showed the journal as read when the screen first came)."""
        self.read_journal()

    def worker_done(self, worker: Worker[Any]) -> None:
        if worker.group == "journal" and isinstance(worker.result, dict):
            self.query_one(DayBars).show(overview.freed_days(worker.result, self.now()))

    # --- keys -------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        self.store.refresh()
        self.read_journal()

    @on(DataTable.RowSelected, "#biggest")
    @on(DataTable.RowSelected, "#growing")
    def open_selected(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        focused = self.focused
        if not isinstance(focused, Table) or focused.cursor_key() is None:
            return
        key = focused.cursor_key() or ""
        if focused.id == "growing":
            self.open_session(key)
        elif focused.id == "biggest" and key in self.store.rows:
            self.open_output(key)

    def open_output(self, key: str) -> None:
        from app.screens.outputs import OutputsScreen

        self.app.switch_mode("outputs")
        screen = self.app.screen
        if isinstance(screen, OutputsScreen):
            screen.open_row(key)

    def open_session(self, file: str) -> None:
        from app.screens.sessions import SessionsScreen

        self.app.switch_mode("sessions")
        screen = self.app.screen
        if isinstance(screen, SessionsScreen) and screen.is_mounted:
            screen.select(file)
