"""SessionEnd: the GC sweep, handed to a detached process so the hook returns at once
(Claude gives all SessionEnd hooks 1.5 s together)."""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    from app.core.jobs import spawn

    spawn("session-end", payload)
    return 0
