"""The session-start cleanup's last look at a temp folder, at the moment it is removed.

The cleanup judges every folder of `claude-<uid>` first and removes them one after another,
up to SWEEP_TIMEOUT_MS later; the dashboard removes what it judged minutes before. Whatever
happened to a folder meanwhile is seen here, where `removal.remove` has moved it aside
(`where`), before its journal line and before anything of it goes:

- `young`: its own modification time moved on since it was judged. Something was made,
  copied or moved straight into it (`cp report.pdf <session folder>/`): by the age rule it
  is now young, and deleting it would take what was just put there.
- `live`, `in_use`: the sessions read again, every process looked at again.
- `dirty`, `unmerged`, `not_removed`: the repositories in it judged again, found by a walk of
  the folder where it now is (names and types only: `repositories_in`); `dirty` too when a
  folder in it cannot be read (`chmod 000`, for a user who is not root): unjudged, it would
  go with the purge, which opens such folders up. Not the ones its
  measure found: a repository moved in after that walk (`mv ~/proj <session folder>/tasks/`,
  a clone made there) is one it never saw, and the folder in the trash can take nothing
  more by its old name.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable

from app.core import sessions
from app.core.fd_removal import DIR_FLAGS
from app.core.log import log
from app.core.other_vcs import MARKS
from app.core.verdict import Reason, Verdict


def removal_guard(verdict: Verdict, *, current_session: str | None = None,
                  current_cwd: str | None = None) -> Callable[[str], Reason | None]:
    """The cleanup's rules once more for the folder or gate log of `verdict`, now at `where`."""
    from app.core.unique_work import unique_work

    def still_unused(where: str) -> Reason | None:
        if changed_since_judged(verdict, where):
            return "young"
        live = sessions.liveness(current_session, current_cwd)
        if verdict.session is not None and live.has(verdict.session):
            return "live"
        if live.unsure and verdict.rule != "probe":
            return "in_use"
        if live.process_inside(os.path.realpath(verdict.path), os.path.realpath(where)):
            return "in_use"
        if os.path.islink(where) or not os.path.isdir(where):
            return None  # a gate log, or gone meanwhile (the removal finds it missing)
        closed: list[str] = []
        repos = repositories_in(where, closed)
        if closed:
            log(f"clean: {verdict.path} holds {closed[0]!r}, another user's, which this user cannot empty; kept whole")
            return "not_removed"
        if repos is None:
            repos = measured_repositories(where)
        if repos is None:
            return "dirty"  # a folder in it cannot be read: what it holds cannot be judged
        return unique_work(where, repos, original=verdict.path)

    return still_unused


def measured_repositories(where: str) -> tuple[str, ...] | None:
    """The repositories the measuring walk finds (it reads folders past PATH_MAX too); None
    when it could not read everything. A folder closed to this user (`chmod 000`, the user
    not root) hides what it holds, a repository with the only copy of a commit included, and
    the purge, which opens such folders of the user's own, would delete it unjudged."""
    from app.core.scanner import scan

    tree = scan(where)
    return None if tree.errors or tree.partial else tree.repos


def repositories_in(top: str, closed: list[str] | None = None) -> tuple[str, ...] | None:
    """The folders in the tree `top` (itself included) that hold a `.git` entry or another
    system's working copy marker, or are a bare repository (`HEAD` beside `objects/` and
    `refs/`), as the measuring walk notes them, found
    by the names and types of the entries alone: a fifth of that walk's time, which stats
    every file. None when a folder cannot be listed (unreadable, or named by a path too long
    to open whose parent is not the folder listed just before): the caller then walks it the
    measuring way, which reads those too. A folder past PATH_MAX is opened from its parent,
    still open (a chain thousands of folders deep, as a recursive copy into itself leaves,
    took a second walk from the top for each). Symlinks are not followed; a mount inside
    never reaches here (the removal keeps such a folder first).

    `closed` (for a user who is not root) gets each folder of another user's, not empty, that
    this user may not write (`docker run -v "$PWD":/app node npm install` leaves root's
    `node_modules/`): its entries cannot go, and the purge would take everything around them,
    leaving the folder half deleted in the trash for good."""
    found: list[str] = []
    stack = [top]
    held = ("", -1)  # the folder listed last, still open: most often the parent of the next
    try:
        while stack:
            folder = stack.pop()
            try:
                fd = _open_folder(folder, held)
            except OSError:
                return None
            if held[1] >= 0:
                os.close(held[1])
            held = (folder, fd)
            try:
                with os.scandir(fd) as listing:
                    entries = list(listing)
                folders = {entry.name for entry in entries if entry.is_dir(follow_symlinks=False)}
            except OSError:
                return None
            names = {entry.name for entry in entries}
            if closed is not None and entries and _closed_to_me(fd, entries):
                closed.append(folder)
            if ".git" in names or not MARKS.isdisjoint(names) or (
                    "HEAD" in names and "HEAD" not in folders and {"objects", "refs"} <= folders
                    and os.path.basename(folder) != ".git"):
                found.append(folder)
            stack.extend(f"{folder}/{name}" for name in folders)
    finally:
        if held[1] >= 0:
            os.close(held[1])
    return tuple(sorted(found))


def closed_inside(top: str) -> str | None:
    """The first folder in the tree `top` of another user's, not empty, that this user (not
    root) may not write in (`repositories_in`'s `closed`): no removal can take it, and every
    removal keeps `top` whole rather than purge what lies around it. None for root, unwalked."""
    if os.geteuid() == 0:
        return None
    closed: list[str] = []
    try:
        repositories_in(top, closed)
    except OSError:
        return top  # unsure: keep
    return closed[0] if closed else None


def _closed_to_me(fd: int, entries: list[os.DirEntry[str]]) -> bool:
    """Whether the folder `fd` is another user's that this one (not root) may not write in, or
    may write in but not empty: sticky (mode 1777, as a `/tmp`) and holding an entry of
    another user's, which only its owner may remove."""
    uid = os.geteuid()
    if uid == 0 or (st := os.fstat(fd)).st_uid == uid:
        return False
    if not os.access(".", os.W_OK | os.X_OK, dir_fd=fd, effective_ids=os.access in os.supports_effective_ids):
        return True
    try:
        return bool(st.st_mode & stat.S_ISVTX) and any(e.stat(follow_symlinks=False).st_uid != uid for e in entries)
    except OSError:
        return True  # an entry that cannot be looked at: unsure, keep


def _open_folder(folder: str, held: tuple[str, int]) -> int:
    """`folder` opened (never through a symlink); from `held` when its path is too long."""
    try:
        return os.open(folder, DIR_FLAGS)
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG or held[1] < 0 or os.path.dirname(folder) != held[0]:
            raise
    return os.open(os.path.basename(folder), DIR_FLAGS, dir_fd=held[1])


def changed_since_judged(verdict: Verdict, where: str) -> bool:
    """Whether the path (now at `where`: a rename keeps its mtime) was modified after it was
    judged old: its mtime is another (an earlier one too: the clock set back meanwhile).
    Gone or unreadable is no change: the removal itself finds it missing."""
    if verdict.mtime is None:
        return False
    try:
        return os.lstat(where).st_mtime != verdict.mtime
    except OSError:
        return False
