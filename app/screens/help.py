"""`?`: every key of the screen below (its own, its table's and the app's, from the live
bindings, so the help never lists a key twice or one that no longer exists), where
claudetto looks (the real folders) and the bounds in force."""

from __future__ import annotations

import os

from rich.table import Table as RichTable
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from app import format as fmt
from app.commands import key_label, live_bindings
from app.core import paths
from app.core.bounds import all_bounds
from app.widgets.plain import visible


class HelpScreen(ModalScreen[None]):
    """The keys of the screen it covers, then the paths and bounds in force."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 90%; max-width: 110; height: 90%; border: thick $accent;
                            background: $surface; padding: 0 1; }
    HelpScreen #help-title { text-style: bold; padding-bottom: 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help-close", tooltip="Back")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("claudetto: keys (escape closes; ctrl+p opens the command palette)", id="help-title")
            with VerticalScroll():
                yield Static(self.keys_table(), id="help-keys")
                yield Static(self.places_table(), id="help-places")

    def key_rows(self) -> list[tuple[str, str, str]]:
        """(key, name, what it does) of every key the screen below answers now."""
        stack = self.app.screen_stack
        below = stack[-2] if len(stack) > 1 else None
        return [] if below is None else [(key_label(binding), binding.description, binding.tooltip)
                                         for _node, binding in live_bindings(below)]

    def keys_table(self) -> RichTable:
        """One row per key: key, name, what it does (wrapped inside its own column)."""
        table = RichTable(box=None, show_header=False, padding=(0, 1), expand=True)
        table.add_column("key", style="bold", no_wrap=True, min_width=8)
        table.add_column("name", no_wrap=True, min_width=14)
        table.add_column("what", ratio=1)
        for row in self.key_rows():
            table.add_row(*row)
        return table

    @staticmethod
    def places() -> list[tuple[str, str]]:
        """The folders and files claudetto reads, as they are on this machine (HOME as `~`)."""
        return [(label, fmt.home_path(os.fspath(path))) for label, path in (
            ("sessions", paths.sessions_dir()), ("Claude temp", paths.claude_tmp_dir()),
            ("user temp", paths.user_tmp()), ("gate logs", paths.log_root()), ("projects", paths.projects_dir()),
            ("state", paths.claudetto_home()), ("journal", paths.journal_file()))]

    def places_table(self) -> RichTable:
        table = RichTable(box=None, show_header=False, padding=(0, 1), expand=True)
        table.add_column("what", style="bold", no_wrap=True, min_width=16)
        table.add_column("value", ratio=1, overflow="fold")
        table.add_row("", "")
        table.add_row(Text("Where claudetto looks", style="bold underline"), "")
        for label, path in self.places():
            table.add_row(label, Text(visible(path)))
        table.add_row("", "")
        table.add_row(Text("Bounds in force", style="bold underline"), "")
        for name, value in all_bounds().items():
            table.add_row(name, str(value))
        return table

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
