"""`claudetto gc` / `claudetto-gc`: the table, the CONTRACT JSON, the dry run, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from app.core import paths
from app.core.gc_records import read_records
from app.core.state import write_json_atomic
from tests.support import SandboxEnv, run_cli, set_mtime

OLD = 8 * 86_400


def setup_outputs(sandbox: SandboxEnv) -> tuple[Path, Path]:
    old = sandbox.user_tmp / "old"
    old.mkdir()
    (old / "a.bin").write_bytes(b"a" * 9000)
    set_mtime(old, OLD)
    young = sandbox.user_tmp / "young"
    young.mkdir()
    records = [
        {"path": str(old), "kind": "copy", "session": "s1", "time": 1.0, "cwd": str(sandbox.home)},
        {"path": str(young), "kind": "temp", "session": "s1", "time": 2.0, "cwd": str(sandbox.home)},
    ]
    write_json_atomic(paths.gc_records_file("s1"), {"session": "s1", "records": records})
    return old, young


def test_gc_json_dry_run_then_real(sandbox: SandboxEnv) -> None:
    old, young = setup_outputs(sandbox)
    dry = run_cli("gc", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    doc = json.loads(dry.stdout)
    assert doc["dry_run"] is True and doc["removed"] == 1 and doc["freed"] > 0
    assert [(e["path"], e["status"], e["reason"], e["kind"], e["session"]) for e in doc["entries"]] == [
        (str(old), "would_remove", "age", "copy", "s1"),
        (str(young), "kept", "young", "temp", "s1"),
    ]
    assert all(isinstance(e["size"], int) for e in doc["entries"])
    assert old.exists() and len(read_records()) == 2
    real = run_cli("gc", "--json")
    assert real.returncode == 0, real.stderr
    doc = json.loads(real.stdout)
    assert doc["dry_run"] is False and doc["removed"] == 1
    assert doc["entries"][0]["status"] == "removed"
    assert not old.exists() and young.exists()
    assert [r.path for r in read_records()] == [str(young)]


def test_gc_text_table(sandbox: SandboxEnv) -> None:
    old, _ = setup_outputs(sandbox)
    done = run_cli("gc", "--dry-run")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["STATUS", "REASON", "SIZE", "KIND", "SESSION", "PATH"]
    assert lines[1].split()[:2] == ["would_remove", "age"] and lines[1].endswith(str(old))
    assert lines[-1].startswith("GC removed=1 freed=") and lines[-1].endswith("dry_run=true")


def test_claudetto_gc_entry_point_is_the_same_command(sandbox: SandboxEnv) -> None:
    setup_outputs(sandbox)
    code = "import sys; from app.cli import gc_main; sys.exit(gc_main())"
    done = subprocess.run([sys.executable, "-P", "-c", code, "--dry-run", "--json"], capture_output=True,
                          text=True, check=False, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dry_run"] is True


def test_gc_with_no_records(sandbox: SandboxEnv) -> None:
    done = run_cli("gc", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"dry_run": False, "entries": [], "removed": 0, "freed": 0}


def test_gc_usage_error_exits_2(sandbox: SandboxEnv) -> None:
    done = run_cli("gc", "--nonsense")
    assert done.returncode == 2 and "Traceback" not in done.stderr
