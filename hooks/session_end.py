"""SessionEnd: mark the ending session in the checkout registry, and hand the GC sweep and
the release of the checkouts it let go of to detached processes, so the hook returns at once
(Claude gives all SessionEnd hooks 1.5 s together, whatever the size of the scratch).

`reason: clear` and `reason: resume` (an interactive `/resume` switch) end the session but
not Claude's process: its checkout is handed over, not let go, and its cwd stays in use.
Whether anybody still holds a checkout let go of is judged by the detached release itself.
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
        let_go = session_ended(session_id, reason if isinstance(reason, str) else None)
        if let_go:
            from app.core.claude_process import claude_process
            from app.core.release import spawn_release

            cwd = payload.get("cwd")
            spawn_release(let_go, session_id, claude_process(), cwd if isinstance(cwd, str) else None)
    return 0
