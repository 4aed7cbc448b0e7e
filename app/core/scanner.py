"""THE size of a tree (CONTRACT "Size"): disk bytes (`st_blocks` x 512), hard links once,
symlinks never followed, one file system.

Every sweep, release, report and the disk browser measure through here. A scan counts an
entry that vanishes or cannot be read as an error and goes on; it yields progress so the
TUI can draw a bar and cancel (close the generator), and it can stop at a time budget with
a partial answer marked `partial`.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Generator
from dataclasses import dataclass

PathLike = str | bytes | os.PathLike[str] | os.PathLike[bytes]

_S_ISDIR = stat.S_ISDIR
_BUDGET_CHECK = 512  # entries between two looks at the clock


@dataclass(frozen=True)
class TreeSize:
    path: str
    apparent: int  # bytes (st_size), hard links once
    disk: int  # st_blocks * 512, hard links once
    files: int  # non-directories (files, symlinks, others)
    folders: int  # directories, the top one included when it is a directory
    errors: int = 0  # entries that vanished / could not be read
    partial: bool = False  # stopped by budget or cancel

    @property
    def entries(self) -> int:
        return self.files + self.folders


@dataclass(frozen=True)
class ScanProgress:
    path: str
    files: int
    folders: int
    disk: int


def text_path(path: PathLike) -> str:
    """A path as text; bytes that are not UTF-8 become surrogate escapes (and back)."""
    value = os.fspath(path)
    return os.fsdecode(value) if isinstance(value, bytes) else value


class _Tally:
    """The running totals of one scan (a plain object: attribute access is cheap)."""

    __slots__ = ("apparent", "blocks", "files", "folders", "errors", "seen")

    def __init__(self) -> None:
        self.apparent = 0
        self.blocks = 0
        self.files = 0
        self.folders = 0
        self.errors = 0
        self.seen: set[tuple[int, int]] = set()

    def result(self, path: str, partial: bool) -> TreeSize:
        return TreeSize(path, self.apparent, self.blocks * 512, self.files, self.folders,
                        self.errors, partial)


def scan_iter(path: PathLike, *, budget_s: float | None = None, one_fs: bool = True,
              every: int = 2000, limit: int | None = None) -> Generator[ScanProgress, None, TreeSize]:
    """Measure `path`, yielding a ScanProgress every `every` entries; returns the TreeSize.

    Stop iterating (or `.close()`) to cancel. `budget_s` stops the scan after that many
    seconds with `partial=True`; so does `limit` after that many entries (a cheap "is this
    tree big?" probe). A symlink counts as itself; a path that is a file is one file.
    """
    top = text_path(path)
    deadline = None if budget_s is None else time.monotonic() + max(0.0, budget_s)
    tally = _Tally()
    try:
        st = os.lstat(top)
    except OSError:
        tally.errors = 1
        return tally.result(top, False)
    _count(tally, st)
    if not _S_ISDIR(st.st_mode):
        return tally.result(top, False)
    dev = st.st_dev if one_fs else None
    every = max(1, every)
    next_yield = every
    step = _BUDGET_CHECK if limit is None else max(1, min(_BUDGET_CHECK, limit))
    next_check = step
    stack = [top]
    seen = tally.seen
    while stack:
        folder = stack.pop()
        try:
            it = os.scandir(folder)
        except OSError:
            tally.errors += 1
            continue
        with it:
            while True:
                try:
                    entry = next(it)
                except StopIteration:
                    break
                except OSError:
                    tally.errors += 1
                    break
                try:
                    est = entry.stat(follow_symlinks=False)
                except OSError:
                    tally.errors += 1
                    continue
                if _S_ISDIR(est.st_mode):
                    if dev is not None and est.st_dev != dev:
                        continue  # another file system mounted here: not ours to count
                    tally.folders += 1
                    tally.apparent += est.st_size
                    tally.blocks += est.st_blocks
                    stack.append(entry.path)
                else:
                    if est.st_nlink > 1:
                        key = (est.st_dev, est.st_ino)
                        if key in seen:
                            tally.files += 1
                            continue
                        seen.add(key)
                    tally.files += 1
                    tally.apparent += est.st_size
                    tally.blocks += est.st_blocks
                done = tally.files + tally.folders
                if done >= next_check:
                    next_check = done + step
                    if (deadline is not None and time.monotonic() >= deadline) or (
                            limit is not None and done >= limit):
                        return tally.result(top, True)
                if done >= next_yield:
                    next_yield = done + every
                    yield ScanProgress(top, tally.files, tally.folders, tally.blocks * 512)
    return tally.result(top, False)


def _count(tally: _Tally, st: os.stat_result) -> None:
    if _S_ISDIR(st.st_mode):
        tally.folders += 1
    else:
        tally.files += 1
        if st.st_nlink > 1:
            tally.seen.add((st.st_dev, st.st_ino))
    tally.apparent += st.st_size
    tally.blocks += st.st_blocks


def scan(path: PathLike, *, budget_s: float | None = None, one_fs: bool = True,
         limit: int | None = None) -> TreeSize:
    """The size of `path` (see scan_iter), without progress."""
    gen = scan_iter(path, budget_s=budget_s, one_fs=one_fs, every=1 << 62, limit=limit)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            result: TreeSize = stop.value
            return result


def disk_bytes(path: PathLike) -> int:
    """Disk bytes of `path` (0 for a missing path)."""
    return scan(path).disk


def children(path: PathLike, *, budget_s: float | None = None) -> list[TreeSize]:
    """One TreeSize per direct child of `path`, largest disk first (the disk browser).

    The budget is shared: once it is spent, the children not yet measured come back with
    their own entry only, marked partial. A hard link shared by two children counts in both.
    """
    top = text_path(path)
    deadline = None if budget_s is None else time.monotonic() + max(0.0, budget_s)
    try:
        with os.scandir(top) as it:
            names = [entry.path for entry in it]
    except OSError:
        return []
    sizes: list[TreeSize] = []
    for child in names:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            sizes.append(_entry_only(child))
        else:
            sizes.append(scan(child, budget_s=left))
    sizes.sort(key=lambda s: (-s.disk, s.path))
    return sizes


def _entry_only(path: str) -> TreeSize:
    """A child the budget did not reach: its own entry, partial when it is a folder."""
    tally = _Tally()
    try:
        st = os.lstat(path)
    except OSError:
        tally.errors = 1
        return tally.result(path, False)
    _count(tally, st)
    return tally.result(path, _S_ISDIR(st.st_mode))
