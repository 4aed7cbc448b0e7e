"""Long work handed off by a hook: a detached process (own session, no stdin/stdout), so the
hook returns at once and Claude's SessionEnd budget (1.5 s) is never the limit.

`spawn(job, payload)` starts `python -I -c <run app.core.jobs> <root> <job> <file>` with the
payload on a temp file; the child runs the job and logs what it did to the session log.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from typing import Any

from app.core import paths
from app.core.log import bind, log


def spawn(job: str, payload: dict[str, Any]) -> int | None:
    """Start `job` detached; returns the child's pid, or None (logged) when it cannot start."""
    name = None
    if not isinstance(payload.get("cwd"), str):
        payload = {**payload, "cwd": _hook_folder()}  # the job runs from "/": the folder goes along
    try:
        name = _payload_file(job, payload)
        pid: int | None = start_detached("app.core.jobs", [job, name])
    except (OSError, ValueError, TypeError) as exc:
        if name is not None:
            _unlink(name)  # nobody will read it: not a file left behind per failed start
        log(f"jobs: cannot start {job}: {exc}")
        pid = None
    _note_claude(job, payload)
    return pid


def _note_claude(job: str, payload: dict[str, Any]) -> None:
    """Note which session the Claude above this hook runs (app/core/earlier_sessions.py), here
    in the hook, whose ancestors include it, before the hook returns: after a `/clear` the old
    id must stay live from the moment Claude rewrites its sessions file, before any cleanup the
    new session's start sets off."""
    try:
        from app.core.earlier_sessions import note_for_job

        note_for_job(job, payload)
    except Exception as exc:  # noqa: BLE001 - a hook never fails for a note
        log(f"jobs: cannot note the Claude of {job}: {type(exc).__name__}: {exc}")


def start_detached(module: str, args: list[str]) -> int:
    """Run `module`'s `_child_main(args)` in a detached process (own session, no stdin or
    stdout, from "/"); its pid. Raises OSError when it cannot start.

    `-I -c`, not `-P -m`: the hook itself runs isolated (`-I -S`), and a PYTHONPATH naming a
    project with its own `app` package must not pick the child's code; the package root is
    passed on, as the hook command passes it, so a claudetto found only through that folder
    still finds itself. "/": a child left in the hook's folder (a checkout being released, a
    worktree the cleanup judges) would be a process working there, and keep it from going."""
    child = subprocess.Popen(
        [sys.executable, "-I", "-c", _CHILD, _package_root(), module, *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd="/", start_new_session=True, close_fds=True,
    )
    return child.pid


_CHILD = ("import sys;sys.path.insert(0,sys.argv[1]);"
          "sys.exit(__import__(sys.argv[2],fromlist=['_child_main'])._child_main(sys.argv[3:]))")


def _hook_folder() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # removed meanwhile: the job judges without a folder of its own
        return None


def _package_root() -> str:
    import app

    return os.path.dirname(os.path.dirname(os.path.abspath(app.__file__)))


def _payload_file(job: str, payload: dict[str, Any]) -> str:
    """The payload on a private temp file: in `CLAUDETTO_HOME/jobs`, or in the temp folder when
    that cannot be a folder of ours (a file, a FIFO or a dangling link in its place)."""
    data = json.dumps(payload)
    try:
        folder = paths.claudetto_home() / "jobs"
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"{_plain(job)}-", suffix=".json", dir=folder)
    except OSError as exc:
        log(f"jobs: {exc}; the payload of {job} goes to the temp folder")
        fd, name = tempfile.mkstemp(prefix=f"claudetto-{_plain(job)}-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
    except OSError:
        _unlink(name)
        raise
    return name


MAX_RUNNING = 3  # jobs of one name at a time: one working, two waiting for its lock
UNREAD_MAX_S = 3600  # a job reads its payload within a second of starting


def _drop_unread(folder: str) -> None:
    """Remove the payloads of jobs killed before they read them (an hour old): nobody reads
    them any more, and a folder that only grows would be one more thing to clean up after."""
    cutoff = time.time() - UNREAD_MAX_S
    try:
        mode = os.lstat(folder)
        if not stat.S_ISDIR(mode.st_mode) or mode.st_uid != os.getuid():
            return  # not claudetto's folder (a link to the user's own): never touched
        with os.scandir(folder) as entries:
            # `<job>-<8 characters of mkstemp>.json`, as spawn names them
            stale = [e.path for e in entries if e.name.endswith(".json") and e.name[-14:-13] == "-"
                     and e.is_file(follow_symlinks=False) and e.stat(follow_symlinks=False).st_mtime < cutoff]
    except OSError:
        return
    for name in stale:
        _unlink(name)


def _plain(job: str) -> str:
    """`job` when it can be part of a file name as it is (letters and dashes, as every job in
    the table is named), else "job": a `/` would put the file in another folder."""
    return job if job.replace("-", "").isalpha() and job.isascii() and len(job) <= 40 else "job"


def _unlink(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def run(job: str, payload: dict[str, Any]) -> None:
    """Run one job in this process (the detached child calls this)."""
    from app.core import job_table

    handler = job_table.JOBS.get(job)
    if handler is None:
        log(f"jobs: unknown job {job!r}")
        return
    handler(payload)


def _child_main(argv: list[str]) -> int:
    if len(argv) != 2:
        return 2
    job, payload_file = argv
    try:
        with open(payload_file, encoding="utf-8") as fh:
            payload = json.load(fh)
    except (OSError, ValueError):
        payload = {}
    finally:
        _unlink(payload_file)
        _drop_unread(os.path.join(paths.claudetto_home_str(), "jobs"))
    if not isinstance(payload, dict):
        payload = {}
    cwd = payload.get("cwd")
    sid = payload.get("session_id")
    bind(cwd if isinstance(cwd, str) else None, sid if isinstance(sid, str) else None)
    slot = _running_slot(job)
    if slot is None:
        log(f"jobs: {MAX_RUNNING} {job} jobs are running already; this one skipped")
        return 0
    try:
        run(job, payload)
    except BaseException as exc:  # noqa: BLE001 - a detached job logs, never prints
        log(f"jobs: {job} failed: {type(exc).__name__}: {exc}")
        return 1
    finally:
        if slot >= 0:
            os.close(slot)  # the kernel lets the flock go too when the job is killed
    return 0


def _running_slot(job: str) -> int | None:
    """One of MAX_RUNNING flocks for `job` (a descriptor held while it runs), None when all are
    held, -1 when none can be had here (no jobs folder of ours): the job runs unbounded then.

    Why a bound: every job takes one lock (the sweep's, the cleanup's) that all the others wait
    for or skip at, so a hundred sessions starting at once would otherwise leave a hundred
    interpreters waiting, each doing nothing the few first do not do."""
    import fcntl

    from app.core.state import open_regular

    if _plain(job) != job:
        return -1  # run() logs it as unknown; no lock file named after anything else
    folder = os.path.join(paths.claudetto_home_str(), "jobs")
    for i in range(MAX_RUNNING):
        try:
            fd = open_regular(os.path.join(folder, f"{job}.running-{i}"), os.O_RDWR | os.O_CREAT)
        except OSError:
            return -1
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return fd
    return None


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
