"""`claudetto setup`: add (or remove) claudetto's hook entries in Claude's settings.json.

Idempotent: claudetto's entries are recognised by the marker at the end of their command and
replaced as a whole, so running setup twice (or after moving the venv) leaves one entry per
event. The old file is kept beside it as `settings.json.bak-<timestamp>` before any change.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.state import locked, write_json_atomic

MARKER = "# claudetto"

# event -> (matcher or None, extra keys)
EVENTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "SessionStart": (None, {}),
    # a timeout in a settings file raises the 1.5 s SessionEnd budget (up to 60 s)
    "SessionEnd": (None, {"timeout": 60}),
    "UserPromptSubmit": (None, {}),
    "PreToolUse": ("Write|Edit|MultiEdit", {}),
    "PostToolUse": ("Edit|Write|MultiEdit|NotebookEdit|Bash", {}),
    "WorktreeCreate": (None, {}),
    "WorktreeRemove": (None, {}),
}


class SetupError(Exception):
    """settings.json cannot be read or changed safely; nothing was written."""


@dataclass(frozen=True)
class SetupResult:
    settings: str
    changed: bool
    backup: str | None
    added: list[str]
    removed: list[str]
    dry_run: bool


def hook_command(python: str | None = None) -> str:
    """The command Claude runs: the interpreter by absolute path (a pyenv shim costs ~70 ms)."""
    interpreter = os.path.abspath(python or sys.executable)
    return f"{shlex.quote(interpreter)} -P -m hooks {MARKER}"


def is_ours(hook: object) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and hook["command"].rstrip().endswith(MARKER)


def _without_ours(settings: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    removed: list[str] = []
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings, removed
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept_entries = []
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                inner = [h for h in entry["hooks"] if not is_ours(h)]
                if len(inner) != len(entry["hooks"]):
                    removed.append(event)
                if inner:
                    kept_entries.append({**entry, "hooks": inner})
            else:
                kept_entries.append(entry)
        if kept_entries:
            hooks[event] = kept_entries
        else:
            del hooks[event]
    if not hooks:
        settings.pop("hooks", None)
    return settings, removed


def desired(settings: dict[str, Any], command: str) -> dict[str, Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SetupError("settings.json: 'hooks' is not an object; fix it by hand first")
    for event, (matcher, extra) in EVENTS.items():
        entry: dict[str, Any] = {}
        if matcher:
            entry["matcher"] = matcher
        entry["hooks"] = [{"type": "command", "command": command, **extra}]
        existing = hooks.setdefault(event, [])
        if not isinstance(existing, list):
            raise SetupError(f"settings.json: hooks.{event} is not a list; fix it by hand first")
        existing.append(entry)
    return settings


def setup(*, uninstall: bool = False, dry_run: bool = False, python: str | None = None) -> SetupResult:
    target = paths.user_settings()
    if dry_run:  # a dry run writes nothing, not even the lock file
        return _setup(target, uninstall, True, python)
    with locked(target):
        return _setup(target, uninstall, False, python)


def _setup(target: Path, uninstall: bool, dry_run: bool, python: str | None) -> SetupResult:
    try:
        raw = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = ""
    except OSError as exc:
        raise SetupError(f"cannot read {target}: {exc}") from exc
    try:
        current = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise SetupError(f"{target} is not valid JSON ({exc}); nothing changed") from exc
    if not isinstance(current, dict):
        raise SetupError(f"{target} is not a JSON object; nothing changed")
    before = json.loads(json.dumps(current))
    stripped, removed = _without_ours(current)
    new = stripped if uninstall else desired(stripped, hook_command(python))
    added = [] if uninstall else list(EVENTS)
    changed = new != before
    backup = None
    if changed and not dry_run:
        if raw:
            backup_path = target.with_name(f"{target.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")
            n = 1
            while backup_path.exists():
                backup_path = target.with_name(f"{target.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
                n += 1
            backup_path.write_text(raw, encoding="utf-8")
            backup = str(backup_path)
        write_json_atomic(target, new)
    return SetupResult(str(target), changed, backup, added if changed else [], removed if changed else [], dry_run)


def setup_json(result: SetupResult) -> dict[str, Any]:
    return {
        "settings": result.settings,
        "changed": result.changed,
        "backup": result.backup,
        "dry_run": result.dry_run,
        "events": result.added,
        "removed": sorted(set(result.removed)),
    }


def describe(result: SetupResult, uninstall: bool) -> str:
    if not result.changed:
        return f"{result.settings}: already {'clean of claudetto hooks' if uninstall else 'set up'}; nothing changed"
    verb = "would" if result.dry_run else "did"
    what = "remove claudetto's hooks" if uninstall else f"add claudetto's hooks for {', '.join(result.added)}"
    tail = f" (backup: {result.backup})" if result.backup else ""
    return f"{result.settings}: {verb} {what}{tail}"


def settings_path() -> Path:
    return paths.user_settings()
