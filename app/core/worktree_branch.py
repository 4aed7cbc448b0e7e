"""May the `worktree-*` branch of a removed worktree be deleted as well?

`git worktree remove` leaves the branch; claudetto deletes a `worktree-*` branch with its
worktree when nothing of it would be lost. Each of its commits must be on another local branch
(main, once merged) or on a remote-tracking branch a merge on the server lands on (`origin/main`:
the upstream of another local branch, or what `origin/HEAD` names). Its own copies on a server
(`origin/worktree-x`, pushed with or without `-u`, or under another name: `HEAD:fix-parser`) do
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


#: Seconds a deletion waits for another one to end before it keeps its branch.
LOCK_WAIT_S = 10.0


def delete_branch(project: str | os.PathLike[str], branch: str | None) -> bool:
    """Delete `branch` (a `worktree-*` one only) when each of its commits is on another branch
    or on a remote-tracking branch a merge on the server lands on; True when deleted. When unsure, keep.
    One deletion at a time: two branches holding the same commit, deleted at once (two
    checkouts removed together), would each find it on the other, and both go."""
    from app.core.paths import claudetto_home_str
    from app.core.state import locked

    if not branch or not branch.startswith(PREFIX):
        return False
    try:
        with locked(os.path.join(claudetto_home_str(), "branches"), wait_s=LOCK_WAIT_S):
            return _delete(os.fspath(project), branch)
    except OSError:  # busy (StateBusy) or no lock to be had: the branch stays
        return False


def _delete(where: str, branch: str) -> bool:
    try:
        targets = _merge_targets(where, branch)
        args = ["rev-list", "--max-count=1", f"refs/heads/{branch}", "--not", f"--exclude={branch}", "--branches",
                *targets]
        if git.output(args, cwd=where).strip():
            from app.core.log import log

            log(f"worktrees: branch {branch} kept: commits on no other branch (its own pushed copy aside)")
            return False
    except GitFailed:
        return False
    return git.run(["branch", "-D", branch], cwd=where).ok


def _merge_targets(where: str, branch: str) -> list[str]:
    """The remote-tracking branches a merge on the server lands on: the upstream of another
    local branch (`main` tracks `origin/main`) and what a remote's HEAD names. Any other one
    is only a pushed copy: `git push origin HEAD:fix-parser` makes `origin/fix-parser`, which
    the server deletes with its closed pull request as it would `origin/worktree-x`. Raises
    GitFailed."""
    listed = git.output(["for-each-ref", "--format=%(refname) %(upstream) %(symref)", "refs/heads", "refs/remotes"],
                        cwd=where)
    rows = [line.split(" ") for line in listed.splitlines()]
    present = {row[0] for row in rows}
    named = {ref for row in rows if row[0] != f"refs/heads/{branch}" for ref in row[1:]}
    return sorted(ref for ref in named & present if ref.startswith("refs/remotes/") and not ref.endswith(f"/{branch}"))
