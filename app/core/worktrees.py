"""THE worktree rules: when a `<project>/.claude/worktrees/*` checkout may go, and how it goes.

The session-start cleanup, `claudetto worktrees`, checkout releases and the dashboard all
judge a worktree here. A worktree goes (with `git worktree remove`, never `--force`) only when
all five conditions hold; otherwise it is kept with the first reason that fails:

- `live`: a live session's cwd is inside it;
- `young`: it is not older than `cleanupPeriodDays` (its own modification time);
- `not_a_worktree`: git does not list it as a linked worktree of the project;
- `dirty`: a changed or untracked file anywhere, or a git-ignored file outside the
  regenerable folders (`git worktree remove` deletes ignored files such as `.env` silently);
- `unmerged`: a commit that is on no other branch and no remote;
- `not_removed`: all five hold but git refuses, or the worktree is locked.

GitPython is imported inside the functions only: this module must stay cheap to import.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.verdict import Verdict

REGENERABLE = frozenset({"node_modules", ".venv", "__pycache__", "dist", "build", "target", ".next", "coverage"})

KEEP_REASONS = ("live", "young", "not_a_worktree", "dirty", "unmerged", "not_removed")
REMOVABLE_REASON = "age"
RULE = "worktree"

_AGENT = re.compile(r"^agent-a[0-9a-f]{7,}$")
# bridge-* (remote control) and job-* are session checkouts: seed 002 names only agent-* and wf_*
# as the checkouts that are not a session's.
_WORKFLOW = re.compile(r"^(wf_[0-9a-f]+-[0-9a-f]+-\d+|wf-\d+)$")
_BRANCH_PREFIX = "worktree-"


@dataclass(frozen=True)
class GitWorktree:
    """One entry of `git worktree list --porcelain` (a linked worktree git knows)."""

    path: str  # real path
    head: str | None
    branch: str | None  # short name (`worktree-foo`), None when detached
    locked: bool
    prunable: bool


def worktrees_dir(project: str | os.PathLike[str]) -> Path:
    return Path(project) / ".claude" / "worktrees"


def list_worktrees(project: str | os.PathLike[str]) -> list[Path]:
    """Every entry of `<project>/.claude/worktrees/`, sorted by name (none when it is missing)."""
    folder = worktrees_dir(project)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / name for name in names]


def worktree_kind(name: str, branch: str | None = None) -> str:
    """`agent` (`agent-a<hex>`), `workflow` (`wf_<hex>-<hex>-<n>`, `wf-<n>`), `session`
    (Claude's `--worktree NAME`, `bridge-*`, `job-*`: on branch `worktree-NAME`), else `manual`."""
    if _AGENT.match(name):
        return "agent"
    if _WORKFLOW.match(name):
        return "workflow"
    if branch is not None and branch == f"{_BRANCH_PREFIX}{name}":
        return "session"
    return "manual"


def _git(cwd: str | os.PathLike[str]) -> Any:
    from git import Git

    return Git(os.fspath(cwd))


def _run(cwd: str | os.PathLike[str], *args: str) -> str:
    """One git command through GitPython; raises GitCommandError when git fails."""
    out = _git(cwd).execute(["git", *args], strip_newline_in_stdout=False)
    return out if isinstance(out, str) else str(out)


def git_worktrees(project: str | os.PathLike[str]) -> dict[str, GitWorktree]:
    """The linked worktrees git lists for `project`, keyed by real path (empty when git fails)."""
    from git import GitCommandError

    try:
        text = _run(project, "worktree", "list", "--porcelain")
    except (GitCommandError, OSError):
        return {}
    found: dict[str, GitWorktree] = {}
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            fields[key] = value
        if "worktree" not in fields or "bare" in fields:
            continue
        branch = fields.get("branch")
        if branch is not None and branch.startswith("refs/heads/"):
            branch = branch[len("refs/heads/"):]
        real = os.path.realpath(fields["worktree"])
        found[real] = GitWorktree(
            path=real,
            head=fields.get("HEAD"),
            branch=branch,
            locked="locked" in fields,
            prunable="prunable" in fields,
        )
    return found


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def _ignored_ok(worktree: str, entry: str) -> bool:
    """Whether one git-ignored entry (`!!` of git status) lies inside a regenerable folder.

    A wholly ignored folder that is not itself regenerable is walked: it is fine only when
    every file in it lies inside a regenerable folder."""
    parts = [p for p in entry.rstrip("/").split("/") if p]
    if not parts:
        return False
    if any(p in REGENERABLE for p in parts[:-1]):
        return True
    full = os.path.join(worktree, *parts)
    if parts[-1] in REGENERABLE and (os.path.isdir(full) or os.path.islink(full)):
        return True
    if os.path.islink(full) or not os.path.isdir(full):
        return False
    for top, dirs, files in os.walk(full):
        if files:
            return False
        dirs[:] = [d for d in dirs if d not in REGENERABLE]
        # os.walk lists symlinks to folders among dirs but never enters them: content.
        if any(os.path.islink(os.path.join(top, d)) for d in dirs):
            return False
    return True


def is_dirty(worktree: str | os.PathLike[str]) -> bool:
    """A changed or untracked file anywhere, or an ignored one outside the regenerable folders.

    Raises GitCommandError when git cannot read the worktree."""
    path = os.fspath(worktree)
    out = _run(
        path, "--no-optional-locks", "status", "--porcelain=v1", "-z",
        "--ignored=traditional", "--untracked-files=normal",
    )
    items = out.split("\0")
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if len(item) < 4:
            continue
        code, entry = item[:2], item[3:]
        if code[0] in "RC":
            i += 1  # a rename's source path follows
        if code != "!!":
            return True
        if not _ignored_ok(path, entry):
            return True
    return _hidden_from_status(path)


def _hidden_from_status(path: str) -> bool:
    """Whether some tracked file is marked skip-worktree or assume-unchanged: `git status`
    does not look at such a file, so an edit in it would be invisible and lost. When unsure,
    keep: such a worktree counts as dirty."""
    listing = _run(path, "ls-files", "-v", "-z")
    return any(item[:1] == "S" or item[:1].islower() for item in listing.split("\0") if item)


def unmerged_commit(cwd: str | os.PathLike[str], rev: str, own_branch: str | None) -> bool:
    """Whether `rev` has a commit on no branch but `own_branch` and on no remote.

    A failure of git counts as unmerged: when unsure, keep."""
    from git import GitCommandError

    args = ["rev-list", "--max-count=1", rev, "--not"]
    if own_branch:
        args.append(f"--exclude={own_branch}")
    args += ["--branches", "--remotes"]
    try:
        return bool(_run(cwd, *args).strip())
    except (GitCommandError, OSError):
        return True


def _locked(dot_git: str) -> bool:
    """Whether the worktree whose `.git` file is `dot_git` is locked (`<gitdir>/locked`)."""
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as fh:
            text = fh.read(4096).strip()
    except OSError:
        return False
    if not text.startswith("gitdir:"):
        return False
    gitdir = text[len("gitdir:"):].strip()
    if not os.path.isabs(gitdir):
        gitdir = os.path.join(os.path.dirname(dot_git), gitdir)
    return os.path.exists(os.path.join(gitdir, "locked"))


def unsaved_work(path: str | os.PathLike[str]) -> str | None:
    """For a folder that is a linked git worktree (a `.git` file), whether removing it would
    lose work: `dirty` (changed, untracked, or ignored outside the regenerable folders),
    `unmerged` (a commit on no other branch or remote) or `not_removed` (locked); None when
    nothing would be lost or it is no worktree. Git failing on a worktree counts as dirty: when unsure, keep.

    The output GC asks this of every recorded path before removing it, so a worktree that a
    Bash command made is never deleted with uncommitted work inside, however old it is."""
    from git import GitCommandError

    folder = os.fspath(path)
    dot_git = os.path.join(folder, ".git")
    if os.path.islink(folder) or os.path.islink(dot_git) or not os.path.isfile(dot_git):
        return None
    if _locked(dot_git):  # someone locked it (`git worktree lock`): it stays, as in `clean`
        return "not_removed"
    try:
        if is_dirty(folder):
            return "dirty"
        head = _run(folder, "rev-parse", "--abbrev-ref", "HEAD").strip()
    except (GitCommandError, OSError):
        return "dirty"
    own = head if head and head != "HEAD" else None
    return "unmerged" if unmerged_commit(folder, "HEAD", own) else None


def judge_worktree(
    path: str | os.PathLike[str],
    project: str | os.PathLike[str],
    *,
    live_cwds: Iterable[str],
    period_s: float,
    now: float | None = None,
    listing: dict[str, GitWorktree] | None = None,
) -> Verdict:
    """THE verdict on one `.claude/worktrees/*` entry: `remove` with reason `age`, or `keep`
    with the first failing condition (live, young, not_a_worktree, dirty, unmerged,
    not_removed for a locked one). `live_cwds` are real paths (sessions.live_cwds);
    `listing` (git_worktrees(project)) may be passed in to save a git call per worktree."""
    from git import GitCommandError

    p = Path(path)
    now = time.time() if now is None else now

    def verdict(action: str, reason: str, mtime: float | None = None) -> Verdict:
        return Verdict(
            path=str(p), kind="worktree", action=action, reason=reason,  # type: ignore[arg-type]
            rule=RULE, root=str(worktrees_dir(project)), mtime=mtime, project=str(project),
        )

    try:
        st = os.lstat(p)
    except OSError:
        return verdict("missing", "missing")
    real = os.path.realpath(p)
    if any(_inside(os.path.realpath(c), real) for c in live_cwds if c):
        return verdict("keep", "live", st.st_mtime)
    if now - st.st_mtime <= period_s:
        return verdict("keep", "young", st.st_mtime)
    import stat as stat_mod

    if not stat_mod.S_ISDIR(st.st_mode) or not os.path.isfile(p / ".git") or os.path.islink(p / ".git"):
        return verdict("keep", "not_a_worktree", st.st_mtime)
    known = git_worktrees(project) if listing is None else listing
    entry = known.get(real)
    if entry is None or entry.prunable or real == os.path.realpath(project):
        return verdict("keep", "not_a_worktree", st.st_mtime)
    try:
        dirty = is_dirty(real)
    except (GitCommandError, OSError):
        return verdict("keep", "not_a_worktree", st.st_mtime)
    if dirty:
        return verdict("keep", "dirty", st.st_mtime)
    if unmerged_commit(real, "HEAD", entry.branch):  # an unborn HEAD fails: kept as unmerged
        return verdict("keep", "unmerged", st.st_mtime)
    if entry.locked:
        return verdict("keep", "not_removed", st.st_mtime)
    return verdict("remove", REMOVABLE_REASON, st.st_mtime)


@dataclass(frozen=True)
class WorktreeRemoval:
    """What `remove_worktree` did: `removed`, `kept` (a condition failed on the re-check:
    `verdict.reason` says which), `refused` (git said no: not_removed), `dry_run`, or
    `timeout` (the budget ran out while measuring: nothing was touched)."""

    path: str
    status: str
    verdict: Verdict
    bytes: int = 0
    files: int = 0
    branch: str | None = None
    branch_deleted: bool = False
    error: str | None = None


def remove_worktree(
    path: str | os.PathLike[str],
    project: str | os.PathLike[str],
    *,
    live_cwds: Iterable[str],
    period_s: float,
    dry_run: bool = False,
    budget_s: float | None = None,
    session: str | None = None,
    listing: dict[str, GitWorktree] | None = None,
    prune: bool = True,
) -> WorktreeRemoval:
    """Re-check the five conditions, then `git worktree remove` (no --force), delete its
    `worktree-*` branch when every commit of it is on another branch or a remote, prune,
    and write one journal line. Sizes are measured before, so the freed bytes are right.

    `listing` (git_worktrees) may be shared by a sweep of one project: git itself refuses a
    worktree locked since. `prune=False` leaves `git worktree prune` to the caller (once per
    project). When `budget_s` runs out while measuring, nothing is touched: status `timeout`."""
    from git import GitCommandError

    from app.core import journal, scanner

    cwds = list(live_cwds)
    listing = git_worktrees(project) if listing is None else listing
    verdict = judge_worktree(path, project, live_cwds=cwds, period_s=period_s, listing=listing)
    if verdict.action != "remove":
        return WorktreeRemoval(path=str(path), status="kept", verdict=verdict)
    real = os.path.realpath(path)
    branch = listing[real].branch if real in listing else None
    size = scanner.scan(real, budget_s=budget_s)
    if size.partial:
        return WorktreeRemoval(str(path), "timeout", _replace(verdict, action="skip", reason="timeout"))
    measured = _replace(verdict, size=size.disk)
    if dry_run:
        return WorktreeRemoval(str(path), "dry_run", measured, size.disk, size.files, branch)
    try:
        _git(project).worktree("remove", real)
    except (GitCommandError, OSError) as exc:
        error = _one_line(exc)
        _journal(journal, real, _freed(real, size.disk), session, "refused", error)
        kept = _replace(measured, action="keep", reason="not_removed")
        return WorktreeRemoval(str(path), "refused", kept, 0, 0, branch, error=error)
    freed = _freed(real, size.disk)
    _journal(journal, real, freed, session, "removed", None)
    deleted = _delete_branch(project, branch)
    if prune:
        prune_worktrees(project)
    return WorktreeRemoval(str(path), "removed", measured, freed, size.files, branch, deleted)


def prune_worktrees(project: str | os.PathLike[str]) -> None:
    """`git worktree prune`: forget worktrees whose folder is gone (errors are ignored)."""
    from git import GitCommandError

    try:
        _git(project).worktree("prune")
    except (GitCommandError, OSError):
        pass


def _replace(verdict: Verdict, **changes: Any) -> Verdict:
    from dataclasses import replace

    return replace(verdict, **changes)


def _freed(path: str, before: int) -> int:
    """Disk bytes that went: all of them when the path is gone, else what a rescan misses."""
    if not os.path.lexists(path):
        return before
    from app.core import scanner

    return max(0, before - scanner.scan(path).disk)


def _delete_branch(project: str | os.PathLike[str], branch: str | None) -> bool:
    """Delete a `worktree-*` branch whose every commit is on another branch or a remote.

    `git branch -d` first (it allows a branch merged into HEAD or its upstream: the common
    case, one git call). When it refuses, the same guarantee is checked against every other
    branch and every remote, and only then `-D`: no commit is left on no branch."""
    from git import GitCommandError

    if not branch or not branch.startswith(_BRANCH_PREFIX):
        return False
    try:
        _git(project).branch("-d", branch)
        return True
    except (GitCommandError, OSError):
        pass
    if unmerged_commit(project, f"refs/heads/{branch}", branch):
        return False
    try:
        _git(project).branch("-D", branch)
    except (GitCommandError, OSError):
        return False
    return True


def _journal(journal: Any, path: str, size: int, session: str | None, result: str, error: str | None) -> None:
    line: dict[str, Any] = {
        "path": path, "kind": "worktree", "bytes": size,
        "rule": RULE, "session": session, "result": result,
    }
    if error:
        line["reason"] = error
    journal.append(line)


def _one_line(exc: BaseException) -> str:
    stderr = getattr(exc, "stderr", None)
    text = stderr if isinstance(stderr, str) and stderr.strip() else str(exc)
    return " ".join(text.split())[:300]


# --- the listing of `claudetto worktrees` and the dashboard ----------------------------------

_STATES = ("active", "released", "cut_short", "unmanaged")
_KINDS = ("session", "agent", "workflow", "manual")


@dataclass(frozen=True)
class WorktreeInfo:
    """One `.claude/worktrees/*` entry with its state and verdict (CONTRACT `worktrees`)."""

    path: str
    project: str
    name: str
    branch: str | None
    size: int
    kind: str
    state: str  # active | released | cut_short (from the checkout registry) | unmanaged
    sessions: dict[str, bool]  # session id -> running, for a registered checkout
    removable: bool
    reason: str
    verdict: Verdict


def describe_worktrees(
    projects: Iterable[str | os.PathLike[str]],
    *,
    live_cwds: Iterable[str],
    live_ids: Iterable[str] = (),
    budget_s: float | None = None,
) -> list[WorktreeInfo]:
    """Every worktree entry of each project, judged (nothing is removed). A checkout the
    registry (`checkouts.json`) knows takes its state and sessions from there."""
    from app.core import scanner, settings

    cwds = list(live_cwds)
    running = set(live_ids)
    registered = _registry()
    deadline = None if budget_s is None else time.monotonic() + budget_s
    found: list[WorktreeInfo] = []
    for project in projects:
        entries = list_worktrees(project)
        if not entries:
            continue
        listing = git_worktrees(project)
        period = settings.cleanup_period_seconds(project)
        for path in entries:
            verdict = judge_worktree(path, project, live_cwds=cwds, period_s=period, listing=listing)
            if verdict.action == "missing":
                continue
            real = os.path.realpath(path)
            branch = listing[real].branch if real in listing else None
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            size = scanner.scan(path, budget_s=left).disk
            entry = registered.get(str(path)) or registered.get(real) or {}
            state = str(entry["state"]) if entry.get("state") in _STATES else "unmanaged"
            kind = str(entry["kind"]) if entry.get("kind") in _KINDS else worktree_kind(path.name, branch)
            ids: dict[Any, Any] = entry["sessions"] if isinstance(entry.get("sessions"), dict) else {}
            found.append(WorktreeInfo(
                path=str(path), project=str(project), name=path.name, branch=branch, size=size,
                kind=kind, state=state if entry else "unmanaged",
                sessions={str(s): s in running for s in ids},
                removable=verdict.action == "remove", reason=verdict.reason, verdict=verdict,
            ))
    return found


def _registry() -> dict[str, dict[str, Any]]:
    """The checkout registry, or nothing when it cannot be read (the listing still works)."""
    try:
        from app.core import checkouts

        return checkouts.registry()
    except Exception:  # noqa: BLE001 - a registry problem must not hide the worktrees
        return {}
