"""WorktreeCreate / WorktreeRemove (session checkouts): the two events whose exit code Claude
acts on (CLAUDE_CODE_FACTS "Hook output").

WorktreeCreate must fail loud: a checkout it cannot make exits 1 with one line on stderr,
and Claude aborts the creation. Its stdout's last line is the absolute path. The checkout is
recorded with the session that asked and the Claude process behind it.
WorktreeRemove: exit 0 tells Claude the folder is gone (it then says so and skips its own
removal), so it exits 0 only when the folder is really gone, also when it was gone before.
Whenever the folder is still there (kept, unknown, refused by git, or a payload that does
not say which folder) it exits 1 with one line on stderr naming the reason.
"""

from __future__ import annotations

from hooks.output import fail_loud, worktree_path

# What the user reads next to Claude's "kept" for each keep reason.
KEPT_BECAUSE = {
    "unknown": "not a checkout claudetto made",
    "symlink": "a symlink, not a checkout claudetto made",
    "bad_input": "not a usable absolute path",
    "no_project": "its registry entry names no project",
    "live": "another live session works inside it or holds it (it made the checkout or started there, and may "
            "resume into it), or the Claude process that made it still runs",
    "young": "its modification time is in the future",
    "not_a_worktree": "git does not list it as a worktree of its project, or its .git names another entry",
    "dirty": "uncommitted, untracked or git-ignored files inside, or work git status does not show (see the log)",
    "unmerged": "commits that are on no other branch or remote",
    "not_removed": "git did not remove it (locked?)",
    "in_use": ("a running process works in it or holds a file in it (a shell, an editor, a dev server), a mount, "
               "or a link or editable install of yours leads into it (see the log)"),
    "journal": "the removal could not be written to the journal first",
}


def handle(payload: dict[str, object]) -> int:
    if payload.get("hook_event_name") == "WorktreeCreate":
        return create(payload)
    return remove(payload)


def create(payload: dict[str, object]) -> int:
    from app.core.checkouts import create_checkout
    from app.core.claude_process import claude_process
    from app.core.worktree_create import CheckoutError

    cwd = payload.get("cwd")
    name = payload.get("name")
    session_id = payload.get("session_id")
    if not isinstance(cwd, str) or not cwd:
        return fail_loud("claudetto: WorktreeCreate without cwd; no checkout made")
    if not isinstance(name, str):
        return fail_loud("claudetto: WorktreeCreate without a name; no checkout made")
    try:
        checkout = create_checkout(cwd, name, session_id if isinstance(session_id, str) and session_id else None,
                                   claude_process())
    except CheckoutError as exc:
        return fail_loud(str(exc))
    if checkout.kind == "session" and isinstance(session_id, str) and session_id:
        from app.core.reopen import reopen

        reopen(checkout.path, session_id)  # entered again: released again when this session ends
    worktree_path(checkout.path)
    return 0


def remove(payload: dict[str, object]) -> int:
    """Exit 0 when the folder is gone; else 1 and `claudetto: kept <path>: <reason> (<why>)`.

    A payload without a usable `worktree_path` names no folder we could call gone: it is
    answered like a kept one (exit 1), so Claude never reports a removal that did not happen."""
    from app.core.log import log

    path = payload.get("worktree_path")
    if not isinstance(path, str) or not path:
        log("hook: WorktreeRemove without worktree_path; nothing removed")
        return fail_loud("claudetto: kept: WorktreeRemove named no worktree_path (bad_input); nothing removed")
    from app.core.checkouts import claude_of
    from app.core.claude_process import claude_process
    from app.core.worktree_remove import remove_checkout

    session_id = payload.get("session_id")
    session_id = session_id if isinstance(session_id, str) and session_id else None
    # the asking Claude only when it runs this session (not a parent of a `claude -p`)
    done = remove_checkout(path, session_id, claude_of(session_id) if session_id else claude_process())
    if done.gone:
        return 0
    why = done.detail or KEPT_BECAUSE.get(done.reason, done.reason)
    return fail_loud(f"claudetto: kept {path}: {done.reason} ({why})")
