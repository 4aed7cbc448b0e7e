"""Every location claudetto reads or writes, resolved from the environment in one place.

CONTRACT "Environment": each path comes from HOME, CLAUDE_CONFIG_DIR, CLAUDE_CODE_TMPDIR,
TMPDIR (TMP, TEMP) and CLAUDETTO_HOME, so a test can point the whole program at a sandbox.
Nothing is cached: the environment is read on every call (it is a handful of dict lookups).
An empty variable counts as unset, as it does for Claude.
"""

from __future__ import annotations

import os
import stat
import sys

# pathlib (with re, fnmatch, urllib) costs ~9 ms to import: the hot hook path uses the `*_str`
# functions below and never imports it. Their Path forms (`_as_path`) import it on first call.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import ParamSpec

    Args = ParamSpec("Args")

_SLUG_MAX = 200


def _path(value: str) -> Path:
    from pathlib import Path

    return Path(value)


def _as_path(text_of: Callable[Args, str]) -> Callable[Args, Path]:
    """The Path form of a place given as text, for callers off the hot path."""

    def as_path(*args: Args.args, **kwargs: Args.kwargs) -> Path:
        return _path(text_of(*args, **kwargs))

    as_path.__doc__ = text_of.__doc__
    return as_path


def _below(base: Callable[[], Path], name: str) -> Callable[[], Path]:
    """The place `name` inside the folder `base()`, as the environment is now."""

    def place() -> Path:
        return base() / name

    return place


def home_str() -> str:
    """The user's home: $HOME (never the password database, so a sandbox stays a sandbox)."""
    return os.environ.get("HOME") or "/nonexistent-home"


def config_dir_str() -> str:
    """Claude's config root: $CLAUDE_CONFIG_DIR, else $HOME/.claude."""
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home_str(), ".claude")


home = _as_path(home_str)
config_dir = _as_path(config_dir_str)
#: Claude's own files in its config root: `sessions/<pid>.json` (one per running Claude),
#: `projects/<slug>/` (transcripts and auto memory), the user's `settings.json`.
sessions_dir = _below(config_dir, "sessions")
projects_dir = _below(config_dir, "projects")
user_settings = _below(config_dir, "settings.json")


def claude_json() -> Path:
    """`.claude.json`: inside CLAUDE_CONFIG_DIR when that is set, else in the home."""
    if os.environ.get("CLAUDE_CONFIG_DIR"):
        return config_dir() / ".claude.json"
    return home() / ".claude.json"


#: Where Claude reads the managed (policy) settings file, on Linux and on macOS.
MANAGED_SETTINGS_LINUX = "/etc/claude-code/managed-settings.json"
MANAGED_SETTINGS_MACOS = "/Library/Application Support/ClaudeCode/managed-settings.json"


def managed_settings() -> Path:
    """The managed settings file: $CLAUDETTO_MANAGED_SETTINGS (so a test or a sandbox never
    reads the machine's policy), else where Claude reads it on this platform."""
    override = os.environ.get("CLAUDETTO_MANAGED_SETTINGS")
    if override:
        return _path(override)
    return _path(MANAGED_SETTINGS_MACOS if sys.platform == "darwin" else MANAGED_SETTINGS_LINUX)


def claude_tmp_root_str() -> str:
    """Claude's temp root, chosen as Claude chooses it, then realpath'd: $CLAUDE_CODE_TMPDIR;
    else on Linux $TMPDIR, $TMP, $TEMP; else /tmp (macOS: $CLAUDE_CODE_TMPDIR, else /tmp).
    Assuming /tmp would look in the wrong claude-<uid> whenever TMPDIR is set."""
    root = os.environ.get("CLAUDE_CODE_TMPDIR")
    if not root and sys.platform != "darwin":
        root = os.environ.get("TMPDIR") or os.environ.get("TMP") or os.environ.get("TEMP")
    return os.path.realpath(root or "/tmp")


def claude_tmp_dir_str() -> str:
    """Claude's own temp folder: realpath(root)/claude-<uid>."""
    return os.path.join(claude_tmp_root_str(), f"claude-{os.getuid()}")


claude_tmp_root = _as_path(claude_tmp_root_str)
claude_tmp_dir = _as_path(claude_tmp_dir_str)
#: claudetto's gate logs, beside Claude's own folder: <realpath(Claude's temp root)>/claudetto
log_root = _below(claude_tmp_root, "claudetto")


def claude_tmp_dir_of_scratchpad(scratchpad_dir: object) -> str | None:
    """The claude-<uid> folder a hook payload's `scratchpad_dir` names, or None.

    `scratchpad_dir` is `<claude-<uid> folder>/<project slug>/<session>/scratchpad`: the exact
    folder this Claude uses, whatever environment the hook itself got. Taken three levels up
    and realpath'd, and only when that is a real folder (no symlink, not a file) of this user
    named `claude-<uid>` of this uid; a value of another shape (not absolute, `.` or `..`
    parts, too short) gives None, and the caller falls back on `claude_tmp_dir_str()`."""
    if not isinstance(scratchpad_dir, str) or not scratchpad_dir.startswith("/") or "\0" in scratchpad_dir:
        return None
    parts = scratchpad_dir.rstrip("/").split("/")
    if len(parts) < 5 or any(part in ("", ".", "..") for part in parts[1:]):
        return None
    folder = os.path.realpath("/".join(parts[:-3]))
    if os.path.basename(folder) != f"claude-{os.getuid()}":
        return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return None
    return folder


def claude_tmp_dir_for(scratchpad_dir: object = None) -> str:
    """The claude-<uid> folder to clean for a hook: the one its payload's `scratchpad_dir`
    names when that is valid (see `claude_tmp_dir_of_scratchpad`), else the environment's."""
    return claude_tmp_dir_of_scratchpad(scratchpad_dir) or claude_tmp_dir_str()


def user_tmp_given_str() -> str:
    """TMPDIR as set (or /tmp), not resolved: a relative one names a folder below wherever the
    program runs (a hook runs in the project), so it is no GC root (app/core/gc_rules.py)."""
    return os.environ.get("TMPDIR") or "/tmp"


def user_tmp_str() -> str:
    """The user's temp folder, realpath(TMPDIR or /tmp): a GC root."""
    return os.path.realpath(user_tmp_given_str())


def claudetto_home_str() -> str:
    """claudetto's own state: $CLAUDETTO_HOME, else $CLAUDE_PLUGIN_DATA, else ~/.claudetto.
    Claude passes a settings `env` value as written: `~` is read as the home, and a value
    still relative is passed over (it would make a state folder in each hook's cwd)."""
    for value in (os.environ.get("CLAUDETTO_HOME"), os.environ.get("CLAUDE_PLUGIN_DATA")):
        value = home_str() + value[1:] if value and (value == "~" or value.startswith("~/")) else value
        if value and os.path.isabs(value):
            return value
    return os.path.join(home_str(), ".claudetto")


def gc_records_file_str(session_id: str) -> str:
    """The output records of one session (`gc/<session>.json`)."""
    return os.path.join(claudetto_home_str(), "gc", f"{safe_name(session_id)}.json")


def ledger_file_str() -> str:
    """The edit ledger (`ledger.json`)."""
    return os.path.join(claudetto_home_str(), "ledger.json")


user_tmp = _as_path(user_tmp_str)
claudetto_home = _as_path(claudetto_home_str)
gc_records_file = _as_path(gc_records_file_str)
ledger_file = _as_path(ledger_file_str)
#: claudetto's state (CONTRACT "Environment"): the output records, the checkout registry,
#: the removal journal, and the trash big trees are renamed into before a detached purge
#: (on the same file system as the state).
gc_dir = _below(claudetto_home, "gc")
checkouts_file = _below(claudetto_home, "checkouts.json")
journal_file = _below(claudetto_home, "journal.jsonl")
trash_dir = _below(claudetto_home, "trash")


def session_log_str(cwd: str | None, session_id: str | None) -> str:
    """The log of claudetto's own hooks for one session of one project; a cwd on a remote
    mount that does not answer names it as written (its project is never looked for there)."""
    from app.core.hung_mounts import reachable

    project = (project_root_str(cwd) if reachable(cwd) else os.path.normpath(cwd)) if cwd else None
    slug = project_slug(project) if project else "unknown"
    name = safe_name(session_id) if session_id else "hooks"
    return os.path.join(claude_tmp_root_str(), "claudetto", slug, f"{name}.log")


def session_log(cwd: str | os.PathLike[str] | None, session_id: str | None) -> Path:
    return _path(session_log_str(os.fspath(cwd) if cwd else None, session_id))


def inside(child: str, parent: str) -> bool:
    """THE "inside a folder" rule: `child` is `parent` or below it (both absolute and spelled
    alike: real paths, or paths with their parents resolved, `resolve_parents`)."""
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def strictly_inside(child: str, parent: str) -> bool:
    """`child` is below `parent`, not `parent` itself."""
    return child != parent and inside(child, parent)


def resolve_parents(path: str, cache: dict[str, str] | None = None) -> str:
    """`path` with every parent resolved by the file system (symlinks and `..` alike) and the
    last component kept as it is (so a symlink stays a symlink, to be refused, not followed).

    The one spelling in which records, live folders and roots are compared. Never fold
    `a/../b` by text (os.path.normpath): when `a` is a symlink, that names another place.
    `cache`: folders already resolved, for a caller that resolves many paths of one moment
    (one command's outputs): realpath costs a stat per component."""
    stripped = path.rstrip("/") or "/"
    name = os.path.basename(stripped)
    if name in ("", ".", ".."):
        return _realpath(stripped, cache)
    return os.path.join(_realpath(os.path.dirname(stripped) or ".", cache), name)


def _realpath(path: str, cache: dict[str, str] | None) -> str:
    """os.path.realpath, with `cache`: from the nearest folder above already resolved, one
    lstat per component below it (a `cd a; ...; cd a; ...` chain costs a stat per step, not
    its whole depth at every step). `..` goes up from the resolved folder, as realpath does;
    at a symlink, realpath itself resolves the whole path (its rules for loops are its own)."""
    if cache is None or not path.startswith("/") or path.startswith("//"):
        return os.path.realpath(path)
    found = cache.get(path)
    if found is not None:
        return found
    below: list[tuple[str, str]] = []  # (folder as written, its last component), deepest first
    current = path
    while True:
        known = cache.get(current)
        if known is not None:
            break
        parent, name = os.path.split(current)
        if parent == current:  # the root
            known = parent
            break
        below.append((current, name))
        current = parent
    for written, name in reversed(below):
        if name == "..":
            known = os.path.dirname(known)
        elif name not in ("", "."):
            known = os.path.join(known, name)
            if os.path.islink(known):
                return os.path.realpath(path)  # not kept: a loop's result is no folder to go on from
        cache[written] = known
        cache[known] = known
    return known


_NAME_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def safe_name(value: str) -> str:
    """A session id made safe as one file name (no separators, no newlines)."""
    cleaned = "".join(c if c in _NAME_SAFE else "_" for c in value[:128]).lstrip(".")
    return cleaned or "_"


def project_slug(path: str | os.PathLike[str]) -> str:
    """Claude's project slug, as its CLI computes it.

    Every UTF-16 code unit outside [A-Za-z0-9] becomes '-' (so an astral character costs two).
    Over 200 characters: the first 200, then '-' and base 36 of |h|, where h is the Java-style
    string hash (h = 31*h + code unit, wrapped to signed 32 bits) of the original path.
    """
    text = os.fspath(path)
    units = _utf16_units(text)
    slug = "".join(chr(u) if 48 <= u <= 57 or 65 <= u <= 90 or 97 <= u <= 122 else "-" for u in units)
    if len(slug) <= _SLUG_MAX:
        return slug
    h = 0
    for unit in units:
        h = (h * 31 + unit) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    return f"{slug[:_SLUG_MAX]}-{_base36(abs(h))}"


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if number == 0:
            return out


def git_root_str(start: str) -> str | None:
    """The top of the git checkout that holds `start` (a worktree is its own top), or None.

    Stdlib only: it looks for a `.git` entry upwards, so it costs a few stats, not a git call.
    """
    try:
        current = os.path.abspath(start)
    except (OSError, ValueError):
        return None
    while True:
        try:
            if os.path.lexists(os.path.join(current, ".git")):
                return current
        except (OSError, ValueError):
            return None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def git_root(start: str | os.PathLike[str]) -> Path | None:
    found = git_root_str(os.fspath(start))
    return _path(found) if found is not None else None


def main_repo_root(start: str | os.PathLike[str]) -> Path | None:
    """The main repository of a checkout: for a linked worktree, the repo it belongs to.

    Claude's auto memory uses the main repository's slug, so every worktree shares one memory.
    """
    top = git_root(start)
    if top is None:
        return None
    dot_git = top / ".git"
    if dot_git.is_file():
        try:
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return top
        if text.startswith("gitdir:"):
            from app.core.linked_main import main_of_linked

            return main_of_linked(top, text[len("gitdir:"):].strip())
    return top


def project_root_str(cwd: str) -> str:
    """The project of a working folder: its git root, else the folder itself."""
    return git_root_str(cwd) or os.path.abspath(cwd)


def project_root(cwd: str | os.PathLike[str]) -> Path:
    return _path(project_root_str(os.fspath(cwd)))


def claude_json_projects() -> list[str]:
    """The keys of `.claude.json` `projects`: every folder Claude was started in. Read as
    Claude's settings are, bounded at 1 GiB: it keeps a history per project and grows, and
    what it lists keeps the user's repositories."""
    from app.core.settings import read_settings  # late: settings imports this module

    try:
        data = read_settings(claude_json(), limit=1 << 30)
    except (OSError, ValueError):
        return []
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return []
    return [key for key in projects if isinstance(key, str) and key.startswith("/")]


def known_projects(cwd: str | os.PathLike[str] | None = None, *, ending_session: str | None = None) -> list[Path]:
    """CONTRACT "Known projects": `.claude.json` projects, every session's cwd, the current
    folder's git root. Absolute, deduplicated, in that order; missing folders are left out.
    `ending_session`: a session that is ending (its file goes with it) names no project."""
    from pathlib import Path

    from app.core.hung_mounts import reachable  # a project on a dead `sshfs` is never looked at
    from app.core.sessions import read_sessions  # late: sessions imports this module

    found = claude_json_projects()
    found.extend(project_root_str(s.cwd) for s in read_sessions()
                 if s.cwd and reachable(s.cwd) and (ending_session is None or s.session_id != ending_session))
    try:
        found.append(git_root_str(os.fspath(cwd) if cwd is not None else os.getcwd()) or "")
    except OSError:  # the current folder is gone
        pass
    keys = dict.fromkeys(os.path.normpath(path) for path in found if path)
    return [Path(key) for key in keys if reachable(key) and os.path.isdir(key)]
