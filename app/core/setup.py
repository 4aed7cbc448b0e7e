"""`claudetto setup`: add (or remove) claudetto's hook entries in Claude's settings.json.

Idempotent: claudetto's entries are recognised by the marker at the end of their command and
replaced where they stand, so running setup twice (or after moving the venv, or after an
older claudetto wrote other keys) leaves one entry per event. An entry of an older form
(`<python> -P -m hooks # claudetto`) is upgraded in place to the current one (`hook_command`);
the plugin's launcher runs the same entry (`entry_code`), so the two installs never drift. The
old file is kept beside it as `settings.json.bak-<timestamp>` before any change.

The file is the user's, often kept in a dotfiles repository and linked in, so a change keeps
its form: a symlink is written through (the link stays, its target changes, atomically: a
temp file in the target's folder renamed onto it), the file keeps its mode, its owner where
we may set it, its indentation, its line ends and its trailing newline. A file nobody may
write (no write bit, or no write permission for us) is refused, not overwritten. Writers are
serialised by a lock on the target's folder, which exists already and is never replaced, so
nothing (no `settings.json.lock`) is left beside the file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core import paths

MARKER = "# claudetto"
LOCK_WAIT_S = 5.0

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
    #: the claudetto plugin is enabled in the same settings: both would run every hook
    plugin_enabled: bool = False


@dataclass(frozen=True)
class Layout:
    """How the user's file is written, so that a rewrite changes only the hook entries."""

    indent: str = "  "
    newline: str = "\n"
    trailing_newline: bool = True


def package_root() -> str:
    """The folder that holds claudetto's `app` and `hooks` packages: the checkout for an
    editable install (`make run`), site-packages for a plain one."""
    import app

    return os.path.dirname(os.path.dirname(os.path.abspath(app.__file__)))


def entry_code(root: str | None = None) -> str:
    """The `-c` program of the hook command: claudetto's folder on the path, then
    `hooks.entry.run` (which adds the venv's site-packages that `-S` left out). One line,
    double-quoted literal, so that it survives shell quoting and the plugin's stamp file."""
    literal = json.dumps(root or package_root(), ensure_ascii=False)
    return f"import sys;sys.path.append({literal});from hooks.entry import run;run()"


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
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and hook["command"].rstrip().endswith(MARKER)


def _entry(event: str, command: str) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    matcher = EVENTS[event]
    if matcher:
        entry["matcher"] = matcher
    entry["hooks"] = [{"type": "command", "command": command}]
    return entry


def _only_ours(entry: object) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("hooks"), list) and bool(entry["hooks"])
            and all(is_ours(h) for h in entry["hooks"]))


def _rewrite_event(entries: list[Any], wanted: dict[str, Any] | None) -> tuple[list[Any], bool]:
    """The event's entries with claudetto's hooks taken out, and `wanted` (when given) put
    where claudetto's first entry of its own stood, else at the end. True when one of ours
    was there."""
    out: list[Any] = []
    placed = wanted is None
    found = False
    for entry in entries:
        if not (isinstance(entry, dict) and isinstance(entry.get("hooks"), list)):
            out.append(entry)
            continue
        inner = [h for h in entry["hooks"] if not is_ours(h)]
        if len(inner) == len(entry["hooks"]):
            out.append(entry)
            continue
        found = True
        if not placed and not inner:
            out.append(wanted)
            placed = True
        elif inner:
            out.append({**entry, "hooks": inner})
    if not placed:
        out.append(wanted)
    return out, found


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
        wanted = _entry(event, command) if command is not None and event in EVENTS else None
        new, found = _rewrite_event(entries, wanted)
        if found:
            had.append(event)
        if new:
            hooks[event] = new
        else:
            hooks.pop(event, None)
    if not hooks:
        settings.pop("hooks", None)
    return settings, had


def layout_of(raw: str) -> Layout:
    """The indentation (a run of spaces or a tab; two spaces when there is none to see), the
    line end and whether the text ends in a newline."""
    newline = "\r\n" if "\r\n" in raw else "\n"
    trailing = raw.endswith("\n") or not raw.strip()
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in raw.splitlines()[1:]
               if line.strip() and line[:1] in (" ", "\t")]
    if indents and indents[0].startswith("\t"):
        return Layout("\t", newline, trailing)
    widths = [len(lead) for lead in indents if not lead.startswith("\t")]
    return Layout(" " * min(widths) if widths else "  ", newline, trailing)


def render(data: Any, layout: Layout) -> str:
    text = json.dumps(data, indent=layout.indent, ensure_ascii=False)
    if layout.newline != "\n":
        text = text.replace("\n", layout.newline)
    return text + (layout.newline if layout.trailing_newline else "")


def setup(*, uninstall: bool = False, dry_run: bool = False, python: str | None = None) -> SetupResult:
    link = paths.user_settings()
    target = Path(os.path.realpath(link))  # a dotfiles symlink: change its target, keep the link
    if not target.parent.is_dir():
        if link.is_symlink():
            raise SetupError(f"{link} links to {target}, whose folder does not exist; nothing changed")
        if not dry_run:
            target.parent.mkdir(parents=True, exist_ok=True)
    if dry_run:  # a dry run writes nothing and takes no lock
        return _setup(link, target, uninstall, True, python)
    with folder_lock(target.parent):
        return _setup(link, target, uninstall, False, python)


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive flock on the folder itself: it exists already and a rename inside it
    never replaces it, so two setups cannot both hold it and no lock file is left behind."""
    import fcntl

    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise SetupError(f"cannot open {folder}: {exc.strerror}; nothing changed") from exc
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise SetupError(f"cannot lock {folder}: {exc.strerror}; nothing changed") from exc
                if time.monotonic() >= deadline:
                    raise SetupError(f"another claudetto setup is changing {folder}; nothing changed") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _read(target: Path) -> tuple[str, os.stat_result | None]:
    try:
        with open(target, encoding="utf-8", newline="") as fh:
            return fh.read(), os.fstat(fh.fileno())
    except FileNotFoundError:
        return "", None
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {target}: {exc}") from exc


def _refuse_read_only(link: Path, target: Path, st: os.stat_result | None) -> None:
    """A rename would replace a read-only file regardless of its mode: check it first. No
    write bit at all counts as read-only even for root: the user made it so on purpose."""
    if st is None:
        return
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        shown = link if link == target else f"{link} (-> {target})"
        raise SetupError(f"{shown} is read-only; nothing changed (make it writable, or add the hooks by hand)")


def _setup(link: Path, target: Path, uninstall: bool, dry_run: bool, python: str | None) -> SetupResult:
    raw, st = _read(target)
    try:
        current = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        raise SetupError(f"{link} is not valid JSON ({exc}); nothing changed") from exc
    if not isinstance(current, dict):
        raise SetupError(f"{link} is not a JSON object; nothing changed")
    before = json.loads(json.dumps(current))
    new, had = rewrite(current, None if uninstall else hook_command(python))
    changed = new != before
    backup = None
    if changed:
        _refuse_read_only(link, target, st)
    if changed and not dry_run:
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
        if raw:
            backup = _backup(link, raw, st)
        write_keeping_form(target, render(new, layout_of(raw)), mode, st)
    if not dry_run:
        _remove_old_lock(link)
    added = [] if uninstall or not changed else list(EVENTS)
    return SetupResult(str(link), changed, backup, added, had if changed else [], dry_run,
                       plugin_enabled=not uninstall and plugin_enabled(new))


def plugin_enabled(settings: dict[str, Any]) -> bool:
    """Whether these settings enable the claudetto plugin (`enabledPlugins` key
    `claudetto@<marketplace>`). With both installs every hook runs twice, WorktreeCreate too,
    and two parallel creations of one checkout can fail it."""
    enabled = settings.get("enabledPlugins")
    return isinstance(enabled, dict) and any(
        isinstance(key, str) and key.startswith("claudetto@") and value is True for key, value in enabled.items())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _backup(link: Path, raw: str, st: os.stat_result | None) -> str:
    """The old text beside the settings file (beside the link, not in a dotfiles repository),
    with the old file's mode: settings may hold tokens, and a backup must not widen access."""
    mode = stat.S_IMODE(st.st_mode) & 0o666 if st is not None else 0o600
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = link.with_name(f"{link.name}.bak-{stamp}")
    n = 1
    while True:
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            break
        except FileExistsError:
            name = link.with_name(f"{link.name}.bak-{stamp}-{n}")
            n += 1
        except OSError as exc:
            raise SetupError(f"cannot write the backup {name}: {exc.strerror}; nothing changed") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            os.fchmod(fh.fileno(), mode | 0o200)
            fh.write(raw)
    except OSError as exc:
        raise SetupError(f"cannot write the backup {name}: {exc.strerror}; nothing changed") from exc
    return str(name)


def write_keeping_form(target: Path, text: str, mode: int, st: os.stat_result | None) -> None:
    """Replace `target` atomically: a temp file in its own folder with its mode (and owner,
    where we may set it), fsynced, renamed onto it."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise SetupError(f"cannot write in {target.parent}: {exc.strerror}; nothing changed") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            os.fchmod(fh.fileno(), mode)
            if st is not None and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise SetupError(f"cannot write {target}: {exc.strerror}; nothing changed") from exc
        raise


def _remove_old_lock(link: Path) -> None:
    """Older versions left an empty `settings.json.lock` file; take it away. Only an empty
    regular file: a lock folder or a non-empty file is someone else's."""
    old = link.with_name(link.name + ".lock")
    try:
        st = os.lstat(old)
        if stat.S_ISREG(st.st_mode) and st.st_size == 0:
            os.unlink(old)
    except OSError:
        pass


def setup_json(result: SetupResult) -> dict[str, Any]:
    return {
        "settings": result.settings,
        "changed": result.changed,
        "backup": result.backup,
        "dry_run": result.dry_run,
        "events": result.added,
        "removed": sorted(set(result.removed)),
        "plugin_enabled": result.plugin_enabled,
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
    if not result.plugin_enabled:
        return ""
    return ("\nnote: the claudetto plugin is enabled too, so every hook would run twice; keep one "
            "install (/plugin uninstall claudetto@<marketplace>, or claudetto setup --uninstall)")


def settings_path() -> Path:
    return paths.user_settings()
