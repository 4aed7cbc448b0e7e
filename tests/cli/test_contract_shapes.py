"""Every `--json` document has the keys CONTRACT.md promises (extra keys are allowed)."""

from __future__ import annotations

import json
from pathlib import Path

from app.sandbox import build_sandbox
from tests.support import run_cli


def keys(doc: dict, *required: str) -> None:
    assert set(required) <= set(doc), sorted(set(required) - set(doc))


def test_json_shapes_on_the_sandbox(tmp_path: Path, monkeypatch) -> None:
    box = build_sandbox(tmp_path / "box")
    try:
        for name, value in box.env.items():
            monkeypatch.setenv(name, value)

        def run(*args: str) -> dict:
            result = run_cli(*args, "--json", cwd=box.project)
            assert result.returncode == 0, result.stderr
            return json.loads(result.stdout)

        doc = run("sessions")
        assert doc["sessions"] and all(isinstance(s["live"], bool) for s in doc["sessions"])
        for s in doc["sessions"]:
            keys(s, "session_id", "pid", "cwd", "status", "live", "file")

        doc = run("gc", "--dry-run")
        keys(doc, "dry_run", "entries", "removed", "freed")
        assert doc["dry_run"] is True and doc["entries"]
        for e in doc["entries"]:
            keys(e, "path", "kind", "session", "size", "status", "reason")
            assert e["kind"] in {"temp", "worktree", "copy", "config", "scratch"}
            assert e["status"] in {"removed", "would_remove", "kept", "skip", "missing"}
            assert isinstance(e["size"], int)

        doc = run("clean", "--dry-run")
        keys(doc, "dry_run", "cleaned", "worktrees_kept", "unknown_kept")
        keys(doc["cleaned"], "folders", "bytes", "files", "worktrees", "probes")
        assert {k["reason"] for k in doc["worktrees_kept"]} <= {
            "live", "young", "not_a_worktree", "dirty", "unmerged", "not_removed"}

        doc = run("worktrees")
        assert doc["worktrees"]
        for w in doc["worktrees"]:
            keys(w, "path", "project", "name", "branch", "size", "kind", "state", "sessions", "removable", "reason")
            assert w["kind"] in {"session", "agent", "workflow", "manual"}
            assert w["state"] in {"active", "released", "cut_short", "unmanaged"}
            assert isinstance(w["sessions"], dict) and isinstance(w["removable"], bool)

        doc = run("ledger")
        assert doc["files"]
        for f in doc["files"]:
            keys(f, "path", "agent", "hash", "changed", "told")
            assert len(f["hash"]) == 16 and f["hash"] == f["hash"].lower()
            int(f["hash"], 16)
    finally:
        box.close()
