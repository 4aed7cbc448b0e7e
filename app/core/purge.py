"""The purge: empties the trash folders (app/core/trash.py) of what removals handed to it.

One purge runs at a time and at most one more waits. It takes only entries whose removal is
journaled: a pending one (its `removed` line not written yet) is still being checked by the
removal that moved it, or, when that process died, goes back where its note says. An entry
holding a mount point is never emptied. `python -P -m app.core.purge` purges now.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core import paths
from app.core.fd_removal import DIR_FLAGS, SWAPPED, Tally, empty_dir, open_down, open_to_empty
from app.core.log import log
from app.core.pid_domain import foreign_pid_domain
from app.core.state import StateBusy, locked
from app.core.trash import (
    ORIGIN,
    PENDING,
    PURGING,
    drop_origin,
    is_slot,
    origin_domain,
    put_back,
    read_origin,
    safe_parent,
    to_purge,
    trash_places,
)

if TYPE_CHECKING:
    from app.core.scanner import TreeSize

PURGE_JOB = "purge-trash"
PURGE_WAIT_S = 6 * 3600.0  # a queued purge waits this long for the running one
#: A pending entry this old is a leftover, whatever process now has its pid.
_PENDING_MAX_S = 24 * 3600


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
            return any(is_slot(entry.name) for entry in it)
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
    if not os.path.lexists(place):
        return 0
    if not safe_parent(place):  # the folder itself: O_NOFOLLOW below
        log(f"removal: {place} is reached through a symlink or a folder of another user's; not purged")
        return 0
    fd = _open_place(place)
    if fd is None:
        return 0
    removed = 0
    tried: set[str] = set()  # left with errors: once a purge, not once a round
    try:
        dev = os.fstat(fd).st_dev
        for _ in range(100):
            names = _slots(fd, place, tried)
            names = _settle_pending(fd, place, names)
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
                    tried.add(name)
                    log(f"removal: purge of {place / name} left {tally.errors} error(s): {tally.first_error}")
    except OSError as exc:
        log(f"removal: cannot purge {place}: {exc}")
    finally:
        os.close(fd)
    return removed


def _slots(fd: int, place: Path, tried: set[str]) -> list[str]:
    """The entries of the trash open as `fd` that removals put there (`trash.is_slot`), less
    `tried`; anything else is not the purge's to take: left alone, and logged."""
    with os.scandir(fd) as it:
        names = [entry.name for entry in it if entry.name not in tried]
    foreign = [name for name in names if not is_slot(name)]
    if foreign:
        log(f"removal: {place} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} no removal "
            f"put there (first {foreign[0]!r}); left alone")
        tried.update(foreign)
    return [name for name in names if is_slot(name)]


def _open_place(place: Path) -> int | None:
    """The trash folder `place` to empty, when it is ours: this user's, and no mount point (a
    folder of the user's bind-mounted over it has its device and owner; only the mount table
    tells it from the trash, and the purge would empty it)."""
    from app.core.mounts import is_mount_point

    try:
        fd = os.open(place, DIR_FLAGS)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_uid != os.getuid():
            log(f"removal: {place} is not this user's; not purged")
        elif is_mount_point(place):
            log(f"removal: {place} is a mount point; not purged")
        else:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def settle_leftovers() -> None:
    """Settle every pending entry a killed removal left, here and now (no purge): back where
    it came from when it was never journaled, else handed to the purge. A release that
    finishes one cut short calls it before it plans, so what comes back is planned again."""
    for place in trash_places():
        if not safe_parent(place):
            continue
        fd = _open_place(place)
        if fd is None:
            continue
        try:
            _settle_pending(fd, place, _slots(fd, place, set()))
        except OSError as exc:
            log(f"removal: cannot look at {place}: {exc}")
        finally:
            os.close(fd)


def _settle_pending(fd: int, place: Path, names: list[str]) -> list[str]:
    """The names the purge may take: every entry handed to it, and a pending one left by a
    process that died after writing its `removed` line (handed over now). A pending entry
    whose process runs is still being checked; one whose removal has no `removed` line was
    never removed (killed before it): it goes back where its origin note says, whole. One a
    removal was purging itself goes on when that process is gone."""
    ready = [name for name in names if not name.startswith((PENDING, PURGING))]
    ready += [to_purge(fd, name) for name in names if name.startswith(PURGING) and not _pending_alive(name, fd)]
    left = [name for name in names if name.startswith(PENDING) and not _pending_alive(name, fd)]
    if not left:
        return ready
    from app.core.journal import removed_among

    removed = removed_among(name.rsplit("-", 1)[-1] for name in left if not name.endswith(ORIGIN))
    for name in left:
        if name.endswith(ORIGIN):
            if name[: -len(ORIGIN)] not in names:
                drop_origin(fd, name[: -len(ORIGIN)])  # killed between the note and the rename
            continue
        token = name.rsplit("-", 1)[-1]
        if token in removed:
            ready.append(to_purge(fd, name))
        else:
            _return_home(fd, place, name, read_origin(fd, name), token)
    return ready


def _return_home(fd: int, place: Path, name: str, path: object, token: str) -> None:
    """Put a pending leftover back at the path its origin note names (beside it when
    that name is taken); without one, it stays in the trash, whole, never purged."""
    if not isinstance(path, str) or not path.startswith("/"):
        log(f"removal: {place / name} has no note of its place; kept in the trash, never purged")
        return
    base = os.path.basename(path)
    try:
        parent_fd = _open_noted_parent(path)
    except OSError as exc:
        log(f"removal: {place / name} cannot go back to {path} ({exc}); kept in the trash, never purged")
        return
    try:
        put_back(fd, name, parent_fd, base, token)
        log(f"removal: {path} was moved to the trash by a removal killed before its journal line; put back")
    finally:
        os.close(parent_fd)


def _open_noted_parent(path: str) -> int:
    """The parent folder of a noted path, reached from `/` one O_NOFOLLOW open at a time: the
    note names real folders (parents resolved), so a symlink met on the way (a `current`
    switched to another release since) is no way back; that raises, and the entry stays."""
    root = os.open("/", DIR_FLAGS)
    try:
        return open_down(root, [part for part in path.split("/") if part][:-1])
    finally:
        os.close(root)


def _pending_alive(name: str, fd: int) -> bool:
    """Whether the process that moved (or purges) the entry `name` of the trash `fd` may
    still be at it. One of another machine or pid namespace (a CLAUDETTO_HOME shared over
    the network) has a pid that means nothing here: judged by its pid, a removal still
    checking there had its folder put back from under it here, and then journaled as removed."""
    try:
        born_ns, pid, _ = name.removeprefix(PENDING).removeprefix(PURGING).removesuffix(ORIGIN).split("-", 2)
        age_s = time.time() - int(born_ns) / 1e9
        if name.startswith(PENDING) and foreign_pid_domain(origin_domain(fd, name.removesuffix(ORIGIN))):
            return age_s < _PENDING_MAX_S
        os.kill(int(pid), 0)
    except ValueError:
        return False
    except PermissionError:
        return age_s < _PENDING_MAX_S
    except OSError:
        return False
    return age_s < _PENDING_MAX_S and not _started_after(int(pid), int(born_ns) / 1e9)


def _started_after(pid: int, moment: float) -> bool:
    """Whether process `pid` started after `moment` (seconds since the epoch), well after (a
    second: the boot time is whole seconds): then it only got the pid of the process that
    moved a pending entry at that moment, which is gone. False when /proc cannot say."""
    start = started_at(pid)
    return start is not None and start > moment + 1.0


def started_at(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch, to the boot time's whole second);
    None when /proc cannot say."""
    from app.core.claude_process import proc_stat

    try:
        found = proc_stat(pid)
        if found is None:
            return None
        ticks = int(found[2])  # field 22, the start in clock ticks since boot
        with open("/proc/stat", "rb") as fh:
            boot = next(int(line.split()[1]) for line in fh if line.startswith(b"btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _mounted_in(place: Path, name: str) -> bool:
    from app.core.mounts import mounts_inside

    found = mounts_inside(os.path.join(place, name))
    if found:
        log(f"removal: {place / name} holds a mount point ({found[0]}); not purged")
    return bool(found)


def purge_here(trash_fd: int, slot: str, trash_path: str, dev: int, tally: Tally) -> TreeSize | None:
    """Purge, in this process, the folder a removal journaled (named `.purging-…`: no other
    purge takes it meanwhile): None when all of it went, else what is left of it (a file
    that refuses to go, `chattr +i`), handed to the later purges and measured, so that the
    removal reports what it freed rather than what it meant to free."""
    try:
        purge_entry(trash_fd, slot, dev, tally)
        tally.folders += 1
    except OSError as exc:
        tally.error(exc, slot)
    if not tally.errors:
        return None
    from app.core.scanner import scan

    return scan(os.path.join(trash_path, to_purge(trash_fd, slot)))


def purge_entry(trash_fd: int, name: str, dev: int, tally: Tally) -> None:
    try:
        child = open_to_empty(trash_fd, name, dev)
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


if __name__ == "__main__":  # python -P -m app.core.purge: purge the trash now
    purge_trash()
    sys.exit(0)
