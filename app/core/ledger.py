"""The edit ledger: tell Claude once when a file changed after its last edit.

Claude cannot know that the user or a tool changed a file after it edited it. After each
Edit, Write, MultiEdit or NotebookEdit, `record_edit` stores the path, the FNV-1a 64 hash
of its content, the agent that edited it (`main`, or for a call carrying `agent_id` the
subagent's `agent_type`), the session, and the file's stat (size, mtime_ns, ctime_ns,
inode, device). At each prompt, `prompt_lines` compares the files whose last edit came from
that session: a file whose stat did not move is not read again; one whose stat moved is
rehashed, and it changed only when its content did (a touch is no change). A deleted file
is a change. Each change is told once, to the main thread: the entry is marked with what
was told and stays quiet until the content moves again. A subagent's prompt (it carries
`agent_id`) is told nothing and marks nothing.

This module is what the hooks, the CLI and the screen call. The rest lives beside it: the
state file, the checks an entry must pass and when its stat stands for the content
(`ledger_entry`), the read and the hash of a file whose stat moved (`ledger_look`), the line
the model reads (`ledger_line`), and what a session must still hear of a file it no longer
owns: another session edited it after it, or it left a full ledger (`ledger_shared`).

State: `ledger.json` under CLAUDETTO_HOME, written only through `state.update_json`.

This module is on the hot path of every prompt and edit: it imports what the interpreter
has loaded anyway (time) and nothing else of the stdlib: no typing, dataclasses,
collections or pathlib (each costs milliseconds per call). The look at the disk, the hash,
the bounds and the line are imported only by the calls that use them: a prompt with nothing
changed needs none of them.
"""

from __future__ import annotations

import time

from app.core import paths
from app.core.ledger_entry import (
    RACY_NS,
    VERSION,
    edited_path,
    empty,
    failed,
    files_of,
    racy,
    same_sig,
    to_look,
    trusted,
    writable,
)
from app.core.log import log
from app.core.state import read_json, update_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from app.core.ledger_look import Look

# the names other modules (and older callers) take from here
__all__ = ["CONTEXT_BUDGET", "MAIN_AGENT", "RACY_NS", "SUBAGENT", "VERSION", "LedgerFile", "agent_of",
           "c_available", "check_session", "edited_path", "failed", "fnv1a_64", "hex64", "is_subagent", "ledger_files",
           "prompt_lines", "record_edit", "record_file"]

MAIN_AGENT = "main"
SUBAGENT = "subagent"  # a subagent call that does not say its agent_type

# Claude caps a hook's context at 10,000 UTF-16 units; lines past this wait for the next
# prompt (still untold) rather than being cut off after they were marked told.
CONTEXT_BUDGET = 9_000

# Claude kills a UserPromptSubmit hook after 30 s, and the user waits on it. Rehashing is
# the content's cost (~0.3 s for 256 MiB with fnv-c, ~3 s for 32 MiB without): past this
# much time the files still to be read wait for the next prompt, untold and unmarked. A
# hook killed at 30 s would store nothing and do the very same reads at every prompt after.
PROMPT_BUDGET_NS = 5_000_000_000


class LedgerFile:
    """One ledger entry judged against the disk now (for the CLI and the TUI). Read-only by
    convention; a plain class because dataclasses and NamedTuple cost an import here.
    `edit_size` and `edit_mtime_ns` are the stat the entry holds: taken at the last edit,
    or at a later look that found the same content (a touch)."""

    __slots__ = ("path", "agent", "session", "hash", "changed", "deleted", "told", "edited_ns",
                 "edit_size", "edit_mtime_ns")

    def __init__(self, path: str, agent: str, session: str, hash: str, changed: bool,  # noqa: A002
                 deleted: bool, told: bool, edited_ns: int, edit_size: int | None = None,
                 edit_mtime_ns: int | None = None) -> None:
        self.path = path
        self.agent = agent
        self.session = session
        self.hash = hash  # FNV-1a 64 of the content at the last edit, 16 hex digits
        self.changed = changed  # the content differs from the last edit, or the file is gone
        self.deleted = deleted
        self.told = told  # the model was already told of this very change
        self.edited_ns = edited_ns  # when the last edit was recorded
        self.edit_size = edit_size
        self.edit_mtime_ns = edit_mtime_ns

    def __repr__(self) -> str:
        return (f"LedgerFile({self.path!r}, agent={self.agent!r}, changed={self.changed}, "
                f"deleted={self.deleted}, told={self.told})")


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


# --- recording an edit (PostToolUse) ------------------------------------------------------


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
    input: a missing path or an unreadable file is logged and leaves no entry (a missing
    session is `NO_SESSION`'s)."""
    tool = payload.get("tool_name")
    path = edited_path(payload)
    if path is None:
        log(f"ledger: {tool} without a usable path, no entry")
        return False
    session = session_of(payload)
    if failed(payload.get("tool_response")):
        log(f"ledger: {tool} of {path} failed and did not change it, no entry")
        return False
    return record_file(path, agent_of(payload), session)


#: The session of an event that names none (Claude always does; a hand-made or older payload
#: may not): its edits are recorded, not lost, and told at a prompt that names none either.
NO_SESSION = "no-session"


def session_of(payload: Mapping[str, Any]) -> str:
    session = payload.get("session_id")
    return session if isinstance(session, str) and session else NO_SESSION


def record_file(path: str, agent: str, session: str) -> bool:
    """Hash `path` now and make it the newest entry of the ledger; False (logged) if it
    cannot be read. A new edit of a listed file refreshes its entry and forgets what was told."""
    from app.core.ledger_look import read_and_hash

    seen = read_and_hash(path)
    if seen.kind != "file" or seen.hash is None or seen.sig is None:
        why = {"deleted": "missing or not a regular file", "unreadable": "unreadable"}.get(seen.kind, "too large to hash")
        log(f"ledger: {path} is {why}, no entry")
        if seen.kind == "file" and seen.sig is not None:  # too large: its old entry would tell this edit
            from app.core.ledger_shared import forget

            forget(path, session, seen.sig)
        return False
    entry: dict[str, Any] = {
        "agent": agent,
        "session": session,
        "hash": seen.hash,
        **seen.sig,
        "edited_ns": time.time_ns(),
        "told": None,
    }
    from app.core.bounds import bound

    limit = bound("LEDGER_MAX_FILES")

    def change(data: Any) -> dict[str, Any]:
        current = writable(data)
        files = current["files"]
        from app.core.ledger_shared import drop_aliases, handed_over, leave, settled

        earlier = handed_over(files.pop(path, None), session, entry["hash"])
        files[path] = {**entry, "earlier": earlier} if earlier else entry
        drop_aliases(files, path, session, entry["dev"], entry["inode"])
        while len(files) > limit:
            oldest = next(iter(files))
            leave(current, oldest, files.pop(oldest), f"was full (LEDGER_MAX_FILES={limit})")
        if "left" in current:
            settled(current, path, session, entry["dev"], entry["inode"])
        return current

    update_json(paths.ledger_file_str(), change, empty, durable=False)
    return True


# --- checking at a prompt (UserPromptSubmit) ----------------------------------------------


def prompt_lines(payload: Mapping[str, Any], deliver: Callable[[list[str]], None] | None = None) -> list[str]:
    """The lines to add at this prompt: one per file of this session changed since its last
    edit and not told yet. Marks them told. Nothing changed: an empty list, no write.

    `deliver`, when given, gets the lines before they are marked told; when it raises (the
    hook's stdout is closed, Claude cancelled the prompt) nothing is marked and the lines
    come again at the next prompt: a notice is repeated rather than lost.

    A subagent's prompt gets nothing and marks nothing: the lines are the main thread's,
    which would otherwise never hear of a change a subagent was told of."""
    session = session_of(payload)
    if is_subagent(payload):
        return []
    return check_session(session, deliver)


def check_session(session: str, deliver: Callable[[list[str]], None] | None = None) -> list[str]:
    """Check the files last edited by `session`; see `prompt_lines`.

    This runs at every prompt, so the common case is made cheap: a file whose stat equals
    the one its hash was taken with (and was old enough then, see `ledger_entry`) and that
    holds no told record costs one stat and no read; only the others go through `_judge`,
    and only until PROMPT_BUDGET_NS is spent (each prompt reads at least one file, and what
    it learns is stored, so the next prompt goes on where this one stopped)."""
    data = read_json(paths.ledger_file_str(), empty)
    files = files_of(data)
    lines: list[str] = []
    updates: dict[str, tuple[int, dict[str, Any]]] = {}
    room = CONTEXT_BUDGET
    deadline = time.monotonic_ns() + PROMPT_BUDGET_NS
    read = False
    late = 0
    pending = to_look(trusted(files, session))
    ahead: dict[str, Look] = {}
    if len(pending) > 1:
        from app.core.ledger_look import look_ahead

        ahead = look_ahead([(path, _known(entry)) for path, entry in pending], deadline)
    for path, entry in pending:
        seen = ahead.get(path)
        if seen is None and read and time.monotonic_ns() > deadline:
            late += 1
            continue
        judged, fields, tell, fresh = _judge(path, entry, seen)
        read = read or fresh
        if tell:
            from app.core.ledger_line import change_line, utf16_len

            line = change_line(path, entry["agent"])
            cost = utf16_len(line) + 1
            if cost > room:  # no room left: told at the next prompt, not lost
                fields.pop("told", None)
            else:
                room -= cost
                lines.append(line)
        if fields:
            updates[path] = (entry["edited_ns"], fields)
    told_earlier: list[tuple[str, int | None, str]] = []
    if _elsewhere(data, files):
        from app.core.ledger_shared import told_elsewhere

        told_earlier = told_elsewhere(data, session, lines, room, deadline, read)
    if late:
        log(f"ledger: {late} file(s) left for the next prompt: this one spent its {PROMPT_BUDGET_NS // 10**9} s")
    if lines and deliver is not None:
        deliver(lines)  # first: a line that never reached the model must not be marked told
    if updates or told_earlier:
        _apply(updates, session, told_earlier)
    return lines


def _elsewhere(data: Any, files: dict[str, Any]) -> bool:
    """Whether the ledger holds records of files a session no longer owns (`ledger_shared`)."""
    return bool(isinstance(data, dict) and data.get("left")) or any(
        "earlier" in e for e in files.values() if isinstance(e, dict))


def ledger_files() -> list[LedgerFile]:
    """Every entry, oldest edit first, judged against the disk now. Writes nothing. Raises
    OSError when ledger.json is there but cannot be read (a FIFO in its place, no access):
    the user sees why, not an empty ledger."""
    from app.core.hung_mounts import reachable
    from app.core.ledger_look import _UNREADABLE

    files = files_of(read_json(paths.ledger_file_str(), empty, strict=True))
    # a file on a remote mount that does not answer is not looked at (a look waits for ever)
    return [_judge(path, entry, None if reachable(path) else _UNREADABLE)[0] for path, entry in trusted(files)]


# --- judging one entry ----------------------------------------------------------------------


def _known(entry: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The contents a look may find without a read: the one the entry was edited with, then
    the one the model was last told of, each with the stat stored beside it."""
    told = entry.get("told") if isinstance(entry.get("told"), dict) else None
    known: list[tuple[dict[str, Any], str]] = [(entry, entry["hash"])]
    if told and not told.get("deleted") and isinstance(told.get("hash"), str):
        known.append((told, told["hash"]))
    return known


def _judge(path: str, entry: dict[str, Any], seen: Look | None = None) -> tuple[LedgerFile, dict[str, Any], bool, bool]:
    """One entry against the disk (or against `seen`, a look just taken): (the verdict, the
    fields to store, whether to tell now, whether the file was read)."""
    told = entry.get("told") if isinstance(entry.get("told"), dict) else None
    if seen is None:
        from app.core.ledger_look import look

        seen = look(path, _known(entry))
    fields: dict[str, Any] = {}
    changed = deleted = was_told = tell = False
    if seen.kind == "unreadable":
        log(f"ledger: cannot read {path}; not judged this time")
    elif seen.kind == "file" and seen.hash == entry["hash"]:
        fields = _as_edited(seen, told)
    elif seen.kind == "deleted":
        changed = deleted = True
        was_told, fields = _gone(told)
    else:  # a file whose content differs from the last edit (or too large to hash)
        changed = True
        was_told, fields = _moved(seen, told)
    tell = changed and not was_told
    verdict = LedgerFile(path, entry["agent"], entry["session"], entry["hash"], changed, deleted, was_told,
                         entry["edited_ns"], entry["size"], entry["mtime_ns"])
    return verdict, fields, tell, seen.fresh


def _as_edited(seen: Look, told: dict[str, Any] | None) -> dict[str, Any]:
    """The content is the edited one again: a new stat worth keeping (a touch), and no told
    record, so that a later change is news again."""
    fields: dict[str, Any] = {}
    if seen.fresh and seen.sig is not None and not racy(seen.sig):
        fields.update(seen.sig)  # a touch: remember the new stat, rehash no more
    if told is not None:
        fields["told"] = None
    return fields


def _gone(told: dict[str, Any] | None) -> tuple[bool, dict[str, Any]]:
    """The file is gone: (told already, the fields to store)."""
    if told and told.get("deleted"):
        return True, {}
    return False, {"told": {"deleted": True, "hash": None}}


def _moved(seen: Look, told: dict[str, Any] | None) -> tuple[bool, dict[str, Any]]:
    """The content differs from the edit: (the model was told of this very content, the
    fields to store). A file too large to hash is this content while its stat holds."""
    assert seen.sig is not None
    live = told if told and not told.get("deleted") else None
    if seen.hash is not None:
        was_told = live is not None and live.get("hash") == seen.hash
    else:
        was_told = live is not None and live.get("hash") is None and same_sig(live, seen.sig)
    if not was_told:
        return False, {"told": {"deleted": False, "hash": seen.hash, **seen.sig}}
    if seen.fresh and not racy(seen.sig):
        return True, {"told": {**(told or {}), **seen.sig}}
    return True, {}


def _apply(updates: dict[str, tuple[int, dict[str, Any]]], session: str = "",
           told_earlier: list[tuple[str, int | None, str]] | None = None) -> None:
    """Store what a check learned, only on entries not edited again since it read them."""

    def change(data: Any) -> dict[str, Any]:
        current = writable(data)
        if told_earlier:
            from app.core.ledger_shared import drop_told

            drop_told(current, session, told_earlier)
        for path, (edited_ns, fields) in updates.items():
            entry = current["files"].get(path)
            if isinstance(entry, dict) and entry.get("edited_ns") == edited_ns:
                entry.update(fields)
        return current

    try:
        update_json(paths.ledger_file_str(), change, empty, durable=False)
    except OSError as exc:  # the lines still go out; the next prompt may repeat them
        log(f"ledger: could not store what was told: {type(exc).__name__}: {exc}")
