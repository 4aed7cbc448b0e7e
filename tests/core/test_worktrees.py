"""THE worktree rules, on a real git repo with real linked worktrees in every state."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.core import sessions, worktrees
from app.core.sessions import proc_start_time
from app.core.verdict import Verdict
from tests.support import SandboxEnv, git, make_repo, set_mtime

DAY = 86400.0
PERIOD = 30 * DAY
OLD = PERIOD + 3600
GITIGNORE = ".env\nnode_modules/\n__pycache__/\n"


def add_worktree(repo: Path, name: str, *, branch: str | None = None) -> Path:
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", branch or f"worktree-{name}", str(path))
    return path


def age(path: Path, seconds: float = OLD) -> Path:
    set_mtime(path, seconds)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "hello\n", ".gitignore": GITIGNORE})


def judge(path: Path, repo: Path, cwds: list[str] | None = None) -> Verdict:
    return worktrees.judge_worktree(path, repo, live_cwds=cwds or [], period_s=PERIOD)


def test_clean_merged_old_worktree_is_removable(repo: Path) -> None:
    wt = age(add_worktree(repo, "done"))
    v = judge(wt, repo)
    assert (v.action, v.reason, v.kind, v.rule) == ("remove", "age", "worktree", "worktree")
    assert v.root == str(repo / ".claude" / "worktrees")
    assert v.project == str(repo)


def test_each_state_gets_its_reason(repo: Path) -> None:
    young = add_worktree(repo, "young")
    live = add_worktree(repo, "live")
    (live / "src").mkdir()
    age(live)
    plain = repo / ".claude" / "worktrees" / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine\n")
    age(plain)
    modified = add_worktree(repo, "modified")
    (modified / "README.md").write_text("changed\n")
    age(modified)
    untracked = add_worktree(repo, "untracked")
    (untracked / "new.txt").write_text("new\n")
    age(untracked)
    env = add_worktree(repo, "env")
    (env / ".env").write_text("SECRET=1\n")
    age(env)
    regen = add_worktree(repo, "regen")
    (regen / "node_modules" / "pkg").mkdir(parents=True)
    (regen / "node_modules" / "pkg" / "index.js").write_text("x\n")
    (regen / "src" / "__pycache__").mkdir(parents=True)
    (regen / "src" / "__pycache__" / "m.pyc").write_bytes(b"\0")
    age(regen)
    unmerged = add_worktree(repo, "unmerged")
    (unmerged / "work.txt").write_text("work\n")
    git(unmerged, "add", "work.txt")
    git(unmerged, "commit", "-q", "-m", "only here")
    age(unmerged)
    locked = add_worktree(repo, "locked")
    git(repo, "worktree", "lock", str(locked))
    age(locked)

    cwds = [os.path.realpath(live / "src")]
    got = {p.name: judge(p, repo, cwds).reason for p in worktrees.list_worktrees(repo)}
    assert got == {
        "young": "young",
        "live": "live",
        "plain": "not_a_worktree",
        "modified": "dirty",
        "untracked": "dirty",
        "env": "dirty",
        "regen": "age",
        "unmerged": "unmerged",
        "locked": "not_removed",
    }
    assert judge(regen, repo, cwds).action == "remove"
    assert judge(young, repo, cwds).action == "keep"


def test_age_bound_both_sides(repo: Path) -> None:
    wt = add_worktree(repo, "edge")
    set_mtime(wt, PERIOD - 60)
    assert judge(wt, repo).reason == "young"
    set_mtime(wt, PERIOD + 60)
    assert judge(wt, repo).reason == "age"


def test_live_session_process_protects_its_worktree(repo: Path, sandbox: SandboxEnv) -> None:
    wt = age(add_worktree(repo, "busy"))
    proc = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId="s-live", cwd=str(wt),
                              procStart=proc_start_time(proc.pid))
        assert judge(wt, repo, sessions.live_cwds()).reason == "live"
    finally:
        proc.kill()
        proc.wait()
    # the process is gone: its file protects nothing
    assert judge(wt, repo, sessions.live_cwds()).reason == "age"


def test_ignored_file_beside_a_regenerable_folder_is_dirty(repo: Path) -> None:
    wt = add_worktree(repo, "mixed")
    (wt / "node_modules").mkdir()
    (wt / "node_modules" / "a.js").write_text("x\n")
    (wt / "sub").mkdir()
    (wt / "sub" / ".env").write_text("K=V\n")
    age(wt)
    assert judge(wt, repo).reason == "dirty"


def test_untracked_regenerable_folder_that_is_not_ignored_does_not_count(tmp_path: Path) -> None:
    """Seed 000: the files in a folder a tool makes again do not count, whether or not the
    project ignores it (a project that never listed build/ in .gitignore); a new file beside
    tracked ones in such a folder still does."""
    repo = make_repo(tmp_path / "p2", files={"README.md": "x\n", "src/build/keep.py": "k\n"})
    wt = add_worktree(repo, "raw")
    (wt / "build").mkdir()
    (wt / "build" / "out.o").write_bytes(b"o")
    age(wt)
    assert judge(wt, repo).reason == "age"
    (wt / "src" / "build" / "new.py").write_text("n\n")
    age(wt)
    assert judge(wt, repo).reason == "dirty"


def test_wholly_ignored_folder_holding_only_regenerable_content_is_clean(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "p3", files={"README.md": "x\n", ".gitignore": "cache/\n"})
    wt = add_worktree(repo, "cachy")
    (wt / "cache" / "dist").mkdir(parents=True)
    (wt / "cache" / "dist" / "bundle.js").write_text("b\n")
    age(wt)
    assert judge(wt, repo).reason == "age"
    (wt / "cache" / "keep.txt").write_text("k\n")
    age(wt)
    assert judge(wt, repo).reason == "dirty"


def test_fake_git_file_and_nested_clone_are_not_worktrees(repo: Path, tmp_path: Path) -> None:
    fake = repo / ".claude" / "worktrees" / "fake"
    fake.mkdir(parents=True)
    (fake / ".git").write_text(f"gitdir: {repo}/.git/worktrees/fake\n")
    age(fake)
    clone = repo / ".claude" / "worktrees" / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    age(clone)
    link = repo / ".claude" / "worktrees" / "link"
    real = age(add_worktree(repo, "real"))
    link.symlink_to(real)
    age(link)
    assert judge(fake, repo).reason == "not_a_worktree"
    assert judge(clone, repo).reason == "not_a_worktree"
    assert judge(link, repo).reason == "not_a_worktree"
    assert judge(real, repo).reason == "age"


def test_commit_on_another_branch_or_a_remote_is_merged(repo: Path, tmp_path: Path) -> None:
    other = add_worktree(repo, "other")
    (other / "a.txt").write_text("a\n")
    git(other, "add", "a.txt")
    git(other, "commit", "-q", "-m", "a")
    git(repo, "branch", "keep-a", "worktree-other")
    age(other)
    assert judge(other, repo).reason == "age"

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    pushed = add_worktree(repo, "pushed")
    (pushed / "b.txt").write_text("b\n")
    git(pushed, "add", "b.txt")
    git(pushed, "commit", "-q", "-m", "b")
    age(pushed)
    assert judge(pushed, repo).reason == "unmerged"
    git(pushed, "push", "-q", "origin", "worktree-pushed")
    age(pushed)
    assert judge(pushed, repo).reason == "age"


def test_detached_worktree(repo: Path) -> None:
    path = repo / ".claude" / "worktrees" / "detached"
    git(repo, "worktree", "add", "-q", "--detach", str(path))
    age(path)
    assert judge(path, repo).reason == "age"
    (path / "c.txt").write_text("c\n")
    git(path, "add", "c.txt")
    git(path, "commit", "-q", "-m", "c")
    age(path)
    assert judge(path, repo).reason == "unmerged"


def test_missing_path(repo: Path) -> None:
    v = judge(repo / ".claude" / "worktrees" / "gone", repo)
    assert v.action == "missing"


def test_worktree_kind() -> None:
    assert worktrees.worktree_kind("agent-a1b2c3d4") == "agent"
    assert worktrees.worktree_kind("agent-a1b2c3d4e5f6a7b8") == "agent"
    assert worktrees.worktree_kind("agent-a1b2c3d") == "agent"  # seed 002: any `agent-*` is a subagent's
    assert worktrees.worktree_kind("agent-xyz1234") == "agent"
    assert worktrees.worktree_kind("agentx") == "manual"
    assert worktrees.worktree_kind("wf_ab12-cd34-3") == "workflow"
    assert worktrees.worktree_kind("wf-12") == "workflow"
    # Claude's other throwaway checkouts: made for no session
    assert worktrees.worktree_kind("bridge-x", "worktree-bridge-x", None) == "workflow"  # made for no session
    assert worktrees.worktree_kind("job-nightly-1a2b3c4d", "worktree-job-nightly-1a2b3c4d") == "session"
    assert worktrees.worktree_kind("bg-fix-1a2b3c4d") == "workflow"  # not on Claude's branch
    assert worktrees.worktree_kind("job-7", "worktree-job-7") == "session"  # not Claude's job-<name>-<8 hex>
    assert worktrees.worktree_kind("bold-oak-a3f2", "worktree-bold-oak-a3f2") == "session"
    assert worktrees.worktree_kind("bold-oak-a3f2", "feature") == "manual"
    assert worktrees.worktree_kind("bold-oak-a3f2") == "manual"


def test_list_worktrees_of_a_project_without_any(tmp_path: Path) -> None:
    assert worktrees.list_worktrees(tmp_path / "nothing") == []


def _journal_lines(sandbox: SandboxEnv) -> list[dict[str, object]]:
    path = sandbox.state / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def branches(repo: Path) -> set[str]:
    return set(git(repo, "branch", "--format=%(refname:short)").split())


def test_remove_worktree_removes_deletes_branch_and_journals(repo: Path, sandbox: SandboxEnv) -> None:
    wt = add_worktree(repo, "done")
    (wt / "node_modules").mkdir()
    (wt / "node_modules" / "big.js").write_bytes(b"x" * 10000)
    age(wt)
    result = worktrees.remove_worktree(wt, repo, live_cwds=[], period_s=PERIOD)
    assert result.status == "removed"
    assert not wt.exists()
    assert result.branch == "worktree-done" and result.branch_deleted
    assert "worktree-done" not in branches(repo)
    assert result.files == 4  # .git, README.md, .gitignore, node_modules/big.js
    assert result.bytes >= 10000
    assert str(wt) not in git(repo, "worktree", "list")
    lines = _journal_lines(sandbox)
    assert len(lines) == 1
    assert lines[0]["path"] == os.path.realpath(wt)
    assert lines[0]["kind"] == "worktree" and lines[0]["result"] == "removed"
    assert lines[0]["bytes"] == result.bytes
    for key in ("time", "path", "kind", "bytes", "rule", "session", "result"):
        assert key in lines[0]


def test_remove_worktree_dry_run_changes_nothing(repo: Path, sandbox: SandboxEnv) -> None:
    wt = age(add_worktree(repo, "dry"))
    result = worktrees.remove_worktree(wt, repo, live_cwds=[], period_s=PERIOD, dry_run=True)
    assert result.status == "dry_run"
    assert result.files == 3  # .git, README.md, .gitignore
    assert wt.exists() and "worktree-dry" in branches(repo)
    assert _journal_lines(sandbox) == []


def test_remove_keeps_a_branch_that_is_not_worktree_star(repo: Path) -> None:
    wt = age(add_worktree(repo, "feat", branch="feature-x"))
    result = worktrees.remove_worktree(wt, repo, live_cwds=[], period_s=PERIOD)
    assert result.status == "removed" and not result.branch_deleted
    assert "feature-x" in branches(repo)


def test_remove_rechecks_the_conditions(repo: Path, sandbox: SandboxEnv) -> None:
    wt = age(add_worktree(repo, "late"))
    assert judge(wt, repo).action == "remove"
    (wt / "late.txt").write_text("written after the plan\n")
    age(wt)
    result = worktrees.remove_worktree(wt, repo, live_cwds=[], period_s=PERIOD)
    assert (result.status, result.verdict.reason) == ("kept", "dirty")
    assert wt.exists() and _journal_lines(sandbox) == []


def test_locked_worktree_is_never_removed(repo: Path) -> None:
    wt = add_worktree(repo, "locked")
    git(repo, "worktree", "lock", str(wt))
    age(wt)
    result = worktrees.remove_worktree(wt, repo, live_cwds=[], period_s=PERIOD)
    assert (result.status, result.verdict.reason) == ("kept", "not_removed")
    assert wt.exists() and "worktree-locked" in branches(repo)


def test_a_clean_submodule_in_a_worktree_goes_with_it(tmp_path: Path, sandbox: SandboxEnv) -> None:
    """git itself refuses a worktree holding a submodule; claudetto removes through its own
    core and judges the submodule as a repository: nothing of it is lost, so it goes (a
    submodule with its own work is kept: tests/core/test_worktree_safety.py)."""
    lib = make_repo(tmp_path / "lib")
    repo = make_repo(tmp_path / "withsub")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(repo, "commit", "-q", "-m", "submodule")
    wt = add_worktree(repo, "sub")
    git(wt, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
    age(wt)
    assert judge(wt, repo).action == "remove"
    result = worktrees.remove_worktree(wt, repo, live_cwds=[], period_s=PERIOD)
    assert result.status == "removed" and not wt.exists()
    assert [line["result"] for line in _journal_lines(sandbox)] == ["removed"]


def test_branch_whose_commits_are_on_another_branch_is_deleted(repo: Path) -> None:
    wt = add_worktree(repo, "side")
    (wt / "s.txt").write_text("s\n")
    git(wt, "add", "s.txt")
    git(wt, "commit", "-q", "-m", "side work")
    tip = git(wt, "rev-parse", "HEAD")
    git(repo, "branch", "keep-side", "worktree-side")  # not merged into main: -d alone refuses
    age(wt)
    result = worktrees.remove_worktree(wt, repo, live_cwds=[], period_s=PERIOD)
    assert result.status == "removed" and result.branch_deleted
    assert "worktree-side" not in branches(repo)
    assert git(repo, "rev-parse", "keep-side") == tip  # the commit is still on a branch


def test_describe_takes_state_and_sessions_from_the_registry(repo: Path) -> None:
    from app.core import checkouts

    wt = add_worktree(repo, "bold-oak-a3f2")
    plain = add_worktree(repo, "agent-a0123456789")
    checkouts.register(checkouts.Checkout(str(wt), str(repo), wt.name, "worktree-bold-oak-a3f2", "session"), "s-1")
    rows = {w.name: w for w in worktrees.describe_worktrees([repo], live_cwds=[], live_ids={"s-1"})}
    assert (rows[wt.name].state, rows[wt.name].sessions, rows[wt.name].kind) == ("active", {"s-1": True}, "session")
    assert (rows[plain.name].state, rows[plain.name].sessions, rows[plain.name].kind) == ("unmanaged", {}, "agent")
    # s-1 holds it by the registry (no sessions files here to say otherwise): live
    assert rows[wt.name].reason == "live" and not rows[wt.name].removable
    assert rows[wt.name].size > 0 and rows[wt.name].branch == "worktree-bold-oak-a3f2"


def test_an_edit_hidden_by_skip_worktree_or_assume_unchanged_counts_as_dirty(repo: Path) -> None:
    for flag in ("--skip-worktree", "--assume-unchanged"):
        wt = add_worktree(repo, flag.strip("-"))
        (wt / "README.md").write_text("an edit git status will not show\n")
        git(wt, "update-index", flag, "README.md")
        assert git(wt, "status", "--porcelain") == ""  # invisible to status
        assert worktrees.is_dirty(wt) is True
