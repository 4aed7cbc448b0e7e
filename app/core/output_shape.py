"""Whether what is at a recorded path now can still be what the recorded call made.

A record the hook writes today carries evidence of what its call made (device, inode, birth:
app/core/created.py), checked when the records are read and at the removal. A record without
it (an older version wrote it, or another program, or a hand) names only a path, and a path
outlives what was there: the user removes the folder and makes their own at the same name,
replaces a file by a folder. Two facts still tell such a thing from the output:

- its birth time (statx) is after the record's time: the call that made the output ran before
  its hook wrote the record, so a thing born later is somebody else's (`born_after`);
- its shape is not the recorded kind's (`not_as_recorded`): a `scratch` output is the file a
  Write made, never a folder; a `worktree` output is a linked worktree, whose `.git` is a file,
  never a main checkout, whose `.git` is the repository itself.

Either keeps the path (the record passes over it, or the verdict is `in_use`): when unsure, keep.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.core.gc_records import OutputRecord

#: Birth and record times come from one clock, but file systems round times (FAT: 2 s).
SLACK_S = 2.0
#: A record time before this (2001-09-09) is no time (tests and old tools write 0 or 1): no check.
SANE_SINCE = 1e9


def born_after(record: OutputRecord) -> bool:
    """The thing at the record's path was born after the record was written: not the output."""
    from app.core.created import birth_time

    if not SANE_SINCE < record.time < float("inf"):
        return False
    born = birth_time(record.path)
    return born is not None and born > record.time + SLACK_S


def not_as_recorded(path: str, records: list[OutputRecord], known_mounts: frozenset[str] | None = None) -> bool:
    """What is at `path` (as it is now: moved aside for its removal) has another shape than every
    record's kind says the call made, or holds what another user wrote (a container's database:
    app/core/foreign_entries.py; `known_mounts`: the sweep's mount table)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False  # gone: the removal's own checks answer
    if stat.S_ISDIR(mode) and not _owners_copied(records):
        from app.core.foreign_entries import foreign_entry

        theirs = foreign_entry(path, known_mounts, records[0].path if records else None)
        if theirs is not None:
            from app.core.log import log

            log(f"gc: {path} kept: {theirs} belongs to another user (a container's or root's)")
            return True
    kinds = {r.kind for r in records}
    if kinds == {"scratch"}:
        return stat.S_ISDIR(mode)
    if kinds == {"worktree"} and stat.S_ISDIR(mode):
        try:
            return stat.S_ISDIR(os.lstat(os.path.join(path, ".git")).st_mode)
        except OSError:
            return False
    return False


def _owners_copied(records: list[OutputRecord]) -> bool:
    """Run as root, `cp -a`, `tar -x` and `rsync -a` give what they make their source's owners:
    another user's entry is then part of the copy. They are the calls that keep their source's
    times too, which the record says (`old_times`)."""
    return os.geteuid() == 0 and any(isinstance(r.evidence, dict) and "old_times" in r.evidence for r in records)
