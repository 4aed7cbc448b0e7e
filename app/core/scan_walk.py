"""One reader's walk of a tree: folders from a stack, each opened once, its entries stat-ed
relative to it and counted into a `Tally`.

Each folder is opened once (`O_NOFOLLOW`: a folder swapped for a symlink is an error, not
followed) and its entries are stat-ed relative to it: the kernel then looks up one name, not
the whole path again, for each entry (~10% of a scan's system time). Every entry costs one
stat call, which is most of a scan: the Python around it is kept to a few operations per
entry (`tally_names`), and the clock, the limit and the progress are looked at between
chunks of names, not after each entry.

The same loop notes the git repositories (a folder holding a `.git` entry, or a bare
repository: `HEAD` beside `objects/` and `refs/`) and the working copies of other version
control systems (app/core/other_vcs.py), so a sweep about to remove a tree never walks it a
second time to find them.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Generator, Iterable

from app.core import other_vcs
from app.core.scan_tally import PathLike, ScanProgress, Tally, entry_id, text_path

_S_ISDIR = stat.S_ISDIR
_S_IFMT, _S_IFREG = 0o170000, stat.S_IFREG
BUDGET_CHECK = 512  # entries between two looks at the clock
# A folder whose own size says it holds more than ~10,000 entries (ext4 and tmpfs alike) is
# listed a chunk at a time: its names at once would cost ~100 bytes each. Smaller ones are
# listed whole, which is cheaper per entry.
BIG_FOLDER = 256 * 1024
DIR_FLAGS = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
NEVER = 1 << 62  # a progress cadence that never comes
LONG_STEP = 1000  # characters of a path past PATH_MAX opened at a time (4 bytes each at most: < 4,096)

_GIT = ".git"
_HEAD = "HEAD"
_FOSSIL = tuple(sorted(other_vcs.FILE_MARKS))  # Fossil's checkout database: another system's working copy
_FILE_MARKS = frozenset({_GIT, _HEAD, *_FOSSIL})  # and a `.git` file (a linked worktree), a bare repo's HEAD
_OTHER_DIRS = other_vcs.DIR_MARKS


def start(path: PathLike, one_fs: bool,
          mounts: frozenset[str] | None = None) -> tuple[str, Tally, list[str], int | None]:
    """The top entry counted; the stack of folders still to read (empty for a non-folder);
    the device the walk stays on (None: any).

    `mounts` (real paths of every mount point) is read here when not given."""
    top = text_path(path)
    tally = Tally()
    try:
        st = os.lstat(top)
    except OSError:
        tally.errors = 1
        return top, tally, [], None
    tally.count(st)
    tally.top = entry_id(top, st)
    if not _S_ISDIR(st.st_mode):
        return top, tally, [], None
    if st.st_size > BIG_FOLDER:
        tally.big.add(top)
    tally.walked = top.rstrip("/")
    tally.real = os.path.realpath(top).rstrip("/")
    if one_fs:
        tally.skip = _mounts_inside(tally, mount_points() if mounts is None else mounts)
    return top, tally, [top], st.st_dev if one_fs else None


def mount_points() -> frozenset[str]:
    from app.core import mounts

    return mounts.mount_points()


def _mounts_inside(tally: Tally, mounts: frozenset[str]) -> frozenset[str]:
    """The mount points strictly below the top, spelled the way the walk will meet them."""
    prefix = tally.real + "/"
    cut = len(tally.real)
    return frozenset(tally.walked + m[cut:] for m in mounts if m.startswith(prefix))


def walk(top: str, tally: Tally, stack: list[str], dev: int | None, deadline: float | None,
         limit: int | None, every: int, pause_at: int | None = None, *,
         spread: int | None = None,
         refill: Callable[[list[str]], bool] | None = None) -> Generator[ScanProgress, None, str]:
    """Read the folders on `stack` (and below), depth first. Returns "done", "partial"
    (budget or limit reached) or "paused" (between folders, once `pause_at` entries are
    counted, or once a quarter as many folders wait on the stack: each costs an open and a
    listing whatever it holds, so a wide tree like a node_modules shows it is big before
    its entries do, and the second reader starts that much sooner).

    `spread`: read the shallowest folder first (breadth first) and pause as soon as that many
    folders wait on the stack (pieces for two readers). `refill`: called with the empty
    stack; puts the next piece on it, or returns False when there is none. A scan stopped
    between two yields (its generator closed) leaves the tally with what was counted."""
    every = max(1, every)
    done = tally.files + tally.folders
    step = min(BUDGET_CHECK, every) if limit is None else max(1, min(BUDGET_CHECK, every, limit))
    next_yield, next_check = done + every, done + step
    # The folder read last stays open: depth first, the next folder is mostly its child, and
    # past PATH_MAX a child opened from it costs one open, not a walk down from the top (which
    # made a tree thousands of folders deep quadratic, and its measure took the whole budget).
    held: list[tuple[str, int]] = []
    try:
        while True:
            if not stack and (refill is None or not refill(stack)):
                return "done"
            if _pause_here(tally, stack, pause_at, spread):
                return "paused"
            folder = stack.pop() if spread is None else stack.pop(0)
            fd = _open_folder(top, folder, held)
            if fd < 0:
                tally.errors += 1
                continue
            if len(folder) >= LONG_PATH and _over(deadline, None, 0):  # reached the long way: look now
                os.close(fd)
                return "partial"
            if held:
                os.close(held.pop()[1])
            held.append((folder, fd))
            try:
                for chunk in _listing(fd, folder, tally, step):
                    tally_names(tally, fd, folder, chunk, stack, dev)
                    done = tally.files + tally.folders
                    if done >= next_check:
                        next_check = done + step
                        if _over(deadline, limit, done):
                            return "partial"
                    if done >= next_yield:  # on the cadence of `every`, whatever the chunks
                        next_yield += every * ((done - next_yield) // every + 1)
                        yield ScanProgress(top, tally.files, tally.folders, tally.blocks * 512)
            except OSError:  # the folder could not be listed, or not to its end: the rest is lost
                tally.errors += 1
    finally:
        for _, open_fd in held:
            os.close(open_fd)


def _pause_here(tally: Tally, stack: list[str], pause_at: int | None, spread: int | None) -> bool:
    if pause_at is not None and (tally.files + tally.folders >= pause_at or len(stack) >= pause_at // 4):
        return True
    return spread is not None and len(stack) >= spread


#: A path this long may have been opened the long way (`open_long`): the clock is looked at
#: after each such open, not only every BUDGET_CHECK entries.
LONG_PATH = 4096


def _open_folder(top: str, folder: str, held: list[tuple[str, int]]) -> int:
    """`folder` opened: by its path; past PATH_MAX from the folder read last when it is the
    parent (as `open_long` would, one name further), else from the top down; -1 when it
    cannot be."""
    try:
        return os.open(folder, DIR_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG and held and os.path.dirname(folder) == held[0][0]:
            try:
                return os.open(os.path.basename(folder), DIR_FLAGS, dir_fd=held[0][1])
            except OSError:
                return -1
        return open_long(top, folder, exc)


def open_long(top: str, folder: str, failed: OSError) -> int:
    """A folder whose path is longer than the system takes (`failed` says ENAMETOOLONG: a
    tree thousands of folders deep), opened from the top down, a part of its path shorter
    than LONG_STEP at a time, each as the whole path would be opened; -1 when it cannot be."""
    if failed.errno != errno.ENAMETOOLONG:
        return -1
    base = top.rstrip("/") or "/"
    try:
        fd = os.open(base, DIR_FLAGS)
    except OSError:
        return -1
    try:
        for part in _parts(folder[len(base):].strip("/")):
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except OSError:
        os.close(fd)
        return -1
    return fd


def _parts(rest: str) -> Iterable[str]:
    """`rest` cut at slashes into relative paths of at most LONG_STEP characters each."""
    while len(rest) > LONG_STEP:
        cut = rest.rfind("/", 0, LONG_STEP)
        if cut <= 0:
            cut = rest.index("/") if "/" in rest else len(rest)  # one long name: alone
        yield rest[:cut]
        rest = rest[cut + 1:]
    if rest:
        yield rest


def _over(deadline: float | None, limit: int | None, done: int) -> bool:
    return (deadline is not None and time.monotonic() >= deadline) or (limit is not None and done >= limit)


def _listing(fd: int, folder: str, tally: Tally, step: int) -> Iterable[list[str]]:
    """The names of the open folder in chunks of at most `step`: a big folder is read a chunk
    at a time, a small one whole (one chunk, mostly). Raises OSError when it cannot be read."""
    if tally.big and folder in tally.big:
        return _chunked(fd, step)
    names = os.listdir(fd)
    if len(names) <= step:
        return (names,)
    return [names[i:i + step] for i in range(0, len(names), step)]


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


def tally_names(tally: Tally, fd: int, folder: str, names: list[str], stack: list[str],
                dev: int | None) -> None:
    """Count the entries `names` of the open folder `fd`; push its subfolders on `stack`.

    The hot loop of every scan: one stat call per entry, then as few operations as will do.
    A subfolder on another device (`dev`), or one the kernel lists as a mount point (a bind
    mount keeps its parent's device), is not this tree's: neither counted nor read."""
    prefix = folder if folder.endswith("/") else folder + "/"
    # one look per folder, not one per entry
    marked = _GIT in names or _HEAD in names or _FOSSIL[0] in names or _FOSSIL[1] in names
    lstat, is_dir, skip, big, repos = os.lstat, _S_ISDIR, tally.skip, tally.big, tally.repos
    files = others = folders = apparent = blocks = errors = 0
    for name in names:
        if skip and prefix + name in skip:
            continue  # a mount point: not ours, and never looked at (a hung FUSE mount would hold the stat)
        try:
            est = lstat(name, dir_fd=fd)
        except OSError:
            errors += 1
            continue
        if is_dir(est.st_mode):
            if dev is not None and est.st_dev != dev:
                continue  # another file system mounted here: not ours to count
            path = prefix + name
            folders += 1
            stack.append(path)
            if est.st_size > BIG_FOLDER:
                big.add(path)
            if name == _GIT or name in _OTHER_DIRS:
                repos.append(folder)
        else:
            files += 1
            if est.st_mode & _S_IFMT != _S_IFREG:
                others += 1  # a symlink, FIFO, socket or device: no regular file
            if marked and name in _FILE_MARKS:
                _note_repo(folder, fd, name, repos)
            if est.st_nlink > 1 and not tally.first_link(est):
                continue  # a hard link met before: its blocks count once
        apparent += est.st_size
        blocks += est.st_blocks
    tally.add(apparent, blocks, files, folders, errors, others)


def _note_repo(folder: str, fd: int, name: str, repos: list[str]) -> None:
    """A `.git` file marks a linked worktree or a submodule, a Fossil checkout database a
    working copy of Fossil; a `HEAD` file beside `objects/` and `refs/` a bare repository (a
    `.git` folder itself is its holder's, not one more).
    Looked at relative to the open folder `fd`: a path past PATH_MAX still shows them."""
    if name != _HEAD or (os.path.basename(folder) != _GIT and _is_dir(fd, "objects") and _is_dir(fd, "refs")):
        repos.append(folder)


def _is_dir(fd: int, name: str) -> bool:
    try:
        return _S_ISDIR(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def drain(gen: Generator[ScanProgress, None, str]) -> str:
    """Run a walk to its end without looking at its progress; its status."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            status: str = stop.value
            return status


def deadline_of(budget_s: float | None) -> float | None:
    return None if budget_s is None else time.monotonic() + max(0.0, budget_s)
