"""make_repo copies a repository it made before: each copy must be what `git init` + commit
would have left there, and independent of the template and of the other copies."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests import support
from tests.support import git, make_repo


def test_a_copied_repository_is_a_whole_repository_of_its_own(tmp_path: Path) -> None:
    files = {"README.md": "one\n", "src/app.py": "x = 1\n"}
    first = make_repo(tmp_path / "first", files=files)
    started = time.time()
    second = make_repo(tmp_path / "second", files=files)
    assert support.REPO_TEMPLATES is not None and len(list(support.REPO_TEMPLATES.iterdir())) >= 1
    for repo in (first, second):
        assert git(repo, "diff-files", "--name-only") == ""  # the index holds the copy's stats
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
        assert git(repo, "branch", "--show-current") == "main"
        assert git(repo, "log", "--format=%s") == "initial"
        assert git(repo, "ls-files").split() == ["README.md", "src/app.py"]
        assert (repo / "src" / "app.py").read_text() == "x = 1\n"
        assert git(repo, "rev-parse", "--show-toplevel") == str(repo)
    # new files, made now, not the template's
    for entry in (second / "README.md", second / ".git" / "index", second / "src"):
        assert os.lstat(entry).st_mtime >= started - 1, entry
        assert os.lstat(entry).st_ino != os.lstat(first / entry.relative_to(second)).st_ino
    # a commit in one copy is not in the other
    (second / "README.md").write_text("two\n")
    git(second, "commit", "-qam", "second")
    assert git(first, "log", "--format=%s") == "initial"
    assert git(first, "status", "--porcelain") == ""


def test_a_folder_that_holds_something_is_made_a_repository_in_place(tmp_path: Path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "already.txt").write_text("here\n")
    make_repo(target)
    assert git(target, "ls-files").split() == ["README.md", "already.txt"]


def test_a_git_setting_of_the_test_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_repo(tmp_path / "before")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1000000000 +0000")
    repo = make_repo(tmp_path / "dated")
    assert git(repo, "log", "--format=%ct") == "1000000000"
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    (Path(os.environ["HOME"]) / ".gitconfig").write_text("[commit]\n\tgpgsign = false\n[user]\n\tname = Other\n")
    monkeypatch.delenv("GIT_AUTHOR_NAME")
    repo = make_repo(tmp_path / "configured")
    assert git(repo, "log", "--format=%an") == "Other"
