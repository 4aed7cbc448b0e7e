"""Memory: each remembered fact the tree no longer bears out, by project, file and line, with
its kind and evidence; below, the memory file with that line highlighted.

`u` supersedes the line: a dialog asks for the correction, and `memory.supersede` strikes
the line and adds the dated correction below it (the file's content is the core's to
write). Index drift (`i`): a MEMORY.md line pointing at a file that is gone is struck the
same way, with the correction written for you; for a topic file no index line names, a
dialog shows the line that would list it, and `memory.add_to_index` appends it. Each asks
first and writes nothing with --read-only; the next sweep shows what is left.
"""

from __future__ import annotations

import os
import time
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker

from app import format as fmt
from app.core.memory import Finding, IndexAdded, MemoryWriteRefused, Superseded
from app.core.memory.supersede import correction_room, text_lines
from app.data.memory import FILE_LINES_MAX, MemoryFindings, finding_key, read_findings
from app.screens.base import ClaudettoScreen
from app.screens.confirm import ConfirmModal
from app.screens.supersede import SupersedeModal
from app.widgets.plain import visible
from app.widgets.table import Col, Table, TablePlan
from app.widgets.totals import TotalsBar

COLUMNS = (Col("project", "project", 10, drop=1), Col("file", "file", 16), Col("line", "line", 5),
           Col("kind", "kind", 19, drop=2), Col("evidence", "evidence"))
MIN_EVIDENCE = 24
CONTEXT = 3  # lines shown above and below the highlighted one
#: a file's times come from a clock that may lag time.time_ns() by a tick: the sweep waits this
#: long after it takes its start time before it reads, so a write stamped before that start
#: (by either clock) was made before the read, and one after it is seen as a change
CLOCK_SLACK_NS = 20_000_000
KIND_LABELS = {"vanished_artifact": "vanished artifact", "stale_version_pin": "stale version pin",
               "stale_sequence": "stale sequence", "index_missing_file": "index: file gone",
               "index_unlisted_file": "index: unlisted"}


def line_of(lines: list[str], number: int | None) -> str | None:
    return lines[number - 1] if number and number <= len(lines) else None


def lines_to(file: str, number: int | None) -> list[str]:
    """A memory file's lines for the viewer: the first FILE_LINES_MAX, and on to a line
    further down when a finding names one (the sweep reads 1 MB, tens of thousands of
    lines: cut at the first 2,000, a finding past them had no line to show or strike)."""
    return text_lines(file, max(FILE_LINES_MAX, (number or 0) + CONTEXT))


def lines_read(findings: list[Finding], began_ns: int) -> dict[str, str | None]:
    """The text of each finding's line as its file holds it right after the sweep: the line
    the finding is about. The screen shows and strikes a line by its number later (minutes,
    maybe); a line added above it by then puts another fact at that number. A file changed
    since the sweep began (its ctime, which no tool sets back) may have changed after the
    sweep read it: its findings are left out, read as changed until the next sweep."""
    last: dict[str, int] = {}
    for finding in findings:
        last[finding.file] = max(last.get(finding.file, 0), finding.line or 0)
    files = {file: lines_to(file, number) for file, number in last.items() if number and unchanged(file, began_ns)}
    return {finding_key(f): line_of(files[f.file], f.line) for f in findings if f.line and f.file in files}


def unchanged(file: str, since_ns: int) -> bool:
    try:
        return os.stat(file).st_ctime_ns < since_ns
    except OSError:
        return False


def came_back(target: str) -> str:
    """Why a pointer to a file gone at the sweep is not struck: the file is there now."""
    return (f"{visible(target)} is there again (written since the sweep): the index line points at it. "
            "Nothing struck; the memory is swept again.")


def relative(finding: Finding) -> str:
    folder = os.path.dirname(finding.file)
    while folder and os.path.basename(folder) != "memory" and folder != os.path.dirname(folder):
        folder = os.path.dirname(folder)
    return os.path.relpath(finding.file, folder) if folder else os.path.basename(finding.file)


class MemoryScreen(ClaudettoScreen):
    """Memory findings; supersede, fix the index."""

    CSS_PATH = "memory.tcss"
    TABLE = TablePlan("#findings", COLUMNS, MIN_EVIDENCE)
    BINDINGS = [
        Binding("u", "supersede", "Supersede", id="supersede",
                tooltip="Strike the line and add a dated correction below it"),
        Binding("i", "fix_index", "Fix index", id="fix-index",
                tooltip="Index drift: strike the line of a gone file, or add the line that lists an unlisted one"),
        Binding("r", "refresh", "Refresh", id="memory-refresh", tooltip="Sweep every known project's memory again"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.findings: dict[str, Finding] = {}
        self.swept: MemoryFindings | None = None
        self.viewed: tuple[str, str | None] | None = None  # the finding the viewer shows, and its line there
        self.cursor_on: Finding | None = None  # the finding highlighted when the viewer was last drawn
        self.swept_lines: dict[str, str | None] = {}  # finding key -> its line's text as swept (`lines_read`)

    def compose(self) -> ComposeResult:
        yield TotalsBar("memory")
        yield Table(id="findings", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="viewer"):
            yield Static("sweeping the memory of every known project…", id="memory-file")
        yield Footer(compact=True)

    def action_refresh(self) -> None:
        self.sweep_worker()

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False, name="The memory sweep")
    def sweep_worker(self) -> tuple[MemoryFindings, dict[str, str | None]]:
        # Not `now - slack`: a file written just before the sweep (Claude, or the write a
        # refused `u` re-sweeps for) would read as changed during it, and refused again.
        began_ns = time.time_ns()
        time.sleep(CLOCK_SLACK_NS / 1e9)
        found = read_findings()
        return found, lines_read(found.findings, began_ns)

    def worker_done(self, worker: Worker[Any]) -> None:
        result = worker.result
        if isinstance(result, tuple):
            result, self.swept_lines = result
            self.swept = result
            self.findings = {finding_key(f): f for f in result.findings}
            self.show_rows()
            if result.problems:
                self.notify("\n".join(result.problems), title="Could not sweep everything", severity="warning")
        elif isinstance(result, Superseded):
            self.notify(f"Struck line {result.line} of {visible(os.path.basename(result.file))}; the correction is line "
                        f"{result.correction_line}.", title="Superseded")
            self.action_refresh()
        elif isinstance(result, IndexAdded):
            self.index_added(result)
        elif isinstance(result, MemoryWriteRefused):
            self.notify(str(result), title="Nothing changed", severity="warning", timeout=10)
            self.action_refresh()  # most refusals mean the file changed: show it as it is now

    def cells(self, _key: str, finding: Finding) -> list[Text]:
        values = {
            "project": Text(os.path.basename(finding.project.rstrip("/")), no_wrap=True, overflow="ellipsis"),
            "file": Text(fmt.tail(relative(finding), 16), no_wrap=True),
            "line": Text(str(finding.line) if finding.line else "-"),
            "kind": Text(KIND_LABELS.get(finding.kind, finding.kind)),
            "evidence": Text(finding.message, no_wrap=True, overflow="ellipsis"),
        }
        return [values[key] for key in self.fitted.keys]

    def show_rows(self) -> None:
        table = self.query_one("#findings", Table)
        listed = table.row_count > 0  # a finding read stays under the cursor when one comes in above it
        table.sync(self.findings, self.cells)
        order = list(self.findings)  # by project, file and line
        if table.keys_in_order() != order:
            table.order({key: at for at, key in enumerate(order)}.__getitem__, stay=listed)
        if (was := self.cursor_on) is not None and finding_key(was) not in self.findings:
            # a line added above it moved the finding (its key names the line): the cursor
            # follows the same fact to its new line instead of landing on another finding
            same = (was.file, was.kind, was.token)
            moved = next((key for key, f in self.findings.items() if (f.file, f.kind, f.token) == same), None)
            if moved is not None:
                table.move_to(moved)
        self.show_file()

    def highlighted(self) -> Finding | None:
        return self.findings.get(self.query_one("#findings", Table).cursor_key() or "")

    @on(DataTable.RowHighlighted, "#findings")
    def show_file(self) -> None:
        """The memory file around the finding's line, that line highlighted."""
        shown = self.query_one("#memory-file", Static)
        finding = self.cursor_on = self.highlighted()
        if finding is None:
            if self.swept is None:
                return
            where = ", ".join(fmt.home_path(root) for root in self.swept.swept) or "no known project"
            shown.update(Text(visible(f"No findings: every remembered fact checked holds ({where}).")))
            return
        lines = lines_to(finding.file, finding.line)
        self.viewed = (finding_key(finding), line_of(lines, finding.line))
        text = Text()
        text.append(f"{visible(fmt.short_path(finding.file))}\n", style="bold")
        text.append(f"{KIND_LABELS.get(finding.kind, finding.kind)}: {visible(finding.message)}\n", style="yellow")
        if not finding.line:
            text.append(f"(the whole file: {len(lines)} lines)\n", style="dim")
        elif self.moved_since_sweep(finding, line_of(lines, finding.line)):
            text.append(f"line {finding.line} changed since the sweep: it may not be the line this finding names "
                        "(r sweeps again)\n", style="bold red")
        number = finding.line or 1
        # each line on one row: a long line wrapped would push the highlighted one out of the
        # viewer's few rows (the dialog of `u` shows the whole line)
        room = shown.content_size.width - 7 if shown.content_size.width > 27 else None
        for at in range(max(1, number - CONTEXT), min(len(lines), number + CONTEXT) + 1):
            marked = at == finding.line
            text.append(f"{at:>4} {'▶' if marked else ' '} ", style="bold" if marked else "dim")
            line = Text(visible(lines[at - 1]), style="reverse" if marked else "")
            if room is not None:
                line.truncate(room, overflow="ellipsis")
            text.append_text(line)
            text.append("\n")
        shown.update(text)

    def moved_since_sweep(self, finding: Finding, text: str | None) -> bool:
        """Whether the finding's line holds another text than when it was swept (or its file
        changed while it was swept: `lines_read`)."""
        key = finding_key(finding)
        return self.swept is not None and (key not in self.swept_lines or self.swept_lines[key] != text)

    # --- writing through the core -----------------------------------------------------------

    def action_supersede(self, correction: str = "", gone: str = "") -> None:
        """Ask for the correction of the highlighted finding's line, then strike it. `gone`:
        the index link target the line points at, which must still name nothing then."""
        finding = self.highlighted()
        if finding is None or self.refuse_read_only():
            return
        if not finding.line:
            self.notify("This finding has no line to strike (i fixes the index).", severity="warning")
            return
        text = line_of(lines_to(finding.file, finding.line), finding.line) or ""
        if self.viewed != (finding_key(finding), text) or self.moved_since_sweep(finding, text):
            # the file changed under the viewer, or since the sweep: the line now at the
            # finding's number may be another fact, and not what the user read
            since = "was shown" if self.viewed != (finding_key(finding), text) else "was swept"
            self.notify(f"{visible(relative(finding))} changed since it {since}: line {finding.line} may no longer "
                        "be the line this finding names. Shown again; the memory is swept again.",
                        title="Nothing changed", severity="warning")
            self.show_file()
            self.action_refresh()
            return

        def answered(given: str | None) -> None:
            if given:
                self.supersede_worker(finding.file, finding.line or 0, given, text, gone)

        room = correction_room(finding.file, text)
        self.app.push_screen(SupersedeModal(fmt.short_path(finding.file), finding.line, text, finding.message,
                                            correction, room), answered)

    # a group of its own: the index line's dry run (`i`, "write") started meanwhile cancelled it,
    # and the result of a strike already made was dropped (no note, no sweep after it)
    @work(thread=True, exclusive=True, group="strike", exit_on_error=False, name="Supersede")
    def supersede_worker(self, file: str, line: int, correction: str, shown: str,
                         gone: str = "") -> Superseded | MemoryWriteRefused:
        from app.core import memory
        from app.core.memory.index import target_missing

        if gone and not target_missing(os.path.dirname(file), gone):
            return memory.MemoryWriteRefused(came_back(gone))
        try:  # the line as shown: a file changed since (another supersede, Claude) is refused
            return memory.supersede(file, line, correction, expect=shown)
        except memory.MemoryWriteRefused as refused:  # the file changed, the line is struck...: say so
            return refused

    def action_fix_index(self) -> None:
        finding = self.highlighted()
        if finding is None:
            return
        if finding.kind == "index_missing_file":
            from app.core.memory.index import target_missing

            if not target_missing(os.path.dirname(finding.file), finding.token):
                self.notify(came_back(finding.token), title="Nothing changed", severity="warning", timeout=10)
                self.action_refresh()
                return
            said = f"`{finding.token}` no longer exists; this pointer is kept only as history."
            room = correction_room(finding.file, line_of(lines_to(finding.file, finding.line), finding.line) or "")
            self.action_supersede(said if len(said) <= room else f"`{finding.token}` no longer exists."[:room],
                                  finding.token)
        elif finding.kind == "index_unlisted_file":
            if not self.refuse_read_only():
                self.index_worker(finding.file, dry_run=True)
        else:
            self.notify("Not an index finding: u supersedes the line.", severity="warning")

    @work(thread=True, exclusive=True, group="write", exit_on_error=False, name="The index line")
    def index_worker(self, topic_file: str, *, dry_run: bool, seen: tuple[int, int, int] | None = None,
                     shown: str | None = None) -> IndexAdded | MemoryWriteRefused:
        """The line that lists `topic_file` (a dry run, to ask), or that line added, only as it
        was `shown`; a refusal is an answer to show, not a failure."""
        from app.core import memory

        try:
            return memory.add_to_index(topic_file, dry_run=dry_run, seen=seen, shown=shown)
        except memory.MemoryWriteRefused as refused:
            return refused

    def index_added(self, added: IndexAdded) -> None:
        """Ask before a dry run's line is written; say where a written one went."""
        index = fmt.short_path(added.index)
        late = "" if added.loaded else (" It lies past the first 200 lines (25 KB) Claude loads each session: "
                                        "move it up to have it recalled.")
        if not added.dry_run:
            self.notify(f"MEMORY.md line {added.number} now lists {visible(added.topic)}.{late}", title="Index line added",
                        severity="information" if added.loaded else "warning")
            self.action_refresh()
            return
        body = (f"{visible(added.line)}\n\nIt lists {visible(added.topic)} and goes at the end of {visible(index)}, as line "
                f"{added.number}.{late}\n"
                "Nothing else in the index changes, and if it changes before you answer, nothing is written.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.index_worker(os.path.join(os.path.dirname(added.index), added.topic), dry_run=False,
                                  seen=added.seen, shown=added.line)

        self.ask(ConfirmModal("Add this line to MEMORY.md?", body, yes="Add"), answered, "The index line to add")
