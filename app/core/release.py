"""Release of a session checkout: once no session holds it, delete its declared scratch,
keep everything else, and leave the checkout on disk for a later session to reclaim.

What is scratch is app/core/scratch.py (CONTRACT "Declared scratch"): never `.git`, `.tmp`
or a path holding a tracked file, so `.tmp/` survives every path that releases, a finish
after a cut-short one included. What SessionStart tells the model of a release is
app/core/release_notes.py.

A release runs in two steps, so that a process killed midway is never taken for a checkout
in use with half its scratch gone:

1. under the registry lock, the holders are judged once more and the record says "release
   was cut short" (state `cut_short`, the folders about to go, the process doing it);
2. each folder goes through removal.remove (moved aside, re-checked by `guard`, journaled);
3. the record is cleared and the checkout marked `released`, with what went.

Killed after step 1, the checkout stays `cut_short` (shown by `claudetto worktrees`) until
`claudetto release PATH` or the next session starting there finishes it. One release of a
checkout runs at a time (a lock per checkout), so a `cut_short` found under that lock is one
whose process is gone. A session claiming the checkout meanwhile stops the rest: `guard`
puts back every folder it is asked about from then on.

SessionEnd hands the release to a detached process (`spawn_release`, `python -P -m
app.core.release`) so the hook returns within Claude's 1.5 s whatever the size; that
process moves each folder into the trash and one detached purge deletes them.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from app.core import checkouts, paths
from app.core.checkout_identity import gone_status, same_checkout
from app.core.log import log, printable
from app.core.reopen import entered_again, state_after_release
from app.core.scratch import scratch_plan, secret_inside
from app.core.verdict import Action, Reason, Verdict, settled

RULE = "release"
KIND = "scratch"
CUT_SHORT = ("release was cut short: the process releasing it ended before it finished; "
             "`claudetto release PATH` or the next session started there finishes it")
#: How long a release waits for another release of the same checkout to end: `claudetto
#: release` answers `busy` soon; SessionEnd's detached release has time, and must not give
#: up on a checkout the other release left held.
LOCK_WAIT_S = 2.0
DETACHED_LOCK_WAIT_S = 60.0
UNRELEASED = frozenset({"active", "cut_short"})
#: How long the detached release waits for the registry to mark a SessionEnd the hook could not.
MARK_WAIT_S = 30.0

@dataclass(frozen=True)
class Release:
    """What one release did. `status`: `released`, `dry_run`, `held` (`holders` say by whom), `busy`
    (another release of it runs), `not_managed` (not a session checkout claudetto made: left alone),
    `missing` (its folder is gone: the record is dropped), `away` (its project too, a drive not mounted, or
    a remote mount that does not answer).
    `verdicts`: one per scratch path, action `remove` (reason `scratch`), `keep` (why) or
    `missing`; `freed` is the disk bytes that went (or would)."""

    path: str
    status: str
    state: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    holders: tuple[str, ...] = ()
    freed: int = 0
    dry_run: bool = False
    trashed: bool = False  # something went into the trash: a purge finishes it


# --- the release ----------------------------------------------------------------------------


def lock_of(key: str) -> str:
    """The lock one release of the checkout `key` holds while it runs (WorktreeRemove too)."""
    from app.core.fnv import fnv1a_64, hex64

    return os.path.join(paths.claudetto_home_str(), "releases", hex64(fnv1a_64(os.fsencode(key))))


def _ours(entry: object) -> bool:
    """Whether the record is still in the `cut_short` this process wrote (nobody claimed it)."""
    cut = entry.get("cut_short") if isinstance(entry, dict) else None
    return (isinstance(entry, dict) and entry.get("state") == "cut_short" and isinstance(cut, dict)
            and cut.get("pid") == os.getpid())


def release_checkout(path: str, *, session: str | None = None,
                     process: checkouts.Process | None = None, trash: bool | None = False,
                     dry_run: bool = False, lock_wait_s: float = LOCK_WAIT_S,
                     spawn: bool = True, states: frozenset[str] | None = None) -> Release:
    """Release the session checkout at `path` now, or finish a release that was cut short.

    `session` and `process` (the session ending, or starting and about to claim it) hold
    nothing here. `trash`: True moves every folder into the trash for one detached purge
    (spawned here unless `spawn=False`), False purges here. `dry_run` judges and measures,
    and writes nothing. `lock_wait_s`: how long it waits for another release of it before
    it answers `busy`. `states`: the record states in which it runs, judged under that lock
    (None: any): a SessionEnd's release leaves one released by another ending's since the
    last claim; a SessionStart finishes only a `cut_short` one. A purge running
    meanwhile never takes a folder it is still judging (the trash keeps it pending until its
    journal line: app/core/trash.py). A checkout whose folder (or the folder above it) is
    now a symlink is `not_managed`: what it points at is not the checkout."""
    from app.core.state import StateBusy, locked

    found = checkouts.record_of(path)
    if found is None:
        return Release(path, "not_managed", dry_run=dry_run)
    key, entry = found
    if entry.get("kind") != "session":
        return Release(key, "not_managed", str(entry.get("state") or ""), dry_run=dry_run)
    if checkouts.folder_gone(key) is not False and (gone := gone_status(key, entry, dry_run=dry_run)) is not None:
        return Release(key, gone, None if gone == "missing" else str(entry.get("state") or ""), dry_run=dry_run)
    if swapped(key):
        return Release(key, "not_managed", str(entry.get("state") or ""), dry_run=dry_run)
    if dry_run:
        return _judge(key, entry, session, process, dry_run=True)
    try:
        with locked(lock_of(key), wait_s=lock_wait_s):
            now = str((checkouts.registry().get(key) or {}).get("state") or "active")
            if states is not None and now not in states and not entered_again(key):
                log(f"release: {key}: already {now}; nothing to do")
                return Release(key, "released" if now == "released" else "held", now)
            result = _release(key, session, process, trash, spawn)
    except StateBusy:
        log(f"release: {key}: another release of it still runs; nothing done")
        return Release(key, "busy", str(entry.get("state") or ""))
    return result


def swapped(key: str) -> bool:
    """Whether the checkout at `key` is no folder now, or it, `.claude/worktrees` or `.claude`
    is a symlink (WorktreeCreate makes none), or it holds a worktree git made after its record
    (the user's own, made where a released one was): a release would delete the scratch of
    what it points at (the main checkout's `node_modules`) and report it as this checkout's."""
    parent = os.path.dirname(key)
    try:
        odd = any(os.path.islink(p) for p in (key, parent, os.path.dirname(parent))) or not same_checkout(key)
    except (OSError, ValueError):
        odd = True
    if odd:
        log(f"release: {key} is a symlink or no folder now, not the checkout claudetto made; nothing released")
    return odd


def _judge(key: str, entry: dict[str, Any], session: str | None,
           process: checkouts.Process | None, *, dry_run: bool) -> Release:
    """A dry run: who holds it, and what a release would delete."""
    from app.core import removal

    state = str(entry.get("state") or "active")
    who = checkouts.holders(key, entry, ending_session=session, ending_process=process)
    if who:
        return Release(key, "held", state, holders=tuple(who), dry_run=dry_run)
    project = entry.get("project") if isinstance(entry.get("project"), str) else None
    plan, kept = scratch_plan(key, project)
    verdicts = [_verdict(key, rel, "keep", reason, session, project) for rel, reason in kept]
    for rel in plan:
        if _process_inside(os.path.join(key, rel)):
            verdicts.append(_verdict(key, rel, "keep", "in_use", session, project))
            continue
        done = removal.remove(os.path.join(key, rel), key, RULE, kind=KIND, session=session, dry_run=True)
        verdicts.append(settled(_verdict(key, rel, "remove", "scratch", session, project), done))  # refused: kept
    freed = sum(v.size or 0 for v in verdicts if v.action == "remove")
    return Release(key, "dry_run", state, tuple(verdicts), freed=freed, dry_run=True)


def _process_inside(*folders: str) -> bool:
    """A running process works in, runs from or holds open something in the scratch (a dev
    server whose binary lives in node_modules): deleting it would break that process."""
    from app.core.sessions import liveness

    real = [os.path.realpath(f) for f in folders]
    found = liveness().process_inside(*real)
    if found:
        log(f"release: {folders[0]} kept: a running process uses {printable(found)}")
    return found is not None


def _verdict(key: str, rel: str, action: Action, reason: Reason, session: str | None,
             project: str | None, size: int | None = None) -> Verdict:
    return Verdict(path=os.path.join(key, rel), kind=KIND, action=action, reason=reason,
                   rule=RULE, root=key, size=size, session=session, project=project)


def _release(key: str, session: str | None, process: checkouts.Process | None,
             trash: bool | None, spawn: bool) -> Release:
    """The three steps, under this checkout's release lock."""
    record = checkouts.registry().get(key) or {}
    if record.get("state") == "cut_short":
        from app.core.purge import settle_leftovers

        settle_leftovers()  # a folder the killed release moved but never journaled comes back
    project = record.get("project") if isinstance(record.get("project"), str) else None
    plan, kept = scratch_plan(key, project)
    state, who = checkouts.edit_registry(lambda records: _cut_short(records, key, plan, session, process))
    if state == "not_managed":
        return Release(key, "not_managed")
    if who:
        log(f"release: {key} kept: held by {', '.join(who)}")
        return Release(key, "held", state, holders=tuple(who))
    verdicts, trashed = _prune(key, plan, session, process, trash, project)
    verdicts = [_verdict(key, rel, "keep", reason, session, project) for rel, reason in kept] + verdicts
    state, deleted, freed = _released(key, record, verdicts, session, process)
    if trashed and spawn:
        from app.core.purge import spawn_purge

        spawn_purge()
    if record.get("state") == "cut_short":
        from app.core.purge import leftovers_step

        leftovers_step({})  # what the killed release left in a trash is purged too
    kept_now = [v for v in verdicts if v.action == "keep"]
    log(f"release: {key}: {state}; deleted {len(deleted)} scratch path(s), {freed} bytes"
        + (f"; kept {len(kept_now)} ({', '.join(sorted({v.reason for v in kept_now}))})" if kept_now else ""))
    return Release(key, "released", state, tuple(verdicts), freed=freed, trashed=trashed)


def _cut_short(records: dict[str, Any], key: str, plan: list[str], session: str | None,
               process: checkouts.Process | None) -> tuple[str, list[str]]:
    """Step one, under the registry lock: the holders judged once more; nobody holds it,
    so the record says "release was cut short" with the folders about to go (and those a
    release cut short earlier planned) until step three clears it."""
    from app.core.claude_process import start_of

    entry = records.get(key)
    if not isinstance(entry, dict) or entry.get("kind") != "session":
        return "not_managed", []
    who = checkouts.holders(key, entry, ending_session=session, ending_process=process)
    if who:
        return str(entry.get("state") or "active"), who
    before = entry.get("cut_short")
    earlier = checkouts.strings(before.get("planned") if isinstance(before, dict) else None)
    entry["state"] = "cut_short"
    entry["cut_short"] = {"time": time.time(), "pid": os.getpid(), "proc_start": start_of(os.getpid()),
                          "session": session, "failure": CUT_SHORT, "planned": sorted(set(plan) | set(earlier))}
    return "cut_short", []


def _released(key: str, record: dict[str, Any], verdicts: list[Verdict], session: str | None,
              process: checkouts.Process | None) -> tuple[str, list[str], int]:
    """Step three: what went (with what a release cut short earlier had taken) noted as the
    last release, and the checkout `released` unless somebody claimed it meanwhile.
    (state, deleted paths, bytes freed)."""
    cut = record.get("cut_short")
    earlier = checkouts.strings(cut.get("planned") if isinstance(cut, dict) else None)
    gone = [rel for rel in earlier if not os.path.lexists(os.path.join(key, rel))]
    deleted = sorted(set(gone) | {os.path.relpath(v.path, key) for v in verdicts if v.action == "remove"})
    freed = sum(v.size or 0 for v in verdicts if v.action == "remove")

    def change(records: dict[str, Any]) -> str:
        entry = records.get(key)
        if not isinstance(entry, dict):
            return "missing"
        last = entry.get("last_release")
        # a release before this one that no starting session was told of yet: its note stays
        untold: dict[str, Any] = last if isinstance(last, dict) and not last.get("told") else {}
        earlier = checkouts.strings(untold.get("deleted"))
        before = untold["bytes"] if type(untold.get("bytes")) is int else 0
        entry["last_release"] = {"time": time.time(), "session": session, "deleted": sorted(set(deleted) | set(earlier)),
                                 "bytes": freed + before, "told": None,
                                 "kept": [{"path": os.path.relpath(v.path, key), "reason": v.reason}
                                          for v in verdicts if v.action == "keep"]}
        if _ours(entry):  # a session that entered meanwhile holds it: `active` (app/core/reopen.py)
            entry["state"] = state_after_release(key, entry, session, process)
            del entry["cut_short"]
        return str(entry.get("state"))

    return checkouts.edit_registry(change), deleted, freed


def _prune(key: str, plan: list[str], session: str | None, process: checkouts.Process | None,
           trash: bool | None, project: str | None) -> tuple[list[Verdict], bool]:
    """Step two: each scratch path through removal.remove, re-checked at that moment."""
    from app.core import removal, scanner
    from app.core.unique_work import unique_work

    verdicts: list[Verdict] = []
    trashed = False
    stop: Reason | None = None
    for rel in plan:
        full = os.path.join(key, rel)
        if stop is not None:
            verdicts.append(_verdict(key, rel, "keep", stop, session, project))
            continue
        size = scanner.scan(full)

        def guard(where: str, full: str = full, rel: str = rel, size: scanner.TreeSize = size) -> str | None:
            entry = checkouts.registry().get(key)
            if swapped(key):
                return "symlink"
            if not _ours(entry) or checkouts.holders(key, entry or {}, ending_session=session,
                                                     ending_process=process):
                return "live"
            if _process_inside(full, where):
                return "in_use"
            if secret_inside(where, rel) is not None:
                return "dirty"  # written since the plan: the only copy of that token
            return unique_work(where, size.repos, original=full)

        done = removal.remove(full, key, RULE, kind=KIND, session=session, size=size, trash=trash,
                              spawn=False, guard=guard)
        trashed = trashed or done.trashed
        answer = settled(_verdict(key, rel, "remove", "scratch", session, project), done)
        verdicts.append(answer)
        if answer.action == "keep" and answer.reason in ("live", "journal"):
            stop = answer.reason  # claimed meanwhile, or nothing can be journaled: the rest stays
    return verdicts, trashed


# --- SessionEnd: the detached release -------------------------------------------------------


def spawn_release(paths_: list[str], session: str, process: checkouts.Process | None,
                  cwd: str | None, *, mark: bool = False, reason: str | None = None) -> int | None:
    """Start the release of `paths_` detached (`jobs.start_detached`), done if nobody holds
    them; its pid, or None (logged) when it cannot start. `mark`: the SessionEnd (`reason`)
    could not be marked in the registry in time, so the release marks it first."""
    from app.core import fastjson
    from app.core.jobs import start_detached

    order = fastjson.dumps({"paths": paths_, "session": session, "cwd": cwd, "mark": mark, "reason": reason,
                            "process": list(process) if process is not None else None}, ensure_ascii=True)
    try:
        return start_detached("app.core.release", [order])
    except (OSError, ValueError) as exc:
        log(f"release: cannot start the release of {', '.join(paths_) or session}: {exc}")
        return None


def _child_main(argv: list[str]) -> int:
    """The detached release: every folder moved into the trash, then one purge."""
    from app.core import fastjson
    from app.core.log import bind

    try:
        order = fastjson.loads(argv[0]) if len(argv) == 1 else None
    except ValueError:
        order = None
    if not isinstance(order, dict) or not isinstance(order.get("paths"), list):
        return 2
    session = order.get("session") if isinstance(order.get("session"), str) else None
    bind(order.get("cwd") if isinstance(order.get("cwd"), str) else None, session)
    process = checkouts.as_process(order.get("process"))
    wanted = list(order["paths"])
    if order.get("mark") is True and session:
        reason = order.get("reason")
        wanted += checkouts.session_ended(session, reason, process=process, wait_s=MARK_WAIT_S) or []
    trashed = False
    for path in dict.fromkeys(p for p in wanted if isinstance(p, str)):
        try:
            done = release_checkout(path, session=session, process=process, trash=True, spawn=False,
                                    lock_wait_s=DETACHED_LOCK_WAIT_S, states=UNRELEASED)
        except Exception as exc:  # noqa: BLE001 - a detached job logs, never prints
            log(f"release: {path} failed: {type(exc).__name__}: {exc}")
            continue
        trashed = trashed or done.trashed
        if done.status not in ("released", "held"):
            log(f"release: {path}: {done.status}")
    if trashed:
        from app.core.purge import spawn_purge

        spawn_purge()
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))


def release_json(done: Release) -> dict[str, object]:
    """`claudetto release --json`: the release and one entry per scratch path."""
    return {"path": done.path, "dry_run": done.dry_run, "status": done.status, "state": done.state,
            "holders": list(done.holders), "entries": _entries(done), "freed": done.freed}


def release_lines(done: Release) -> list[str]:
    """The text report of a release that ran (or would): RELEASED (WOULD_RELEASE), one
    DELETED (WOULD_DELETE) per path that went, one KEPT per path kept and why."""
    entries = _entries(done)
    head = "WOULD_RELEASE" if done.dry_run else "RELEASED"
    lines = [f"{head} {done.path} state={done.state} freed={done.freed}"]
    lines += [f"{'WOULD_DELETE' if done.dry_run else 'DELETED'} {e['size']} {e['path']}"
              for e in entries if e["status"] in ("removed", "would_remove")]
    lines += [f"KEPT {e['reason']} {e['path']}" for e in entries if e["status"] == "kept"]
    return [printable(line) for line in lines]


def _entries(done: Release) -> list[dict[str, object]]:
    return [{"path": v.path, "status": v.status if done.dry_run or v.action != "remove" else "removed",
             "size": v.size or 0, "reason": v.reason} for v in done.verdicts]
