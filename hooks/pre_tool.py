"""PreToolUse: lint writes into a memory folder (memory hygiene; not built yet: allows all)."""

from __future__ import annotations


def handle(payload: dict[str, object]) -> int:
    return 0
