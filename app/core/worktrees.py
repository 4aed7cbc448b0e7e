"""THE worktree rules: when a `<project>/.claude/worktrees/*` checkout may go, and how it goes.

The session-start cleanup, `claudetto worktrees`, checkout releases and the dashboard all judge a
worktree here. It goes only when all five conditions hold; else it is kept with the first that fails:

- `live`: a live session's cwd is inside it;
- `young`: it is not older than `cleanupPeriodDays` (its own modification time);
- `not_a_worktree`: git does not list it as a worktree, or its `.git` names another entry;
- `dirty`, `unmerged`, `not_removed`: `unique_work` on the folder, which judges the worktree itself (a
  changed, untracked, secret-looking or ignored-outside-regenerable file; a commit on no other branch
  and no remote; locked) and every repository inside it;
- `not_removed` also when the removal itself is refused (a mount point inside, a swap).

It goes through `removal.remove`, never `git worktree remove` (which deletes git-ignored files
such as a `.env` written after the judgement, silently): the folder is renamed aside, judged once
more where it now is (`_guard`), and only then deleted, or put back. Git runs through app/core/git.py.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core import git, mounts, processes, unique_work, worktree_entry
from app.core.age import is_old
from app.core.checkout_identity import record_dropper
from app.core.checkout_links import named_from_outside
from app.core.git import GitWorktree
from app.core.paths import inside
from app.core.unique_work import REGENERABLE, GitFailed
from app.core.verdict import Action, Reason, Verdict, settled
from app.core.worktree_branch import PREFIX, delete_branch

if TYPE_CHECKING:
    from app.core.scanner import TreeSize

__all__ = ["REGENERABLE"]  # one list, in unique_work; still importable from here

RULE = "worktree"

# Subagents' `agent-*` and workflows' `wf_*` (legacy `wf-<n>`), the whole prefix: never a session's.
_AGENT = re.compile(r"^agent-.")
_WORKFLOW = re.compile(r"^(wf_.|wf-\d+$)")
# Remote control's `bridge-*`, `job-<name>-<8 hex>` and `--bg`'s `bg-<name>-<8 hex>`: a session
# checkout when a session asks for one (the release covers them), else nobody's.
_BACKGROUND = re.compile(r"^(bridge-.+|job-.+-[0-9a-f]{8}|bg-.+-[0-9a-f]{8})$")
_BRANCH_PREFIX = PREFIX


def worktrees_dir(project: str | os.PathLike[str]) -> Path:
    return Path(project) / ".claude" / "worktrees"


def list_worktrees(project: str | os.PathLike[str]) -> list[Path]:
    """Every entry of `<project>/.claude/worktrees/` by name (none when it is missing), but the trash
    a removal makes there on a file system of its own."""
    from app.core.trash import ROOT_TRASH_NAME

    folder = worktrees_dir(project)
    try:
        return [folder / name for name in sorted(os.listdir(folder)) if name != ROOT_TRASH_NAME]
    except OSError:
        return []


def worktree_kind(name: str, branch: str | None = None, session_id: str | None = "") -> str:
    """`agent` (`agent-*`), `workflow` (`wf_*`, `wf-<n>`; and `bridge-*`,
    `job-<name>-<8 hex>`, `bg-<name>-<8 hex>` made for no session: `session_id` None), `session`
    (Claude's `--worktree NAME`: on branch `worktree-NAME`), else `manual`."""
    if _AGENT.match(name):
        return "agent"
    if _WORKFLOW.match(name) or (session_id is None and _BACKGROUND.match(name)):
        return "workflow"
    if branch is not None and branch == f"{_BRANCH_PREFIX}{name}":
        return "session"
    return "workflow" if _BACKGROUND.match(name) else "manual"


def is_dirty(worktree: str | os.PathLike[str]) -> bool:
    """A changed, untracked, ignored-outside-regenerable or secret-looking file, or a present
    one git status does not see (`unseen_changes`). Raises GitFailed when git cannot read it."""
    folder = os.path.realpath(worktree)
    repo = unique_work.locate(folder)
    if repo is None:
        raise GitFailed(f"{folder} holds no repository")
    return unique_work.checkout_dirty(repo) or (
        repo.work_tree is not None and unique_work.unseen_changes(repo.git_dir, repo.work_tree) is not None)


def judge_worktree(
    path: str | os.PathLike[str],
    project: str | os.PathLike[str],
    *,
    live_cwds: Iterable[str],
    period_s: float,
    now: float | None = None,
    listing: dict[str, GitWorktree] | None = None,
    repos: Iterable[str] | None = None,
    asking_session: str | None = None,
) -> Verdict:
    """THE verdict on one `.claude/worktrees/*` entry: `remove` with reason `age`, or `keep`
    with the first failing condition (live, young, not_a_worktree, dirty, unmerged,
    not_removed for a locked one). `live_cwds` are real paths (sessions.live_cwds);
    `listing` (git.worktree_list(project)) may be passed in to save a git call per worktree;
    `repos` (a complete scan's `TreeSize.repos`) saves a walk of the tree. A session checkout
    that a session holds (`checkouts.holders`: a session resuming from its launch folder holds
    it before its cwd is inside) is `live`; `asking_session` (WorktreeRemove's) does not count."""
    first = _first_checks(path, project, live_cwds, period_s, now, listing, asking_session)
    if first.action != "remove":
        return first
    reason = unique_work.unique_work(os.path.realpath(path), repos)
    return first if reason is None else replace(first, action="keep", reason=reason)


def _first_checks(path: str | os.PathLike[str], project: str | os.PathLike[str], live_cwds: Iterable[str],
                  period_s: float, now: float | None, listing: dict[str, GitWorktree] | None,
                  asking_session: str | None) -> Verdict:
    """live, young, not_a_worktree: the cheap conditions (no walk of the tree, one git call at
    most); `remove` when all three hold and the git work is still to be judged."""
    p = Path(path)
    now = time.time() if now is None else now

    def verdict(action: Action, reason: Reason, mtime: float | None = None) -> Verdict:
        return Verdict(path=str(p), kind="worktree", action=action, reason=reason, rule=RULE,
                       root=str(worktrees_dir(project)), mtime=mtime, project=str(project))

    try:
        st = os.lstat(p)
    except OSError:
        return verdict("missing", "missing")
    real = os.path.realpath(p)
    if _live_inside(live_cwds, real) or _held(real, asking_session):
        return verdict("keep", "live", st.st_mtime)
    if not is_old(st.st_mtime, period_s, now):
        return verdict("keep", "young", st.st_mtime)
    import stat as stat_mod

    if not stat_mod.S_ISDIR(st.st_mode) or not os.path.isfile(p / ".git") or os.path.islink(p / ".git"):
        return verdict("keep", "not_a_worktree", st.st_mtime)
    known = git.worktree_list(project) if listing is None else listing
    entry = known.get(real)
    if (entry is None or entry.prunable or real == os.path.realpath(project)
            or not worktree_entry.names_its_entry(real)):  # the entry judged is the one deleted
        return verdict("keep", "not_a_worktree", st.st_mtime)
    if processes.first_inside(real, processes.judging_paths_in_use()):
        return verdict("keep", "in_use", st.st_mtime)  # a shell cd-ed there, a dev server
    if named_from_outside(real, os.fspath(project)) is not None:
        return verdict("keep", "in_use", st.st_mtime)  # an editable install, a link of the user's
    return verdict("remove", "age", st.st_mtime)


def _live_inside(cwds: Iterable[str], *folders: str) -> bool:
    return any(inside(os.path.realpath(c), f) for c in cwds if c for f in folders)


def _held(real: str, asking_session: str | None) -> bool:
    """Whether a session holds this checkout by the registry (a record that cannot be read
    holds nothing here: the other conditions still apply), or the Claude process whose call
    made it (an output record, as the GC keeps it) still runs: a session's id changes on
    `/clear`, its process does not, and it may go back into the folder it made."""
    from app.core import checkouts

    try:
        entry = checkouts.registry().get(real)
        if entry is not None and checkouts.holders(real, entry, ending_session=asking_session):
            return True
    except (OSError, ValueError) as exc:
        from app.core.log import log

        log(f"worktrees: the checkout registry could not be read for {real}: {exc}")
    return _made_by_a_running_claude(real, asking_session)


def _made_by_a_running_claude(real: str, asking_session: str | None) -> bool:
    from app.core.gc_records import read_records
    from app.core.paths import resolve_parents
    from app.core.sessions import process_running

    return any(r.claude_pid is not None and r.session != asking_session
               and resolve_parents(r.path) == real and process_running(r.claude_pid, r.claude_start)
               for r in read_records())


@dataclass(frozen=True)
class WorktreeRemoval:
    """What `remove_worktree` did: `removed`, `kept` (a condition failed, at the judgement or
    at the last check once moved aside: `verdict.reason` says which), `refused` (the removal
    refused or failed: not_removed, or in_use for a mount point inside; `error` says why),
    `missing` (gone meanwhile), `dry_run`, or `timeout` (the budget ran out while measuring:
    nothing was touched)."""

    path: str
    status: str
    verdict: Verdict
    bytes: int = 0
    files: int = 0
    branch: str | None = None
    branch_deleted: bool = False
    error: str | None = None


#: What `judge_removal` answers: the verdict `remove` with the measure, or the answer instead.
Judged = tuple[Verdict, "TreeSize"] | WorktreeRemoval


def remove_worktree(
    path: str | os.PathLike[str], project: str | os.PathLike[str], *, live_cwds: Iterable[str],
    period_s: float, dry_run: bool = False, budget_s: float | None = None, session: str | None = None,
    listing: dict[str, GitWorktree] | None = None, prune: bool = True, spawn: bool = True,
    asking_session: str | None = None, judged: Judged | None = None,
    _before_remove: Callable[[str], Any] | None = None,
) -> WorktreeRemoval:
    """Judge, measure, then remove through `removal.remove` with `_guard` asked once more
    after the folder is moved aside; then git forgets that one worktree and deletes its
    `worktree-*` branch when every commit of it is on another branch, or on a remote-tracking
    branch other than its own pushed copy (app/core/worktree_branch.py).

    `listing` (git.worktree_list) may be shared by a sweep of one project. `prune=False` leaves
    `git.forget_worktree` to the caller, except when a branch is to be deleted: git refuses
    to delete a branch a (forgotten-later) worktree still names. When
    `budget_s` runs out while measuring, nothing is touched: status `timeout`. `spawn=False`
    leaves the purge of a big trashed tree to the caller (`removal.spawn_purge()` once).
    `asking_session`: the session that asks for this removal (WorktreeRemove): it holds
    nothing, its cwd does not count. `judged`: `judge_removal`'s answer, made earlier (a
    sweep judges several at once); the guard still checks all once moved aside.
    `_before_remove` is a test seam: called after the judgement, right before the removal."""
    from app.core import removal

    cwds = list(live_cwds)
    listing = git.worktree_list(project) if listing is None else listing
    if judged is None:
        judged = judge_removal(path, project, cwds, period_s, listing, budget_s, asking_session)
    if isinstance(judged, WorktreeRemoval):
        return judged
    measured, size = judged
    real = os.path.realpath(path)
    branch = listing[real].branch if real in listing else None
    if dry_run:
        return WorktreeRemoval(str(path), "dry_run", measured, size.disk, size.files, branch)
    drop_record = record_dropper(real)  # read now: one made there again after the removal is another's
    done = removal.remove(real, worktrees_dir(project), RULE, kind="worktree", session=session, size=size,
                          spawn=spawn, guard=_guard(real, cwds, size.repos, asking_session),
                          _before_remove=_before_remove)
    answer = settled(measured, done)
    if answer.action == "missing":
        return WorktreeRemoval(str(path), "missing", answer)
    if done.status != "removed":
        error = None if done.status == "kept" else f"{done.status}: {done.reason}"
        return WorktreeRemoval(str(path), "kept" if error is None else "refused", answer, 0, 0, branch, error=error)
    deleted = False
    if prune or (branch or "").startswith(_BRANCH_PREFIX):
        git.forget_worktree(project, real)
        deleted = delete_branch(project, branch)
    drop_record()
    return WorktreeRemoval(str(path), "removed", answer, done.bytes, done.files, branch, deleted)


def judge_removal(path: str | os.PathLike[str], project: str | os.PathLike[str], cwds: list[str],
                  period_s: float, listing: dict[str, GitWorktree], budget_s: float | None,
                  asking_session: str | None = None) -> Judged:
    """The cheap conditions, the measure (within `budget_s`), then the git work judged with
    the repositories the measure found: the verdict `remove` with its size, or what to
    answer instead (kept, or `timeout`: nothing was touched). A worktree kept by a cheap
    condition (live, young) is neither measured nor asked about in git: the answer stands."""
    from app.core import scanner

    first = _first_checks(path, project, cwds, period_s, None, listing, asking_session)
    if first.action != "remove":
        return WorktreeRemoval(path=str(path), status="kept", verdict=first)
    if mounts.mounts_inside(path):  # the removal keeps it; git status would wait on a hung FUSE mount in it
        return WorktreeRemoval(str(path), "kept", replace(first, action="keep", reason="in_use"))
    size = scanner.scan(os.path.realpath(path), budget_s=budget_s)
    if size.partial:
        return WorktreeRemoval(str(path), "timeout", replace(first, action="skip", reason="timeout"))
    reason = unique_work.unique_work(os.path.realpath(path), size.repos)
    if reason is not None:
        return WorktreeRemoval(str(path), "kept", replace(first, action="keep", reason=reason))
    return replace(first, size=size.disk), size


def _guard(real: str, cwds: list[str], repos: tuple[str, ...],
           asking_session: str | None = None) -> Callable[[str], Reason | None]:
    """The last check, once the folder is moved aside (`moved`; the original path when it
    could not be moved): liveness read afresh (a session or a process may have started in it
    since), then the git work judged where it now is, with the measuring scan's repositories."""

    def check(moved: str) -> Reason | None:
        from app.core import sessions

        now = os.path.realpath(moved)
        live = sessions.liveness(ending_session=asking_session)
        if _live_inside([*live.cwds, *cwds], real, now) or _held(real, asking_session):
            return "live"
        if live.unsure:
            return "in_use"  # a running session nobody can read may be working in it
        if live.process_inside(real, now):
            return "in_use"
        return unique_work.unique_work(now, repos, original=real)

    return check


# --- the listing of `claudetto worktrees` and the dashboard ----------------------------------

_STATES = ("active", "released", "cut_short", "unmanaged")
_KINDS = ("session", "agent", "workflow", "manual")


@dataclass(frozen=True)
class WorktreeInfo:
    """One `.claude/worktrees/*` entry with its state and verdict (CONTRACT `worktrees`)."""

    path: str
    project: str
    name: str
    branch: str | None
    size: int
    kind: str
    state: str  # active | released | cut_short (from the checkout registry) | unmanaged
    sessions: dict[str, bool]  # session id -> running, for a registered checkout
    removable: bool
    reason: str
    verdict: Verdict
    failure: str | None = None  # what a release cut short left in the record ("release was cut short ...")


def describe_worktrees(
    projects: Iterable[str | os.PathLike[str]],
    *,
    live_cwds: Iterable[str],
    live_ids: Iterable[str] = (),
    budget_s: float | None = None,
) -> list[WorktreeInfo]:
    """Every worktree entry of each project, judged (nothing is removed). A checkout the
    registry (`checkouts.json`) knows takes its state and sessions from there."""
    from app.core import scanner, settings

    cwds = list(live_cwds)
    running = set(live_ids)
    registered = _registry()
    deadline = None if budget_s is None else time.monotonic() + budget_s
    found: list[WorktreeInfo] = []
    for project in projects:
        entries = list_worktrees(project)
        if not entries:
            continue
        listing = git.worktree_list(project)
        period = settings.cleanup_period_seconds(project)
        for path in entries:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            tree = scanner.scan(path, budget_s=left)
            # a partial scan may have missed a repository inside: then the judgement walks
            verdict = judge_worktree(path, project, live_cwds=cwds, period_s=period, listing=listing,
                                     repos=None if tree.partial else tree.repos)
            if verdict.action == "missing":
                continue
            real = os.path.realpath(path)
            branch = listing[real].branch if real in listing else None
            entry = registered.get(str(path)) or registered.get(real) or {}
            state = str(entry["state"]) if entry.get("state") in _STATES else "unmanaged"
            kind = str(entry["kind"]) if entry.get("kind") in _KINDS else worktree_kind(path.name, branch)
            ids: dict[Any, Any] = entry["sessions"] if isinstance(entry.get("sessions"), dict) else {}
            found.append(WorktreeInfo(
                path=str(path), project=str(project), name=path.name, branch=branch, size=tree.disk,
                kind=kind, state=state if entry else "unmanaged",
                sessions={str(s): s in running for s in ids},
                removable=verdict.action == "remove", reason=verdict.reason, verdict=verdict,
                failure=str(entry["cut_short"].get("failure") or "") or None if isinstance(entry.get("cut_short"), dict) else None))
    return found


def _registry() -> dict[str, dict[str, Any]]:
    """The checkout registry, or nothing when it cannot be read (the listing still works)."""
    try:
        from app.core import checkouts

        return checkouts.registry()
    except Exception:  # noqa: BLE001 - a registry problem must not hide the worktrees
        return {}


def worktrees_json(rows: list[WorktreeInfo]) -> dict[str, object]:
    """CONTRACT `worktrees` JSON."""
    return {"worktrees": [{"path": w.path, "project": w.project, "name": w.name, "branch": w.branch,
                           "size": w.size, "kind": w.kind, "state": w.state, "sessions": w.sessions,
                           "removable": w.removable, "reason": w.reason, "failure": w.failure} for w in rows]}
