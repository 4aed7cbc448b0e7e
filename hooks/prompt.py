"""UserPromptSubmit: rehash the ledger's files; one context line per file changed behind
the model's back since its last edit (app/core/ledger.py). Nothing changed: nothing printed,
0 tokens."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def handle(payload: dict[str, Any]) -> int:
    from app.core.ledger import prompt_lines
    from hooks.output import context

    # printed before the lines are marked told: when stdout is gone they come again next time
    prompt_lines(payload, lambda lines: context("UserPromptSubmit", "\n".join(lines)))
    return 0
