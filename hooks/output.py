"""What a hook may print, in the shapes Claude Code reads (CLAUDE_CODE_FACTS "Hook output")."""

from __future__ import annotations

import sys

from app.core.fastjson import dumps

CONTEXT_CAP = 10_000


def context(event: str, text: str) -> None:
    """Add `text` to the model's context; nothing at all when it is empty (0 tokens)."""
    if not text:
        return
    if len(text) > CONTEXT_CAP:
        cut = text.rfind("\n", 0, CONTEXT_CAP - 40)
        text = text[: cut if cut > 0 else CONTEXT_CAP - 40] + "\n(claudetto: more lines left out)"
    payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    sys.stdout.write(dumps(payload) + "\n")


def deny(reason: str) -> None:
    """Refuse a PreToolUse call, with the reason the model will read."""
    payload = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    sys.stdout.write(dumps(payload) + "\n")


def worktree_path(path: str) -> None:
    """WorktreeCreate: the absolute path, as the last non-empty line of stdout."""
    sys.stdout.write(path + "\n")


def fail_loud(message: str) -> int:
    """WorktreeCreate only: one line on stderr and a non-zero exit abort the creation."""
    sys.stderr.write(message.replace("\n", " ") + "\n")
    return 1
