"""Removing a tree fd-relative: the part of a removal that touches the file system.

Every step goes through a directory file descriptor reached from the root one `O_NOFOLLOW`
open at a time, so a parent or an entry swapped for a symlink after the removal's checks
stops it (the swapped entry is left alone) instead of following the link out of the root.
Inside a tree nothing is ever followed (a symlink is unlinked, never entered) and no other
file system is entered (a mount point is left, and counted). No file is chmodded, truncated
or written through: a hard link to a file outside the root is only unlinked (a folder of the
remover's own that it may not write is opened up first: a folder has no other link). At most
MAX_HELD folders are open at once, whatever the depth. The same walk empties a folder in
place and purges the trash (app/core/trash.py).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: what opening a folder that became a symlink (or a file) meanwhile fails with
SWAPPED = (errno.ELOOP, errno.ENOTDIR)


class Kept(Exception):
    """The removal stops and keeps the path: the guard's reason, or `journal`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Refused(Exception):
    """The removal stops: the path is not what was checked (`symlink`, `changed`, `missing`,
    `escapes_root`, `other_fs`, `outside_root`, `owner`: another user's)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Tally:
    """What a removal took: non-directories (`regular`: of them, regular files) and folders
    removed, errors, mount points left."""

    __slots__ = ("files", "regular", "folders", "errors", "other_fs", "first_error", "moved")

    def __init__(self) -> None:
        self.files = 0
        self.regular = 0
        self.folders = 0
        self.moved = 0  # folders moved up to the top (too deep to hold open)
        self.errors = 0
        self.other_fs = 0
        self.first_error: str | None = None

    def error(self, exc: OSError, where: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = f"{where}: {exc.strerror or exc}"


def open_down(fd: int, parts: list[str], *, make: bool = False, dev: int | None = None) -> int:
    """THE walk down through real folders: a new fd of the folder `parts` lead to below the
    folder `fd` (which stays the caller's), one O_NOFOLLOW open at a time, so no symlink on the
    way is ever followed. OSError when a part is a symlink (ELOOP), not a folder (ENOTDIR) or
    missing (ENOENT; `make` makes it instead); Refused("other_fs") when a folder lies on
    another device than `dev`."""
    if any(part in ("", ".", "..") for part in parts):
        raise OSError(errno.EINVAL, "not a plain relative path")
    fd = os.dup(fd)
    try:
        for part in parts:
            if make:
                with contextlib.suppress(FileExistsError):  # a folder, or a link the open refuses
                    os.mkdir(part, dir_fd=fd)
            child = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            if dev is not None and os.fstat(fd).st_dev != dev:
                raise Refused("other_fs")
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def open_parent(root_real: str, target: str, root_dev: int, root_ino: int = -1) -> Iterator[tuple[int, str]]:
    """The fd of `target`'s parent, reached from the root one O_NOFOLLOW open at a time. The
    root is opened by its path, whose own parents the kernel follows: one swapped for a
    symlink since the checks (`mv proj proj.old; ln -s other proj`) leads to another folder,
    so the root must still be the folder (`root_ino`) that was checked."""
    parts = os.path.relpath(target, root_real).split("/")
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise Refused("outside_root")
    try:
        root = os.open(root_real, DIR_FLAGS)
    except OSError as exc:
        raise Refused("missing" if exc.errno == errno.ENOENT else "escapes_root") from None
    try:
        now = os.fstat(root)
        if now.st_dev != root_dev:
            raise Refused("other_fs")
        if root_ino not in (-1, now.st_ino):
            raise Refused("escapes_root")
        try:
            fd = open_down(root, parts[:-1], dev=root_dev)
        except Refused:
            raise
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise Refused("missing") from None
            if exc.errno in SWAPPED:
                raise Refused("escapes_root") from None
            raise
    finally:
        os.close(root)
    try:
        yield fd, parts[-1]
    finally:
        os.close(fd)


def count_at_least(dir_fd: int, wanted: int) -> bool:
    """Whether the tree open as `dir_fd` holds at least `wanted` entries (stops early)."""
    count = 0
    pending = [os.dup(dir_fd)]
    try:
        while pending:
            fd = pending.pop()
            try:
                with os.scandir(fd) as it:
                    for entry in it:
                        count += 1
                        if count >= wanted:
                            return True
                        if entry.is_dir(follow_symlinks=False):
                            with contextlib.suppress(OSError):
                                pending.append(os.open(entry.name, DIR_FLAGS, dir_fd=fd))
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        for fd in pending:
            os.close(fd)
    return False


def empty_dir(top_fd: int, dev: int, tally: Tally) -> None:
    """Remove everything inside the folder open as `top_fd`, fd-relative, never following
    a symlink, never entering another file system (a mount point is left, and counted).
    Depth first with an explicit stack of open folders: no recursion limit, one fd a level,
    at most MAX_HELD levels (or as many as the process may open): a folder met deeper is
    first moved up into the top folder (`_hoist`) and emptied from there, so a tree deeper
    than PATH_MAX, or than a low RLIMIT_NOFILE allows, is still removed whole. A folder of
    millions of entries is listed LIST_CHUNK at a time (each entry listed costs ~150 bytes
    until it is taken), again while a chunk takes something."""
    with contextlib.suppress(OSError):
        _let_in(top_fd, os.fstat(top_fd))
    frames = [_top_frame(top_fd, tally)]
    hoisted: list[str] = []
    while frames:
        fd, entries, name, mark = frames[-1]
        if entries:
            entry = entries.pop()
            try:
                child = _take(fd, entry, dev, tally)
                if child is not None:
                    frames.append(_frame(child, entry.name, tally, held=len(frames)))
            except _NoDescriptor as exc:
                if len(frames) > 1:
                    hoisted.extend(_hoist(fd, entry.name, top_fd, tally))
                else:  # the top's own child: moving it up would put it where it is
                    tally.error(exc, entry.name)
        elif mark >= 0 and _progress(tally) > mark:  # a big folder: its next chunk
            frames[-1] = _top_frame(fd, tally, name)
        elif len(frames) > 1:
            frames.pop()
            os.close(fd)
            tally.folders += _removed(os.rmdir, name, frames[-1][0], tally)
        elif hoisted:
            moved = hoisted.pop()
            try:
                child = _open_child(top_fd, moved, dev, tally)
                if child is not None:
                    frames.append(_frame(child, moved, tally, held=1))
            except _NoDescriptor as exc:
                tally.error(exc, moved)
        else:
            return


#: Folders held open at once while a tree is emptied (a deeper one is moved up first).
MAX_HELD = 64
#: Entries of one folder listed at once (~10 MB); the rest is listed once these are taken.
LIST_CHUNK = 65_536
_OUT_OF_FDS = (errno.EMFILE, errno.ENFILE)
#: An open folder being emptied: its fd, its entries listed and not taken yet, its name in
#: its parent, and (when only a chunk of it was listed) the progress made before that listing,
#: else -1.
_Frame = tuple[int, list[os.DirEntry[str]], str, int]


def _progress(tally: Tally) -> int:
    return tally.files + tally.folders + tally.moved


def _chunk(fd: int, name: str, tally: Tally) -> _Frame:
    """The folder open as `fd` with its first LIST_CHUNK entries (a closed listing of an fd
    starts again from the top: what was taken is gone from it). Raises OSError."""
    with os.scandir(fd) as it:
        entries = list(itertools.islice(it, LIST_CHUNK))
    return fd, entries, name, _progress(tally) if len(entries) == LIST_CHUNK else -1


def _top_frame(fd: int, tally: Tally, name: str = "") -> _Frame:
    """`_chunk`, with a folder that cannot be listed counted and left with no entries."""
    try:
        return _chunk(fd, name, tally)
    except OSError as exc:
        tally.error(exc, "list")
        return fd, [], name, -1


class _NoDescriptor(OSError):
    """A folder that cannot be held open now: too deep (MAX_HELD), or no descriptor left."""


def _frame(child: int, name: str, tally: Tally, held: int) -> _Frame:
    """The open folder `child` with its entries, to empty next; raises _NoDescriptor (closing
    it) when `held` folders are open already, or when listing it finds no descriptor left."""
    try:
        if held >= MAX_HELD:
            raise _NoDescriptor(errno.EMFILE, "too deep to hold open")
        return _chunk(child, name, tally)
    except OSError as exc:
        if not isinstance(exc, _NoDescriptor) and exc.errno not in _OUT_OF_FDS:
            tally.error(exc, "list")
            return child, [], name, -1
        os.close(child)
        raise _NoDescriptor(exc.errno, exc.strerror) from None


def _hoist(fd: int, name: str, top_fd: int, tally: Tally) -> list[str]:
    """Move the folder `name` of the folder `fd` up into the top folder of the removal (one
    rename within the tree being removed, under a new name there), to be emptied from there
    once the folders above it are closed. The new name, or none when it could not move."""
    new = f".claudetto-deep-{os.getpid()}-{os.urandom(6).hex()}"
    try:
        os.rename(name, new, src_dir_fd=fd, dst_dir_fd=top_fd)
    except OSError as exc:
        tally.error(exc, name)
        return []
    tally.moved += 1
    return [new]


def _open_child(fd: int, name: str, dev: int, tally: Tally) -> int | None:
    """The folder `name` of the folder `fd`, opened to be emptied: None when it is gone, on
    another file system or cannot be opened (counted); _NoDescriptor when no fd is left."""
    try:
        child = open_to_empty(fd, name, dev)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in SWAPPED:  # a symlink now: unlink the link itself, follow nothing
            tally.files += _removed(os.unlink, name, fd, tally)
        elif exc.errno in _OUT_OF_FDS:
            raise _NoDescriptor(exc.errno, exc.strerror) from None
        else:
            tally.error(exc, name)
        return None
    try:
        st = os.fstat(child)
        if st.st_dev == dev:
            _let_in(child, st)
            return child
        tally.other_fs += 1
    except OSError as exc:
        tally.error(exc, name)
    os.close(child)
    return None


def open_to_empty(fd: int, name: str, dev: int) -> int:
    """The folder `name` of the folder `fd` opened (O_NOFOLLOW), to be emptied. One of the
    remover's own that it may not read (mode 000, for a user who is not root) is first given
    u+rwx through an O_PATH handle of it, never through its name (a symlink swapped in would
    be followed): it goes anyway, and otherwise it would stay in the trash for ever."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except PermissionError:
        if not _unlock(fd, name, dev):
            raise
    return os.open(name, DIR_FLAGS, dir_fd=fd)


def _unlock(fd: int, name: str, dev: int) -> bool:
    o_path = getattr(os, "O_PATH", 0)
    if not o_path or not os.path.isdir("/proc/self/fd"):
        return False
    try:
        handle = os.open(name, o_path | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    except OSError:
        return False
    try:
        st = os.fstat(handle)
        if st.st_dev != dev or st.st_uid != os.geteuid():
            return False
        os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(st.st_mode) | 0o700)
        return True
    except OSError:
        return False
    finally:
        os.close(handle)


def _let_in(fd: int, st: os.stat_result) -> None:
    """A folder of the remover's own that it may not write (0555: a Go module cache) gets
    u+rwx, or none of its entries could be unlinked. A folder only: a file may be a hard link
    to one outside the tree, and is never chmod-ed (nor does unlinking it need that)."""
    if st.st_mode & 0o700 != 0o700 and st.st_uid == os.geteuid():
        with contextlib.suppress(OSError):
            os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)


def _take(fd: int, entry: os.DirEntry[str], dev: int, tally: Tally) -> int | None:
    """Unlink one entry of the folder `fd`; for a folder, its fd to empty first (see
    `_open_child`)."""
    name = entry.name
    try:
        is_dir = entry.is_dir(follow_symlinks=False)
    except OSError:
        is_dir = False
    if not is_dir:
        try:
            regular = entry.is_file(follow_symlinks=False)
            os.unlink(name, dir_fd=fd)
            tally.files += 1
            tally.regular += regular
            return None
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            pass  # it became a folder since the listing: treat it as one
        except OSError as exc:
            tally.error(exc, name)
            return None
    return _open_child(fd, name, dev, tally)


def _removed(remove: Callable[..., None], name: str, fd: int, tally: Tally) -> bool:
    """`remove(name, dir_fd=fd)` (os.unlink or os.rmdir): True when it went. Gone already is
    no error; any other failure is counted, and the walk goes on."""
    try:
        remove(name, dir_fd=fd)
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        tally.error(exc, name)
        return False
