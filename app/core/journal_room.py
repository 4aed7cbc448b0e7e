"""Room kept for the journal on a full disk: `journal.room` beside `journal.jsonl`.

Every removal's journal line is written before anything goes, and a line a full disk
cannot take keeps the folder. So the day Claude's task outputs fill the one file system of
a laptop (reports of 100 GB in days exist), no line could be written and the cleanup freed
nothing: exactly when it was needed. claudetto keeps ROOM_BYTES of its own blocks in a file
beside the journal; a line refused for want of space gives that file up and is written
into what it freed (the first removal then frees far more), and the file is made again
once there is room. Incompressible bytes: zeros on a compressing file system hold no block.
"""

from __future__ import annotations

import contextlib
import errno
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

ROOM_BYTES = 16 * 1024  # four blocks: a journal line, an origin note, a folder
#: What a write says when the disk (or the user's quota) is full.
FULL = (errno.ENOSPC, errno.EDQUOT)


def room_file(journal: Path) -> Path:
    return journal.with_name("journal.room")


def give_up_room(journal: Path) -> bool:
    """Free the kept room for a journal line the full disk refused; False when none was kept."""
    try:
        os.unlink(room_file(journal))
    except OSError:
        return False
    return True


def keep_room(journal: Path) -> None:
    """Make the room file again when it is missing and the disk has space for it (one stat
    when it is there). A disk too full for it leaves none, rather than a part."""
    place = room_file(journal)
    if os.path.lexists(place):
        return
    try:
        fd = os.open(place, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        written = os.write(fd, os.urandom(ROOM_BYTES))
        os.fsync(fd)  # blocks given now, not at a later writeback that may find none
    except OSError:
        written = -1
    finally:
        os.close(fd)
    if written != ROOM_BYTES:
        with contextlib.suppress(OSError):
            os.unlink(place)
