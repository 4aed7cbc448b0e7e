"""Red team, round two: `claudetto setup` on hostile settings.json and `claudetto supersede`
on memory files whose lines are not what Python's `splitlines` thinks they are. Driven as a
user does: the CLI in a subprocess, real files in the sandbox."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support import SandboxEnv, run_cli


def _memory_file(sandbox: SandboxEnv, text: str) -> Path:
    folder = sandbox.config / "projects" / "-work-proj" / "memory"
    folder.mkdir(parents=True)
    path = folder / "notes.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_setup_keeps_settings_json_valid_json_when_a_number_overflows(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text('{\n  "cleanupPeriodDays": 1e400,\n  "model": "opus"\n}\n')
    result = run_cli("setup")
    after = settings.read_text()
    # either refused with nothing changed, or written as strict JSON (what Claude's parser takes)
    if result.returncode != 0:
        assert after == '{\n  "cleanupPeriodDays": 1e400,\n  "model": "opus"\n}\n'
    else:
        data = json.loads(after, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
        assert data["model"] == "opus"


def test_setup_refuses_a_lone_surrogate_cleanly_and_keeps_the_file(sandbox: SandboxEnv) -> None:
    """A `\\ud800` escape parses but cannot be written as UTF-8: one clear line, no traceback,
    the file as it was."""
    settings = sandbox.config / "settings.json"
    original = '{"statusLine": "\\ud800x", "model": "opus"}\n'
    settings.write_text(original)
    result = run_cli("setup")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert settings.read_text() == original


def test_setup_keeps_another_tools_hook_in_the_entry_it_shares_with_ours(sandbox: SandboxEnv) -> None:
    """Our hook and another tool's in one entry with a matcher: setup twice, then uninstall,
    leaves the other tool's hook with its matcher, exactly once."""
    settings = sandbox.config / "settings.json"
    assert run_cli("setup").returncode == 0
    data = json.loads(settings.read_text())
    ours = data["hooks"]["PreToolUse"][0]["hooks"][0]
    other = {"type": "command", "command": "/opt/guard --check", "timeout": 5}
    data["hooks"]["PreToolUse"] = [{"matcher": "Bash", "hooks": [other, ours]}]
    settings.write_text(json.dumps(data, indent=2))
    assert run_cli("setup").returncode == 0
    assert run_cli("setup").returncode == 0
    entries = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert {"matcher": "Bash", "hooks": [other]} in entries and len(entries) == 2
    assert run_cli("setup", "--uninstall").returncode == 0
    assert json.loads(settings.read_text())["hooks"] == {"PreToolUse": [{"matcher": "Bash", "hooks": [other]}]}


def test_supersede_strikes_the_line_grep_numbers(sandbox: SandboxEnv) -> None:
    path = _memory_file(sandbox, "# Notes\nThe build uses make\x0c (see page 2)\n"
                                 "Deploys go through CI\nThe port is 8080\n")
    result = run_cli("supersede", str(path), "--line", "4", "--correction", "The port is 9090")
    assert result.returncode == 0, result.stderr
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[2] == "Deploys go through CI"  # a right fact, not struck
    assert lines[3] == "~~The port is 8080~~"


def test_supersede_keeps_the_rest_of_a_line_with_a_unicode_separator(sandbox: SandboxEnv) -> None:
    path = _memory_file(sandbox, "# Notes\nUse port 8080\u2028for the dev server\nDeploys go through CI\n")
    result = run_cli("supersede", str(path), "--line", "2", "--correction", "Use port 9090")
    assert result.returncode == 0, result.stderr
    text = path.read_text(encoding="utf-8")
    assert "Deploys go through CI\n" in text
    correction = [line for line in text.split("\n") if "Correction (" in line]
    assert correction and correction[0].endswith("Use port 9090")  # nothing of the user's glued on


def test_setup_again_keeps_what_the_user_set_on_our_entry(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    assert run_cli("setup").returncode == 0
    data = json.loads(settings.read_text())
    (entry,) = data["hooks"]["PostToolUse"]
    entry["matcher"] = "Edit|Write"  # the user wants no Bash records
    entry["hooks"][0]["timeout"] = 20
    settings.write_text(json.dumps(data, indent=2))
    assert run_cli("setup").returncode == 0
    (entry,) = json.loads(settings.read_text())["hooks"]["PostToolUse"]
    assert entry["matcher"] == "Edit|Write" and entry["hooks"][0].get("timeout") == 20


def test_setup_refuses_settings_with_comments_and_keeps_them(sandbox: SandboxEnv) -> None:
    """JSON with comments (as some editors keep settings) is refused whole: one line, no
    backup to confuse, the file byte for byte."""
    settings = sandbox.config / "settings.json"
    original = '{\n  // my model\n  "model": "opus",\n  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}\n}\n'
    settings.write_text(original)
    result = run_cli("setup")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "not valid JSON" in result.stderr
    assert settings.read_text() == original
    assert not list(sandbox.config.glob("settings.json.bak-*"))


def test_two_supersedes_from_one_listing_strike_the_lines_listed(sandbox: SandboxEnv) -> None:
    lines = [f"Fact number {i}" for i in range(1, 41)]
    path = _memory_file(sandbox, "# Notes\n" + "\n".join(lines) + "\n")
    # both line numbers read from the file as it is now (grep -n, `claudetto memory`)
    for number in (2, 41):
        result = run_cli("supersede", str(path), "--line", str(number), "--correction", f"fixed {number}")
        if result.returncode != 0:  # refusing the stale number is fine; striking another line is not
            assert "changed" in result.stderr or "line" in result.stderr
    text = path.read_text(encoding="utf-8")
    assert "~~Fact number 39~~" not in text  # never listed: a right fact
    for i in range(2, 40):
        assert f"Fact number {i}\n" in text


def test_supersede_refuses_a_read_only_memory_file(sandbox: SandboxEnv) -> None:
    path = _memory_file(sandbox, "# Notes\nThe port is 8080\n")
    path.chmod(0o444)
    result = run_cli("supersede", str(path), "--line", "2", "--correction", "The port is 9090")
    assert result.returncode == 1 and "read-only" in result.stderr
    assert path.read_text(encoding="utf-8") == "# Notes\nThe port is 8080\n"


def test_setup_refuses_a_settings_json_that_is_a_named_pipe(sandbox: SandboxEnv) -> None:
    os.mkfifo(sandbox.config / "settings.json")
    result = run_cli("setup", timeout=5)
    assert result.returncode == 1 and "Traceback" not in result.stderr
