"""THE rule for git work that exists nowhere else: may a folder go without losing any?

The output GC, the session-start cleanup and worktree removals delete whole folders: temp
folders, clones, copies, worktrees. Any of them may hold a git repository whose newest work
is only there. Before a folder goes, `unique_work` finds every repository inside it (the
folder itself included) and keeps the folder with the first reason found:

- `dirty`: a checkout holds a changed, staged or untracked file, a git-ignored file outside
  the regenerable folders, a secret-looking file anywhere (`looks_secret`), or a file git
  status cannot see (skip-worktree, assume-unchanged, anything in the folder of a submodule
  that is not checked out: `secret_files.unseen_changes`); an operation waits half done (a
  rebase, merge, cherry-pick, bisect); or git cannot read it (when unsure, keep);
- `unmerged`: a repository has a commit that no remote-tracking branch holds (HEAD, any local
  branch, stash or note, a tag made here, a per-worktree ref, ORIG_HEAD, a commit a reset
  dropped that a reflog still names, a commit left behind on a detached HEAD), or a linked worktree of it lives outside the folder (that
  worktree needs its objects), or it is the git dir of a work tree elsewhere, or a known
  repository borrows its objects (app/core/unique_refs.py); a linked worktree has a commit on
  no other branch and no remote, or one of its submodules' git dirs (in its own git dir) does;
- `not_removed`: a linked worktree is locked (`git worktree lock`: someone said keep it).

A working copy of another version control system inside (`hg clone`, `jj`, `svn checkout`:
app/core/other_vcs.py) is `dirty` too: git sees none of its work.

Here: where each repository is (`locate`, a folder moved aside judged where it now is) and
the judgement of a folder; the questions asked of one repository are in
app/core/repository_rules.py.

Git runs through app/core/git.py with an explicit `--git-dir` (and `--work-tree`): a folder
without its own `.git` can never make git climb to a parent repository, and a folder moved
aside before its removal is judged where it now is.
"""

from __future__ import annotations

import os
import stat

from app.core import other_vcs
from app.core import unique_refs as refs
from app.core.git import GitFailed as GitFailed
from app.core.hung_mounts import reachable, real_paths
from app.core.paths import inside
from app.core.repository_rules import REGENERABLE as REGENERABLE
from app.core.repository_rules import Repository as Repository
from app.core.repository_rules import checkout_dirty as checkout_dirty
from app.core.repository_rules import ignored_ok as ignored_ok
from app.core.repository_rules import locked as locked
from app.core.repository_rules import read_pointer
from app.core.repository_rules import repo_unmerged as repo_unmerged
from app.core.repository_rules import unmerged_commit as unmerged_commit
from app.core.repository_rules import worktree_unmerged as worktree_unmerged
from app.core.secret_files import looks_secret as looks_secret  # importable from here, as before
from app.core.secret_files import unseen_changes as unseen_changes

# Hook code may import this module: no dataclasses, typing or collections at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from app.core.verdict import Reason

# --- where things are: a folder judged where it now is, or where it was before a move --------


class _Places:
    """The folder being judged, now and (when it was moved aside) before: a path inside one
    is the same place as its twin inside the other."""

    def __init__(self, now: str, before: str | None) -> None:
        self.now = now
        self.before = before if before and before != now else None

    def inside(self, path: str) -> bool:
        real = real_paths([path])[0] if path else path  # never looked for on a mount that does not answer
        return any(inside(p, place) for p in {path, real} for place in self._spellings())

    def _spellings(self) -> list[str]:
        return [self.now] if self.before is None else [self.now, self.before]

    def to_now(self, path: str) -> str:
        if self.before is not None and inside(path, self.before):
            return self.now + path[len(self.before):]
        return path

    def to_before(self, path: str) -> str:
        if self.before is not None and inside(path, self.now):
            return self.before + path[len(self.now):]
        return path


def locate(folder: str, places: _Places | None = None) -> Repository | None:
    """The repository `folder` holds (its `.git` entry, or itself when bare); None when it
    holds none. Raises GitFailed when it has a `.git` git cannot use (keep when unsure)."""
    places = places or _Places(folder, None)
    dot_git = os.path.join(folder, ".git")
    try:
        st = os.lstat(dot_git)
    except FileNotFoundError:
        return _bare(folder)
    except OSError as exc:
        raise GitFailed(f"{dot_git}: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        return Repository(folder, dot_git, folder, "repo")
    if not stat.S_ISREG(st.st_mode):
        raise GitFailed(f"{dot_git} is neither a folder nor a file")  # a symlink: never followed
    git_dir = _gitdir_of(dot_git, places)
    if not reachable(git_dir):  # a look there would wait for ever
        raise GitFailed(f"{git_dir} lies on a remote mount that does not answer")
    if os.path.isfile(os.path.join(git_dir, "commondir")):
        return Repository(folder, git_dir, folder, "worktree")
    if os.path.isdir(os.path.join(git_dir, "objects")):
        return Repository(folder, git_dir, folder, "repo")
    raise GitFailed(f"{dot_git} names no git dir ({git_dir})")


def _bare(folder: str) -> Repository | None:
    if os.path.basename(folder) == ".git":
        return None
    marks = ("HEAD", "objects", "refs")
    if all(os.path.lexists(os.path.join(folder, m)) and not os.path.islink(os.path.join(folder, m)) for m in marks):
        return Repository(folder, folder, None, "bare")
    return None



def _resolve(pointer: str, holder: str, places: _Places) -> str:
    """A path read from a pointer file in `holder`, where it now is. A relative one was
    written relative to where the holder was before a move; what it names inside the moved
    folder moved with it."""
    if not os.path.isabs(pointer):
        pointer = os.path.normpath(os.path.join(places.to_before(holder), pointer))
    return places.to_now(pointer)


def _gitdir_of(dot_git: str, places: _Places) -> str:
    return _resolve(read_pointer(dot_git, "gitdir:"), os.path.dirname(dot_git), places)


def worktrees_elsewhere(repo: Repository, places: _Places) -> bool:
    """Whether a linked worktree of this repository lives outside the folder: removing the
    repository would take the objects its commits are made of. A worktree whose `.git` is
    gone no longer needs them, unless it is locked (it may be on a drive not mounted now)."""
    admin = os.path.join(repo.git_dir, "worktrees")
    try:
        ids = os.listdir(admin)
    except OSError:
        return False
    for name in ids:
        entry = os.path.join(admin, name)
        try:
            dot_git = _resolve(read_pointer(os.path.join(entry, "gitdir")), entry, places)
        except GitFailed:
            if os.path.isdir(entry) and not os.path.islink(entry):
                return True  # an entry git cannot read: unsure, keep
            continue
        if places.inside(os.path.dirname(dot_git)):
            continue  # inside the folder: judged as a worktree of its own
        if not reachable(dot_git) or os.path.lexists(dot_git) or os.path.lexists(os.path.join(entry, "locked")):
            return True  # one on a remote mount that does not answer: unsure, never looked at
    return False


# --- the judgement -------------------------------------------------------------------------------


def judge(repo: Repository, places: _Places) -> Reason | None:
    """The first reason one repository keeps its folder, or None."""
    if repo.kind == "bare":
        try:
            served = _as_served(repo, places)
        except GitFailed:
            return "unmerged"
        if served is None:
            return "unmerged"
        repo = served
    try:
        if checkout_dirty(repo) or _unseen(repo):
            return "dirty"
    except GitFailed:
        return "dirty"
    try:
        # a worktree's submodule git dirs are judged on their own (`_judging_order`)
        unmerged = worktree_unmerged(repo, modules=False) if repo.kind == "worktree" else repo_unmerged(repo)
    except GitFailed:
        unmerged = True
    if unmerged or (repo.kind != "worktree" and worktrees_elsewhere(repo, places)):
        return "unmerged"
    if locked(repo):
        return "not_removed"
    return None


def _unseen(repo: Repository) -> bool:
    """Whether the checkout holds work git status does not show (`unseen_changes`), logged
    with what it is: the user's own `git status` says clean."""
    found = None if repo.work_tree is None else unseen_changes(repo.git_dir, repo.work_tree)
    if found is not None:
        from app.core.log import log

        log(f"unique work: {repo.work_tree} is dirty: {found}")
    return found is not None


def _as_served(repo: Repository, places: _Places) -> Repository | None:
    """A bare-looking git dir as it must be judged: itself when it serves no work tree; with
    its work tree as a checkout when that lies inside the folder (only its commits when the
    work tree is empty or gone: no file to lose); None when the work tree lives elsewhere or
    nobody knows where (a checkout found inside was judged before)."""
    serves, tree = refs.serves_work_tree(repo.git_dir)
    if not serves:
        return repo
    if tree is None:
        # a submodule's git dir (its `core.worktree` unset by `git submodule deinit`): its
        # work tree is inside the superproject, which holds the git dir
        superproject = repo.git_dir.partition("/.git/modules/")[0]
        return repo if superproject != repo.git_dir and places.inside(superproject) else None
    where = _resolve(tree, repo.git_dir, places)
    if not places.inside(where):
        return None
    try:
        files = os.listdir(where)
    except OSError:
        files = []
    return Repository(repo.folder, repo.git_dir, where, "repo") if files else repo


def unique_work(path: str | os.PathLike[str], repos: Iterable[str] | None = None, *,
                original: str | os.PathLike[str] | None = None) -> Reason | None:
    """Whether removing the folder `path` would lose git work: `dirty`, `unmerged` or
    `not_removed` (see the module rules), else None. A symlink, a file or a missing path
    holds no repository: None.

    `repos`: the repositories inside as a complete scan found them (`TreeSize.repos`), so
    the tree is not walked again; None walks it. `original`: where the folder was before it
    was moved aside for its removal; `repos` may be spelled in either place, and a linked
    worktree counts as outside only when it is outside both."""
    text = os.fspath(path)
    if os.path.islink(text) or not os.path.isdir(text):
        return None
    now = os.path.realpath(text)
    places = _Places(now, os.path.realpath(os.fspath(original)) if original is not None else None)
    folders = None if repos is None else {places.to_now(os.fspath(r)) for r in repos}
    if folders is None or not all(inside(f, now) for f in folders):
        from app.core import scanner

        folders = set(scanner.scan(now).repos)  # none given, or spelled for another place: walk
    if _mount_in(folders):
        return "in_use"  # its removal is refused anyway; git would walk into it, and wait on a hung one
    located = _locate_all(folders, places)
    if not isinstance(located, list):
        return located
    judged: set[str] = set()
    for repo in _judging_order(located):
        key = os.path.realpath(repo.git_dir)
        if key in judged:
            continue
        judged.add(key)
        reason = judge(repo, places)
        if reason is not None:
            return reason
    if any(r.kind != "worktree" for r in located) and refs.borrowed(places.inside):
        return "unmerged"
    return None


def _mount_in(folders: set[str]) -> bool:
    """Whether a mount point lies in one of the repositories `folders` (an `sshfs` in a clone)."""
    from app.core.mounts import mount_points

    points = mount_points() if folders else frozenset()
    return any(inside(point, os.path.realpath(folder)) for folder in folders for point in points)


def _locate_all(folders: set[str], places: _Places) -> list[Repository] | Reason:
    """The repository of each folder a walk noted; `dirty` at the first that cannot be judged:
    a `.git` git cannot use, or another system's working copy (git sees none of its work)."""
    located: list[Repository] = []
    for folder in sorted(folders):
        if os.path.islink(folder):
            continue
        if other_vcs.working_copy_in(folder, places.to_before(folder), places.before or places.now):
            return "dirty"
        try:
            repo = locate(folder, places)
        except GitFailed:
            return "dirty"
        if repo is not None:
            located.append(repo)
    return located


def _judging_order(located: list[Repository]) -> list[Repository]:
    """Checkouts first: a submodule's git dir (inside its parent's `.git/modules`) looks like
    a bare repository too, and is judged once, through its checkout. A linked worktree's
    submodule git dirs (in its own git dir, outside the folder) last: one not checked out
    is found only there, and judged by its commits."""
    modules = [Repository(d, d, None, "repo") for r in located if r.kind == "worktree" for d in refs.module_dirs(r.git_dir)]
    return [*sorted(located, key=lambda r: (r.kind == "bare", r.folder)), *modules]
