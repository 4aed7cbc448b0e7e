"""Whether a path that is not there is gone, or only held by a removal still checking it.

A removal moves a folder into the trash BEFORE its last check (app/core/removal.py): for that
moment the folder is missing where it was, yet its last check may keep it and put it back.
A second remover that takes "missing" for "gone" acts on a folder that comes back: WorktreeRemove
told Claude the checkout was removed and had git forget it (the checkout came back with no git
entry: its HEAD and index gone), the GC dropped the record of an output that came back recorded
nowhere. The pending entry in the trash says it: its note of origin names the path.

The same holds one level up: a folder something inside of which another removal holds in the
trash is not there whole. Judged without it and purged, the inside, kept by its own last check
and put back into the folder (in the trash by then), went with it (`last_look`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from app.core.log import log
from app.core.paths import resolve_parents
from app.core.trash import ORIGIN, PENDING, read_origin, safe_parent, trash_places

#: How often a caller that waits looks again.
_POLL_S = 0.05


def in_flight(path: str, *, wait_s: float = 0.0, settle: bool = True) -> bool:
    """Whether a removal still checking it holds `path` in a trash, waiting up to `wait_s` for
    it to finish. A pending entry left by a removal that was killed is settled first (back where
    it was when it was never journaled, else handed to the purge), so what remains pending is a
    running removal's: the path may come back, so it is not gone. False when nothing holds it.
    `settle=False` for a caller that settled them once already (a sweep asking for each of
    thousands of missing records)."""
    if settle:
        from app.core.purge import settle_leftovers

        settle_leftovers()
    key = resolve_parents(path)
    deadline = time.monotonic() + wait_s
    while _held(key):
        if time.monotonic() >= deadline:
            log(f"removal: {path} is held by another removal still checking it")
            return True
        time.sleep(_POLL_S)
    return False


def last_look(where: str, origin: str) -> str | None:
    """The removal's own look at a folder it moved into the trash (at `where`, from `origin`),
    before it asks its caller's last check: `in_use` when a mount point moved with it (never
    emptied), or when another removal holds something from inside it (that one may put it
    back: this folder was judged without it); `not_removed` when it holds a folder of another
    user's this user cannot empty (a container's `node_modules/.vite`): purged, it would be
    half deleted, the rest left in the trash for good; None when none of these."""
    from app.core import mounts
    from app.core.cleanup_guard import closed_inside

    if mounts.mounts_inside(where) or _held(origin, inside=True):
        return "in_use"
    closed = closed_inside(where)
    if closed is not None:
        log(f"removal: {origin} holds {closed[len(where):]!r}, another user's folder this user cannot empty; kept whole")
        return "not_removed"
    return None


def _held(key: str, *, inside: bool = False) -> bool:
    """Whether a pending entry's note of origin in any trash names `key` (with `inside`, a
    path strictly inside it)."""
    if inside:
        prefix = key.rstrip("/") + "/"
        return _any_note(lambda origin: origin.startswith(prefix))
    return _any_note(lambda origin: origin == key)


def _any_note(matches: Callable[[str], bool]) -> bool:
    """Whether the note of origin of a pending entry in any trash `matches`."""
    for place in trash_places():
        if not safe_parent(place):
            continue
        try:
            fd = os.open(place, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            with os.scandir(fd) as it:
                notes = [entry.name for entry in it if _recent_note(entry.name)]
            for note in notes:
                origin = read_origin(fd, note.removesuffix(ORIGIN))
                if origin is not None and matches(origin):
                    return True
        except OSError as exc:  # unsure: held (a folder taken for gone may come back)
            log(f"removal: cannot look at {place}: {exc}")
            return True
        finally:
            os.close(fd)
    return False


#: A pending entry older than this is no removal's any more (the purge settles it whatever
#: process has its pid now): one that can never go back (its folder gone) holds nothing.
_PENDING_MAX_NS = 24 * 3600 * 10**9


def _recent_note(name: str) -> bool:
    """Whether `name` is the note of a pending entry moved less than a day ago."""
    if not (name.startswith(PENDING) and name.endswith(ORIGIN)):
        return False
    born = name.removeprefix(PENDING).split("-", 1)[0]
    return born.isdigit() and time.time_ns() - int(born) < _PENDING_MAX_NS
