"""The disk browser, with ncdu's habits: a folder's children with size bars, largest first.

Right, `l` or enter go into a child folder; left, `h` or backspace go up (never above the
folder it started from), with the cursor back on the folder you came from; escape goes back.
`s`, `n`, `c`, `m` sort by size, name, items, modification time, and the same key again
reverses; the title says which. Sizes come from the one scanner (`scanner.children`),
measured in a worker; a folder's total is its children plus its own entry, the same figure
its row shows one level up. A missing path, a symlink or a file is said as such.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Label
from textual.worker import Worker

from app import format as fmt
from app.core.scanner import TreeSize
from app.screens.base import ClaudettoScreen
from app.widgets.plain import visible
from app.widgets.table import Table

BAR_WIDTH = 20
SORTS = {"size": "size", "name": "name", "items": "items", "mtime": "modified"}


@dataclass(frozen=True)
class Listing:
    """One folder measured: its children, its total (children + its own entry), or what it is
    instead of a folder (`gone`, `symlink`, `file`)."""

    folder: str
    children: list[TreeSize]
    total: int
    entries: int
    not_a_folder: str = ""
    mtimes: dict[str, float] | None = None
    folders: frozenset[str] = frozenset()  # the children one can go into
    mounts: frozenset[str] = frozenset()  # the children listed as mount points: never looked at


def _looked_at(folder: str, found: list[TreeSize]) -> tuple[dict[str, float], frozenset[str], frozenset[str]]:
    """Each child's modification time and which are folders, from one look at each child that
    is no mount point: a look at a dead `sshfs` mount waits for ever, and the worker with it
    (the app cannot end while it waits), or the screen itself when it asked on a key."""
    from app.core.mounts import mount_points
    from app.core.scanner import listed_mount

    real, mounts = os.path.realpath(folder), mount_points()
    mtimes: dict[str, float] = {}
    folders: set[str] = set()
    mounted: set[str] = set()
    for child in found:
        if listed_mount(real, child.path, mounts):
            mounted.add(child.path)
            continue
        try:
            st = os.lstat(child.path)
        except OSError:
            continue
        mtimes[child.path] = st.st_mtime
        if stat.S_ISDIR(st.st_mode):
            folders.add(child.path)
    return mtimes, frozenset(folders), frozenset(mounted)


def list_folder(folder: str) -> Listing:
    """`folder`'s children as the scanner measures them (a worker calls this)."""
    from app.core.mounts import mount_points
    from app.core.scanner import children, listed_mount, scan

    if listed_mount(os.path.realpath(os.path.dirname(folder)), folder, mount_points()):
        return Listing(folder, [], 0, 0, "mount")
    try:
        st = os.lstat(folder)
    except OSError:
        return Listing(folder, [], 0, 0, "gone")
    if os.path.islink(folder):
        return Listing(folder, [], st.st_blocks * 512, 1, "symlink")
    if not os.path.isdir(folder):
        return Listing(folder, [], scan(folder).disk, 1, "file")
    found = children(folder)
    mtimes, folders, mounts = _looked_at(folder, found)
    return Listing(folder, found, sum(c.disk for c in found) + st.st_blocks * 512,
                   sum(c.entries for c in found), mtimes=mtimes, folders=folders, mounts=mounts)


class DiskScreen(ClaudettoScreen):
    """Browse one output's tree; read only (removals happen on the Outputs screen)."""

    CSS_PATH = "disk.tcss"
    BINDINGS = [
        Binding("right,l", "open", "Open", priority=True, id="disk-open", tooltip="Go into the folder (or enter)"),
        Binding("left,h,backspace", "up", "Up", priority=True, id="disk-up", tooltip="The parent folder"),
        Binding("s", "sort('size')", "Size", id="disk-sort-size", tooltip="Sort by size (again: reversed)"),
        Binding("n", "sort('name')", "Name", id="disk-sort-name", tooltip="Sort by name (again: reversed)"),
        Binding("c", "sort('items')", "Items", show=False, id="disk-sort-items",
                tooltip="Sort by the number of entries inside (again: reversed)"),
        Binding("m", "sort('mtime')", "Modified", show=False, id="disk-sort-mtime",
                tooltip="Sort by modification time, newest first (again: reversed)"),
        Binding("escape", "back", "Back", id="disk-back", tooltip="Back to the Outputs"),
    ]

    def __init__(self, top: str) -> None:
        super().__init__()
        self.top = top
        self.folder = top
        self.sort_by = "size"
        self.reverse = False
        self.listing: Listing | None = None
        self.came_from: str | None = None  # the child to put the cursor on once listed

    def compose(self) -> ComposeResult:
        yield Label("", id="disk-title")
        yield Table(id="disk", cursor_type="row")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#disk", Table)
        for key in ("size", "bar", "items", "name"):
            table.add_column(key, key=key)
        self.open(self.top)

    def open(self, folder: str, came_from: str | None = None) -> None:
        self.folder = folder
        self.came_from = came_from
        self.listing = None
        self.show_title("measuring…")
        self.measure(folder)

    @work(thread=True, exclusive=True, group="disk", exit_on_error=False, name="Measuring the folder")
    def measure(self, folder: str) -> Listing:
        return list_folder(folder)

    def worker_done(self, worker: Worker[Any]) -> None:
        listing = worker.result
        if isinstance(listing, Listing) and listing.folder == self.folder:
            self.show(listing)

    def show_title(self, status: str) -> None:
        """The folder cut from the left so the title and its status always fit."""
        sort = f"by {SORTS[self.sort_by]}{' reversed' if self.reverse else ''}"
        tail = f"  {status}  sorted {sort}"
        room = max(12, self.app.size.width - 2 - len(tail))
        self.query_one("#disk-title", Label).update(Text(visible(fmt.tail(fmt.short_path(self.folder), room)) + tail))

    def show(self, listing: Listing) -> None:
        self.listing = listing
        table = self.query_one("#disk", Table)
        table.clear()  # a new folder: a new list, not a refresh
        what = {"gone": "gone: nothing here any more", "symlink": "a symlink: not followed",
                "file": f"a file, {fmt.size(listing.total)}", "mount": "a mount point: not looked at"}
        if listing.not_a_folder:
            self.show_title(what[listing.not_a_folder])
            return
        biggest = max((c.disk for c in listing.children), default=0) or 1
        for child in listing.children:
            name = os.path.basename(child.path)
            mark = "/" if child.path in listing.folders else "/ (a mount point: not looked at)" if (
                child.path in listing.mounts) else ""
            table.add_row(fmt.size(child.disk), Text(fmt.bar(child.disk / biggest, BAR_WIDTH), style="cyan"),
                          f"{child.entries:,}", Text(name + mark, no_wrap=True), key=child.path)
        self.sort_rows()
        table.move_to(self.came_from)
        count = len(listing.children)
        self.show_title(f"{fmt.size(listing.total)} in {count} entr{'y' if count == 1 else 'ies'}")
        table.focus()

    def sort_rows(self) -> None:
        if self.listing is None:
            return
        sizes = {c.path: c for c in self.listing.children}
        mtimes = self.listing.mtimes or {}

        def by(path: str) -> tuple[Any, ...]:
            child = sizes[path]
            if self.sort_by == "name":
                return (os.path.basename(path).lower(), path)
            if self.sort_by == "items":
                return (-child.entries, path)
            if self.sort_by == "mtime":
                return (-mtimes.get(path, 0.0), path)
            return (-child.disk, path)

        self.query_one("#disk", Table).order(by, reverse=self.reverse)

    def action_sort(self, column: str) -> None:
        self.reverse = not self.reverse if column == self.sort_by else False
        self.sort_by = column
        self.sort_rows()
        if self.listing is not None and not self.listing.not_a_folder:
            count = len(self.listing.children)
            self.show_title(f"{fmt.size(self.listing.total)} in {count} entr{'y' if count == 1 else 'ies'}")

    @on(DataTable.RowSelected, "#disk")
    def open_selected(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        path = self.query_one("#disk", Table).cursor_key()
        if self.listing is None or not path:
            return
        if path in self.listing.mounts:  # what the worker saw: a look at it here could wait for ever
            self.notify("A mount point: another file system, not looked at.")
        elif path in self.listing.folders:
            self.open(path)

    def action_up(self) -> None:
        if os.path.normpath(self.folder) == os.path.normpath(self.top):
            self.notify("This is the top of this output.")
            return
        self.open(os.path.dirname(self.folder), came_from=self.folder)

    def action_back(self) -> None:
        self.dismiss()
