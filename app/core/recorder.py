"""The output recorder: what a session makes outside the project, noted when it makes it.

PostToolUse runs this after every Bash and Write call, so it is stdlib only and does no I/O
at all unless a command made something: a temp folder (`mktemp`), a worktree (`git worktree
add`), a copy (`git clone`, `cp -r/-R/-a`), a config folder (`CLAUDE_CONFIG_DIR=`) or a
scratch file (a Write into the user's temp folder). Each output becomes one record in
`CLAUDETTO_HOME/gc/<session>.json`, once per path; the output GC (app/core/gc.py) sweeps them.

A Bash command holding none of the trigger words is not even parsed. Otherwise it is read,
never run (app/core/bash_outputs.py); a command that cannot be read records nothing and the
log says why. Two outputs need a look at the disk, after the call: a `mktemp` whose path
was not printed (`d=$(mktemp -d)`) is found by its template and the call's time
(app/core/mktemp.py), and `cp -r SRC DEST` with one source records `DEST/<name of SRC>` when
DEST was a folder already (`DEST/` too). With several sources or `-t DEST`, each copy
`DEST/<name>` is recorded, never DEST itself, which was there before and may hold anything.

Only what the call made: every output, of every kind, is recorded only with evidence that
this call created it (its birth time, else its ctime, within the call's window:
app/core/created.py; for a Write, the birth time is read at the sweep, from the window and
the file the hook stored with the record, so the hook never loads ctypes). A target that was there (`git clone URL dir || git -C dir pull`, an
old `tmp.*` a listing printed, `CLAUDE_CONFIG_DIR=` naming an existing folder, a Write over
an existing file) is not, and the log says why. A Bash record stores the identity of what
the call made (device, inode, birth time: `created.made_evidence`), so a folder that later
takes the same name is not the output. Each record also names the Claude process
whose call made it (app/core/claude_process.py), so its outputs stay in use while that
process runs, whatever session id `/clear` or `/resume` gives it.
"""

from __future__ import annotations

import os
import time

from app.core import paths
from app.core.log import log
from app.core.paths import strictly_inside

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from app.core.gc_records import OutputRecord as OutputRecord
    from app.core.gc_records import read_records as read_records

KINDS = ("temp", "worktree", "copy", "config", "scratch")

#: A command none of these words appear in makes no output: it costs no parsing, no import.
TRIGGERS = ("mktemp", "worktree", "clone", "cp", "mv ", "rsync", "CLAUDE_CONFIG_DIR", "tar ", "zip ", "unzip")


def scratch_of_write(file_path: str) -> str | None:
    """The path of a Write's file when it lies inside the user's temp folder, else None."""
    if not file_path.startswith("/"):
        return None
    path = paths.resolve_parents(file_path)  # never normpath: `sym/..` is not `.`
    tmp = paths.user_tmp_str()
    if strictly_inside(path, tmp) or strictly_inside(os.path.realpath(path), tmp):
        return path
    return None


def _stdout_of(response: Any) -> str:
    out = response.get("stdout") if isinstance(response, dict) else response
    return out if isinstance(out, str) else ""


def record_outputs(payload: dict[str, Any]) -> None:
    """PostToolUse on Bash and Write: record what the call made outside the project."""
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/"):
        cwd = None
    outputs: list[tuple[str, str]] = []
    evidence: dict[str, dict[str, object]] = {}
    later: _Into | None = None
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str) or not any(word in command for word in TRIGGERS):
            return
        outputs, later = _bash_outputs(command, payload, tool_input, cwd, evidence)
    elif tool == "Write":
        file_path = tool_input.get("file_path")
        path = scratch_of_write(file_path) if isinstance(file_path, str) else None
        evidence = _scratch_with_evidence(path, payload, tool_input) if path else {}
        outputs = [("scratch", p) for p in evidence]
    if outputs:
        _store(payload, outputs, cwd or "", evidence)
    if later is not None:  # after this call's own records: they are never lost to it
        from app.core.copied_into import copied_into_outputs
        from app.core.created import window_s

        copied_into_outputs(*later, since=time.time() - window_s(tool_input, payload.get("duration_ms")))


#: What a Bash call copied or moved into which targets (`copied_into.copied_into_outputs`).
_Into = tuple["list[tuple[str, str | None, list[str]]]", "list[str]", bool, "list[tuple[str, str, str | None]]"]


def _bash_outputs(command: str, payload: dict[str, Any], tool_input: dict[str, Any], cwd: str | None,
                  evidence: dict[str, dict[str, object]]) -> tuple[list[tuple[str, str]], _Into | None]:
    """The outputs a Bash call made (each with its evidence put into `evidence`), and what
    it copied into which targets."""
    from app.core.bash_outputs import read_bash

    origins: dict[str, str] = {}
    copied: list[tuple[str, str | None]] = []
    into: list[tuple[str, str | None, list[str]]] = []
    flags: dict[str, Any] = {}
    named, notes, unprinted, claims = read_bash(command, cwd, _stdout_of(payload.get("tool_response")), origins,
                                                copied, into, flags)
    outputs: list[tuple[str, str]] = []
    sources = copied_paths(copied) if copied else []
    response = payload.get("tool_response")
    for call in unprinted if isinstance(response, dict) and response.get("interrupted") is True else ():
        call.maybe = True  # stopped, maybe before it ran: what fits it may be another program's
    if named or unprinted:
        from app.core.created import lstat_mtime, window_s

        window = window_s(tool_input, payload.get("duration_ms"))
        if tool_input.get("run_in_background") is True:  # it makes them after this hook: claims
            from app.core.pending_outputs import claim_later

            named, unprinted = claim_later(payload, named, unprinted, window, (claims, origins, sources, flags), notes), []
        if unprinted:
            from app.core.mktemp import unprinted_paths

            found = unprinted_paths(unprinted, window, named, notes, payload.get("session_id"))
            named.extend(("temp", path) for path in found)
        outputs = _with_evidence(named, claims, window, notes, evidence, origins, sources)
    for _, path in outputs if flags.get("keeps_times") else ():  # its mtime may be its source's
        evidence[path]["old_times"] = lstat_mtime(path)
    for _, path in outputs if flags.get("moved_unnamed") else ():  # what a move brought may lie in it
        evidence[path]["moved_in"] = True
    for note in notes:
        log(f"gc recorder: {note}")
    lent = flags.get("lent") or []
    return outputs, (into, sources, bool(flags.get("keeps_times")), lent) if copied and into or lent else None


def _with_evidence(outputs: list[tuple[str, str]], claims: dict[str, tuple[bool, str | None]],
                   window: float, notes: list[str], evidence: dict[str, dict[str, object]],
                   origins: dict[str, str], copied: list[str]) -> list[tuple[str, str]]:
    """The outputs this call made, each kept only with evidence of it (app/core/created.py):
    a command names a target, it does not prove it created it. `claims` says how to judge a
    copy or worktree (merged: only a birth time can tell; outer: `cp -r SRC DEST` took
    `DEST/<name>`, but DEST itself is the copy when it was born in the call). The identity
    of each one kept goes into `evidence`, stored with its record: a later folder at the
    same name is not the call's output (`created.why_unproven`). What the command's `cp`s
    copied (`copied`) goes with each: it may lie in any of them."""
    from app.core.created import made_evidence

    now = time.time()
    since = now - window
    kept: list[tuple[str, str]] = []
    for kind, path in outputs:
        merged, outer = claims.get(path, (False, None))
        source = origins.get(path)
        made = made_evidence(outer, since, now, merged=True)[0] if outer is not None else None
        if made is not None and outer is not None:
            path = outer  # `cp -r SRC DEST`: DEST was born in the call, so cp made DEST
        else:
            made, why = made_evidence(path, since, now, merged=merged)
            if made is None:
                notes.append(f"{kind} {path} not recorded: {why}")
                continue
        if path not in evidence:
            if source is not None:
                made["source"] = source  # gone later, the copy is the only one: the GC keeps it
            if copied:
                made["sources"] = copied
            theirs = _users_temp_sources([source, *copied] if source is not None else copied, since)
            if theirs:
                made["user_sources"] = theirs
            evidence[path] = made
            kept.append((kind, path))
    return kept


def _users_temp_sources(sources: list[str], since: float) -> list[str]:
    """The sources lying in the user's temp folder that were no output: neither inside a
    recorded path nor born in this call (`mkdir a && cp -r a b`). A source in the temp folder
    is passed over when it goes (`gc_records.lost_source`: an output went, no loss), unless
    it is listed here: on a cluster the temp folder is the scratch disk the projects live on,
    and a clone of one whose origin the user removed is the only copy left. Only a call copying
    out of the temp folder pays for this look."""
    from app.core.paths import inside

    tmp = paths.user_tmp_str()
    found = [s for s in sources if strictly_inside(s, tmp) and os.path.lexists(s)]
    if not found:
        return []
    from app.core.created import CLOCK_SLACK_S, birth_time
    from app.core.gc_records import read_records

    outputs = [r.path for r in read_records()]
    theirs = []
    for source in found:
        try:
            born = birth_time(source) or os.lstat(source).st_ctime
        except OSError:
            continue
        if born < since - CLOCK_SLACK_S and not any(inside(source, o) for o in outputs):
            theirs.append(source)
    return theirs


#: At most this many copied paths are stored with the outputs of one command.
MAX_COPIED = 32


def copied_paths(copied: list[tuple[str, str | None]]) -> list[str]:
    """The absolute paths the command's `cp` and `rsync` copied (the home's `~`/`$HOME` expanded), at most
    MAX_COPIED: stored with each output of the command, whose target may not be known
    (`cp -r ~/proj "$d"/`): gone later, what was copied may be the only copy left."""
    from app.core.bash_outputs import home_spelled
    from app.core.shell_words import absolute_path, fetched, matched_now

    found: dict[str, None] = {}
    seen: set[tuple[str, str | None]] = set()
    resolved: dict[str, str] = {}  # folders resolved once for the whole command
    for source, base in copied:
        if len(found) >= MAX_COPIED:
            break
        if (source, base) in seen or fetched(source):  # read once; a bucket's (`s3://`) is fetched again
            continue
        seen.add((source, base))
        word = home_spelled(source)
        word = paths.home_str() + word[5:] if word.startswith("$HOME") and word[5:6] in ("", "/") else word
        path = absolute_path(base, word, resolved)
        if path is not None:
            found.update(dict.fromkeys(matched_now(os.path.normpath(path), MAX_COPIED)))
    return list(found)[:MAX_COPIED]


def _scratch_with_evidence(path: str, payload: dict[str, Any],
                           tool_input: dict[str, Any]) -> dict[str, dict[str, object]]:
    """{path: its evidence} when the Write may have created the file (app/core/created.py
    `write_evidence`: the birth time is read at the sweep, not here), else {} and the log
    says why."""
    from app.core.created import window_s, write_evidence

    response = payload.get("tool_response")
    said = response.get("type") if isinstance(response, dict) else None
    created = True if said == "create" else False if said == "update" else None
    now = time.time()
    evidence, why = write_evidence(path, now - window_s(tool_input, payload.get("duration_ms")), now,
                                   created=created)
    if evidence is None:
        log(f"gc recorder: scratch {path} not recorded: {why}")
        return {}
    return {path: evidence}


def _store(payload: dict[str, Any], outputs: list[tuple[str, str]], cwd: str,
           evidence: dict[str, dict[str, object]]) -> None:
    """One record per output, once per path. `evidence` (app/core/created.py) is stored
    with its record for whoever reads it to check; a path recorded before gets the new one
    (a later call made it anew: the evidence of what is there now)."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        log(f"gc recorder: no session_id, {len(outputs)} output(s) not recorded: {outputs[:3]}")
        return
    now = time.time()
    from app.core.claude_process import claude_process
    from app.core.state import update_json

    claude_pid, claude_start = claude_process() or (None, None)

    def change(data: Any) -> Any:
        data = normal_records(data, session)
        known = {r.get("path"): r for r in data["records"]}
        for kind, path in outputs:
            if path in known:
                if path in evidence:
                    known[path].update(time=now, evidence=evidence[path])
                continue
            known[path] = {"path": path, "kind": kind, "session": session, "time": now, "cwd": cwd,
                           "claude_pid": claude_pid, "claude_start": claude_start}
            if path in evidence:
                known[path]["evidence"] = evidence[path]
            data["records"].append(known[path])
        return data

    # no fsync (docs/gc.md): a power cut can lose records, and a lost record only keeps its
    # output on disk; the rename still never leaves half a file to a killed process
    update_json(paths.gc_records_file_str(session), change, lambda: {"session": session, "records": []},
                durable=False)


def normal_records(data: Any, session: str) -> dict[str, Any]:
    """A records file as read, made the expected shape without losing any good record."""
    if isinstance(data, list):
        data = {"session": session, "records": data}
    if not isinstance(data, dict):
        data = {"session": session, "records": []}
    records = data.get("records")
    data["records"] = [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
    return data

