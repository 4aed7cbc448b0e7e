"""Reflog files as app/core/unique_refs.py reads them: their entries, and the commits a
checkout's HEAD reflog says were made there.

A reflog that goes with the checkout (its HEAD's, its `worktree-*` branch's) is read whole: a
commit left behind on a detached HEAD early in a long session (hundreds of commits, a
rebase's picks) is named only in its first lines. Where older entries can only keep more (a
commit some branch once held), the newest part is enough.
"""

from __future__ import annotations

import os

from app.core.git import GitFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

#: One reflog entry: (old commit, new commit, time, message).
Entry = tuple[str, str, int, bytes]

_NEWEST = 1 << 20  # bytes of a reflog read when only its newest entries matter
_CAP = 256 << 20  # a larger reflog is not read: unsure, keep



def branch_reflogs(common: str) -> list[str]:
    return [os.path.join(top, name) for top, _, files in os.walk(os.path.join(common, "logs", "refs", "heads"))
            for name in files]


def reflog(path: str, *, newest: bool = False) -> list[Entry]:
    """(old commit, new commit, time, message) of each entry of one reflog file (`<old> <new>
    <who> <time> <zone>\\t<message>`), oldest first; time 0 when unreadable. `newest`: those of
    its newest `_NEWEST` bytes. Raises GitFailed for a whole reflog over `_CAP`, and for one
    that is no regular file (a FIFO in its place is never waited on: unsure)."""
    from app.core.state import NotRegularFile, open_regular

    try:
        with os.fdopen(open_regular(path), "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if not newest and size > _CAP:
                raise GitFailed(f"{path}: a reflog of {size} bytes is too large to read")
            fh.seek(max(0, size - _NEWEST) if newest else 0)
            return [entry for line in fh if (entry := _entry(line)) is not None]
    except NotRegularFile as exc:
        raise GitFailed(str(exc)) from None
    except OSError:
        return []


def _entry(line: bytes) -> Entry | None:
    head, _, message = line.rstrip(b"\n").partition(b"\t")
    fields = head.split(b" ", 2)
    if len(fields) != 3 or len(fields[1]) < 40:
        return None
    when = fields[2].rsplit(b" ", 2)[-2:-1]
    return (fields[0].decode("ascii", "replace"), fields[1].decode("ascii", "replace"),
            int(when[0]) if when and when[0].isdigit() else 0, message)


def made_here(entries: Iterable[Entry], made: tuple[bytes, ...]) -> list[str]:
    """The commits HEAD's entries say were made in this checkout, oldest first: an entry whose
    message starts with one of `made`, or has none (`update-ref HEAD` after `commit-tree`),
    and the steps of a rebase that ran on a detached HEAD (a pull request's branch checked
    out detached, rebased, its conflicts resolved). A rebase of a branch ends with a `finish`
    entry and its result is that branch's; an aborted one was given up: neither counts."""
    found: list[str] = []
    steps: list[str] = []
    for _, new, _, message in entries:
        step = None if message.startswith(made) else _step(message)
        if step in (b"start", b"finish", b"abort"):
            steps = []
        elif step is not None:
            steps.append(new)
        elif message.startswith(made) or not message.strip():
            found.append(new)  # an amend at a rebase's `edit` stop too: the rebase goes on
        else:
            found += steps  # the HEAD moved on (`git switch`) from a rebase ended detached
            steps = []
    return found + steps


def _step(message: bytes) -> bytes | None:
    """The word of a rebase's step as git writes it in the HEAD reflog (`rebase (pick): b`,
    `rebase (continue): b` after a conflict resolved, `pull --rebase (reword): x`), or None."""
    head = message.partition(b":")[0]
    if not head.endswith(b")") or b" (" not in head:
        return None
    return head[head.rindex(b" (") + 2:-1]
