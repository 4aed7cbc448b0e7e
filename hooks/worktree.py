"""WorktreeCreate / WorktreeRemove (session checkouts)."""

from __future__ import annotations

from typing import Any

from hooks.output import fail_loud


def handle(payload: dict[str, Any]) -> int:
    if payload.get("hook_event_name") == "WorktreeCreate":
        return fail_loud("claudetto: session checkouts are not available yet")
    return 0
