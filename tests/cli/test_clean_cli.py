"""`claudetto clean` and `claudetto worktrees` in a subprocess, as a user runs them."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from app.core.sessions import proc_start_time
from tests.core.test_worktrees import GITIGNORE, add_worktree, age
from tests.support import SandboxEnv, git, make_repo, run_cli, set_mtime

CLEANED = re.compile(r"^CLEANED folders=\d+ bytes=\d+ files=\d+ worktrees=\d+ probes=\d+$")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "hello\n", ".gitignore": GITIGNORE})


def old_probe(sandbox: SandboxEnv, name: str) -> Path:
    probe = sandbox.claude_tmp / f"fswatch-probe-{name}"
    probe.mkdir(parents=True)
    (probe / "f").write_text("x")
    set_mtime(probe, 2 * 3600)
    return probe


def test_clean_json(repo: Path, sandbox: SandboxEnv) -> None:
    gone = age(add_worktree(repo, "gone"))
    dirty = add_worktree(repo, "dirty")
    (dirty / ".env").write_text("K=V\n")
    age(dirty)
    probe = old_probe(sandbox, "a")
    result = run_cli("clean", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["dry_run"] is False
    assert doc["cleaned"]["worktrees"] == 1 and doc["cleaned"]["probes"] == 1
    assert doc["cleaned"]["folders"] == 2 and doc["cleaned"]["files"] >= 4
    assert doc["worktrees_kept"] == [{"path": str(dirty), "reason": "dirty"}]
    assert doc["unknown_kept"] == 0
    assert not gone.exists() and not probe.exists() and dirty.exists()


def test_clean_dry_run_text(repo: Path, sandbox: SandboxEnv) -> None:
    wt = age(add_worktree(repo, "stale"))
    young = add_worktree(repo, "young")
    probe = old_probe(sandbox, "b")
    (sandbox.claude_tmp / "stray.bin").write_bytes(b"?")
    result = run_cli("clean", "--dry-run", cwd=repo)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert CLEANED.match(lines[0])
    assert " worktrees=1 probes=1" in lines[0] and lines[0].startswith("CLEANED folders=2 ")
    assert lines[1:] == [f"WORKTREES_KEPT young {young}", "UNKNOWN_KEPT 1"]
    assert wt.exists() and probe.exists()
    assert not (sandbox.state / "journal.jsonl").exists()


def test_clean_named_project_only(repo: Path, tmp_path: Path) -> None:
    other = make_repo(tmp_path / "other")
    mine = age(add_worktree(repo, "mine"))
    theirs = age(add_worktree(other, "theirs"))
    result = run_cli("clean", "--json", str(other), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cleaned"]["worktrees"] == 1
    assert mine.exists() and not theirs.exists()


def test_clean_missing_project_is_one_line_exit_1(tmp_path: Path) -> None:
    result = run_cli("clean", str(tmp_path / "nope"), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "no such project folder" in result.stderr


def test_clean_timeout(repo: Path, sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = old_probe(sandbox, "c")
    wt = age(add_worktree(repo, "w"))
    monkeypatch.setenv("CLAUDETTO_SWEEP_TIMEOUT_MS", "0")
    result = run_cli("clean", "--json", cwd=repo)
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert doc["timed_out"] is True and doc["cleaned"]["folders"] == 0
    assert "SWEEP_TIMEOUT_MS" in result.stderr
    assert probe.exists() and wt.exists()


def test_worktrees_json(repo: Path, sandbox: SandboxEnv) -> None:
    agent = age(add_worktree(repo, "agent-a1234567abc"))
    session = add_worktree(repo, "bold-oak-a3f2")
    manual = repo / ".claude" / "worktrees" / "manual"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(manual))
    age(manual)
    live_sid = str(uuid.uuid4())
    proc = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId=live_sid, cwd=str(manual),
                              procStart=proc_start_time(proc.pid))
        result = run_cli("worktrees", "--json", cwd=repo)
    finally:
        proc.kill()
        proc.wait()
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["worktrees"]}
    assert set(rows) == {"agent-a1234567abc", "bold-oak-a3f2", "manual"}
    a = rows["agent-a1234567abc"]
    assert a == {**a, "path": str(agent), "project": str(repo), "branch": "worktree-agent-a1234567abc",
                 "kind": "agent", "state": "unmanaged", "sessions": {}, "removable": True, "reason": "age"}
    assert a["size"] > 0
    assert (rows["bold-oak-a3f2"]["kind"], rows["bold-oak-a3f2"]["reason"]) == ("session", "young")
    assert (rows["manual"]["kind"], rows["manual"]["reason"], rows["manual"]["removable"]) == ("manual", "live", False)
    assert agent.exists() and session.exists()  # listing removes nothing


def test_worktrees_text_and_known_projects(repo: Path, sandbox: SandboxEnv, tmp_path: Path) -> None:
    wt = add_worktree(repo, "listed")
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(repo): {}}}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("worktrees", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["NAME", "BRANCH", "KIND", "STATE", "SESSIONS", "SIZE", "REMOVABLE", "REASON", "PATH"]
    assert str(wt) in result.stdout and "young" in result.stdout
