"""The sandbox builder: a realistic environment where every rule fires, and nothing leaks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.paths import project_slug
from app.sandbox import LIVE_BUSY, STALE, build_sandbox
from tests.support import git


def with_env(box_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in box_env.items():
        monkeypatch.setenv(name, value)


def test_sessions_one_live_per_child_and_one_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.sessions import read_sessions

    with build_sandbox(tmp_path / "b", scale=0.1) as box:
        assert set(box.env) == {"HOME", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "TMPDIR", "CLAUDETTO_HOME",
                            "CLAUDETTO_MANAGED_SETTINGS"}
        with_env(box.env, monkeypatch)
        found = {s.session_id: s for s in read_sessions()}
        assert found[STALE].live is False
        live = [s for s in found.values() if s.live]
        assert len(live) == 2 == len(box.children)
        assert {s.pid for s in live} == {c.pid for c in box.children}
        children = list(box.children)
    assert all(c.poll() is not None for c in children)  # close() ended them
    monkeypatch.chdir(tmp_path)
    assert not any(s.live for s in read_sessions())


def test_without_processes_live_files_have_no_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.sessions import read_sessions

    box = build_sandbox(tmp_path / "b", live_processes=False, scale=0.1)
    with_env(box.env, monkeypatch)
    assert not box.children
    live = [s for s in read_sessions() if s.live]
    assert len(live) == 2 and all(s.pid is None for s in live)


def test_layout_mtimes_and_worktrees(tmp_path: Path) -> None:
    box = build_sandbox(tmp_path / "b", now=1_800_000_000.0, scale=0.1)
    box.close()
    assert box.claude_tmp.name == f"claude-{os.getuid()}"
    stale_folder = box.claude_tmp / project_slug(box.second_project) / STALE
    assert stale_folder.is_dir()
    assert os.lstat(stale_folder).st_mtime == pytest.approx(1_800_000_000.0 - 45 * 86400)
    probe = box.claude_tmp / "fswatch-probe-Ab3k9Q"
    assert os.lstat(probe).st_mtime == pytest.approx(1_800_000_000.0 - 3 * 3600)
    listed = git(box.project, "worktree", "list", "--porcelain")
    for name in ("old-clean", "dirty-wip", "unmerged-feature", "live-task", "agent-a3f9c2e1b7"):
        assert str(box.project / ".claude" / "worktrees" / name) in listed
    assert "not-a-worktree" not in listed
    assert (box.config / "projects" / project_slug(box.project) / f"{LIVE_BUSY}.jsonl").is_file()
    assert (box.config / "projects" / project_slug(box.project) / "memory" / "MEMORY.md").is_file()


def test_every_rule_fires(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the sandbox: the sweeps judge something of every kind, each way."""
    from app.core.outputs import judge

    with build_sandbox(tmp_path / "b", scale=0.1) as box:
        assert box.notes == []
        with_env(box.env, monkeypatch)
        monkeypatch.chdir(box.home)
        judged = judge()
        assert judged.problems == []
        seen = {(v.rule, v.kind, v.action, v.reason) for v in judged.verdicts}
    expected = {
        ("gc", "temp", "remove", "age"), ("gc", "temp", "keep", "young"), ("gc", "temp", "keep", "live"),
        ("gc", "temp", "skip", "outside_root"), ("gc", "temp", "skip", "symlink"),
        ("gc", "temp", "missing", "missing"), ("gc", "copy", "remove", "age"), ("gc", "scratch", "remove", "age"),
        ("probe", "probe", "remove", "age"), ("probe", "probe", "keep", "young"),
        ("session_folder", "session_folder", "remove", "age"), ("session_folder", "session_folder", "keep", "live"),
        ("session_folder", "session_folder", "keep", "young"),
        ("gate_log", "gate_log", "remove", "age"), ("gate_log", "gate_log", "keep", "live"),
        ("worktree", "worktree", "remove", "age"), ("worktree", "worktree", "keep", "dirty"),
        ("worktree", "worktree", "keep", "unmerged"), ("worktree", "worktree", "keep", "young"),
        ("worktree", "worktree", "keep", "live"), ("worktree", "worktree", "keep", "not_a_worktree"),
    }
    assert expected <= seen, sorted(expected - seen)


def test_ledger_has_a_changed_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core import ledger

    with build_sandbox(tmp_path / "b", scale=0.1) as box:
        with_env(box.env, monkeypatch)
        files = {Path(f.path).name: f for f in ledger.ledger_files()}
    assert files["app.py"].changed is True
    assert files["README.md"].changed is False
