"""Claude sessions from `sessions/*.json`, and the one rule of liveness (CONTRACT "Live session").

Two generations of files are read: `<pid>.json` with `pid`, `sessionId`, `cwd`, `status`,
`procStart`, ... and the older `pid-<n>.json` with `session_id` and `cwd`.

When unsure, keep: a file whose pid cannot be checked here (no usable pid, a `pidDomain` of
another machine or pid namespace, a `procStart` that cannot be compared) counts as live, and
so does a file that cannot be read while the process its name gives is running (Claude
rewrites the file on every status change; it is read again after a short pause first). Such
an unreadable file is `unreadable`: nobody knows what that session holds, so a sweep keeps
everything a session might hold (reason `in_use`); so does a running session whose file names
no session id, and a `sessions/` folder that is there but cannot be listed. A `pidDomain` of
another shape than Claude's text cannot be compared: live. A `pid` field whose process is not
the one of `procStart` while the process the file's name gives is: that one's. An unreadable
file last written before that process began is a crash's leftover: it holds nothing.

The ids a running Claude process had before its current one (`/clear`, `/resume`, a fork:
Claude rewrites `sessionId` in the same file) stay live while it runs
(app/core/earlier_sessions.py), and so do the ids on its command line (`claude --resume <id>`:
app/core/named_sessions.py), except at the end of that process's session.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from app.core import paths
from app.core.claude_process import proc_stat, ps_field, runs_in_a_pid_namespace, signalable
from app.core.claude_process import start_of as proc_start_time  # noqa: F401 - procStart as Claude writes it
from app.core.hung_mounts import reachable, real_paths
from app.core.log import log
from app.core.pid_domain import foreign_pid_domain
from app.core.pid_domain import own_pid_domain as _own_pid_domain  # noqa: F401 - the tests' view of this machine

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
    pid_domain: str | None = None
    unreadable: bool = False  # the file could not be read, though its pid runs: unsure
    file_named: bool = True  # False: an earlier id of the process (`earlier_sessions`), in no file


def process_running(pid: int, proc_start: str | None = None) -> bool:
    """Whether `pid` names a running process (not a zombie), started at `proc_start` if given.
    A pid that cannot name a process (0, negative, too big) is not running. Where the start
    time cannot be compared (no /proc and no `ps`), a running pid counts as the same process."""
    if not 0 < pid <= MAX_PID or not signalable(pid):
        return False
    try:
        found = proc_stat(pid)
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            # /proc is there and the process is not: it just ended, unless /proc hides
            # other users' processes (`hidepid`) and the pid still answers: unsure, so keep
            return signalable(pid)
        return proc_start is None or _ps_start_matches(pid, proc_start)
    except OSError:
        return True  # it runs (kill said so); its start cannot be read: unsure, so keep
    if found is None:
        return True  # a stat line of another shape: unsure, so keep
    state, _, start = found
    if state in ("Z", "X") and not _a_thread_runs(pid):
        return False
    # Field 22 is a number of clock ticks. An empty value, or the `ps -o lstart` text of
    # another platform or version, cannot be compared with it: unsure, so the same process.
    return proc_start is None or start == str(proc_start).strip() or not str(proc_start).strip().isdigit()


def _a_thread_runs(pid: int) -> bool:
    """Whether a thread of `pid` other than its first still runs: a process whose main
    thread ended (`pthread_exit`) shows as a zombie while its other threads work on."""
    try:
        tids = [t for t in os.listdir(f"/proc/{pid}/task") if t != str(pid)]
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
                state = fh.read().rpartition(b")")[2].split()[:1]
        except OSError:
            continue
        if state and state[0] not in (b"Z", b"X"):
            return True
    return False


def _ps_start_matches(pid: int, proc_start: str) -> bool:
    """Without /proc (macOS) Claude writes `ps -o lstart= -p <pid>` as procStart: compare that
    text. When ps cannot answer, the comparison cannot be made: unsure, so the same process."""
    now = ps_field("lstart", pid)
    if now is None:
        return True
    return now == " ".join(str(proc_start).split())


def is_live(session: Session, current_session_id: str | None = None) -> bool:
    """THE liveness rule. Live: the file names a running process (same procStart when given),
    or it has no pid (keep when unsure), or it is the session that triggered the hook."""
    if current_session_id and session.session_id == current_session_id:
        return True
    if session.pid is None or session.pid <= 0:
        return True  # no usable pid (0 and below name process groups): unsure, so keep
    if foreign_pid_domain(session.pid_domain):
        return True  # another machine or pid namespace: this pid cannot be checked here
    start = (session.proc_start or "").strip()
    return process_running(session.pid, session.proc_start) or (
        session.pid_domain is None and start.isdigit() and runs_in_a_pid_namespace(session.pid, start))


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


#: A sessions file is read again after this pause when it cannot be read the first time:
#: Claude rewrites it on every status change, so a read may catch it empty or cut short.
REREAD_PAUSE_S = 0.05
MAX_SESSION_FILE = 1 << 20


def _read_file(path: Path) -> bytes:
    """A sessions file's bytes: a regular file only, never through a symlink, never blocking
    on a FIFO or a device put in its place."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        chunks = []
        left = MAX_SESSION_FILE
        while left > 0:
            chunk = os.read(fd, min(left, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _load(path: Path) -> dict[str, object] | str:
    """The file's JSON object, or why it cannot be read."""
    try:
        data = json.loads(_read_file(path))
    except (OSError, ValueError, RecursionError) as exc:
        return str(exc)
    return data if isinstance(data, dict) else "not a JSON object"


def _pid_of_name(path: Path) -> int | None:
    stem = path.name[: -len(".json")] if path.name.endswith(".json") else path.name
    legacy = _LEGACY_NAME.match(path.name)
    if legacy:
        return int(legacy.group(1))
    return int(stem) if stem.isdigit() and len(stem) < 12 else None


def _pid_of(field: object, path: Path, proc_start: object) -> int | None:
    """The pid a file names: its `pid` field, else an older generation's name (`pid-<n>.json`);
    the name's (`<pid>.json`) when the field's process is not the one of `procStart` while the
    name's is (a field of another shape is no proof that the process its name gives ended)."""
    pid, of_name = _as_int(field), _pid_of_name(path)
    if pid is None:
        return of_name if _LEGACY_NAME.match(path.name) else None
    if of_name is None or pid == of_name:
        return pid
    start = None if proc_start is None or isinstance(proc_start, bool) else str(proc_start)
    return of_name if not process_running(pid, start) and process_running(of_name, start) else pid


def parse_session_file(path: Path, current_session_id: str | None = None) -> Session | None:
    """One session file. A file that cannot be read as a JSON object is read once more after
    a short pause; still unreadable, it is None (logged) when no process its name gives
    runs, else an `unreadable` live session (unsure: keep what it may hold)."""
    data = _load(path)
    if isinstance(data, str):
        time.sleep(REREAD_PAUSE_S)
        data = _load(path)
    return _session_of(path, data, current_session_id)


def _session_of(path: Path, data: dict[str, object] | str, current_session_id: str | None) -> Session | None:
    """The session a file's JSON object (or why it could not be read, `str`) gives."""
    if isinstance(data, str):
        pid_of_name = _pid_of_name(path)
        if pid_of_name is not None and process_running(pid_of_name) and not _left_before(pid_of_name, path):
            log(f"sessions: {path} cannot be read ({data}) but pid {pid_of_name} runs: unsure, its session is kept")
            return Session(session_id=None, pid=pid_of_name, cwd=None, status=None, file=str(path),
                           live=True, unreadable=True)
        log(f"sessions: skipped unreadable {path}: {data}")
        return None
    proc_start = data.get("procStart")
    pid = _pid_of(data.get("pid"), path, proc_start)
    domain = data.get("pidDomain")
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
        # a domain of another shape cannot be compared with this one: another machine's, maybe
        pid_domain=_as_str(domain) or (None if domain in (None, "") else "unreadable"),
    )
    return _with_live(session, current_session_id)


def _with_live(session: Session, current_session_id: str | None) -> Session:
    from dataclasses import replace

    return replace(session, live=is_live(session, current_session_id))


def _left_before(pid: int, path: Path) -> bool:
    """Whether `path` was last written before process `pid` began: a crash's leftover whose pid
    another program got since (Claude writes its file once started; one half rewritten is new)."""
    from app.core.purge import _started_after

    try:
        return _started_after(pid, os.lstat(path).st_mtime)
    except OSError:
        return False


def read_sessions(current_session_id: str | None = None, folder: Path | None = None) -> list[Session]:
    """Every session file of `sessions/` (or of `folder`: another config folder's), each
    judged live or not."""
    folder = paths.sessions_dir() if folder is None else folder
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    loaded = {name: _load(folder / name) for name in names if name.endswith(".json")}
    if any(isinstance(data, str) for data in loaded.values()):
        time.sleep(REREAD_PAUSE_S)  # once for all: the empty files crashes left wait no pause each
        loaded = {name: _load(folder / name) if isinstance(data, str) else data for name, data in loaded.items()}
    found = [_session_of(folder / name, data, current_session_id) for name, data in loaded.items()]
    return [session for session in found if session is not None]


def unsure_sessions(current_session_id: str | None = None) -> list[Session]:
    """Running sessions whose file cannot be read: what they hold is unknown."""
    return [s for s in read_sessions(current_session_id) if s.unreadable]


@dataclass(frozen=True)
class Liveness:
    """THE inputs of "in use" at one moment: the live sessions that count, their ids, the
    folders they work in (real paths), and whether a running session's file cannot be read or
    names no session id, or `sessions/` cannot be listed (`unsure`). Every rule reads them
    through `liveness()`, once when it judges and again at the moment of each removal."""

    sessions: tuple[Session, ...]
    ids: frozenset[str]
    cwds: tuple[str, ...]
    unsure: bool
    current_session: str | None = None
    current_cwd: str | None = None

    def has(self, session: str) -> bool:
        """Whether `session` is a live one's id. A UUID is one id whatever the case of its hex
        digits (`claude --session-id` keeps it as typed): compared without case."""
        return session in self.ids or any(session.lower() == live.lower() for live in self.ids)

    @cached_property
    def busy(self) -> tuple[str, ...]:
        """The paths other processes (not only Claude's) work in or hold open at this moment
        (`processes.paths_in_use`), read once, when a rule first asks."""
        from app.core.processes import paths_in_use

        return paths_in_use()

    def process_inside(self, *folders: str) -> str | None:
        """A path some running process works in or holds open at or below one of `folders`
        (real paths: the folder where it was judged, and where it was moved for removal)."""
        from app.core.processes import first_inside

        return next((p for f in folders if f for p in [first_inside(f, self.busy)] if p), None)

    def claude_folders(self) -> list[str]:
        """The Claude temp folder of each live session with an id and a cwd
        (`claude-<uid>/<slug>/<session>`, slugged from its cwd and from that cwd's project),
        real paths: what it works in besides its cwd."""
        tmp = paths.claude_tmp_dir_str()
        found: list[str] = []
        for sid, cwd in [*((s.session_id, s.cwd) for s in self.sessions), (self.current_session, self.current_cwd)]:
            if sid and cwd:  # its checkout's top is not looked for on a mount that does not answer
                for base in dict.fromkeys((cwd, paths.project_root_str(cwd) if reachable(cwd) else cwd)):
                    found.append(os.path.realpath(os.path.join(tmp, paths.project_slug(base), sid)))
        return found


def liveness(current_session: str | None = None, current_cwd: str | None = None, *,
             ending_session: str | None = None, ending_pid: int | None = None) -> Liveness:
    """Who is live now. `current_session` (the session a hook runs for) is live whatever its
    file says, and `current_cwd` is its folder. `ending_session` (a session that ends, or the
    one that asks for a removal) and every session of `ending_pid` (its Claude process)
    hold nothing, unless the ending one is the current one."""
    from app.core.named_sessions import earlier_and_named
    from app.core.other_configs import other_configs_sessions

    files = [s for s in [*read_sessions(current_session), *other_configs_sessions()] if s.live]
    earlier = earlier_and_named(files, ending_session, current_session)
    counted = tuple(s for s in [*files, *earlier]
                    if not (ending_session and s.session_id == ending_session != current_session and s.file_named)
                    and not (ending_pid is not None and s.pid == ending_pid))
    ids = {s.session_id for s in counted if s.session_id}
    if current_session:
        ids.add(current_session)
    cwds = real_paths([*(s.cwd for s in counted), current_cwd])
    # unsure: a running session's file cannot be read, or names its process but no session id
    # (a shape this version does not know: which folders are its own cannot be told)
    unsure = any(s.unreadable or (s.session_id is None and s.pid is not None) for s in counted)
    return Liveness(counted, frozenset(ids), tuple(cwds), unsure or _unlistable(), current_session, current_cwd)


def _unlistable() -> bool:
    """Whether Claude's `sessions/` folder is there but cannot be listed (its permissions, a
    link loop): every session in it is unknown, so nothing a session may hold goes."""
    try:
        os.listdir(paths.sessions_dir())
    except FileNotFoundError:
        return False  # an older Claude keeps none: nothing to read
    except OSError as exc:
        log(f"sessions: {paths.sessions_dir()} cannot be listed ({exc}); every session is unsure")
        return True
    return False


def live_session_ids(current_session_id: str | None = None) -> set[str]:
    """Ids of the live sessions; the current one always counts."""
    return set(liveness(current_session_id).ids)


def live_cwds(current_session_id: str | None = None, current_cwd: str | None = None) -> list[str]:
    """Working folders of the live sessions (real paths), plus the current one when given."""
    return list(liveness(current_session_id, current_cwd).cwds)


def sessions_json(sessions: list[Session]) -> dict[str, object]:
    """CONTRACT `sessions` JSON (with each session's start and last update)."""
    return {"sessions": [{"session_id": s.session_id, "pid": s.pid, "cwd": s.cwd, "status": s.status,
                          "live": s.live, "file": s.file, "started_at": s.started_at, "updated_at": s.updated_at}
                         for s in sessions]}
