"""PostToolUse: ledger entries for edits (issue 7), GC records for Bash and Write (issue 4)."""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    return 0
