"""The Textual app: small; it declares the screens and starts them (STYLE rule 5)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Static


class ClaudettoApp(App[None]):
    """The dashboard."""

    TITLE = "claudetto"
    BINDINGS = [Binding("q", "quit", "Quit", id="quit", tooltip="Leave claudetto")]

    def __init__(self, *, read_only: bool = False) -> None:
        super().__init__()
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("claudetto")
        yield Footer()


def run_tui(*, demo: bool = False, read_only: bool = False) -> int:
    ClaudettoApp(read_only=read_only).run()
    return 0
