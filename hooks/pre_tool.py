"""PreToolUse: the write lint of Claude's project memory (app/core/memory_lint.py).

Registered for Write, Edit and MultiEdit. Memory lives at `<config>/projects/<slug>/memory/`,
so a write whose path (or, for a `.md` file, its real path with symlinks resolved) does not hold
both `/projects/` and `/memory/` is let through right here, before anything is imported:
that is nearly every write, and it must cost no more than reading the payload."""

from __future__ import annotations


def handle(payload: dict[str, object]) -> int:
    tool_input = payload.get("tool_input")
    path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(path, str):
        return 0
    if path.startswith("~/"):  # Claude writes there as the home; the lint resolves it the same way
        import os

        path = os.environ.get("HOME", "") + path[1:]
    elif not path.startswith("/"):
        cwd = payload.get("cwd")
        path = f"{cwd}/{path}" if isinstance(cwd, str) else path
    if "/memory/" not in path or "/projects/" not in path:
        # A symlinked folder, or the file itself as a link, can lead into memory under another
        # name (`~/notes` -> the memory folder). Memory files are `.md`: only such a write pays
        # for resolving its path, a few lstat calls and no import (os is loaded with the
        # interpreter).
        if not path.lower().endswith(".md"):
            return 0
        import os

        real = os.path.realpath(path)
        if "/memory/" not in real or "/projects/" not in real:
            return 0
    from app.core.memory_lint import lint_write

    reason = lint_write(payload)
    if reason:
        from hooks.output import deny

        deny(reason)
    return 0
