"""Ledger: every file Claude edited, with the agent of its last edit, when, whether it
changed since (the user or a tool), and whether Claude was told. Changed rows stand out;
below, what changed: size and modification time at the last edit and now.

Read in a worker every REFRESH_S (and on `r`) through `ledger.ledger_files`, which writes
nothing: looking at the ledger never marks a change as told.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.reactive import reactive
from textual.worker import Worker

from app import format as fmt
from app.data.ledger import LedgerRow, Stat, read_ledger
from app.screens.base import ClaudettoScreen
from app.widgets.detail import DetailPlan
from app.widgets.plain import visible
from app.widgets.table import Col, Table, TablePlan

COLUMNS = (Col("path", "path"), Col("agent", "agent", 16, drop=1), Col("edited", "last edit", 14),
           Col("changed", "changed", 8), Col("told", "told", 5, drop=2))
MIN_PATH = 24
REFRESH_S = 5.0


def changed_cell(row: LedgerRow) -> Text:
    if row.file.deleted:
        return Text("deleted", style="bold red")
    return Text("yes", style="bold yellow") if row.file.changed else Text("no", style="dim")


def stat_text(stat: Stat | None, now: float) -> str:
    return "gone" if stat is None else f"{fmt.size(stat.size)}, modified {fmt.age(stat.mtime, now)}"


class LedgerScreen(ClaudettoScreen):
    """The edit ledger, each file with `changed`."""

    CSS_PATH = "ledger.tcss"
    TABLE = TablePlan("#ledger", COLUMNS, MIN_PATH)
    DETAIL = DetailPlan("#ledger-detail", "reading the ledger…",
                        "The ledger is empty: no file was edited by Claude since claudetto was set up.")
    BINDINGS = [
        Binding("c", "changed_only", "Changed only", id="changed-only", tooltip="Show only the files changed after the edit (again: all)"),
        Binding("r", "refresh", "Refresh", id="ledger-refresh", tooltip="Judge every ledger file against the disk again"),
    ]
    changed_only = reactive(False, init=False)  # `c`: only the files changed after their edit

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, LedgerRow] = {}

    def on_mount(self) -> None:
        self.set_interval(REFRESH_S, self.action_refresh, name="refresh the ledger")

    def action_changed_only(self) -> None:
        self.changed_only = not self.changed_only

    def watch_changed_only(self) -> None:
        self.show_rows()

    def action_refresh(self) -> None:
        self.read_worker()

    @work(thread=True, exclusive=True, group="ledger", exit_on_error=False, name="Reading the ledger")
    def read_worker(self) -> list[LedgerRow]:
        return read_ledger()

    def worker_done(self, worker: Worker[Any]) -> None:
        if isinstance(worker.result, list):
            self.detail_pane.loaded()
            self.rows = {row.key: row for row in worker.result}
            self.show_rows()

    def worker_failed(self, worker: Worker[Any]) -> None:
        self.detail_pane.failed(f"The ledger cannot be read: {worker.error}")

    def cells(self, key: str, _source: tuple[object, ...]) -> list[Text]:
        row = self.rows[key]
        f = row.file
        style = "bold" if f.changed else ""
        values = {
            "path": Text(fmt.compact_path(f.path, self.fitted.rest), style=style, no_wrap=True),
            "agent": Text(f.agent, no_wrap=True, overflow="ellipsis"),
            "edited": Text(fmt.age(f.edited_ns / 1e9, self.now())),
            "changed": changed_cell(row),
            "told": Text("yes" if f.told else "no", style="" if f.told or not f.changed else "bold"),
        }
        return [values[key] for key in self.fitted.keys]

    def show_rows(self) -> None:
        table = self.query_one("#ledger", Table)
        tick = self.now() // 30
        shown = {key: row for key, row in self.rows.items() if row.file.changed or not self.changed_only}
        listed = table.row_count > 0  # the file read stays under the cursor when another changes
        table.sync({key: (*row.shown, tick) for key, row in shown.items()}, self.cells)
        order = list(shown)  # changed first, then the latest edit first
        if table.keys_in_order() != order:
            table.order({key: at for at, key in enumerate(order)}.__getitem__, stay=listed)
        self.show_detail()

    def detail(self, key: str) -> Text | None:
        """The file, its last edit, whether it changed since, and its size and time then and now."""
        row = self.rows.get(key)
        if row is None:
            return None
        f, now = row.file, self.now()
        text = Text()
        text.append(visible(fmt.home_path(f.path)), style="bold")  # a name as the table shows it
        text.append(f"\nlast edit by {visible(f.agent)} (session {visible(f.session[:8])}), "
                    f"{fmt.age(f.edited_ns / 1e9, now)}; content hash then {visible(f.hash)}\n")
        if not row.answers:
            text.append("not judged now: it lies on a remote mount that does not answer", style="yellow")
        elif f.deleted:
            text.append("changed: the file was deleted after the edit", style="bold red")
        elif f.changed:
            text.append("changed after the edit by the user or a tool", style="bold yellow")
        else:
            text.append("unchanged since the edit", style="dim")
        after = stat_text(row.after, now) if row.answers else "not looked at: its remote mount does not answer"
        text.append(f"\n  at the edit: {stat_text(row.before, now)}\n  now:         {after}")
        if f.changed:
            text.append(f"\nClaude {'was told' if f.told else 'is told at its next prompt'}.")
        return text
