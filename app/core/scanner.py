"""THE size of a tree (CONTRACT "Size"): disk bytes (`st_blocks` x 512), hard links once,
symlinks never followed, one file system.

Every sweep, release, report and the disk browser measure through here. A scan counts an
entry that vanishes or cannot be read as an error and goes on; it yields progress so the
TUI can draw a bar and cancel (close the generator), and it can stop at a time budget with
a partial answer marked `partial`.

One file system means no mount point is crossed: a folder on another device is skipped, and
so is a folder the kernel lists as a mount point (`mounts.mount_points()`, read once per
scan, or handed in by a sweep that read it once for all its scans), because a bind mount of
the same file system has its parent's device.

The same walk notes the git repositories inside (`TreeSize.repos`): a folder holding a
`.git` entry, or a bare repository (`HEAD`, `objects/`, `refs/`). A sweep about to remove a
tree asks `unique_work` about them without walking the tree a second time.

The parts: what a scan answers and counts (app/core/scan_tally.py), one reader's walk
(app/core/scan_walk.py), the second reader of a big tree or of a sweep's many trees
(app/core/scan_two.py); this module decides which to use and measures a folder's children
for the disk browser.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Generator, Sequence

from app.core.scan_tally import PathLike, ScanProgress, Tally, TreeSize, text_path
from app.core.scan_two import PARALLEL, finish_in_two, share_roots
from app.core.scan_walk import NEVER, deadline_of, drain, mount_points, start, walk

__all__ = ["PARALLEL", "SPLIT_AFTER", "PathLike", "ScanProgress", "TreeSize", "children", "disk_bytes",
           "scan", "scan_iter", "scan_many", "text_path"]

_S_ISDIR = stat.S_ISDIR

# A tree bigger than this is finished by two processes (app/core/scan_two.py). A fork costs
# ~1 ms; this many entries take ~15 ms to read.
SPLIT_AFTER = 5_000


def scan_iter(path: PathLike, *, budget_s: float | None = None, one_fs: bool = True,
              every: int = 2000, limit: int | None = None) -> Generator[ScanProgress, None, TreeSize]:
    """Measure `path`, yielding a ScanProgress every `every` entries; returns the TreeSize.

    Stop iterating (or `.close()`) to cancel. `budget_s` stops the scan after that many
    seconds with `partial=True`; so does `limit` after that many entries (a cheap "is this
    tree big?" probe). A symlink counts as itself; a path that is a file is one file.
    """
    deadline = deadline_of(budget_s)
    top, tally, stack, dev = start(path, one_fs)
    status = yield from walk(top, tally, stack, dev, deadline, limit, every)
    return tally.result(top, status == "partial")


def scan(path: PathLike, *, budget_s: float | None = None, one_fs: bool = True,
         limit: int | None = None, parallel: bool | None = None,
         mounts: frozenset[str] | None = None) -> TreeSize:
    """The size of `path` (see scan_iter), without progress.

    A big tree (over SPLIT_AFTER entries) is finished by this process and one forked
    helper, both taking pieces of the tree from one queue; hard links seen by both are
    counted once. `parallel=False` keeps it in one process. `mounts`: the mount points
    (`mounts.mount_points()`) when the caller has read them already.
    """
    deadline = deadline_of(budget_s)
    top, tally, stack, dev = start(path, one_fs, mounts)
    split = PARALLEL if parallel is None else parallel
    pause_at = SPLIT_AFTER if split and limit is None else None
    status = drain(walk(top, tally, stack, dev, deadline, limit, NEVER, pause_at))
    if status == "paused":
        status = finish_in_two(top, tally, stack, dev, deadline)
    return tally.result(top, status == "partial")


def scan_many(paths: Sequence[PathLike], *, budget_s: float | None = None,
              parallel: bool | None = None, mounts: frozenset[str] | None = None) -> list[TreeSize]:
    """The size of each of `paths`, in order: for each the answer `scan` gives of it alone
    (hard links once within each, its own repositories, no mount point crossed), with one
    budget for all (a tree the deadline cut short is partial).

    A sweep measures many trees, most of them small: one process reading them one after the
    other leaves the second core idle, and a fork for each would cost more than it saves.
    Here this process and one forked helper take whole trees from one queue (a tree found
    big on the way is then finished by two, as `scan` does); `parallel=False` keeps it in
    one process. The mount table is read once for all, unless `mounts` is given."""
    deadline = deadline_of(budget_s)
    known = mount_points() if mounts is None else mounts
    roots = [start(path, True, known) for path in paths]
    split = PARALLEL if parallel is None else parallel
    pause_at = SPLIT_AFTER if split else None
    if split and sum(1 for root in roots if root[2]) > 1:
        statuses = share_roots(roots, deadline, pause_at)
    else:
        statuses = [drain(walk(top, tally, stack, dev, deadline, None, NEVER, pause_at))
                    for top, tally, stack, dev in roots]
    sizes: list[TreeSize] = []
    for (top, tally, stack, dev), status in zip(roots, statuses, strict=True):
        if status == "paused":
            status = finish_in_two(top, tally, stack, dev, deadline)
        sizes.append(tally.result(top, status == "partial"))
    return sizes


def disk_bytes(path: PathLike) -> int:
    """Disk bytes of `path` (0 for a missing path)."""
    return scan(path).disk


def children(path: PathLike, *, budget_s: float | None = None) -> list[TreeSize]:
    """One TreeSize per direct child of `path`, largest disk first (the disk browser).

    The budget is shared: once it is spent, the children not yet measured come back with
    their own entry only, marked partial. A hard link shared by two children counts in both.
    A child that is a mount point (another device, or listed as one) comes back with its own
    entry only: as in `scan`, what is mounted there is not this tree's.
    """
    top = text_path(path)
    deadline = deadline_of(budget_s)
    try:
        with os.scandir(top) as it:
            names = [entry.path for entry in it]
    except OSError:
        return []
    mounts = mount_points()
    real = os.path.realpath(top)
    sizes: list[TreeSize] = []
    for child in names:
        left = None if deadline is None else deadline - time.monotonic()
        if listed_mount(real, child, mounts):
            # listed as a mount point: never looked at (a FUSE mount whose server is gone, an
            # `sshfs` to a host asleep, holds every stat of it, and the dashboard with it)
            sizes.append(Tally().result(child, False))
        elif left is not None and left <= 0:
            sizes.append(_entry_only(child))
        elif _mounted(top, child, mounts):
            sizes.append(_entry_only(child, partial=False))
        else:
            sizes.append(scan(child, budget_s=left, mounts=mounts))
    sizes.sort(key=lambda s: (-s.disk, s.path))
    return sizes


def listed_mount(real_parent: str, child: str, mounts: frozenset[str]) -> bool:
    """Whether `child` of the folder whose real path is `real_parent` is listed as a mount
    point: asked of the name alone, since a look at a dead FUSE mount waits for ever."""
    return os.path.join(real_parent, os.path.basename(child)) in mounts


def _entry_only(path: str, partial: bool = True) -> TreeSize:
    """A child the budget did not reach (partial when it is a folder), or a mount point."""
    tally = Tally()
    try:
        st = os.lstat(path)
    except OSError:
        tally.errors = 1
        return tally.result(path, False)
    tally.count(st)
    return tally.result(path, partial and _S_ISDIR(st.st_mode))


def _mounted(parent: str, child: str, mounts: frozenset[str]) -> bool:
    """Whether the folder `child` of `parent` is a mount point (not a symlink, which is itself)."""
    try:
        st = os.lstat(child)
        if not _S_ISDIR(st.st_mode):
            return False
        return st.st_dev != os.lstat(parent).st_dev or os.path.realpath(child) in mounts
    except OSError:
        return False
