"""THE size of a tree (CONTRACT "Size"): disk bytes (`st_blocks` x 512), hard links once,
symlinks never followed, one file system.

Every sweep, release, report and the disk browser measure through here. A scan counts an
entry that vanishes or cannot be read as an error and goes on; it yields progress so the
TUI can draw a bar and cancel (close the generator), and it can stop at a time budget with
a partial answer marked `partial`.

One file system means no mount point is crossed: a folder on another device is skipped, and
so is a folder the kernel lists as a mount point (`mounts.mount_points()`, read once per
scan), because a bind mount of the same file system has its parent's device.

The same walk notes the git repositories inside (`TreeSize.repos`): a folder holding a
`.git` entry, or a bare repository (`HEAD`, `objects/`, `refs/`). A sweep about to remove a
tree asks `unique_work` about them without walking the tree a second time.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
import stat
import time
from collections.abc import Callable, Generator, Iterable
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
    # real paths of the folders inside holding a `.git` entry and of the bare repositories
    # inside (the top included), sorted; complete only when not partial
    repos: tuple[str, ...] = ()

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


_GIT = ".git"
_FILE_MARKS = frozenset({_GIT, "HEAD"})  # a `.git` file (a linked worktree) or a bare repo's HEAD


class _Tally:
    """The running totals of one scan (a plain object: attribute access is cheap)."""

    __slots__ = ("apparent", "blocks", "files", "folders", "errors", "seen", "new_links",
                 "repos", "skip", "walked", "real", "big")

    def __init__(self) -> None:
        self.apparent = 0
        self.blocks = 0
        self.files = 0
        self.folders = 0
        self.errors = 0
        self.seen: set[tuple[int, int]] = set()  # hard-linked files already counted
        self.new_links: list[tuple[int, int, int, int]] | None = None  # set in a forked half
        self.repos: list[str] = []  # folders holding a repository, spelled as walked
        self.skip: frozenset[str] = frozenset()  # mount points inside, spelled as walked
        self.big: set[str] = set()  # folders listed a chunk at a time (see _BIG_FOLDER)
        self.walked = ""  # the top as the walk spells it, without a trailing slash
        self.real = ""  # the top's real path, without a trailing slash

    def result(self, path: str, partial: bool) -> TreeSize:
        return TreeSize(path, self.apparent, self.blocks * 512, self.files, self.folders,
                        self.errors, partial, self._real_repos())

    def _real_repos(self) -> tuple[str, ...]:
        """The repositories as real paths: the walk never follows a symlink, so a folder's
        real path is the top's real path plus the rest of the walked spelling."""
        if not self.repos:
            return ()
        cut = len(self.walked)
        return tuple(sorted({(self.real + p[cut:]).rstrip("/") or "/" for p in self.repos}))


def _start(path: PathLike, one_fs: bool,
           mounts: frozenset[str] | None = None) -> tuple[str, _Tally, list[str], int | None]:
    """The top entry counted; the stack of folders still to read (empty for a non-folder).

    `mounts` (real paths of every mount point) is read here when not given."""
    top = text_path(path)
    tally = _Tally()
    try:
        st = os.lstat(top)
    except OSError:
        tally.errors = 1
        return top, tally, [], None
    _count(tally, st)
    if not _S_ISDIR(st.st_mode):
        return top, tally, [], None
    if st.st_size > _BIG_FOLDER:
        tally.big.add(top)
    tally.walked = top.rstrip("/")
    tally.real = os.path.realpath(top).rstrip("/")
    if one_fs:
        tally.skip = _mounts_inside(tally, _mount_points() if mounts is None else mounts)
    return top, tally, [top], st.st_dev if one_fs else None


def _mount_points() -> frozenset[str]:
    from app.core import mounts

    return mounts.mount_points()


def _mounts_inside(tally: _Tally, mounts: frozenset[str]) -> frozenset[str]:
    """The mount points strictly below the top, spelled the way the walk will meet them."""
    prefix = tally.real + "/"
    cut = len(tally.real)
    return frozenset(tally.walked + m[cut:] for m in mounts if m.startswith(prefix))


# A folder whose own size says it holds more than ~10,000 entries (ext4 and tmpfs alike) is
# listed a chunk at a time: its names at once would cost ~100 bytes each. Smaller ones are
# listed whole, which is cheaper per entry.
_BIG_FOLDER = 256 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_NEVER = 1 << 62


def _walk(top: str, tally: _Tally, stack: list[str], dev: int | None, deadline: float | None,
          limit: int | None, every: int, pause_at: int | None = None, *,
          spread: int | None = None,
          refill: Callable[[list[str]], bool] | None = None) -> Generator[ScanProgress, None, str]:
    """Read the folders on `stack` (and below), depth first. Returns "done", "partial"
    (budget or limit reached) or "paused" (`pause_at` entries counted, between folders).

    `spread`: read the shallowest folder first (breadth first) and pause as soon as that many
    folders wait on the stack (pieces for two readers). `refill`: called with the empty
    stack; puts the next piece on it, or returns False when there is none.

    Each folder is opened once (`O_NOFOLLOW`: a folder swapped for a symlink is an error, not
    followed) and its entries are stat-ed relative to it: the kernel then looks up one name,
    not the whole path again, for each entry (~10% of a scan's system time). The totals are
    kept in locals and written back to `tally` when the walk returns or yields."""
    every = max(1, every)
    files, folders, apparent, blocks, errors = (tally.files, tally.folders, tally.apparent,
                                                tally.blocks, tally.errors)
    done = files + folders
    next_yield = done + every
    step = min(_BUDGET_CHECK, every) if limit is None else max(1, min(_BUDGET_CHECK, every, limit))
    next_check = done + step
    next_event = min(next_yield, next_check)
    seen = tally.seen
    new_links = tally.new_links
    repos = tally.repos
    skip = tally.skip
    big = tally.big
    marks = _FILE_MARKS
    os_open, close, listdir, lstat, is_dir = os.open, os.close, os.listdir, os.lstat, _S_ISDIR
    try:
        while True:
            if not stack and (refill is None or not refill(stack)):
                return "done"
            if pause_at is not None and files + folders >= pause_at:
                return "paused"
            if spread is not None:
                if len(stack) >= spread:
                    return "paused"
                folder = stack.pop(0)
            else:
                folder = stack.pop()
            try:
                fd = os_open(folder, _DIR_FLAGS)
            except OSError:
                errors += 1
                continue
            try:
                prefix = folder if folder.endswith("/") else folder + "/"
                # the clock, the limit and the progress are looked at between chunks, not
                # after each entry: most folders are one chunk
                if big and folder in big:
                    chunks: Iterable[list[str]] = _chunked(fd, step)
                else:
                    try:
                        names = listdir(fd)
                    except OSError:
                        errors += 1
                        continue
                    chunks = (names,) if len(names) <= step else [
                        names[i:i + step] for i in range(0, len(names), step)]
                try:
                    for chunk in chunks:
                        for name in chunk:
                            try:
                                est = lstat(name, dir_fd=fd)
                            except OSError:
                                errors += 1
                                continue
                            if is_dir(est.st_mode):
                                if dev is not None and est.st_dev != dev:
                                    continue  # another file system mounted here: not ours to count
                                path = prefix + name
                                if skip and path in skip:
                                    continue  # a mount point (a bind mount keeps the device): not ours
                                folders += 1
                                apparent += est.st_size
                                blocks += est.st_blocks
                                stack.append(path)
                                if est.st_size > _BIG_FOLDER:
                                    big.add(path)
                                if name == _GIT:
                                    repos.append(folder)
                            else:
                                if name in marks:
                                    _note_repo(folder, name, repos)
                                files += 1
                                if est.st_nlink > 1:
                                    key = (est.st_dev, est.st_ino)
                                    if key in seen:
                                        continue
                                    seen.add(key)
                                    if new_links is not None:
                                        new_links.append((est.st_dev, est.st_ino, est.st_size,
                                                          est.st_blocks))
                                apparent += est.st_size
                                blocks += est.st_blocks
                        done = files + folders
                        if done >= next_event:
                            if done >= next_check:
                                next_check = done + step
                                if (deadline is not None and time.monotonic() >= deadline) or (
                                        limit is not None and done >= limit):
                                    return "partial"
                            if done >= next_yield:  # on the cadence of `every`, whatever the chunks
                                next_yield += every * ((done - next_yield) // every + 1)
                                yield ScanProgress(top, files, folders, blocks * 512)
                            next_event = min(next_yield, next_check)
                except OSError:  # listing a big folder failed midway: the rest of it is lost
                    errors += 1
            finally:
                close(fd)
    finally:
        tally.files, tally.folders, tally.apparent, tally.blocks, tally.errors = (
            files, folders, apparent, blocks, errors)


def _chunked(fd: int, step: int) -> Generator[list[str], None, None]:
    """The names in the folder `fd`, `step` at a time. An error while listing counts as the
    end of the folder and is raised as OSError after the names read before it."""
    with os.scandir(fd) as it:
        chunk: list[str] = []
        for entry in it:
            chunk.append(entry.name)
            if len(chunk) >= step:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def _note_repo(folder: str, name: str, repos: list[str]) -> None:
    """A `.git` file marks a linked worktree or a submodule; a `HEAD` file beside `objects/`
    and `refs/` a bare repository (a `.git` folder itself is its holder's, not one more)."""
    if name == _GIT or (os.path.basename(folder) != _GIT and _is_dir(folder + "/objects")
                        and _is_dir(folder + "/refs")):
        repos.append(folder)


def _is_dir(path: str) -> bool:
    try:
        return _S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _drain(gen: Generator[ScanProgress, None, str]) -> str:
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            status: str = stop.value
            return status


def _deadline(budget_s: float | None) -> float | None:
    return None if budget_s is None else time.monotonic() + max(0.0, budget_s)


def scan_iter(path: PathLike, *, budget_s: float | None = None, one_fs: bool = True,
              every: int = 2000, limit: int | None = None) -> Generator[ScanProgress, None, TreeSize]:
    """Measure `path`, yielding a ScanProgress every `every` entries; returns the TreeSize.

    Stop iterating (or `.close()`) to cancel. `budget_s` stops the scan after that many
    seconds with `partial=True`; so does `limit` after that many entries (a cheap "is this
    tree big?" probe). A symlink counts as itself; a path that is a file is one file.
    """
    deadline = _deadline(budget_s)
    top, tally, stack, dev = _start(path, one_fs)
    status = yield from _walk(top, tally, stack, dev, deadline, limit, every)
    return tally.result(top, status == "partial")


def _count(tally: _Tally, st: os.stat_result) -> None:
    if _S_ISDIR(st.st_mode):
        tally.folders += 1
    else:
        tally.files += 1
        if st.st_nlink > 1:
            tally.seen.add((st.st_dev, st.st_ino))
    tally.apparent += st.st_size
    tally.blocks += st.st_blocks


# A tree bigger than this is finished by two processes: reading a tree is mostly system
# calls, and on 2 cores two readers beat one by ~1.8x (threads do not: the GIL). A fork
# costs ~1 ms; this many entries take ~15 ms to read.
SPLIT_AFTER = 5_000
PARALLEL = hasattr(os, "fork") and (os.cpu_count() or 1) > 1
# The folders still to read are cut into pieces that both readers take from one queue, the
# shallowest (likely the biggest) first, so that neither waits for the other at the end.
PIECES = 64  # at least this many pieces, when the tree has them
MAX_PIECES = 2_048  # the queue (4 bytes a piece) is written before anyone reads it: 8 KiB fits
# the smallest pipe buffer among the systems claudetto runs on (16 KiB on macOS, 64 KiB on Linux)


def scan(path: PathLike, *, budget_s: float | None = None, one_fs: bool = True,
         limit: int | None = None, parallel: bool | None = None,
         mounts: frozenset[str] | None = None) -> TreeSize:
    """The size of `path` (see scan_iter), without progress.

    A big tree (over SPLIT_AFTER entries) is finished by this process and one forked
    helper, both taking pieces of the tree from one queue; hard links seen by both are
    counted once. `parallel=False` keeps it in one process. `mounts`: the mount points
    (`mounts.mount_points()`) when the caller has read them already.
    """
    deadline = _deadline(budget_s)
    top, tally, stack, dev = _start(path, one_fs, mounts)
    split = PARALLEL if parallel is None else parallel
    pause_at = SPLIT_AFTER if split and limit is None else None
    status = _drain(_walk(top, tally, stack, dev, deadline, limit, _NEVER, pause_at))
    if status == "paused":
        status = _finish_in_two(top, tally, stack, dev, deadline)
    return tally.result(top, status == "partial")


def _finish_in_two(top: str, tally: _Tally, stack: list[str], dev: int | None,
                   deadline: float | None) -> str:
    """Read the rest of the tree with a forked helper, both taking pieces from one queue.

    The queue is a pipe holding each piece's number (4 bytes), written before the fork: a
    read of 4 bytes from a pipe is never split, so each piece goes to exactly one reader.
    The helper inherits everything it needs and only reads the tree, counts and writes its
    totals (no import, no lock, the garbage collector off), so a fork from a process with
    other threads (the dashboard's workers, the cleanup's helper) is safe; it leaves with
    `os._exit`. A helper that dies is replaced by this process reading its pieces again."""
    if len(stack) < PIECES:  # too few pieces to share well: read the shallowest ones first
        status = _drain(_walk(top, tally, stack, dev, deadline, None, _NEVER, spread=PIECES))
        if status != "paused":
            return status
    if len(stack) < 2:
        return _drain(_walk(top, tally, stack, dev, deadline, None, _NEVER))
    per = -(-len(stack) // MAX_PIECES)
    pieces = [stack[i:i + per] for i in range(0, len(stack), per)]
    stack.clear()
    try:
        queue_r, queue_w = os.pipe()
    except OSError:
        return _read_pieces(top, tally, pieces, range(len(pieces)), dev, deadline)
    try:
        try:
            _write_all(queue_w, b"".join(i.to_bytes(4, "little") for i in range(len(pieces))))
        finally:
            os.close(queue_w)
        read_fd, write_fd = os.pipe()
    except OSError:
        os.close(queue_r)
        return _read_pieces(top, tally, pieces, range(len(pieces)), dev, deadline)
    mine: list[int] = []

    def take(into: list[str], taken: list[int] | None) -> bool:
        try:
            got = os.read(queue_r, 4)
        except OSError:
            return False
        if len(got) != 4:
            return False
        index = int.from_bytes(got, "little")
        if taken is not None:
            taken.append(index)
        into.extend(reversed(pieces[index]))  # the piece's first folder is read first
        return True

    gc_was_on = gc.isenabled()
    gc.disable()  # off from the fork on in the helper: no finalizer of the parent's objects runs there
    try:
        pid = os.fork()
    except OSError:
        if gc_was_on:
            gc.enable()
        os.close(read_fd)
        os.close(write_fd)
        status = _drain(_walk(top, tally, stack, dev, deadline, None, _NEVER,
                              refill=lambda into: take(into, None)))
        os.close(queue_r)
        return status
    if pid == 0:  # the helper: count its pieces, send the totals, leave without cleanup
        code = 1
        try:
            os.close(read_fd)
            half = _Tally()
            half.seen = tally.seen  # the links counted before the fork stay counted
            half.new_links = []
            half.skip = tally.skip
            half.big = tally.big
            status = _drain(_walk(top, half, [], dev, deadline, None, _NEVER,
                                  refill=lambda into: take(into, None)))
            _write_all(write_fd, marshal.dumps((half.apparent, half.blocks, half.files, half.folders,
                                                half.errors, status, half.new_links, half.repos)))
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    if gc_was_on:
        gc.enable()
    tally.new_links = None
    try:
        status = _drain(_walk(top, tally, stack, dev, deadline, None, _NEVER,
                              refill=lambda into: take(into, mine)))
        chunks = []
        while True:
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        os.close(queue_r)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    try:
        apparent, blocks, files, folders, errors, their_status, links, repos = marshal.loads(
            b"".join(chunks))
    except (ValueError, EOFError, TypeError):  # the helper died: read what it took here
        theirs = sorted(set(range(len(pieces))) - set(mine))
        their_status = _read_pieces(top, tally, pieces, theirs, dev, deadline)
        return "partial" if "partial" in (status, their_status) else "done"
    tally.apparent += apparent
    tally.blocks += blocks
    tally.files += files
    tally.folders += folders
    tally.errors += errors
    tally.repos.extend(repos)
    for link_dev, link_ino, size, link_blocks in links:
        key = (link_dev, link_ino)
        if key in tally.seen:  # both readers counted this inode: once is enough
            tally.apparent -= size
            tally.blocks -= link_blocks
        else:
            tally.seen.add(key)
    return "partial" if "partial" in (status, their_status) else "done"


def _read_pieces(top: str, tally: _Tally, pieces: list[list[str]], which: Iterable[int],
                 dev: int | None, deadline: float | None) -> str:
    """Read the given pieces in this process."""
    stack = [folder for i in which for folder in pieces[i]]
    return _drain(_walk(top, tally, stack, dev, deadline, None, _NEVER))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


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
    deadline = None if budget_s is None else time.monotonic() + max(0.0, budget_s)
    try:
        with os.scandir(top) as it:
            names = [entry.path for entry in it]
    except OSError:
        return []
    mounts = _mount_points()
    sizes: list[TreeSize] = []
    for child in names:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            sizes.append(_entry_only(child))
        elif _mounted(top, child, mounts):
            sizes.append(_entry_only(child, partial=False))
        else:
            sizes.append(scan(child, budget_s=left, mounts=mounts))
    sizes.sort(key=lambda s: (-s.disk, s.path))
    return sizes


def _entry_only(path: str, partial: bool = True) -> TreeSize:
    """A child the budget did not reach (partial when it is a folder), or a mount point."""
    tally = _Tally()
    try:
        st = os.lstat(path)
    except OSError:
        tally.errors = 1
        return tally.result(path, False)
    _count(tally, st)
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
