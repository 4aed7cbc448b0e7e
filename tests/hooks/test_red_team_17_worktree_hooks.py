"""Red team, round seventeen: WorktreeCreate and WorktreeRemove as Claude runs them
(`python -P -m hooks`), driven with ordinary git in the project or a checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import commit_file, git, pushed_repo, session_checkout, session_hook


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project pushed to its remote, ignoring build output."""
    return pushed_repo(tmp_path, {"README.md": "x\n", ".gitignore": "node_modules/\n"})


def _separate_git_dir_project(tmp_path: Path) -> Path:
    """`git clone --separate-git-dir ~/gd/proj.git`: the project's `.git` is a file."""
    origin = tmp_path / "sep-origin.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(origin))
    seed = tmp_path / "sep-seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    commit_file(seed, "README.md", "x\n")
    git(seed, "push", "-q", str(origin), "main")
    proj = tmp_path / "sep-proj"
    (tmp_path / "gd").mkdir()
    git(tmp_path, "clone", "-q", "--separate-git-dir", str(tmp_path / "gd" / "proj.git"), str(origin), str(proj))
    return proj


def _submodule_project(tmp_path: Path, project: Path) -> Path:
    """`super/lib`, a submodule checked out in a superproject (its `.git` a file naming
    `super/.git/modules/lib`)."""
    sup = tmp_path / "super"
    git(tmp_path, "init", "-q", "-b", "main", str(sup))
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(project), "lib")
    git(sup, "commit", "-qm", "lib")
    return sup / "lib"


@pytest.mark.parametrize("shape", ["separate_git_dir", "submodule"])
def test_worktree_create_from_inside_a_checkout_of_a_project_whose_git_is_a_file_does_not_nest(
        tmp_path: Path, project: Path, shape: str) -> None:
    """A session working in its checkout asks for another (EnterWorktree, a subagent's
    worktree) with its cwd in the checkout. Its project's `.git` is a file (a clone made with
    `--separate-git-dir`, a submodule): the checkout's git dir is `<git dir>/worktrees/<id>`,
    not `.git/worktrees/<id>`, and the checkout was taken for the project itself. The new
    checkout was made inside the old one (`<checkout>/.claude/worktrees/<name>`), its record
    naming the checkout as its project, and the outer one could never be released whole."""
    proj = _separate_git_dir_project(tmp_path) if shape == "separate_git_dir" else _submodule_project(tmp_path, project)
    first = session_checkout(proj, "first")
    made = session_hook("WorktreeCreate", first, name="second")
    assert made.returncode == 0, made.stderr
    second = Path(made.stdout.decode().strip().splitlines()[-1])
    assert second == proj / ".claude" / "worktrees" / "second", second
    assert not (first / ".claude").exists()
