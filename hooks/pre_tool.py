"""PreToolUse: the write lint of Claude's project memory (app/core/memory_lint.py).

Registered for Write, Edit and MultiEdit. Memory lives at `<config>/projects/<slug>/memory/`,
so a write whose path does not hold both `/projects/` and `/memory/` is let through right
here, before anything is imported: that is nearly every write, and it must cost no more
than reading the payload."""

from __future__ import annotations


def handle(payload: dict[str, object]) -> int:
    tool_input = payload.get("tool_input")
    path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(path, str):
        return 0
    if not path.startswith("/"):
        cwd = payload.get("cwd")
        path = f"{cwd}/{path}" if isinstance(cwd, str) else path
    if "/memory/" not in path or "/projects/" not in path:
        return 0
    from app.core.memory_lint import lint_write

    reason = lint_write(payload)
    if reason:
        from hooks.output import deny

        deny(reason)
    return 0
