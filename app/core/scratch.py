"""Declared scratch (CONTRACT "Definitions"): what a release of a session checkout deletes.

The paths the project's `.claude/claudetto.json` lists under `scratch` (relative to the
checkout; when the checkout's own file and the main checkout's declare different lists, what
both name), by default the regenerable folders at any depth; a list declared replaces the
default even when it names nothing. Never `.git` or `.tmp` or anything inside them, never a path that
holds a tracked file (deleting it would leave the checkout modified), never the checkout
itself. When unsure (an unreadable file, git cannot say), nothing is scratch.

Two more keep a candidate, as the cleanup and the GC keep a worktree (`dirty`):
- it is or lies inside another repository (a submodule, a nested clone: a folder holding a
  `.git`). Its files are that repository's: the checkout's `git ls-files` lists only the
  submodule's commit, so a `build/` the submodule tracks would look like output. The default
  scratch never looks inside one;
- it holds a file that looks like a secret (`unique_work.looks_secret`), except inside an
  installed package (the one list and the one exception of the worktree rules): a `.env`
  dropped in `node_modules` is the only copy of that token.
"""

from __future__ import annotations

import os

from app.core import git
from app.core.log import log, printable
from app.core.verdict import Reason

CONFIG = os.path.join(".claude", "claudetto.json")
#: Never scratch, never inside scratch, at any depth.
NEVER = frozenset({".git", ".tmp"})


def plain_relative(value: object) -> str | None:
    """A declared scratch path made plain (`a/./b/` -> `a/b`), or None when it is not one:
    not text, absolute, climbing out, the checkout itself, or in or above `.git`/`.tmp`."""
    if not isinstance(value, str) or value.startswith("/") or "\0" in value:
        return None
    parts = [p for p in value.split("/") if p not in ("", ".")]
    # `.TMP` and `.Git` are `.tmp` and `.git` on a case-insensitive file system (macOS)
    if not parts or ".." in parts or NEVER.intersection(p.casefold() for p in parts):
        return None
    return "/".join(parts)


def declared_scratch(checkout: str, project: str | None = None) -> list[str] | None:
    """The scratch `.claude/claudetto.json` declares (`_declared`); [] when no file declares
    one, None when a file cannot be read or is not what it should be."""
    return _declared(checkout, project)[0]


def _declared(checkout: str, project: str | None) -> tuple[list[str] | None, str | None, bool]:
    """(the declared scratch, the config file that decided it, whether the user wrote it).

    Both files are read. The project's is the user's; the checkout's alone may be a
    session's (a confused model writing `"scratch": ["drafts"]`) or a branch's (a commit on
    `origin/main` the user never merged, which the checkout was made from), so what only it
    names is judged like work. When both declare different lists, a path is scratch only
    when both name it: the user's list never grows by one the user did not write. A list
    declared, even one left empty once its unusable entries are dropped, replaces the
    default: `"scratch": []` says nothing there is scratch. No file declaring one gives
    ([], None, True): the default. Either file unusable gives None (logged): unsure."""
    own = _list_in(checkout)
    theirs = _list_in(project) if project and project != checkout else None
    here = os.path.join(checkout, CONFIG)
    if own is False or theirs is False:
        return None, here if own is False else os.path.join(str(project), CONFIG), False
    if not isinstance(own, tuple):
        return (theirs[0], os.path.join(str(project), CONFIG), True) if isinstance(theirs, tuple) else ([], None, True)
    if not isinstance(theirs, tuple) or theirs[1] == own[1]:
        return own[0], here, isinstance(theirs, tuple)
    both = _outermost([r for r in own[0] if _covered(r, theirs[0])] + [r for r in theirs[0] if _covered(r, own[0])])
    log(f"release: {here} differs from the project's list; scratch is what both name: {both}")
    return both, here, True


def _covered(rel: str, by: list[str]) -> bool:
    return any(rel == k or rel.startswith(k + "/") for k in by)


def _list_in(base: str | None) -> tuple[list[str], bytes] | bool | None:
    """(the plain entries, the file's bytes) of `base`'s `.claude/claudetto.json`; None when
    it has no such file or no `scratch` key, False when it cannot be read or is no list
    (logged). An entry that is no plain path inside the checkout is dropped (logged)."""
    from app.core import fastjson

    if not base:
        return None
    file = os.path.join(base, CONFIG)
    try:
        raw = _read_config(file)
        data = fastjson.loads(raw)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log(f"release: {file} cannot be read ({exc}); no scratch is deleted")
        return False
    if not isinstance(data, dict) or "scratch" not in data:
        return None
    if not isinstance(data["scratch"], list):
        log(f"release: {file} `scratch` is not a list of paths; no scratch is deleted")
        return False
    found = []
    for item in data["scratch"]:
        rel = plain_relative(item)
        if rel is None:
            log(f"release: {file} scratch entry {item!r} is not a path inside the checkout "
                "outside .git and .tmp; skipped")
        else:
            found.append(rel)
    return _outermost(found), raw


def _read_config(file: str) -> bytes:
    """The config file's bytes, as Claude's settings are read (a FIFO in its place is never
    waited on: the release, the dashboard and `claudetto worktrees` read it)."""
    from app.core.settings import read_config_bytes

    return read_config_bytes(file, 1 << 20)


def _outermost(rels: list[str]) -> list[str]:
    """The paths not inside another of them, sorted."""
    kept: list[str] = []
    for rel in sorted(set(rels)):
        if not any(rel.startswith(k + "/") for k in kept):
            kept.append(rel)
    return kept


def regenerable_folders(checkout: str) -> list[str]:
    """The regenerable folders at any depth of `checkout` (relative, sorted), never looking
    inside `.git`, `.tmp`, a regenerable folder, `.claude/worktrees`, a symlink, another
    file system or another repository (a folder holding a `.git`: neither it nor anything in
    it is this checkout's scratch). A package of source with an output folder's name
    (`src/mypkg/build/__init__.py`: `untracked_output.new_source`) is no tool's output."""
    from app.core.mounts import mount_points
    from app.core.other_vcs import holds_mark
    from app.core.unique_work import REGENERABLE
    from app.core.untracked_output import new_source

    try:
        dev = os.lstat(checkout).st_dev
    except OSError:
        return []
    points, real_top = mount_points(), os.path.realpath(checkout)
    found: list[str] = []
    pending = [""]
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(checkout, rel) if rel else checkout) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.name in NEVER or os.path.join(real_top, child) in points:
                continue  # a mount point is never looked at: a remote one may never answer
            try:
                if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_dev != dev:
                    continue
            except OSError:
                continue
            if os.path.lexists(os.path.join(entry.path, ".git")) or holds_mark(entry.path):
                continue  # a submodule, a nested clone (git's or another system's): its own files
            if entry.name in REGENERABLE and not new_source(checkout, child.split("/")):
                found.append(child)
            elif child != ".claude/worktrees":  # a package of source named like output: looked into
                pending.append(child)
    return sorted(found)


def holding_tracked(checkout: str, rels: list[str], *, untracked: bool = False) -> set[str] | None:
    """Which of `rels` hold a file git tracks in `checkout` (`untracked`: a file git shows
    as untracked, neither tracked nor ignored); None when git cannot say."""
    held: set[str] = set()
    wanted = set(rels)
    ask = ["ls-files", "-z", "--others", "--exclude-standard"] if untracked else ["ls-files", "-z"]
    for start in range(0, len(rels), 200):
        # pathspecs taken literally: a folder named `[a]` is that folder, not a pattern
        done = git.run([*ask, "--", *rels[start:start + 200]], cwd=checkout,
                       env={"GIT_LITERAL_PATHSPECS": "1"})
        if not done.ok:
            log(f"release: git cannot list the tracked files of {checkout}: {done.error[:200]}")
            return None
        for name in filter(None, done.text.split("\0")):
            parts = name.split("/")
            for depth in range(1, len(parts) + 1):
                prefix = "/".join(parts[:depth])
                if prefix in wanted:
                    held.add(prefix)
                    break
    return held


def in_other_repository(checkout: str, rel: str) -> bool:
    """Whether `rel` is, or lies inside, a folder below `checkout` holding a `.git` (a
    submodule, a nested clone): its files belong to that repository, never to the scratch."""
    parts = rel.split("/")
    return any(os.path.lexists(os.path.join(checkout, *parts[:depth], ".git")) for depth in range(1, len(parts) + 1))


def tmp_inside(folder: str, rel: str = "") -> str | None:
    """The first `.tmp` at any depth inside `folder`, not following links, as a path below
    it, or the first working copy of another version control system (app/core/other_vcs.py;
    `rel`: the folder's path in the checkout); None when there is none. A folder it cannot read is named: unsure, keep. `.tmp/`
    survives every release, also one a session made inside a declared `out/`. (A `.git`
    inside is another repository, judged by its own work at removal: `unique_work`.)"""
    import stat

    from app.core.other_vcs import mark_among

    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return None
    except OSError:
        return "."
    failed: list[OSError] = []
    for top, dirs, files in os.walk(folder, onerror=failed.append):
        if failed:
            break
        if ".tmp" in dirs or ".tmp" in files:
            return os.path.relpath(os.path.join(top, ".tmp"), folder)
        below = [] if top == folder else os.path.relpath(top, folder).split(os.sep)
        mark = mark_among(dirs + files, [p for p in rel.split("/") if p] + below)
        if mark is not None:
            return os.path.relpath(os.path.join(top, mark), folder)
    return os.path.relpath(failed[0].filename or folder, folder) if failed else None


def _linked_tmp_inside(checkout: str, rel: str) -> str | None:
    """`.tmp` when the checkout's `.tmp` is a link to `rel` or into it (`.tmp` ->
    `node_modules/.cache/reports`): the reports live there, and `.tmp/` survives."""
    tmp = os.path.join(checkout, ".tmp")
    if not os.path.islink(tmp):
        return None
    from app.core.paths import inside

    return ".tmp" if inside(os.path.realpath(tmp), os.path.realpath(os.path.join(checkout, rel))) else None


def secret_inside(folder: str, rel: str) -> str | None:
    """The first file in `folder` (the checkout's `rel`, or where it was moved for its
    removal) that looks like a secret, relative to the checkout (app/core/secret_files.py
    `first_secret`: outside installed packages and nested repositories, whose own rules judge
    them; a folder it cannot read is named: unsure, keep); None when there is none."""
    from app.core.secret_files import first_secret

    return first_secret(folder, rel.split("/"))


def scratch_plan(checkout: str, project: str | None = None) -> tuple[list[str], list[tuple[str, Reason]]]:
    """(what a release of `checkout` deletes, what it keeps and why), paths relative.
    Keep reasons: `bad_config` (`.claude/claudetto.json` unusable), `symlink` (reached
    through a link), `tracked` (holds a file git tracks), `git` (git could not say, or does
    not answer for the checkout itself), `dirty` (is or lies inside another repository, holds
    a `.tmp` or a secret-looking file, or holds new work a list the session wrote names)."""
    declared, config, users = _declared(checkout, project)
    if declared is None:
        # the project's file is named by its absolute path: the verdict joins it to nothing
        return [], [(CONFIG if config == os.path.join(checkout, CONFIG) else str(config), "bad_config")]
    candidates = declared if config is not None else regenerable_folders(checkout)
    mounted = _mounted(checkout, candidates)
    candidates = [rel for rel in candidates if rel not in mounted and os.path.lexists(os.path.join(checkout, rel))]
    kept: list[tuple[str, Reason]] = [(rel, "in_use") for rel in mounted]
    kept += [(rel, "symlink") for rel in candidates if _through_link(checkout, rel)]
    candidates = [rel for rel in candidates if (rel, "symlink") not in kept]
    if not candidates:
        return [], kept
    # a path the session's own list names holding files git shows as new: work, not output
    held = _held(checkout, project, candidates, not users)
    if held is None:
        return [], kept + [(rel, "git") for rel in candidates]
    plan: list[str] = []
    for rel in candidates:
        reason = _keeps(checkout, rel, *held)
        if reason is None:
            plan.append(rel)
        else:
            kept.append((rel, reason))
    return plan, kept


def _mounted(checkout: str, rels: list[str]) -> list[str]:
    """Which of `rels` are, hold or lie in a mount point, told from the mount table alone:
    looking at them (a stat, a walk) would wait for ever on a remote mount that stopped
    answering, and no removal crosses a mount anyway (`removal`)."""
    from app.core.mounts import mount_points
    from app.core.paths import inside, strictly_inside

    points, top = mount_points(), os.path.realpath(checkout)
    found = [rel for rel in rels for full in [os.path.join(top, rel)]
             if any(inside(point, full) or inside(full, point) for point in points if strictly_inside(point, top))]
    for rel in found:
        log(f"release: {checkout}/{rel} kept: a mount point is or lies in it")
    return found


def _held(checkout: str, project: str | None, rels: list[str], judged: bool) -> tuple[set[str], set[str]] | None:
    """(which of `rels` hold tracked files, which hold untracked ones when `judged`); None
    when git cannot say, or says it for another repository."""
    if not _own_top(checkout, project):
        return None
    tracked = holding_tracked(checkout, rels)
    untracked = holding_tracked(checkout, rels, untracked=True) if judged else set()
    return None if tracked is None or untracked is None else (tracked, untracked)


def _own_top(checkout: str, project: str | None) -> bool:
    """Whether git, asked in `checkout`, answers for the checkout itself, as a worktree of
    `project`'s repository. With its `.git` gone (a model's `rm .git`) it answers for the
    project around it, after a `git init` there for a new empty repository: neither tracks
    the branch's files, and every one would pass for untracked output."""
    ask = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"]
    done = git.run(ask, cwd=checkout)
    lines = done.text.split("\n") if done.ok else []
    if len(lines) >= 2 and os.path.realpath(lines[0]) == os.path.realpath(checkout):
        if project is None:
            return True
        theirs = git.run(ask[:2] + ask[3:], cwd=project)
        if theirs.ok and os.path.realpath(theirs.text.strip()) == os.path.realpath(lines[1]):
            return True
    log(f"release: git does not answer for {checkout} as a worktree of {project} "
        f"({' '.join(lines).strip() or done.error[:200]}); no scratch is deleted")
    return False


def _through_link(checkout: str, rel: str) -> bool:
    """Whether a folder on the way to `rel` below `checkout` is a symlink or not a folder:
    `out/logs` with `out` -> `.tmp` (or -> `src`) names what lies there, which neither git
    nor the `.tmp` rule would see under the name declared."""
    parts = rel.split("/")[:-1]
    try:
        return any(os.path.islink(os.path.join(checkout, *parts[:depth])) or
                   not os.path.isdir(os.path.join(checkout, *parts[:depth])) for depth in range(1, len(parts) + 1))
    except (OSError, ValueError):
        return True


def _keeps(checkout: str, rel: str, tracked: set[str], untracked: set[str]) -> Reason | None:
    if rel in tracked:
        return "tracked"
    if rel in untracked:
        # git shows it as new work to add (drafts or notes a confused model declared
        # scratch in the checkout's own config): work not yet committed, never output
        log(f"release: {checkout}/{rel} kept: it holds files git shows as untracked (not ignored)")
        return "dirty"
    if in_other_repository(checkout, rel):
        log(f"release: {checkout}/{rel} kept: it is or lies inside another repository")
        return "dirty"
    held = tmp_inside(os.path.join(checkout, rel), rel) or _linked_tmp_inside(checkout, rel)
    if held is not None:
        log(f"release: {checkout}/{rel} kept: it holds {printable(held)}, never scratch")
        return "dirty"
    found = secret_inside(os.path.join(checkout, rel), rel)
    if found is not None:
        log(f"release: {checkout}/{rel} kept: {printable(found)} looks like a secret")
        return "dirty"
    return None
