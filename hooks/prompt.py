"""UserPromptSubmit: rehash the ledger's files; one context line per file changed behind
the model's back since its last edit (issue 7)."""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    return 0
