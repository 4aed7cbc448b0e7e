"""`claudetto setup`: add (or remove) claudetto's hook entries in Claude's settings.json.

Idempotent: claudetto's entries are recognised by the marker at the end of their command and
updated where they stand, so running setup twice (or after moving the venv) leaves one entry
per event. Only the command changes: a matcher or a timeout the user set on our entry is
theirs and stays. An entry of an older form
(`<python> -P -m hooks # claudetto`) is upgraded in place to the current one (`hook_command`);
the plugin's launcher runs the same entry (`entry_code`), so the two installs never drift. The
old file is kept beside it as `settings.json.bak-<timestamp>` before any change.

The file is the user's: it is read and written keeping its form (app/core/settings_file.py),
and only what changed in it is rewritten (app/core/settings_edit.py).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.settings_edit import edited_text, restored_text
from app.core.settings_file import (
    SettingsChanged,
    SetupError,
    backups,
    folder_lock,
    keep_backup,
    layout_of,
    parse_settings,
    prune_backups,
    read_settled,
    refuse_read_only,
    remove_old_lock,
    render,
    umask,
    write_keeping_form,
)
from app.core.setup_report import describe as describe
from app.core.setup_report import (
    hooks_disabled_in,
    managed_block,
    other_worktree_creators,
    plugin_enabled,
    project_entries,
    temp_install,
)
from app.core.setup_report import setup_json as setup_json

MARKER = "# claudetto"
#: reads and writes of settings.json while Claude keeps saving it, before setup gives up
WRITE_TRIES = 5

# event -> matcher (None: every call). No `timeout`: a timeout in a settings file raises the
# SessionEnd budget of EVERY SessionEnd hook of the user, and claudetto's SessionEnd hands
# its work to a detached process within ~0.1 s.
EVENTS: dict[str, str | None] = {
    "SessionStart": None,
    "SessionEnd": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Write|Edit|MultiEdit",
    "PostToolUse": "Edit|Write|MultiEdit|NotebookEdit|Bash",
    "WorktreeCreate": None,
    "WorktreeRemove": None,
}


@dataclass(frozen=True)
class SetupResult:
    settings: str
    changed: bool
    backup: str | None
    added: list[str]
    removed: list[str]
    dry_run: bool
    #: the claudetto plugin is enabled in the same settings: both would run every hook
    plugin_enabled: bool = False
    #: the managed-settings key that keeps Claude from running these hooks, if one is set
    managed_block: str | None = None
    #: the current project's settings files that hold a claudetto entry too (both would run)
    also_in: tuple[str, ...] = ()
    #: the settings files (the user's, the current project's) that set disableAllHooks
    disabled_in: tuple[str, ...] = ()
    #: the temp folder the entries' interpreter or claudetto's folder lies in, if one does
    temp_install: str | None = None
    #: (file, command) of each other WorktreeCreate hook Claude would run beside claudetto's
    other_creators: tuple[tuple[str, str], ...] = ()


def package_root() -> str:
    """The folder that holds claudetto's `app` and `hooks` packages: the checkout for an
    editable install (`make run`), site-packages for a plain one."""
    import app

    return os.path.dirname(os.path.dirname(os.path.abspath(app.__file__)))


def entry_code(root: str | None = None) -> str:
    """The `-c` program of the hook command: claudetto's folder on the path, then
    `hooks.entry.run` (which adds the venv's site-packages that `-S` left out). One line,
    double-quoted literals, so that it survives shell quoting and the plugin's stamp file.

    The except hook matters only when claudetto cannot be imported at all (its clone moved or
    deleted after setup; `run` itself never raises): Claude shows a failing hook's stderr on
    every event, so that is one line saying what to do, never a traceback."""
    literal = json.dumps(root or package_root(), ensure_ascii=False)
    say = ('"claudetto: cannot start from "+r+" ("+t.__name__+": "+str(e)+"); run claudetto setup '
           'again from where claudetto is now, or claudetto setup --uninstall"')
    return (f"import sys;r={literal};sys.path.append(r);"
            f"sys.excepthook=lambda t,e,b:print({say},file=sys.stderr);from hooks.entry import run;run()")


def hook_command(python: str | None = None) -> str:
    """The command Claude runs: the interpreter by absolute path (a pyenv shim costs ~70 ms),
    `-I` (as `-P`: a project's own `app/` or `hooks/` package stays out, and so do the current
    folder and PYTHON* variables) and `-S` (no `site`: ~2.5 ms of a ~10 ms start; `python -m`
    would add ~4 ms of runpy). The entry finds claudetto by the folder written into it, so a
    `python` other than this one gets its own folder asked of it."""
    interpreter = os.path.abspath(python or sys.executable)
    root = None if interpreter == os.path.abspath(sys.executable) else _root_of(interpreter)
    return f"{shlex.quote(interpreter)} -I -S -c {shlex.quote(entry_code(root))} {MARKER}"


def _root_of(interpreter: str) -> str:
    """Where another interpreter finds claudetto's packages (it must have claudetto installed)."""
    import subprocess

    probe = "import app,os;print(os.path.dirname(os.path.dirname(os.path.abspath(app.__file__))))"
    try:
        out = subprocess.run([interpreter, "-I", "-c", probe], capture_output=True, text=True,
                             timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SetupError(f"cannot run {interpreter}: {exc}; nothing changed") from exc
    root = out.stdout.strip()
    if out.returncode != 0 or not root.startswith("/"):
        raise SetupError(f"{interpreter} cannot import claudetto; nothing changed")
    return root


def is_ours(hook: object) -> bool:
    """A hook claudetto wrote: the marker at the end AND one of the two entries it ever ran
    (`-c '...from hooks.entry import run;run()'`, or the older `-m hooks`). The marker alone
    is a comment anyone may write; a look-alike must be neither rewritten nor removed."""
    if not (isinstance(hook, dict) and isinstance(hook.get("command"), str)):
        return False
    command = hook["command"].rstrip()
    if not command.endswith(MARKER):
        return False
    body = command[: -len(MARKER)].rstrip()
    return body.endswith((" -m hooks", "from hooks.entry import run;run()'"))


def _entry(event: str, command: str, keys: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new entry of ours; `keys`: what the user had set on our hook where it stood."""
    entry: dict[str, Any] = {}
    matcher = EVENTS[event]
    if matcher:
        entry["matcher"] = matcher
    entry["hooks"] = [_our_hook(keys or {}, command)]
    return entry


def _our_hook(hook: dict[str, Any], command: str) -> dict[str, Any]:
    """Our hook with its command brought up to date and every other key the user set on it (a
    `timeout`, a `statusMessage`) kept, in its place. The one exception is what an older
    claudetto wrote itself: `"timeout": 60` on an entry of the `-P -m hooks` form, which on
    SessionEnd raised every SessionEnd hook's budget."""
    kept = dict(hook)
    if kept.get("timeout") == 60 and str(kept.get("command", "")).endswith(_OLD_FORM):
        del kept["timeout"]
    if not kept:
        return {"type": "command", "command": command}
    kept.setdefault("type", "command")  # in the order the user wrote them: only a value changes
    kept["command"] = command
    return kept


_OLD_FORM = f" -P -m hooks {MARKER}"


def _rewrite_event(event: str, entries: list[Any], command: str | None) -> tuple[list[Any], bool]:
    """The event's entries with claudetto's hooks set to `command` (None: taken out); True
    when one of ours was there. An entry that holds only our hook is kept where it stands
    with everything the user set on it (its `matcher` too): only the command changes. Our
    hook in an entry shared with other hooks moves to an entry of its own at the end (with
    the keys it had), since the entry's matcher is the other hooks' as much as ours; any
    further copy of ours goes."""
    out: list[Any] = []
    placed = command is None
    seen: dict[str, Any] | None = None
    for entry in entries:
        if not (isinstance(entry, dict) and isinstance(entry.get("hooks"), list)):
            out.append(entry)
            continue
        mine = [h for h in entry["hooks"] if is_ours(h)]
        if not mine:
            out.append(entry)
            continue
        seen = seen or mine[0]
        inner = [h for h in entry["hooks"] if not is_ours(h)]
        if inner:
            out.append({**entry, "hooks": inner})
        elif not placed and command is not None:
            out.append({**entry, "hooks": [_our_hook(mine[0], command)]})
            placed = True
    if not placed and command is not None:
        out.append(_entry(event, command, seen))
    return out, seen is not None


def rewrite(settings: dict[str, Any], command: str | None) -> tuple[dict[str, Any], list[str]]:
    """`settings` with claudetto's entries set to `command` (None: taken out), each in place;
    returns it and the events that held one of ours before."""
    hooks = settings.get("hooks")
    if hooks is None:
        if command is None:
            return settings, []
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        if command is None:
            return settings, []
        raise SetupError("settings.json: 'hooks' is not an object; fix it by hand first")
    had: list[str] = []
    for event in [*hooks, *(e for e in EVENTS if e not in hooks and command is not None)]:
        entries = hooks.get(event, [])
        if not isinstance(entries, list):
            if command is not None and event in EVENTS:
                raise SetupError(f"settings.json: hooks.{event} is not a list; fix it by hand first")
            continue
        new, found = _rewrite_event(event, entries, command if event in EVENTS else None)
        if found:
            had.append(event)
        if new:
            hooks[event] = new
        elif found:  # it held only ours; an empty list of the user's is theirs
            hooks.pop(event, None)
    if not hooks and had:
        settings.pop("hooks", None)
    return settings, had


def setup(*, uninstall: bool = False, dry_run: bool = False, python: str | None = None) -> SetupResult:
    if not uninstall:
        refuse_plugin_environment(os.path.abspath(python or sys.executable))
    link = paths.user_settings()
    target = Path(os.path.realpath(link))  # a dotfiles symlink: change its target, keep the link
    if not target.parent.is_dir():
        if link.is_symlink():
            raise SetupError(f"{link} links to {target}, whose folder does not exist; nothing changed")
        if not dry_run:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # CLAUDE_CONFIG_DIR names a file, or a folder we may not make
                raise SetupError(f"cannot make Claude's config folder {target.parent}: "
                                 f"{exc.strerror or exc}; nothing changed") from None
    if dry_run:  # a dry run writes nothing and takes no lock
        return _setup(link, target, uninstall, True, python)
    with folder_lock(target.parent):  # other setups wait; Claude does not: compare, then swap
        for _ in range(WRITE_TRIES - 1):
            try:
                return _setup(link, target, uninstall, False, python)
            except SettingsChanged:
                continue
        try:
            return _setup(link, target, uninstall, False, python)
        except SettingsChanged as exc:
            raise SetupError(f"{exc} {WRITE_TRIES} times in a row; nothing changed, run setup again") from None


def _setup(link: Path, target: Path, uninstall: bool, dry_run: bool, python: str | None) -> SetupResult:
    raw, st = read_settled(target)
    current = parse_settings(raw, link)
    before = copy.deepcopy(current)
    new, had = rewrite(current, None if uninstall else hook_command(python))
    changed = new != before
    backup = None
    if changed:  # a dry run refuses what the real run would; a refused file gets no backup
        refuse_read_only(link, target, st)
        text = _new_text(raw, before, new, link, uninstall, python)
    if changed and not dry_run:
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~umask()
        if st is not None:  # an empty file too: the uninstall gives back the bytes it finds
            backup = keep_backup(link, raw, st)
        try:
            write_keeping_form(target, text, mode, st, expect=raw)
        except SettingsChanged:
            if backup:  # of a text that is no longer there: the next try keeps its own
                os.unlink(backup)
            raise
    if not dry_run:
        remove_old_lock(link)
        if backup:
            prune_backups(link)
    added = [] if uninstall or not changed else list(EVENTS)
    return SetupResult(str(link), changed, backup, added, had if changed else [], dry_run,
                       also_in=project_entries(target), **({} if uninstall else _notes(target, new, python)))


def _new_text(raw: str, before: dict[str, Any], new: dict[str, Any], link: Path, uninstall: bool,
              python: str | None) -> str:
    """The file's new text: the edit of `raw`, else `new` written whole; at an uninstall the
    backup the install was made from, byte for byte, while the file is still what an install
    by `python` made of it (restored_text)."""
    layout = layout_of(raw)
    text = render(new, layout, link)  # refuses what no file can hold, the edit or not
    edited = edited_text(raw, before, new, layout.indent, layout.newline)
    if not uninstall:
        return edited or text
    restored = restored_text(backups(link), raw, new, edited,
                             lambda old_text, old: _installed(old_text, old, link, python))
    return restored if restored is not None else edited or text  # "" too: the file was empty


def _installed(raw: str, settings: dict[str, Any], link: Path, python: str | None) -> str | None:
    """The text an install now would make of `raw` (which reads as `settings`), as `_setup` makes
    it; None when `settings` hold an entry of claudetto's already (not the file before setup)."""
    new, had = rewrite(copy.deepcopy(settings), hook_command(python))
    if had:
        return None
    layout = layout_of(raw)
    try:
        return edited_text(raw, settings, new, layout.indent, layout.newline) or render(new, layout, link)
    except (SetupError, ValueError):
        return None


def _notes(target: Path, new: dict[str, Any], python: str | None) -> dict[str, Any]:
    """What keeps the entries just written from running, or from running once (setup_report)."""
    return {"plugin_enabled": plugin_enabled(new), "managed_block": managed_block(),
            "disabled_in": hooks_disabled_in(target, new), "other_creators": other_worktree_creators(target, new),
            "temp_install": temp_install(os.path.abspath(python or sys.executable), package_root())}


def refuse_plugin_environment(interpreter: str) -> None:
    """The plugin's own venv (`sh .../bin/claudetto-hook setup`) is no home for settings
    entries: the plugin runs the hooks already (every one would run twice), rebuilds that venv
    on each update and deletes it on uninstall, after which every entry would fail on every
    event. Its builder's stamp (`claudetto-entry`) beside `bin/` marks it."""
    if os.path.exists(os.path.join(os.path.dirname(os.path.dirname(interpreter)), "claudetto-entry")):
        raise SetupError(f"{interpreter} is the claudetto plugin's own environment, which runs the hooks "
                         "already and goes with the plugin; run setup from a checkout of claudetto "
                         "instead (.venv/bin/claudetto setup); nothing changed")
