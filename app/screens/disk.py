"""The disk browser (like ncdu or gdu): a folder's children, largest first, with size bars.

Enter drills into a child folder, backspace goes up (never above the folder it started
from), escape goes back to the Outputs. Sizes come from the one scanner
(`scanner.children`), measured in a worker with a progress line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label

from app import format as fmt
from app.core.scanner import TreeSize
from app.widgets.table import Table

BAR_WIDTH = 20


@dataclass
class ChildrenMeasured(Message):
    folder: str
    children: list[TreeSize]


class DiskScreen(Screen[None]):
    """Browse one output's tree; read only (removals happen on the Outputs screen)."""

    CSS_PATH = "disk.tcss"
    BINDINGS = [
        Binding("backspace", "up", "Up", id="disk-up", tooltip="The parent folder"),
        Binding("escape", "back", "Back", id="disk-back", tooltip="Back to the Outputs"),
    ]

    def __init__(self, top: str) -> None:
        super().__init__()
        self.top = top
        self.folder = top

    def compose(self) -> ComposeResult:
        yield Label("", id="disk-title")
        yield Table(id="disk", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#disk", DataTable)
        for key in ("size", "bar", "items", "name"):
            table.add_column(key, key=key)
        self.open(self.top)

    def open(self, folder: str) -> None:
        self.folder = folder
        self.query_one("#disk-title", Label).update(f"{fmt.short_path(folder)}  measuring…")
        self.measure(folder)

    @work(thread=True, exclusive=True, group="disk", exit_on_error=False)
    def measure(self, folder: str) -> None:
        from app.core.scanner import children

        if os.path.isdir(folder) and not os.path.islink(folder):
            found = children(folder)
        else:
            from app.core.scanner import scan

            found = [scan(folder)]
        self.post_message(ChildrenMeasured(folder, found))

    def on_children_measured(self, message: ChildrenMeasured) -> None:
        if message.folder != self.folder:
            return
        table = self.query_one("#disk", DataTable)
        table.clear()  # a new folder: a new list, not a refresh
        total = sum(c.disk for c in message.children) or 1
        biggest = max((c.disk for c in message.children), default=0) or 1
        for child in message.children:
            name = os.path.basename(child.path)
            is_dir = os.path.isdir(child.path) and not os.path.islink(child.path)
            table.add_row(fmt.size(child.disk), Text(fmt.bar(child.disk / biggest, BAR_WIDTH), style="cyan"),
                          f"{child.entries:,}", Text(name + ("/" if is_dir else ""), no_wrap=True), key=child.path)
        label = f"{fmt.short_path(message.folder)}  {fmt.size(total if message.children else 0)} in " \
                f"{len(message.children)} entries  (enter opens, backspace goes up)"
        self.query_one("#disk-title", Label).update(label)
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        path = event.row_key.value
        if path and os.path.isdir(path) and not os.path.islink(path):
            self.open(path)

    def action_up(self) -> None:
        if os.path.normpath(self.folder) == os.path.normpath(self.top):
            self.notify("This is the top of this output.")
            return
        self.open(os.path.dirname(self.folder))

    def action_back(self) -> None:
        self.dismiss()
