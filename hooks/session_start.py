"""SessionStart: start the hygiene cleanup and the GC sweep detached, without waiting; claim
the session's checkouts (finishing a release of them that was cut short first); and tell the
model, in one context, what a release deleted and how to reinstall it, then the memory
findings. Each part runs on its own: one failing is logged, and the others still speak.

A release's note is marked told when the checkout is claimed; when the context cannot be
printed (Claude closed stdout: the user quit while the session started) the mark is taken
back, so the note comes at the next session start instead of never."""

from __future__ import annotations

from typing import Any


def handle(payload: dict[str, Any]) -> int:
    from app.core.jobs import spawn
    from hooks.output import context

    spawn("session-start", payload)  # first: the cleanup must start whatever happens below
    told: list[str] = []
    parts = [_part("checkouts", _checkouts, payload, told), _part("memory", _memory, payload)]
    try:
        context("SessionStart", "\n\n".join(part for part in parts if part))
    except OSError:
        if told:
            _untell(payload["session_id"], told)
        raise
    return 0


def _part(name: str, func: Any, *args: Any) -> str:
    try:
        text = func(*args)
    except Exception as exc:  # noqa: BLE001 - never lose the other part, never crash Claude
        from app.core.log import log

        log(f"hook: SessionStart {name} failed: {type(exc).__name__}: {exc}")
        return ""
    return text if isinstance(text, str) else ""


def _checkouts(payload: dict[str, Any], told: list[str]) -> str:
    """The reinstall notes of the checkouts this session claims; `told` gets their keys."""
    session_id, cwd = payload.get("session_id"), payload.get("cwd")
    if not isinstance(session_id, str) or not session_id:
        return ""
    from app.core.release_notes import session_start_context

    before = _told_to(session_id)
    text = session_start_context(session_id, cwd if isinstance(cwd, str) and cwd else None,
                                 payload.get("source"))
    if text:
        told.extend(key for key in _told_to(session_id) if key not in before)
    return text


def _told_to(session_id: str) -> set[str]:
    """The checkouts whose last release's note is marked told to `session_id` (none when the
    registry cannot be read: the notes themselves come or fail on their own)."""
    from app.core.checkouts import registry

    try:
        records = registry()
    except Exception:  # noqa: BLE001 - a registry that cannot be read tells nothing either
        return set()
    return {key for key, entry in records.items()
            if isinstance(entry.get("last_release"), dict) and entry["last_release"].get("told") == session_id}


def _untell(session_id: str, keys: list[str]) -> None:
    """The notes of `keys` marked untold again: they never reached the model."""
    from app.core.checkouts import edit_registry
    from app.core.log import log

    def change(records: dict[str, Any]) -> None:
        for key in keys:
            entry = records.get(key)
            last = entry.get("last_release") if isinstance(entry, dict) else None
            if isinstance(last, dict) and last.get("told") == session_id:
                del last["told"]

    try:
        edit_registry(change)
    except Exception as exc:  # noqa: BLE001 - the print failed already; say why the note is gone
        log(f"hook: SessionStart: the release notes of {len(keys)} checkouts stay marked told: "
            f"{type(exc).__name__}: {exc}")
        return
    log(f"hook: SessionStart: context not printed; {len(keys)} release notes wait for the next start")


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
