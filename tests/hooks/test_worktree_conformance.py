"""The worktree events as Claude acts on them, through `python -P -m hooks` with real git.

WorktreeRemove: exit 0 means "the folder is gone" to Claude, so it is 0 exactly when the folder
is gone, and 1 with one stderr line naming the reason whenever it is still there.
WorktreeCreate: every name Claude accepts, folder and branch named as Claude names them.
SessionEnd `clear` / `resume`: the process goes on, so its checkout is handed over."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core import paths
from tests.support import SandboxEnv, git, make_repo, run_hook

SID = "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00"


def create(cwd: Path, name: str, session_id: str | None = SID) -> subprocess.CompletedProcess[bytes]:
    payload = {"hook_event_name": "WorktreeCreate", "cwd": str(cwd), "name": name, "transcript_path": "/t"}
    if session_id is not None:
        payload["session_id"] = session_id
    return run_hook(payload, cwd=cwd)


def remove(cwd: Path, path: object, *, env: dict[str, str] | None = None,
           **extra: object) -> subprocess.CompletedProcess[bytes]:
    payload: dict[str, object] = {"hook_event_name": "WorktreeRemove", "cwd": str(cwd), "session_id": SID,
                                  "transcript_path": "/t", **extra}
    if path is not None:
        payload["worktree_path"] = path if not isinstance(path, Path) else str(path)
    return run_hook(payload, cwd=cwd, env=env)


def registry(sandbox: SandboxEnv) -> dict[str, dict[str, Any]]:
    file = sandbox.state / "checkouts.json"
    return json.loads(file.read_text())["checkouts"] if file.exists() else {}


def one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    """The single stderr line of a refusal (and nothing on stdout)."""
    text = result.stderr.decode()
    assert result.stdout == b"" and text.endswith("\n") and text.count("\n") == 1, result
    assert "Traceback" not in text
    return text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": ".env\n"})


def made(repo: Path, name: str) -> Path:
    result = create(repo, name)
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.decode().splitlines()[-1])
    assert path.is_dir()
    return path


# --- WorktreeRemove: the exit code decides -------------------------------------------------


def test_a_removable_checkout_exits_0_and_is_gone(sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "feature/login")
    result = remove(repo, target)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert not os.path.lexists(target)
    assert registry(sandbox) == {}
    assert "worktree-feature+login" not in git(repo, "branch", "--list")


def test_a_dirty_checkout_exits_1_naming_dirty_and_stays(sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "bold-oak-a3f2")
    (target / "notes.txt").write_text("work in progress\n")
    result = remove(repo, target)
    assert result.returncode == 1
    line = one_line(result)
    assert "dirty" in line and str(target) in line
    assert (target / "notes.txt").read_text() == "work in progress\n"
    assert str(target) in registry(sandbox)


def test_a_git_ignored_secret_counts_as_dirty(sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "agent-a1b2c3d4e5")
    (target / ".env").write_text("SECRET=1\n")  # git worktree remove would delete it silently
    result = remove(repo, target)
    assert result.returncode == 1 and "dirty" in one_line(result)
    assert (target / ".env").read_text() == "SECRET=1\n"


def test_an_unmerged_commit_exits_1_naming_unmerged(sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "bold-oak-a3f2")
    (target / "new.txt").write_text("new\n")
    git(target, "add", "new.txt")
    git(target, "commit", "-q", "-m", "only here")
    result = remove(repo, target)
    assert result.returncode == 1 and "unmerged" in one_line(result)
    assert (target / "new.txt").exists()


@pytest.fixture
def live_pid() -> Iterator[int]:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_another_live_session_inside_exits_1_naming_live(sandbox: SandboxEnv, repo: Path, live_pid: int) -> None:
    target = made(repo, "bold-oak-a3f2")
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="other-session", cwd=str(target / "README.md"))
    result = remove(repo, target)
    assert result.returncode == 1 and "live" in one_line(result)
    assert target.is_dir()


def test_a_locked_checkout_is_kept_with_exit_1(sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "bold-oak-a3f2")
    git(repo, "worktree", "lock", str(target))
    result = remove(repo, target)
    assert result.returncode == 1 and "not_removed" in one_line(result)
    assert target.is_dir()


def test_an_unknown_path_exits_1_and_is_left_alone(sandbox: SandboxEnv, repo: Path) -> None:
    manual = repo / ".claude" / "worktrees" / "manual"
    git(repo, "worktree", "add", "-q", "-b", "mine", str(manual))
    result = remove(repo, manual)
    assert result.returncode == 1
    assert "unknown" in one_line(result)
    assert manual.is_dir() and (manual / "README.md").exists()
    plain = repo.parent / "some-folder"
    plain.mkdir()
    assert remove(repo, plain).returncode == 1 and plain.is_dir()


def test_a_missing_path_exits_0(sandbox: SandboxEnv, repo: Path) -> None:
    result = remove(repo, repo / ".claude" / "worktrees" / "never-was")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_a_registered_checkout_gone_behind_our_back_exits_0_and_is_forgotten(
        sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "agent-a1b2c3d4e5")
    # Claude's own startup sweep removes throwaway worktrees with git, never calling the hook.
    subprocess.run(["rm", "-rf", str(target)], check=True)
    result = remove(repo, target)
    assert (result.returncode, result.stderr) == (0, b"")
    assert registry(sandbox) == {}
    assert str(target) not in git(repo, "worktree", "list", "--porcelain")  # pruned


def test_a_symlink_to_a_registered_checkout_is_kept(sandbox: SandboxEnv, repo: Path, tmp_path: Path) -> None:
    target = made(repo, "agent-a1b2c3d4e5")
    link = tmp_path / "link"
    link.symlink_to(target)
    result = remove(repo, link)
    assert result.returncode == 1 and "symlink" in one_line(result)
    assert target.is_dir() and link.is_symlink()


@pytest.mark.parametrize("bad", [None, 42, "", ["/x"], "relative/path", "/tmp/with\0nul"],
                         ids=["absent", "int", "empty", "list", "relative", "nul"])
def test_a_malformed_payload_exits_1_with_one_line_and_removes_nothing(
        bad: object, sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "agent-a1b2c3d4e5")
    before = registry(sandbox)
    result = remove(repo, bad)
    assert result.returncode == 1
    one_line(result)
    assert target.is_dir() and registry(sandbox) == before


def test_an_internal_error_keeps_the_folder_with_exit_1(sandbox: SandboxEnv, repo: Path, tmp_path: Path) -> None:
    target = made(repo, "agent-a1b2c3d4e5")
    nowhere = tmp_path / "empty-bin"
    nowhere.mkdir()
    env = {**os.environ, "PATH": str(nowhere)}  # no git to be found: GitPython fails inside claudetto
    result = remove(repo, target, env=env)
    assert result.returncode == 1
    assert "internal error" in one_line(result)
    assert target.is_dir() and str(target) in registry(sandbox)


def test_an_internal_error_after_the_folder_went_still_exits_0(sandbox: SandboxEnv, repo: Path,
                                                               tmp_path: Path) -> None:
    target = made(repo, "agent-a1b2c3d4e5")
    subprocess.run(["rm", "-rf", str(target)], check=True)
    nowhere = tmp_path / "empty-bin"
    nowhere.mkdir()
    result = remove(repo, target, env={**os.environ, "PATH": str(nowhere)})  # the prune cannot run
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_garbage_on_stdin_names_no_event_and_exits_0(sandbox: SandboxEnv, repo: Path) -> None:
    result = run_hook(b'{"hook_event_name": "WorktreeRemove", "worktree_path": ', cwd=repo)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


# --- WorktreeCreate: every name Claude accepts ----------------------------------------------


def test_a_slashed_name_becomes_a_plus_folder_and_branch(sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "feature/login")
    assert target == repo / ".claude" / "worktrees" / "feature+login"
    assert git(target, "rev-parse", "--abbrev-ref", "HEAD") == "worktree-feature+login"
    entry = registry(sandbox)[str(target)]
    assert entry["name"] == "feature+login" and entry["branch"] == "worktree-feature+login"
    assert entry["kind"] == "session" and entry["sessions"] == {SID: True}
    nested = made(repo, "team/alice/fix-1")
    assert nested.name == "team+alice+fix-1"


@pytest.mark.parametrize("name", ["_scratch", "a" * 64, "-rf", "v1.2", "x/y.z/w_1"])
def test_names_claude_accepts_are_made(name: str, sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, name)
    folder = name.replace("/", "+")
    assert target == repo / ".claude" / "worktrees" / folder
    assert git(target, "rev-parse", "--abbrev-ref", "HEAD") == f"worktree-{folder}"
    assert str(target) in registry(sandbox)


@pytest.mark.parametrize("name", ["a" * 65, "a/../b", ".git", "x/.", "a//b", "..", ".", "/lead", "trail/",
                                  "x/.git/y", "a+b", "has space", "caf\u00e9", "new\nline", ""])
def test_names_claude_refuses_fail_loud(name: str, sandbox: SandboxEnv, repo: Path) -> None:
    result = create(repo, name)
    assert result.returncode != 0
    assert "invalid worktree name" in one_line(result)
    assert not (repo / ".claude" / "worktrees").exists()
    assert registry(sandbox) == {}


@pytest.mark.parametrize("name", ["bridge-7f3a", "job-nightly-1a2b3c4d", "bg-fix-tests-1a2b3c4d"])
def test_claudes_other_throwaway_names_need_no_session(name: str, sandbox: SandboxEnv, repo: Path) -> None:
    """Made for no session, remote control's and `--bg`'s names are nobody's (with one, a
    session's: tests/hooks/test_checkouts_create.py)."""
    result = create(repo, name, session_id=None)
    assert result.returncode == 0, result.stderr
    (entry,) = registry(sandbox).values()
    assert entry["kind"] == "workflow" and not entry.get("sessions")


@pytest.mark.parametrize(("name", "kind"), [("agent-a1b2c3d4", "agent"), ("wf_1a2b3c4d-abc-3", "workflow"),
                                            ("wf-12", "workflow")])
def test_throwaway_names_need_no_session(name: str, kind: str, sandbox: SandboxEnv, repo: Path) -> None:
    result = create(repo, name, session_id=None)
    assert result.returncode == 0, result.stderr
    assert next(iter(registry(sandbox).values()))["kind"] == kind


# --- SessionEnd: clear and resume hand the checkout over ------------------------------------


def wait_for(check: Callable[[], bool], deadline_s: float = 20.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def end_session(cwd: Path, reason: str) -> None:
    payload = {"hook_event_name": "SessionEnd", "session_id": SID, "cwd": str(cwd), "transcript_path": "/t",
               "reason": reason}
    log = paths.session_log(str(cwd), SID)

    def sweeps() -> int:
        return log.read_text().count("GC removed=") if log.exists() else 0

    before = sweeps()
    result = run_hook(payload, cwd=cwd)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    # the detached sweep it starts logs its end: wait for it, so no process outlives the test
    assert wait_for(lambda: sweeps() > before)


@pytest.mark.parametrize("reason", ["resume", "clear"])
def test_session_end_resume_or_clear_hands_the_checkout_over(reason: str, sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "bold-oak-a3f2")
    (target / "node_modules").mkdir()  # declared scratch: a release would delete it
    end_session(target, reason)
    entry = registry(sandbox)[str(target)]
    assert entry["sessions"] == {SID: True}  # still held: the process goes on in that folder
    assert entry["handover"]["session"] == SID and entry["handover"]["reason"] == reason
    assert entry["state"] == "active"
    assert (target / "node_modules").is_dir()


def test_session_end_for_good_marks_the_session_ended(sandbox: SandboxEnv, repo: Path) -> None:
    target = made(repo, "bold-oak-a3f2")
    end_session(target, "resume")
    end_session(target, "prompt_input_exit")
    # an ending for good is marked by the detached release, a process of its own beside the sweep
    assert wait_for(lambda: registry(sandbox)[str(target)]["sessions"] == {SID: False})
    entry = registry(sandbox)[str(target)]
    assert "handover" not in entry
