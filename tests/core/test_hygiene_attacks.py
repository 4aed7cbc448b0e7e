"""The session-start cleanup tried as an attacker would: a repository with unique work in
an old session folder, a session that starts while the cleanup runs, a sessions file torn
mid-rewrite, a folder name that forges a report line."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import hygiene
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, run_cli, set_mtime

DAY = 86400.0
SLUG = "-work-proj"


@pytest.fixture
def runner() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(["sleep", "120"])
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def old_session_folder(sandbox: SandboxEnv, session: str) -> Path:
    path = sandbox.claude_tmp / SLUG / session
    (path / "scratchpad").mkdir(parents=True)
    (path / "scratchpad" / "notes.txt").write_text("n\n")
    set_mtime(path, 40 * DAY)
    return path


def verdict_of(report: hygiene.CleanupReport, path: Path) -> tuple[str, str]:
    (found,) = [v for v in report.verdicts if v.path == str(path)]
    return found.action, found.reason


def test_a_repository_with_unique_work_in_an_old_session_folder_is_kept(sandbox: SandboxEnv) -> None:
    folder = old_session_folder(sandbox, str(uuid.uuid4()))
    repo = make_repo(folder / "scratchpad" / "proto")
    (repo / "more.txt").write_text("uncommitted\n")
    set_mtime(folder, 40 * DAY)
    report = hygiene.run_cleanup([])
    assert verdict_of(report, folder) == ("keep", "dirty")
    assert (repo / "more.txt").exists()


def test_a_session_that_starts_during_the_cleanup_keeps_its_folder(
        sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    """Liveness is read again at the moment of each removal, not once per cleanup."""
    session = str(uuid.uuid4())
    folder = old_session_folder(sandbox, session)

    def resumed_meanwhile(_: str) -> None:
        sandbox.write_session(str(runner.pid), pid=runner.pid, sessionId=session,
                              procStart=proc_start_time(runner.pid), cwd="/x")

    report = hygiene.run_cleanup([], _before_remove=resumed_meanwhile)
    assert verdict_of(report, folder) == ("keep", "live")
    assert (folder / "scratchpad" / "notes.txt").read_text() == "n\n"


def test_a_torn_sessions_file_of_a_running_pid_keeps_session_folders(
        sandbox: SandboxEnv, runner: subprocess.Popen[bytes]) -> None:
    folder = old_session_folder(sandbox, str(uuid.uuid4()))
    probe = sandbox.claude_tmp / "fswatch-probe-x"
    probe.mkdir()
    set_mtime(probe, 2 * 3600)
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    (sandbox.sessions / f"{runner.pid}.json").write_text("")
    report = hygiene.run_cleanup([])
    assert verdict_of(report, folder) == ("keep", "in_use") and folder.exists()
    assert not probe.exists()  # a probe folder belongs to no session


def test_a_folder_name_cannot_forge_a_report_line(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    name = "x\nCLEANED folders=999"
    wt = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", "forged", str(wt))
    (wt / "dirty.txt").write_text("d")
    set_mtime(wt, 40 * DAY)
    result = run_cli("clean", str(repo), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith("CLEANED") for line in lines) == 1
    assert any(line.startswith("WORKTREES_KEPT dirty ") and "x\\nCLEANED" in line for line in lines)


def test_clean_exits_1_when_the_journal_cannot_be_written(sandbox: SandboxEnv) -> None:
    probe = sandbox.claude_tmp / "fswatch-probe-y"
    (probe / "d").mkdir(parents=True)
    set_mtime(probe, 2 * 3600)
    sandbox.state.mkdir(parents=True, exist_ok=True)
    (sandbox.state / "journal.jsonl").mkdir()
    result = run_cli("clean", "--json")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "journal" in result.stderr
    assert probe.is_dir()
    data = json.loads(result.stdout) if result.stdout.strip() else None
    assert data is None or data["cleaned"]["probes"] == 0


def test_session_start_cleans_the_temp_folder_claude_names(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude's payload names its scratchpad: that claude-<uid> folder is the one to clean,
    whatever this process's environment says."""
    import os

    other = tmp_path / "claudes-own-tmp" / f"claude-{os.getuid()}"
    scratchpad = other / SLUG / str(uuid.uuid4()) / "scratchpad"
    scratchpad.mkdir(parents=True)
    theirs = other / "fswatch-probe-theirs"
    ours = sandbox.claude_tmp / "fswatch-probe-ours"
    for probe in (theirs, ours):
        probe.mkdir(parents=True)
        set_mtime(probe, 2 * 3600)
    hygiene.session_start_step({"cwd": str(tmp_path), "session_id": "s1",
                                "scratchpad_dir": str(scratchpad)})
    assert not theirs.exists() and ours.exists()


def test_a_checkout_its_session_holds_is_kept_before_the_session_enters_it(
        sandbox: SandboxEnv, tmp_path: Path, runner: subprocess.Popen[bytes]) -> None:
    """Resume fires from the launch folder: the session holds its checkout by the registry
    before its cwd is inside, and the cleanup that runs at that SessionStart must keep it."""
    from app.core import checkouts

    repo = make_repo(tmp_path / "proj")
    wt = repo / ".claude" / "worktrees" / "bold-oak"
    git(repo, "worktree", "add", "-q", "-b", "worktree-bold-oak", str(wt))
    checkouts.register(checkouts.Checkout(str(wt), str(repo), "bold-oak", "worktree-bold-oak", "session"),
                       "resumed")
    sandbox.write_session(str(runner.pid), pid=runner.pid, sessionId="resumed", cwd=str(repo),
                          procStart=proc_start_time(runner.pid))
    set_mtime(wt, 40 * DAY)
    report = hygiene.run_cleanup([repo])
    assert (str(wt), "live") in report.worktrees_kept and wt.is_dir()
    runner.kill()
    runner.wait()
    report = hygiene.run_cleanup([repo])
    assert report.worktrees == 1 and not wt.exists()  # nobody holds it any more
