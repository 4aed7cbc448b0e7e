"""Git work held outside the branches: more ways a repository inside a folder holds work
found nowhere else (app/core/unique_work.py asks each of them).

- a commit that only a tag made here holds (`unmerged`): a release tagged on a detached HEAD.
  A clone fetches the remote's tags too, and many name commits no remote branch holds any
  more (old release branches); counting those would keep every such clone forever. So a tag
  counts when its commit is no older than the repository itself (the first entry of its
  HEAD reflog: the clone or the init); without a reflog (a bare repository) every tag counts;
- a git dir whose work tree lives elsewhere (`unmerged`): `git clone --separate-git-dir`
  puts the whole history of a checkout in the home into a temp folder. It looks bare, but
  its config says `core.bare = false` or names a `core.worktree`, or it has an index;
- an object store another repository borrows (`unmerged`): `git clone --shared` or
  `--reference` writes `objects/info/alternates` in the borrower, and nothing in the lender.
  Only the repositories of the known projects (CONTRACT "Known projects") and the folders
  directly in the home are asked: a cheap, partial check;
- what a checkout's own git dir holds, which goes with it (`git worktree remove` deletes a
  linked worktree's): an operation stopped half way (`dirty`), a commit only a per-worktree
  ref, ORIG_HEAD or the HEAD reflog leads to (`unmerged`), a submodule's git dir; and
  for a repository, a commit a reset dropped that a branch's reflog alone still names.
"""

from __future__ import annotations

import os
import time

from app.core.git import GitFailed, common_dir
from app.core.git import output as git
from app.core.git import run as git_run
from app.core.hung_mounts import reachable as _reachable
from app.core.reflog_lines import branch_reflogs as _branch_reflogs
from app.core.reflog_lines import made_here
from app.core.reflog_lines import reflog as _reflog
from app.core.state import open_regular  # git's files: never a FIFO waited on

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


def tag_unmerged(git_dir: str) -> bool:
    """Whether a tag made here holds a commit that no remote-tracking branch holds. Raises
    GitFailed."""
    if not _has_tags(git_dir):
        return False
    args = ["rev-list", "--max-count=1", "--tags"]
    born = _born(git_dir)
    if born is not None:
        args.append(f"--max-age={born}")  # older commits came with the clone
    from app.core.gone_remotes import held_remotes

    args += ["--not", *held_remotes(git_dir)]
    return bool(git(args, git_dir=git_dir).strip())


def _has_tags(git_dir: str) -> bool:
    """Whether the repository may hold a tag (one git process fewer for most clones)."""
    if os.path.isdir(os.path.join(git_dir, "reftable")):
        return True  # refs git alone can read
    try:
        with os.scandir(os.path.join(git_dir, "refs", "tags")) as it:
            if any(True for _ in it):
                return True
    except OSError:
        pass
    try:
        with os.fdopen(open_regular(os.path.join(git_dir, "packed-refs")), "rb") as fh:
            return any(b" refs/tags/" in line for line in fh)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unsure: ask git


def _born(git_dir: str) -> int | None:
    """When the repository came to be: the time of the first entry of its HEAD reflog
    (`<old> <new> <who> <time> <zone>\\t<message>`), None without one; or, when earlier, the
    time of the files the clone or init wrote once (`description`, `info/exclude`): `git
    gc` expires reflog entries older than 90 days, and the first one left may be months after
    a tag the user made."""
    try:
        with os.fdopen(open_regular(os.path.join(git_dir, "logs", "HEAD")), "rb") as fh:
            first = fh.readline()
    except OSError:
        return None
    fields = first.split(b"\t", 1)[0].split()
    if len(fields) < 2 or not fields[-2].isdigit():
        return None
    born = int(fields[-2])
    for name in ("description", os.path.join("info", "exclude")):
        try:
            born = min(born, int(os.lstat(os.path.join(git_dir, name)).st_mtime))
        except OSError:
            pass
    return born


def serves_work_tree(git_dir: str) -> tuple[bool, str | None]:
    """Whether a bare-looking git dir serves a work tree, and that work tree when its config
    names one (`core.worktree`, as written: relative to the git dir). Raises GitFailed."""
    done = git_run(["config", "--local", "-z", "--get-regexp", r"^core\.(bare|worktree)$"], git_dir=git_dir)
    if done.returncode not in (0, 1):  # 1: neither is set
        raise GitFailed(done.error)
    bare, tree = None, None
    for item in done.text.split("\0"):
        key, _, value = item.partition("\n")
        if key.lower() == "core.bare":
            bare = value.strip().lower()
        elif key.lower() == "core.worktree" and value:
            tree = value
    serves = tree is not None or bare in ("false", "no", "off", "0") or os.path.exists(
        os.path.join(git_dir, "index"))
    return serves, tree


def borrowed(inside_folder: Callable[[str], bool]) -> bool:
    """Whether a known repository borrows objects from inside the folder (its
    `objects/info/alternates` names a path `inside_folder` accepts)."""
    return any(inside_folder(lent) and not inside_folder(borrower) for borrower, lent in _alternates())


def _alternates() -> Iterator[tuple[str, str]]:
    """(borrower's git dir, object store it borrows from) for the known projects'
    repositories and the folders directly in the home."""
    seen: set[str] = set()
    for folder in _candidates():
        common = _common_dir(folder)
        if common is None or common in seen:
            continue
        seen.add(common)
        objects = os.path.join(common, "objects")
        try:
            with os.fdopen(open_regular(os.path.join(objects, "info", "alternates")), "rb") as fh:
                lines = fh.read(1 << 20).decode(errors="surrogateescape").splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if line and not line.startswith("#"):
                yield common, os.path.normpath(os.path.join(objects, line))


def _candidates() -> Iterator[str]:
    from app.core import paths

    for project in paths.known_projects():
        yield os.fspath(project)
    yield from sorted(_subfolders(paths.home_str()))


def _subfolders(folder: str) -> list[str]:
    """The real folders directly in `folder` (none when it cannot be listed), but a remote mount
    that does not answer: every look into it would wait (app/core/hung_mounts.py)."""
    try:
        with os.scandir(folder) as it:
            return [e.path for e in it if e.is_dir(follow_symlinks=False) and _reachable(e.path)]
    except OSError:
        return []


def _common_dir(folder: str) -> str | None:
    """The git dir holding the objects of the repository at `folder` (a linked worktree's
    main git dir), or None."""
    dot_git = os.path.join(folder, ".git")
    if os.path.isdir(dot_git) and not os.path.islink(dot_git):
        return os.path.realpath(dot_git)
    if not os.path.isfile(dot_git):
        return None
    try:
        with open(dot_git, "rb") as fh:
            text = os.fsdecode(fh.read(65536)).strip()
    except OSError:
        return None
    git_dir = os.path.join(folder, text[len("gitdir:"):].strip())
    if not text.startswith("gitdir:") or not _reachable(git_dir):
        return None  # on a remote mount that does not answer: passed over, as the folders there
    return os.path.realpath(common_dir(git_dir))


# --- what a checkout's own git dir holds: gone with the checkout --------------------------------

#: Files and folders git keeps in a checkout's git dir while an operation waits for the user:
#: the plan of a rebase, a merge or cherry-pick stopped half way, a bisect's marks, a `git
#: notes merge` whose conflicts are resolved in NOTES_MERGE_WORKTREE. `git status` may show
#: nothing (stopped at `edit`, an empty pick, any notes merge), yet the plan is the user's.
OPERATIONS = ("rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD",
              "BISECT_LOG", "sequencer", "NOTES_MERGE_WORKTREE", "NOTES_MERGE_PARTIAL")


def operation_in_progress(git_dir: str) -> bool:
    """Whether a rebase, merge, cherry-pick, revert, `git am` or bisect waits in this git dir
    (a linked worktree's own, or a repository's)."""
    return any(os.path.lexists(os.path.join(git_dir, name)) for name in OPERATIONS)


#: The refs `--all` takes that are not a repository's own work: tags (judged by
#: `tag_unmerged`), remote-tracking branches and their prefetched copies (`git maintenance`).
NOT_OURS = ("--exclude=refs/tags/*", "--exclude=refs/remotes/*", "--exclude=refs/prefetch/*")

#: Per-worktree refs: they live in a linked worktree's own git dir and go with it, so a
#: commit only they hold counts as HEAD's does (`git update-ref refs/worktree/keep`, a bisect).
OWN_REFS = ("--glob=refs/worktree/*", "--glob=refs/bisect/*")


def held_only_here(git_dir: str) -> bool:
    """Whether the checkout's own git dir alone leads to a commit: one left behind on a
    detached HEAD (only its reflog names it), or changes a reset dropped, held by ORIG_HEAD
    (right after `git reset --hard HEAD~1`) or only by a reflog (once a second reset, a merge
    or a rebase moved ORIG_HEAD on; `git branch -f`). A ref holding it, or HEAD holding the
    same changes (a squash, a commit picked back), loses nothing. Raises GitFailed."""
    behind = left_behind(git_dir)
    if behind:  # every one of them, on stdin: a long detached series must not hide an older one
        done = git_run(["rev-list", "--max-count=1", "--ignore-missing", "--stdin", "--not", "--all"],
                       git_dir=git_dir, input="".join(f"{sha}\n" for sha in behind).encode())
        if not done.ok or done.text.strip():
            return True
    tips = reset_away(git_dir, limit=_RESET_SCAN) + _orig_head(git_dir)
    if not tips:
        return False
    only = set(git(["rev-list", "--ignore-missing", *tips, "--not", "--all"], git_dir=git_dir).split())
    dropped = [t for t in dict.fromkeys(tips) if t in only]
    head_tree = None
    if len(dropped) > _RESET_MAX:
        head_tree, dropped = _other_trees(git_dir, dropped)
    return bool(dropped) and _changes_lost(git_dir, dropped[:_RESET_MAX], only, head_tree)


def _other_trees(git_dir: str, tips: list[str]) -> tuple[str, list[str]]:
    """HEAD's tree, and `tips` (newest first) less those whose tree is HEAD's (they hold
    exactly what HEAD holds): the "undo the last commit" habit (`git commit`, `git reset
    --soft HEAD~1`, again and again) leaves many such dropped commits, and they must not push
    older work a reset dropped out of the few compared. One git process."""
    listing = git(["log", "--no-walk=unsorted", "--format=%H %T", "HEAD", *tips], git_dir=git_dir).split()
    trees = dict(zip(listing[2::2], listing[3::2], strict=True))
    return listing[1], [tip for tip in tips if trees.get(tip) != listing[1]]


def _orig_head(git_dir: str) -> list[str]:
    """The commit ORIG_HEAD names, if any. Raises GitFailed when it names none git wrote."""
    try:
        with os.fdopen(open_regular(os.path.join(git_dir, "ORIG_HEAD")), "rb") as fh:
            text = fh.read(200).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise GitFailed(f"ORIG_HEAD: {exc.strerror or exc}") from None
    if not _is_sha(text):
        raise GitFailed(f"ORIG_HEAD holds no commit id: {text[:60]!r}")
    return [text]


def _changes_lost(git_dir: str, tips: list[str], only: set[str], head_tree: str | None = None) -> bool:
    """Whether a commit of `only` (reachable from the dropped `tips` alone) brought changes
    HEAD does not hold: no commit since the fork point has the same patch, and a tip's tree
    is not the tree of one of HEAD's commits since then (several commits squashed into one).
    One git log for all the tips (`HEAD...a HEAD...b`)."""
    listing = git(["log", "--left-right", "--cherry-mark", "--format=%m %H %T %P",
                   *(f"HEAD...{tip}" for tip in tips)], git_dir=git_dir)
    ours: set[str] = set()
    own = False  # a dropped commit brought changes of its own
    trees: dict[str, str] = {}
    for line in listing.splitlines():
        mark, sha, tree, *parents = line.split()
        trees[sha] = tree
        if mark != ">":
            ours.add(tree)
        elif sha in only and not own:
            own = len(parents) < 2 or _merged_by_hand(git_dir, tree, parents)
    if not own:
        return False
    ours.add(head_tree or git(["rev-parse", "HEAD^{tree}"], git_dir=git_dir).strip())
    return any(trees.get(tip) not in ours for tip in tips)


def _merged_by_hand(git_dir: str, tree: str, parents: list[str]) -> bool:
    """Whether a merge brings changes of its own: its tree is not the one git merges its two
    parents into (a conflict resolved by hand, an edit made in the merge). A clean merge
    brings none: merging again gives it back. Unsure (three parents, a git before 2.38):
    it does."""
    if len(parents) != 2:
        return True
    done = git_run(["merge-tree", "--write-tree", "--no-messages", *parents], git_dir=git_dir)
    return done.returncode != 0 or done.text.split()[:1] != [tree]


#: Reflog entries that made a commit (an amend, a cherry-pick, a patch `git am` applied...),
#: as git writes their message.
_MADE = (b"commit", b"cherry-pick", b"revert", b"merge", b"am:")
#: Reflog entries that moved a ref away from its commit without replacing it (`git reset`,
#: `git branch -f`, `git checkout -B`; `git update-ref` writes no message at all): the commit
#: it left may be work kept nowhere else. An amend (`commit (amend)`) or a rebase (`rebase
#: (finish)`) replaced it on purpose.
_RESET = (b"reset: moving to ", b"branch: Reset to ")
_RESET_MAX = 32  # the newest commits reset away whose changes are compared with HEAD's
_RESET_SCAN = 4096  # the newest commits reset away that are looked at at all
#: How long a reset's entry counts: git's own `gc.reflogExpireUnreachable` (30 days unless the
#: user set it), after which `git gc` drops the entry and, with it, the only way back.
_RESET_DAYS = 30


def left_behind(git_dir: str) -> list[str]:
    """Commits made on a detached HEAD and left there (`git switch` away: git warns "you are
    leaving 1 commit behind"): entries of this checkout's HEAD reflog that made a commit no
    branch's reflog names. Only the reflog, which goes with the checkout, still leads to them.
    A commit a branch once held (an amend, a reset) was replaced on purpose or is found by
    `reset_away`; a rebase's steps count when it ran on a detached HEAD (`made_here`)."""
    made = made_here(_reflog(os.path.join(git_dir, "logs", "HEAD")), _MADE)
    if not made:
        return []
    on_branches: set[str] = set()
    for path in _branch_reflogs(common_dir(git_dir)):
        on_branches.update(sha for old, new, _, _ in _reflog(path, newest=True) for sha in (old, new))
    return list(dict.fromkeys(sha for sha in reversed(made) if sha not in on_branches))


def reset_away(git_dir: str, *, limit: int = _RESET_MAX) -> list[str]:
    """The commits a reset moved a ref away from, the newest first (at most `_RESET_MAX`): in
    this checkout's HEAD reflog and, for a repository's own git dir, its branches' reflogs
    (`git branch -f` writes only there; `git branch -D` deletes them, HEAD's still names the
    commits). A linked worktree's branches' reflogs stay with the repository, except that of
    the `worktree-*` branch its HEAD names: the removal deletes that branch, reflog and all. An
    entry older than `_RESET_DAYS` is git's to expire. Reads files only: no git process."""
    logs = [os.path.join(git_dir, "logs", "HEAD")]
    common = common_dir(git_dir)
    if common == git_dir:
        logs += _branch_reflogs(git_dir)
    elif (branch := _head_branch(git_dir)).startswith("refs/heads/worktree-"):
        logs.append(os.path.join(common, "logs", branch))
    found = [(when, i, old) for path in logs for i, (old, new, when, message) in enumerate(_reflog(path))
             if (message.startswith(_RESET) or not message.strip()) and old != new and _is_sha(old) and old.strip("0")]
    since = time.time() - _RESET_DAYS * 86_400
    if any(when < since for when, _, _ in found):  # only then is the user's setting asked
        since = time.time() - _reflog_kept_s(git_dir)
    found = [entry for entry in found if entry[0] >= since]
    found.sort(key=lambda entry: entry[:2], reverse=True)  # within a second, the later line is newer
    return list(dict.fromkeys(old for _, _, old in found))[:limit]


_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400,
          "month": 30 * 86_400, "year": 365 * 86_400}


def _reflog_kept_s(git_dir: str) -> float:
    """How long git keeps a reflog entry of a commit no ref holds: the longest
    `gc.reflogExpireUnreachable` (or `gc.<pattern>.reflogExpireUnreachable`) set, else 30
    days. `never` keeps them for good, and so does a value this cannot read (when unsure,
    keep)."""
    done = git_run(["config", "-z", "--get-regexp", r"^gc\..*reflogexpireunreachable$"], git_dir=git_dir)
    if done.returncode == 1:
        return _RESET_DAYS * 86_400.0  # none set: git's default
    if not done.ok:
        return float("inf")
    items = (item.partition("\n") for item in done.text.split("\0"))
    return max((_expiry_s(value) for key, _, value in items if key), default=_RESET_DAYS * 86_400.0)


def _expiry_s(value: str) -> float:
    """One expiry as git writes it (`never`, `now`, `90.days.ago`, `3 months`) in seconds;
    endless for `never` and for anything else this cannot read."""
    text = value.strip().lower().replace(".", " ").removesuffix(" ago").strip()
    if text in ("now", "all"):
        return 0.0
    number, _, unit = text.partition(" ")
    seconds = _UNITS.get(unit.strip().removesuffix("s"))
    return float("inf") if seconds is None or not number.isdigit() else int(number) * float(seconds)


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _head_branch(git_dir: str) -> str:
    """The ref HEAD names (`refs/heads/x`), read from the HEAD file; "" when detached."""
    try:
        with os.fdopen(open_regular(os.path.join(git_dir, "HEAD")), "rb") as fh:
            text = os.fsdecode(fh.read(4096)).strip()
    except OSError:
        return ""
    return text[len("ref: "):] if text.startswith("ref: ") and ".." not in text else ""


def module_dirs(git_dir: str) -> list[str]:
    """The git dirs of a linked worktree's submodules (`<its git dir>/modules/...`, nested
    ones too): outside the worktree's folder, found by no walk of it, yet gone once git
    forgets the worktree. One that is checked out is judged with its checkout; one that is
    not (`git submodule deinit`, a branch without it) only here."""
    found: list[str] = []
    pending = [os.path.join(git_dir, "modules")]
    while pending and len(found) < 1000:
        for child in _subfolders(pending.pop()):
            if all(os.path.exists(os.path.join(child, mark)) for mark in ("HEAD", "objects", "refs")):
                found.append(child)
                pending.append(os.path.join(child, "modules"))
            else:
                pending.append(child)  # a submodule named `a/b` lives in modules/a/b
    return sorted(found)
