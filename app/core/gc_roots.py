"""Where the output GC may take anything from: its roots, and the places in them that are no output.

CONTRACT "Definitions", GC roots: `realpath(TMPDIR or /tmp)` and `<project>/.claude/worktrees/`
of the project a recording session ran in. Users set TMPDIR to odd places, and the recorder
calls every Write inside it a scratch output, so a temp root that would make the user's own
files "outputs" is refused as a whole (logged once), and a few places inside an accepted root
are never outputs, whatever a record says:

- a temp root is never `/`, the home, Claude's config folder, nor a relative TMPDIR
  (`root_refused`); in a root above the home or the config folder, they and all they hold are
  no outputs (`users_place`);
- nor a folder in a git checkout (TMPDIR set to the project, `TMPDIR=$PWD` in a wrapper): the
  project's new, not yet committed files would be outputs. A checkout whose top is the home
  (a dotfiles repository) is the one exception: its temp folders are temp folders (a project
  without git that is the root itself is its sessions' project: `gc_rules`, `shared_temp`);
- claudetto's own state (records, journal, trash; a trash made in a root), Claude's temp folder `claude-<uid>` with its
  project and session folders, and claudetto's logs beside it, each with every folder around
  it (`own_place`): CLAUDETTO_HOME or CLAUDE_CODE_TMPDIR inside TMPDIR puts them in the root,
  and the GC must never remove its own state or what the hygiene cleanup judges by its own rules.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar, cast

from app.core import paths
from app.core.paths import inside, strictly_inside
from app.core.trash import ROOT_TRASH_NAME

_REFUSALS_LOGGED: set[str] = set()
T = TypeVar("T")
#: Below claude-<uid>: `<project slug>/<session>`; a record naming one of those levels names
#: Claude's layout, not something a session made (its scratchpad files lie deeper).
_CLAUDE_LEVELS = 2


#: What one sweep has worked out already: a sweep of many records asks for the same roots
#: and places for each (each costs a few realpaths). A sweep (and a removal's last check)
#: starts with `fresh()`: the environment or the disk may have changed since the last.
_MEMO: dict[tuple[object, ...], object] = {}


def fresh() -> None:
    """Forget what the last sweep worked out."""
    _MEMO.clear()


def per_sweep(key: tuple[object, ...], work: Callable[[], T]) -> T:
    """`work()`, worked out once per sweep and `key`."""
    if key not in _MEMO:
        _MEMO[key] = work()
    return cast("T", _MEMO[key])


def git_top(start: str) -> str | None:
    """`paths.git_root_str(start)`, looked up once per sweep and folder: a sweep of thousands of
    records in one folder asked the same question for each (a stat a level up to `/`)."""
    return per_sweep(("git_top", start), lambda: paths.git_root_str(start))


def gc_roots(cwd: str) -> list[str]:
    """The GC roots of a session that ran in `cwd`: `.claude/worktrees/` of its project (git root
    and main repository; outside git, `cwd`, Claude's project) and the user's temp folder."""
    return list(per_sweep(("roots", cwd), lambda: _gc_roots(cwd)))


def _gc_roots(cwd: str) -> list[str]:
    roots: list[str] = []
    if cwd.startswith("/"):
        top = paths.git_root(cwd)
        projects = (top, paths.main_repo_root(cwd)) if top is not None else (cwd,)
        roots += [os.path.join(os.path.normpath(p), ".claude", "worktrees") for p in projects if p is not None]
    roots = [root for root in dict.fromkeys(roots) if not root_refused(root)]
    given = paths.user_tmp_given_str()
    if not given.startswith("/"):
        _log_refused(given, "TMPDIR is a relative path")
    elif not root_refused(paths.user_tmp_str()) and not _in_a_checkout(paths.user_tmp_str()):
        roots.append(paths.user_tmp_str())
    return list(dict.fromkeys(roots))


def root_refused(root: str) -> bool:
    """A GC root is never `/`, the home, nor Claude's config folder: some set TMPDIR to their home on
    a machine with a small /tmp, and every project there would be an "output". A folder above the
    home or the config folder (a sandbox's TMPDIR that holds its HOME) is a root, with them and all
    they hold never outputs (`users_place`)."""
    real = os.path.realpath(root)
    if real == "/":
        _log_refused(root, "it is the file system's root")
        return True
    for name, place in (("the home", paths.home_str()), ("Claude's config folder", paths.config_dir_str())):
        if os.path.realpath(place) == real:
            _log_refused(root, f"it is {name}")
            return True
    return False


def users_place(real: str, root: str | None) -> bool:
    """Whether the real path is or holds the home or Claude's config folder, or lies in one of them
    when `root` holds it (TMPDIR set above the home): never an output. A root inside the home
    (`TMPDIR=$HOME/tmp`) is the user's temp folder like any other."""
    from app.core.containment import users_home

    places = per_sweep(("users",), lambda: (os.path.realpath(paths.home_str()),
                                            os.path.realpath(paths.config_dir_str())))
    return any(inside(place, real) for place in places) or (
        bool(root) and users_home(real, os.path.realpath(root or "/"), places))


def _in_a_checkout(root: str) -> bool:
    """A temp root in a git checkout (the project itself, or a folder of it) other than a home that
    is a dotfiles repository: every new file of the project would be a scratch output."""
    top = paths.git_root_str(root)
    if top is None or inside(os.path.realpath(paths.home_str()), os.path.realpath(top)):
        return False
    _log_refused(root, f"it lies in the git checkout {top}")
    return True


def _log_refused(root: str, why: str) -> None:
    """Once per process and root: a sweep asks for the roots of every record."""
    from app.core.log import log

    if root not in _REFUSALS_LOGGED:
        _REFUSALS_LOGGED.add(root)
        log(f"gc: {root} is no GC root ({why}): nothing in it is removed as an output")


def shared_temp(root: str) -> bool:
    """A temp folder everyone writes in (`/tmp`, `/var/tmp`: sticky, writable by all): no project of
    anyone's, though a session may be started in it. A folder of one user's may be their project
    that they set TMPDIR to (`TMPDIR=$PWD`)."""
    import stat

    def look() -> bool:
        try:
            mode = os.stat(root).st_mode
        except OSError:
            return False
        return bool(mode & stat.S_ISVTX) and bool(mode & stat.S_IWOTH)

    return per_sweep(("shared", root), look)


def own_place(real: str, root: str | None = None) -> bool:
    """Whether the real path is, holds or lies in claudetto's own state, or is or holds Claude's temp
    folder, one of its project or session folders, or claudetto's log folder, or is the user's
    (`users_place`, in `root`): never an output."""
    if users_place(real, root):
        return True
    state, logs, claude = per_sweep(("own",), lambda: (
        os.path.realpath(paths.claudetto_home_str()),
        os.path.realpath(os.path.join(paths.claude_tmp_root_str(), "claudetto")),
        os.path.realpath(paths.claude_tmp_dir_str())))
    if inside(real, state) or inside(state, real) or f"/{ROOT_TRASH_NAME}/" in real + "/":
        return True  # its state; a trash made on a root's own file system (pending removals may go back)
    if inside(claude, real) or inside(logs, real) or inside(real, logs):
        return True
    return strictly_inside(real, claude) and real[len(claude) + 1:].count("/") < _CLAUDE_LEVELS


def inside_any(path: str, folders: set[str] | frozenset[str], *, itself: bool = True) -> bool:
    """`path` (or, `itself` False, only a folder above it) is one of `folders` or lies in one:
    `paths.inside` against every folder at once, one set lookup per level of `path`, so a sweep
    of 100,000 records compares each with the others in time linear in their number."""
    current = path if itself else os.path.dirname(path)
    while True:
        if current in folders:
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent
