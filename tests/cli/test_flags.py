"""`--read-only` and `--demo` hold for every subcommand, through the real console scripts:
`--read-only` turns a removing command into a dry run (one stderr line says so), `--demo`
runs it on a generated sandbox and leaves the real environment alone. Never ignored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.core.paths import project_slug
from tests.support import SandboxEnv, run_hook, set_mtime

BIN = Path(sys.executable).parent
OLD = 10 * 86_400


def script(name: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A console script as the user runs it (the sandbox env is in os.environ)."""
    exe = BIN / name
    assert exe.exists(), f"{exe} is not installed: pip install -e . into the venv"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env=dict(os.environ), check=False)


def recorded_old_temp(sandbox: SandboxEnv, tmp_path: Path) -> Path:
    """A folder `mktemp -d` made in a session that has ended, recorded by the real hook, old."""
    folder = sandbox.user_tmp / "tmp.Xk2mQ9pLz0"
    folder.mkdir()
    (folder / "blob.bin").write_bytes(b"x" * 20_000)
    payload = {"hook_event_name": "PostToolUse", "session_id": "gone-session", "cwd": str(tmp_path),
               "transcript_path": str(tmp_path / "t.jsonl"), "tool_name": "Bash",
               "tool_input": {"command": "mktemp -d"},
               "tool_response": {"stdout": f"{folder}\n", "stderr": "", "interrupted": False, "isImage": False}}
    done = run_hook(payload, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    assert (sandbox.state / "gc" / "gone-session.json").exists(), "the hook recorded nothing"
    set_mtime(folder, OLD)
    return folder


def old_claude_folders(sandbox: SandboxEnv) -> tuple[Path, Path]:
    """An old session folder of a session with no file (gone) and an old probe folder."""
    session = sandbox.claude_tmp / project_slug("/home/someone/proj") / "0b1e7d21-6a4f-4e8b-b2c5-7d1f0e9a3c42"
    (session / "tasks").mkdir(parents=True)
    (session / "tasks" / "b1.output").write_bytes(b"o" * 5000)
    for p in (session / "tasks" / "b1.output", session / "tasks", session):
        set_mtime(p, 60 * 86_400)
    probe = sandbox.claude_tmp / "fswatch-probe-Qw3r7T"
    probe.mkdir(parents=True)
    (probe / "probe").write_text("x")
    set_mtime(probe, 3 * 3600)
    return session, probe


def one_line(stderr: str, *words: str) -> None:
    assert stderr.count("\n") == 1, stderr
    assert all(w in stderr for w in words), stderr
    assert "Traceback" not in stderr


def demo_folders(sandbox: SandboxEnv) -> list[str]:
    return sorted(p.name for p in sandbox.user_tmp.iterdir() if p.name.startswith("claudetto-demo-"))


@pytest.mark.parametrize("argv", [("claudetto", "--read-only", "gc", "--json"),
                                  ("claudetto", "gc", "--read-only", "--json"),
                                  ("claudetto-gc", "--read-only", "--json")])
def test_read_only_gc_is_a_dry_run_and_says_so(sandbox: SandboxEnv, tmp_path: Path, argv: tuple[str, ...]) -> None:
    folder = recorded_old_temp(sandbox, tmp_path)
    records = (sandbox.state / "gc" / "gone-session.json").read_bytes()
    done = script(*argv)
    assert done.returncode == 0, done.stderr
    one_line(done.stderr, "--read-only", "dry run")
    doc = json.loads(done.stdout)
    assert doc["dry_run"] is True
    assert [(e["path"], e["status"]) for e in doc["entries"]] == [(str(folder), "would_remove")]
    assert folder.is_dir() and (folder / "blob.bin").exists()
    assert (sandbox.state / "gc" / "gone-session.json").read_bytes() == records  # no state written
    assert not (sandbox.state / "journal.jsonl").exists()
    real = script("claudetto-gc", "--json")  # the same sweep without the flag does remove it
    assert real.returncode == 0, real.stderr
    assert json.loads(real.stdout)["removed"] == 1 and not folder.exists()


def test_read_only_clean_is_a_dry_run(sandbox: SandboxEnv, tmp_path: Path) -> None:
    session, probe = old_claude_folders(sandbox)
    done = script("claudetto", "--read-only", "clean", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    one_line(done.stderr, "claudetto clean", "--read-only")
    doc = json.loads(done.stdout)
    assert doc["dry_run"] is True and doc["cleaned"]["probes"] == 1 and doc["cleaned"]["folders"] >= 2
    assert session.is_dir() and probe.is_dir()
    real = script("claudetto", "clean", "--json", cwd=tmp_path)
    assert real.returncode == 0, real.stderr
    assert not session.exists() and not probe.exists()


def test_read_only_setup_changes_nothing(sandbox: SandboxEnv) -> None:
    done = script("claudetto", "--read-only", "setup")
    assert done.returncode == 0, done.stderr
    one_line(done.stderr, "--read-only")
    assert "would add" in done.stdout
    assert not (sandbox.config / "settings.json").exists()


def test_read_only_with_dry_run_and_listing_commands_say_nothing_more(sandbox: SandboxEnv) -> None:
    done = script("claudetto", "--read-only", "gc", "--dry-run", "--json")
    assert done.returncode == 0 and done.stderr == ""
    listing = script("claudetto", "--read-only", "sessions", "--json")
    assert listing.returncode == 0 and listing.stderr == "" and json.loads(listing.stdout) == {"sessions": []}


def test_demo_clean_runs_on_the_demo_and_leaves_the_real_temp_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    session, probe = old_claude_folders(sandbox)
    before = sorted(str(p.relative_to(sandbox.claude_tmp)) for p in sandbox.claude_tmp.rglob("*"))
    done = script("claudetto", "--demo", "clean", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    one_line(done.stderr, "--demo", "generated sandbox")
    doc = json.loads(done.stdout)
    assert doc["dry_run"] is False
    # the demo's own old folders went: the 60-day session folder, the 3-hour probe, the old worktree
    assert doc["cleaned"]["probes"] == 1 and doc["cleaned"]["worktrees"] >= 1 and doc["cleaned"]["folders"] >= 3
    assert session.is_dir() and probe.is_dir()
    assert sorted(str(p.relative_to(sandbox.claude_tmp)) for p in sandbox.claude_tmp.rglob("*")) == before
    assert demo_folders(sandbox) == []  # the sandbox went away with the command


def test_demo_gc_through_claudetto_gc_leaves_the_real_records(sandbox: SandboxEnv, tmp_path: Path) -> None:
    folder = recorded_old_temp(sandbox, tmp_path)
    done = script("claudetto-gc", "--demo", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    paths = [e["path"] for e in doc["entries"]]
    assert paths and str(folder) not in paths
    assert all("/claudetto-demo-" in p for p in paths if "tmp.Outside000" not in p)
    assert doc["removed"] >= 1
    assert folder.is_dir() and (sandbox.state / "gc" / "gone-session.json").exists()
    assert demo_folders(sandbox) == []


def test_demo_and_read_only_together(sandbox: SandboxEnv, tmp_path: Path) -> None:
    done = script("claudetto", "--demo", "--read-only", "gc", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 2 and "--read-only" in done.stderr and "--demo" in done.stderr
    doc = json.loads(done.stdout)
    assert doc["dry_run"] is True and doc["removed"] >= 1
    assert {e["status"] for e in doc["entries"]} <= {"would_remove", "kept", "skip", "missing"}


def test_demo_refuses_an_absolute_project(sandbox: SandboxEnv, tmp_path: Path) -> None:
    done = script("claudetto", "--demo", "clean", str(tmp_path))
    assert done.returncode == 2
    one_line(done.stderr, "--demo", str(tmp_path))
    assert demo_folders(sandbox) == []


def test_demo_relative_project_is_inside_the_sandbox(sandbox: SandboxEnv) -> None:
    done = script("claudetto", "--demo", "worktrees", ".", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["worktrees"]
    assert rows and all("/claudetto-demo-" in r["path"] and r["project"].endswith("/code/webshop") for r in rows)


def test_unknown_flag_is_a_usage_error() -> None:
    done = script("claudetto-gc", "--bogus")
    assert done.returncode == 2 and "unrecognized arguments: --bogus" in done.stderr
