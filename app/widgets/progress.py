"""One line of progress under a table: what runs now (a label and a bar), or how it ended
(the label alone: a finished bar never stays on screen, at 0% or at 100%)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar

from app.widgets.plain import visible


class WorkLine(Horizontal):
    """`removing 3/7, freed 20 MiB  ███████░░░░` while it runs; `freed 40 MiB in 7 items` after."""

    DEFAULT_CSS = """
    WorkLine { height: 1; display: none; padding: 0 1; background: $boost; }
    WorkLine > Label { width: 1fr; }
    WorkLine > ProgressBar { width: 40; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="work-label")
        yield ProgressBar(id="work-bar", show_eta=False)

    @property
    def text(self) -> str:
        return str(self.query_one("#work-label", Label).render())

    def running(self, label: str, done: int = 0, total: int = 0) -> None:
        """A step of work under way; `total` 0 shows the bar as busy (no count known)."""
        self.display = True
        self.query_one("#work-label", Label).update(Text(visible(label)))
        bar = self.query_one("#work-bar", ProgressBar)
        bar.display = True
        bar.update(total=total or None, progress=done)

    def ended(self, label: str) -> None:
        """The work is over: its last word stays, the bar goes."""
        self.display = True
        self.query_one("#work-label", Label).update(Text(visible(label)))
        self.query_one("#work-bar", ProgressBar).display = False

    def hide(self) -> None:
        self.display = False
