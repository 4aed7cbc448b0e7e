"""PreToolUse: lint writes into a memory folder (memory hygiene)."""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    return 0
