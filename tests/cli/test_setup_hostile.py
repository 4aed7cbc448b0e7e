"""`claudetto setup` on settings.json files it must not damage: numbers Python reads but cannot
write back as JSON, text no UTF-8 file can hold, something other than a file in its place,
and an entry of ours the user has tuned by hand. Each refusal is one line, exit 1, the file
byte for byte and no backup; each rewrite keeps what the user set."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from app.core import setup
from tests.support import SandboxEnv, run_cli


def refused(sandbox: SandboxEnv, *args: str) -> str:
    """Run setup, check it refused cleanly and left nothing beside the file; its one line."""
    before = sorted(p.name for p in sandbox.config.iterdir())
    result = run_cli("setup", *args, timeout=20)
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
    assert sorted(p.name for p in sandbox.config.iterdir()) == before  # no backup, no temp file
    return result.stderr


@pytest.mark.parametrize("number", ["1e400", "-1E+999", "NaN", "Infinity", "-Infinity"])
def test_a_number_json_cannot_hold_is_refused_and_the_file_kept(sandbox: SandboxEnv, number: str) -> None:
    settings = sandbox.config / "settings.json"
    original = f'{{\n  "cleanupPeriodDays": {number},\n  "model": "opus"\n}}\n'
    settings.write_text(original)
    for args in ((), ("--dry-run",)):
        line = refused(sandbox, *args)
        assert "a number JSON cannot hold" in line and number in line and "nothing changed" in line
    assert settings.read_text() == original


def test_big_integers_stay_exact_and_small_floats_stay_json(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    big = "123456789012345678901234567890123456789"
    settings.write_text(f'{{"seed": {big}, "neg": -{big}, "ratio": 0.25, "tiny": 1e-5}}\n')
    result = run_cli("setup")
    assert result.returncode == 0, result.stderr
    text = settings.read_text()
    assert f'"seed": {big},' in text and f'"neg": -{big},' in text
    data = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert data["ratio"] == 0.25 and data["tiny"] == 1e-5


def test_an_integer_too_long_to_keep_exactly_is_refused(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    original = '{"seed": ' + "7" * 5000 + "}\n"  # beyond Python's 4300-digit conversion limit
    settings.write_text(original)
    line = refused(sandbox)
    assert "5000 digits" in line and "not valid JSON" not in line
    assert settings.read_text() == original


def test_a_lone_surrogate_is_refused_before_any_backup(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    original = '{"statusLine": "\\ud800x", "model": "opus"}\n'
    settings.write_text(original)
    for args in ((), ("--dry-run",)):
        assert "\\ud800" in refused(sandbox, *args)
    assert settings.read_text() == original


def test_a_named_pipe_is_refused_without_waiting(sandbox: SandboxEnv) -> None:
    fifo = sandbox.config / "settings.json"
    os.mkfifo(fifo)
    for args in ((), ("--dry-run",), ("--uninstall",)):
        assert "is a named pipe, not a file" in refused(sandbox, *args)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_linked_named_pipe_is_refused_and_the_link_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    fifo = dotfiles / "settings.json"
    os.mkfifo(fifo)
    link = sandbox.config / "settings.json"
    link.symlink_to(fifo)
    assert "named pipe" in refused(sandbox)
    assert os.readlink(link) == str(fifo) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in dotfiles.iterdir()) == ["settings.json"]


def test_a_folder_or_a_socket_in_its_place_is_refused(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = sandbox.config / "settings.json"
    folder.mkdir()
    (folder / "keep").write_text("x")
    assert "is a folder, not a file" in refused(sandbox)
    assert (folder / "keep").read_text() == "x"
    folder.joinpath("keep").unlink()
    folder.rmdir()
    monkeypatch.chdir(sandbox.config)  # a relative bind: a socket path is limited to ~100 bytes
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("settings.json")
        assert "is a socket, not a file" in refused(sandbox)
        assert stat.S_ISSOCK(os.lstat(folder).st_mode)


def _ours(data: dict, event: str) -> list[tuple[int, dict, dict]]:
    return [(i, entry, hook) for i, entry in enumerate(data["hooks"][event]) for hook in entry["hooks"]
            if hook["command"].endswith("# claudetto")]


def test_an_upgrade_changes_only_the_command_of_a_tuned_entry(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    mine = {"matcher": "Bash", "hooks": [{"type": "command", "command": "mine.sh"}]}
    old = f"{sys.executable} -P -m hooks # claudetto"
    tuned = {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": old, "timeout": 20,
                                                 "statusMessage": "recording"}], "note": "by hand"}
    ends = [{"hooks": [{"type": "command", "command": old, "timeout": 60}]}]  # what an older claudetto wrote
    settings.write_text(json.dumps({"hooks": {"PostToolUse": [tuned, mine], "SessionEnd": ends}}, indent=2))
    result = run_cli("setup")
    assert result.returncode == 0, result.stderr
    data = json.loads(settings.read_text())
    assert data["hooks"]["PostToolUse"] == [
        {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": setup.hook_command(), "timeout": 20,
                                             "statusMessage": "recording"}], "note": "by hand"},
        mine,
    ]
    assert data["hooks"]["SessionEnd"] == [{"hooks": [{"type": "command", "command": setup.hook_command()}]}]
    # a timeout the user puts on the current entry is theirs, SessionEnd's too
    data["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] = 60
    settings.write_text(json.dumps(data, indent=2))
    again = run_cli("setup")
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert json.loads(settings.read_text())["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 60
    assert run_cli("setup", "--uninstall").returncode == 0
    assert json.loads(settings.read_text()) == {"hooks": {"PostToolUse": [mine]}}


def test_ours_in_a_shared_entry_moves_out_with_its_keys_and_copies_go(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    command = setup.hook_command()
    other = {"type": "command", "command": "/opt/guard", "timeout": 5}
    shared = {"matcher": "Bash", "hooks": [{"type": "command", "command": command, "timeout": 7}, other]}
    copy = {"hooks": [{"type": "command", "command": command}]}
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [shared], "SessionStart": [copy, copy]}}))
    assert run_cli("setup").returncode == 0
    data = json.loads(settings.read_text())
    assert data["hooks"]["PreToolUse"] == [
        {"matcher": "Bash", "hooks": [other]},
        {"matcher": setup.EVENTS["PreToolUse"], "hooks": [{"type": "command", "command": command, "timeout": 7}]},
    ]
    assert data["hooks"]["SessionStart"] == [copy]
    assert [event for event in setup.EVENTS if len(_ours(data, event)) != 1] == []
