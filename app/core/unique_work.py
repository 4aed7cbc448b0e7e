"""THE rule for git work that exists nowhere else: may a folder go without losing any?

The output GC, the session-start cleanup and worktree removals delete whole folders: temp
folders, clones, copies, worktrees. Any of them may hold a git repository whose newest work
is only there. Before a folder goes, `unique_work` finds every repository inside it (the
folder itself included) and keeps the folder with the first reason found:

- `dirty`: a checkout holds a changed, staged or untracked file, a git-ignored file outside
  the regenerable folders, a secret-looking file anywhere (`looks_secret`), or a file git
  status cannot see (skip-worktree, assume-unchanged); an operation waits half done (a
  rebase, merge, cherry-pick, bisect); or git cannot read it (when unsure, keep);
- `unmerged`: a repository has a commit that no remote-tracking branch holds (HEAD, any local
  branch, stash or note, a tag made here, a per-worktree ref, ORIG_HEAD, a commit left
  behind on a detached HEAD), or a linked worktree of it lives outside the folder (that
  worktree needs its objects), or it is the git dir of a work tree elsewhere, or a known
  repository borrows its objects (app/core/unique_refs.py); a linked worktree has a commit on
  no other branch and no remote;
- `not_removed`: a linked worktree is locked (`git worktree lock`: someone said keep it).

Git runs through app/core/git.py with an explicit `--git-dir` (and `--work-tree`): a folder
without its own `.git` can never make git climb to a parent repository, and a folder moved
aside before its removal is judged where it now is.
"""

from __future__ import annotations

import os
import stat

from app.core import unique_refs as refs
from app.core.git import GitFailed, status_entries
from app.core.git import output as git
from app.core.paths import inside
from app.core.secret_files import SECRET_PATTERNS
from app.core.secret_files import installed as _installed
from app.core.secret_files import looks_secret as looks_secret  # importable from here, as before

# Hook code may import this module: no dataclasses, typing or collections at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from app.core.verdict import Reason

REGENERABLE = frozenset({"node_modules", ".venv", "__pycache__", "dist", "build", "target", ".next", "coverage"})

# --- where things are: a folder judged where it now is, or where it was before a move --------


class _Places:
    """The folder being judged, now and (when it was moved aside) before: a path inside one
    is the same place as its twin inside the other."""

    def __init__(self, now: str, before: str | None) -> None:
        self.now = now
        self.before = before if before and before != now else None

    def inside(self, path: str) -> bool:
        real = os.path.realpath(path)
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


class Repository:
    """One repository found in a folder: `kind` is `repo` (its own `.git` folder, or a
    `.git` file naming a full git dir: a submodule), `worktree` (a linked worktree) or
    `bare`; `work_tree` is None for a bare one."""

    __slots__ = ("folder", "git_dir", "work_tree", "kind")

    def __init__(self, folder: str, git_dir: str, work_tree: str | None, kind: str) -> None:
        self.folder = folder
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.kind = kind


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


def _read_pointer(path: str, prefix: str = "") -> str:
    """The one path a git pointer file holds (`gitdir: X` in a `.git` file, a plain path in
    `worktrees/<id>/gitdir`)."""
    try:
        with open(path, "rb") as fh:
            text = os.fsdecode(fh.read(65536)).strip()
    except OSError as exc:
        raise GitFailed(f"{path}: {exc.strerror}") from None
    if not text.startswith(prefix) or not text[len(prefix):].strip():
        raise GitFailed(f"{path} is not a git pointer")
    return text[len(prefix):].strip()


def _resolve(pointer: str, holder: str, places: _Places) -> str:
    """A path read from a pointer file in `holder`, where it now is. A relative one was
    written relative to where the holder was before a move; what it names inside the moved
    folder moved with it."""
    if not os.path.isabs(pointer):
        pointer = os.path.normpath(os.path.join(places.to_before(holder), pointer))
    return places.to_now(pointer)


def _gitdir_of(dot_git: str, places: _Places) -> str:
    return _resolve(_read_pointer(dot_git, "gitdir:"), os.path.dirname(dot_git), places)


# --- the rules: one function each --------------------------------------------------------------


def checkout_dirty(repo: Repository) -> bool:
    """A changed, staged or untracked file; an ignored one outside the regenerable folders; a
    secret-looking ignored file anywhere; or a present file git status does not look at.
    Raises GitFailed."""
    if repo.work_tree is None:
        return False
    status = _status(repo)
    # git status lists every ignored file (or a folder holding them): none, no secret either
    return (status == "dirty" or (status == "ignored" and _secret_ignored(repo)) or _hidden_from_status(repo)
            or refs.operation_in_progress(repo.git_dir))


def _status(repo: Repository) -> str:
    """`dirty`; else `ignored` when git status lists ignored entries (all regenerable); else ""."""
    assert repo.work_tree is not None
    # A submodule's own files are judged with the submodule (a repository the walk found); here
    # only its recorded commit counts (once moved aside, git could not look inside it anyway).
    out = git(["status", "--porcelain=v1", "-z", "--ignored=traditional", "--untracked-files=normal",
               "--ignore-submodules=dirty"], git_dir=repo.git_dir, work_tree=repo.work_tree)
    ignored = ""
    for code, entry in status_entries(out):
        if code != "!!" or not ignored_ok(repo.work_tree, entry):
            return "dirty"
        ignored = "ignored"
    return ignored


def ignored_ok(work_tree: str, entry: str) -> bool:
    """Whether one git-ignored entry (`!!` of git status) lies inside a regenerable folder.

    A wholly ignored folder that is not itself regenerable is walked: it is fine only when
    every file in it lies inside a regenerable folder. (Secret-looking files inside
    regenerable folders are found by `_secret_ignored`.)"""
    parts = [p for p in entry.rstrip("/").split("/") if p]
    if not parts:
        return False
    if any(p in REGENERABLE for p in parts[:-1]):
        return True
    full = os.path.join(work_tree, *parts)
    if parts[-1] in REGENERABLE and (os.path.isdir(full) or os.path.islink(full)):
        return True
    if os.path.islink(full) or not os.path.isdir(full):
        return False
    for top, dirs, files in os.walk(full):
        if files:
            return False
        dirs[:] = [d for d in dirs if d not in REGENERABLE]
        # os.walk lists symlinks to folders among dirs but never enters them: content.
        if any(os.path.islink(os.path.join(top, d)) for d in dirs):
            return False
    return True


def _secret_ignored(repo: Repository) -> bool:
    """A git-ignored file that looks like a secret, wherever it lies (inside regenerable
    folders too), except inside installed packages. Git walks the ignored folders itself."""
    assert repo.work_tree is not None
    specs = [f":(glob,icase)**/{pattern}" for pattern in SECRET_PATTERNS]
    out = git(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", *specs],
              git_dir=repo.git_dir, work_tree=repo.work_tree)
    # an entry ending in `/` is a repository nested inside: git does not look into it, the
    # walk found it and it is judged on its own
    return any(name and not name.endswith("/") and not _installed(name.split("/")) for name in out.split("\0"))


def _hidden_from_status(repo: Repository) -> bool:
    """Whether a tracked file marked skip-worktree or assume-unchanged is present: git
    status does not look at it, so an edit there would be invisible and lost. (A sparse
    checkout marks the files it leaves out the same way; those are not on disk.)"""
    assert repo.work_tree is not None
    listing = git(["ls-files", "-v", "-z"], git_dir=repo.git_dir, work_tree=repo.work_tree)
    hidden = (item[2:] for item in listing.split("\0") if item[:1] == "S" or item[:1].islower())
    return any(os.path.lexists(os.path.join(repo.work_tree, name)) for name in hidden)


def repo_unmerged(repo: Repository) -> bool:
    """A commit of HEAD, of any ref but a tag (a branch, a stash, notes, replace refs,
    filter-branch backups), of ORIG_HEAD or left behind on a detached HEAD that no
    remote-tracking branch holds; tags are judged apart. A bare repository has no
    remote-tracking branches: any commit counts (it may be the folder others push to, the
    only copy). Raises GitFailed."""
    out = git(["rev-list", "--max-count=1", "--ignore-missing", *refs.NOT_OURS, "--all", "--not", "--remotes"],
              git_dir=repo.git_dir)
    return bool(out.strip()) or refs.tag_unmerged(repo.git_dir) or refs.held_only_here(repo.git_dir)


def worktree_unmerged(repo: Repository) -> bool:
    """THE worktree rule for a linked worktree: a commit of its HEAD (or of its own refs,
    ORIG_HEAD and reflog, which go with it) on no branch but its own and on no remote. An unborn HEAD
    counts as unmerged. Raises GitFailed."""
    return unmerged_commit("HEAD", _own_branch(repo), git_dir=repo.git_dir) or refs.held_only_here(repo.git_dir)


def _own_branch(repo: Repository) -> str:
    """The branch HEAD names, read from the HEAD file (one git process fewer per worktree a
    sweep judges); git's answer when it names none (detached, a reftable `.invalid` stub)."""
    try:
        name = _read_pointer(os.path.join(repo.git_dir, "HEAD"), "ref: refs/heads/")
    except GitFailed:
        name = ""
    if name and not name.startswith(".") and "\n" not in name:
        return name
    return git(["rev-parse", "--abbrev-ref", "HEAD"], git_dir=repo.git_dir).strip()


def unmerged_commit(rev: str, own_branch: str | None, *, git_dir: str | None = None,
                    cwd: str | None = None) -> bool:
    """Whether `rev` has a commit on no branch but `own_branch` and on no remote (the
    repository named by `git_dir`, or the one `cwd` is in). Raises GitFailed."""
    args = ["rev-list", "--max-count=1", rev, *(refs.OWN_REFS if rev == "HEAD" else ()), "--not"]
    if own_branch and own_branch != "HEAD":
        args.append(f"--exclude={own_branch}")
    args += ["--branches", "--remotes"]
    return bool(git(args, git_dir=git_dir, cwd=cwd).strip())


def locked(repo: Repository) -> bool:
    """Whether a linked worktree is locked (`<its git dir>/locked`)."""
    return repo.kind == "worktree" and os.path.lexists(os.path.join(repo.git_dir, "locked"))


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
            dot_git = _resolve(_read_pointer(os.path.join(entry, "gitdir")), entry, places)
        except GitFailed:
            if os.path.isdir(entry) and not os.path.islink(entry):
                return True  # an entry git cannot read: unsure, keep
            continue
        if places.inside(os.path.dirname(dot_git)):
            continue  # inside the folder: judged as a worktree of its own
        if os.path.lexists(dot_git) or os.path.lexists(os.path.join(entry, "locked")):
            return True
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
        if checkout_dirty(repo):
            return "dirty"
    except GitFailed:
        return "dirty"
    try:
        unmerged = worktree_unmerged(repo) if repo.kind == "worktree" else repo_unmerged(repo)
    except GitFailed:
        unmerged = True
    if unmerged or (repo.kind != "worktree" and worktrees_elsewhere(repo, places)):
        return "unmerged"
    if locked(repo):
        return "not_removed"
    return None


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
    located: list[Repository] = []
    for folder in sorted(folders):
        if os.path.islink(folder):
            continue
        try:
            repo = locate(folder, places)
        except GitFailed:
            return "dirty"
        if repo is not None:
            located.append(repo)
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


def _judging_order(located: list[Repository]) -> list[Repository]:
    """Checkouts first: a submodule's git dir (inside its parent's `.git/modules`) looks like
    a bare repository too, and is judged once, through its checkout. A linked worktree's
    submodule git dirs (in its own git dir, outside the folder) last: one not checked out
    is found only there, and judged by its commits."""
    modules = [Repository(d, d, None, "repo") for r in located if r.kind == "worktree" for d in refs.module_dirs(r.git_dir)]
    return [*sorted(located, key=lambda r: (r.kind == "bare", r.folder)), *modules]
