"""The hook entry as Claude runs it: `python -P -m hooks` with JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import paths
from tests.support import ROOT, SandboxEnv, hook_modules, run_hook

GARBAGE = [
    b"",
    b"   \n",
    b"not json at all",
    b"[1, 2, 3]",
    b'"just a string"',
    b"null",
    b'{"hook_event_name": 42}',
    b'{"session_id": "s"}',
    b'{"hook_event_name": "NoSuchEvent", "session_id": "s"}',
    b'{"hook_event_name": "PostToolUse", "tool_name": ["Edit"], "tool_input": "x", "session_id": 7, "cwd": 3}',
    b'{"hook_event_name": "UserPromptSubmit", "cwd": null}',
    b"\xff\xfe\x00garbage",
]


def all_log_lines(sandbox: SandboxEnv) -> list[str]:
    root = paths.log_root()
    if not root.exists():
        return []
    return [line for f in root.rglob("*.log") for line in f.read_text().splitlines()]


@pytest.mark.parametrize("raw", GARBAGE, ids=range(len(GARBAGE)))
def test_garbage_exits_0_prints_nothing_logs_one_line(raw: bytes, sandbox: SandboxEnv) -> None:
    result = run_hook(raw)
    assert result.returncode == 0
    assert result.stdout == b""
    assert result.stderr == b""
    lines = all_log_lines(sandbox)
    if raw.startswith(b'{"hook_event_name": "PostToolUse"') or raw.startswith(b'{"hook_event_name": "UserPromptSubmit"'):
        assert len(lines) <= 2  # a known event with bad fields: at most a line per part
    else:
        assert len(lines) == 1, lines


def test_ten_megabytes_of_junk(sandbox: SandboxEnv) -> None:
    result = run_hook(os.urandom(10 * 1024 * 1024))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert len(all_log_lines(sandbox)) == 1


HOT_EVENTS = [
    {"hook_event_name": "UserPromptSubmit", "prompt": "hi"},
    {"hook_event_name": "PreToolUse", "tool_name": "Write",
     "tool_input": {"file_path": "/nowhere/x.md", "content": "x"}, "tool_use_id": "t1"},
    {"hook_event_name": "PostToolUse", "tool_name": "Bash",
     "tool_input": {"command": "mktemp -d"}, "tool_response": {"stdout": "/tmp/tmp.abc\n"}},
    {"hook_event_name": "PostToolUse", "tool_name": "Edit",
     "tool_input": {"file_path": "/nowhere/f.py", "old_string": "a", "new_string": "b"}, "tool_response": {}},
]



@pytest.mark.parametrize("event", HOT_EVENTS, ids=lambda e: e["hook_event_name"] + ":" + e.get("tool_name", ""))
def test_hot_path_imports_no_ui_and_no_git(event: dict, sandbox: SandboxEnv, tmp_path: Path) -> None:
    payload = {"session_id": "s1", "cwd": str(tmp_path), "transcript_path": "/t", **event}
    loaded = hook_modules(payload, tmp_path)
    heavy = {m for m in loaded if m.split(".")[0] in {"textual", "rich", "humanize", "git", "gitdb"}}
    assert heavy == set() and "hooks.entry" in loaded


def test_a_project_with_its_own_app_and_hooks_packages_changes_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = tmp_path / "userproj"
    for pkg in ("app", "hooks"):
        (project / pkg).mkdir(parents=True)
        (project / pkg / "__init__.py").write_text("raise RuntimeError('user package imported')\n")
        (project / pkg / "__main__.py").write_text("raise RuntimeError('user main ran')\n")
    result = run_hook(b"not json", cwd=project)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    result = run_hook({"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(project), "prompt": "x"}, cwd=project)
    assert (result.returncode, result.stderr) == (0, b"")
    # and the same package is the one found without -P? (proves the test setup is real)
    unsafe = subprocess.run([sys.executable, "-m", "hooks"], input=b"{}", cwd=project, capture_output=True, check=False)
    assert b"user" in unsafe.stderr


def test_hook_log_line_names_the_cause(sandbox: SandboxEnv, tmp_path: Path) -> None:
    run_hook(b"[1]", cwd=tmp_path)
    lines = all_log_lines(sandbox)
    assert len(lines) == 1 and "not an object" in lines[0]


def test_hooks_json_wires_every_contract_event_through_the_launcher() -> None:
    config = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    events = set(config["hooks"])
    assert events == {"SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                      "WorktreeCreate", "WorktreeRemove"}
    for entries in config["hooks"].values():
        for entry in entries:
            for hook in entry["hooks"]:
                assert hook["type"] == "command"
                assert "${CLAUDE_PLUGIN_ROOT}/bin/claudetto-hook" in hook["command"]


def test_a_scratch_write_records_without_pathlib_or_json(sandbox: SandboxEnv, tmp_path: Path) -> None:
    scratch = sandbox.user_tmp / "report.md"
    scratch.write_text("x\n")
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": str(scratch), "content": "x\n"}, "tool_response": {}}
    loaded = hook_modules(payload, tmp_path)
    assert "app.core.recorder" in loaded and "app.core.ledger" in loaded  # both parts ran
    assert (sandbox.state / "gc" / "s1.json").exists() and (sandbox.state / "ledger.json").exists()
    assert {"pathlib", "json", "typing", "dataclasses"} & loaded == set()
