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
from collections.abc import Callable, Mapping

from app.core.log import log

#: Seconds the reflog's whole-second time may run past the record's time (clock steps).
SLACK_S = 1.0


def on_branch(path: str, ref: str) -> bool:
    """Whether the worktree at `path` has `ref` checked out."""
    from app.core.git import run

    return (done := run(["symbolic-ref", "-q", "HEAD"], cwd=path)).ok and done.text.strip() == ref


def _admin(checkout: str) -> str | None:
    """Git's admin folder of the worktree at `checkout` (its `.git` file's `gitdir`)."""
    with open(os.path.join(checkout, ".git"), "rb") as fh:
        pointer = fh.read(4096).decode("utf-8", "surrogateescape").strip()
    return os.path.join(checkout, pointer[len("gitdir: "):]) if pointer.startswith("gitdir: ") else None


def admin_id(checkout: str) -> str | None:
    """The real path of git's admin folder of the worktree at `checkout`: the same for the
    worktree's whole life (`git worktree move` keeps it; so does a copy of the project made in
    its place), another for any other worktree that exists with it (git names each one apart)
    or of another repository; None when it cannot be read."""
    try:
        admin = _admin(checkout)
    except (OSError, ValueError):
        return None
    return os.path.realpath(admin) if admin is not None else None


def git_made_at(checkout: str) -> int | None:
    """When git made the worktree at `checkout` (the creation line of its HEAD reflog, whose
    old id is all zeros); None when that cannot be read."""
    try:
        admin = _admin(checkout)
        if admin is None:
            return None
        with open(os.path.join(admin, "logs", "HEAD"), "rb") as fh:
            first = fh.readline(8192).decode("utf-8", "surrogateescape")
    except (OSError, ValueError):
        return None
    head = first.split("\t", 1)[0].split()
    if len(head) < 4 or head[0].strip("0") or not head[-2].isdigit():
        return None
    return int(head[-2])


def made_later(key: str, entry: object) -> bool:
    """Whether the worktree at `key` is another than the one the record `entry` was written for
    (logged): git made it after the record, or its admin folder is not the recorded one (the
    user's own worktree, made before, moved there with `git worktree move`)."""
    known = entry.get("admin") if isinstance(entry, dict) else None
    if isinstance(known, str) and known != (admin_id(key) or known):
        log(f"checkouts: {key} is another worktree than the checkout claudetto made (moved there)")
        return True
    recorded = entry.get("created") if isinstance(entry, dict) else None
    if not isinstance(recorded, (int, float)) or isinstance(recorded, bool):
        return False
    made = git_made_at(key)
    if made is None or made <= recorded + SLACK_S:
        return False
    log(f"checkouts: {key} was made by git after its record; another worktree, not the checkout claudetto made")
    return True


def drop_record(key: str, entry: object) -> None:
    """Drop the record `entry` of the checkout at `key` (removed, or found gone), only while the
    registry still holds that one: a checkout made there again since (`claude --worktree NAME`
    right after the removal) was recorded anew, with a later `created`, and that record is its
    own: dropped, its session's end would release nothing and WorktreeRemove call it unknown."""
    from app.core.checkouts import edit_registry

    def change(records: dict[str, object]) -> None:
        now = records.get(key)
        if isinstance(now, dict) and isinstance(entry, dict) and now.get("created") != entry.get("created"):
            log(f"checkouts: {key} was made again since; its new record stays")
        else:
            records.pop(key, None)

    edit_registry(change)


def record_dropper(real: str) -> Callable[[], None]:
    """Read the record of the checkout at `real` now, before its removal; the answer drops that
    record once the removal is done (seed 002: it "goes away when the checkout is removed"),
    also the session-start cleanup's. A registry that cannot be read or written leaves it: the
    next SessionStart drops a record whose folder is gone."""
    from app.core.checkouts import record_of

    try:
        found = record_of(real)
    except (OSError, ValueError) as exc:
        found = None
        log(f"worktrees: the record of {real} could not be read: {exc}")

    def drop() -> None:
        try:
            if found is not None:
                drop_record(*found)
        except (OSError, ValueError) as exc:  # StateBusy is an OSError
            log(f"worktrees: the record of removed {real} stays for now: {exc}")

    return drop


def folder_gone(path: str) -> bool | None:
    """True when nothing is at `path`, False when something is, None when it cannot be told
    (a parent we may not search, a remote mount that does not answer: never looked at): only
    a sure "gone" may be reported gone."""
    from app.core.hung_mounts import reachable

    if not reachable(path):
        return None
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return None
    return False


def gone_for_good(records: Mapping[str, object]) -> set[str]:
    """Which of the recorded checkouts (key: record) are gone for good: nothing at the path, no
    removal holding it in its trash for its last check, which may put it back (a second Claude
    starting while the first one's cleanup checks it), and its project still there: a project
    gone too may be on a drive or share not mounted now, and its checkouts come back with it.
    Their records must still be there then."""
    from app.core.in_flight import in_flight

    missing = [key for key, entry in records.items() if folder_gone(key) is True and project_here(entry)]
    # settled first: a killed removal's leftover that was never journaled is put back
    return {key for i, key in enumerate(missing) if not in_flight(key, settle=i == 0) and folder_gone(key) is True}


def gone_status(key: str, entry: object, *, dry_run: bool = False) -> str | None:
    """What a release answers for the recorded checkout `key` whose folder is gone: `missing`
    (gone for good: its record is dropped unless `dry_run`), `busy` (another removal checks
    it: it may come back), `away` (its project is gone too: a drive not mounted now, the
    record waits for it, as for a remote mount that does not answer); None when it is there."""
    from app.core.hung_mounts import reachable

    if key in gone_for_good({key: entry}):
        if not dry_run:
            drop_record(key, entry)
            log(f"release: {key} is gone; its record is dropped")
        return "missing"
    if folder_gone(key) is not True:
        return None if reachable(key) else "away"
    return "busy" if project_here(entry) else "away"


def project_here(entry: object) -> bool:
    """Whether the project a record names is there (a record naming none: as if it were)."""
    project = entry.get("project") if isinstance(entry, dict) else None
    return not isinstance(project, str) or folder_gone(project) is False


def same_checkout(key: str) -> bool:
    """Whether `key` is a folder holding the worktree its record was made for."""
    from app.core.checkouts import registry

    return os.path.isdir(key) and not made_later(key, registry().get(key))
