"""WorktreeCreate / WorktreeRemove (session checkouts).

WorktreeCreate must fail loud: a checkout it cannot make exits non-zero with one line on
stderr, and Claude aborts the creation. Its stdout's last line is the absolute path.
"""

from __future__ import annotations

from hooks.output import fail_loud, worktree_path


def handle(payload: dict[str, object]) -> int:
    if payload.get("hook_event_name") == "WorktreeCreate":
        return create(payload)
    return remove(payload)


def create(payload: dict[str, object]) -> int:
    from app.core.checkouts import CheckoutError, create_checkout

    cwd = payload.get("cwd")
    name = payload.get("name")
    session_id = payload.get("session_id")
    if not isinstance(cwd, str) or not cwd:
        return fail_loud("claudetto: WorktreeCreate without cwd; no checkout made")
    if not isinstance(name, str):
        return fail_loud("claudetto: WorktreeCreate without a name; no checkout made")
    try:
        checkout = create_checkout(cwd, name, session_id if isinstance(session_id, str) and session_id else None)
    except CheckoutError as exc:
        return fail_loud(str(exc))
    worktree_path(checkout.path)
    return 0


def remove(payload: dict[str, object]) -> int:
    from app.core.log import log

    path = payload.get("worktree_path")
    if not isinstance(path, str) or not path:
        log("hook: WorktreeRemove without worktree_path; nothing done")
        return 0
    from app.core.checkouts import remove_registered

    remove_registered(path, payload)
    return 0
