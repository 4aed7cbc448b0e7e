"""The command palette (ctrl+p): every action, one Provider per area (STYLE rule 9)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

Entry = tuple[str, str, Callable[[], Any]]  # (name, help, run)


class _Entries(Provider):
    """A provider over a fixed list of entries; subclasses say which."""

    def entries(self) -> Iterator[Entry]:
        raise NotImplementedError

    async def discover(self) -> Hits:
        for name, help_text, run in self.entries():
            yield DiscoveryHit(name, run, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, run in self.entries():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), run, text=name, help=help_text)

    def on_outputs(self, action: str) -> None:
        """Run an Outputs screen action, switching to that screen first."""
        app = self.app
        app.switch_mode("outputs")
        app.call_later(lambda: app.screen.run_action(action))


class ViewCommands(_Entries):
    def entries(self) -> Iterator[Entry]:
        app = self.app
        yield "Show sessions", "Live and stale Claude sessions (1)", partial(app.switch_mode, "sessions")
        yield "Show outputs", "Everything the sweeps judge (2)", partial(app.switch_mode, "outputs")
        yield "Help: keys", "Every key and what it does (?)", partial(app.run_action, "help")
        yield "Judge again", "Re-run both sweeps' dry runs and measure (r)", partial(app.run_action, "rejudge")
        yield "Quit", "Leave claudetto (q)", partial(app.run_action, "quit")


class SessionCommands(_Entries):
    def entries(self) -> Iterator[Entry]:
        yield ("Outputs of the highlighted session", "On the Sessions screen: its outputs, on Outputs (o or enter)",
               self.show_highlighted)
        store = getattr(self.app, "store", None)
        for session in getattr(store, "sessions", []):
            if not session.session_id:
                continue
            state = "live" if session.live else "stale"
            yield (f"Outputs of session {session.session_id[:8]}",
                   f"{state}, {session.cwd or 'no cwd'}",
                   partial(self.show_session, session.session_id))

    def show_highlighted(self) -> None:
        app = self.app
        app.switch_mode("sessions")
        app.call_later(lambda: app.screen.run_action("show_outputs"))

    def show_session(self, session_id: str) -> None:
        app = self.app
        app.switch_mode("outputs")
        app.call_later(lambda: app.screen.filter_text(session_id))  # type: ignore[attr-defined]


class OutputCommands(_Entries):
    def entries(self) -> Iterator[Entry]:
        for name, help_text, action in (
            ("Mark the row", "Mark or unmark the highlighted output (space)", "mark"),
            ("Remove marked", "Ask, then remove every marked output (d)", "remove_marked"),
            ("Unmark all", "Clear every mark (u)", "unmark_all"),
            ("Full sweep", "GC + cleanup: the dry run first, then ask (s)", "sweep"),
            ("Filter outputs", "Show only rows matching a text (/)", "filter"),
            ("Sort by size", "Largest first (z)", "sort('size')"),
            ("Sort by age", "Oldest first (a)", "sort('age')"),
            ("Sort by kind", "Grouped by kind (k)", "sort('kind')"),
            ("Browse the row's folder", "Children largest first, like ncdu (enter or b)", "browse"),
            ("Cancel measuring", "Stop the size worker (escape)", "cancel"),
        ):
            yield name, help_text, partial(self.on_outputs, action)
