"""The edit ledger when one file has more than one editor or more than one name, or leaves
the ledger before its change was told.

The ledger holds one entry per path, owned by the session that edited it last. Three cases
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
- **A full ledger.** The oldest entry goes when LEDGER_MAX_FILES is passed, maybe within
  the very turn in which the user changed its file. An entry whose file holds other content
  than a session knows (read unless its stat proves it unchanged) leaves a record in `left`
  (`[{"path", "session", "agent", "hash"}]`, the content each session last knew): at that
  session's next prompt the file is read, the change told if there is one, and the record
  dropped either way. At most LEFT_MAX records wait; the oldest goes first (logged). A new
  edit of the file by that session drops its record.

Imported by an edit, and by a prompt only when an entry holds an `earlier` record or the
ledger holds `left` records: a prompt with nothing of the kind never loads it.
"""

from __future__ import annotations

import os

from app.core.ledger_entry import files_of, is_hash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EARLIER_MAX = 8
LEFT_MAX = 64


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
    from app.core.ledger_entry import stats

    name = os.path.basename(os.path.realpath(path))
    named = [(p, e) for p, e in files.items() if p != path and isinstance(e, dict) and e.get("session") == session
             and ((e.get("dev"), e.get("inode")) == (dev, inode) or os.path.basename(p) == name)]
    answered = stats([(p, e.get("dev")) for p, e in named])  # a name on a dead mount is left alone
    for other, entry in named:
        st = answered.get(other)
        if st is None or st.st_dev != dev or st.st_ino != inode:
            continue
        if (entry.get("dev"), entry.get("inode")) == (dev, inode) or (
                not os.path.islink(other) and os.path.realpath(other) == os.path.realpath(path)):
            del files[other]


def forget(path: str, session: str, sig: dict[str, int]) -> None:
    """`session` made `path` too large to hash (`sig`: its stat now): its entry goes, as the
    entry of the former content would tell the model's own edit as a tool's change. Another
    session that edited the file is still told, through `left`, as if it left a full ledger."""
    from app.core import paths
    from app.core.ledger_entry import empty, files_of, writable
    from app.core.state import read_json, update_json

    if path not in files_of(read_json(paths.ledger_file_str(), empty)):
        return

    def change(data: Any) -> dict[str, Any]:
        current = writable(data)
        if path in current["files"]:
            leave(current, path, current["files"].pop(path), why="is too large to hash")
            settled(current, path, session, sig["dev"], sig["inode"])
        return current

    update_json(paths.ledger_file_str(), change, empty, durable=False)


def leave(data: dict[str, Any], path: str, entry: Any, why: str) -> None:
    """`entry` leaves the ledger (`why`: it was full): what a session may not have been told
    yet goes to `left`, with the file's device and inode at the edit (see `settled`)."""
    from app.core.ledger_entry import flaw, unmoved
    from app.core.log import log

    log(f"ledger: {path} left the ledger: it {why}")
    if flaw(path, entry) is not None:
        return
    left = _left_of(data) + [{"path": path, "session": owner, "agent": agent, "hash": known,
                              "dev": entry["dev"], "inode": entry["inode"]}
                             for owner, agent, known in _unsettled(path, entry, unmoved)]
    while len(left) > LEFT_MAX:
        gone = left.pop(0)
        log(f"ledger: the check of {gone.get('path')} that left the ledger is dropped (LEFT_MAX={LEFT_MAX})")
    _store_left(data, left)


def settled(data: dict[str, Any], path: str, session: str, dev: int, inode: int) -> None:
    """`session` edited `path` (device `dev`, inode `inode`) again: its `left` records of that
    file go, under this name or another (a symlinked folder): the new edit is what it knows.
    Another name counts only while it still is this file: a deleted file's inode is soon
    given to the next new one."""
    _store_left(data, [r for r in _left_of(data) if r.get("session") != session
                       or (r.get("path") != path and not _same_file(r, dev, inode))])


def _same_file(record: dict[str, Any], dev: int, inode: int) -> bool:
    if (record.get("dev"), record.get("inode")) != (dev, inode) or not isinstance(record.get("path"), str):
        return False
    from app.core.ledger_entry import stats

    st = stats([(record["path"], dev)]).get(record["path"])
    return st is not None and (st.st_dev, st.st_ino) == (dev, inode)


def _left_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    left = data.get("left")
    return [r for r in left if isinstance(r, dict)] if isinstance(left, list) else []


def _store_left(data: dict[str, Any], left: list[dict[str, Any]]) -> None:
    if left:
        data["left"] = left
    else:
        data.pop("left", None)


def _unsettled(path: str, entry: dict[str, Any], unmoved: Any) -> list[tuple[str, str, str]]:
    """(session, agent, content it knows) of each session that has a change to be told of in
    the file of `entry`: the sessions waiting in `earlier`, and the owner unless its stat
    shows the edited content or it was told of a deletion. The file is read when one may: an
    entry edited in this very turn has a stat too fresh to trust, and a record for each of a
    long turn's files would push the real changes out of `left`."""
    from app.core.ledger_entry import stats

    found = [(owner, record["agent"], record["hash"]) for owner, record in earlier_of(entry).items()]
    answered = stats([(path, entry["dev"])])
    told = entry.get("told")
    if told is None:
        if not unmoved(path, entry, answered.get(path, False)):
            found.append((entry["session"], entry["agent"], entry["hash"]))
    elif not told.get("deleted") and is_hash(told.get("hash")):
        found.append((entry["session"], entry["agent"], told["hash"]))
    if found and path in answered:  # a file that does not answer is told when it does
        from app.core.ledger_look import read_and_hash

        seen = read_and_hash(path)
        if seen.kind == "file" and seen.hash is not None:
            found = [record for record in found if record[2] != seen.hash]
    return found


def pending(data: Any, session: str) -> list[tuple[str, int | None, str, str]]:
    """(path, edited_ns of the entry, agent, hash known) for each file another session edited
    after `session` did; then (path, None, agent, hash known) for each file that left the
    ledger with a change `session` may not know of."""
    files = data.get("files") if isinstance(data, dict) else None
    found: list[tuple[str, int | None, str, str]] = []
    for path, entry in files.items() if isinstance(files, dict) else ():
        if isinstance(entry, dict) and "earlier" in entry and isinstance(path, str) and path.startswith("/"):
            record = earlier_of(entry).get(session)
            if record is not None and type(entry.get("edited_ns")) is int:
                found.append((path, entry["edited_ns"], record["agent"], record["hash"]))
    left = data.get("left") if isinstance(data, dict) else None
    for record in left if isinstance(left, list) else ():
        if isinstance(record, dict) and record.get("session") == session and _good_left(record):
            found.append((record["path"], None, record["agent"], record["hash"]))
    return found


def _recorded_dev(data: Any, path: str) -> Any:
    """The device `path` was recorded on: its entry's, else its `left` record's (or None)."""
    entry = files_of(data).get(path)
    if isinstance(entry, dict) and "dev" in entry:
        return entry["dev"]
    return next((r.get("dev") for r in _left_of(data) if r.get("path") == path), None) if isinstance(data, dict) else None


def _good_left(record: dict[str, Any]) -> bool:
    path, agent = record.get("path"), record.get("agent")
    return (isinstance(path, str) and path.startswith("/") and "\x00" not in path
            and isinstance(agent, str) and agent != "" and is_hash(record.get("hash")))


def told_elsewhere(data: Any, session: str, lines: list[str], room: int, deadline: int,
                   read: bool) -> list[tuple[str, int | None, str]]:
    """Add to `lines` what `session` must hear of files it no longer owns (another session
    edited them after it, or they left the ledger), as room allows; the records to drop."""
    from app.core.ledger_line import utf16_len

    told: list[tuple[str, int | None, str]] = []
    for line, record in check_pending(data, session, deadline, read):
        if line is None:
            told.append(record)  # left the ledger unchanged: nothing to tell, the record goes
        elif utf16_len(line) + 1 <= room:  # no room left: told at the next prompt
            room -= utf16_len(line) + 1
            lines.append(line)
            told.append(record)
    return told


def check_pending(data: Any, session: str, deadline: int | None = None,
                  read: bool = False) -> list[tuple[str | None, tuple[str, int | None, str]]]:
    """(the line, or None when there is nothing to tell and the record may go; the record to
    drop once told: (path, edited_ns or None for `left`, hash known)) for `session`'s files
    that another session changed after its edit or that left the ledger.

    Each record costs a read: once a file has been read (`read`: the prompt read one
    before) and `time.monotonic_ns()` is past `deadline`, the rest wait for the next prompt."""
    import time

    from app.core.ledger_entry import stats
    from app.core.ledger_line import change_line
    from app.core.ledger_look import read_and_hash
    from app.core.log import log

    found: list[tuple[str | None, tuple[str, int | None, str]]] = []
    records = pending(data, session)
    answered = stats([(record[0], _recorded_dev(data, record[0])) for record in records])  # one on a dead mount waits
    for path, edited_ns, agent, known in records:
        if path not in answered:
            continue
        if read and deadline is not None and time.monotonic_ns() > deadline:
            log("ledger: files another session changed are left for the next prompt (time spent)")
            break
        seen = read_and_hash(path)
        read = read or seen.fresh
        if seen.kind == "unreadable":
            log(f"ledger: cannot read {path}; not judged this time")
            continue
        if seen.kind == "file" and seen.hash == known:
            if edited_ns is None:
                found.append((None, (path, None, known)))
            continue  # the other session left the content as this one knew it
        found.append((change_line(path, agent), (path, edited_ns, known)))
    return found


def drop_told(data: dict[str, Any], session: str, told: list[tuple[str, int | None, str]]) -> None:
    """Forget the `earlier` and `left` records just told, on entries not edited again since."""
    files = data["files"]
    for path, edited_ns, known in told:
        if edited_ns is None:
            _drop_left(data, path, session, known)
            continue
        entry = files.get(path)
        if not isinstance(entry, dict) or entry.get("edited_ns") != edited_ns:
            continue
        earlier = entry.get("earlier")
        if isinstance(earlier, dict) and isinstance(earlier.get(session), dict) \
                and earlier[session].get("hash") == known:
            del earlier[session]
            if not earlier:
                del entry["earlier"]


def _drop_left(data: dict[str, Any], path: str, session: str, known: str) -> None:
    _store_left(data, [r for r in _left_of(data)
                       if (r.get("path"), r.get("session"), r.get("hash")) != (path, session, known)])
