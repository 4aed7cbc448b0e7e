"""PostToolUse: a ledger entry for each edit (app/core/ledger.py), GC records for Bash and
Write (app/core/recorder.py). Each part runs on its own: one failing is logged and the other
still runs."""

from __future__ import annotations

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
GC_TOOLS = frozenset({"Bash", "Write"})


def handle(payload: dict[str, object]) -> int:
    tool = payload.get("tool_name")
    if not isinstance(tool, str):  # a list or an object is no tool name (and no set key)
        return 0
    if tool in EDIT_TOOLS:
        _part("ledger", payload)
    if tool in GC_TOOLS:
        _part("gc", payload)
    return 0


def _part(name: str, payload: dict[str, object]) -> None:
    try:
        if name == "ledger":
            from app.core.ledger import record_edit

            record_edit(payload)
        else:
            from app.core.recorder import record_outputs

            record_outputs(payload)
    except Exception as exc:  # noqa: BLE001 - never lose the other part, never crash Claude
        from app.core.log import log

        log(f"hook: PostToolUse {name} failed: {type(exc).__name__}: {exc}")
