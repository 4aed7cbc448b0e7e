"""Outputs: everything the sweeps judge, one row each, with size, age, owner and verdict.

Rows are keyed by `rule:path` and updated by difference (`Table.sync`). Sizes the sweeps did
not measure fill in from the store's worker (a progress line; escape cancels). Space marks
a removable row, `d` asks and then removes the marked rows in a worker, `s` shows the full
sweep's dry run and, on a yes, removes what it listed (each judged again; nothing it did not
list, nor what it listed as kept), enter browses a row's folder. A removed row goes at
once; a removal that fails is shown and leaves the screen ready for the next one.
`--read-only` refuses every removal.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.widgets import DataTable, Input
from textual.worker import Worker, get_current_worker

from app import format as fmt
from app.core.verdict import Verdict
from app.data import removals
from app.screens.base import ClaudettoScreen
from app.screens.confirm import ConfirmModal
from app.screens.disk import DiskScreen
from app.widgets.empty import EmptyState
from app.widgets.plain import visible
from app.widgets.progress import WorkLine
from app.widgets.table import Col, Table, TablePlan

# fixed widths (no measuring of 2,000 rows); path takes the rest: its project and its tail
# when long. At 80 columns session, then age, then kind go, so the path keeps 24 cells.
COLUMNS = (Col("mark", " ", 1), Col("kind", "kind", 14, drop=3), Col("size", "size", 10),
           Col("age", "age", 14, drop=2), Col("verdict", "verdict", 20), Col("session", "session", 8, drop=1),
           Col("path", "path"))
MIN_PATH = 24
SORTS = ("size", "age", "kind")  # the order `o` walks through
# verdict, size, marked, age tick, session, and what another rule keeps its path for
Row = tuple[Verdict, int | None, bool, float, str | None, Verdict | None]


class OutputsScreen(ClaudettoScreen):
    """Every judged output; mark, confirm, remove."""

    CSS_PATH = "outputs.tcss"
    TABLE = TablePlan("#outputs", COLUMNS, MIN_PATH)
    BINDINGS = [
        Binding("space", "mark", "Mark", id="mark", tooltip="Mark or unmark the row for removal"),
        Binding("d", "remove_marked", "Remove", id="remove", tooltip="Ask, then remove the marked rows"),
        Binding("b", "browse", "Browse", id="browse", tooltip="Browse the row's folder like ncdu (or enter)"),
        Binding("o", "next_sort", "Sort", id="sort", tooltip="Sort by the next column: size, age, kind"),
        Binding("u", "unmark_all", "Unmark", id="unmark", tooltip="Clear every mark"),
        Binding("r", "app.rejudge", "Refresh", id="outputs-refresh", tooltip="Judge every output again"),
        Binding("s", "sweep", "Sweep", show=False, id="sweep", tooltip="The full sweep (GC + cleanup), dry run first"),
        # priority: answered as it is typed, so the keys typed right behind it go to the box
        Binding("slash", "filter", "Filter", show=False, key_display="/", id="filter", priority=True,
                tooltip="Show only rows matching a text"),
        Binding("escape", "cancel", "Cancel", show=False, id="cancel", tooltip="Stop measuring, or close the filter"),
        Binding("z", "sort('size')", "Sort by size", show=False, id="sort-size", tooltip="Largest first (again: reversed)"),
        Binding("a", "sort('age')", "Sort by age", show=False, id="sort-age", tooltip="Oldest first (again: reversed)"),
        Binding("k", "sort('kind')", "Sort by kind", show=False, id="sort-kind", tooltip="Grouped by kind (again: reversed)"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.filter = ""
        self.sort_by = "size"
        self.reverse = False
        self.working = ""  # "remove" or "sweep" while a removal runs
        self.said = ""  # the last removal's outcome: the work line keeps it while sizes are measured again
        self.roots: list[tuple[str, str]] = []
        self.shown_at = 0.0
        self.filled = False  # the first judgement and its sizes are in
        self.wanted: str | None = None  # a row to put the cursor on once it is listed (`open_row`)

    def above_table(self) -> ComposeResult:
        yield Input(placeholder="filter: text in path, kind, session or verdict (escape closes)", id="filter")
        yield EmptyState()

    def below_table(self) -> ComposeResult:
        yield WorkLine(id="progress")

    def on_mount(self) -> None:
        table = self.query_one("#outputs", Table)
        self.refit(self.app.size.width)
        box = self.query_one("#filter", Input)
        box.value = self.filter
        box.display = bool(self.filter)
        self.store.changed.subscribe(self, lambda _d: self.show_rows())
        self.store.sized.subscribe(self, lambda _d: self.show_sizes())
        self.show_rows()
        self.show_sizes()
        table.focus()

    # --- rows ------------------------------------------------------------------------------

    def cells(self, key: str, row: Row) -> list[Text]:
        """One row's cells for the fitted columns, as Text (a path is never read as markup)."""
        verdict, size, marked, _tick, session, held = row
        shown = held or verdict  # a path one rule keeps is kept, whatever the other says
        values = {
            "mark": "✓" if marked else " ", "kind": verdict.kind, "size": fmt.size(size),
            "age": fmt.age(verdict.mtime, self.shown_at), "verdict": fmt.verdict_cell(shown.action, shown.reason),
            "session": (session or "-")[:8],
            "path": fmt.compact_path(verdict.path, self.fitted.rest, verdict.project, self.roots),
        }
        return [Text(values[column], no_wrap=True, overflow="ellipsis") for column in self.fitted.keys]

    def matches(self, verdict: Verdict) -> bool:
        text = self.filter.lower()
        return not text or text in " ".join((verdict.path, verdict.kind, self.store.session_of(verdict) or "",
                                             verdict.action, verdict.reason, verdict.rule)).lower()

    def show_rows(self) -> None:
        table = self.query_one("#outputs", Table)
        store = self.store
        self.shown_at = self.now()
        tick = self.shown_at // 30  # an age is shown again every 30 s, not on every change
        self.roots = fmt.roots()
        held = removals.kept_paths(store.rows.values())
        rows = {key: (v, store.size(v), key in store.marked, tick, store.session_of(v), held.get(v.path) if v.removable else None)
                for key, v in store.rows.items() if self.matches(v)}
        if table.sync(rows, self.cells).moved("size", "age", "kind"):
            self.sort_rows()
        if self.wanted is not None and table.move_to(self.wanted):
            self.wanted = None
        self.query_one(EmptyState).display = store.found_nothing
        if store.problems:
            self.notify("\n".join(store.problems), title="Could not judge everything", severity="warning")
            store.problems = []

    def sort_rows(self) -> None:
        rows, now, size = self.store.rows, self.now(), self.store.size

        def by(key: str) -> tuple[Any, ...]:
            verdict = rows.get(key)
            if verdict is None:
                return (1,)
            if self.sort_by == "size":
                return (0, -(size(verdict) or 0), verdict.path)
            if self.sort_by == "age":
                return (0, -(now - (verdict.mtime or now)), verdict.path)
            return (0, verdict.kind, verdict.action != "remove", verdict.path)

        table = self.query_one("#outputs", Table)
        table.order(by, reverse=self.reverse, stay=self.filled)
        arrow = "▲" if self.reverse else "▼"
        for column in table.columns.values():
            name = str(column.key.value)
            label = next((c.label for c in self.fitted.columns if c.key == name), name)
            column.label = Text(f"{label} {arrow}" if name == self.sort_by else label)
        table.refresh()

    def show_sizes(self) -> None:
        self.show_rows()
        progress = self.store.progress
        if self.sort_by == "size" and not progress.running and progress.total:
            self.sort_rows()  # every size is in: largest first for real
        if self.store.judged and not progress.running:
            self.filled = True  # from now on a new order leaves the cursor on the row it is on
        if self.working:
            return
        line = self.query_one(WorkLine)
        if self.said:
            line.ended(self.said)  # what went and what was kept outweighs the new measure's progress
        elif progress.running:
            line.running(f"measuring {progress.done}/{progress.total} ({progress.files:,} files) escape cancels",
                         progress.done, progress.total)
        elif progress.cancelled:
            line.ended("sizes: measuring cancelled (r judges again)")
        else:
            line.hide()

    def current(self) -> tuple[str, Verdict] | None:
        key = self.query_one("#outputs", Table).cursor_key()
        verdict = self.store.rows.get(key or "")
        return (key, verdict) if key and verdict else None

    # --- marking and removing --------------------------------------------------------------

    def action_mark(self) -> None:
        found = self.current()
        if found is None or self.refuse_read_only():
            return
        key, verdict = found
        # a path another rule keeps (its own row says why) stays too
        keeping = verdict if not verdict.removable else removals.kept_paths(self.store.rows.values()).get(verdict.path)
        if key in self.store.marked:
            self.store.marked.discard(key)
        elif keeping is not None:
            self.notify(f"Cannot mark {visible(fmt.short_path(verdict.path))}: {fmt.reason(keeping.action, keeping.reason)}.",
                        title="Kept", severity="warning")
            return
        else:
            self.store.marked.add(key)
        self.query_one("#outputs", Table).action_cursor_down()
        self.store.changed.publish(None)

    def action_unmark_all(self) -> None:
        self.store.marked.clear()
        self.store.changed.publish(None)

    def may_remove(self) -> bool:
        """False (and says why) in --read-only, or while a removal or sweep runs."""
        if self.refuse_read_only():
            return False
        if self.working:
            self.notify("A removal is already running.")
            return False
        return True

    def action_remove_marked(self) -> None:
        if not self.may_remove():
            return
        rows = self.store.rows
        order = self.query_one("#outputs", Table).keys_in_order()
        seen = {rows[k].path for k in order if k in self.store.marked and k in rows}
        keys = [k for k in order if k in self.store.marked] + sorted(self.store.marked - set(order))
        marked = removals.one_per_path(rows[k] for k in keys if k in rows)  # a path two rules judge: once
        if not marked:
            self.notify("Nothing is marked: space marks a row that will be removed.")
            return
        kept = [v for v in rows.values() if not v.removable]
        hidden = sum(1 for v in marked if v.path not in seen)  # marked, and hidden by the filter now
        def body(width: int) -> str:
            return removals.confirm_body(marked, kept, self.store.size, width, hidden)
        total = fmt.size(sum(self.store.size(v) or 0 for v in marked))
        approved = removals.ways_to_remove(marked, rows.values())
        pinned = removals.pin(marked)  # the yes is to what these paths are now

        def answered(yes: bool | None) -> None:
            if yes and not self.working:  # a held `y` answers once
                self.start_removal(approved, pinned)

        self.app.push_screen(ConfirmModal(f"Remove {len(marked)} marked ({total})?", body), answered)

    def start_removal(self, marked: list[Verdict], pinned: dict[str, removals.Identity]) -> None:
        self.working = "remove"
        self.said = ""
        self.store.cancel_measure()
        self.query_one(WorkLine).running(f"removing 0/{len(pinned)}", 0, len(pinned))
        self.remove_worker(marked, pinned)

    @work(thread=True, exclusive=True, group="remove", exit_on_error=False, name="The removal")
    def remove_worker(self, marked: list[Verdict], pinned: dict[str, removals.Identity]) -> removals.Outcome:
        return self.removing(marked, pinned)

    def removing(self, approved: list[Verdict], pinned: dict[str, removals.Identity]) -> removals.Outcome:
        """In a removal worker: the approved verdicts, each judged again and still the path
        the question named, with progress."""
        worker = get_current_worker()

        def progress(done: int, total: int, freed: int) -> None:
            self.app.call_from_thread(self.removal_progressed, done, total, freed)

        return removals.remove_marked(approved, self.store.judge, progress, lambda: worker.is_cancelled, pinned)

    def removal_progressed(self, done: int, total: int, freed: int) -> None:
        self.query_one(WorkLine).running(f"removing {done}/{total}, freed {fmt.size(freed)}", done, total)

    @work(thread=True, exclusive=True, group="remove", exit_on_error=False, name="The sweep's dry run")
    def plan_worker(self) -> removals.SweepPlan:
        return removals.plan_sweep(self.store.judge)

    @work(thread=True, exclusive=True, group="remove", exit_on_error=False, name="The sweep")
    def sweep_worker(self, plan: removals.SweepPlan) -> removals.Outcome:
        # held to the dry run said yes to: what it listed as kept stays, whatever happened since
        return self.removing(plan.remove, plan.pinned)

    def worker_done(self, worker: Worker[Any]) -> None:
        if isinstance(worker.result, removals.SweepPlan):
            self.sweep_planned(worker.result)
        elif isinstance(worker.result, removals.Outcome):
            line = removals.outcome_line(worker.result)
            self.working = ""
            asked = {*worker.result.gone, *(path for path, _why in worker.result.not_removed)}
            rows = self.store.rows  # marks made while it ran, of other rows, stay for the next `d`
            self.store.marked = {k for k in self.store.marked if k in rows and rows[k].path not in asked}
            self.said = line
            self.query_one(WorkLine).ended(line)
            self.notify(line, title=removals.outcome_title(worker.result, worker.name == "The sweep"),
                        severity="warning" if worker.result.not_removed else "information")
            self.store.forget(worker.result.gone)
            self.store.refresh()

    def worker_failed(self, worker: Worker[Any]) -> None:
        if worker.group == "remove":
            self.working = ""
            self.said = f"{worker.name} failed: {worker.error}; nothing more was removed"
            self.query_one(WorkLine).ended(self.said)
            self.store.refresh()  # what did go, if anything, leaves the table

    def action_sweep(self) -> None:
        if self.may_remove():
            self.working = "sweep"
            self.said = ""
            self.query_one(WorkLine).running("sweep: dry run…")
            self.plan_worker()

    def sweep_planned(self, plan: removals.SweepPlan) -> None:
        self.working = ""
        self.query_one(WorkLine).hide()
        if not plan.remove:
            self.notify("The sweep would remove nothing: every output is kept for a reason.")
            return
        def body(width: int) -> str:
            listed = removals.confirm_body(plan.items, plan.keep, self.store.size, width)
            return "\n\n".join([listed, *(["\n".join(plan.problems)] if plan.problems else [])])

        def answered(yes: bool | None) -> None:
            if yes and not self.working:  # a held `y` answers once
                self.working = "sweep"
                self.query_one(WorkLine).running("sweeping…")
                self.sweep_worker(plan)

        self.ask(ConfirmModal(f"Full sweep (dry run): {len(plan.items)} to remove, {fmt.size(plan.total)}", body,
                              yes="Sweep"), answered, "The sweep's dry run")

    # --- filter, sort, browse --------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if self.focused is box:  # a `/` typed in the filter is its text (paths hold them), in its turn
            box.post_message(events.Key("slash", "/"))
            return
        box.display = True
        # now, not later (`focus()` waits its turn behind the keys already typed): the letters
        # of `/dirty` typed fast went past the box, to the table and this screen's keys
        self.set_focus(box)

    def filter_text(self, text: str) -> None:
        """Show only the rows matching `text` (the filter box shows it)."""
        self.filter = text
        try:
            box = self.query_one("#filter", Input)
        except NoMatches:  # not composed yet: on_mount applies it
            return
        box.value = text
        box.display = bool(text)
        self.show_rows()

    def open_row(self, key: str) -> None:
        """Show one row (filtered by its path), the cursor on it: the filter alone also shows
        the paths inside it, and the cursor stayed where it was, on another row space marks."""
        verdict = self.store.rows.get(key)
        if verdict is not None:
            self.wanted = key
            self.filter_text(verdict.path)

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.filter = event.value.strip()
        self.show_rows()

    @on(Input.Submitted, "#filter")
    def filter_done(self) -> None:
        self.query_one("#outputs", Table).focus()

    def action_cancel(self) -> None:
        if self.store.cancel_measure():
            self.notify("Measuring cancelled.")
            return
        box = self.query_one("#filter", Input)
        if box.display:
            self.filter_text("")
            self.query_one("#outputs", Table).focus()

    def action_sort(self, column: str) -> None:
        self.reverse = not self.reverse if column == self.sort_by else False
        self.sort_by = column
        self.sort_rows()
        self.notify(f"Sorted by {column}{', reversed' if self.reverse else ''}", timeout=1.5)

    def action_next_sort(self) -> None:
        self.action_sort(SORTS[(SORTS.index(self.sort_by) + 1) % len(SORTS)])

    @on(DataTable.RowSelected, "#outputs")
    def open_selected(self) -> None:
        self.action_browse()

    def action_browse(self) -> None:
        found = self.current()
        if found is not None:
            self.app.push_screen(DiskScreen(found[1].path))
