"""`.worktreeinclude` copying never writes outside the new checkout: a folder on an included
path that is, in the checkout, a symlink (to outside or even to inside) or not a folder at
all is never written through; that path is skipped and logged, the others still copied."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from app.core.worktree_create import copy_included
from tests.support import SandboxEnv, git, make_repo, run_hook


def create(cwd: Path, name: str):
    return run_hook({"hook_event_name": "WorktreeCreate", "cwd": str(cwd), "name": name,
                     "session_id": "s-1", "transcript_path": "/t"}, cwd=cwd)


def logged(sandbox: SandboxEnv) -> str:
    return "".join(p.read_text() for p in sandbox.root.rglob("*.log"))


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def repo_with_secrets(path: Path, include: str) -> Path:
    """A repository whose main checkout holds ignored `.env`, `conf/key.pem` and
    `conf/deep/key.pem`, all listed by `.worktreeinclude`."""
    repo = make_repo(path, files={"README.md": "x\n", ".gitignore": ".env\nconf/\n",
                                  ".worktreeinclude": include})
    (repo / ".env").write_text("TOKEN=1\n")
    (repo / "conf" / "deep").mkdir(parents=True)
    (repo / "conf" / "key.pem").write_text("TOP\n")
    (repo / "conf" / "deep" / "key.pem").write_text("DEEP\n")
    return repo


def test_a_tracked_link_to_outside_carries_nothing_there_and_the_rest_is_copied(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": ".env\nconf/\n",
                                               ".worktreeinclude": ".env\nconf/\n"})
    (repo / "conf").symlink_to(outside)
    git(repo, "add", "-f", "conf")
    git(repo, "commit", "-q", "-m", "conf is a link")
    (repo / "conf").unlink()
    (repo / "conf" / "deep").mkdir(parents=True)
    (repo / "conf" / "key.pem").write_text("TOP\n")
    (repo / "conf" / "deep" / "key.pem").write_text("DEEP\n")
    (repo / ".env").write_text("TOKEN=1\n")
    made = create(repo, "feature-x")
    assert made.returncode == 0, made.stderr
    target = repo / ".claude" / "worktrees" / "feature-x"
    assert list(outside.iterdir()) == []  # neither the file beside the link nor a folder below it
    assert (target / "conf").is_symlink()
    assert (target / ".env").read_text() == "TOKEN=1\n"
    log = logged(sandbox)
    assert "conf/key.pem skipped" in log and "conf/deep/key.pem skipped" in log


def test_a_link_that_stays_inside_the_checkout_is_not_written_through_either(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = repo_with_secrets(tmp_path / "repo", ".env\nconf/\n")
    target = tmp_path / "checkout"
    (target / "real").mkdir(parents=True)
    (target / "conf").symlink_to("real")
    assert copy_included(str(repo), str(target)) == 1
    assert (target / ".env").read_text() == "TOKEN=1\n"
    assert list((target / "real").iterdir()) == []


def test_a_link_deeper_on_the_way_is_refused_as_well(sandbox: SandboxEnv, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = repo_with_secrets(tmp_path / "repo", "conf/\n")
    target = tmp_path / "checkout"
    (target / "conf").mkdir(parents=True)
    (target / "conf" / "deep").symlink_to(outside)
    assert copy_included(str(repo), str(target)) == 1  # conf/key.pem, beside the link, is fine
    assert (target / "conf" / "key.pem").read_text() == "TOP\n"
    assert list(outside.iterdir()) == []
    assert "conf/deep/key.pem skipped" in logged(sandbox)


def test_a_parent_that_is_a_file_or_a_dangling_link_is_skipped_and_logged(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = repo_with_secrets(tmp_path / "repo", "conf/\n")
    target = tmp_path / "checkout"
    target.mkdir()
    (target / "conf").write_text("a file of the checkout\n")
    assert copy_included(str(repo), str(target)) == 0
    assert (target / "conf").read_text() == "a file of the checkout\n"
    nowhere = tmp_path / "nowhere"
    (target / "conf").unlink()
    (target / "conf").symlink_to(nowhere)
    assert copy_included(str(repo), str(target)) == 0
    assert not os.path.lexists(nowhere)  # not made through the dangling link
    assert logged(sandbox).count("conf/deep/key.pem skipped") == 2


def test_an_existing_name_is_never_overwritten_nor_written_through(sandbox: SandboxEnv, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    repo = repo_with_secrets(tmp_path / "repo", ".env\nconf/\n")
    target = tmp_path / "checkout"
    (target / "conf").mkdir(parents=True)
    (target / ".env").symlink_to(victim)
    (target / "conf" / "key.pem").write_text("the checkout's own\n")
    assert copy_included(str(repo), str(target)) == 1  # only conf/deep/key.pem
    assert victim.read_text() == "mine\n"
    assert (target / ".env").is_symlink()
    assert (target / "conf" / "key.pem").read_text() == "the checkout's own\n"
    assert tree(target) == [".env", "conf", "conf/deep", "conf/deep/key.pem", "conf/key.pem"]


def test_a_copy_keeps_the_mode_and_times_and_a_symlink_stays_a_symlink(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = repo_with_secrets(tmp_path / "repo", ".env\nconf/\n")
    (repo / "conf" / "key.pem").chmod(0o750)
    os.utime(repo / "conf" / "key.pem", ns=(1_000_000_000_000_000_000, 1_600_000_000_123_456_789))
    (repo / "conf" / "link").symlink_to("key.pem")
    target = tmp_path / "checkout"
    target.mkdir()
    assert copy_included(str(repo), str(target)) == 4
    copied = (target / "conf" / "key.pem").stat()
    assert stat.S_IMODE(copied.st_mode) == 0o750
    assert copied.st_mtime_ns == 1_600_000_000_123_456_789
    assert os.readlink(target / "conf" / "link") == "key.pem"
    assert (target / "conf" / "deep" / "key.pem").read_text() == "DEEP\n"
