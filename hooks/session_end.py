"""SessionEnd: mark the ending session in the checkout registry, and hand the GC sweep and
the release of the checkouts it let go of to detached processes, so the hook returns at once
(Claude gives all SessionEnd hooks 1.5 s together, whatever the size of the scratch).

`reason: clear` and `reason: resume` (an interactive `/resume` switch) end the session but
not Claude's process: its checkout is handed over, not let go, and its cwd stays in use.
The detached release marks an ending for good itself, then judges whether anybody still
holds each checkout let go of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def handle(payload: dict[str, Any]) -> int:
    from app.core.checkouts import claude_of
    from app.core.jobs import spawn

    session_id = payload.get("session_id")
    session_id = session_id if isinstance(session_id, str) and session_id else None
    # the Claude above only when it runs this session: a `claude -p` with no sessions file of
    # its own, started by another Claude's Bash tool, would otherwise end its parent's holds
    claude = _ending_claude(lambda: claude_of(session_id or ""))
    # first: the sweep must start whatever happens below. The ending Claude's pid tells it from
    # a second Claude resumed into the same session, whose outputs stay while it runs.
    spawn("session-end", {**payload, "claude_pid": claude[0]} if claude else payload)
    if session_id:
        _let_go(payload, session_id, claude)
    return 0


def _let_go(payload: dict[str, Any], session_id: str, claude: tuple[int, str | None] | None) -> None:
    """An ending for good is marked by the detached release itself, started before anything
    else, so a hook Claude kills at its 1.5 s (a loaded machine) never leaves the session
    holding its checkout. A hand-over is marked here: the SessionStart that follows reads it."""
    from app.core.checkouts import names, process_goes_on, session_ended
    from app.core.release import spawn_release

    reason = payload.get("reason")
    reason = reason if isinstance(reason, str) else None
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) else None
    if not process_goes_on(reason):
        if names(session_id, claude):
            spawn_release([], session_id, claude, cwd, mark=True, reason=reason)
    elif session_ended(session_id, reason, process=claude) is None:
        spawn_release([], session_id, claude, cwd, mark=True, reason=reason)  # busy: marked there


def _ending_claude(find: Callable[[], tuple[int, str | None] | None]) -> tuple[int, str | None] | None:
    try:
        return find()
    except Exception as exc:  # noqa: BLE001 - the sweep starts without it, as for an old Claude
        from app.core.log import log

        log(f"hook: SessionEnd cannot name its Claude process ({type(exc).__name__}: {exc})")
        return None
