"""Long work handed off by a hook: a detached process (own session, no stdin/stdout), so the
hook returns at once and Claude's SessionEnd budget (1.5 s) is never the limit.

`spawn(job, payload)` starts `python -P -m app.core.jobs <job>` with the payload on a
temp file; the child runs the job and logs what it did to the session log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

from app.core import paths
from app.core.log import bind, log


def spawn(job: str, payload: dict[str, Any]) -> int | None:
    """Start `job` detached; returns the child's pid, or None (logged) when it cannot start."""
    try:
        folder = paths.claudetto_home() / "jobs"
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"{job}-", suffix=".json", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh)
        child = subprocess.Popen(
            [sys.executable, "-P", "-m", "app.core.jobs", job, name],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        return child.pid
    except OSError as exc:
        log(f"jobs: cannot start {job}: {exc}")
        return None


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
        try:
            os.unlink(payload_file)
        except OSError:
            pass
    if not isinstance(payload, dict):
        payload = {}
    cwd = payload.get("cwd")
    sid = payload.get("session_id")
    bind(cwd if isinstance(cwd, str) else None, sid if isinstance(sid, str) else None)
    try:
        run(job, payload)
    except BaseException as exc:  # noqa: BLE001 - a detached job logs, never prints
        log(f"jobs: {job} failed: {type(exc).__name__}: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
