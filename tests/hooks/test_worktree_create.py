from __future__ import annotations

import json
from pathlib import Path

from tests.support import SandboxEnv, git, make_repo, run_hook


def create(cwd: Path, name: str, session_id: str | None = "s-1"):
    payload = {"hook_event_name": "WorktreeCreate", "cwd": str(cwd), "name": name, "transcript_path": "/t"}
    if session_id is not None:
        payload["session_id"] = session_id
    return run_hook(payload, cwd=cwd)


def test_creates_the_checkout_on_its_branch_and_registers_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = create(repo, "bold-oak-a3f2")
    assert result.returncode == 0, result.stderr
    target = repo / ".claude" / "worktrees" / "bold-oak-a3f2"
    assert result.stdout.decode().strip().splitlines()[-1] == str(target)
    assert git(target, "rev-parse", "--abbrev-ref", "HEAD") == "worktree-bold-oak-a3f2"
    registry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"]
    assert registry[str(target)]["sessions"] == {"s-1": True}
    assert registry[str(target)]["kind"] == "session"
    # asked again (a resume) from inside the checkout: same path, one more session
    again = create(target, "bold-oak-a3f2", "s-2")
    assert again.returncode == 0 and again.stdout.decode().strip() == str(target)
    registry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"]
    assert registry[str(target)]["sessions"] == {"s-1": True, "s-2": True}


def test_a_session_checkout_without_session_id_fails_loud(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = create(repo, "my-feature", session_id=None)
    assert result.returncode != 0 and result.stdout == b""
    assert result.stderr.decode().count("\n") == 1 and "session_id" in result.stderr.decode()
    assert not (repo / ".claude" / "worktrees" / "my-feature").exists()


def test_a_subagent_checkout_needs_no_session(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = create(repo, "agent-a1b2c3d4e5f6a7b8", session_id=None)
    assert result.returncode == 0, result.stderr
    registry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"]
    assert next(iter(registry.values()))["kind"] == "agent"


def test_bad_names_and_non_repos_fail_loud(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for name in ("../escape", "a//b", "", "a+b"):
        result = create(repo, name)
        assert result.returncode != 0 and result.stdout == b"" and result.stderr, name
    plain = tmp_path / "plain"
    plain.mkdir()
    result = create(plain, "x1")
    assert result.returncode != 0 and b"not inside a git repository" in result.stderr
    (repo / ".claude" / "worktrees" / "taken").mkdir(parents=True)
    result = create(repo, "taken")
    assert result.returncode != 0 and b"not a worktree" in result.stderr


def remove(cwd: Path, path: Path, session_id: str = "s-1"):
    return run_hook({"hook_event_name": "WorktreeRemove", "cwd": str(cwd), "session_id": session_id,
                     "worktree_path": str(path)}, cwd=cwd)


def test_remove_takes_a_clean_registered_checkout(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert create(repo, "agent-a1b2c3d4e5").returncode == 0
    target = repo / ".claude" / "worktrees" / "agent-a1b2c3d4e5"
    result = remove(repo, target)
    assert (result.returncode, result.stdout) == (0, b"")
    assert not target.exists()
    assert json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"] == {}
    journal = [json.loads(line) for line in (sandbox.state / "journal.jsonl").read_text().splitlines()]
    assert any(e["path"] == str(target) for e in journal)


def test_remove_keeps_dirty_unregistered_and_ignored_env(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": ".env\n"})
    assert create(repo, "agent-a1b2c3d4e5").returncode == 0
    target = repo / ".claude" / "worktrees" / "agent-a1b2c3d4e5"
    (target / ".env").write_text("SECRET=1\n")  # git worktree remove would delete it silently
    assert remove(repo, target).returncode == 1  # kept: Claude must not report it removed
    assert (target / ".env").read_text() == "SECRET=1\n"
    manual = repo / ".claude" / "worktrees" / "manual"
    git(repo, "worktree", "add", "-q", "-b", "mine", str(manual))
    assert remove(repo, manual).returncode == 1
    assert manual.exists()  # claudetto did not make it: left alone


def test_a_symlinked_or_unlisted_target_fails_loud(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    base = repo / ".claude" / "worktrees"
    base.mkdir(parents=True)
    (base / "linked").symlink_to(repo)  # would put Claude in the main checkout
    result = create(repo, "linked")
    assert result.returncode != 0 and result.stdout == b"" and b"symlink" in result.stderr
    fake = base / "fake"
    fake.mkdir()
    (fake / ".git").write_text("gitdir: /nowhere\n")
    result = create(repo, "fake")
    assert result.returncode != 0 and b"does not list it" in result.stderr
    assert not (sandbox.state / "checkouts.json").exists()


def test_a_repository_path_with_a_newline_fails_loud(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "my\nrepo")
    result = create(repo, "nl-test")
    assert result.returncode != 0 and result.stdout == b"" and result.stderr.count(b"\n") == 1


def test_a_project_behind_a_symlinked_parent_still_works(sandbox: SandboxEnv, tmp_path: Path) -> None:
    real = make_repo(tmp_path / "real" / "repo")
    (tmp_path / "home-link").symlink_to(tmp_path / "real")
    via = tmp_path / "home-link" / "repo"
    result = create(via, "feature-x")
    assert result.returncode == 0, result.stderr
    assert (real / ".claude" / "worktrees" / "feature-x" / ".git").is_file()
