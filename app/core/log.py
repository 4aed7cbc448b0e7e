"""claudetto's own log: one line per event, never raising.

Hooks write to `<realpath(CLAUDE_CODE_TMPDIR or /tmp)>/claudetto/<project slug>/<session>.log`:
claudetto's own account of what its hooks did, which the model never reads. Stdlib only and no
pathlib: it is imported on the hook hot path.
"""

from __future__ import annotations

import os
import time

from app.core import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

_context: dict[str, str | None] = {"cwd": None, "session_id": None}


def bind(cwd: str | None, session_id: str | None) -> None:
    """Point later `log()` calls at one session's log (the hook entry calls this first)."""
    _context["cwd"] = cwd if isinstance(cwd, str) and cwd.startswith("/") and "\0" not in cwd else None
    _context["session_id"] = session_id if isinstance(session_id, str) and session_id else None


def current_log_str() -> str:
    return paths.session_log_str(_context["cwd"], _context["session_id"])


def current_log() -> Path:
    from pathlib import Path

    return Path(current_log_str())


def printable(text: str) -> str:
    """`text` on one line as a person reads it: a newline, a tab or any other control
    character (and an undecodable byte) is shown escaped, so a folder named
    `x\nremoved ...` can never forge a line of a plain-text report."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else escaped(c) for c in text)


def escaped(c: str) -> str:
    """One character that is not printable, as Python writes it; a byte that is not UTF-8 (a
    `\\udcXX` surrogate escape of a name) as the byte, `\\xXX`, as the ledger's line tells it
    to the model and as a person knows bytes: one spelling of a name in every report."""
    if "\udc80" <= c <= "\udcff":
        return f"\\x{ord(c) - 0xDC00:02x}"
    return repr(c)[1:-1]


def log(message: str, *, target: str | os.PathLike[str] | None = None) -> None:
    """Append one line (a newline, carriage return or other control character in the message
    is escaped, see `printable`, so one event is one line for every reader of the log)."""
    _append(printable(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {message}") + "\n", target)


def log_lines(lines: list[str], *, target: str | os.PathLike[str] | None = None) -> None:
    """Append a report's lines as they are, no time stamp in front (CLEANED, WORKTREES_KEPT,
    UNKNOWN_KEPT are read by people and by grep), each kept to one line by `printable`; one
    write, so a report is never interleaved with another process's lines."""
    _append("".join(printable(line) + "\n" for line in lines), target)


def _append(text: str, target: str | os.PathLike[str] | None) -> None:
    try:
        path = os.fspath(target) if target is not None else current_log_str()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        from app.core.state import open_regular  # never blocks on a FIFO put in a log's place

        fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, text.encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        pass
