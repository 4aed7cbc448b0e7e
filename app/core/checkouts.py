"""Session checkouts: the worktrees claudetto makes for Claude (WorktreeCreate), and their
registry `checkouts.json`.

WorktreeCreate makes `<repo>/.claude/worktrees/<folder>` on branch `worktree-<folder>` and
registers it with the session that asked for it; the folder is the name with `/` replaced by
`+`, as Claude's own creation names it, and the registry is keyed by that folder's path.
WorktreeRemove removes a registered checkout through the worktree rules and says whether the
folder is gone: Claude takes exit 0 for "gone", so nothing else may report it gone.
SessionEnd marks the ending session in the registry; `/clear` and `/resume` hand the checkout
over, because Claude's process (and its cwd) goes on. Release of the declared scratch at
SessionEnd and reclaim at SessionStart come later.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from app.core import paths
from app.core.state import StateBusy, locked, read_json, update_json, write_json_atomic

# Claude's own rule for a worktree name (its --worktree flag, EnterWorktree, WorktreeCreate):
# at most 64 characters, `/`-separated segments of these characters, none `.`, `..`, `.git`.
NAME_MAX = 64
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
_FORBIDDEN_SEGMENTS = (".", "..", ".git")

#: SessionEnd reasons after which Claude's process goes on (a `/clear`, an interactive
#: `/resume` switch): the session ends, the process and its cwd do not.
HANDOVER_REASONS = frozenset({"clear", "resume"})


class CheckoutError(Exception):
    """A checkout that cannot be made; WorktreeCreate reports it and fails loud."""


@dataclass(frozen=True)
class Checkout:
    path: str
    project: str
    name: str
    branch: str
    kind: str


def name_problem(name: object) -> str | None:
    """Why Claude would refuse `name` as a worktree name, or None when it accepts it."""
    if not isinstance(name, str) or not name:
        return "it is empty"
    if len(name) > NAME_MAX:
        return f"it is longer than {NAME_MAX} characters"
    for segment in name.split("/"):
        if not segment:
            return "it has an empty segment"
        if not _SEGMENT.fullmatch(segment):
            return "only letters, digits, '.', '_', '-' and '/' between segments are allowed"
        if segment in _FORBIDDEN_SEGMENTS:
            return f"a segment may not be {segment!r}"
    return None


def folder_name(name: str) -> str:
    """The checkout's folder (and branch suffix) for a worktree name: `/` becomes `+`, as in
    Claude's own creation (`feature/login` -> `feature+login`)."""
    return name.replace("/", "+")


def checkout_kind(folder: str) -> str:
    """What WorktreeCreate makes, by the folder name Claude chose.

    `agent-a<hex>` (a subagent) is `agent` and `wf_<hex>-<hex>-<n>` / `wf-<n>` (a workflow
    step) is `workflow`: throwaway checkouts that belong to no session. Every other name is
    a `session` checkout on `worktree-<folder>`, held by the session that asked: the user's
    `--worktree NAME`, and also Claude's own `bridge-*` (Remote Control),
    `job-<name>-<8 hex>` (a scheduled job) and `bg-<name>-<8 hex>` (a background session),
    each the checkout a session runs in."""
    from app.core.worktrees import worktree_kind

    return worktree_kind(folder, f"worktree-{folder}")


def _git(repo: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)


def _listed_worktrees(repo: str) -> set[str]:
    """Real paths of the worktrees `git worktree list` names for `repo`."""
    result = _git(repo, "worktree", "list", "--porcelain", "-z")
    if result.returncode != 0:
        return set()
    return {os.path.realpath(item[len("worktree "):]) for item in result.stdout.split("\0")
            if item.startswith("worktree ")}


def create_checkout(cwd: str, name: str, session_id: str | None) -> Checkout:
    """Make (or find again) the checkout `name` of the repository that holds `cwd`."""
    problem = name_problem(name)
    if problem is not None:
        raise CheckoutError(f"claudetto: invalid worktree name {name!r}: {problem}")
    folder = folder_name(name)
    kind = checkout_kind(folder)
    if kind == "session" and not session_id:
        raise CheckoutError("claudetto: a session checkout needs session_id; none was sent")
    repo = paths.main_repo_root(cwd) if cwd else None
    if repo is None:
        raise CheckoutError(f"claudetto: {cwd!r} is not inside a git repository")
    target = repo / ".claude" / "worktrees" / folder
    branch = f"worktree-{folder}"
    if "\n" in str(target) or "\r" in str(target):
        raise CheckoutError("claudetto: the repository path holds a newline; Claude could not read the checkout's path")
    if any(os.path.islink(p) for p in (repo / ".claude", target.parent, target)):
        raise CheckoutError(f"claudetto: {target} is reached through a symlink; no checkout made")
    if (target / ".git").exists():
        if os.path.realpath(target) not in _listed_worktrees(str(repo)):
            raise CheckoutError(f"claudetto: {target} has a .git but git does not list it as a worktree; not touched")
    else:
        if os.path.lexists(target):
            raise CheckoutError(f"claudetto: {target} exists and is not a worktree; not touched")
        target.parent.mkdir(parents=True, exist_ok=True)
        has_branch = _git(str(repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0
        args = ["worktree", "add", str(target), branch] if has_branch else ["worktree", "add", "-b", branch, str(target), "HEAD"]
        result = _git(str(repo), *args)
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise CheckoutError(f"claudetto: git worktree add failed: {detail[-1] if detail else result.returncode}")
    checkout = Checkout(str(target), str(repo), folder, branch, kind)
    register(checkout, session_id)
    return checkout


def register(checkout: Checkout, session_id: str | None) -> None:
    def change(data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("checkouts"), dict):
            data = {"checkouts": {}}
        entry = data["checkouts"].get(checkout.path)
        if not isinstance(entry, dict):
            entry = {"project": checkout.project, "name": checkout.name, "branch": checkout.branch,
                     "kind": checkout.kind, "created": time.time(), "state": "active", "sessions": {}}
        if session_id:
            sessions = entry.setdefault("sessions", {})
            if isinstance(sessions, dict):
                sessions[session_id] = True
        entry["state"] = "active"
        data["checkouts"][checkout.path] = entry
        return data

    update_json(paths.checkouts_file(), change, lambda: {"checkouts": {}})


def registry() -> dict[str, dict[str, Any]]:
    data = read_json(paths.checkouts_file(), lambda: {"checkouts": {}})
    checkouts = data.get("checkouts") if isinstance(data, dict) else None
    return {k: v for k, v in checkouts.items() if isinstance(v, dict)} if isinstance(checkouts, dict) else {}


def unregister(path: str) -> None:
    def change(data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("checkouts"), dict):
            data["checkouts"].pop(path, None)
            return data
        return {"checkouts": {}}

    update_json(paths.checkouts_file(), change, lambda: {"checkouts": {}})


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


def folder_gone(path: str) -> bool | None:
    """True when nothing is at `path`, False when something is, None when it cannot be told
    (a parent we may not search): only a sure "gone" may be reported gone."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return None
    return False


def remove_checkout(path: str, session_id: str | None) -> CheckoutRemoval:
    """WorktreeRemove: remove a checkout claudetto registered, through the worktree rules.

    Claude asks now, so the age condition does not apply; every other one does (no other live
    session inside, a real worktree, clean including git-ignored files, no unmerged commit),
    and git itself must agree (no --force). A path that is already gone is reported gone and
    forgotten; anything else that is still there is kept, with the reason logged."""
    from app.core.log import log

    def kept(reason: str, detail: str | None = None) -> CheckoutRemoval:
        log(f"hook: WorktreeRemove {path}: kept ({reason}{': ' + detail if detail else ''})")
        return CheckoutRemoval(path, False, reason, detail)

    if "\0" in path or not os.path.isabs(path):
        return kept("bad_input")
    entries = registry()
    real = os.path.realpath(path)
    key = real if real in entries else path if path in entries else None
    there = folder_gone(path)
    if there is None:
        return kept("not_removed", "cannot look at it (permissions)")
    if there:
        if key is not None:
            _forget(key, entries[key])
        log(f"hook: WorktreeRemove {path}: already gone")
        return CheckoutRemoval(path, True, "missing")
    if os.path.islink(path):
        return kept("symlink")
    if key is None:
        return kept("unknown")
    project = entries[key].get("project")
    if not isinstance(project, str):
        return kept("no_project")
    from app.core.sessions import live_sessions
    from app.core.worktrees import remove_worktree

    others = [os.path.realpath(s.cwd) for s in live_sessions() if s.cwd and s.session_id != session_id]
    result = remove_worktree(real, project, live_cwds=others, period_s=0, session=session_id)
    if folder_gone(path) is not True:
        if result.status == "kept":
            return kept(result.verdict.reason)
        return kept("not_removed", result.error or (None if result.status == "removed" else result.status))
    unregister(key)
    log(f"hook: WorktreeRemove {path}: removed ({result.bytes} bytes)")
    return CheckoutRemoval(path, True, "removed")


def _forget(key: str, entry: dict[str, Any]) -> None:
    """A registered checkout whose folder went without us (Claude's own sweep, a user's rm):
    drop it from the registry and let git forget the worktree too."""
    unregister(key)
    project = entry.get("project")
    if isinstance(project, str) and os.path.isdir(project):
        from app.core.worktrees import prune_worktrees

        prune_worktrees(project)


def process_goes_on(reason: object) -> bool:
    """Whether Claude's process keeps running after a SessionEnd with this `reason`: then its
    cwd is still in use and what it holds is handed over, not released."""
    return reason in HANDOVER_REASONS


def session_ended(session_id: str, reason: object, *, wait_s: float = 0.5) -> list[str]:
    """SessionEnd: mark `session_id` in every checkout it holds. A hand-over (`clear`,
    `resume`) leaves it holding the checkout, noted as handed over, since the same process
    goes on in the same folder; any other reason marks it ended. Returns the checkouts that
    no session holds any more (a later release step frees their scratch).

    Runs inside the SessionEnd hook, so the lock is waited for briefly, once: a busy
    registry is logged and left as it is (an ended session still counts as gone once its
    process is, since liveness comes from Claude's sessions files, not from here)."""
    from app.core.log import log

    name = paths.checkouts_file()
    if not os.path.exists(name):
        return []
    handover = process_goes_on(reason)
    orphaned: list[str] = []
    try:
        with locked(name, wait_s=wait_s):
            data = read_json(name, lambda: {"checkouts": {}})
            checkouts = data.get("checkouts") if isinstance(data, dict) else None
            if not isinstance(checkouts, dict):
                return []
            touched = False
            for path, entry in checkouts.items():
                sessions = entry.get("sessions") if isinstance(entry, dict) else None
                if not isinstance(sessions, dict) or session_id not in sessions:
                    continue
                touched = True
                if handover:
                    sessions[session_id] = True
                    entry["handover"] = {"session": session_id, "reason": reason, "time": time.time()}
                    log(f"checkouts: {path}: handed over by {session_id} ({reason}); the process goes on")
                    continue
                sessions[session_id] = False
                handed = entry.get("handover")
                if isinstance(handed, dict) and handed.get("session") == session_id:
                    del entry["handover"]  # that hand-over is over: the process itself ended
                if not any(held is True for held in sessions.values()):
                    orphaned.append(path)
                log(f"checkouts: {path}: session {session_id} ended ({reason})")
            if touched:
                write_json_atomic(name, data)
    except StateBusy:
        log(f"checkouts: registry busy at SessionEnd of {session_id}; not marked")
    return orphaned
