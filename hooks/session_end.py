"""SessionEnd: mark the ending session in the checkout registry, and hand the GC sweep to a
detached process so the hook returns at once (Claude gives all SessionEnd hooks 1.5 s together).

`reason: clear` and `reason: resume` (an interactive `/resume` switch) end the session but
not Claude's process: its checkout is handed over, not let go, and its cwd stays in use.
"""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    from app.core.jobs import spawn

    spawn("session-end", payload)  # first: the sweep must start whatever happens below
    session_id = payload.get("session_id")
    if isinstance(session_id, str) and session_id:
        from app.core.checkouts import session_ended

        reason = payload.get("reason")
        session_ended(session_id, reason if isinstance(reason, str) else None)
    return 0
