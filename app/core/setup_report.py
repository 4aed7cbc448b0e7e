"""What `claudetto setup` tells beside its change, and how it says it.

Setup writes only the user's settings.json, but whether its entries will run, and run once,
depends on other files: the current project's settings files and the managed policy may run
claudetto too (an entry of ours, its plugin enabled: every hook would run twice), and a
`disableAllHooks` in any of them, or the policy's `allowManagedHooksOnly`, keeps Claude from
running the entries at all. Setup must not look done when nothing will ever run, so each of
these is named in a note (and in `--json`). None of it changes what setup writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.log import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.core.setup import SetupResult


def _project_files() -> list[str]:
    """The current project's settings files, in the folder and at its git root."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # the current folder is gone: no project around it
        cwd = None
    folders = dict.fromkeys((cwd, paths.project_root_str(cwd))) if cwd else {}
    return [os.path.join(folder, ".claude", name) for folder in folders
            for name in ("settings.json", "settings.local.json")]


def _read(path: str) -> dict[str, Any] | None:
    from app.core.settings import read_settings  # a FIFO in its place never hangs setup

    try:
        data = read_settings(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def temp_install(interpreter: str, root: str) -> str | None:
    """The temp folder (the user's, or Claude's) that the interpreter or claudetto's folder the
    entries name lies in, or None. A clone made there (`git clone ... /tmp/claudetto`, often
    by Claude itself when asked to try claudetto) goes when the temp folder is cleaned, by
    the system or by claudetto's own GC, which removes what Claude's commands made there once
    it is old: every hook then fails on every event, and WorktreeCreate aborts every
    creation. Setup still writes the entries (a try is a try) but says so."""
    for folder in dict.fromkeys((paths.user_tmp_str(), paths.claude_tmp_dir_str())):
        if any(paths.inside(os.path.realpath(path), folder) for path in (interpreter, root)):
            return folder
    return None


def hooks_disabled_in(user_file: Path, settings: dict[str, Any]) -> tuple[str, ...]:
    """The user's settings (as setup leaves them) and the current project's settings files
    that set `disableAllHooks`: where one applies, Claude runs no hook of any settings file,
    so the entries setup just wrote would never run. Another project is out of sight."""
    found = [str(user_file)] if settings.get("disableAllHooks") is True else []
    for path in dict.fromkeys(_project_files()):
        data = _read(path) if os.path.realpath(path) != str(user_file) else None
        if data is not None and data.get("disableAllHooks") is True:
            found.append(path)
    return tuple(found)


def project_entries(user_file: Path) -> tuple[str, ...]:
    """The other settings files that run claudetto's hooks too, by an entry of ours or by
    enabling the plugin: the current project's (`.claude/settings.json`, `settings.local.json`,
    in the folder and at its git root) and the managed policy's. Claude runs those beside the
    user's file, and a project file committed with a teammate's clone path fails on every
    event. Setup changes only the user's file; it names these so the user can act on them."""
    found: list[str] = []
    for path in dict.fromkeys([*_project_files(), str(paths.managed_settings())]):
        if os.path.realpath(path) != str(user_file) and _runs_claudetto(path):
            found.append(path)
    return tuple(found)


def _runs_claudetto(path: str) -> bool:
    from app.core.setup import is_ours

    data = _read(path)
    if data is None:
        return False
    hooks = data.get("hooks")
    return plugin_enabled(data) or isinstance(hooks, dict) and any(
        is_ours(h) for entries in hooks.values() if isinstance(entries, list)
        for e in entries if isinstance(e, dict) and isinstance(e.get("hooks"), list) for h in e["hooks"])


def other_worktree_creators(user_file: Path, settings: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(file, command) of each WorktreeCreate hook that is not claudetto's, in the user's settings
    (as setup leaves them) and the current project's settings files. Claude runs every
    WorktreeCreate hook at once, and each one replaces Claude's own creation: another worktree
    tool's hook beside claudetto's makes a second checkout of every `--worktree`, one of which
    nobody tracks, or fails the creation. Setup still writes its entry (the user may mean to
    drop the other) but names each one."""
    from app.core.setup import is_ours

    found: list[tuple[str, str]] = []
    files: list[tuple[str, dict[str, Any] | None]] = [(str(user_file), settings)]
    files += [(path, _read(path)) for path in dict.fromkeys(_project_files()) if os.path.realpath(path) != str(user_file)]
    for path, data in files:
        hooks = data.get("hooks") if data is not None else None
        entries = hooks.get("WorktreeCreate") if isinstance(hooks, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            for hook in inner if isinstance(inner, list) else []:
                if isinstance(hook, dict) and not is_ours(hook):
                    found.append((path, str(hook.get("command", hook.get("type", "?")))))
    return tuple(found)


def managed_block() -> str | None:
    """The managed (policy) settings key under which Claude runs no hook of the user's
    settings: `allowManagedHooksOnly` or `disableAllHooks`, or None. Setup still writes the
    entries (the policy may change) but must not look done when nothing will ever run. An
    unreadable or malformed policy file is left to Claude: no note."""
    policy = _read(str(paths.managed_settings()))
    if policy is None:
        return None
    return next((key for key in ("disableAllHooks", "allowManagedHooksOnly") if policy.get(key) is True), None)


def plugin_enabled(settings: dict[str, Any]) -> bool:
    """Whether these settings enable the claudetto plugin (`enabledPlugins` key
    `claudetto@<marketplace>`). With both installs every hook runs twice, WorktreeCreate too,
    and two parallel creations of one checkout can fail it."""
    enabled = settings.get("enabledPlugins")
    return isinstance(enabled, dict) and any(
        isinstance(key, str) and key.startswith("claudetto@") and value is True for key, value in enabled.items())


def setup_json(result: SetupResult) -> dict[str, Any]:
    return {
        "settings": result.settings,
        "changed": result.changed,
        "backup": result.backup,
        "dry_run": result.dry_run,
        "events": result.added,
        "removed": sorted(set(result.removed)),
        "plugin_enabled": result.plugin_enabled,
        "managed_block": result.managed_block,
        "also_in": list(result.also_in),
        "disabled_in": list(result.disabled_in),
        "temp_install": result.temp_install,
        "other_worktree_hooks": [{"file": path, "command": command} for path, command in result.other_creators],
    }


def describe(result: SetupResult, uninstall: bool) -> str:
    if not result.changed:
        state = "clean of claudetto hooks" if uninstall else "set up"
        return f"{result.settings}: already {state}; nothing changed{_plugin_note(result)}"
    verb = "would" if result.dry_run else "did"
    if uninstall:
        what = "remove claudetto's hooks"
    elif result.removed:
        what = f"update claudetto's hooks for {', '.join(result.added)}"
    else:
        what = f"add claudetto's hooks for {', '.join(result.added)}"
    tail = f" (backup: {result.backup})" if result.backup else ""
    return f"{result.settings}: {verb} {what}{tail}{_plugin_note(result)}"


def _plugin_note(result: SetupResult) -> str:
    note = ""
    if result.managed_block:
        note = (f"\nnote: the managed settings ({paths.managed_settings()}) set {result.managed_block}, "
                "so Claude runs none of these hooks until your administrator allows them")
    if result.temp_install:
        note += (f"\nnote: claudetto runs from inside the temp folder {result.temp_install}: when that is "
                 "cleaned (by the system, or by claudetto's own GC when Claude made the clone) every hook "
                 "fails on every event; put claudetto in a lasting folder and run setup from there")
    for path in result.disabled_in:
        note += f"\nnote: {path} sets disableAllHooks, so Claude runs none of these hooks (nor any other) where it applies"
    for path, command in result.other_creators:
        note += (f"\nnote: {path} has another WorktreeCreate hook ({printable(command[:80])}); Claude runs both, "
                 "and each would make every worktree its own way: keep one")
    for path in result.also_in:
        note += f"\nnote: {path} runs claudetto's hooks too (an entry of claudetto's, or its plugin enabled), so each would run twice; keep one"
    if not result.plugin_enabled:
        return note
    return note + ("\nnote: the claudetto plugin is enabled too, so every hook would run twice; keep one "
            "install (/plugin uninstall claudetto@<marketplace>, or claudetto setup --uninstall)")
