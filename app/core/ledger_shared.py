"""The edit ledger when one file has more than one editor or more than one name.

The ledger holds one entry per path, owned by the session that edited it last. Two cases
would otherwise tell the wrong thing:

- **Two sessions edit one file.** When session B edits a file whose entry is session A's,
  B's edit is, for A, a change by "a tool": A's model still believes the content it wrote.
  The new entry keeps what A knew in `earlier` (`{session: {"agent", "hash"}}`, the content
  A last knew: its edit, or the change it was told of) and A is told once at its next prompt
  when the content differs from that. A session that edits the file again takes its place
  back; at most EARLIER_MAX sessions are kept, the oldest goes first.
- **One file under two names.** The model edits a file through a symlinked folder, then
  through its real path (or a hard link): two entries name one file, and the first would
  report the model's own second edit as an outside change. An edit drops the session's other
  entries that name the very same file now (same device and inode).

Imported by an edit, and by a prompt only when an entry holds an `earlier` record for that
session: a prompt with nothing of the kind never loads it.
"""

from __future__ import annotations

import os

from app.core.ledger_entry import is_hash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EARLIER_MAX = 8


def earlier_of(entry: Any) -> dict[str, Any]:
    """The trusted `earlier` records of an entry (a bad one is left out, never judged)."""
    raw = entry.get("earlier") if isinstance(entry, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {session: record for session, record in raw.items()
            if isinstance(session, str) and session and isinstance(record, dict)
            and isinstance(record.get("agent"), str) and record["agent"] and is_hash(record.get("hash"))}


def handed_over(old: Any, session: str, digest: str) -> dict[str, Any]:
    """The `earlier` records of the entry `session` now writes over `old` with content
    `digest`: the old owner's knowledge joins those it held when the edit changed what it
    knew, and `session`'s own record goes (it knows its edit)."""
    earlier = earlier_of(old)
    earlier.pop(session, None)
    owner = old.get("session") if isinstance(old, dict) else None
    if isinstance(owner, str) and owner and owner != session and is_hash(old.get("hash")):
        told = old.get("told")
        known = old["hash"]
        if isinstance(told, dict) and not told.get("deleted") and is_hash(told.get("hash")):
            known = told["hash"]  # it was told of a change: that is the content it knows
        earlier.pop(owner, None)
        if known != digest:  # an edit that left the content as the owner knew it is no news
            agent = old.get("agent")
            earlier[owner] = {"agent": agent if isinstance(agent, str) and agent else "main", "hash": known}
    while len(earlier) > EARLIER_MAX:
        del earlier[next(iter(earlier))]
    return earlier


def drop_aliases(files: dict[str, Any], path: str, session: str, dev: int, inode: int) -> None:
    """Drop `session`'s entries of other paths that name the file at `path` (a symlinked
    folder, a hard link): the newest edit speaks for the file, under the name it used.

    Only a name that was this very file when it was hashed, or that reaches it through a
    symlinked folder: a name the user pointed at it since (`ln -f new.py old.py`, old.py
    made a symlink to new.py) is a change behind the model's back, and keeps its entry."""
    # Only names that can pass the test below are stat'ed (this runs on every edit): the
    # same file when hashed, or a name ending as the file's real one (a symlinked folder).
    name = os.path.basename(os.path.realpath(path))
    for other, entry in [(p, e) for p, e in files.items()
                         if p != path and isinstance(e, dict) and e.get("session") == session
                         and ((e.get("dev"), e.get("inode")) == (dev, inode) or os.path.basename(p) == name)]:
        try:
            st = os.stat(other)
        except (OSError, ValueError):
            continue
        if st.st_dev != dev or st.st_ino != inode:
            continue
        if (entry.get("dev"), entry.get("inode")) == (dev, inode) or (
                not os.path.islink(other) and os.path.realpath(other) == os.path.realpath(path)):
            del files[other]


def pending(files: dict[str, Any], session: str) -> list[tuple[str, int, str, str]]:
    """(path, edited_ns of the entry, agent, hash known) for each file another session edited
    after `session` did."""
    found: list[tuple[str, int, str, str]] = []
    for path, entry in files.items():
        if isinstance(entry, dict) and "earlier" in entry and isinstance(path, str) and path.startswith("/"):
            record = earlier_of(entry).get(session)
            if record is not None and type(entry.get("edited_ns")) is int:
                found.append((path, entry["edited_ns"], record["agent"], record["hash"]))
    return found


def check_pending(files: dict[str, Any], session: str, deadline: int | None = None,
                  read: bool = False) -> tuple[list[str], list[tuple[str, int, str]]]:
    """The lines for `session` about files another session changed after its edit, and the
    records to drop once they are told: (path, edited_ns, hash known).

    Each record costs a read: once a file has been read (`read`: the prompt read one
    before) and `time.monotonic_ns()` is past `deadline`, the rest wait for the next prompt."""
    import time

    from app.core.ledger_line import change_line
    from app.core.ledger_look import read_and_hash
    from app.core.log import log

    lines: list[str] = []
    told: list[tuple[str, int, str]] = []
    for path, edited_ns, agent, known in pending(files, session):
        if read and deadline is not None and time.monotonic_ns() > deadline:
            log("ledger: files another session changed are left for the next prompt (time spent)")
            break
        seen = read_and_hash(path)
        read = read or seen.fresh
        if seen.kind == "unreadable":
            log(f"ledger: cannot read {path}; not judged this time")
            continue
        if seen.kind == "file" and seen.hash == known:
            continue  # the other session left the content as this one knew it
        lines.append(change_line(path, agent))
        told.append((path, edited_ns, known))
    return lines, told


def drop_told(data: dict[str, Any], session: str, told: list[tuple[str, int, str]]) -> None:
    """Forget the `earlier` records just told, on entries not edited again since."""
    files = data["files"]
    for path, edited_ns, known in told:
        entry = files.get(path)
        if not isinstance(entry, dict) or entry.get("edited_ns") != edited_ns:
            continue
        earlier = entry.get("earlier")
        if isinstance(earlier, dict) and isinstance(earlier.get(session), dict) \
                and earlier[session].get("hash") == known:
            del earlier[session]
            if not earlier:
                del entry["earlier"]
