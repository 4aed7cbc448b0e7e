"""The trash: where a removal moves a folder first, and the one detached purge that empties it.

A folder is renamed into a trash folder on its own file system: one atomic step that is
instant whatever the size, and that a killed process never leaves half done (the whole tree
is in the trash, never a half-deleted folder in place). The trash is claudetto's own
(`CLAUDETTO_HOME/trash`), or the one beside its logs on the temp file system, or a
`.claudetto-trash` made inside a root on a third file system; never a folder reached
through a symlink or of another user. A moved entry that must stay (a swap meanwhile, a
guard that said keep) is put back where it was, never left where the purge would take it.

One detached process purges (`purge_trash`, the `purge-trash` job): so a hook can "remove"
200,000 entries within Claude's 1.5 s SessionEnd budget. One purge runs at a time and at
most one more waits; a purge that was killed leaves its trash to the next one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.fd_removal import DIR_FLAGS, SWAPPED, Refused, Tally, empty_dir
from app.core.log import log
from app.core.state import StateBusy, locked, read_json, update_json

ROOT_TRASH_NAME = ".claudetto-trash"
PURGE_JOB = "purge-trash"
PURGE_WAIT_S = 6 * 3600.0  # a queued purge waits this long for the running one


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


def open_trash(root_real: str, dev: int) -> tuple[int, str] | None:
    """(fd, path) of a trash folder on file system `dev`, made if needed; None when there is none."""
    for place in (paths.trash_dir(), paths.log_root() / "trash"):
        fd = _open_owned_dir(place, dev, make=True)
        if fd is not None:
            return fd, os.fspath(place)
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
    return fd, key


def _open_owned_dir(place: Path, dev: int, *, make: bool) -> int | None:
    """`place` as a folder fd when it is a real folder of ours on file system `dev`, reached
    through no symlink (a trash must never be somewhere a link points at)."""
    if os.path.islink(os.path.dirname(place)):  # e.g. `<tmp>/claudetto` made a symlink
        return None
    try:
        if make:
            with contextlib.suppress(FileExistsError):
                os.makedirs(place, mode=0o700, exist_ok=True)
        fd = os.open(place, DIR_FLAGS)
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


def to_trash(parent_fd: int, name: str, st: os.stat_result, root_real: str,
              token: str = "") -> tuple[int, str, str] | None:
    """Rename `name` into a trash folder on its file system: (trash fd, slot name, slot
    path), the caller closes the fd; None when there is no trash it can be renamed into.

    After the rename the moved entry is checked against what was opened; a swap in between
    (a symlink moved instead of the folder) is moved back and the removal refused."""
    opened = open_trash(root_real, st.st_dev)
    if opened is None:
        return None
    trash_fd, trash_path = opened
    handed = False
    try:
        slot = f"{time.time_ns()}-{os.getpid()}-{token or os.urandom(4).hex()}"
        try:
            os.rename(name, slot, src_dir_fd=parent_fd, dst_dir_fd=trash_fd)
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.EINVAL, errno.EACCES, errno.EPERM, errno.EBUSY):
                return None
            if exc.errno == errno.ENOENT:
                raise Refused("missing") from None
            raise
        try:
            moved = os.stat(slot, dir_fd=trash_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise Refused("missing") from None
        if (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino):
            put_back(trash_fd, slot, parent_fd, name, token)
            raise Refused("symlink" if stat.S_ISLNK(moved.st_mode) else "changed")
        handed = True
        return trash_fd, slot, os.path.join(trash_path, slot)
    finally:
        if not handed:
            os.close(trash_fd)


def put_back(trash_fd: int, slot: str, parent_fd: int, name: str, token: str = "") -> None:
    """Move an entry out of the trash again (a swap, or a guard that said keep), never
    clobbering what took its place: then it goes beside it as `<name>.claudetto-kept-<id>`.
    It never stays in the trash, where the purge would take it."""
    try:
        os.link(slot, name, src_dir_fd=trash_fd, dst_dir_fd=parent_fd, follow_symlinks=False)
        os.unlink(slot, dir_fd=trash_fd)
        return
    except OSError:
        pass
    for candidate in (name, f"{name}.claudetto-kept-{token or os.urandom(4).hex()}"):
        try:  # a folder cannot be hard-linked: rename back unless the name was taken again
            os.stat(candidate, dir_fd=parent_fd, follow_symlinks=False)
            continue
        except FileNotFoundError:
            pass
        except OSError:
            continue
        try:
            os.rename(slot, candidate, src_dir_fd=trash_fd, dst_dir_fd=parent_fd)
        except OSError:
            continue
        if candidate != name:
            log(f"removal: {name!r} was taken meanwhile; the kept entry is now {candidate!r}")
        return
    keep = paths.claudetto_home() / "kept"
    try:
        os.makedirs(keep, mode=0o700, exist_ok=True)
        os.rename(slot, os.path.join(keep, slot), src_dir_fd=trash_fd)
        log(f"removal: {name!r} could not go back; it is kept in {keep / slot}")
    except OSError as exc:
        log(f"removal: {name!r} could not go back ({exc}); it is still in the trash as {slot}")


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
    """A session-start step: report removals cut short in place, and when a killed purge
    left something in a trash, start a purge."""
    from app.core.journal import report_unfinished

    del payload
    report_unfinished()
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
        fd = os.open(place, DIR_FLAGS)
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
            # A bind mount of this same file system has the trash's device, so the device
            # check inside the purge cannot see it: a mount point found in an entry (made
            # after the entry was moved here) keeps the whole entry, mount and all.
            names = [name for name in names if not _mounted_in(place, name)]
            if not names:
                break
            for name in names:
                tally = Tally()
                try:
                    purge_entry(fd, name, dev, tally)
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


def _mounted_in(place: Path, name: str) -> bool:
    from app.core.mounts import mounts_inside

    found = mounts_inside(os.path.join(place, name))
    if found:
        log(f"removal: {place / name} holds a mount point ({found[0]}); not purged")
    return bool(found)


def purge_entry(trash_fd: int, name: str, dev: int, tally: Tally) -> None:
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=trash_fd)
    except OSError as exc:
        if exc.errno in SWAPPED:
            os.unlink(name, dir_fd=trash_fd)
            return
        if exc.errno == errno.ENOENT:
            return
        raise
    try:
        if os.fstat(child).st_dev != dev:
            tally.other_fs += 1
            return
        empty_dir(child, dev, tally)
    finally:
        os.close(child)
    os.rmdir(name, dir_fd=trash_fd)


if __name__ == "__main__":  # python -P -m app.core.trash: purge the trash now
    purge_trash()
    sys.exit(0)
