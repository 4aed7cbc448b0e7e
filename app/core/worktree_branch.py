"""May the `worktree-*` branch of a removed worktree be deleted as well?

`git worktree remove` leaves the branch; claudetto deletes a `worktree-*` branch with its
worktree when nothing of it would be lost. Each of its commits must be on another local branch
(main, once merged) or on a remote-tracking branch of another name (`origin/main`, merged on
the server). Its own copies on a server (`origin/worktree-x`, pushed with or without `-u`) do
not count: a server deletes a pull request's branch when the request is closed or merged by
squash, and `git fetch --prune` then drops the last ref to commits the user pushed but nobody
merged. `git branch -d` would take such a branch (it is "merged into its upstream"); here it
stays, with its reflog, and the worktree's folder goes.
"""

from __future__ import annotations

import os

from app.core import git
from app.core.git import GitFailed

PREFIX = "worktree-"


def delete_branch(project: str | os.PathLike[str], branch: str | None) -> bool:
    """Delete `branch` (a `worktree-*` one only) when each of its commits is on another branch
    or on a remote-tracking branch of another name; True when deleted. When unsure, keep."""
    if not branch or not branch.startswith(PREFIX):
        return False
    where = os.fspath(project)
    args = ["rev-list", "--max-count=1", f"refs/heads/{branch}", "--not", f"--exclude={branch}", "--branches",
            f"--exclude=*/{branch}", "--remotes"]
    try:
        if git.output(args, cwd=where).strip():
            from app.core.log import log

            log(f"worktrees: branch {branch} kept: commits on no other branch (its own pushed copy aside)")
            return False
    except GitFailed:
        return False
    return git.run(["branch", "-D", branch], cwd=where).ok
