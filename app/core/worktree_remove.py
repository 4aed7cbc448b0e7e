"""WorktreeRemove: remove a checkout claudetto registered, through the worktree rules.

Claude takes exit 0 for "the folder is gone" (it then skips its own removal), so a checkout
is reported gone only when it really is, also when it was gone before; anything still there
is kept, with the reason. A record whose folder went without us (Claude's own sweep, a
user's `rm`) is dropped, and git forgets that worktree too (that one only: a worktree whose
folder is away today, on a drive not mounted, stays known).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.core.checkout_identity import drop_record, project_here
from app.core.checkouts import folder_gone, registry
from app.core.hung_mounts import reachable
from app.core.log import log

if TYPE_CHECKING:
    from collections.abc import Callable


@dataclass(frozen=True)
class CheckoutRemoval:
    """What WorktreeRemove did with one path. `gone` is the whole answer Claude gets (exit 0
    only then); `reason` says why: `removed`, `missing` (gone before we looked), or why the
    folder is kept: `unknown` (not a checkout claudetto made), `symlink`, `bad_input`,
    `no_project`, or a worktree keep reason (`live`, `young`, `not_a_worktree`, `dirty`,
    `unmerged`, `not_removed`). `detail` is git's own words when git refused."""

    path: str
    gone: bool
    reason: str
    detail: str | None = None


def _held_elsewhere(path: str) -> bool:
    """A checkout gone from its place that a cleanup holds in its trash (it may put it back),
    or that is back by the time the hold ended: it stays, and git keeps its entry."""
    from app.core.in_flight import in_flight

    return in_flight(path, wait_s=1.0) or folder_gone(path) is not True


def remove_checkout(path: str, session_id: str | None, process: tuple[int, str | None] | None = None) -> CheckoutRemoval:
    """WorktreeRemove: remove a checkout claudetto registered, through the worktree rules.

    Claude asks now, so the age condition does not apply; every other one does (no other live
    session inside, a real worktree, clean including git-ignored files, no unmerged commit),
    and git itself must agree (no --force). A path that is already gone is reported gone and
    forgotten; anything else that is still there is kept, with the reason logged.
    `process`: the Claude asking (pid, start): with it known, only that process stops
    counting, since the same session id may be resumed in a second Claude still inside."""

    def kept(reason: str, detail: str | None = None) -> CheckoutRemoval:
        log(f"hook: WorktreeRemove {path}: kept ({reason}{': ' + detail if detail else ''})")
        return CheckoutRemoval(path, False, reason, detail)

    if "\0" in path or not os.path.isabs(path):
        return kept("bad_input")
    if not reachable(path):
        return kept("not_removed", "its folder lies on a remote mount that does not answer")
    entries = registry()
    real = os.path.realpath(path)
    key = real if real in entries else path if path in entries else None
    there = folder_gone(path)
    if there is None:
        return kept("not_removed", "cannot look at it (permissions)")
    if there:
        return _already_gone(path, key, entries, kept)
    if os.path.islink(path):
        return kept("symlink")
    from app.core.checkout_identity import made_later

    if key is None or made_later(real, entries[key]):  # a worktree made there since: not ours
        return kept("unknown")
    project = entries[key].get("project")
    if not isinstance(project, str):
        return kept("no_project")
    from app.core.release import LOCK_WAIT_S, lock_of
    from app.core.sessions import liveness
    from app.core.state import StateBusy, locked
    from app.core.worktrees import remove_worktree

    try:  # a release moving its scratch aside meanwhile would judge, and put back, in a gone folder
        with locked(lock_of(key), wait_s=LOCK_WAIT_S):
            others = liveness(ending_session=session_id if process is None else None,
                              ending_pid=process[0] if process is not None else None).cwds
            result = remove_worktree(real, project, live_cwds=others, period_s=0, session=session_id,
                                     asking_session=session_id)
    except StateBusy:
        return kept("not_removed", "a release of its scratch is running")
    if folder_gone(path) is not True:
        if result.status == "kept":
            return kept(result.verdict.reason)
        return kept("not_removed", result.error or (None if result.status == "removed" else result.status))
    drop_record(key, entries[key])
    log(f"hook: WorktreeRemove {path}: removed ({result.bytes} bytes)")
    return CheckoutRemoval(path, True, "removed")


def _already_gone(path: str, key: str | None, entries: dict[str, Any],
                  kept: Callable[[str, str], CheckoutRemoval]) -> CheckoutRemoval:
    """Nothing is at `path`: gone (its record, if any, dropped), unless another removal holds
    the checkout in its trash, its project is gone too (a drive not mounted now: it comes back
    with it), or `path` is a spelling (`<checkout>/missing/..`) that names no folder while the
    checkout it resolves to is there: Claude would report a removal that never happened, and
    its record would go."""
    if key is not None and key != path and folder_gone(key) is not True:
        return kept("bad_input", "it names no folder, yet resolves to a checkout that is there")
    if key is not None and not project_here(entries[key]):
        return kept("not_removed", "its project is not there either (a drive not mounted?)")
    if _held_elsewhere(path):
        return kept("not_removed", "another removal is checking it")
    if key is not None:
        _forget(key, entries[key])
    log(f"hook: WorktreeRemove {path}: already gone")
    return CheckoutRemoval(path, True, "missing")


def _forget(key: str, entry: dict[str, Any]) -> None:
    """A registered checkout whose folder went without us (Claude's own sweep, a user's rm):
    drop it from the registry and let git forget that one worktree too, unless git's entry
    for it holds work (a user who `mv`-ed the checkout away to keep it: its index and HEAD
    live in that entry, which `git worktree repair` reconnects)."""
    drop_record(key, entry)
    project = entry.get("project")
    if isinstance(project, str) and os.path.isdir(project):
        forget_gone(project, key)


def forget_gone(project: str, path: str, branch: str | None = None) -> bool:
    """Git forgets the worktree at `path`, whose folder is gone, unless its entry holds work
    (`_holds_work`: `git worktree repair` in a moved folder brings that back); True when git
    forgot it. WorktreeRemove of a gone checkout, and WorktreeCreate of its name again, which
    checks `branch` out anew: what that branch holds does not count."""
    from app.core.git import forget_worktree

    admin = _admin_entry(project, path)
    if admin is not None and _holds_work(admin, branch):
        log(f"worktrees: {path}: git's entry {admin} holds staged work, an operation or commits; not forgotten")
        return False
    return forget_worktree(project, path)


def _admin_entry(project: str, path: str) -> str | None:
    """The folder in which git keeps the worktree at `path` (`<git dir>/worktrees/<id>`). Its
    `gitdir` may be relative to that folder (`worktree.useRelativePaths`, git 2.48) or spell
    the path through a link: compared once made absolute and real."""
    from app.core.git import run

    done = run(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=project)
    if not done.ok:
        return None
    admin = os.path.join(done.text.strip(), "worktrees")
    try:
        ids = os.listdir(admin)
    except OSError:
        return None
    wanted = os.path.realpath(path)
    for name in ids:
        try:
            with open(os.path.join(admin, name, "gitdir"), "rb") as fh:
                named = os.fsdecode(fh.read(65536)).strip()
        except OSError:
            continue
        if named and os.path.realpath(os.path.dirname(os.path.join(admin, name, named))) == wanted:
            return os.path.join(admin, name)
    return None


def _holds_work(admin: str, branch: str | None = None) -> bool:
    """Whether a worktree's git entry holds what exists nowhere else: an index with staged
    changes, an operation waiting half done (a rebase's plan, a merge, a bisect: `git
    worktree repair` brings it back to the moved folder), or a commit only its HEAD (or its
    own refs and reflog) holds: its HEAD's not when it is on `branch`, which stays. Unsure: it does."""
    from app.core.git import run
    from app.core.unique_refs import operation_in_progress
    from app.core.unique_work import GitFailed, Repository, worktree_unmerged

    if operation_in_progress(admin):
        return True
    staged = run(["diff-index", "--cached", "--quiet", "HEAD", "--"], git_dir=admin)
    if staged.returncode != 0:
        return True
    try:
        on_branch = branch is not None and run(["symbolic-ref", "-q", "HEAD"], git_dir=admin).text.strip() == branch
        return worktree_unmerged(Repository(admin, admin, None, "worktree"), head=not on_branch)
    except GitFailed:
        return True
