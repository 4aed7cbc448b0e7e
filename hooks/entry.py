"""The hook entry: read one JSON object, dispatch on `hook_event_name`, never crash Claude.

CONTRACT "Hooks": on bad input or an internal error, exit 0, print nothing, log the cause.
WorktreeCreate alone fails loud. Handlers are imported lazily so that the per-prompt and
per-tool events pay only for what they use (STYLE rule 2: stdlib only on the hot path; not
even json, pathlib, re or typing: each costs milliseconds on every call).
"""

from __future__ import annotations

import sys

# event -> module under hooks/ with `handle(payload) -> int`
HANDLERS = {
    "SessionStart": "hooks.session_start",
    "SessionEnd": "hooks.session_end",
    "UserPromptSubmit": "hooks.prompt",
    "PreToolUse": "hooks.pre_tool",
    "PostToolUse": "hooks.post_tool",
    "WorktreeCreate": "hooks.worktree",
    "WorktreeRemove": "hooks.worktree",
}

MAX_INPUT = 64 * 1024 * 1024


def _log(message: str) -> None:
    from app.core.log import log

    log(message)


def read_payload(raw: bytes) -> dict[str, object] | None:
    """The hook object, or None (logged) when stdin is not one JSON object."""
    from app.core import fastjson

    if not raw.strip():
        _log("hook: empty input, nothing done")
        return None
    try:
        data = fastjson.loads(raw)
    except ValueError as exc:
        _log(f"hook: input is not JSON ({str(exc)[:200]}), nothing done")
        return None
    if not isinstance(data, dict):
        _log(f"hook: input is a JSON {type(data).__name__}, not an object, nothing done")
        return None
    return data


def main() -> int:
    event = None
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT)
        payload = read_payload(raw)
        if payload is None:
            return 0
        from app.core.log import bind

        cwd = payload.get("cwd")
        session_id = payload.get("session_id")
        bind(cwd if isinstance(cwd, str) else None, session_id if isinstance(session_id, str) else None)
        event = payload.get("hook_event_name")
        if not isinstance(event, str) or event not in HANDLERS:
            _log(f"hook: unknown or missing hook_event_name {str(event)[:80]!r}, nothing done")
            return 0
        module = __import__(HANDLERS[event], fromlist=["handle"])
        code = module.handle(payload)
        return code if event == "WorktreeCreate" else 0
    except SystemExit as exc:
        return exc.code if event == "WorktreeCreate" and isinstance(exc.code, int) else 0
    except BaseException as exc:  # noqa: BLE001 - the contract: never a traceback
        try:
            _log(f"hook: {event or 'input'} failed: {type(exc).__name__}: {exc}")
        except BaseException:  # noqa: BLE001
            pass
        if event == "WorktreeCreate":
            sys.stderr.write(f"claudetto: worktree not created: {type(exc).__name__}: {exc}".replace("\n", " ") + "\n")
            return 1
        return 0
