"""Red team, round fifteen: session checkouts (seed 002) and the worktree rule.

Driven with ordinary git, in the checkout or in the main one, then WorktreeRemove through
`python -P -m hooks` or the judgement itself.

The losses found: commits pushed only to a remote written as a relative path (`git remote add
backup ../backup.git`: git keeps the url as written), whose folder was then deleted, counted as
pushed: its remote-tracking branches were taken for a copy elsewhere and the checkout went
(only an absolute or `file://` url was checked); now a relative one is read from the main
checkout's top, and one written `~/backup.git` from the home (app/core/gone_remotes.py). A key or a state of an uncommon name in an ignored
build folder (`dist/AuthKey_*.p8`, `build/platform.pk8`, `build/service-account-*.json`,
`build/terraform.tfstate`) went with an otherwise clean, merged checkout; now they are
secret-looking names (app/core/secret_files.py). A checkout's work pushed under another name
(`git push origin HEAD:fix-parser`) let its `worktree-*` branch be deleted with it, as if
`origin/fix-parser` were a merge; once the server deleted the closed request's branch and `git
fetch --prune` ran, the commit was on no ref. Now only a remote branch a merge lands on (the
upstream of another local branch, what a remote's HEAD names) lets the branch go
(app/core/worktree_branch.py).

Held: a checkout whose `.git` file was replaced by a `git init` of its own, with a commit; one
whose `.git` file was deleted, an edit left in it; a file marked assume-unchanged then edited;
a WorktreeCreate name with spaces and non-ASCII letters is refused and makes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import (
    CHECKOUT_OLD_S,
    SandboxEnv,
    claude_worktree,
    commit_file,
    git,
    judge_old_worktree,
    pushed_repo,
    session_checkout,
    session_hook,
    set_mtime,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project pushed to its remote, ignoring build output."""
    return pushed_repo(tmp_path, {"README.md": "x\n", ".gitignore": "build/\ndist/\nnode_modules/\n"})


# --- a remote named by a relative path ---------------------------------------------------------


def test_commits_pushed_only_to_a_relative_path_remote_since_deleted_keep_the_checkout(
        project: Path, tmp_path: Path) -> None:
    """`git remote add backup ../backup.git` (git keeps the url as written), the session's
    work pushed there, then the backup folder deleted: `backup/*` is git's memory of a copy
    that no longer exists."""
    tree = claude_worktree(project, "rel")
    sha = commit_file(tree, "only.py", "the only copy\n")
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "backup.git"))
    git(project, "remote", "add", "backup", "../backup.git")
    git(project, "push", "-q", "backup", "worktree-rel:main")
    assert judge_old_worktree(tree, project) == ("remove", "age")
    shutil.rmtree(tmp_path / "backup.git")

    assert judge_old_worktree(tree, project) == ("keep", "unmerged")
    assert git(tree, "rev-parse", "HEAD") == sha


def test_commits_pushed_only_to_a_remote_under_the_home_written_with_a_tilde_keep_the_checkout(
        sandbox: SandboxEnv, project: Path) -> None:
    """`git config remote.backup.url '~/backup.git'` (git reads `~` as the home), the work
    pushed there, then `rm -rf ~/backup.git`."""
    tree = claude_worktree(project, "tilde")
    commit_file(tree, "only.py", "the only copy\n")
    git(sandbox.home, "init", "-q", "--bare", str(sandbox.home / "backup.git"))
    git(project, "config", "remote.backup.url", "~/backup.git")
    git(project, "config", "remote.backup.fetch", "+refs/heads/*:refs/remotes/backup/*")
    git(project, "push", "-q", "backup", "worktree-tilde:main")
    assert judge_old_worktree(tree, project) == ("remove", "age")
    shutil.rmtree(sandbox.home / "backup.git")

    assert judge_old_worktree(tree, project) == ("keep", "unmerged")


# --- secrets of uncommon names in build output ---------------------------------------------------


@pytest.mark.parametrize("name", ["dist/AuthKey_8XJ2K4Q7P9.p8", "build/platform.pk8",
                                  "build/service-account-prod.json", "build/terraform.tfstate"])
def test_a_key_or_state_of_an_uncommon_name_in_build_output_keeps_the_checkout(project: Path, name: str) -> None:
    """An App Store Connect key downloaded once (`AuthKey_*.p8`), Android's platform key, a
    cloud service account's key, Terraform's state: each the only copy, in an ignored build
    folder of an otherwise clean, merged checkout."""
    tree = claude_worktree(project, "keys")
    target = tree / name
    target.parent.mkdir(parents=True)
    target.write_text("-----BEGIN PRIVATE KEY-----\n")
    assert judge_old_worktree(tree, project) == ("keep", "dirty")
    assert target.is_file()


# --- the checkout's .git file replaced -----------------------------------------------------------


def test_a_checkout_made_a_repository_of_its_own_keeps_its_commits(project: Path) -> None:
    """`rm .git && git init` in the checkout (a `worktree repair` gone wrong), then a commit:
    the folder is a repository of its own, its commit nowhere else. (Held.)"""
    tree = claude_worktree(project, "own")
    (tree / ".git").unlink()
    git(tree, "init", "-q", "-b", "main")
    sha = commit_file(tree, "new.py", "only here\n")
    action, _ = judge_old_worktree(tree, project)
    assert action == "keep"
    removed = session_hook("WorktreeRemove", project, worktree_path=str(tree))
    assert tree.is_dir() and git(tree, "rev-parse", "HEAD") == sha, removed.stderr


def test_a_checkout_named_with_spaces_and_unicode_is_refused_and_makes_nothing(project: Path) -> None:
    """WorktreeCreate of `fix naïve café`: refused, with no folder, branch or git entry made
    that a later removal could take for a session's. (Held.)"""
    before = git(project, "worktree", "list", "--porcelain")
    made = session_hook("WorktreeCreate", project, name="fix naïve café")
    assert made.returncode != 0 and b"invalid worktree name" in made.stderr, made.stderr
    assert not (project / ".claude" / "worktrees").exists()
    assert git(project, "worktree", "list", "--porcelain") == before
    assert git(project, "branch", "--list", "worktree-*") == ""


# --- the branch pushed under another name --------------------------------------------------------


def test_a_branch_pushed_under_another_name_whose_server_copy_is_deleted_keeps_its_commits(
        project: Path, tmp_path: Path) -> None:
    """The session pushes its work as `fix-parser` (`git push origin HEAD:fix-parser`: the
    checkout's branch is `worktree-fix`), the request is closed, the server deletes
    `fix-parser` and `git fetch --prune` drops `origin/fix-parser`. The checkout went and its
    branch was deleted as "on a remote-tracking branch of another name": the commit was on no
    ref at all. The folder still goes; the branch stays. A branch merged into `origin/main`
    (the upstream of `main`) still goes."""
    tree = session_checkout(project, "fix")
    sha = commit_file(tree, "parser.py", "the fix\n")
    git(tree, "push", "-q", "origin", "HEAD:fix-parser")
    merged = session_checkout(project, "merged")
    commit_file(merged, "m.txt", "merged\n")
    git(merged, "push", "-q", "origin", "HEAD:main")
    git(project, "fetch", "-q", "origin")
    for each in (tree, merged):
        set_mtime(each, CHECKOUT_OLD_S)
        removed = session_hook("WorktreeRemove", project, worktree_path=str(each))
        assert removed.returncode == 0 and not each.exists(), removed.stderr
    git(tmp_path / "origin.git", "branch", "-D", "fix-parser")
    git(project, "fetch", "-q", "--prune", "origin")

    assert git(project, "rev-parse", "worktree-fix") == sha
    assert git(project, "branch", "--list", "worktree-merged") == ""


# --- the checkout's .git file gone, or a file hidden from git -----------------------------------


def test_a_checkout_whose_git_file_was_deleted_keeps_its_edits(project: Path) -> None:
    """`rm .git` in the checkout (taken for junk), an edit there not committed: git no longer
    sees the folder as its worktree; the sweep and WorktreeRemove leave it. (Held.)"""
    tree = session_checkout(project, "nogit")
    (tree / "README.md").write_text("an edit never committed\n")
    (tree / ".git").unlink()
    action, _ = judge_old_worktree(tree, project)
    assert action == "keep"
    session_hook("WorktreeRemove", project, worktree_path=str(tree))
    assert (tree / "README.md").read_text() == "an edit never committed\n"


def test_a_file_marked_assume_unchanged_then_edited_keeps_the_checkout(project: Path) -> None:
    """`git update-index --assume-unchanged README.md`, then the file rewritten: `git status`
    is clean. (Held.)"""
    tree = session_checkout(project, "assumed")
    git(tree, "update-index", "--assume-unchanged", "README.md")
    (tree / "README.md").write_text("the only copy of this edit\n")
    assert git(tree, "status", "--porcelain") == ""
    set_mtime(tree, CHECKOUT_OLD_S)
    removed = session_hook("WorktreeRemove", project, worktree_path=str(tree))
    assert removed.returncode != 0 and (tree / "README.md").read_text() == "the only copy of this edit\n"
