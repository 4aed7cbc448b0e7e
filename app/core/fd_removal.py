"""Removing a tree fd-relative: the part of a removal that touches the file system.

Every step goes through a directory file descriptor reached from the root one `O_NOFOLLOW`
open at a time, so a parent or an entry swapped for a symlink after the removal's checks
stops it (the swapped entry is left alone) instead of following the link out of the root.
Inside a tree nothing is ever followed (a symlink is unlinked, never entered) and no other
file system is entered (a mount point is left, and counted). Nothing is chmodded, truncated
or written through: a hard link to a file outside the root is only unlinked. The same walk
empties a folder in place and purges the trash (app/core/trash.py).
"""

from __future__ import annotations

import contextlib
import errno
import os

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
    `escapes_root`, `other_fs`, `outside_root`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Tally:
    """What a removal took: non-directories and folders removed, errors, mount points left."""

    __slots__ = ("files", "folders", "errors", "other_fs", "first_error")

    def __init__(self) -> None:
        self.files = 0
        self.folders = 0
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
    Depth first with an explicit stack of open folders: no recursion limit, one fd a level."""
    frames: list[tuple[int, list[os.DirEntry[str]], str]] = [(top_fd, _list(top_fd, tally), "")]
    while frames:
        fd, entries, _ = frames[-1]
        if not entries:
            _, _, name = frames.pop()
            if not frames:
                return
            os.close(fd)
            tally.folders += _removed(os.rmdir, name, frames[-1][0], tally)
            continue
        entry = entries.pop()
        child = _take(fd, entry, dev, tally)
        if child is not None:
            frames.append((child, _list(child, tally), entry.name))


def _take(fd: int, entry: os.DirEntry[str], dev: int, tally: Tally) -> int | None:
    """Unlink one entry of the folder `fd`; for a folder, its fd to empty first (None when
    it is gone, is on another file system, or cannot be opened: counted)."""
    name = entry.name
    try:
        is_dir = entry.is_dir(follow_symlinks=False)
    except OSError:
        is_dir = False
    if not is_dir:
        try:
            os.unlink(name, dir_fd=fd)
            tally.files += 1
            return None
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            pass  # it became a folder since the listing: treat it as one
        except OSError as exc:
            tally.error(exc, name)
            return None
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in SWAPPED:  # a symlink now: unlink the link itself, follow nothing
            tally.files += _removed(os.unlink, name, fd, tally)
        else:
            tally.error(exc, name)
        return None
    try:
        if os.fstat(child).st_dev == dev:
            return child
        tally.other_fs += 1
    except OSError as exc:
        tally.error(exc, name)
    os.close(child)
    return None


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


def _list(fd: int, tally: Tally) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as it:
            return list(it)
    except OSError as exc:
        tally.error(exc, "list")
        return []
