"""`claudetto ledger [--json]`: every entry with `changed` (judged now) and `told`."""

from __future__ import annotations

import json
from pathlib import Path

from app.core import ledger, paths
from tests.support import SandboxEnv, run_cli, run_hook

SID = "s-ledger"


def prompt(cwd: Path) -> None:
    result = run_hook({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(cwd), "prompt": "x"})
    assert result.returncode == 0


def test_ledger_json_shape_changed_and_told(tmp_path: Path, sandbox: SandboxEnv) -> None:
    same, moved, gone = (tmp_path / n for n in ("same.py", "moved.py", "gone.py"))
    for f in (same, moved, gone):
        f.write_text(f.name)
        assert ledger.record_file(str(f), "main", SID)
    ledger.record_file(str(moved), "Explore", SID)
    moved.write_text("changed by the user")
    gone.unlink()

    result = run_cli("ledger", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    rows = {row["path"]: row for row in doc["files"]}
    assert list(rows) == [str(same), str(gone), str(moved)]  # oldest edit first
    for row in rows.values():
        assert set(row) >= {"path", "agent", "hash", "changed", "told"}
        assert len(row["hash"]) == 16 and row["hash"] == row["hash"].lower()
        int(row["hash"], 16)
    assert rows[str(same)]["hash"] == f"{ledger.fnv1a_64(b'same.py'):016x}"
    assert (rows[str(same)]["changed"], rows[str(same)]["told"]) == (False, False)
    assert (rows[str(moved)]["changed"], rows[str(moved)]["told"], rows[str(moved)]["agent"]) == (True, False, "Explore")
    assert (rows[str(gone)]["changed"], rows[str(gone)]["told"]) == (True, False)

    prompt(tmp_path)
    rows = {row["path"]: row for row in json.loads(run_cli("ledger", "--json").stdout)["files"]}
    assert rows[str(moved)]["told"] is True and rows[str(gone)]["told"] is True
    assert rows[str(same)]["told"] is False


def test_ledger_reads_without_writing(tmp_path: Path, sandbox: SandboxEnv) -> None:
    f = tmp_path / "a.txt"
    f.write_text("a")
    ledger.record_file(str(f), "main", SID)
    f.write_text("b")
    before = paths.ledger_file().read_bytes()
    assert run_cli("ledger", "--json").returncode == 0
    assert run_cli("ledger").returncode == 0
    assert paths.ledger_file().read_bytes() == before


def test_ledger_text_table(tmp_path: Path, sandbox: SandboxEnv) -> None:
    f = tmp_path / "a.txt"
    f.write_text("a")
    ledger.record_file(str(f), "main", SID)
    f.unlink()
    result = run_cli("ledger")
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split() == ["PATH", "AGENT", "SESSION", "HASH", "CHANGED", "TOLD"]
    assert row.split() == [str(f), "main", SID, f"{ledger.fnv1a_64(b'a'):016x}", "deleted", "no"]


def test_ledger_empty_and_corrupt(sandbox: SandboxEnv) -> None:
    result = run_cli("ledger", "--json")
    assert result.returncode == 0 and json.loads(result.stdout) == {"files": []}
    result = run_cli("ledger")
    assert result.returncode == 0 and "empty" in result.stdout
    paths.ledger_file().parent.mkdir(parents=True, exist_ok=True)
    paths.ledger_file().write_text("{oops")
    result = run_cli("ledger", "--json")
    assert result.returncode == 0 and result.stderr == ""
    assert json.loads(result.stdout) == {"files": []}
    assert list(paths.ledger_file().parent.glob("ledger.json.corrupt-*"))
