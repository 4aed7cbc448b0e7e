"""A file or folder whose name starts with `:` is that file, never pathspec magic. git
check-ignore reads the paths it is given as pathspecs and refuses the literal mode, so a folder
named `:(top)acme` answered for `acme` (another path, not ignored), and a name like `:notes`
(an unknown magic) made git fail for every path of the call."""

from __future__ import annotations

from pathlib import Path

from app.core import worktrees
from app.core.worktree_create import copy_included
from tests.support import git, make_repo, set_mtime

PERIOD = 30 * 86_400


def test_a_class_in_a_magic_named_package_the_target_pattern_ignores_keeps_the_checkout(tmp_path: Path) -> None:
    proj = make_repo(tmp_path / "proj", files={".gitignore": "target/\n", "README.md": "x\n"})
    package = proj / ":(top)acme" / "target"
    package.mkdir(parents=True)
    (package / "Aim.java").write_text("class Aim {}\n")
    git(proj, "--literal-pathspecs", "add", "-f", ":(top)acme/target/Aim.java")
    git(proj, "commit", "-q", "-m", "the target package")
    tree = proj / ".claude" / "worktrees" / "a"
    git(proj, "worktree", "add", "-q", "-b", "worktree-a", str(tree))
    (tree / ":(top)acme" / "target" / "Tracker.java").write_text("class Tracker { /* a day of work */ }\n")
    assert git(tree, "status", "--porcelain") == ""  # the user's git status: clean
    set_mtime(tree, 40 * 86_400)
    verdict = worktrees.judge_worktree(tree, proj, live_cwds=[], period_s=PERIOD)
    assert (verdict.action, verdict.reason) == ("keep", "dirty")


def test_a_worktreeinclude_name_starting_with_a_colon_is_copied_with_the_others(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": ".env\n:notes\n",
                                               ".worktreeinclude": ".env\n:notes\n"})
    (repo / ".env").write_text("TOKEN=1\n")
    (repo / ":notes").write_text("mine\n")
    target = tmp_path / "checkout"
    target.mkdir()
    assert copy_included(str(repo), str(target)) == 2
    assert (target / ".env").read_text() == "TOKEN=1\n" and (target / ":notes").read_text() == "mine\n"
