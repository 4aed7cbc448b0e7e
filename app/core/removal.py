"""THE containment rule and THE safe removal: every sweep, release and dashboard action
removes through `remove()` and nothing else.

`remove(path, root, rule)` removes `path` only when it is strictly inside `root` after
every parent is resolved, is not itself a symlink and stays on the root's file system. At
the moment of removal it checks all of it again, fd-relative: it walks down from the root
with `O_NOFOLLOW` opens, so a parent or the target swapped for a symlink after the first
check makes the removal stop (the swapped entry is left alone), and it removes a tree
through directory fds, never following a symlink inside it (like `shutil.rmtree`'s safe
path), never crossing into another file system. It never chmods, truncates or writes
through anything it removes: a hard link to a file outside the root is only unlinked.

A big tree is renamed into a trash folder on the same file system (instant) and purged by
one detached process (`purge_trash`), so a hook can "remove" 200,000 entries within
Claude's 1.5 s SessionEnd budget. A purge that was killed leaves its trash to the next one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core import journal, paths
from app.core.log import log
from app.core.scanner import PathLike, TreeSize, scan, text_path
from app.core.state import StateBusy, locked, read_json, update_json

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SWAPPED = (errno.ELOOP, errno.ENOTDIR)

# `trash=None` (auto) trashes a folder of at least this many entries, or a file this big.
TRASH_MIN_ENTRIES = 1000
TRASH_MIN_FILE_BYTES = 1 << 30
ROOT_TRASH_NAME = ".claudetto-trash"
PURGE_JOB = "purge-trash"
PURGE_WAIT_S = 6 * 3600.0  # a queued purge waits this long for the running one


@dataclass(frozen=True)
class Removal:
    path: str
    rule: str
    kind: str
    session: str | None
    status: str  # "removed" | "refused" | "missing" | "failed" | "dry_run"
    reason: str | None  # refused: outside_root|symlink|escapes_root|other_fs|changed; failed: error
    bytes: int  # disk bytes freed (or that would be)
    files: int  # non-directories removed
    folders: int  # directories removed
    trashed: bool = False  # renamed into a trash folder; a detached purge finishes it

    @property
    def removed(self) -> bool:
        return self.status == "removed"


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ----------------------------------------------------------------------------- containment

def _strictly_inside(path: str, root: str) -> bool:
    prefix = root if root.endswith("/") else root + "/"
    return path != root and path.startswith(prefix)


def resolve_parents(path: PathLike) -> str:
    """`path` with every parent resolved through the file system (symlinks and `..` alike)
    and the last component kept as it is: the one spelling of a path that two records, a
    live folder and a root can be compared in."""
    return _target(text_path(path))


def _target(path: str) -> str:
    """`path` with every parent resolved and the last component kept as it is."""
    return paths.resolve_parents(path)


def containment(path: PathLike, root: PathLike) -> str | None:
    """THE containment rule: None when `path` may be removed under `root`, else why not.

    None: `path` is strictly inside `root` after resolving every parent, is not itself a
    symlink, and its real path stays inside realpath(root). Reasons: "outside_root" (not
    strictly inside, or the root itself), "escapes_root" (a parent resolves outside the
    root), "missing" (nothing there), "symlink" (the path itself is a symlink).
    """
    try:
        text, root_text = text_path(path), text_path(root)
        root_real = os.path.realpath(root_text)
        target = _target(text)
        if not _strictly_inside(target, root_real):
            lexical = os.path.abspath(text)
            if (_strictly_inside(lexical, os.path.abspath(root_text))
                    or _strictly_inside(lexical, root_real)):
                return "escapes_root"
            return "outside_root"
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError):
        return "outside_root"
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return None


# ----------------------------------------------------------------------------- removal

class _Tally:
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


def remove(path: PathLike, root: PathLike, rule: str, *, kind: str = "",
           session: str | None = None, size: int | TreeSize | None = None,
           dry_run: bool = False, trash: bool | None = None, journal: bool = True,
           spawn: bool = True, _before_remove: Callable[[str], Any] | None = None) -> Removal:
    """Remove `path` safely under `root`; one journal line per call (not for a dry run).

    `size`: disk bytes already measured (or a TreeSize, which also gives the counts), so a
    hook need not scan again; None measures. `trash`: True renames into a trash folder on
    the same file system and spawns one detached purge, False removes in place, None
    (auto) trashes big trees. `spawn=False` leaves the purge to the caller (a sweep that
    trashes many trees calls `spawn_purge()` once at its end). `_before_remove` is a test
    seam called between the check and the removal (a race); the removal after it is real.
    A dry run measures and checks but removes nothing and writes no journal line.
    """
    text = text_path(path)
    write = journal and not dry_run

    def done(status: str, reason: str | None = None, freed: int = 0, files: int = 0,
             folders: int = 0, trashed: bool = False) -> Removal:
        result = Removal(text, rule, kind, session, status, reason, freed, files, folders, trashed)
        if write:
            _journal(result)
        return result

    reason = containment(text, root)
    if reason == "missing":
        return done("missing")
    if reason is not None:
        return done("refused", reason)
    target = _target(text)
    root_real = os.path.realpath(text_path(root))
    try:
        root_dev = os.stat(root_real).st_dev
        if os.lstat(target).st_dev != root_dev:
            return done("refused", "other_fs")
    except OSError:
        return done("missing")
    measured = _measure(target, size)
    if dry_run:
        return done("dry_run", None, measured.disk, measured.files, measured.folders)
    if _before_remove is not None:
        _before_remove(target)
    tally = _Tally()
    trashed = False
    try:
        with _open_parent(root_real, target, root_dev) as (parent_fd, name):
            trashed = _remove_at(parent_fd, name, root_real, root_dev, tally, measured, trash)
    except _Refused as refused:
        if refused.reason == "missing":
            return done("missing")
        return done("refused", refused.reason)
    except OSError as exc:
        tally.error(exc, "remove")
    if trashed:
        if spawn:
            spawn_purge()
        return done("removed", None, measured.disk, measured.files, measured.folders, True)
    if tally.errors or tally.other_fs:
        left = scan(target)  # what is still there was not freed
        why = tally.first_error or f"other_fs: {tally.other_fs} mount(s) left"
        return done("failed", why, max(0, measured.disk - left.disk), tally.files, tally.folders)
    return done("removed", None, measured.disk, tally.files, tally.folders)


def _measure(target: str, size: int | TreeSize | None) -> TreeSize:
    if isinstance(size, TreeSize):
        return size
    if size is None:
        return scan(target)
    return TreeSize(target, 0, max(0, int(size)), 0, 0)


def _journal(result: Removal) -> None:
    journal.append({"path": result.path, "kind": result.kind, "bytes": result.bytes,
                    "rule": result.rule, "session": result.session, "result": result.status,
                    "reason": result.reason, "files": result.files, "folders": result.folders,
                    "trashed": result.trashed})


@contextlib.contextmanager
def _open_parent(root_real: str, target: str, root_dev: int) -> Iterator[tuple[int, str]]:
    """The fd of `target`'s parent, reached from the root one O_NOFOLLOW open at a time."""
    parts = os.path.relpath(target, root_real).split("/")
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise _Refused("outside_root")
    try:
        fd = os.open(root_real, _DIR_FLAGS)
    except OSError as exc:
        raise _Refused("missing" if exc.errno == errno.ENOENT else "escapes_root") from None
    try:
        if os.fstat(fd).st_dev != root_dev:
            raise _Refused("other_fs")
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    raise _Refused("missing") from None
                if exc.errno in _SWAPPED:
                    raise _Refused("escapes_root") from None
                raise
            os.close(fd)
            fd = child
            if os.fstat(fd).st_dev != root_dev:
                raise _Refused("other_fs")
        yield fd, parts[-1]
    finally:
        os.close(fd)


def _remove_at(parent_fd: int, name: str, root_real: str, root_dev: int, tally: _Tally,
               measured: TreeSize, trash: bool | None) -> bool:
    """Remove `name` in the folder `parent_fd`; True when it went to the trash."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise _Refused("missing") from None
    if stat.S_ISLNK(st.st_mode):
        raise _Refused("symlink")
    if st.st_dev != root_dev:
        raise _Refused("other_fs")
    if not stat.S_ISDIR(st.st_mode):
        big = st.st_blocks * 512 >= TRASH_MIN_FILE_BYTES
        if (trash or (trash is None and big)) and _to_trash(parent_fd, name, st, None, root_real):
            return True
        try:
            os.unlink(name, dir_fd=parent_fd)
        except FileNotFoundError:
            raise _Refused("missing") from None
        except IsADirectoryError:
            raise _Refused("changed") from None
        tally.files += 1
        return False
    try:
        dir_fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in _SWAPPED:
            raise _Refused("symlink") from None
        if exc.errno == errno.ENOENT:
            raise _Refused("missing") from None
        raise
    try:
        now = os.fstat(dir_fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise _Refused("changed")
        if trash is None:
            trash = _is_big(measured, dir_fd)
        if trash and _to_trash(parent_fd, name, now, dir_fd, root_real):
            return True
        _empty_dir(dir_fd, root_dev, tally)
    finally:
        os.close(dir_fd)
    try:
        os.rmdir(name, dir_fd=parent_fd)
        tally.folders += 1
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno in _SWAPPED:
            raise _Refused("symlink") from None  # swapped after it was emptied: left alone
        tally.error(exc, name)
    return False


def _is_big(measured: TreeSize, dir_fd: int) -> bool:
    if measured.entries:
        return measured.entries >= TRASH_MIN_ENTRIES
    return _count_at_least(dir_fd, TRASH_MIN_ENTRIES)


def _count_at_least(dir_fd: int, wanted: int) -> bool:
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
                                pending.append(os.open(entry.name, _DIR_FLAGS, dir_fd=fd))
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        for fd in pending:
            os.close(fd)
    return False


def _empty_dir(top_fd: int, dev: int, tally: _Tally) -> None:
    """Remove everything inside the folder open as `top_fd`, fd-relative, never following
    a symlink, never entering another file system (a mount point is left, and counted)."""
    frames: list[tuple[int, list[os.DirEntry[str]], str]] = [(top_fd, _list(top_fd, tally), "")]
    while frames:
        fd, entries, _ = frames[-1]
        if not entries:
            _, _, name = frames.pop()
            if not frames:
                return
            os.close(fd)
            try:
                os.rmdir(name, dir_fd=frames[-1][0])
                tally.folders += 1
            except FileNotFoundError:
                pass
            except OSError as exc:
                tally.error(exc, name)
            continue
        entry = entries.pop()
        name = entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if not is_dir:
            try:
                os.unlink(name, dir_fd=fd)
                tally.files += 1
                continue
            except FileNotFoundError:
                continue
            except IsADirectoryError:
                pass  # it became a folder since the listing: treat it as one
            except OSError as exc:
                tally.error(exc, name)
                continue
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno in _SWAPPED:  # a symlink now: unlink the link itself, follow nothing
                try:
                    os.unlink(name, dir_fd=fd)
                    tally.files += 1
                except FileNotFoundError:
                    pass
                except OSError as again:
                    tally.error(again, name)
            else:
                tally.error(exc, name)
            continue
        try:
            if os.fstat(child).st_dev != dev:
                tally.other_fs += 1
                os.close(child)
                continue
        except OSError as exc:
            os.close(child)
            tally.error(exc, name)
            continue
        frames.append((child, _list(child, tally), name))


def _list(fd: int, tally: _Tally) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as it:
            return list(it)
    except OSError as exc:
        tally.error(exc, "list")
        return []


# ----------------------------------------------------------------------------- trash

def _places_file() -> Path:
    return paths.claudetto_home() / "trash-places.json"


def trash_places() -> list[Path]:
    """Every folder a trash may be in: claudetto's own, the one beside its logs on the temp
    file system, and each `.claudetto-trash` made inside a root on a third file system."""
    found = [paths.trash_dir(), paths.log_root() / "trash"]
    extra: Any = read_json(_places_file(), list)
    if isinstance(extra, list):
        found.extend(Path(item) for item in extra if isinstance(item, str) and item.startswith("/")
                     and os.path.basename(item) == ROOT_TRASH_NAME)  # never a folder of the user's
    return found


def _open_trash(root_real: str, dev: int) -> int | None:
    """An fd of a trash folder on file system `dev`, made if needed; None when there is none."""
    for place in (paths.trash_dir(), paths.log_root() / "trash"):
        fd = _open_owned_dir(place, dev, make=True)
        if fd is not None:
            return fd
    place = Path(root_real) / ROOT_TRASH_NAME
    fd = _open_owned_dir(place, dev, make=True)
    if fd is None:
        return None
    key = os.fspath(place)
    known: Any = read_json(_places_file(), list)
    if not isinstance(known, list) or key not in known:
        try:
            update_json(_places_file(), lambda old: [*(old if isinstance(old, list) else []), key]
                        if key not in (old if isinstance(old, list) else []) else old, list)
        except OSError as exc:
            log(f"removal: cannot record trash folder {key}: {exc}")
            os.close(fd)
            return None
    return fd


def _open_owned_dir(place: Path, dev: int, *, make: bool) -> int | None:
    """`place` as a folder fd when it is a real folder of ours on file system `dev`, reached
    through no symlink (a trash must never be somewhere a link points at)."""
    if os.path.islink(os.path.dirname(place)):  # e.g. `<tmp>/claudetto` made a symlink
        return None
    try:
        if make:
            with contextlib.suppress(FileExistsError):
                os.makedirs(place, mode=0o700, exist_ok=True)
        fd = os.open(place, _DIR_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if st.st_dev != dev or st.st_uid != os.getuid():
        os.close(fd)
        return None
    return fd


def _to_trash(parent_fd: int, name: str, st: os.stat_result, dir_fd: int | None,
              root_real: str) -> bool:
    """Rename `name` into a trash folder on its file system; False when there is none.

    After the rename the moved entry is checked against what was opened; a swap in between
    (a symlink moved instead of the folder) is moved back and the removal refused."""
    trash_fd = _open_trash(root_real, st.st_dev)
    if trash_fd is None:
        return False
    try:
        slot = f"{time.time_ns()}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.rename(name, slot, src_dir_fd=parent_fd, dst_dir_fd=trash_fd)
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.EINVAL, errno.EACCES, errno.EPERM, errno.EBUSY):
                return False
            if exc.errno == errno.ENOENT:
                raise _Refused("missing") from None
            raise
        try:
            moved = os.stat(slot, dir_fd=trash_fd, follow_symlinks=False)
        except FileNotFoundError:
            return True
        if (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino):
            _put_back(trash_fd, slot, parent_fd, name)
            raise _Refused("symlink" if stat.S_ISLNK(moved.st_mode) else "changed")
        return True
    finally:
        os.close(trash_fd)


def _put_back(trash_fd: int, slot: str, parent_fd: int, name: str) -> None:
    """Undo a rename that moved the wrong entry, never clobbering what took its place."""
    try:
        os.link(slot, name, src_dir_fd=trash_fd, dst_dir_fd=parent_fd, follow_symlinks=False)
        os.unlink(slot, dir_fd=trash_fd)
        return
    except OSError:
        pass
    try:  # a folder cannot be hard-linked: rename back unless the name was taken again
        os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            os.rename(slot, name, src_dir_fd=trash_fd, dst_dir_fd=parent_fd)
            return
    except OSError:
        pass
    log(f"removal: a swapped entry could not go back to {name!r}; it stays in the trash as {slot}")


def spawn_purge() -> int | None:
    """Start one detached purge of the trash (`purge-trash` job); its pid, or None when a
    purge is already queued (it lists the trash only later, so it takes ours too)."""
    from app.core import jobs

    if _purge_queued():
        return None
    return jobs.spawn(PURGE_JOB, {})


def _purge_queued() -> bool:
    try:
        with locked(paths.claudetto_home() / "trash-waiter", wait_s=0.0):
            return False
    except StateBusy:
        return True
    except OSError:
        return False


def purge_step(payload: dict[str, Any]) -> None:
    """The `purge-trash` job."""
    del payload
    purge_trash()


def leftovers_step(payload: dict[str, Any]) -> None:
    """A session-start step: when a killed purge left something in a trash, start a purge."""
    del payload
    if any(_has_entries(place) for place in trash_places()):
        spawn_purge()


def _has_entries(place: Path) -> bool:
    try:
        with os.scandir(place) as it:
            return any(True for _ in it)
    except OSError:
        return False


def purge_trash(*, wait_s: float = PURGE_WAIT_S) -> None:
    """Remove everything in every trash folder (leftovers of a killed purge included).

    One purge runs at a time (a flock); at most one more waits for it, and that one lists
    the trash only after it holds the lock, so every entry renamed before a purge was
    spawned is purged by the running one or the waiting one; later ones give up at once.
    """
    home = paths.claudetto_home()
    with contextlib.ExitStack() as held:
        waiter = contextlib.ExitStack()
        try:
            # A short wait: spawn_purge() holds this lock for a moment to look.
            waiter.enter_context(locked(home / "trash-waiter", wait_s=0.2))
            held.enter_context(locked(home / "trash", wait_s=wait_s))
        except StateBusy:
            return  # a purge is already waiting: it will list after this caller's rename
        except OSError as exc:
            log(f"removal: cannot lock the trash: {exc}")
            return
        finally:
            waiter.close()
        for _ in range(100):
            if not sum(_purge_place(place) for place in trash_places()):
                break


def _purge_place(place: Path) -> int:
    """Empty one trash folder; the count of entries removed from it. A trash reached through
    a symlinked parent, or not this user's, is left alone: it is not ours to empty."""
    if os.path.islink(os.path.dirname(place)):  # the folder itself: O_NOFOLLOW below
        log(f"removal: {place} is reached through a symlink; not purged")
        return 0
    try:
        fd = os.open(place, _DIR_FLAGS)
    except OSError:
        return 0
    try:
        if os.fstat(fd).st_uid != os.getuid():
            log(f"removal: {place} is not this user's; not purged")
            os.close(fd)
            return 0
    except OSError:
        os.close(fd)
        return 0
    removed = 0
    try:
        dev = os.fstat(fd).st_dev
        for _ in range(100):
            with os.scandir(fd) as it:
                names = [entry.name for entry in it]
            if not names:
                break
            for name in names:
                tally = _Tally()
                try:
                    _purge_entry(fd, name, dev, tally)
                    removed += 1
                except OSError as exc:
                    tally.error(exc, name)
                if tally.errors:
                    log(f"removal: purge of {place / name} left {tally.errors} error(s): {tally.first_error}")
    except OSError as exc:
        log(f"removal: cannot purge {place}: {exc}")
    finally:
        os.close(fd)
    return removed


def _purge_entry(trash_fd: int, name: str, dev: int, tally: _Tally) -> None:
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=trash_fd)
    except OSError as exc:
        if exc.errno in _SWAPPED:
            os.unlink(name, dir_fd=trash_fd)
            return
        if exc.errno == errno.ENOENT:
            return
        raise
    try:
        if os.fstat(child).st_dev != dev:
            tally.other_fs += 1
            return
        _empty_dir(child, dev, tally)
    finally:
        os.close(child)
    os.rmdir(name, dir_fd=trash_fd)


if __name__ == "__main__":  # python -P -m app.core.removal: purge the trash now
    purge_trash()
    sys.exit(0)
