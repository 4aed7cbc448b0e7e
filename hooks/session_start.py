"""SessionStart: start the hygiene cleanup and the GC sweep detached, without waiting; claim
the session's checkouts (finishing a release of them that was cut short first); and tell the
model, in one context, what a release deleted and how to reinstall it, then the memory
findings. Each part runs on its own: one failing is logged, and the others still speak."""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    from app.core.jobs import spawn
    from hooks.output import context

    spawn("session-start", payload)  # first: the cleanup must start whatever happens below
    parts = [_part("checkouts", _checkouts, payload), _part("memory", _memory, payload)]
    context("SessionStart", "\n\n".join(part for part in parts if part))
    return 0


def _part(name: str, func: Any, payload: dict[str, Any]) -> str:
    try:
        text = func(payload)
    except Exception as exc:  # noqa: BLE001 - never lose the other part, never crash Claude
        from app.core.log import log

        log(f"hook: SessionStart {name} failed: {type(exc).__name__}: {exc}")
        return ""
    return text if isinstance(text, str) else ""


def _checkouts(payload: dict[str, Any]) -> str:
    session_id, cwd = payload.get("session_id"), payload.get("cwd")
    if not isinstance(session_id, str) or not session_id:
        return ""
    from app.core.release_notes import session_start_context

    return session_start_context(session_id, cwd if isinstance(cwd, str) and cwd else None,
                                 payload.get("source"))


def _memory(payload: dict[str, Any]) -> str:
    """The memory audit's findings, when this claudetto has one (`app.core.memory`
    `session_start_context`); "" without it."""
    import importlib

    try:
        memory = importlib.import_module("app.core.memory")
    except ModuleNotFoundError as exc:
        if exc.name == "app.core.memory":
            return ""
        raise
    audit = getattr(memory, "session_start_context", None)
    return str(audit(payload) or "") if callable(audit) else ""
