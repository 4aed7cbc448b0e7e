"""A worktree removal never loses work: judged, measured, moved aside, judged once more where
it now is, and only then deleted (or put back). Real worktrees, real sessions, real git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.core import worktrees
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, set_mtime

PERIOD = 30 * 86400.0
OLD = PERIOD + 3600
GITIGNORE = ".env\nnode_modules/\nbuild/\ntarget/\n"
SUB = ("-c", "protocol.file.allow=always")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "hello\n", ".gitignore": GITIGNORE})


def add_worktree(repo: Path, name: str) -> Path:
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(path))
    return path


def old(path: Path) -> Path:
    set_mtime(path, OLD)
    return path


def remove(path: Path, repo: Path, **kwargs: object) -> worktrees.WorktreeRemoval:
    return worktrees.remove_worktree(path, repo, live_cwds=[], period_s=PERIOD, **kwargs)  # type: ignore[arg-type]


def branches(repo: Path) -> set[str]:
    return set(git(repo, "branch", "--format=%(refname:short)").split())


def journal_results(sandbox: SandboxEnv) -> list[str]:
    path = sandbox.state / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line).get("result") for line in path.read_text().splitlines() if line.strip()]


def test_an_ignored_env_written_after_the_judgement_is_kept(repo: Path, sandbox: SandboxEnv) -> None:
    wt = old(add_worktree(repo, "late"))
    assert worktrees.judge_worktree(wt, repo, live_cwds=[], period_s=PERIOD).action == "remove"

    def write_env(target: str) -> None:
        Path(target, ".env").write_text("TOKEN=written between the check and the removal\n")

    result = remove(wt, repo, _before_remove=write_env)
    assert (result.status, result.verdict.action, result.verdict.reason) == ("kept", "keep", "dirty")
    assert (wt / ".env").read_text().startswith("TOKEN=")
    assert (wt / "README.md").exists() and "worktree-late" in branches(repo)
    assert str(wt) in git(repo, "worktree", "list")
    assert git(wt, "status", "--porcelain") == ""  # git itself still sees a healthy worktree
    assert "removed" not in journal_results(sandbox)


def test_a_session_started_inside_after_the_judgement_keeps_it(repo: Path, sandbox: SandboxEnv) -> None:
    wt = old(add_worktree(repo, "busy"))
    (wt / "src").mkdir()
    old(wt)
    proc = subprocess.Popen(["sleep", "60"])
    try:
        def start_session(_target: str) -> None:
            sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId="s-new", cwd=str(wt / "src"),
                                  procStart=proc_start_time(proc.pid))

        result = remove(wt, repo, _before_remove=start_session)
        assert (result.status, result.verdict.reason) == ("kept", "live")
        assert (wt / "src").is_dir()
    finally:
        proc.kill()
        proc.wait()
    # the process is gone: its file protects nothing any more
    result = remove(wt, repo)
    assert result.status == "removed" and not wt.exists()


def test_a_lock_taken_after_the_judgement_keeps_it(repo: Path) -> None:
    wt = old(add_worktree(repo, "locking"))
    result = remove(wt, repo, _before_remove=lambda _t: git(repo, "worktree", "lock", str(wt)))
    assert (result.status, result.verdict.reason) == ("kept", "not_removed")
    assert wt.exists() and "locked" in git(repo, "worktree", "list", "--porcelain")


def test_a_worktree_with_a_relative_git_pointer_is_judged_once_moved(repo: Path) -> None:
    wt = add_worktree(repo, "rel")
    (wt / ".git").write_text("gitdir: ../../../.git/worktrees/rel\n")  # as worktree.useRelativePaths writes it
    old(wt)
    result = remove(wt, repo, _before_remove=lambda t: Path(t, ".env").write_text("K=V\n"))
    assert (result.status, result.verdict.reason) == ("kept", "dirty")
    assert (wt / ".env").exists() and git(wt, "status", "--porcelain") == ""
    (wt / ".env").unlink()
    old(wt)
    result = remove(wt, repo)
    assert result.status == "removed" and not wt.exists()
    assert "worktree-rel" not in branches(repo)


def test_removal_prunes_before_deleting_the_branch_even_when_the_caller_prunes_later(repo: Path,
                                                                                    sandbox: SandboxEnv) -> None:
    wt = add_worktree(repo, "done")
    (wt / "node_modules" / "pkg").mkdir(parents=True)
    (wt / "node_modules" / "pkg" / "index.js").write_bytes(b"x" * 5000)
    old(wt)
    result = remove(wt, repo, prune=False)
    assert result.status == "removed" and result.branch_deleted and not wt.exists()
    assert "worktree-done" not in branches(repo)
    assert str(wt) not in git(repo, "worktree", "list")
    assert result.bytes >= 5000 and result.files == 4  # .git, README.md, .gitignore, index.js
    assert journal_results(sandbox).count("removed") == 1


def test_a_secret_inside_a_regenerable_folder_makes_the_worktree_dirty(repo: Path) -> None:
    wt = add_worktree(repo, "secret")
    (wt / "build").mkdir()
    (wt / "build" / "bundle.js").write_text("generated\n")
    old(wt)
    assert worktrees.judge_worktree(wt, repo, live_cwds=[], period_s=PERIOD).reason == "age"
    (wt / "build" / ".env").write_text("TOKEN=1\n")
    old(wt)
    assert worktrees.judge_worktree(wt, repo, live_cwds=[], period_s=PERIOD).reason == "dirty"
    result = remove(wt, repo)
    assert (result.status, result.verdict.reason) == ("kept", "dirty")
    assert (wt / "build" / ".env").exists()


def test_a_clone_inside_a_worktree_is_judged_too(repo: Path, tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "upstream")
    wt = add_worktree(repo, "holder")
    inner = wt / "target" / "dep"  # ignored and regenerable: the worktree's own status is clean
    inner.parent.mkdir()
    git(inner.parent, "clone", "-q", str(upstream), str(inner))
    old(wt)
    assert worktrees.judge_worktree(wt, repo, live_cwds=[], period_s=PERIOD).reason == "age"
    (inner / "fix.txt").write_text("fix\n")
    git(inner, "add", "fix.txt")
    git(inner, "commit", "-q", "-m", "a fix pushed nowhere")
    old(wt)
    assert worktrees.judge_worktree(wt, repo, live_cwds=[], period_s=PERIOD).reason == "unmerged"
    result = remove(wt, repo)
    assert (result.status, result.verdict.reason) == ("kept", "unmerged")
    assert (inner / "fix.txt").exists()
    rows = {w.name: w for w in worktrees.describe_worktrees([repo], live_cwds=[])}
    assert (rows["holder"].removable, rows["holder"].reason) == (False, "unmerged")


def test_a_worktree_holding_a_submodule(tmp_path: Path) -> None:
    lib = make_repo(tmp_path / "lib")
    repo = make_repo(tmp_path / "withsub")
    git(repo, *SUB, "submodule", "add", "-q", str(lib), "lib")
    git(repo, "commit", "-q", "-m", "submodule")
    kept = add_worktree(repo, "patched")
    git(kept, *SUB, "submodule", "update", "--init", "-q")
    git(kept / "lib", "checkout", "-q", "-b", "patch")
    (kept / "lib" / "p.txt").write_text("p\n")
    git(kept / "lib", "add", "p.txt")
    git(kept / "lib", "commit", "-q", "-m", "only in this submodule")
    git(kept, "commit", "-q", "-am", "bump lib")
    git(repo, "branch", "keep-bump", "worktree-patched")  # the parent's commit is safe elsewhere
    old(kept)
    result = remove(kept, repo)
    assert (result.status, result.verdict.reason) == ("kept", "unmerged")  # the submodule's commit
    assert (kept / "lib" / "p.txt").exists()

    clean = add_worktree(repo, "clean")
    git(clean, *SUB, "submodule", "update", "--init", "-q")
    old(clean)
    result = remove(clean, repo)  # `git worktree remove` refused these; nothing is lost here
    assert result.status == "removed" and not clean.exists()
    assert "worktree-clean" not in branches(repo)
