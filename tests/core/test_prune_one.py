"""After a removal git forgets the removed worktree only: a worktree whose folder is away at
that moment (a drive not mounted today) keeps its entry, its index (the staged work) and the
commits only its detached HEAD holds, and comes back when its folder does. Real repos, real
worktrees, each caller of `git.forget_worktree` run for real."""

from __future__ import annotations

import json
import os
from pathlib import Path

from app.core import git as git_adapter
from app.core import worktrees
from app.core.checkouts import create_checkout
from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

OLD = 31 * 86400.0


def away_worktree(project: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    """A second worktree with a commit only its detached HEAD holds and a staged file; its
    drive is then "unmounted" (renamed away). The worktree's path, the drive, and that commit."""
    side = tmp_path / "drive" / "side"
    git(project, "worktree", "add", "-q", "--detach", str(side))
    (side / "exp.txt").write_text("e\n")
    git(side, "add", "exp.txt")
    git(side, "commit", "-qm", "only on this detached HEAD")
    (side / "staged.txt").write_text("staged\n")
    git(side, "add", "staged.txt")
    only = git(side, "rev-parse", "HEAD")
    os.rename(tmp_path / "drive", tmp_path / "unmounted")
    return side, tmp_path / "drive", only


def assert_back(project: Path, side: Path, drive: Path, only: str) -> None:
    """The drive returns: git still knows the worktree, with its HEAD and its staged work."""
    os.rename(drive.parent / "unmounted", drive)
    assert str(side) in git(project, "worktree", "list", "--porcelain")
    assert git(side, "rev-parse", "HEAD") == only
    assert "staged.txt" in git(side, "diff", "--cached", "--name-only")


def test_forget_worktree_forgets_only_the_named_missing_worktree(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj")
    gone = tmp_path / "gone"
    git(project, "worktree", "add", "-q", "--detach", str(gone))
    side, drive, only = away_worktree(project, tmp_path)
    git(project, "worktree", "add", "-q", "--detach", str(gone) + "2")
    os.rename(str(gone), tmp_path / "elsewhere")  # any folder at the path is not ours to forget
    assert git_adapter.forget_worktree(project, str(gone)) is True
    listing = git(project, "worktree", "list", "--porcelain")
    assert f"worktree {gone}\n" not in listing + "\n" and str(gone) + "2" in listing
    assert_back(project, side, drive, only)


def test_forget_worktree_never_touches_a_folder_that_is_there(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj")
    there = tmp_path / "there"
    git(project, "worktree", "add", "-q", "--detach", str(there))
    assert git_adapter.forget_worktree(project, str(there)) is False
    assert (there / "README.md").exists() and str(there) in git(project, "worktree", "list")


def test_forget_worktree_keeps_a_locked_worktree_known(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj")
    locked = tmp_path / "locked"
    git(project, "worktree", "add", "-q", "--detach", str(locked))
    git(project, "worktree", "lock", str(locked))
    os.rename(locked, tmp_path / "moved")
    assert git_adapter.forget_worktree(project, str(locked)) is False
    assert str(locked) in git(project, "worktree", "list")


def test_a_worktree_removal_forgets_only_the_removed_one(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj")
    wt = project / ".claude" / "worktrees" / "done"
    git(project, "worktree", "add", "-q", "-b", "worktree-done", str(wt))
    set_mtime(wt, OLD)
    side, drive, only = away_worktree(project, tmp_path)
    done = worktrees.remove_worktree(wt, project, live_cwds=[], period_s=OLD - 3600, prune=False)
    assert done.status == "removed" and not wt.exists()
    assert str(wt) not in git(project, "worktree", "list")
    assert_back(project, side, drive, only)


def test_the_cleanup_forgets_only_the_worktree_it_removed(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj")
    wt = project / ".claude" / "worktrees" / "manual"
    git(project, "worktree", "add", "-q", "--detach", str(wt))
    set_mtime(wt, OLD)
    side, drive, only = away_worktree(project, tmp_path)
    result = run_cli("clean", "--json", str(project))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cleaned"]["worktrees"] == 1 and not wt.exists()
    assert str(wt) not in git(project, "worktree", "list")
    assert_back(project, side, drive, only)


def test_worktree_remove_of_a_vanished_checkout_forgets_only_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj")
    checkout = create_checkout(str(project), "gone", "S1")
    side, drive, only = away_worktree(project, tmp_path)
    os.rename(checkout.path, tmp_path / "taken")  # Claude's own sweep, a user's rm: gone without us
    done = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "S1", "cwd": str(project),
                     "worktree_path": str(checkout.path)}, cwd=project)
    assert done.returncode == 0, done.stderr
    assert str(checkout.path) not in git(project, "worktree", "list")
    assert_back(project, side, drive, only)
