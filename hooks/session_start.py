"""SessionStart: start the hygiene cleanup and the GC sweep detached, without waiting."""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    from app.core.jobs import spawn

    spawn("session-start", payload)
    return 0
