"""The command palette (ctrl+p), built from the live bindings (STYLE rule 9).

`KeyCommands` lists every key the current screen answers (its own, its focused widget's
and the app's, as `Screen.active_bindings` has them now), so a key added to a screen is in
the palette and the help without being written twice; `SessionCommands` adds what no key
can say: the outputs of each session by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode
from textual.screen import Screen

from app.screens.base import claudetto
from app.widgets.plain import visible

Entry = tuple[str, str, Callable[[], Any]]  # (name, help, run)


def key_label(binding: Binding) -> str:
    """How a key is written for people: `?`, `space`, `/`, `ctrl+p`."""
    return binding.key_display or {"question_mark": "?", "slash": "/"}.get(binding.key, binding.key)


def live_bindings(screen: Screen[Any]) -> Iterator[tuple[DOMNode, Binding]]:
    """Each binding `screen` answers now that has an id (ours: not Textual's built-ins),
    once per id, the screen's own before the app's."""
    seen: set[str] = set()
    for active in screen.active_bindings.values():
        binding = active.binding
        if binding.id and binding.id not in seen and binding.description:
            seen.add(binding.id)
            yield active.node, binding


class _Entries(Provider):
    """A provider over entries made when the palette opens; subclasses say which."""

    def entries(self) -> Iterator[Entry]:
        raise NotImplementedError

    async def discover(self) -> Hits:
        for name, help_text, run in self.entries():
            yield DiscoveryHit(as_markup(name), run, help=as_markup(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, run in self.entries():
            score = matcher.match(f"{name} {help_text}")
            if score > 0:
                yield Hit(score, matcher.highlight(visible(name)), run, text=name, help=as_markup(help_text))


def as_markup(text: str) -> str:
    """`text` as the palette's markup that shows it as it is: the palette reads a hit's help
    (and a listed name) as markup, and a session's cwd is a folder's name (`site [old]`, a
    `[/]`, a `[@click=…]`); control characters drawn (app/widgets/plain.py)."""
    return visible(text).replace("[", "\\[")


class KeyCommands(_Entries):
    """Every key of the screen the palette was opened on, by its description."""

    def entries(self) -> Iterator[Entry]:
        for node, binding in live_bindings(self.screen):
            yield (binding.description, f"{binding.tooltip} ({key_label(binding)})",
                   partial(self.app.run_action, binding.action, node))


class SessionCommands(_Entries):
    """The outputs of each session, by its id."""

    def entries(self) -> Iterator[Entry]:
        for session in claudetto(self.app).store.sessions:
            if session.session_id:
                state = "live" if session.live else "stale"
                yield (f"Outputs of session {session.session_id[:8]}", f"{state}, {session.cwd or 'no cwd'}",
                       partial(self.show_session, session.session_id))

    def show_session(self, session_id: str) -> None:
        from app.screens.outputs import OutputsScreen

        app = self.app
        app.switch_mode("outputs")
        screen = app.screen
        if isinstance(screen, OutputsScreen):
            screen.filter_text(session_id)
