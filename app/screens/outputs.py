"""Outputs: everything the sweeps judge, one row each, with size, age, owner and verdict.

Rows are keyed by `rule:path` and updated by difference. Sizes the sweeps did not measure
fill in from the store's worker (a progress bar; escape cancels). Space marks a removable
row, `d` asks and then removes the marked rows in a worker, `s` shows the full sweep's dry
run and runs it on a yes, enter browses a row's folder. `--read-only` refuses every removal.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Label, ProgressBar
from textual.worker import get_current_worker

from app import format as fmt
from app.core.verdict import Verdict
from app.screens.confirm import ConfirmModal
from app.screens.disk import DiskScreen
from app.widgets import approve
from app.widgets.empty import EmptyState
from app.widgets.store import OutputStore
from app.widgets.table import Col, Table, fit
from app.widgets.totals import TotalsBar

# fixed widths (no measuring of 2,000 rows); path takes the rest, cut from the left.
# At 80 columns session, then age, then kind go, so the path keeps 24 cells or more.
COLUMNS = (Col("mark", " ", 1), Col("kind", "kind", 14, drop=3), Col("size", "size", 10),
           Col("age", "age", 14, drop=2), Col("verdict", "verdict", 20), Col("session", "session", 8, drop=1),
           Col("path", "path"))
MIN_PATH = 24
SORTS = {"size": True, "age": False, "kind": False}  # column -> descending


class PathCell(Text):
    """A path cell that knows its row (DataTable.sort hands the key function cells only)."""

    def __init__(self, shown: str, key: str) -> None:
        super().__init__(shown, no_wrap=True, overflow="ellipsis")
        self.key = key


@dataclass
class RemovalProgressed(Message):
    done: int
    total: int
    freed: int


@dataclass
class RemovalFinished(Message):
    line: str
    sweep: bool = False


@dataclass
class SweepPlanned(Message):
    plan: approve.SweepPlan


class OutputsScreen(Screen[None]):
    """Every judged output; mark, confirm, remove."""

    CSS_PATH = "outputs.tcss"
    BINDINGS = [
        Binding("space", "mark", "Mark", id="mark", tooltip="Mark or unmark the row for removal"),
        Binding("d", "remove_marked", "Remove marked", id="remove", tooltip="Ask, then remove the marked rows"),
        Binding("s", "sweep", "Sweep", id="sweep", tooltip="The full sweep (GC + cleanup), dry run first"),
        Binding("slash", "filter", "Filter", key_display="/", id="filter", tooltip="Show only rows matching a text"),
        Binding("escape", "cancel", "Cancel", show=False, id="cancel", tooltip="Stop measuring, or close the filter"),
        Binding("b", "browse", "Browse", show=False, id="browse", tooltip="Browse the row's folder (or enter)"),
        Binding("z", "sort('size')", "Sort by size", show=False, id="sort-size", tooltip="Largest first"),
        Binding("a", "sort('age')", "Sort by age", show=False, id="sort-age", tooltip="Oldest first"),
        Binding("k", "sort('kind')", "Sort by kind", show=False, id="sort-kind", tooltip="Grouped by kind"),
        Binding("u", "unmark_all", "Unmark all", show=False, id="unmark", tooltip="Clear every mark"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = ""
        self.sort_by = "size"
        self.working = ""  # "remove" or "sweep" while a removal runs
        self.fitted = fit(COLUMNS, 120, MIN_PATH)
        self.seen: dict[str, tuple[object, ...]] = {}  # row key -> what its cells were made from

    @property
    def store(self) -> OutputStore:
        return self.app.store  # type: ignore[attr-defined, no-any-return]

    def compose(self) -> ComposeResult:
        yield TotalsBar("outputs")
        yield Input(placeholder="filter: text in path, kind, session or verdict (escape closes)", id="filter")
        yield EmptyState()
        yield Table(id="outputs", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="progress"):
            yield Label("", id="progress-label")
            yield ProgressBar(id="progress-bar", show_eta=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#outputs", Table)
        self.fitted = fit(COLUMNS, self.app.size.width, MIN_PATH)
        table.set_columns(self.fitted)
        box = self.query_one("#filter", Input)
        box.value = self.filter
        box.display = bool(self.filter)
        self.store.changed.subscribe(self, lambda _d: self.show_rows(resort=True))
        self.store.sized.subscribe(self, lambda _d: self.show_sizes())
        self.show_rows(resort=True)
        self.show_sizes()
        table.focus()

    def on_resize(self, event: events.Resize) -> None:
        fitted = fit(COLUMNS, event.size.width, MIN_PATH)
        if fitted == self.fitted:
            return
        self.fitted = fitted
        table = self.query_one("#outputs", Table)
        cursor = table.cursor_row
        table.set_columns(fitted)  # a new width: new columns and rows (the cursor stays put)
        self.show_rows(resort=True)
        table.move_cursor(row=cursor, animate=False)

    # --- rows ------------------------------------------------------------------------------

    def cells(self, verdict: Verdict, key: str, now: float, roots: list[tuple[str, str]]) -> list[Text]:
        """One row's cells for the fitted columns, as Text (a path is never read as markup)."""
        cells: list[Text] = []
        for column in self.fitted.keys:
            if column == "mark":
                cells.append(Text("✓" if key in self.store.marked else " "))
            elif column == "kind":
                cells.append(Text(verdict.kind))
            elif column == "size":
                cells.append(Text(fmt.size(self.store.size(verdict))))
            elif column == "age":
                cells.append(Text(fmt.age(verdict.mtime, now)))
            elif column == "verdict":
                cells.append(Text(fmt.verdict_cell(verdict.action, verdict.reason)))
            elif column == "session":
                cells.append(Text((verdict.session or "-")[:8]))
            else:
                cells.append(PathCell(fmt.tail(fmt.short_path(verdict.path, roots), self.fitted.rest), key))
        return cells

    def shown_rows(self) -> dict[str, Verdict]:
        text = self.filter.lower()
        if not text:
            return dict(self.store.rows)
        return {k: v for k, v in self.store.rows.items()
                if text in " ".join((v.path, v.kind, v.session or "", v.action, v.reason, v.rule)).lower()}

    def show_rows(self, resort: bool = False) -> None:
        table = self.query_one("#outputs", Table)
        wanted = self.shown_rows()
        added = False
        now, roots = self.app.clock(), fmt.roots()  # type: ignore[attr-defined]
        with self.app.batch_update():
            for key in [k.value for k in table.rows if k.value not in wanted]:
                table.remove_row(key)  # type: ignore[arg-type]
                self.seen.pop(key or "", None)
            for key, verdict in wanted.items():
                # what a row shows depends on these alone: an unchanged row costs one compare
                # (a mark on 2,000 rows re-shows one row, not 2,000)
                seen = (verdict, self.store.size(verdict), key in self.store.marked, now // 30, self.fitted)
                if key in table.rows and self.seen.get(key) == seen:
                    continue
                self.seen[key] = seen
                cells = self.cells(verdict, key, now, roots)
                if key in table.rows:
                    for column, value, before in zip(self.fitted.keys, cells, table.get_row(key), strict=True):
                        if value != before:
                            table.update_cell(key, column, value)
                            added = added or column in ("size", "age", "kind")  # its place may move
                else:
                    table.add_row(*cells, key=key)
                    added = True
            if resort and added:
                self.sort_rows()
        empty = self.store.judged and not self.store.rows and self.store.sessions_read and not self.store.sessions
        self.query_one(EmptyState).display = empty
        if self.store.problems:
            self.notify("\n".join(self.store.problems), title="Could not judge everything", severity="warning")
            self.store.problems = []

    def sort_rows(self) -> None:
        rows = self.store.rows
        now = self.app.clock()  # type: ignore[attr-defined]

        def by(key: str) -> tuple[object, ...]:
            verdict = rows[key]
            if self.sort_by == "size":
                return (-(self.store.size(verdict) or 0), verdict.path)
            if self.sort_by == "age":
                return (-(now - (verdict.mtime or now)), verdict.path)
            return (verdict.kind, verdict.action != "remove", verdict.path)

        table = self.query_one("#outputs", DataTable)
        table.sort("path", key=lambda cell: (0, by(cell.key)) if getattr(cell, "key", None) in rows else (1, ()))

    def show_sizes(self) -> None:
        table = self.query_one("#outputs", DataTable)
        with self.app.batch_update():
            for key, verdict in self.store.rows.items():
                if key in table.rows:
                    value = Text(fmt.size(self.store.size(verdict)))
                    if table.get_cell(key, "size") != value:
                        table.update_cell(key, "size", value)
        if self.sort_by == "size" and not self.store.progress.running and self.store.progress.total:
            self.sort_rows()  # every size is in: largest first for real
        if not self.working:
            progress = self.store.progress
            self.show_progress(progress.running, f"measuring {progress.done}/{progress.total} "
                                                 f"({progress.files:,} files) escape cancels",
                               progress.done, progress.total)
            if progress.cancelled:
                self.query_one("#progress-label", Label).update("sizes: measuring cancelled (r judges again)")
                self.query_one("#progress").display = True

    def show_progress(self, shown: bool, label: str, done: int = 0, total: int = 0) -> None:
        self.query_one("#progress").display = shown
        self.query_one("#progress-label", Label).update(label)
        self.query_one("#progress-bar", ProgressBar).update(total=max(total, 1), progress=done)

    def current(self) -> tuple[str, Verdict] | None:
        table = self.query_one("#outputs", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        verdict = self.store.rows.get(key or "")
        return (key, verdict) if key and verdict else None

    # --- actions ---------------------------------------------------------------------------

    def action_mark(self) -> None:
        found = self.current()
        if found is None:
            return
        key, verdict = found
        if self.app.read_only:  # type: ignore[attr-defined]
            self.notify("Read-only: every removal is disabled (started with --read-only).", severity="warning")
            return
        if key in self.store.marked:
            self.store.marked.discard(key)
        elif not verdict.removable:
            self.notify(f"Cannot mark {fmt.short_path(verdict.path)}: {fmt.reason(verdict.action, verdict.reason)}.",
                        title="Kept", severity="warning")
            return
        else:
            self.store.marked.add(key)
        table = self.query_one("#outputs", DataTable)
        table.update_cell(key, "mark", Text("✓" if key in self.store.marked else " "))
        table.action_cursor_down()
        self.store.changed.publish(None)

    def action_unmark_all(self) -> None:
        self.store.marked.clear()
        self.store.changed.publish(None)

    def may_remove(self) -> bool:
        """False (and says why) in --read-only, or while a removal or sweep runs."""
        if self.app.read_only:  # type: ignore[attr-defined]
            self.notify("Read-only: every removal is disabled (started with --read-only).", severity="warning")
            return False
        if self.working:
            self.notify("A removal is already running.")
            return False
        return True

    def action_remove_marked(self) -> None:
        if not self.may_remove():
            return
        marked = [self.store.rows[k] for k in sorted(self.store.marked) if k in self.store.rows]
        if not marked:
            self.notify("Nothing is marked: space marks a row that will be removed.")
            return
        kept = [v for v in self.store.rows.values() if not v.removable]
        body = approve.confirm_body(marked, kept, self.store.size, ConfirmModal.body_width(self.app.size.width))
        total = fmt.size(sum(self.store.size(v) or 0 for v in marked))

        def answered(yes: bool | None) -> None:
            if yes:
                self.start_removal(marked)

        self.app.push_screen(ConfirmModal(f"Remove {len(marked)} marked ({total})?", body), answered)

    def start_removal(self, marked: list[Verdict]) -> None:
        self.working = "remove"
        self.store.cancel_measure()
        self.show_progress(True, f"removing 0/{len(marked)}", 0, len(marked))
        self.remove_worker(marked)

    @work(thread=True, exclusive=True, group="remove", exit_on_error=False)
    def remove_worker(self, marked: list[Verdict]) -> None:
        worker = get_current_worker()
        outcome = approve.remove_marked(
            marked, self.store.judge,
            lambda done, total, freed: self.post_message(RemovalProgressed(done, total, freed)),
            lambda: worker.is_cancelled)
        self.post_message(RemovalFinished(approve.outcome_line(outcome)))

    def on_removal_progressed(self, message: RemovalProgressed) -> None:
        self.show_progress(True, f"removing {message.done}/{message.total}, freed {fmt.size(message.freed)}",
                           message.done, message.total)

    def on_removal_finished(self, message: RemovalFinished) -> None:
        self.working = ""
        self.store.marked.clear()
        self.show_progress(True, message.line)
        self.notify(message.line, title="Sweep done" if message.sweep else "Removed")
        self.store.refresh()

    def action_sweep(self) -> None:
        if not self.may_remove():
            return
        self.working = "sweep"
        self.show_progress(True, "sweep: dry run…")
        self.plan_worker()

    @work(thread=True, exclusive=True, group="remove", exit_on_error=False)
    def plan_worker(self) -> None:
        self.post_message(SweepPlanned(approve.plan_sweep(self.store.judge)))

    def on_sweep_planned(self, message: SweepPlanned) -> None:
        plan = message.plan
        self.working = ""
        self.show_progress(False, "")
        if not plan.remove:
            self.notify("The sweep would remove nothing: every output is kept for a reason.")
            return
        body = approve.confirm_body(plan.remove, plan.keep, lambda v: self.store.size(v),
                                    ConfirmModal.body_width(self.app.size.width))
        if plan.problems:
            body += "\n\n" + "\n".join(plan.problems)

        def answered(yes: bool | None) -> None:
            if yes:
                self.working = "sweep"
                self.show_progress(True, "sweeping…")
                self.sweep_worker()

        self.app.push_screen(ConfirmModal(f"Full sweep (dry run): {len(plan.remove)} to remove, "
                                          f"{fmt.size(plan.total)}", body, yes="Sweep"), answered)

    @work(thread=True, exclusive=True, group="remove", exit_on_error=False)
    def sweep_worker(self) -> None:
        self.post_message(RemovalFinished(approve.outcome_line(approve.run_sweep()), sweep=True))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def filter_text(self, text: str) -> None:
        """Show only the rows matching `text` (the filter box shows it)."""
        self.filter = text
        try:
            box = self.query_one("#filter", Input)
        except NoMatches:  # not composed yet: on_mount applies it
            return
        box.value = text
        box.display = bool(text)
        self.filter = text
        self.show_rows(resort=True)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter = event.value.strip()
        self.show_rows(resort=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#outputs", DataTable).focus()

    def action_cancel(self) -> None:
        if self.store.cancel_measure():
            self.notify("Measuring cancelled.")
            return
        box = self.query_one("#filter", Input)
        if box.display:
            self.filter_text("")
            self.query_one("#outputs", DataTable).focus()

    def action_sort(self, column: str) -> None:
        self.sort_by = column
        self.sort_rows()
        self.notify(f"Sorted by {column}", timeout=1.5)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_browse()

    def action_browse(self) -> None:
        found = self.current()
        if found is not None:
            self.app.push_screen(DiskScreen(found[1].path))
