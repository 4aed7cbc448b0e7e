"""A session checkout entered again is released again: what its session installs there goes
when that session ends.

A release leaves the checkout `released`, and SessionEnd's release only acts on one that is
`active` or `cut_short` (one released already has nothing left to do). Two ways in hold a
released checkout without the SessionStart claim that makes it `active`:
- EnterWorktree on a name released before: SessionStart fired in the project first, then
  WorktreeCreate finds the checkout again and records the session holding it. The record
  stays `released` until a session starts there (its note is told then), marked entered
  again (`reopen`), and SessionEnd's release acts on it (`entered_again`);
- WorktreeCreate of the same name while a release runs: the release stops at the next path
  (its guard sees the holder), and its last step must not mark released a checkout the
  session now holds (`state_after_release`).
Left `released`, the session's ending would find nothing to do, and every `node_modules` it
installed would stay until the worktree itself goes.
"""

from __future__ import annotations

from typing import Any

from app.core import checkouts
from app.core.log import log

#: The record's mark of a released checkout a session entered again.
MARK = "entered_again"


def reopen(path: str, session_id: str) -> None:
    """WorktreeCreate found the released session checkout at `path` again for `session_id`:
    marked, so the release at that session's end runs."""
    def change(records: dict[str, Any]) -> None:
        entry = records.get(path)
        sessions = entry.get("sessions") if isinstance(entry, dict) else None
        if (isinstance(entry, dict) and entry.get("kind") == "session" and entry.get("state") == "released"
                and isinstance(sessions, dict) and session_id in sessions):
            entry[MARK] = session_id
            log(f"checkouts: {path}: entered again by {session_id}; released again when nobody holds it")

    checkouts.edit_registry(change)


def entered_again(key: str) -> bool:
    """Whether a session entered the released checkout at `key` again since its release."""
    return isinstance((checkouts.registry().get(key) or {}).get(MARK), str)


def state_after_release(key: str, entry: dict[str, Any], session: str | None,
                        process: checkouts.Process | None) -> str:
    """The state a release that ran to its end leaves: `active` when a session holds the
    checkout now (it entered while the release ran), else `released` (and no longer marked
    entered again)."""
    entry.pop(MARK, None)
    who = checkouts.holders(key, entry, ending_session=session, ending_process=process)
    if who:
        log(f"release: {key}: held by {', '.join(who)} since it began; left active")
        return "active"
    return "released"
