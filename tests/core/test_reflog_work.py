"""A commit a reset dropped, named by nothing but a reflog: `git reset --hard origin/main`
then any command that moves ORIG_HEAD on (another reset, a merge, a rebase), or `git branch
-f` of a branch not checked out. `git reflog` brings the work back for as long as the clone
or worktree is there, so it keeps it; an amend, a rebase, a squash or a commit picked back
lose nothing and the folder goes. Real clones through `claudetto gc` (recorded by the
PostToolUse hook), real worktrees through `claudetto clean`."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.core.test_red_team_3_checkouts import age, clean, commit, old_worktree, reachable
from tests.core.test_red_team_3_outputs import OLD, gc_entries, run_and_record
from tests.support import SandboxEnv, git, make_repo, set_mtime


def recorded_clone(sandbox: SandboxEnv, tmp_path: Path) -> tuple[Path, Path]:
    """The session's clone of a real origin (recorded as its output), and the origin."""
    origin = make_repo(tmp_path / "origin")
    git(origin, "config", "receive.denyCurrentBranch", "updateInstead")  # the clone pushes to it
    clone = sandbox.user_tmp / "tool"
    run_and_record(f"git clone -q {origin} {clone}", tmp_path)
    return clone, origin


def sweep(clone: Path) -> dict[str, tuple[str, str]]:
    set_mtime(clone, OLD)
    return gc_entries()


def push(clone: Path) -> None:
    git(clone, "push", "-q", "-f", "origin", "HEAD:main")
    git(clone, "fetch", "-q")


# --- kept: the work is only in a reflog -------------------------------------------------------


@pytest.mark.parametrize("then", [["reset", "-q", "--hard"], ["merge", "-q", "--no-edit", "side"],
                                  ["rebase", "-q", "side"]])
def test_work_a_reset_dropped_keeps_the_clone_after_orig_head_moved_on(
        sandbox: SandboxEnv, tmp_path: Path, then: list[str]) -> None:
    """A day of work, `git reset --hard origin/main`, then a command that moves ORIG_HEAD on:
    only the reflogs name the work."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    git(clone, "branch", "side")
    work = commit(clone, "feature.py", "a day of work\n")
    git(clone, "reset", "-q", "--hard", "origin/main")
    commit(clone, "other.py", "something else\n")
    push(clone)
    git(clone, "switch", "-q", "side")
    commit(clone, "side.py", "side\n")
    git(clone, "push", "-q", "origin", "side")
    git(clone, "switch", "-q", "main")
    git(clone, *then)
    git(clone, "push", "-q", "-f", "origin", "HEAD:main")  # all but the dropped work is on origin
    git(clone, "fetch", "-q")
    assert git(clone, "rev-parse", "ORIG_HEAD") != work
    entries = sweep(clone)
    assert clone.is_dir() and git(clone, "cat-file", "-t", work) == "commit", entries


def test_a_branch_reset_with_branch_f_keeps_the_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git branch -f feature origin/main` from another branch: no ORIG_HEAD, no reset in HEAD's
    reflog; only the branch's reflog (`branch: Reset to`) names the work."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    git(clone, "switch", "-q", "-c", "feature")
    work = commit(clone, "feature.py", "a day of work\n")
    git(clone, "switch", "-q", "main")
    git(clone, "branch", "-f", "feature", "origin/main")
    entries = sweep(clone)
    assert clone.is_dir() and git(clone, "cat-file", "-t", work) == "commit", entries


def test_work_a_reset_dropped_on_a_deleted_branch_keeps_the_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git branch -D` deletes the branch's reflog too: the dropped commit and the one left on
    the branch are then named only by HEAD's reflog."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    git(clone, "switch", "-q", "-c", "feature")
    kept = commit(clone, "a.py", "first\n")
    dropped = commit(clone, "b.py", "second\n")
    git(clone, "reset", "-q", "--hard", "HEAD~1")
    git(clone, "switch", "-q", "main")
    git(clone, "branch", "-q", "-D", "feature")
    git(clone, "reset", "-q", "--hard")
    entries = sweep(clone)
    assert clone.is_dir() and reachable(clone, kept) and reachable(clone, dropped), entries


@pytest.mark.parametrize("resets", [[["reset", "-q", "--hard", "HEAD~1"], ["reset", "-q", "--hard"]],
                                    [["checkout", "-q", "-B", "worktree-twice", "main"]]])
def test_a_worktree_whose_reset_work_only_its_reflog_holds_is_kept(tmp_path: Path, resets: list[list[str]]) -> None:
    """In an old worktree: a commit, then `git reset --hard HEAD~1` and `git reset --hard`, or
    `git checkout -B` of its own branch: its HEAD reflog, which goes with it, alone leads to
    the commit there."""
    repo = make_repo(tmp_path / "proj")
    wt = old_worktree(repo, "twice")
    work = commit(wt, "idea.txt", "only here\n")
    for reset in resets:
        git(wt, *reset)
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and git(repo, "cat-file", "-t", work) == "commit", report


# --- removed: the reset lost nothing ----------------------------------------------------------


def test_a_squash_by_a_soft_reset_lets_the_clone_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git reset --soft HEAD~2 && git commit`, pushed: the same tree is on origin."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    commit(clone, "a.py", "a\n")
    commit(clone, "b.py", "b\n")
    git(clone, "reset", "-q", "--soft", "HEAD~2")
    git(clone, "commit", "-qm", "both")
    push(clone)
    git(clone, "reset", "-q", "--hard")
    entries = sweep(clone)
    assert not clone.exists(), entries


def test_a_commit_picked_back_after_a_reset_lets_the_clone_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git reset --hard HEAD~1`, another commit, then `git cherry-pick` of the dropped one,
    pushed: the same change is on origin."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    dropped = commit(clone, "a.py", "a\n")
    git(clone, "reset", "-q", "--hard", "HEAD~1")
    commit(clone, "b.py", "b\n")
    git(clone, "cherry-pick", dropped)
    push(clone)
    git(clone, "reset", "-q", "--hard")
    entries = sweep(clone)
    assert not clone.exists(), entries


def test_an_amended_and_pushed_commit_lets_the_clone_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git commit --amend`, pushed: the first version was replaced on purpose."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    commit(clone, "a.py", "draft\n")
    (clone / "a.py").write_text("final\n")
    git(clone, "commit", "-qa", "--amend", "-m", "final")
    push(clone)
    git(clone, "reset", "-q", "--hard")
    entries = sweep(clone)
    assert not clone.exists(), entries


def test_a_rebased_and_pushed_branch_lets_the_clone_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Work rebased onto the moved origin and pushed: its old commits were replaced on
    purpose, though a reset made room for the rebase."""
    clone, origin = recorded_clone(sandbox, tmp_path)
    commit(clone, "a.py", "a\n")
    commit(origin, "upstream.py", "upstream\n")
    git(clone, "fetch", "-q")
    git(clone, "reset", "-q", "--hard", "HEAD")
    git(clone, "rebase", "-q", "origin/main")
    push(clone)
    git(clone, "reset", "-q", "--hard")
    entries = sweep(clone)
    assert not clone.exists(), entries


def test_a_commit_an_interactive_rebase_dropped_lets_the_clone_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git rebase -i` with a `drop`, pushed, then ORIG_HEAD moved on: the rebase's reflog
    entries name the dropped commit, but a rebase replaces on purpose; it is no reset."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    commit(clone, "a.py", "a\n", "keep me")
    dropped = commit(clone, "b.py", "b\n", "drop me")
    subprocess.run(["git", "rebase", "-q", "-i", "HEAD~2"], cwd=clone, check=True, capture_output=True,
                   env={**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i '/drop me/s/^pick/drop/'"})
    assert git(clone, "log", "--format=%s", "-1") == "keep me"
    push(clone)
    git(clone, "reset", "-q", "--hard")
    assert reachable(clone, dropped)  # the reflog still names it: a reset's rule would keep it
    entries = sweep(clone)
    assert not clone.exists(), entries


def test_a_reset_whose_reflogs_were_expired_lets_the_clone_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git reflog expire --expire=now --all` after the reset: nothing leads to the commit any
    more, the next `git gc` drops it; the clone holds nothing to keep."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    work = commit(clone, "feature.py", "dropped on purpose\n")
    git(clone, "reset", "-q", "--hard", "origin/main")
    git(clone, "reset", "-q", "--hard")
    git(clone, "reflog", "expire", "--expire=now", "--all")
    assert not reachable(clone, work)
    entries = sweep(clone)
    assert not clone.exists(), entries


def test_a_reset_older_than_git_keeps_its_entry_lets_the_clone_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A reset 40 days ago: past `gc.reflogExpireUnreachable` (30 days), the next `git gc`
    drops the entry, the only way back to the commit; the same reset a week ago keeps it."""
    clone, _ = recorded_clone(sandbox, tmp_path)
    commit(clone, "feature.py", "dropped long ago\n")
    when = f"@{int(time.time()) - 40 * 86_400} +0000"
    subprocess.run(["git", "reset", "-q", "--hard", "origin/main"], cwd=clone, check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": when})
    git(clone, "reset", "-q", "--hard")
    entries = sweep(clone)
    assert not clone.exists(), entries


def test_a_worktree_whose_reset_was_squashed_back_goes(tmp_path: Path) -> None:
    """The bound of the worktree case: the reset commits come back squashed on the branch,
    merged into main."""
    repo = make_repo(tmp_path / "proj")
    wt = old_worktree(repo, "squash")
    commit(wt, "a.txt", "a\n")
    commit(wt, "b.txt", "b\n")
    git(wt, "reset", "-q", "--soft", "HEAD~2")
    git(wt, "commit", "-qm", "both")
    git(wt, "reset", "-q", "--hard")
    git(repo, "merge", "-q", "--ff-only", "worktree-squash")
    age(wt)
    report = clean(repo)
    assert not wt.exists(), report


# --- bounded: no git process without a reset, a fixed few with hundreds --------------------------


def counting_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that logs each run, then runs the real git."""
    real = shutil.which("git")
    assert real
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git-runs.log"
    script = bin_dir / "git"
    script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_repository_without_a_reset_costs_no_git_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.unique_refs import held_only_here

    repo = make_repo(tmp_path / "proj")
    commit(repo, "a.txt", "a\n")
    git(repo, "commit", "-q", "--amend", "-m", "amended")
    log = counting_git(tmp_path, monkeypatch)
    assert held_only_here(str(repo / ".git")) is False
    assert runs(log) == []


def test_hundreds_of_resets_cost_a_fixed_few_git_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reset names a dropped commit; they are asked about together, the newest first, and
    the newest is work no ref holds."""
    from app.core.unique_refs import held_only_here, reset_away

    repo = make_repo(tmp_path / "proj")
    base = git(repo, "rev-parse", "HEAD")
    for i in range(150):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"try {i}")
        git(repo, "reset", "-q", "--soft", base)
    work = commit(repo, "a.txt", "the work\n")
    git(repo, "reset", "-q", "--hard", base)
    git(repo, "reset", "-q", "--hard")
    log = counting_git(tmp_path, monkeypatch)
    assert held_only_here(str(repo / ".git")) is True
    assert 1 <= len(runs(log)) <= 3, runs(log)
    dropped = reset_away(str(repo / ".git"))
    assert len(dropped) == 32 and dropped[0] == work  # the newest first, within one second too
