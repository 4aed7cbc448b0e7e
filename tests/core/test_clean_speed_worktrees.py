"""The cleanup judges several worktrees at once (their git checks run in their own processes,
so threads overlap them), removes them one at a time in order, and asks git nothing about a
worktree a cheap condition already keeps. Real repositories and worktrees; real git behind a
wrapper on PATH that notes each call (its start and end), so the test sees what git was asked
and when."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from app.core import hygiene
from tests.core.test_worktrees import add_worktree, age
from tests.support import SandboxEnv, git, make_repo

#: the wrapper: notes `start <pid> <args>` and `end <pid>` around the real git; a `status`
#: call takes a little longer, so that calls made at once are seen overlapping
WRAPPER = """#!/bin/sh
echo "start $$ $*" >> "{log}"
case " $* " in *" status "*) sleep 0.3 ;; esac
"{git}" "$@"
code=$?
echo "end $$" >> "{log}"
exit $code
"""


@pytest.fixture
def git_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` on PATH that notes its calls in the returned log, then runs the real one."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "wrapped-bin"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    wrapper = folder / "git"
    wrapper.write_text(WRAPPER.format(log=log, git=real))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def calls(log: Path) -> list[tuple[str, str, str]]:
    if not log.exists():
        return []
    return [(line.split(" ", 2) + [""])[:3] for line in log.read_text().splitlines()]  # type: ignore[misc]


def statuses(log: Path) -> list[str]:
    return [args for what, _pid, args in calls(log) if what == "start" and " status " in f" {args} "]


def overlapped(log: Path) -> bool:
    """Whether a git status started while another one was still running."""
    running: set[str] = set()
    status_pids: set[str] = set()
    for what, pid, args in calls(log):
        if what == "start":
            if " status " in f" {args} ":
                if running & status_pids:
                    return True
                status_pids.add(pid)
            running.add(pid)
        else:
            running.discard(pid)
    return False


def test_old_clean_worktrees_are_judged_at_once_and_all_removed_in_order(
        tmp_path: Path, sandbox: SandboxEnv, git_calls: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    names = [f"agent-a{i:07x}" for i in range(6)]
    made = [age(add_worktree(repo, name)) for name in names]
    git_calls.unlink(missing_ok=True)  # only what the cleanup asks
    report = hygiene.run_cleanup([repo], current_cwd=str(tmp_path))
    assert report.worktrees == 6 and report.worktrees_kept == []
    assert not any(path.exists() for path in made)
    assert [v.path for v in report.verdicts if v.rule == "worktree"] == [str(p) for p in made]
    assert len(statuses(git_calls)) >= 6  # each judged (and checked again at its removal)
    assert overlapped(git_calls)  # several at once


def test_dirty_and_unmerged_worktrees_among_many_are_kept_each_with_its_reason(
        tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = make_repo(tmp_path / "repo")
    clean = [age(add_worktree(repo, f"clean-{i}")) for i in range(3)]
    dirty = add_worktree(repo, "dirty")
    (dirty / "notes.txt").write_text("mine\n")
    age(dirty)
    unmerged = add_worktree(repo, "unmerged")
    (unmerged / "work.txt").write_text("work\n")
    git(unmerged, "add", "work.txt")
    git(unmerged, "commit", "-q", "-m", "work")
    age(unmerged)
    report = hygiene.run_cleanup([repo], current_cwd=str(tmp_path))
    assert report.worktrees == 3 and not any(p.exists() for p in clean)
    assert sorted(report.worktrees_kept) == sorted([(str(dirty), "dirty"), (str(unmerged), "unmerged")])
    assert (dirty / "notes.txt").read_text() == "mine\n" and (unmerged / "work.txt").exists()


def test_a_worktree_kept_young_or_live_costs_no_git_check(tmp_path: Path, sandbox: SandboxEnv,
                                                          git_calls: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    young = add_worktree(repo, "young")
    live = age(add_worktree(repo, "live"))
    git_calls.unlink(missing_ok=True)
    report = hygiene.run_cleanup([repo], dry_run=True, current_cwd=str(live))
    assert sorted(report.worktrees_kept) == sorted([(str(young), "young"), (str(live), "live")])
    asked = [args for what, _pid, args in calls(git_calls) if what == "start"]
    assert statuses(git_calls) == [] and not any(" ls-files " in f" {a} " for a in asked), asked
    assert young.exists() and live.exists()


def test_the_dry_run_judges_at_once_and_removes_nothing(tmp_path: Path, sandbox: SandboxEnv,
                                                        git_calls: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    made = [age(add_worktree(repo, f"wf-{i}")) for i in range(4)]
    git_calls.unlink(missing_ok=True)
    report = hygiene.run_cleanup([repo], dry_run=True, current_cwd=str(tmp_path))
    assert report.worktrees == 4 and all(p.exists() for p in made)
    assert len(statuses(git_calls)) == 4  # once each: a dry run has no last check
    assert overlapped(git_calls)


def test_a_deadline_reached_while_judging_leaves_the_rest_as_it_was(
        tmp_path: Path, sandbox: SandboxEnv, git_calls: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    made = [age(add_worktree(repo, f"wt-{i}")) for i in range(8)]
    report = hygiene.run_cleanup([repo], current_cwd=str(tmp_path), timeout_ms=450)
    assert report.timed_out
    gone = [p for p in made if not p.exists()]
    # whatever was removed was removed in order, and counted; the rest is untouched
    assert gone == made[:len(gone)] and report.worktrees == len(gone) < len(made)
    for path in made[len(gone):]:
        assert (path / ".git").is_file() and git(path, "status", "--porcelain") == ""


def secret_listings(log: Path) -> list[str]:
    return [args for what, _pid, args in calls(log) if what == "start" and " --others " in f" {args} "]


def test_the_secret_listing_runs_only_when_git_status_shows_ignored_entries(
        tmp_path: Path, sandbox: SandboxEnv, git_calls: Path) -> None:
    from app.core.unique_work import unique_work

    repo = make_repo(tmp_path / "repo", files={"README.md": "hi\n", ".gitignore": "node_modules/\n"})
    plain = add_worktree(repo, "plain")
    git_calls.unlink(missing_ok=True)
    assert unique_work(plain) is None
    assert secret_listings(git_calls) == []  # nothing ignored at all: no secret to look for
    # ignored, regenerable, and a secret inside: git status shows the folder, the listing runs
    (plain / "node_modules" / "pkg").mkdir(parents=True)
    (plain / "node_modules" / "pkg" / "index.js").write_text("x\n")
    assert unique_work(plain) is None and len(secret_listings(git_calls)) == 1
    (plain / "node_modules" / ".env").write_text("TOKEN=1\n")
    assert unique_work(plain) == "dirty"
    # ignored by the repository's own exclude file, not by .gitignore: shown the same way
    excluded = add_worktree(repo, "excluded")
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("build/\n")
    (excluded / "build" / "keys").mkdir(parents=True)
    (excluded / "build" / "keys" / "deploy.pem").write_text("-----BEGIN-----\n")
    assert unique_work(excluded) == "dirty"
