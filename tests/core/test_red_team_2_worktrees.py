"""Red team, round two: WorktreeCreate and WorktreeRemove as Claude runs them (the hook in a
subprocess, real git): `.worktreeinclude` copying links that lead out, a branch of the
user's that already has the checkout's name, a checkout that changed after it was made."""

from __future__ import annotations

from pathlib import Path

from tests.support import SandboxEnv, git, make_repo, run_hook


def create(cwd: Path, name: str, session_id: str = "s-1"):
    return run_hook({"hook_event_name": "WorktreeCreate", "cwd": str(cwd), "name": name,
                     "session_id": session_id, "transcript_path": "/t"}, cwd=cwd)


def remove(cwd: Path, path: Path, session_id: str = "s-1"):
    return run_hook({"hook_event_name": "WorktreeRemove", "cwd": str(cwd), "session_id": session_id,
                     "worktree_path": str(path)}, cwd=cwd)


def precious_folder(tmp_path: Path) -> Path:
    precious = tmp_path / "precious"
    (precious / "deep").mkdir(parents=True)
    (precious / "deep" / "data.csv").write_text("1,2,3\n")
    return precious


def test_an_included_link_named_like_a_scratch_folder_never_takes_what_it_points_at(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`.worktreeinclude` copies an ignored `build` symlink (to a folder of the user's outside)
    into the checkout; removing the checkout takes the link, never what it points at."""
    precious = precious_folder(tmp_path)
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "build\n",
                                               ".worktreeinclude": "build\n"})
    (repo / "build").symlink_to(precious)
    made = create(repo, "agent-a1b2c3d4e5")
    assert made.returncode == 0, made.stderr
    target = repo / ".claude" / "worktrees" / "agent-a1b2c3d4e5"
    assert (target / "build").is_symlink()  # copied as the link it is
    remove(repo, target)
    assert (precious / "deep" / "data.csv").read_text() == "1,2,3\n"
    assert (repo / "build").is_symlink()


def test_an_included_file_under_a_linked_folder_is_not_written_outside(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The new checkout has `conf` as a tracked symlink to a folder outside, the main checkout
    a real `conf/` with an ignored secret that `.worktreeinclude` lists: the copy never goes
    through the link (nothing written into the user's folder outside)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "conf/\n",
                                               ".worktreeinclude": "conf/\n"})
    (repo / "conf").symlink_to(outside)
    git(repo, "add", "-f", "conf")
    git(repo, "commit", "-q", "-m", "conf is a link")
    (repo / "conf").unlink()  # locally a real folder (a typechange git shows)
    (repo / "conf" / "deep").mkdir(parents=True)
    (repo / "conf" / "deep" / "key.pem").write_text("SECRET\n")
    made = create(repo, "feature-x")
    assert made.returncode == 0, made.stderr
    assert list(outside.iterdir()) == []  # no secret, not even an empty folder, written outside


def test_a_users_own_branch_with_the_checkouts_name_keeps_its_commits(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user has a branch `worktree-exp` with a commit nowhere else: the checkout is made on
    it, and WorktreeRemove keeps the checkout (and the branch) rather than lose the commit."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "worktree-exp")
    (repo / "idea.txt").write_text("only here\n")
    git(repo, "add", "idea.txt")
    git(repo, "commit", "-q", "-m", "an idea")
    git(repo, "checkout", "-q", "main")
    made = create(repo, "exp")
    assert made.returncode == 0, made.stderr
    target = repo / ".claude" / "worktrees" / "exp"
    assert (target / "idea.txt").read_text() == "only here\n"
    result = remove(repo, target)
    assert result.returncode == 1 and b"unmerged" in result.stderr
    assert git(repo, "show", "worktree-exp:idea.txt") == "only here"


def test_a_registered_checkout_whose_folder_became_a_link_is_kept_and_its_target_untouched(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    precious = precious_folder(tmp_path)
    repo = make_repo(tmp_path / "repo")
    assert create(repo, "agent-a1b2c3d4e5").returncode == 0
    target = repo / ".claude" / "worktrees" / "agent-a1b2c3d4e5"
    git(repo, "worktree", "remove", str(target))
    target.symlink_to(precious)
    result = remove(repo, target)
    assert result.returncode == 1
    assert (precious / "deep" / "data.csv").read_text() == "1,2,3\n"
