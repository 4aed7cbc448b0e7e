"""claudetto's own log: one line per event, never raising.

Hooks write to `<realpath(CLAUDE_CODE_TMPDIR or /tmp)>/claudetto/<project slug>/<session>.log`;
that is the "interface log" the seeds name, which the model never reads.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from app.core import paths

_context: dict[str, str | None] = {"cwd": None, "session_id": None}


def bind(cwd: str | None, session_id: str | None) -> None:
    """Point later `log()` calls at one session's log (the hook entry calls this first)."""
    _context["cwd"] = cwd if isinstance(cwd, str) and cwd.startswith("/") else None
    _context["session_id"] = session_id if isinstance(session_id, str) and session_id else None


def current_log() -> Path:
    return paths.session_log(_context["cwd"], _context["session_id"])


def log(message: str, *, target: Path | None = None) -> None:
    """Append one line (newlines in the message are escaped, so one event is one line)."""
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {message}".replace("\n", "\\n") + "\n"
    path = target or current_log()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def log_lines(lines: list[str], *, target: Path | None = None) -> None:
    """Append several lines as they are (a report such as CLEANED/WORKTREES_KEPT)."""
    for line in lines:
        log(line, target=target)
