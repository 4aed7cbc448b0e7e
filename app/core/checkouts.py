"""Session checkouts: the worktrees claudetto makes for Claude (WorktreeCreate), and their
registry `checkouts.json`.

This is the part of seed 002 the hook contract needs today: WorktreeCreate makes
`<repo>/.claude/worktrees/<name>` on branch `worktree-<name>` and registers it, with the
session that asked for it. Release at SessionEnd and reclaim at SessionStart come later.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from app.core import paths
from app.core.state import read_json, update_json

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class CheckoutError(Exception):
    """A checkout that cannot be made; WorktreeCreate reports it and fails loud."""


@dataclass(frozen=True)
class Checkout:
    path: str
    project: str
    name: str
    branch: str
    kind: str


def checkout_kind(name: str) -> str:
    """What WorktreeCreate makes: agent, workflow, else a session's checkout (on `worktree-<name>`)."""
    from app.core.worktrees import worktree_kind

    return worktree_kind(name, f"worktree-{name}")


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
    if not isinstance(name, str) or not _SAFE_NAME.match(name) or name in (".", ".."):
        raise CheckoutError(f"claudetto: invalid worktree name {name!r}")
    kind = checkout_kind(name)
    if kind == "session" and not session_id:
        raise CheckoutError("claudetto: a session checkout needs session_id; none was sent")
    repo = paths.main_repo_root(cwd) if cwd else None
    if repo is None:
        raise CheckoutError(f"claudetto: {cwd!r} is not inside a git repository")
    target = repo / ".claude" / "worktrees" / name
    branch = f"worktree-{name}"
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
    checkout = Checkout(str(target), str(repo), name, branch, kind)
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


def remove_registered(path: str, payload: dict[str, object]) -> str:
    """WorktreeRemove: remove a checkout claudetto registered, through the worktree rules.

    Claude asks now, so the age condition does not apply; every other one does (no other live
    session inside, a real worktree, clean including git-ignored files, no unmerged commit),
    and git itself must agree (no --force). Anything else is kept and the reason logged.
    Returns the status: removed, kept, refused, unregistered.
    """
    from app.core.log import log
    from app.core.sessions import live_sessions
    from app.core.worktrees import remove_worktree

    real = os.path.realpath(path)
    entries = registry()
    key = real if real in entries else path if path in entries else None
    if key is None:
        log(f"hook: WorktreeRemove {path}: not a checkout claudetto made; kept")
        return "unregistered"
    project = entries[key].get("project")
    if not isinstance(project, str):
        log(f"hook: WorktreeRemove {path}: registry entry has no project; kept")
        return "kept"
    current = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    others = [os.path.realpath(s.cwd) for s in live_sessions() if s.cwd and s.session_id != current]
    result = remove_worktree(real, project, live_cwds=others, period_s=0,
                             session=current if isinstance(current, str) else None)
    if result.status == "removed":
        unregister(key)
        log(f"hook: WorktreeRemove {path}: removed ({result.bytes} bytes)")
        return "removed"
    reason = result.verdict.reason if result.status == "kept" else (result.error or result.status)
    log(f"hook: WorktreeRemove {path}: kept ({reason})")
    return result.status
