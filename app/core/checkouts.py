"""Session checkouts: the worktrees claudetto makes for Claude (WorktreeCreate) as Claude's
own creation would (app/core/worktree_create.py), their registry `checkouts.json`, and who
holds each one. A *session checkout* is held by the sessions that made it or started in it.
Its record keeps each session (`sessions`: id -> running) and its Claude process
(`processes`: id -> [pid, start]): one process outlives its ids (`/clear`, `/resume`).
Claude's throwaway names (`agent-*`, `wf_*`, `wf-<n>`; `bridge-*`, `job-…`, `bg-…` when no
session asks) are recorded for WorktreeRemove, never as a session's.
SessionStart claims (`claim`), SessionEnd lets go (`session_ended`), `holders` says who
still holds a checkout, app/core/release.py frees its scratch when nobody does, and
app/core/worktree_remove.py removes it. Claude's startup sweep removes throwaway worktrees
without any hook: a record whose folder is gone is dropped quietly."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from app.core import paths
from app.core.checkout_identity import folder_gone as folder_gone
from app.core.checkout_identity import gone_for_good
from app.core.hung_mounts import real_path
from app.core.log import log
from app.core.paths import inside
from app.core.state import StateBusy, locked, read_json, update_json, write_json_atomic

#: SessionEnd reasons after which Claude's process and its cwd go on: `/clear`, a `/resume` switch.
HANDOVER_REASONS = frozenset({"clear", "resume"})

Process = tuple[int, "str | None"]  # (pid, start time as Claude writes procStart)


@dataclass(frozen=True)
class Checkout:
    path: str
    project: str
    name: str
    branch: str
    kind: str


def checkout_kind(folder: str, session_id: str | None = "") -> str:
    """What WorktreeCreate makes, by the folder name Claude chose and whether a session asked:
    `agent`, `workflow` (the throwaway names above), else `session` (`--worktree`, `--bg`)."""
    from app.core.worktrees import worktree_kind

    return worktree_kind(folder, f"worktree-{folder}", session_id)


def create_checkout(cwd: str, name: str, session_id: str | None,
                    process: Process | None = None) -> Checkout:
    """Make (or find again) and record the checkout `name` of the repository holding `cwd`, a
    session's with it and its Claude process; CheckoutError when it cannot be made."""
    from app.core.checkout_identity import made_later, on_branch
    from app.core.worktree_create import CheckoutError, folder_name, make_checkout, name_problem

    problem = name_problem(name)
    if problem is not None:
        raise CheckoutError(f"claudetto: invalid worktree name {name!r}: {problem}")
    folder = folder_name(name)
    kind = checkout_kind(folder, session_id)
    if kind == "session" and not session_id:
        raise CheckoutError("claudetto: a session checkout needs session_id; none was sent")
    try:  # a checkout nobody could release or remove is not made: its registry must be writable first
        with locked(paths.checkouts_file()):
            pass
    except OSError as exc:
        raise CheckoutError(f"claudetto: cannot record the checkout in {paths.claudetto_home_str()} (CLAUDETTO_HOME): {exc.strerror or exc}; worktree not created") from exc
    repo, target, branch, made = make_checkout(cwd, folder)
    checkout = Checkout(target, repo, folder, branch, kind)
    found = None if made else record_of(target)  # a record of a worktree since replaced is none
    if not made and (found is None or made_later(*found)) and not on_branch(target, f"refs/heads/{branch}"):
        # made there by hand on a branch of its own: Claude enters it, no release or removal of
        # ours takes it (one on `worktree-<name>` is Claude's, or ours cut short before its record)
        log(f"checkouts: {target} exists on a branch claudetto did not make; entered, not recorded")
        return checkout
    register(checkout, session_id if kind == "session" else None, process, made=made)
    return checkout


# --- the registry ---------------------------------------------------------------------------


def _empty() -> dict[str, Any]:
    return {"checkouts": {}}


def edit_registry(change: Callable[[dict[str, Any]], Any]) -> Any:
    """`change` the records (path -> record) under the registry's lock (StateBusy: not had)."""
    answer: list[Any] = [None]

    def apply(data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("checkouts"), dict):
            data = _empty()
        answer[0] = change(data["checkouts"])
        return data

    update_json(paths.checkouts_file(), apply, _empty)
    return answer[0]


def _hold(entry: dict[str, Any], session_id: str, process: Process | None) -> dict[str, Any]:
    """Mark `session_id` running in `entry`, with its Claude process when known; the sessions."""
    for key, value in (("sessions", True), ("processes", list(process) if process else None)):
        if value is not None:
            entry[key] = entry[key] if isinstance(entry.get(key), dict) else {}
            entry[key][session_id] = value
    return cast("dict[str, Any]", entry["sessions"])


def register(checkout: Checkout, session_id: str | None, process: Process | None = None, *,
             made: bool = False) -> None:
    """Record `checkout`; a session that asked for it holds it (running). One found again keeps
    its state: the SessionStart that follows finishes a cut-short release, or tells its note.
    `made`: git made its worktree just now (its time and admin folder tell it from another
    worktree later found there: app/core/checkout_identity.py)."""
    from app.core.checkout_identity import admin_id

    def change(records: dict[str, Any]) -> None:
        entry = records.get(checkout.path)
        fresh = made or not isinstance(entry, dict)
        if not isinstance(entry, dict):
            entry = {"project": checkout.project, "name": checkout.name, "branch": checkout.branch,
                     "kind": checkout.kind, "state": "active", "sessions": {}}
        if fresh:
            entry.update(created=time.time(), admin=admin_id(checkout.path))
        if session_id:
            _hold(entry, session_id, process)
        records[checkout.path] = entry

    edit_registry(change)


def registry() -> dict[str, dict[str, Any]]:
    data = read_json(paths.checkouts_file(), _empty)
    checkouts = data.get("checkouts") if isinstance(data, dict) else None
    return {k: v for k, v in checkouts.items() if isinstance(v, dict)} if isinstance(checkouts, dict) else {}


def record_of(path: str) -> tuple[str, dict[str, Any]] | None:
    """(key, record) of the checkout at `path` (spelled as recorded, or its real path)."""
    entries, real = registry(), real_path(path)  # a record on a remote mount that does not answer: as written
    for key in (path, real, *(k for k in entries if real_path(k) == real)):
        if key in entries:
            return key, entries[key]
    return None


# --- who holds a session checkout -----------------------------------------------------------


def as_process(value: object) -> Process | None:
    """A recorded [pid, start] as a Process, or None when it is not one."""
    if (isinstance(value, list) and len(value) == 2 and isinstance(value[0], int)
            and not isinstance(value[0], bool) and (value[1] is None or isinstance(value[1], str))):
        return value[0], value[1]
    return None


def _mapping(entry: dict[str, Any], key: str) -> dict[str, Any]:
    return entry[key] if isinstance(entry.get(key), dict) else {}


def holders(path: str, entry: dict[str, Any], *, ending_session: str | None = None,
            ending_process: Process | None = None) -> list[str]:
    """THE rule of who holds a session checkout; nobody means it may be released. A recorded
    session holds it while it runs (`_recorded_holders`); so does any other live session whose
    cwd is inside, or a running one whose file cannot be read (unsure). The ending process
    holds nothing (`/clear` leaves earlier ids on it), nor do exiting ones (`exiting`), nor
    the ending session, unless another Claude runs it too."""
    from app.core.sessions import liveness

    ending_pid = ending_process[0] if ending_process is not None else None
    # With its process known, the ending one is told by that process alone: the same id
    # resumed in a second Claude (`claude --resume ID` in another terminal) still runs there.
    live = liveness(ending_session=ending_session if ending_pid is None else None, ending_pid=ending_pid)
    leaving = frozenset(p[0] for p in exiting(entry))
    counted = [s for s in live.sessions if s.pid not in leaving]
    found = _recorded_holders(entry, frozenset(s.session_id for s in counted if s.session_id),
                              ending_session, ending_pid, leaving)
    real = os.path.realpath(path)
    inside_it = [s for s in counted if s.session_id not in found
                 and (s.unreadable or (s.cwd and inside(real_path(s.cwd), real)))]  # a dead share's: as written
    return list(dict.fromkeys(found + [s.session_id or f"pid {s.pid}" for s in inside_it]))


def exiting(entry: dict[str, Any]) -> list[Process]:
    """The Claude processes that ended a session of this checkout for good and still run: each
    exits right after its hooks and holds nothing (two sessions ending at once would each see
    the other running, and neither release let go). A reused pid is not one."""
    from app.core.sessions import process_running
    given = entry.get("exiting")
    found = [as_process(p) for p in given] if isinstance(given, list) else []
    return [p for p in found if p is not None and process_running(*p)]


def strings(value: object) -> list[str]:
    """The text items of a recorded list; [] for anything else (a record of another shape)."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _recorded_holders(entry: dict[str, Any], live_ids: frozenset[str], ending_session: str | None,
                      ending_pid: int | None, leaving: frozenset[int] = frozenset()) -> list[str]:
    """The sessions the record names that still run: a live sessions file names them, or they
    are marked running and their recorded Claude process runs (with no process recorded: held
    only when Claude writes no sessions files here, since nothing can tell)."""
    from app.core.sessions import process_running

    processes = _mapping(entry, "processes")
    files_kept = os.path.isdir(paths.sessions_dir())
    found: list[str] = []
    for sid, marked in _mapping(entry, "sessions").items():
        proc = as_process(processes.get(sid))
        if sid == ending_session or (proc is not None and (proc[0] == ending_pid or proc[0] in leaving)):
            continue
        if sid in live_ids or (marked is True and (process_running(*proc) if proc is not None else not files_kept)):
            found.append(sid)
    return found


def claude_of(session_id: str) -> Process | None:
    """The Claude process running `session_id`: the nearest Claude above this hook, unless its
    sessions file names other sessions only. A `claude -p` that another Claude's Bash tool runs
    may keep no file: the nearest is then its parent's, which works on when that session ends."""
    from app.core.claude_process import claude_process
    from app.core.sessions import read_sessions
    found = claude_process()
    theirs = {s.session_id for s in read_sessions() if found and s.pid == found[0] and s.session_id}
    if found is None or not theirs or session_id in theirs:
        return found
    log(f"checkouts: the Claude above (pid {found[0]}) runs {', '.join(sorted(theirs))}, not {session_id}")
    return None


def process_goes_on(reason: object) -> bool:
    """Whether Claude goes on after a SessionEnd with this `reason` (what it holds is handed over)."""
    return reason in HANDOVER_REASONS


def session_ended(session_id: str, reason: object, *, process: Process | None = None,
                  wait_s: float = 0.5) -> list[str] | None:
    """SessionEnd: mark `session_id` in every checkout it holds. A hand-over (`clear`, `resume`)
    leaves it holding it, noted as handed over (the same process goes on in the same folder);
    any other reason marks it ended, and its Claude `process` exiting. Returns the session
    checkouts it let go of (whether anybody still holds them is the release's to judge), or
    None when the registry stays busy for `wait_s` (the caller hands the marking on)."""
    name = paths.checkouts_file()
    if not os.path.exists(name):
        return []
    let_go: list[str] = []
    try:
        with locked(name, wait_s=wait_s):
            data = read_json(name, _empty)
            checkouts = data.get("checkouts") if isinstance(data, dict) else None
            touched = False
            for path, entry in checkouts.items() if isinstance(checkouts, dict) else ():
                for sid in _ending_ids(entry, session_id, reason, process):
                    touched = True
                    if _mark_ended(path, entry, sid, reason, process) and path not in let_go:
                        let_go.append(path)
            if touched:
                write_json_atomic(name, data)
    except StateBusy:
        log(f"checkouts: registry busy at SessionEnd of {session_id}; marking it is handed on")
        return None
    return let_go


def _ending_ids(entry: object, session_id: str, reason: object, process: Process | None) -> list[str]:
    """The sessions of `entry` an ending marks: its own, and, when the Claude process ends for
    good, the session whose hand-over (a `/resume` switch elsewhere) it still carries."""
    sessions = entry.get("sessions") if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or not isinstance(sessions, dict):
        return []
    found = _handed(entry) if process and not process_goes_on(reason) else None
    carried = found[0] if found and found[1] and process and found[1][0] == process[0] else None
    return [sid for sid in dict.fromkeys((session_id, carried or session_id)) if sid in sessions]


def names(session_id: str, process: Process | None) -> bool:
    """Whether an ending for good of `session_id` (in `process`) has anything to mark."""
    return any(_ending_ids(e, session_id, None, process) for e in registry().values())


def _mark_ended(path: str, entry: dict[str, Any], session_id: str, reason: object,
                process: Process | None) -> bool:
    """One record's part of `session_ended`; whether the session let go of a session checkout."""
    sessions = entry["sessions"]
    if process_goes_on(reason):
        sessions[session_id] = True
        entry["handover"] = {"session": session_id, "reason": reason, "time": time.time()}
        log(f"checkouts: {path}: handed over by {session_id} ({reason}); the process goes on")
        return False
    sessions[session_id] = False
    handed = entry.get("handover")
    if isinstance(handed, dict) and handed.get("session") == session_id:
        del entry["handover"]  # that hand-over is over: the process itself ended
    if process is not None and process[1] is not None:  # without its start, a reused pid would pass
        _set_exiting(entry, process, True)
    log(f"checkouts: {path}: session {session_id} ended ({reason})")
    return entry.get("kind") == "session"


def _set_exiting(entry: dict[str, Any], process: Process, on: bool) -> None:
    """Add (or take back) `process` among the exiting ones; those gone are dropped."""
    kept = [p for p in exiting(entry) if p[0] != process[0]] + ([process] if on else [])
    entry["exiting"] = [list(p) for p in kept]


@dataclass(frozen=True)
class Claim:
    """A checkout a starting session took: its `state` before, and its untold `last_release`."""
    path: str
    state: str
    last_release: dict[str, Any] | None


def _claims(key: str, entry: dict[str, Any], session_id: str, real_cwd: str | None) -> bool:
    if entry.get("kind") != "session":
        return False  # subagents', workflows' and hand-made checkouts are left alone
    sessions = entry.get("sessions")
    if isinstance(sessions, dict) and session_id in sessions:
        return True  # a resume fires from the launch folder, before Claude enters the checkout
    return real_cwd is not None and inside(real_cwd, real_path(key))


def claimable(session_id: str, cwd: str | None) -> dict[str, dict[str, Any]]:
    """The session checkouts a session starting in `cwd` would claim (nothing is changed)."""
    real = os.path.realpath(cwd) if cwd else None
    return {k: e for k, e in registry().items() if _claims(k, e, session_id, real)}


def claim(session_id: str, cwd: str | None, process: Process | None, source: object) -> list[Claim]:
    """SessionStart: the session claims (running) every session checkout whose record names it
    or that holds its cwd; a hand-over by the same process (`/clear`, `/resume`) ends there.
    Records whose folder is gone for good are dropped quietly."""
    real, gone = (os.path.realpath(cwd) if cwd else None), gone_for_good(registry())

    def change(records: dict[str, Any]) -> list[Claim]:
        claimed: list[Claim] = []
        for key in list(records):
            entry = records[key]
            if not isinstance(entry, dict):
                continue
            if key in gone and folder_gone(key) is True:
                del records[key]
                log(f"checkouts: {key} is gone (Claude's own sweep, or by hand); its record is dropped")
                continue
            if not _claims(key, entry, session_id, real):
                continue
            before = str(entry.get("state") or "active")
            _end_handover(entry, _hold(entry, session_id, process), session_id, process, source)
            if process is not None and "exiting" in entry:
                _set_exiting(entry, process, False)  # a process starting a session goes on
            entry["state"] = "active"
            cut = entry.pop("cut_short", None)
            if isinstance(cut, dict):  # not finished: say what its first part took
                entry["last_release"] = {"time": cut.get("time"), "session": cut.get("session"),
                                         "deleted": [r for r in strings(cut.get("planned"))
                                                     if not os.path.lexists(os.path.join(key, r))],
                                         "bytes": None, "kept": [], "cut_short": True}
            last = entry.get("last_release")
            told = dict(last) if isinstance(last, dict) and not last.get("told") else None
            if told is not None:
                entry["last_release"]["told"] = session_id
            claimed.append(Claim(key, before, told))
            log(f"checkouts: {key}: claimed by {session_id} (was {before})")
        return claimed

    return list(edit_registry(change) or [])


def _handed(entry: dict[str, Any]) -> tuple[str, Process | None] | None:
    """The session a pending hand-over names, with the Claude process recorded for it."""
    handed = entry.get("handover")
    old = handed.get("session") if isinstance(handed, dict) else None
    return (old, as_process(_mapping(entry, "processes").get(old))) if isinstance(old, str) else None


def _end_handover(entry: dict[str, Any], sessions: dict[str, Any], session_id: str,
                  process: Process | None, source: object) -> None:
    found = _handed(entry)
    if found is None or found[0] == session_id:
        return
    old, theirs = found
    if (theirs[0] == process[0]) if theirs and process else source == entry["handover"].get("reason"):
        sessions[old] = False
        del entry["handover"]
