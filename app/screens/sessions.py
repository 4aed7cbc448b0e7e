"""Sessions: every Claude session file, live or stale, updated each second by difference.

Rows are keyed by the session file, live sessions first, then the latest update first; a
poll adds, updates (only the cells that changed) and removes rows in one batch
(`Table.sync`). The panel below lists the outputs the highlighted session owns, as the
sweeps judged them, with the worktree a live session works in.
"""

from __future__ import annotations

import os

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Label

from app import format as fmt
from app.core.sessions import Session
from app.core.verdict import Verdict
from app.data.removals import kept_paths, one_per_path
from app.screens.base import ClaudettoScreen
from app.widgets.empty import EmptyState
from app.widgets.plain import visible
from app.widgets.table import Col, Fit, Table, fit
from app.widgets.totals import TotalsBar

# fixed widths; cwd takes the rest (a long one shows its project and its tail). Below
# MIN_CWD cells the pid goes first, then started, then status.
COLUMNS = (Col("state", "state", 7), Col("session", "session", 8), Col("status", "status", 7, drop=3),
           Col("project", "project", 10), Col("started", "started", 14, drop=2),
           Col("updated", "updated", 14), Col("pid", "pid", 7, drop=1), Col("cwd", "cwd"))
OWNED = (Col("kind", "kind", 14), Col("size", "size", 10), Col("verdict", "verdict", 20), Col("path", "path"))
MIN_CWD = 20
MIN_PATH = 24


def project_name(cwd: str | None) -> str:
    """The project a session works in, from its cwd alone: a checkout's repository."""
    if not cwd:
        return "-"
    return os.path.basename((fmt.project_of(cwd) or cwd).rstrip("/")) or cwd


class SessionsScreen(ClaudettoScreen):
    """Live and stale sessions; enter shows the outputs of the highlighted one on Outputs."""

    CSS_PATH = "sessions.tcss"
    fits: tuple[Fit, Fit]  # the sessions' and the owned outputs' columns for the current width
    wanted: str | None = None  # a session file to put the cursor on once it is listed
    BINDINGS = [
        Binding("o", "show_outputs", "Its outputs", id="session-outputs",
                tooltip="Show the outputs this session owns on the Outputs screen (or enter)"),
        Binding("r", "app.rejudge", "Refresh", id="sessions-refresh", tooltip="Judge every output again"),
    ]

    def compose(self) -> ComposeResult:
        yield TotalsBar("sessions")
        yield EmptyState()
        yield Table(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Label("", id="owned-title")
        yield Table(id="owned", cursor_type="row", show_cursor=False)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.fit_columns(self.app.size.width)
        self.store.sessions_changed.subscribe(self, lambda _d: self.show_sessions())
        self.store.changed.subscribe(self, lambda _d: self.show_owned())
        self.store.sized.subscribe(self, lambda _d: self.show_owned())
        for signal in (self.store.sessions_changed, self.store.changed):
            signal.subscribe(self, lambda _d: self.show_empty_state())
        self.set_interval(30, self.show_sessions, name="refresh ages")
        self.show_sessions()
        self.show_empty_state()

    def on_resize(self, event: events.Resize) -> None:
        self.fit_columns(event.size.width)

    def fit_columns(self, width: int) -> None:
        """Fixed widths for `width` cells; rebuilt (rows too) only when the fit changes."""
        plan, owned = fit(COLUMNS, width, MIN_CWD), fit(OWNED, width, MIN_PATH)
        if (plan, owned) == getattr(self, "fits", None):
            return
        self.fits = (plan, owned)
        self.query_one("#sessions", Table).set_columns(plan)
        self.query_one("#owned", Table).set_columns(owned)
        self.show_sessions()

    def cells(self, _file: str, source: tuple[Session, float]) -> list[str]:
        session, _tick = source
        now = self.now()  # the tick says when to show an age again; the age is from now
        values = {
            "state": "● live" if session.live else "○ stale",
            "session": (session.session_id or "-")[:8],
            "status": session.status or "-",
            "project": project_name(session.cwd),
            "started": fmt.ms_age(session.started_at, now),
            "updated": fmt.ms_age(session.updated_at, now),
            "pid": str(session.pid) if session.pid is not None else "-",
            "cwd": fmt.compact_path(session.cwd, self.fits[0].rest) if session.cwd else "-",
        }
        return [values[key] for key in self.fits[0].keys]

    def show_sessions(self) -> None:
        table = self.query_one("#sessions", Table)
        tick = self.now() // 30  # ages move on every 30 s, not on every poll
        by_file = {s.file: s for s in self.store.sessions}
        listed = table.row_count > 0  # a list the person reads: its cursor stays on its session
        table.sync({file: (s, tick) for file, s in by_file.items()}, self.cells)

        def rank(file: str) -> tuple[bool, int, str]:
            return not by_file[file].live, -(by_file[file].updated_at or 0), file

        if table.keys_in_order() != sorted(by_file, key=rank):
            # a live session's update time moves each second: on the first row the cursor
            # stayed put, and another session slid under it (and under `o`)
            table.order(rank, stay=listed)
        if table.move_to(self.wanted):
            self.wanted = None
        self.show_owned()

    def show_empty_state(self) -> None:
        """Where no Claude Code data is found: say where claudetto looked, offer the demo."""
        nothing = self.store.found_nothing
        self.query_one(EmptyState).display = nothing
        for panel in ("#owned-title", "#owned"):  # no session to own anything: room for the message
            self.query_one(panel).display = not nothing

    def select(self, file: str) -> None:
        """Put the cursor on the session of `file` (now, or once its row is there)."""
        self.wanted = file
        if self.is_mounted:
            self.show_sessions()

    def highlighted(self) -> Session | None:
        key = self.query_one("#sessions", Table).cursor_key()
        return next((s for s in self.store.sessions if s.file == key), None)

    @on(DataTable.RowSelected, "#sessions")
    def open_selected(self) -> None:
        self.action_show_outputs()

    @on(DataTable.RowHighlighted, "#sessions")
    def follow_cursor(self) -> None:
        self.show_owned()

    def owned_cells(self, _key: str, source: tuple[Verdict, int | None, Verdict | None]) -> list[str]:
        verdict, size, held = source
        shown = held or verdict  # a path another rule keeps is kept (as on Outputs)
        return [verdict.kind, fmt.size(size), fmt.verdict_cell(shown.action, shown.reason),
                fmt.compact_path(verdict.path, self.fits[1].rest, verdict.project)]

    def show_owned(self) -> None:
        session = self.highlighted()
        sid = session.session_id if session else None
        verdicts = self.store.owned_by(sid)
        folders = one_per_path(verdicts)  # a folder two rules judge has two rows: one output
        total = fmt.size(sum(self.store.size(v) or 0 for v in folders))
        self.query_one("#owned-title", Label).update(  # a session id is the sessions file's word: no markup
            Text(visible(f"Outputs of {sid[:8]}: {len(folders)}, {total}") if sid else "Outputs: highlight a session"))
        owned = self.query_one("#owned", Table)
        held = kept_paths(self.store.rows.values())
        rows = {f"{v.rule}:{v.path}": (v, self.store.size(v), held.get(v.path) if v.removable else None)
                for v in verdicts}
        owned.sync(rows, self.owned_cells)

        def rank(key: str) -> tuple[int, str]:
            return -(rows[key][1] or 0), key

        if owned.keys_in_order() != sorted(rows, key=rank):
            owned.order(rank)

    def action_show_outputs(self) -> None:
        from app.screens.outputs import OutputsScreen

        session = self.highlighted()
        self.app.switch_mode("outputs")
        screen = self.app.screen
        if session and session.session_id and isinstance(screen, OutputsScreen):
            screen.filter_text(session.session_id)
