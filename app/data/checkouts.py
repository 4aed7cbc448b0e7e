"""The Checkouts screen's data: every `.claude/worktrees/*` of every known project as the
core describes it (`worktrees.describe_worktrees`), and, for the highlighted one, what git
says of it and what a release would delete.

Reads only. A release goes through `release.release_checkout`, a removal through
`worktrees.remove_worktree` (app/data/removals.py): the core judges again at that moment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from app.core.git import StatusCounts, status_counts
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


def releasing_now(infos: list[WorktreeInfo]) -> dict[str, int]:
    """Checkout path -> the process releasing it right now. A release marks its record
    `cut_short` with its own pid before it deletes anything; while that process still runs
    the release is under way, not cut short, and `r` would only wait for it."""
    from app.core import checkouts as registry
    from app.core.release_notes import releaser

    records = registry.registry()
    found: dict[str, int] = {}
    for info in infos:
        pid = releaser(records.get(info.path)) if info.state == "cut_short" else None
        if pid is not None and pid != os.getpid():
            found[info.path] = pid
    return found


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
    git: StatusCounts
    release: ReleasePlan | None  # None: not a session checkout claudetto made (nothing to release)
    tmp_kept: bool  # the checkout has a `.tmp/`, which every release keeps


def release_plan(path: str, project: str | None) -> ReleasePlan:
    """The declared scratch a release deletes, measured, and what it keeps and why."""
    from app.core import scanner
    from app.core.scratch import scratch_plan

    goes, kept = scratch_plan(path, project)
    return ReleasePlan([(rel, scanner.scan(os.path.join(path, rel)).disk) for rel in goes], list(kept))


def checkout_detail(info: WorktreeInfo) -> CheckoutDetail:
    """What the pane below the table says of one checkout: git's counts (through the one git
    adapter), the release plan of a session checkout claudetto made, and whether it has a
    `.tmp/`. Reads only: slow on a large checkout, so the screen calls it in a worker."""
    managed = info.state != "unmanaged" and info.kind == "session"
    return CheckoutDetail(info.path, status_counts(info.path),
                          release_plan(info.path, info.project) if managed else None,
                          os.path.isdir(os.path.join(info.path, ".tmp")))
