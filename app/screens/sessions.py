"""Sessions: every Claude session file, live or stale, updated each second by difference.

Rows are keyed by the session file; a poll adds, updates (only the cells that changed) and
removes rows inside one batch, never clearing the table. The panel below lists the outputs
the highlighted session owns, as the sweeps judged them.
"""

from __future__ import annotations

import os

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label

from app import format as fmt
from app.core.sessions import Session
from app.widgets.empty import EmptyState
from app.widgets.store import OutputStore
from app.widgets.table import Col, Fit, Table, fit
from app.widgets.totals import TotalsBar

# fixed widths; cwd takes the rest. project (the cwd's last part) goes first when the cwd
# would get under MIN_CWD cells, then started: at 80 columns the cwd keeps 24.
COLUMNS = (Col("state", "state", 7), Col("session", "session", 8), Col("status", "status", 7),
           Col("project", "project", 10, drop=1), Col("started", "started", 14, drop=2),
           Col("updated", "updated", 14), Col("pid", "pid", 7), Col("cwd", "cwd"))
OWNED = (Col("kind", "kind", 14), Col("size", "size", 10), Col("verdict", "verdict", 20), Col("path", "path"))
MIN_CWD = 40
MIN_PATH = 24


class SessionsScreen(Screen[None]):
    """Live and stale sessions; enter shows the outputs of the highlighted one on Outputs."""

    CSS_PATH = "sessions.tcss"
    fits: tuple[Fit, Fit]  # the sessions' and the owned outputs' columns for the current width
    BINDINGS = [
        Binding("o", "show_outputs", "Its outputs", id="session-outputs",
                tooltip="Show the outputs this session owns on the Outputs screen (or enter)"),
        Binding("2", "app.switch_mode('outputs')", "Outputs", id="to-outputs", tooltip="Everything the sweeps judge"),
    ]

    @property
    def store(self) -> OutputStore:
        return self.app.store  # type: ignore[attr-defined, no-any-return]

    def compose(self) -> ComposeResult:
        yield TotalsBar("sessions")
        yield EmptyState()
        yield Table(id="sessions", cursor_type="row", zebra_stripes=True)
        yield Label("", id="owned-title")
        yield Table(id="owned", cursor_type="row", show_cursor=False)
        yield Footer()

    def on_mount(self) -> None:
        self.fit_columns(self.app.size.width)
        self.store.sessions_changed.subscribe(self, lambda _d: self.show_sessions())
        self.store.changed.subscribe(self, lambda _d: self.show_owned())
        self.store.sessions_changed.subscribe(self, lambda _d: self.show_empty_state())
        self.store.changed.subscribe(self, lambda _d: self.show_empty_state())
        self.store.sized.subscribe(self, lambda _d: self.show_owned())
        self.set_interval(30, self.show_sessions, name="refresh ages")
        self.show_sessions()

    def on_resize(self, event: events.Resize) -> None:
        self.fit_columns(event.size.width)

    def fit_columns(self, width: int) -> None:
        """Fixed widths for `width` cells; rebuilt (rows too) only when the fit changes."""
        plan, owned = fit(COLUMNS, width, MIN_CWD), fit(OWNED, width, MIN_PATH)
        if (plan, owned) == getattr(self, "fits", None):
            return
        self.fits = (plan, owned)
        table = self.query_one("#sessions", Table)
        cursor = table.cursor_row
        table.set_columns(plan)
        self.query_one("#owned", Table).set_columns(owned)
        self.show_sessions()
        table.move_cursor(row=cursor, animate=False)

    def row(self, session: Session) -> dict[str, str]:
        now = self.app.clock()  # type: ignore[attr-defined]
        project = os.path.basename(session.cwd.rstrip("/")) if session.cwd else "-"
        return {
            "state": "● live" if session.live else "○ stale",
            "session": (session.session_id or "-")[:8],
            "status": session.status or "-",
            "project": project,
            "started": fmt.ms_age(session.started_at, now),
            "updated": fmt.ms_age(session.updated_at, now),
            "pid": str(session.pid) if session.pid is not None else "-",
            "cwd": fmt.tail(fmt.short_path(session.cwd), self.fits[0].rest) if session.cwd else "-",
        }

    def show_sessions(self) -> None:
        table = self.query_one("#sessions", Table)
        keys = self.fits[0].keys
        wanted = {s.file: s for s in self.store.sessions}
        with self.app.batch_update():
            for row_key in [k for k in table.rows if k.value not in wanted]:
                table.remove_row(row_key)
            for file, session in wanted.items():
                cells = self.row(session)
                if file in table.rows:
                    for column, before in zip(keys, table.get_row(file), strict=True):
                        if cells[column] != before:
                            table.update_cell(file, column, cells[column])
                else:
                    table.add_row(*(cells[k] for k in keys), key=file)
        self.show_owned()

    def show_empty_state(self) -> None:
        """Where no Claude Code data is found: say where claudetto looked, offer the demo."""
        self.query_one(EmptyState).display = (self.store.sessions_read and not self.store.sessions
                                              and self.store.judged and not self.store.rows)

    def highlighted(self) -> Session | None:
        table = self.query_one("#sessions", DataTable)
        if table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - the cursor can sit past the last row for a moment
            return None
        return next((s for s in self.store.sessions if s.file == key), None)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "sessions":
            self.action_show_outputs()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "sessions":
            self.show_owned()

    def show_owned(self) -> None:
        session = self.highlighted()
        owned = self.query_one("#owned", Table)
        title = self.query_one("#owned-title", Label)
        sid = session.session_id if session else None
        verdicts = self.store.owned_by(sid)
        title.update(f"Outputs of {sid[:8]}: {len(verdicts)}" if sid else "Outputs: highlight a session")
        table_keys = {k.value for k in owned.rows if k.value is not None}
        want = {f"{v.rule}:{v.path}": v for v in verdicts}
        with self.app.batch_update():
            for key in table_keys - want.keys():
                owned.remove_row(key)
            for key, verdict in want.items():
                cells = (verdict.kind, fmt.size(self.store.size(verdict)),
                         fmt.verdict_cell(verdict.action, verdict.reason),
                         fmt.tail(fmt.short_path(verdict.path), self.fits[1].rest))
                if key in table_keys:
                    for column, value, before in zip(self.fits[1].keys, cells, owned.get_row(key), strict=True):
                        if value != before:
                            owned.update_cell(key, column, value)
                else:
                    owned.add_row(*cells, key=key)

    def action_show_outputs(self) -> None:
        session = self.highlighted()
        self.app.switch_mode("outputs")
        if session and session.session_id:
            self.app.screen.filter_text(session.session_id)  # type: ignore[attr-defined]
