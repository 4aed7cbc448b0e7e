"""Claude sessions from `sessions/*.json`, and the one rule of liveness (CONTRACT "Live session").

Two generations of files are read: `<pid>.json` with `pid`, `sessionId`, `cwd`, `status`,
`procStart`, ... and the older `pid-<n>.json` with `session_id` and `cwd`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from app.core import paths
from app.core.log import log

_LEGACY_NAME = re.compile(r"^pid-(\d+)\.json$")
MAX_PID = 2**22  # Linux's largest pid_max: a bigger pid names no running process


@dataclass(frozen=True)
class Session:
    """One session file, as Claude wrote it. `live` is judged when the file is read."""

    session_id: str | None
    pid: int | None
    cwd: str | None
    status: str | None
    file: str
    proc_start: str | None = None
    started_at: int | None = None
    updated_at: int | None = None
    version: str | None = None
    live: bool = True


def proc_start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (the start time in clock ticks), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(b")") + 2 :].split()
    # rest[0] is field 3 (state), so field 22 is rest[19].
    return rest[19].decode() if len(rest) > 19 else None


def process_running(pid: int, proc_start: str | None = None) -> bool:
    """Whether `pid` names a running process (not a zombie), started at `proc_start` if given.
    A pid that cannot name a process (0, negative, too big) is not running."""
    if not 0 < pid <= MAX_PID:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except (OSError, OverflowError, ValueError):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        fields = data[data.rfind(b")") + 2 :].split()
        if fields and fields[0] in (b"Z", b"X"):
            return False
        if proc_start is not None and len(fields) > 19:
            return fields[19].decode() == str(proc_start).strip()
    except OSError:
        # No /proc (not Linux) or the process just ended: kill(0) said it ran.
        return proc_start is None
    return True


def is_live(session: Session, current_session_id: str | None = None) -> bool:
    """THE liveness rule. Live: the file names a running process (same procStart when given),
    or it has no pid (keep when unsure), or it is the session that triggered the hook."""
    if current_session_id and session.session_id == current_session_id:
        return True
    if session.pid is None or session.pid <= 0:
        return True  # no usable pid (0 and below name process groups): unsure, so keep
    return process_running(session.pid, session.proc_start)


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _as_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_session_file(path: Path, current_session_id: str | None = None) -> Session | None:
    """One session file, or None (logged) when it cannot be read as a JSON object."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        log(f"sessions: skipped unreadable {path}: {exc}")
        return None
    if not isinstance(data, dict):
        log(f"sessions: skipped {path}: not a JSON object")
        return None
    pid = _as_int(data.get("pid"))
    legacy = _LEGACY_NAME.match(path.name)
    if pid is None and legacy:
        pid = int(legacy.group(1))
    proc_start = data.get("procStart")
    session = Session(
        session_id=_as_str(data.get("sessionId")) or _as_str(data.get("session_id")),
        pid=pid,
        cwd=_as_str(data.get("cwd")),
        status=_as_str(data.get("status")),
        file=str(path),
        proc_start=None if proc_start is None or isinstance(proc_start, bool) else str(proc_start),
        started_at=_as_int(data.get("startedAt")),
        updated_at=_as_int(data.get("updatedAt")),
        version=_as_str(data.get("version")),
    )
    return _with_live(session, current_session_id)


def _with_live(session: Session, current_session_id: str | None) -> Session:
    from dataclasses import replace

    return replace(session, live=is_live(session, current_session_id))


def read_sessions(current_session_id: str | None = None) -> list[Session]:
    """Every session file of `sessions/`, each judged live or not."""
    folder = paths.sessions_dir()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith(".json"):
            continue
        session = parse_session_file(folder / name, current_session_id)
        if session is not None:
            found.append(session)
    return found


def live_sessions(current_session_id: str | None = None) -> list[Session]:
    return [s for s in read_sessions(current_session_id) if s.live]


def live_session_ids(current_session_id: str | None = None) -> set[str]:
    """Ids of the live sessions; the current one always counts."""
    ids = {s.session_id for s in live_sessions(current_session_id) if s.session_id}
    if current_session_id:
        ids.add(current_session_id)
    return ids


def live_cwds(current_session_id: str | None = None, current_cwd: str | None = None) -> list[str]:
    """Working folders of the live sessions (real paths), plus the current one when given."""
    cwds = [s.cwd for s in live_sessions(current_session_id) if s.cwd]
    if current_cwd:
        cwds.append(current_cwd)
    return [os.path.realpath(c) for c in cwds]
