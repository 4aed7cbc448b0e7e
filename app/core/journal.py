"""The removal journal: `journal.jsonl`, one JSON object per line, one line per removal.

Every call of `removal.remove()` that removes (or fails to, or is refused) appends one line
here; the dashboard sums it per day to plot the space claudetto freed. Lines are written
with `ensure_ascii`, so a path with a newline or with bytes that are not UTF-8 (kept as
surrogate escapes) still makes exactly one line, and reads back to the same path.
A removal that had to work in place writes a `started` line first and its result after: a
`started` line left open by a process that is gone is a removal cut short
(`unfinished_removals`). Both sides open it through state.open_regular: a FIFO or device where the journal belongs
is refused (a removal then keeps its folder: the journal cannot be written), never waited on.
"""

from __future__ import annotations

import errno
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from app.core import journal_room, paths
from app.core.log import log
from app.core.state import StateBusy, locked, open_regular, open_state_file

if TYPE_CHECKING:
    from pathlib import Path

FIELDS = ("time", "path", "kind", "bytes", "rule", "session", "result")

# about two million removals; of a longer journal only its last READ_LIMIT bytes are read
READ_LIMIT = 512 * 1024 * 1024


def now_iso() -> str:
    """The current time as ISO-8601 UTC with a `Z`, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def append(entry: dict[str, Any], *, strict: bool = False) -> None:
    """Append one entry (a missing `time` is now). A lost line is logged; with `strict` it
    also raises OSError: a removal's opening line must be written before anything goes, so
    a removal whose journal cannot be written does not happen at all. Such a line, refused
    by a full disk, is written into the room kept for it (app/core/journal_room.py)."""
    record = {"time": now_iso(), **entry}
    line = (json.dumps(record, ensure_ascii=True, default=str) + "\n").encode("ascii")
    target = paths.journal_file()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            _write_line(target, line)
        except OSError as exc:
            # only for the line a removal needs before it starts: a `kept` or `refused` line
            # is worth less than the next removal's
            if not strict or exc.errno not in journal_room.FULL or not journal_room.give_up_room(target):
                raise
            log(f"journal: the disk of {target} is full; the room kept for this line was given up")
            _write_line(target, line)
    except OSError as exc:
        log(f"journal: cannot append to {target}: {exc}")
        if strict:
            raise
    else:
        journal_room.keep_room(target)


def append_result(result: Any, token: str | None = None, *, strict: bool = False) -> None:
    """The line of one removal's result (an `app.core.removal.Removal`), with its id."""
    line: dict[str, Any] = {
        "path": result.path, "kind": result.kind, "bytes": result.bytes, "rule": result.rule,
        "session": result.session, "result": result.status, "reason": result.reason,
        "files": result.files, "folders": result.folders, "trashed": result.trashed}
    if result.reason == "mount":
        line["detail"] = "a mount point lies at or inside the path; nothing was removed"
    if token is not None:
        line["id"] = token
    append(line, strict=strict)


def take_back(result: Any, token: str, why: str | None = None) -> None:
    """A `left` line of all a `removed` line counted: the file it named was gone when its
    unlink came (another removal, a session start's beside the dashboard's, took it after
    this one's check), or refused to go (`why`: `chattr +i`), so this removal freed none of
    it, and the day's total must not count it (twice, or at all)."""
    append({"path": result.path, "kind": result.kind, "bytes": result.bytes, "rule": result.rule,
            "session": result.session, "result": "left", "id": token,
            "reason": why or "gone before its unlink: another removal took it"})


def _write_line(target: Path, line: bytes) -> None:
    try:
        with locked(target, wait_s=1.0):
            _append_line(target, line, undo=True)
    except StateBusy:
        _append_line(target, line, undo=False)  # O_APPEND with one write() is still whole


def append_started(path: str, rule: str, kind: str, session: str | None, size: int, token: str) -> None:
    """The line a removal in place writes before it starts (its process named, so that a
    next run can tell it was cut short); raises OSError when it cannot be written."""
    from app.core.claude_process import start_of
    from app.core.pid_domain import own_pid_domain

    pid = os.getpid()
    machine, namespace = own_pid_domain()
    append({"path": path, "kind": kind, "bytes": size, "rule": rule, "session": session,
            "result": "started", "id": token, "pid": pid, "proc_start": start_of(pid),
            "domain": f"linux:{machine}:{namespace}" if machine and namespace else None}, strict=True)


def _append_line(target: os.PathLike[str], line: bytes, *, undo: bool) -> None:
    """One line in one write(). A full disk can take part of it and say so only by the count
    written: that is a line not written (OSError), and the part is cut off again (`undo`,
    under the lock: nobody else appended since) so the next line is not glued to it. A
    journal that already ends in part of a line (a crash, a copy cut short, another writer's
    full disk) gets a line break first: glued to that part, this line would be unreadable,
    and the record of this removal lost."""
    fd = open_state_file(os.fspath(target), os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        before = os.fstat(fd).st_size
        if before and os.pread(fd, 1, before - 1) != b"\n":
            line = b"\n" + line
        written = os.write(fd, line)
        if written != len(line):
            if undo:
                os.ftruncate(fd, before)
            elif written:
                os.write(fd, b"\n")  # ends the part: one unreadable line, skipped, not two
            raise OSError(errno.ENOSPC, f"only {written} of {len(line)} bytes of a journal line were written")
    finally:
        os.close(fd)


#: Bytes read at a time: a journal of hundreds of MB is never held whole (each session start
#: looks through it for removals cut short).
BLOCK = 1 << 20
#: Where a line names its removal. Lines are ASCII JSON written by json.dumps: a quote inside
#: a value is escaped, so these bytes only ever come from the structure itself.
_ID = re.compile(rb'"id": "([0-9a-f]{1,32})"')
_STARTED = b'"started"'


def _blocks() -> Iterator[bytes]:
    """The journal's whole lines within its last READ_LIMIT bytes, about BLOCK bytes of them
    at a time. A journal that grew past the limit is not left unread: the newest removals are
    the ones the purge settles by (a pending entry's `removed` line), a cut-short removal is
    reported by, and the dashboard plots; the oldest lines are left on disk, unread."""
    fd = open_regular(paths.journal_file())
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - READ_LIMIT - 1)  # one byte more: is the first line whole?
        if start:
            log(f"journal: {paths.journal_file()} is longer than {READ_LIMIT} bytes; its oldest lines are not read")
        cut_first, carry, total = bool(start), b"", 0
        while total <= READ_LIMIT:  # a journal growing meanwhile: what was there, and a little
            chunk = os.pread(fd, BLOCK, start + total)
            if not chunk:
                break
            total += len(chunk)
            data = carry + chunk
            end = data.rfind(b"\n") + 1
            block, carry = data[:end], data[end:]
            if cut_first and block:
                block, cut_first = block[block.find(b"\n") + 1:], False
            if block:
                yield block
        if carry and not cut_first:
            yield carry
    finally:
        os.close(fd)


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line.decode("utf-8", "surrogateescape"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _lines_read(blocks: Iterable[bytes], wanted: Callable[[bytes], bool]) -> Iterator[dict[str, Any]]:
    """The entries of the lines in `blocks` that `wanted` (given a whole block) says may hold
    one of interest; a block it passes over is never split or parsed. Unreadable lines are
    skipped (and counted in the log)."""
    bad = 0
    for block in blocks:
        if not wanted(block):
            continue
        for line in block.split(b"\n"):
            if not line.strip():
                continue
            entry = _parse(line)
            if entry is None:
                bad += 1
            else:
                yield entry
    if bad:
        log(f"journal: skipped {bad} unreadable line(s) in {paths.journal_file()}")


def _read(wanted: Callable[[bytes], bool]) -> Iterator[dict[str, Any]]:
    try:
        yield from _lines_read(_blocks(), wanted)
    except FileNotFoundError:
        return
    except OSError as exc:
        log(f"journal: cannot read {paths.journal_file()}: {exc}")


def read_entries() -> list[dict[str, Any]]:
    """Every entry in file order; a line that is not a JSON object is skipped (and logged)."""
    return list(_read(lambda _block: True))


def removed_among(tokens: Iterable[str]) -> set[str]:
    """Those of the removal ids `tokens` that have a `removed` line: the lines naming none
    of them are never parsed (a journal of 100 MB is looked through in a fraction of a
    second, not parsed whole into memory)."""
    wanted = set(tokens)
    found: set[str] = set()
    if not wanted:
        return found

    def names_one(block: bytes) -> bool:
        return any(m.group(1).decode() in wanted for m in _ID.finditer(block))

    for entry in _read(names_one):
        token = entry.get("id")
        if token in wanted and entry.get("result") == "removed":
            found.add(token)
    return found


def unfinished_removals() -> list[dict[str, Any]]:
    """`started` journal lines with no closing line whose process is gone: removals cut short
    (killed) in place. A folder renamed into the trash first is finished by the next purge;
    these are the rare ones that could not be renamed, reported so nobody is left guessing.
    Only blocks holding a `started` line, or naming one still open, are parsed: every
    session start looks, and most journals hold none."""
    from app.core.sessions import process_running

    open_lines: dict[str, dict[str, Any]] = {}

    def may_matter(block: bytes) -> bool:
        return _STARTED in block or (bool(open_lines) and any(token.encode() in block for token in open_lines))

    for entry in _read(may_matter):
        token = entry.get("id")
        if not isinstance(token, str):
            continue
        if entry.get("result") == "started":
            open_lines[token] = entry
        else:
            open_lines.pop(token, None)
    cut: list[dict[str, Any]] = []
    for entry in open_lines.values():
        pid, start = entry.get("pid"), entry.get("proc_start")
        if isinstance(pid, int) and not isinstance(pid, bool) and process_running(
                pid, start if isinstance(start, str) else None):
            continue  # still running: not cut short
        if _elsewhere_lately(entry):
            continue
        cut.append(entry)
    return cut


#: How long a removal in place started on another machine may run before it counts as cut short.
ELSEWHERE_MAX_S = 24 * 3600


def _elsewhere_lately(entry: dict[str, Any]) -> bool:
    """Whether a `started` line is of a process on another machine or in another pid
    namespace (a CLAUDETTO_HOME shared over the network), written less than ELSEWHERE_MAX_S
    ago: its pid means nothing here, and the removal may well be running there still."""
    from calendar import timegm

    from app.core.pid_domain import foreign_pid_domain

    domain = entry.get("domain")
    if not isinstance(domain, str) or not foreign_pid_domain(domain):
        return False
    try:
        written = timegm(time.strptime(str(entry.get("time")), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return False
    return time.time() - written < ELSEWHERE_MAX_S


def report_unfinished() -> list[str]:
    """Close every cut-short removal's journal entry with result `interrupted`, and say so in
    the log; the paths of those removals (what is left of them is judged again as usual)."""
    reported = []
    for entry in unfinished_removals():
        path = entry.get("path")
        append({"path": path, "kind": entry.get("kind"), "bytes": 0,
                        "rule": entry.get("rule"), "session": entry.get("session"),
                        "result": "interrupted", "id": entry.get("id"),
                        "reason": "the removing process ended before it finished"})
        log(f"removal: the removal of {path!r} was cut short; what is left of it stays until judged again")
        reported.append(str(path))
    return reported


def freed_per_day(entries: list[dict[str, Any]] | None = None) -> dict[str, int]:
    """"YYYY-MM-DD" (UTC) -> disk bytes removed that day, in date order. Only entries with
    result `removed` count, less what a `left` line says stayed in the trash (a file that
    refused to go); an entry with a bad time or byte count is left out."""
    totals: dict[str, int] = {}
    days: dict[str, bool] = {}  # each day's text checked once, not once a line
    # streamed, not read into a list first: a journal of 100 MB as dicts took 760 MB
    for entry in _read(_counts) if entries is None else entries:
        result = entry.get("result")
        if result not in ("removed", "left"):
            continue
        stamp, size = entry.get("time"), entry.get("bytes")
        if not isinstance(stamp, str) or len(stamp) < 10:
            continue
        day = stamp[:10]
        if day not in days:
            days[day] = _is_date(day)
        if not days[day]:
            continue
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            continue
        totals[day] = max(0, totals.get(day, 0) + (size if result == "removed" else -size))
    return dict(sorted(totals.items()))


def _counts(block: bytes) -> bool:
    return b'"removed"' in block or b'"left"' in block


def _is_date(text: str) -> bool:
    try:
        time.strptime(text, "%Y-%m-%d")
    except ValueError:
        return False
    return True
