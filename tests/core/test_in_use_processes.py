"""A folder some running process works in is never removed, whatever its session's state: a
shell `cd`-ed into an old worktree, a dev server started in a `mktemp -d` folder a week ago,
a process that walks into a session folder while the cleanup removes it."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

from app.core import checkouts, hygiene, worktrees
from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

DAY = 86400.0
PERIOD = 30 * DAY
SID = "5b3c1f0e-9a8d-4c7b-b6a5-0f1e2d3c4b5a"



def old_session_folder(sandbox: SandboxEnv) -> Path:
    path = sandbox.claude_tmp / "-work-proj" / str(uuid.uuid4())
    (path / "scratchpad").mkdir(parents=True)
    (path / "scratchpad" / "notes.txt").write_text("n\n")
    set_mtime(path, 40 * DAY)
    return path


def old_worktree(tmp_path: Path, name: str = "feature") -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "proj", files={"README.md": "hello\n"})
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(path))
    set_mtime(path, PERIOD + DAY)
    return repo, path


def test_an_old_session_folder_a_process_works_in_is_kept_until_it_ends(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = old_session_folder(sandbox)
    started.append(subprocess.Popen(["sleep", "60"], cwd=folder / "scratchpad"))
    report = hygiene.run_cleanup([])
    (verdict,) = [v for v in report.verdicts if v.path == str(folder)]
    assert (verdict.action, verdict.reason) == ("keep", "in_use")
    assert (folder / "scratchpad" / "notes.txt").exists()
    started.pop().kill()
    hygiene.run_cleanup([])
    assert not folder.exists()


def test_a_process_that_walks_in_during_the_cleanup_keeps_the_folder_whole(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """Judged unused, then a process starts in it right before the removal: the last check,
    made where the folder was moved, finds it and puts the folder back."""
    folder = old_session_folder(sandbox)

    def walks_in(_: str) -> None:
        started.append(subprocess.Popen(["sleep", "60"], cwd=folder / "scratchpad"))

    report = hygiene.run_cleanup([], _before_remove=walks_in)
    (verdict,) = [v for v in report.verdicts if v.path == str(folder)]
    assert (verdict.action, verdict.reason) == ("keep", "in_use")
    assert (folder / "scratchpad" / "notes.txt").read_text() == "n\n"


def test_a_worktree_a_shell_is_in_is_kept_by_clean_and_listed_in_use(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    repo, path = old_worktree(tmp_path)
    started.append(subprocess.Popen(["sleep", "60"], cwd=path))
    listed = json.loads(run_cli("worktrees", "--json", str(repo)).stdout)["worktrees"]
    (row,) = [w for w in listed if w["path"] == str(path)]
    assert (row["removable"], row["reason"]) == (False, "in_use")
    cleaned = run_cli("clean", "--json", str(repo))
    assert cleaned.returncode == 0, cleaned.stderr
    assert {"path": str(path), "reason": "in_use"} in json.loads(cleaned.stdout)["worktrees_kept"]
    assert (path / "README.md").exists()
    started.pop().kill()
    assert worktrees.remove_worktree(path, repo, live_cwds=[], period_s=PERIOD).status == "removed"


def test_worktree_remove_keeps_a_checkout_another_process_works_in(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """Claude asks to remove its session's checkout while a dev server it started there runs on."""
    repo = make_repo(tmp_path / "proj", files={"README.md": "hello\n"})
    made = checkouts.create_checkout(str(repo), "work", SID)
    started.append(subprocess.Popen(["sleep", "60"], cwd=made.path))
    payload = {"hook_event_name": "WorktreeRemove", "session_id": SID, "cwd": str(repo),
               "worktree_path": made.path}
    done = run_hook(payload, cwd=repo)
    assert done.returncode == 1 and b"in_use" in done.stderr, done.stderr
    assert Path(made.path, "README.md").exists()
    started.pop().kill()
    assert run_hook(payload, cwd=repo).returncode == 0
    assert not Path(made.path).exists()


def test_a_process_starting_in_a_worktree_after_the_judgement_keeps_it(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    repo, path = old_worktree(tmp_path, "late")

    def walks_in(_: str) -> None:
        started.append(subprocess.Popen(["sleep", "60"], cwd=path))

    done = worktrees.remove_worktree(path, repo, live_cwds=[], period_s=PERIOD, _before_remove=walks_in)
    assert (done.status, done.verdict.reason) == ("kept", "in_use")
    assert (path / "README.md").exists() and (path / ".git").is_file()
