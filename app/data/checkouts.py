"""The Checkouts screen's data: every `.claude/worktrees/*` of every known project as the
core describes it (`worktrees.describe_worktrees`), and, for the highlighted one, what git
says of it and what a release would delete.

Reads only. A release goes through `release.release_checkout`, a removal through
`worktrees.remove_worktree` (app/data/removals.py): the core judges again at that moment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from app.core.worktrees import WorktreeInfo


def read_checkouts() -> list[WorktreeInfo]:
    """Each checkout of every known project (the current folder's repository first)."""
    from app.core import hygiene, sessions, worktrees

    try:
        here: str | None = os.getcwd()
    except OSError:
        here = None
    return worktrees.describe_worktrees(hygiene.session_projects(here), live_cwds=sessions.live_cwds(),
                                        live_ids=sessions.live_session_ids())


@dataclass(frozen=True)
class GitSummary:
    """`git status` of a checkout in counts, and its commits on no other branch or remote."""

    changed: int = 0
    untracked: int = 0
    ignored: int = 0
    unmerged: int = 0
    error: str = ""  # git could not say: the counts mean nothing


@dataclass(frozen=True)
class ReleasePlan:
    """What a release would delete (relative path, disk bytes) and keep (relative path, why)."""

    goes: list[tuple[str, int]] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(size for _path, size in self.goes)


@dataclass(frozen=True)
class CheckoutDetail:
    path: str
    git: GitSummary
    release: ReleasePlan | None  # None: not a session checkout claudetto made (nothing to release)
    tmp_kept: bool  # the checkout has a `.tmp/`, which every release keeps


def git_summary(path: str) -> GitSummary:
    """Changed, untracked and ignored entries (`git status --ignored`), and the commits of
    HEAD on no other branch and no remote, through the one git adapter."""
    from app.core.git import GitFailed
    from app.core.git import output as git
    from app.core.unique_work import locate

    try:
        repo = locate(os.path.realpath(path))
        if repo is None or repo.work_tree is None:
            return GitSummary(error="no git checkout here")
        status = git(["status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=normal"],
                     git_dir=repo.git_dir, work_tree=repo.work_tree)
        own = git(["rev-parse", "--abbrev-ref", "HEAD"], git_dir=repo.git_dir).strip()
        args = ["rev-list", "--count", "HEAD", "--not"] + ([f"--exclude={own}"] if own and own != "HEAD" else [])
        unmerged = int(git([*args, "--branches", "--remotes"], git_dir=repo.git_dir).strip() or 0)
    except (GitFailed, ValueError) as exc:
        return GitSummary(error=str(exc) or "git failed")
    changed = untracked = ignored = 0
    fields = iter(status.split("\0"))
    for entry in fields:
        code = entry[:2]
        if not code:
            continue
        if code == "??":
            untracked += 1
        elif code == "!!":
            ignored += 1
        else:
            changed += 1
            if code[0] in "RC":
                next(fields, None)  # a rename's second field is where it came from
    return GitSummary(changed, untracked, ignored, unmerged)


def release_plan(path: str, project: str | None) -> ReleasePlan:
    """The declared scratch a release deletes, measured, and what it keeps and why."""
    from app.core import scanner
    from app.core.scratch import scratch_plan

    goes, kept = scratch_plan(path, project)
    return ReleasePlan([(rel, scanner.scan(os.path.join(path, rel)).disk) for rel in goes], list(kept))


def checkout_detail(info: WorktreeInfo) -> CheckoutDetail:
    managed = info.state != "unmanaged" and info.kind == "session"
    return CheckoutDetail(info.path, git_summary(info.path),
                          release_plan(info.path, info.project) if managed else None,
                          os.path.isdir(os.path.join(info.path, ".tmp")))
