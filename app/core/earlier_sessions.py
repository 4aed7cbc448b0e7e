"""The session ids a running Claude process had before its current one: live while it runs.

Claude gives a running process a new session id on `/clear`, `/resume` and an in-process
fork, and rewrites `sessionId` in its `sessions/<pid>.json`: the old id is then in no file,
yet the process that ran it goes on. Its background tasks still run (their
`claude-<uid>/<slug>/<old id>/tasks/*.output` is appended to by Claude itself, which holds
no handle on it between writes), and it can `/resume` the old id again, scratchpad and all.
Judged by its files alone, the old id would be dead the moment its process changed ids.

So the hooks note which Claude process runs which session (`note_for_job`, called as a
SessionStart or a hand-over SessionEnd hands its work to a detached job, in the hook's own
process, whose ancestors include that Claude), in `CLAUDETTO_HOME/claude-processes.json`:
`{"processes": {"<pid>": {"start": "<procStart>", "sessions": {"<id>": "<cwd>" | null}}}}`.
`running_sessions()` gives back, as sessions, the ids noted for a process that still runs
with the start it was noted with (a reused pid is another process); a process gone takes
its ids with it, and its entry is dropped at the next note. app/core/sessions.py `liveness`
counts them with the sessions files.
"""

from __future__ import annotations

import os
from typing import Any

from app.core import paths
from app.core.log import log
from app.core.sessions import MAX_PID, Session, process_running

FILE_NAME = "claude-processes.json"
#: A process keeps its newest ids past this many `/clear`s; processes past this many are
#: not noted (a pid of every running Claude fits many times over).
MAX_IDS = 64
MAX_PROCESSES = 512
#: A note waits this long for the file's lock, then is skipped (logged): SessionEnd's 1.5 s.
LOCK_WAIT_S = 0.2
#: SessionStart sources of a process that changes ids (its file may still name the old one).
_SWITCHES = frozenset({"clear", "resume", "fork", "compact"})


def file_str() -> str:
    return os.path.join(paths.claudetto_home_str(), FILE_NAME)


def note_for_job(job: str, payload: dict[str, Any]) -> None:
    """Note the Claude process behind a hook that starts `job`: at SessionStart, the
    session it starts; at a SessionEnd whose process goes on (`clear`, `resume`), the
    session it leaves. Nothing for other jobs, an ending for good, or no Claude found."""
    session, cwd = payload.get("session_id"), payload.get("cwd")
    if not isinstance(session, str) or not session or len(session) > 200:
        return
    cwd = cwd if isinstance(cwd, str) and cwd.startswith("/") else None
    if job == "session-end":
        if payload.get("reason") not in ("clear", "resume"):
            return
        claude = _ending_claude(payload.get("claude_pid"))
    elif job == "session-start":
        claude = _claude_running(session, payload.get("source"))
    else:
        return
    if claude is not None and claude[1]:
        note(claude[0], claude[1], session, cwd)


def _ending_claude(pid: object) -> tuple[int, str | None] | None:
    """The Claude process that hands its session over: the one the SessionEnd hook found
    (`claude_pid`), else the nearest above this hook (its file may name the new id already)."""
    from app.core.claude_process import claude_process, start_of

    if pid is None:
        return claude_process()
    if isinstance(pid, bool) or not isinstance(pid, int) or not 1 < pid <= MAX_PID:
        return None
    return pid, start_of(pid)


def _claude_running(session: str, source: object) -> tuple[int, str | None] | None:
    """The Claude above this hook when it runs `session`: its sessions file names it, or no
    session, or names another while the process switches ids (`source`). A Claude that keeps
    no file (a teammate, a headless `claude -p`, one that another Claude's Bash tool started
    included) nearer to this hook than any Claude with a file is the one that runs it."""
    from app.core import fastjson
    from app.core.claude_process import ancestors, claude_process, fileless_claude
    from app.core.sessions import _read_file

    found = claude_process()
    alone = fileless_claude()
    if alone is not None:
        log(f"sessions: {session} may run in Claude {alone[0]}, which keeps no sessions file")
        chain = [os.getppid(), *ancestors(os.getppid())]
        if found is None or found[0] not in chain[:chain.index(alone[0]) if alone[0] in chain else 0]:
            return alone
    if found is None:
        return None
    folder = paths.sessions_dir()
    named: set[str] = set()
    for name in (f"{found[0]}.json", f"pid-{found[0]}.json"):
        try:
            data = fastjson.loads(_read_file(folder / name))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            named |= {v for v in (data.get("sessionId"), data.get("session_id")) if isinstance(v, str)}
    return found if not named or session in named or source in _SWITCHES else alone


def places() -> list[str]:
    """The notes files: claudetto's state, and the one beside the logs in Claude's temp root.
    Every claudetto that shares this temp folder reads that one, whatever state folder it
    keeps: another account's (`CLAUDE_CONFIG_DIR=~/.claude-work`, its plugin's own
    `CLAUDE_PLUGIN_DATA`) and the terminal's `claudetto clean`. Noted only in its own state,
    a Claude's ids before `/clear` were dead to them, and their session folders went. A
    log root that is not a folder of this user's (a symlink, another user's) is not used, nor
    one holding a `.git` (the user's own clone, as the gate-log rule says: notes written there
    were files in their working tree); one that is our state folder under another name (a
    link) is that one place."""
    import stat

    own = file_str()
    root = os.path.join(paths.claude_tmp_root_str(), "claudetto")
    try:
        st = os.lstat(root)
        usable = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not os.path.lexists(
            os.path.join(root, ".git"))
    except FileNotFoundError:
        usable = True  # made as the logs' folder is
    except OSError:
        usable = False
    shared = os.path.join(root, FILE_NAME)
    same = os.path.realpath(os.path.dirname(own)) == os.path.realpath(root)
    return [own, shared] if usable and not same else [own]


def note(pid: int, start: str, session: str, cwd: str | None) -> None:
    """Note that the Claude process `pid` (started at `start`) runs `session`, in every
    notes file (`places`); entries of processes no longer running are dropped. Skipped
    (logged) where a file stays locked."""
    for name in places():
        _note_in(name, pid, start, session, cwd)


def _note_in(name: str, pid: int, start: str, session: str, cwd: str | None) -> None:
    from app.core.state import StateBusy, locked, read_json, write_json_atomic

    try:
        with locked(name, wait_s=LOCK_WAIT_S):
            data = read_json(name, dict)
            known = data.get("processes") if isinstance(data, dict) else None
            kept = {key: entry for key, entry in (known.items() if isinstance(known, dict) else ())
                    if _running(key, entry)}
            entry = kept.get(str(pid))
            ids = dict(entry["sessions"]) if entry is not None and entry.get("start") == start else {}
            ids.pop(session, None)
            ids[session] = cwd  # the newest last
            kept[str(pid)] = {"start": start, "sessions": dict(list(ids.items())[-MAX_IDS:])}
            if len(kept) > MAX_PROCESSES:
                return
            write_json_atomic(name, {"processes": kept}, durable=False)  # a power cut ends the processes too
    except (StateBusy, OSError) as exc:
        log(f"sessions: cannot note that Claude {pid} runs {session}: {exc}")


def _running(key: object, entry: object) -> tuple[int, str] | None:
    """(pid, start) of a noted process of the right shape that still runs, else None."""
    if not isinstance(key, str) or not key.isdigit() or not isinstance(entry, dict):
        return None
    start, ids = entry.get("start"), entry.get("sessions")
    if not isinstance(start, str) or not start or not isinstance(ids, dict):
        return None
    pid = int(key)
    return (pid, start) if 1 < pid <= MAX_PID and process_running(pid, start) else None


def running_sessions() -> list[Session]:
    """The noted sessions (in every notes file, `places`) of every process that still runs
    with its noted start, each once, as a live session of that process (its file: the notes
    file that named it first)."""
    from app.core.state import read_json

    found: dict[tuple[int, str], Session] = {}
    for name in places():
        if not os.path.exists(name):
            continue
        data = read_json(name, dict)
        known = data.get("processes") if isinstance(data, dict) else None
        for key, entry in known.items() if isinstance(known, dict) else ():
            process = _running(key, entry)
            if process is None:
                continue
            for sid, cwd in entry["sessions"].items():
                if isinstance(sid, str) and sid and (process[0], sid) not in found:
                    found[process[0], sid] = Session(
                        session_id=sid, pid=process[0], cwd=cwd if isinstance(cwd, str) else None, status=None,
                        file=name, proc_start=process[1], live=True, file_named=False)
    return list(found.values())
