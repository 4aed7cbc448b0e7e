"""Whether the worktree at a recorded checkout's path is still the one claudetto made.

A record outlives its folder until a session starts (`checkouts.claim` drops it then): a
user who removed a released checkout with git and made a worktree of their own at the same
path (`git worktree add .claude/worktrees/mine -b my-branch`) would find that worktree taken
for the session checkout, and its `node_modules` and `build/` released at the end of the
next session started in it. Git writes the moment it made a worktree as the first line of
that worktree's HEAD reflog; one made after the record was written (WorktreeCreate records
right after making it, and again when it makes it anew) is somebody else's. When it cannot
be told (no reflog, its first line expired, an older record without a time), the record
stands: the rules of the release still judge every path.
"""

from __future__ import annotations

import os

from app.core.log import log

#: Seconds the reflog's whole-second time may run past the record's time (clock steps).
SLACK_S = 1.0


def on_branch(path: str, ref: str) -> bool:
    """Whether the worktree at `path` has `ref` checked out."""
    from app.core.git import run

    return (done := run(["symbolic-ref", "-q", "HEAD"], cwd=path)).ok and done.text.strip() == ref


def git_made_at(checkout: str) -> int | None:
    """When git made the worktree at `checkout` (the creation line of its HEAD reflog, whose
    old id is all zeros); None when that cannot be read."""
    try:
        with open(os.path.join(checkout, ".git"), "rb") as fh:
            pointer = fh.read(4096).decode("utf-8", "surrogateescape").strip()
        if not pointer.startswith("gitdir: "):
            return None
        admin = os.path.join(checkout, pointer[len("gitdir: "):])
        with open(os.path.join(admin, "logs", "HEAD"), "rb") as fh:
            first = fh.readline(8192).decode("utf-8", "surrogateescape")
    except (OSError, ValueError):
        return None
    head = first.split("\t", 1)[0].split()
    if len(head) < 4 or head[0].strip("0") or not head[-2].isdigit():
        return None
    return int(head[-2])


def made_later(key: str, entry: object) -> bool:
    """Whether git made the worktree at `key` after the record `entry` was written: not the
    checkout claudetto made (logged)."""
    recorded = entry.get("created") if isinstance(entry, dict) else None
    if not isinstance(recorded, (int, float)) or isinstance(recorded, bool):
        return False
    made = git_made_at(key)
    if made is None or made <= recorded + SLACK_S:
        return False
    log(f"checkouts: {key} was made by git after its record; another worktree, not the checkout claudetto made")
    return True


def same_checkout(key: str) -> bool:
    """Whether `key` is a folder holding the worktree its record was made for."""
    from app.core.checkouts import registry

    return os.path.isdir(key) and not made_later(key, registry().get(key))
