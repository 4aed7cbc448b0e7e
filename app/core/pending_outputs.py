"""Outputs of a background Bash call: claimed when it starts, recorded once they appear.

Claude runs the PostToolUse hook of a call made with `run_in_background: true` when the call
STARTS: what it names (`sleep 1; git clone URL /tmp/c`, `d=$(mktemp -d); build > "$d/log"`)
does not exist yet, so the evidence every record needs (app/core/created.py: born in the
call's window) cannot be had then, and such outputs used to stay for ever. So the hook
stores, beside the records of `gc/<session>.json`, a pending claim (`pending`, a key older
readers never look at) for each named path that was NOT there at the hook (one that was is
judged as any call's output, by its birth in the call's window), with the call's start, and
for an unprinted `mktemp` its template and folder.

A claim becomes a record only with evidence, read at each look (`appeared`: every reader of
the records, so the sweep, `claudetto gc`, the dashboard and a removal's last check agree)
and stored by the sweep (`settle_claims`, which fixes its identity: a folder made later at
the name is not it):

1. a named path exists, is this user's and no symlink, and was born (else, on a file system
   without birth times, its ctime and its top entries' say so) at or after the call's start
   and at most `PENDING_MAX_S` after it. A background command's clone or build starts near
   its start; an hour leaves room for a slow one before it, and a folder the user makes at
   that name later than that (the command failed) is born outside it: kept, not recorded.
2. an unprinted mktemp follows the foreground rules (app/core/mktemp.py): entries of its
   folder fitting its template, of its kind, this user's, not recorded already, born within
   `MKTEMP_WINDOW_S` of the start (a mktemp runs in the first moments of a command), exactly
   as many as its calls. Until that window is over more may come (the call's own may not be
   made yet while another program's fits): no record, not even to read, until it is final.

A claim whose path never appeared within its bound, or appeared without evidence, is
dropped at the sweep and the log says why. Once a record, everything else the GC does (age,
the Claude process of the call, dirty, unmerged, in use at the moment of removal) applies
unchanged. Loaded by the hook only for a background call naming an output.
"""

from __future__ import annotations

import math
import os
import time

from app.core.log import log
from app.core.recorder import KINDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from app.core.mktemp import MktempCall

#: How long after its start a background call's named output may be born (seconds).
PENDING_MAX_S = 3600.0
#: How long after its start a background call's unprinted mktemp may have run (seconds).
MKTEMP_WINDOW_S = 60.0
#: At most this many claims are kept in one records file (the newest).
MAX_PENDING = 256
#: Time stamps come from a coarse clock (as app/core/created.py allows).
_SLACK_S = 1.0


# --- the hook: claims -----------------------------------------------------------------------


def claim_later(payload: dict[str, Any], named: list[tuple[str, str]], unprinted: list[MktempCall],
                window: float, found: tuple[Any, Any, list[str], dict[str, Any]],
                notes: list[str]) -> list[tuple[str, str]]:
    """The named outputs of a background call that exist now (judged as any call's); each
    other one, and each unprinted mktemp, is stored as a claim. An unprinted mktemp is never
    looked for here: its own folder may not be made yet while another program's fits the
    template, and the count that would tell them apart is only final later. `found`: how
    the reader said to judge each path, where each came from, what the command copied, and
    its flags (`recorder._bash_outputs`)."""
    claims_of, origins, sources, flags = found
    since = time.time() - window
    there: list[tuple[str, str]] = []
    pending: list[dict[str, Any]] = []
    for kind, path in named:
        if os.path.lexists(path):
            there.append((kind, path))
            continue
        merged, outer = claims_of.get(path, (False, None))
        evidence = _carried(origins.get(path), sources, flags, since)
        claim = {"path": path, "kind": kind, "since": since, "merged": bool(merged),
                 "keeps_times": bool(flags.get("keeps_times")), "evidence": evidence}
        if outer is not None and not os.path.lexists(outer):
            # `cp -r src new/` with no `new` yet: cp will make `new`, the copy itself; unless
            # someone makes `new` first, and cp copies into it (`inner`: then `new/src` is the copy)
            claim.update(path=outer, inner=os.path.basename(path))
        pending.append(claim)
        notes.append(f"{kind} {claim['path']} claimed: the call runs in the background and has not made it yet")
    groups: dict[tuple[str, str | None, bool], list[MktempCall]] = {}
    for call in unprinted:
        groups.setdefault(call.key(), []).append(call)
    for (pattern, folder, directory), calls in groups.items():
        if folder is None or any(c.removed or c.maybe for c in calls):
            notes.append(f"temp of mktemp {calls[0].template!r} not claimed: its folder cannot be expanded here, "
                         "the command removes or moves its variable, or a call of it may not run (app/core/mktemp.py)")
            continue
        pending.append({"path": os.path.join(folder, calls[0].template), "kind": "temp", "since": since,
                        "evidence": _carried(None, sources, flags, since),
                        "mktemp": {"folder": folder, "pattern": pattern, "directory": directory,
                                   "count": sum(c.count for c in calls)}})
        notes.append(f"temp of mktemp {calls[0].template!r} claimed: the call runs in the background")
    if pending:
        _store_claims(payload, pending)
    return there


def _carried(origin: str | None, sources: list[str], flags: dict[str, Any], since: float) -> dict[str, Any]:
    """What the record will carry beside its identity, as a foreground call's does
    (`recorder._with_evidence`): where it came from, what the command copied."""
    from app.core.recorder import _users_temp_sources

    evidence: dict[str, Any] = {}
    if origin is not None:
        evidence["source"] = origin
    if sources:
        evidence["sources"] = sources
    theirs = _users_temp_sources([origin, *sources] if origin is not None else sources, since)
    if theirs:
        evidence["user_sources"] = theirs
    if flags.get("moved_unnamed"):
        evidence["moved_in"] = True
    return evidence


def _store_claims(payload: dict[str, Any], pending: list[dict[str, Any]]) -> None:
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        log(f"gc recorder: no session_id, {len(pending)} claim(s) not stored")
        return
    from app.core import paths
    from app.core.claude_process import claude_process
    from app.core.recorder import normal_records
    from app.core.state import update_json

    pid, start = claude_process() or (None, None)
    cwd = payload.get("cwd")
    now = time.time()
    for claim in pending:
        claim.update(session=session, time=now, cwd=cwd if isinstance(cwd, str) else "",
                     claude_pid=pid, claude_start=start)

    def change(data: Any) -> Any:
        data = normal_records(data, session)
        joined = _joined(_claims(data), pending)
        if len(joined) > MAX_PENDING:  # what is left out is never recorded: say so
            log(f"gc recorder: {len(joined) - MAX_PENDING} older claim(s) of {session} dropped: "
                f"a records file keeps at most {MAX_PENDING}")
        data["pending"] = joined[-MAX_PENDING:]
        return data

    update_json(paths.gc_records_file_str(session), change, lambda: {"session": session, "records": []},
                durable=False)


def _joined(stored: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored claims with the new ones. A later call naming the same path: its claim
    holds. A later unprinted mktemp of the same folder and template while the earlier one's
    window still runs: one claim for both calls (their count summed, the window from the first
    start to the last one's end), since each would see the other's folder and count one too
    many; once that window is over, each is judged alone (the earlier one was lost before)."""
    kept = []
    for claim in stored:
        twin = next((c for c in new if c.get("path") == claim.get("path")), None)
        if twin is None:
            kept.append(claim)
            continue
        if "mktemp" not in twin:
            continue
        spec, since = claim.get("mktemp"), claim.get("since")
        span = _span(spec) if isinstance(spec, dict) else None
        if span is None or not isinstance(spec, dict) or not isinstance(spec.get("count"), int) or not (
                isinstance(since, int | float) and math.isfinite(since)):
            continue  # a claim that cannot be read: the new one holds
        if since + span + MKTEMP_WINDOW_S < twin["since"]:
            kept.append(claim)
            continue
        twin["mktemp"]["count"] += spec["count"]
        twin["mktemp"]["span"] = min(twin["since"] - since, PENDING_MAX_S) if twin["since"] > since else span
        twin["since"] = min(since, twin["since"])
    return kept + new


def _span(spec: dict[str, Any]) -> float | None:
    """How long after a mktemp claim's start its last call started (0 for one call), or None."""
    span = spec.get("span", 0.0)
    ok = isinstance(span, int | float) and not isinstance(span, bool) and math.isfinite(span)
    return float(span) if ok and 0 <= span <= PENDING_MAX_S else None


def _claims(data: dict[str, Any]) -> list[dict[str, Any]]:
    pending = data.get("pending")
    return [c for c in pending if isinstance(c, dict)] if isinstance(pending, list) else []


# --- every look: what appeared ----------------------------------------------------------------


def appeared(data: dict[str, Any], session: str) -> list[dict[str, Any]]:
    """Records (as stored) for the claims of a records file whose path appeared with
    evidence, read now; nothing is written (a dry run stays a dry run)."""
    known = {r.get("path") for r in data["records"]}
    now = time.time()
    found: list[dict[str, Any]] = []
    for claim in _claims(data):
        records, final, _ = _judge(claim, session, known, now)
        if final:  # a mktemp guess whose count may still grow is no record yet, not even to read
            found.extend(records)
    return found


def _judge(claim: dict[str, Any], session: str, known: set[Any], now: float
           ) -> tuple[list[dict[str, Any]], bool, str | None]:
    """(the records it gives now, whether that is final, why it is dropped). Nothing and not
    final: still waiting. A claim that cannot be read is dropped."""
    since, path = claim.get("since"), claim.get("path")
    if (not isinstance(since, int | float) or isinstance(since, bool) or not math.isfinite(since)
            or not isinstance(path, str) or path[:1] != "/" or claim.get("kind") not in KINDS):
        return [], True, "the claim cannot be read"
    from app.core.hung_mounts import reachable

    if not reachable(path):  # a look there would wait for ever: not looked at, dropped past its bound
        return [], now > since + PENDING_MAX_S, "it lies on a mount that does not answer"
    if isinstance(claim.get("mktemp"), dict):
        return _judge_mktemp(claim, float(since), session, known, now)
    inner = claim.get("inner")
    if isinstance(inner, str) and inner not in ("", ".", "..") and "/" not in inner and os.path.lexists(
            os.path.join(path, inner)):
        path = os.path.join(path, inner)
    if path in known:
        return [], True, "it is recorded already"
    if not os.path.lexists(path):
        if now <= since + PENDING_MAX_S:
            return [], False, None
        return [], True, f"it never appeared within {PENDING_MAX_S:.0f} s of the call's start"
    why = _born_outside(path, float(since), float(since) + PENDING_MAX_S)
    if why is not None:
        return [], True, why
    from app.core.created import made_evidence

    made, why = made_evidence(path, float(since), float(since) + PENDING_MAX_S, merged=claim.get("merged") is True)
    if made is None:
        return [], True, why
    return [_record(claim, path, made, session)], True, None


def _born_outside(path: str, low: float, high: float) -> str | None:
    from app.core.created import birth_time

    born = birth_time(path)
    if born is None or low - _SLACK_S <= born <= high + _SLACK_S:
        return None
    return f"it was born outside the call's bound ({born - low:+.0f} s from its start, at most {high - low:.0f} s)"


def _judge_mktemp(claim: dict[str, Any], since: float, session: str, known: set[Any], now: float
                  ) -> tuple[list[dict[str, Any]], bool, str | None]:
    spec = claim["mktemp"]
    folder, pattern, count, directory = spec.get("folder"), spec.get("pattern"), spec.get("count"), spec.get("directory")
    if (not isinstance(folder, str) or folder[:1] != "/" or not isinstance(pattern, str)
            or not isinstance(count, int) or isinstance(count, bool) or count < 1):
        return [], True, "the claim cannot be read"
    import re

    try:
        fits = re.compile(pattern)
    except re.error:
        return [], True, "its template cannot be read"
    span = _span(spec)
    if span is None:
        return [], True, "the claim cannot be read"
    end = since + span + MKTEMP_WINDOW_S
    matches = [p for p in _fitting(folder, fits, directory is True, since, end) if p not in known]
    final = now > end
    if len(matches) != count:
        return [], final, (f"{len(matches)} entries of {folder} fit it within {MKTEMP_WINDOW_S:.0f} s of the "
                           f"call's start, for {count} call(s)") if final else None
    from app.core.created import made_evidence

    found = []
    for path in matches:
        made, why = made_evidence(path, since, end, merged=False)
        if made is None:
            return [], final, f"{path}: {why}" if final else None
        found.append(_record(claim, path, made, session))
    return found, final, None


def _fitting(folder: str, fits: Any, directory: bool, since: float, end: float) -> list[str]:
    """The entries of `folder` a mktemp call can have made: its template, its kind, this
    user's, born (else changed) within since..end."""
    import stat

    from app.core.created import birth_time

    found = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if not fits.fullmatch(entry.name):
                    continue
                st = entry.stat(follow_symlinks=False)
                kind = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
                born = birth_time(entry.path) or st.st_ctime
                if kind and st.st_uid == os.getuid() and since - _SLACK_S <= born <= end:
                    found.append(entry.path)
    except OSError:
        return []
    return sorted(found)


def _record(claim: dict[str, Any], path: str, made: dict[str, object], session: str) -> dict[str, Any]:
    """The record a claim gives for `path`, as the recorder stores one (`recorder._store`)."""
    from app.core.created import lstat_mtime

    carried = claim.get("evidence")
    evidence = {**(carried if isinstance(carried, dict) else {}), **made}
    if claim.get("keeps_times") is True:  # `cp -a` in the background: its mtime may be its source's
        evidence["old_times"] = lstat_mtime(path)
    return {"path": path, "kind": claim.get("kind"), "session": claim.get("session") or session,
            "time": claim.get("time"), "cwd": claim.get("cwd"), "claude_pid": claim.get("claude_pid"),
            "claude_start": claim.get("claude_start"), "evidence": evidence}


# --- the sweep: claims made records, or dropped ----------------------------------------------


def settle_claims() -> None:
    """Before a sweep judges: each claim whose output appeared with evidence becomes a record
    (its identity fixed from now on), each that cannot any more is dropped (logged), the rest
    wait. A file left with neither goes."""
    from app.core.gc_records import _read_file, change_records, records_files
    from app.core.recorder import normal_records

    for session, file in records_files():
        raw = _read_file(file)
        if not isinstance(raw, dict) or not raw.get("pending"):
            continue

        def change(data: Any, session: str = session) -> Any:
            data = normal_records(data, session)
            known = {r.get("path") for r in data["records"]}
            now = time.time()
            waiting = []
            for claim in _claims(data):
                records, final, why = _judge(claim, session, known, now)
                if final and records:
                    data["records"].extend(records)
                    known.update(r["path"] for r in records)
                elif final:
                    log(f"gc: claim of a background call on {str(claim.get('path'))[:300]} dropped: {why}")
                else:
                    waiting.append(claim)
            if waiting:
                data["pending"] = waiting
            else:
                data.pop("pending", None)
            return data

        change_records(file, change, "settle the claims")
