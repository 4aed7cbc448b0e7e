"""SessionStart through `python -P -m hooks`: the cleanup starts detached, the hook returns
at once, and the report lands in the session's gate log."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from app.core import paths
from tests.core.test_worktrees import add_worktree, age
from tests.support import SandboxEnv, git, make_repo, run_hook, set_mtime


def wait_for(path: Path, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            content = path.read_text()
            if text in content:
                return content
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def payload(cwd: Path, sid: str) -> dict[str, object]:
    return {"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(cwd),
            "source": "startup", "transcript_path": "/nonexistent.jsonl"}


def old_probe(sandbox: SandboxEnv, name: str = "x") -> Path:
    probe = sandbox.claude_tmp / f"fswatch-probe-{name}"
    probe.mkdir(parents=True)
    (probe / "f").write_text("x")
    set_mtime(probe, 2 * 3600)
    return probe


def test_session_start_cleans_detached_and_logs_the_report(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    wt = age(add_worktree(repo, "stale"))
    kept = add_worktree(repo, "fresh")
    probe = old_probe(sandbox)
    stray = sandbox.claude_tmp / "stray"
    stray.write_text("?")
    sid = str(uuid.uuid4())

    started = time.monotonic()
    result = run_hook(payload(repo, sid), cwd=repo)
    took = time.monotonic() - started
    assert result.returncode == 0 and result.stderr == b""
    assert b"CLEANED" not in result.stdout
    assert took < 5

    log = paths.session_log(str(repo), sid)
    content = wait_for(log, "UNKNOWN_KEPT")
    assert "CLEANED folders=2 " in content and " worktrees=1 probes=1" in content
    assert f"WORKTREES_KEPT young {kept}" in content
    assert "UNKNOWN_KEPT 1" in content
    assert not probe.exists() and not wt.exists() and kept.exists() and stray.exists()
    assert "worktree-stale" not in git(repo, "branch")


def test_session_start_from_inside_a_worktree_cleans_the_main_repo(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    here = add_worktree(repo, "here")
    age(here)
    other = age(add_worktree(repo, "other"))
    sid = str(uuid.uuid4())
    assert run_hook(payload(here, sid), cwd=here).returncode == 0
    content = wait_for(paths.session_log(str(here), sid), "UNKNOWN_KEPT")
    assert f"WORKTREES_KEPT live {here}" in content
    assert not other.exists() and here.exists()


def test_tiny_timeout_leaves_everything_and_says_so(sandbox: SandboxEnv, tmp_path: Path) -> None:
    probe = old_probe(sandbox)
    sid = str(uuid.uuid4())
    env = dict(os.environ, CLAUDETTO_SWEEP_TIMEOUT_MS="0")
    assert run_hook(payload(tmp_path, sid), cwd=tmp_path, env=env).returncode == 0
    content = wait_for(paths.session_log(str(tmp_path), sid), "stopped at SWEEP_TIMEOUT_MS")
    assert "CLEANED folders=0 bytes=0 files=0 worktrees=0 probes=0" in content
    assert probe.exists() and (probe / "f").exists()
    assert not (sandbox.state / "journal.jsonl").exists()


def test_bad_payloads_never_crash(sandbox: SandboxEnv, tmp_path: Path) -> None:
    probe = old_probe(sandbox)
    for bad in ({"hook_event_name": "SessionStart", "cwd": 7, "session_id": ["x"]},
                {"hook_event_name": "SessionStart"}):
        result = run_hook(bad, cwd=tmp_path)
        assert (result.returncode, result.stderr) == (0, b"")
    # the cleanup still ran (global temp rules need no project)
    deadline = time.monotonic() + 30
    while probe.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not probe.exists()
