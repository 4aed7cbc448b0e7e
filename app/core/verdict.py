"""The plain data every sweep returns: one Verdict per judged path (STYLE rule 4).

The GC, the session-start cleanup and checkout releases each judge paths; the CLI turns
verdicts into JSON and text, the TUI into rows. A reason is a value from the contract's
lists (`live`, `young`, `outside_root`, `dirty`, ...), never prose assembled in three places.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Action = Literal["remove", "keep", "skip", "missing"]


@dataclass(frozen=True)
class Verdict:
    path: str
    kind: str  # gc: temp|worktree|copy|config|scratch; hygiene: probe|session_folder|gate_log|worktree
    action: Action
    reason: str  # why: a contract reason value (age, size, live, young, dirty, ...)
    rule: str  # which rule judged it: gc, probe, session_folder, gate_log, worktree
    root: str  # the root a removal of this path must stay strictly inside
    size: int | None = None  # disk bytes (st_blocks * 512), None when not measured yet
    session: str | None = None  # the owning session, when known
    mtime: float | None = None  # the path's own modification time
    project: str | None = None  # the project it belongs to, when it belongs to one

    @property
    def removable(self) -> bool:
        return self.action == "remove"
