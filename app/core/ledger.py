"""The edit ledger: tell Claude once when a file changed after its last edit (issue 7).

Claude cannot know that the user or a tool changed a file after it edited it. After each
Edit, Write, MultiEdit or NotebookEdit, `record_edit` stores the path, the FNV-1a 64 hash
of its content, the agent that edited it (`main`, or for a call carrying `agent_id` the
subagent's `agent_type`), the session, and the file's stat (size, mtime_ns, ctime_ns,
inode, device). At each prompt,
`prompt_lines` compares the files whose last edit came from that session: a file whose stat
did not move is not read again; one whose stat moved is rehashed, and it changed only when
its content did (a touch is no change). A deleted file is a change. Each change is told once, to
the main thread: the entry is marked with what was told and stays quiet until the content
moves again. A subagent's prompt (it carries `agent_id`) is told nothing and marks nothing.

An entry this version cannot trust (a number that is NaN, infinite, negative or a bool, a
hash that is not 16 hex digits) is skipped and logged, never judged: one bad entry never
silences the others. It stays in the file (it may be a newer version's) and ages out.

State: `ledger.json` under CLAUDETTO_HOME, written only through `state.update_json`:
`{"version": 1, "files": {path: entry}}`, the oldest edit first; at most LEDGER_MAX_FILES.

This module is on the hot path of every prompt and edit: it imports what the interpreter
has loaded anyway (os, stat, time) and nothing else of the stdlib: no typing, dataclasses,
collections or pathlib (each costs milliseconds per call). The hash and the bounds are
imported only by the calls that use them: a prompt with nothing changed needs neither.
"""

from __future__ import annotations

import os
import stat
import time

from app.core import paths
from app.core.log import log
from app.core.state import read_json, update_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MAIN_AGENT = "main"
SUBAGENT = "subagent"  # a subagent call that does not say its agent_type
VERSION = 1

# A stat taken less than this after the file's own mtime/ctime cannot prove that the
# content is unchanged: a later write in the same timestamp tick would leave it equal
# (git's "racy clean"). Such a stat is checked by hash until it is old enough.
RACY_NS = 2_000_000_000

# Files longer than this are not read on the hot path (about 0.3 s with C, 3 s without).
MAX_HASH_BYTES_C = 256 * 1024 * 1024
MAX_HASH_BYTES_PY = 32 * 1024 * 1024

# Claude caps a hook's context at 10,000 UTF-16 units; lines past this wait for the next
# prompt (still untold) rather than being cut off after they were marked told.
CONTEXT_BUDGET = 9_000

_SIG_KEYS = ("size", "mtime_ns", "ctime_ns", "inode", "dev")


class LedgerFile:
    """One ledger entry judged against the disk now (for the CLI and the TUI). Read-only by
    convention; a plain class because dataclasses and NamedTuple cost an import here."""

    __slots__ = ("path", "agent", "session", "hash", "changed", "deleted", "told", "edited_ns")

    def __init__(self, path: str, agent: str, session: str, hash: str, changed: bool,  # noqa: A002
                 deleted: bool, told: bool, edited_ns: int) -> None:
        self.path = path
        self.agent = agent
        self.session = session
        self.hash = hash  # FNV-1a 64 of the content at the last edit, 16 hex digits
        self.changed = changed  # the content differs from the last edit, or the file is gone
        self.deleted = deleted
        self.told = told  # the model was already told of this very change
        self.edited_ns = edited_ns  # when the last edit was recorded

    def __repr__(self) -> str:
        return (f"LedgerFile({self.path!r}, agent={self.agent!r}, changed={self.changed}, "
                f"deleted={self.deleted}, told={self.told})")


class _Look:
    """What is on disk at a path: a file (hash None when too large to read), or nothing."""

    __slots__ = ("kind", "hash", "sig", "fresh")

    def __init__(self, kind: str, digest: str | None, sig: dict[str, int] | None, fresh: bool) -> None:
        self.kind = kind  # "file" | "deleted" | "unreadable"
        self.hash = digest
        self.sig = sig  # the stat the hash belongs to, with seen_ns
        self.fresh = fresh  # the sig was taken now (not a stored one reused)


# --- the hash, imported when a file is read (a prompt with nothing changed reads none) ------


def fnv1a_64(data: bytes | bytearray | memoryview) -> int:
    from app.core.fnv import fnv1a_64 as hash_of

    return hash_of(data)


def hex64(value: int) -> str:
    from app.core.fnv import hex64 as shown_as

    return shown_as(value)


def c_available() -> bool:
    from app.core.fnv import c_available as available

    return available()


# --- the line -----------------------------------------------------------------------------


def change_line(path: str, agent: str, *, deleted: bool = False) -> str:
    """The context line, exactly as CONTRACT writes it; for a deleted file the same line and
    then "It was deleted." (a deletion is a change: the line a reader matches stays whole)."""
    line = f"The user or a tool changed `{shown(path)}` after the last edit of `{shown(agent)}`."
    return f"{line} It was deleted." if deleted else line


def shown(text: str) -> str:
    """`text` as one printable line of valid Unicode: a newline as `\\n`, and a byte that is
    not UTF-8 (a `\\udcXX` surrogate escape, which no UTF-8 output can carry) as `\\xXX`,
    the way Python writes bytes."""
    if not text.isascii():
        try:
            text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no file name can hold: each one on its own
            text = "".join(_shown_char(c) for c in text)
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _shown_char(c: str) -> str:
    if "\udc80" <= c <= "\udcff":
        return f"\\x{ord(c) - 0xDC00:02x}"
    if "\ud800" <= c <= "\udfff":
        return f"\\u{ord(c):04x}"
    return c


def utf16_len(text: str) -> int:
    """The length Claude counts: UTF-16 units (a character past U+FFFF counts two)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if c > "\uffff")


# --- recording an edit (PostToolUse) ------------------------------------------------------


def edited_path(payload: Mapping[str, Any]) -> str | None:
    """The absolute path an edit tool wrote (`notebook_path` for NotebookEdit), or None."""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    key = "notebook_path" if payload.get("tool_name") == "NotebookEdit" else "file_path"
    raw = tool_input.get(key)
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None
    if not os.path.isabs(raw):
        cwd = payload.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            return None
        raw = os.path.join(cwd, raw)
    return os.path.normpath(raw)


def is_subagent(payload: Mapping[str, Any]) -> bool:
    """`agent_id` is THE subagent marker; `agent_type` alone is also sent on the main thread
    of a session started with `--agent`."""
    return payload.get("agent_id") not in (None, "")


def agent_of(payload: Mapping[str, Any]) -> str:
    """`main`, or for a subagent's call its `agent_type` (`subagent` when it has none)."""
    if not is_subagent(payload):
        return MAIN_AGENT
    agent = payload.get("agent_type")
    return agent if isinstance(agent, str) and agent.strip() else SUBAGENT


def record_edit(payload: Mapping[str, Any]) -> bool:
    """PostToolUse of an edit tool: store (or refresh) the file's entry. Never raises for bad
    input: a missing path or session, or an unreadable file, is logged and leaves no entry."""
    tool = payload.get("tool_name")
    path = edited_path(payload)
    if path is None:
        log(f"ledger: {tool} without a usable path, no entry")
        return False
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        log(f"ledger: {tool} of {path} without a session_id, no entry")
        return False
    return record_file(path, agent_of(payload), session)


def record_file(path: str, agent: str, session: str) -> bool:
    """Hash `path` now and make it the newest entry of the ledger; False (logged) if it
    cannot be read. A new edit of a listed file refreshes its entry and forgets what was told."""
    look = _read_and_hash(path)
    if look.kind != "file" or look.hash is None or look.sig is None:
        why = {"deleted": "missing or not a regular file", "unreadable": "unreadable"}.get(look.kind, "too large to hash")
        log(f"ledger: {path} is {why}, no entry")
        return False
    entry: dict[str, Any] = {
        "agent": agent,
        "session": session,
        "hash": look.hash,
        **look.sig,
        "edited_ns": time.time_ns(),
        "told": None,
    }
    from app.core.bounds import bound

    limit = bound("LEDGER_MAX_FILES")

    def change(data: Any) -> dict[str, Any]:
        current = _writable(data)
        files = current["files"]
        files.pop(path, None)
        files[path] = entry
        while len(files) > limit:
            oldest = next(iter(files))
            del files[oldest]
            log(f"ledger: {oldest} left the ledger (LEDGER_MAX_FILES={limit})")
        return current

    update_json(paths.ledger_file_str(), change, _empty)
    return True


# --- checking at a prompt (UserPromptSubmit) ----------------------------------------------


def prompt_lines(payload: Mapping[str, Any]) -> list[str]:
    """The lines to add at this prompt: one per file of this session changed since its last
    edit and not told yet. Marks them told. Nothing changed: an empty list, no write.

    A subagent's prompt gets nothing and marks nothing: the lines are the main thread's,
    which would otherwise never hear of a change a subagent was told of."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        log("ledger: prompt without a session_id, nothing checked")
        return []
    if is_subagent(payload):
        return []
    return check_session(session)


def check_session(session: str) -> list[str]:
    """Check the files last edited by `session`; see `prompt_lines`.

    This runs at every prompt, so the common case is made cheap: a file whose stat equals
    the one its hash was taken with (and was old enough then, see RACY_NS) and that holds no
    told record costs one stat and no read; only the others go through `_judge`."""
    files = _files(read_json(paths.ledger_file_str(), _empty))
    lines: list[str] = []
    updates: dict[str, tuple[int, dict[str, Any]]] = {}
    room = CONTEXT_BUDGET
    stat_of = os.stat
    for path, entry in _trusted(files, session):
        if entry.get("told") is None:
            try:
                st = stat_of(path)
            except (OSError, ValueError):
                st = None
            if (st is not None and st.st_size == entry["size"] and st.st_mtime_ns == entry["mtime_ns"]
                    and st.st_ctime_ns == entry["ctime_ns"] and st.st_ino == entry["inode"]
                    and st.st_dev == entry["dev"] and stat.S_ISREG(st.st_mode)
                    and entry["seen_ns"] - max(entry["mtime_ns"], entry["ctime_ns"]) >= RACY_NS):
                continue  # unchanged since it was hashed: what `_judge` would say, without a read
        judged, fields, tell = _judge(path, entry)
        if tell:
            line = change_line(path, entry["agent"], deleted=judged.deleted)
            cost = utf16_len(line) + 1
            if cost > room:  # no room left: told at the next prompt, not lost
                fields.pop("told", None)
            else:
                room -= cost
                lines.append(line)
        if fields:
            updates[path] = (entry["edited_ns"], fields)
    if updates:
        _apply(updates)
    return lines


def ledger_files() -> list[LedgerFile]:
    """Every entry, oldest edit first, judged against the disk now. Writes nothing. Raises
    OSError when ledger.json is there but cannot be read (a FIFO in its place, no access):
    the user sees why, not an empty ledger."""
    files = _files(read_json(paths.ledger_file_str(), _empty, strict=True))
    return [_judge(path, entry)[0] for path, entry in _trusted(files)]


def _judge(path: str, entry: dict[str, Any]) -> tuple[LedgerFile, dict[str, Any], bool]:
    """One entry against the disk: (the verdict, the fields to store, whether to tell now)."""
    told = entry.get("told") if isinstance(entry.get("told"), dict) else None
    known: list[tuple[dict[str, Any], str]] = [(entry, entry["hash"])]
    if told and not told.get("deleted") and isinstance(told.get("hash"), str):
        known.append((told, told["hash"]))
    look = _look(path, known)
    fields: dict[str, Any] = {}
    tell = False

    def verdict(changed: bool, deleted: bool, was_told: bool) -> LedgerFile:
        return LedgerFile(path, entry["agent"], entry["session"], entry["hash"], changed, deleted,
                          was_told, entry["edited_ns"])

    if look.kind == "unreadable":
        log(f"ledger: cannot read {path}; not judged this time")
        return verdict(False, False, False), fields, False
    if look.kind == "file" and look.hash == entry["hash"]:
        if look.fresh and look.sig is not None and not _racy(look.sig):
            fields.update(look.sig)  # a touch: remember the new stat, rehash no more
        if told is not None:
            fields["told"] = None  # back as edited: a later change is news again
        return verdict(False, False, False), fields, False
    if look.kind == "deleted":
        was_told = bool(told and told.get("deleted"))
        if not was_told:
            fields["told"] = {"deleted": True, "hash": None}
            tell = True
        return verdict(True, True, was_told), fields, tell
    # a file whose content differs from the last edit (or too large to hash)
    assert look.sig is not None
    if look.hash is not None:
        was_told = bool(told and not told.get("deleted") and told.get("hash") == look.hash)
    else:
        was_told = bool(told and not told.get("deleted") and told.get("hash") is None and _same_sig(told, look.sig))
    if not was_told:
        fields["told"] = {"deleted": False, "hash": look.hash, **look.sig}
        tell = True
    elif look.fresh and not _racy(look.sig):
        fields["told"] = {**(told or {}), **look.sig}
    return verdict(True, False, was_told), fields, tell


def _apply(updates: dict[str, tuple[int, dict[str, Any]]]) -> None:
    """Store what a check learned, only on entries not edited again since it read them."""

    def change(data: Any) -> dict[str, Any]:
        current = _writable(data)
        for path, (edited_ns, fields) in updates.items():
            entry = current["files"].get(path)
            if isinstance(entry, dict) and entry.get("edited_ns") == edited_ns:
                entry.update(fields)
        return current

    try:
        update_json(paths.ledger_file_str(), change, _empty)
    except OSError as exc:  # the lines still go out; the next prompt may repeat them
        log(f"ledger: could not store what was told: {type(exc).__name__}: {exc}")


# --- looking at a file --------------------------------------------------------------------


def _look(path: str, known: list[tuple[dict[str, Any], str]]) -> _Look:
    """Stat first; when the stat equals a stored one (and is not racy), its hash holds
    without reading the file. Otherwise read and hash it."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return _Look("deleted", None, None, False)
    except (OSError, ValueError):
        return _Look("unreadable", None, None, False)
    if not stat.S_ISREG(st.st_mode):
        return _Look("deleted", None, None, False)
    for stored, digest in known:
        if _same_sig(stored, _sig(st, 0)) and not _racy(stored):
            return _Look("file", digest, {k: stored[k] for k in (*_SIG_KEYS, "seen_ns")}, False)
    return _read_and_hash(path)


def _read_and_hash(path: str) -> _Look:
    """Open, fstat (before reading, so a write during the read shows up as a moved stat
    next time), read, hash."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return _Look("deleted", None, None, False)
    except (OSError, ValueError):
        return _Look("unreadable", None, None, False)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _Look("deleted", None, None, False)
        sig = _sig(st, time.time_ns())
        if st.st_size > MAX_HASH_BYTES_PY and (st.st_size > MAX_HASH_BYTES_C or not c_available()):
            return _Look("file", None, sig, True)
        with open(fd, "rb", buffering=0, closefd=False) as fh:
            data = fh.read()
        return _Look("file", hex64(fnv1a_64(data)), sig, True)
    except OSError:
        return _Look("unreadable", None, None, False)
    finally:
        os.close(fd)


def _sig(st: os.stat_result, seen_ns: int) -> dict[str, int]:
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "dev": st.st_dev,
        "seen_ns": seen_ns,
    }


def _same_sig(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in _SIG_KEYS)


def _racy(sig: Mapping[str, Any]) -> bool:
    """True when the stat was taken too soon after the file's last change to trust it."""
    try:
        return int(sig["seen_ns"]) - max(int(sig["mtime_ns"]), int(sig["ctime_ns"])) < RACY_NS
    except (KeyError, TypeError, ValueError, OverflowError):
        return True


# --- the state file -----------------------------------------------------------------------


def _empty() -> dict[str, Any]:
    return {"version": VERSION, "files": {}}


def _files(data: Any) -> dict[str, Any]:
    if isinstance(data, dict) and isinstance(data.get("files"), dict):
        return data["files"]
    return {}


def _writable(data: Any) -> dict[str, Any]:
    """The ledger to change in place; JSON of another shape is moved aside, never lost."""
    if isinstance(data, dict) and isinstance(data.get("files"), dict):
        return data
    if data != _empty():
        from app.core.state import move_aside  # the one place that keeps a bad state file

        move_aside(paths.ledger_file_str(), f"a JSON {type(data).__name__} that is not a ledger")
    return _empty()


def _trusted(files: dict[str, Any], session: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The entries this version can judge, in file order; each other one is logged.

    With `session`: only that session's entries (and those no session can claim); another
    session's entries are judged, and their flaws logged, at that session's prompts."""
    good: list[tuple[str, dict[str, Any]]] = []
    for path, entry in files.items():
        if session is not None and isinstance(entry, dict):
            owner = entry.get("session")
            if owner != session and isinstance(owner, str) and owner:
                continue
        flaw = _flaw(path, entry)
        if flaw is None:
            good.append((path, entry))
        else:
            log(f"ledger: skipped the entry of {shown(str(path))}: {flaw}")
    return good


# the stat fields of an entry: (lowest, highest) value a real stat can give
_U64 = (0, 2**64 - 1)
_FILE_TIME = (-(2**95), 2**95)  # a file may be dated before 1970 or past 2262 (touch -d)
_NS = (0, 2**63 - 1)  # our own clock: never before 1970
_RANGES = {"size": _U64, "inode": _U64, "dev": _U64, "mtime_ns": _FILE_TIME, "ctime_ns": _FILE_TIME,
           "seen_ns": _NS}
_HEX = frozenset("0123456789abcdef")
_U64_MAX, (_TIME_MIN, _TIME_MAX), _NS_MAX = _U64[1], _FILE_TIME, _NS[1]


def _flaw(path: Any, entry: Any) -> str | None:
    """Why this version cannot trust an entry, or None when it can judge it. Numbers must be
    ints in range (not NaN, an infinity, a float, a bool or negative where a stat cannot be):
    they are compared, subtracted and shown, and one bad value must not stop the rest."""
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return "not an absolute path"
    if not isinstance(entry, dict):
        return "not an object"
    if not isinstance(entry.get("agent"), str) or not entry["agent"]:
        return "no agent"
    if not isinstance(entry.get("session"), str) or not entry["session"]:
        return "no session"
    if not _is_hash(entry.get("hash")):
        return "no 16-digit hash"
    if not _numbers_fit(entry):
        why = _bad_numbers(entry, {**_RANGES, "edited_ns": _NS})
        if why:
            return why
    told = entry.get("told")
    if told is None:
        return None
    if not isinstance(told, dict) or not isinstance(told.get("deleted"), bool):
        return "told is not a told record"
    if told["deleted"]:
        return None
    if told.get("hash") is not None and not _is_hash(told["hash"]):
        return "told: no 16-digit hash"
    why = _bad_numbers(told, _RANGES)
    return f"told: {why}" if why else None


def _numbers_fit(entry: dict[str, Any]) -> bool:
    """`_bad_numbers(entry, ...)` is None, in one expression: the check runs for every entry at
    every prompt, and the loop that names the bad number is only needed when there is one."""
    size, inode, dev = entry.get("size"), entry.get("inode"), entry.get("dev")
    mtime, ctime = entry.get("mtime_ns"), entry.get("ctime_ns")
    seen, edited = entry.get("seen_ns"), entry.get("edited_ns")
    return (type(size) is int and type(inode) is int and type(dev) is int and type(mtime) is int
            and type(ctime) is int and type(seen) is int and type(edited) is int
            and 0 <= size <= _U64_MAX and 0 <= inode <= _U64_MAX and 0 <= dev <= _U64_MAX
            and _TIME_MIN <= mtime <= _TIME_MAX and _TIME_MIN <= ctime <= _TIME_MAX
            and 0 <= seen <= _NS_MAX and 0 <= edited <= _NS_MAX)


def _is_hash(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 16 and _HEX.issuperset(value)


def _bad_numbers(record: dict[str, Any], ranges: dict[str, tuple[int, int]]) -> str | None:
    for key, (low, high) in ranges.items():
        value = record.get(key)
        if type(value) is not int:
            return f"{key} is {str(value)[:40]}, not an integer"
        if not low <= value <= high:
            return f"{key} {value} is out of range"
    return None
