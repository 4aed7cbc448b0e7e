"""What the Checkouts pane says git sees in a checkout (`git.status_counts`), on real
repositories and worktrees: changed, untracked and ignored entries, commits on no other
branch or remote, and a clear error, never a traceback, where git cannot say."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.core.git import StatusCounts, status_counts, status_entries
from tests.support import git, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "hello\n", "lib.py": "x = 1\n",
                                               ".gitignore": "node_modules/\n.env\n"})


@pytest.fixture
def worktree(repo: Path) -> Path:
    """A checkout as WorktreeCreate makes one: its own branch, at main's commit."""
    where = repo / ".claude" / "worktrees" / "bold-oak"
    git(repo, "worktree", "add", "-q", "-b", "worktree-bold-oak", str(where))
    return where


def commit(repo: Path, name: str) -> None:
    (repo / name).write_text(f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")


def test_a_fresh_checkout_is_all_zero(worktree: Path) -> None:
    assert status_counts(str(worktree)) == StatusCounts()


def test_changed_entries_count_once_each_a_rename_too(worktree: Path) -> None:
    (worktree / "README.md").write_text("edited\n")
    git(worktree, "mv", "lib.py", "renamed.py")
    (worktree / "staged.py").write_text("y = 2\n")
    git(worktree, "add", "staged.py")
    assert status_counts(str(worktree)) == StatusCounts(changed=3)


def test_untracked_and_ignored_are_counted_apart(worktree: Path) -> None:
    (worktree / "notes.md").write_text("n\n")
    (worktree / "odd name\nwith newline.txt").write_text("n\n")
    (worktree / "new-dir").mkdir()
    (worktree / "new-dir" / "a.py").write_text("a\n")
    (worktree / "node_modules" / "pkg").mkdir(parents=True)
    (worktree / "node_modules" / "pkg" / "index.js").write_text("1\n")
    (worktree / ".env").write_text("TOKEN=1\n")
    # git folds an untracked or ignored folder into one entry, as `git status` shows it
    assert status_counts(str(worktree)) == StatusCounts(untracked=3, ignored=2)


def test_a_commit_on_no_other_branch_counts_until_another_branch_has_it(repo: Path, worktree: Path) -> None:
    commit(worktree, "work.py")
    commit(worktree, "more.py")
    assert status_counts(str(worktree)).unmerged == 2
    git(repo, "merge", "-q", "--ff-only", "worktree-bold-oak")
    assert status_counts(str(worktree)).unmerged == 0


def test_a_pushed_commit_is_on_a_remote_and_an_unpushed_one_is_not(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    commit(clone, "pushed.py")
    git(clone, "push", "-q", "origin", "main:side")
    git(clone, "fetch", "-q", "origin")
    commit(clone, "unpushed.py")
    # main itself is the clone's own branch: only the remote's refs and other branches count
    assert status_counts(str(clone)) == StatusCounts(unmerged=1)


def test_a_detached_head_counts_the_commits_no_branch_has(worktree: Path) -> None:
    git(worktree, "checkout", "-q", "--detach")
    commit(worktree, "loose.py")
    assert status_counts(str(worktree)).unmerged == 1


def test_a_repository_with_no_commit_yet_has_nothing_to_lose(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "main")
    (fresh / "draft.md").write_text("d\n")
    assert status_counts(str(fresh)) == StatusCounts(untracked=1)


def test_a_missing_folder_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    counts = status_counts(str(tmp_path / "gone"))
    assert counts.error == "no git checkout here"


def test_a_plain_folder_inside_a_repository_is_never_judged_as_its_parent(repo: Path) -> None:
    (repo / "README.md").write_text("the parent is dirty\n")
    inner = repo / "sub"
    inner.mkdir()
    assert status_counts(str(inner)).error == "no git checkout here"


def test_a_checkout_whose_git_dir_is_gone_says_why(repo: Path, worktree: Path) -> None:
    git(repo, "worktree", "remove", "--force", str(worktree))
    worktree.mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {repo}/.git/worktrees/bold-oak\n")
    counts = status_counts(str(worktree))
    assert counts.error and counts.error != "no git checkout here"
    assert (counts.changed, counts.untracked, counts.ignored, counts.unmerged) == (0, 0, 0, 0)


def test_git_missing_from_path_is_an_error(worktree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(worktree))  # a real PATH on which there is no git
    counts = status_counts(str(worktree))
    assert "FileNotFoundError" in counts.error


def test_a_symlink_to_a_checkout_is_judged_where_it_points(worktree: Path, tmp_path: Path) -> None:
    (worktree / "notes.md").write_text("n\n")
    link = tmp_path / "link"
    link.symlink_to(worktree)
    assert status_counts(str(link)) == StatusCounts(untracked=1)


def test_status_entries_reads_git_s_own_output(worktree: Path) -> None:
    git(worktree, "mv", "lib.py", "moved.py")
    (worktree / "new.txt").write_text("n\n")
    (worktree / ".env").write_text("T=1\n")
    out = subprocess.run(["git", "status", "--porcelain=v1", "-z", "--ignored"], cwd=worktree,
                         capture_output=True, check=True).stdout
    entries = status_entries(os.fsdecode(out))
    assert sorted(entries) == [("!!", ".env"), ("??", "new.txt"), ("R ", "moved.py")]


def test_counts_compare_and_print_by_value() -> None:
    assert StatusCounts(1, 2, 3, 4) == StatusCounts(1, 2, 3, 4) != StatusCounts(1, 2, 3, 5)
    assert len({StatusCounts(), StatusCounts()}) == 1
    assert "unmerged=4" in repr(StatusCounts(1, 2, 3, 4))
    assert StatusCounts() != (0, 0, 0, 0, "")


def test_the_checkouts_pane_shows_what_the_adapter_counts(repo: Path, worktree: Path) -> None:
    from app.core.worktrees import describe_worktrees
    from app.data.checkouts import checkout_detail

    (worktree / "README.md").write_text("edited\n")
    commit(worktree, "work.py")
    [info] = describe_worktrees([repo], live_cwds=[])
    detail = checkout_detail(info)
    assert detail.git == status_counts(str(worktree)) == StatusCounts(changed=1, unmerged=1)
    assert detail.release is None and not detail.tmp_kept  # a checkout no session registered
