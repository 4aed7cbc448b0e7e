"""The plain data every sweep returns: one Verdict per judged path (STYLE rule 4), and the
one way from a verdict to its removal.

The output GC, the session-start cleanup, the worktree rules and checkout releases each
judge paths and answer with Verdicts; the CLI turns them into JSON and text, the dashboard
into rows. A reason is a value from the contract's lists, never prose assembled in three
places, and what a removal did becomes a verdict's answer in one place (`settled`).
`remove_verdict` is the only dispatcher from a verdict to a removal: whoever approves a
verdict (the dashboard) removes through it, and the rule that judged the path judges it
once more at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from app.core.removal import Removal
    from app.core.scan_tally import EntryId

#: What a sweep does with a path.
Action = Literal["remove", "keep", "skip", "missing"]
#: The CONTRACT's statuses of a GC entry (and of any verdict, in reports).
Status = Literal["removed", "would_remove", "kept", "skip", "missing"]
#: Why: what lets a path go (`age`, `size`, `scratch`), what keeps it (`live` ... `journal`,
#: and a release's `tracked`, `git`, `bad_config`), what makes it none of a sweep's business
#: (`outside_root`, `symlink`, `escapes_root`), and what happened meanwhile (`missing`,
#: `changed`, `failed`, `timeout`).
Reason = Literal[
    "age", "size", "scratch",
    "live", "young", "in_use", "dirty", "unmerged", "not_removed", "not_a_worktree", "journal",
    "tracked", "git", "bad_config",
    "outside_root", "symlink", "escapes_root",
    "missing", "changed", "failed", "timeout",
]

#: The reasons a removal's guard may give for keeping a path (a check that failed: `failed`).
KEEP_REASONS: dict[str, Reason] = {r: r for r in ("live", "young", "in_use", "dirty", "unmerged", "not_removed",
                                                     "journal")}
#: Refusals of `removal.remove` that make a path none of the sweep's business, as reasons.
_NOT_OURS: dict[str, Reason] = {"outside_root": "outside_root", "symlink": "symlink",
                                "escapes_root": "escapes_root", "other_fs": "escapes_root",
                                "owner": "outside_root"}  # another user's path is not ours to remove
#: Worktrees speak the keep reasons of CONTRACT `clean` only.
_WORKTREE_REASONS = frozenset({"live", "young", "not_a_worktree", "dirty", "unmerged", "not_removed",
                               "in_use", "journal"})
_STATUS: dict[str, Status] = {"keep": "kept", "skip": "skip", "missing": "missing"}


@dataclass(frozen=True)
class Verdict:
    path: str
    kind: str  # gc: temp|worktree|copy|config|scratch; cleanup: probe|session_folder|gate_log|worktree
    action: Action
    reason: Reason
    rule: str  # which rule judged it: gc, probe, session_folder, gate_log, worktree, release
    root: str  # the root a removal of this path must stay strictly inside ("": in none)
    size: int | None = None  # disk bytes (st_blocks * 512), None when not measured yet
    session: str | None = None  # the owning session, when known
    mtime: float | None = None  # the path's own modification time
    project: str | None = None  # the project it belongs to, when it belongs to one
    sessions: tuple[str, ...] = ()  # every session that recorded it (the GC's)
    removed: bool = False  # the removal happened (a `remove` verdict that was carried out)

    @property
    def removable(self) -> bool:
        return self.action == "remove"

    @property
    def status(self) -> Status:
        """The CONTRACT status: `removed` once carried out, `would_remove` before."""
        if self.action == "remove":
            return "removed" if self.removed else "would_remove"
        return _STATUS[self.action]


def settled(verdict: Verdict, done: Removal) -> Verdict:
    """THE translation of what `removal.remove` did with a verdict's path into the verdict's
    answer: removed (or would be), gone meanwhile, kept (the guard's reason; `in_use` for a
    mount point inside), none of the sweep's business (skip), or left because the system
    refused (`changed`) or failed (`failed`): judged again next time. A worktree keeps only
    with a reason of CONTRACT `clean` (else `not_removed`); a release never skips."""
    if done.status in ("removed", "dry_run"):
        return replace(verdict, action="remove", removed=done.status == "removed", size=done.bytes)
    if done.status == "missing" or done.reason == "missing":
        return replace(verdict, action="missing", reason="missing")
    action: Action = "keep"
    reason: Reason
    if done.status == "kept" and done.reason in KEEP_REASONS:
        reason = KEEP_REASONS[done.reason]
    elif done.reason == "mount":
        reason = "in_use"
    elif done.status == "kept":
        reason = "not_removed"  # the last check itself failed: when unsure, keep
    elif done.status == "refused" and done.reason in _NOT_OURS:
        action, reason = "skip", _NOT_OURS[done.reason]
    else:
        reason = "changed" if done.status == "refused" else "failed"
        from app.core.log import log

        log(f"{verdict.rule}: {verdict.path} not removed: {done.status} {done.reason}")
    if verdict.rule == "worktree" and (action == "skip" or reason not in _WORKTREE_REASONS):
        action, reason = "keep", "not_removed"
    elif verdict.rule == "release" and action == "skip":
        action = "keep"  # a release keeps, or deletes: every path it was asked about is its own
    return replace(verdict, action=action, reason=reason)


def remove_verdict(verdict: Verdict, expect: EntryId | None = None) -> Verdict:
    """Remove the path of one `remove` verdict, judged once more at that moment by the rule
    that judged it (its guard, with the sessions read again), through the one removal core;
    the answer says what happened. A verdict that is not `remove` is answered as it is: a
    checkout's scratch goes only with its release (`release.release_checkout`). `expect`:
    the entry the path was when a person was asked: only that one goes."""
    if verdict.action != "remove" or verdict.rule == "release":
        return verdict
    if verdict.rule == "worktree" and verdict.project:
        from app.core import sessions, settings, worktrees

        done = worktrees.remove_worktree(verdict.path, verdict.project, live_cwds=sessions.liveness().cwds,
                                         period_s=settings.cleanup_period_seconds(verdict.project),
                                         session=verdict.session)
        return done.verdict
    from app.core import gc, hygiene, removal

    guard = gc.removal_guard(verdict.path) if verdict.rule == gc.RULE else hygiene.removal_guard(verdict)
    result = removal.remove(verdict.path, verdict.root, verdict.rule, kind=verdict.kind, session=verdict.session,
                            size=verdict.size, guard=guard, expect=expect)
    return settled(verdict, result)
