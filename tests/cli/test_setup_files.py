"""`claudetto setup` changes only the hook entries of the user's settings.json: a symlink stays
a symlink, the mode, indentation, line ends and trailing newline stay, a read-only file is
refused, no lock file is left, and no SessionEnd timeout is asked for."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

from app.core import setup
from tests.support import SandboxEnv, run_cli

EVENTS = {"SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse",
          "WorktreeCreate", "WorktreeRemove"}


def ours(data: dict) -> list[tuple[str, dict]]:
    return [(event, h) for event, entries in data.get("hooks", {}).items() for e in entries
            for h in e["hooks"] if h["command"].endswith("# claudetto")]


def test_a_symlinked_settings_file_is_written_through_and_stays_a_link(sandbox: SandboxEnv, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    real = dotfiles / "settings.json"
    real.write_text('{\n  "model": "opus"\n}\n')
    link = sandbox.config / "settings.json"
    link.symlink_to(real)
    result = run_cli("setup")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    data = json.loads(real.read_text())
    assert data["model"] == "opus" and {e for e, _ in ours(data)} == EVENTS
    assert sorted(p.name for p in dotfiles.iterdir()) == ["settings.json"]  # no temp file, no backup there
    backups = list(sandbox.config.glob("settings.json.bak-*"))
    assert len(backups) == 1 and backups[0].read_text() == '{\n  "model": "opus"\n}\n'
    assert run_cli("setup", "--uninstall").returncode == 0
    assert link.is_symlink() and json.loads(real.read_text()) == {"model": "opus"}


def test_mode_indent_and_trailing_newline_are_kept(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text('{\n    "model": "opus",\n    "env": {\n        "A": "ü"\n    }\n}\n')
    settings.chmod(0o640)
    assert run_cli("setup").returncode == 0
    text = settings.read_text()
    assert stat.S_IMODE(settings.stat().st_mode) == 0o640
    assert text.startswith('{\n    "model": "opus",\n    "env": {\n        "A": "ü"\n    },\n    "hooks": {\n')
    assert text.endswith("\n}\n") and not text.endswith("\n\n")
    backup = next(sandbox.config.glob("settings.json.bak-*"))
    assert stat.S_IMODE(backup.stat().st_mode) == 0o640  # no wider than the file


def test_tabs_no_trailing_newline_and_crlf_are_kept(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text('{\n\t"model": "opus"\n}')
    assert run_cli("setup").returncode == 0
    text = settings.read_text()
    assert text.startswith('{\n\t"model": "opus",\n\t"hooks": {\n\t\t"SessionStart": [') and text.endswith("}")
    settings.write_bytes(b'{\r\n  "model": "opus"\r\n}\r\n')
    assert run_cli("setup").returncode == 0
    raw = settings.read_bytes()
    assert raw.endswith(b"}\r\n") and b"\n" not in raw.replace(b"\r\n", b"")


def test_one_line_or_new_file_gets_two_spaces_and_a_newline(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text('{"model": "opus"}')
    assert run_cli("setup").returncode == 0
    assert settings.read_text().startswith('{\n  "model": "opus",\n  "hooks": {\n    "SessionStart"')
    settings.unlink()
    assert run_cli("setup").returncode == 0
    text = settings.read_text()
    assert text.startswith('{\n  "hooks": {\n') and text.endswith("}\n")
    assert stat.S_IMODE(settings.stat().st_mode) == 0o644  # a new file: the usual umask 022


def test_a_read_only_file_is_refused_and_left_alone(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text('{\n  "model": "opus"\n}\n')
    settings.chmod(0o444)
    before = sorted(p.name for p in sandbox.config.iterdir())
    for args in (("setup",), ("setup", "--dry-run")):
        result = run_cli(*args)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1 and "read-only" in result.stderr and "Traceback" not in result.stderr
    assert settings.read_text() == '{\n  "model": "opus"\n}\n'
    assert stat.S_IMODE(settings.stat().st_mode) == 0o444
    assert sorted(p.name for p in sandbox.config.iterdir()) == before  # no backup, no lock


def test_a_read_only_link_target_is_refused(sandbox: SandboxEnv, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles.json"
    real.write_text("{}\n")
    real.chmod(0o444)
    (sandbox.config / "settings.json").symlink_to(real)
    result = run_cli("setup")
    assert result.returncode == 1 and "read-only" in result.stderr
    assert real.read_text() == "{}\n"


def test_no_lock_file_is_left_and_an_old_one_is_taken_away(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text("{}\n")
    (sandbox.config / "settings.json.lock").write_text("")  # left by an older claudetto
    assert run_cli("setup").returncode == 0
    names = {p.name for p in sandbox.config.iterdir()}
    assert "settings.json.lock" not in names
    assert not [n for n in names if n.endswith(".tmp")]
    assert run_cli("setup", "--uninstall").returncode == 0
    assert "settings.json.lock" not in {p.name for p in sandbox.config.iterdir()}


def test_a_lock_folder_of_someone_else_is_left(sandbox: SandboxEnv) -> None:
    (sandbox.config / "settings.json.lock").mkdir()
    (sandbox.config / "settings.json").write_text("{}\n")
    assert run_cli("setup").returncode == 0
    assert (sandbox.config / "settings.json.lock").is_dir()


def test_no_session_end_timeout_and_an_old_entry_is_upgraded_in_place(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    python = sys.executable
    old = {
        "model": "opus",
        "hooks": {
            "SessionEnd": [
                {"hooks": [{"type": "command", "command": "mine-first.sh"}]},
                {"hooks": [{"type": "command", "command": f"{python} -P -m hooks # claudetto", "timeout": 60}]},
                {"hooks": [{"type": "command", "command": "mine-last.sh", "timeout": 30}]},
            ],
        },
        "theme": "dark",
    }
    settings.write_text(json.dumps(old, indent=2) + "\n")
    result = run_cli("setup", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["changed"] is True
    data = json.loads(settings.read_text())
    assert list(data) == ["model", "hooks", "theme"]  # the hooks key stays where it was
    end = data["hooks"]["SessionEnd"]
    assert [h["command"] for e in end for h in e["hooks"]] == ["mine-first.sh", setup.hook_command(),
                                                              "mine-last.sh"]
    assert "timeout" not in end[1]["hooks"][0]
    assert end[2]["hooks"][0]["timeout"] == 30  # a user's own timeout is theirs
    assert all("timeout" not in h for _, h in ours(data))
    assert {e for e, _ in ours(data)} == EVENTS
    again = run_cli("setup")
    assert again.returncode == 0 and "nothing changed" in again.stdout


def test_concurrent_setups_leave_one_entry_per_event(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    env = dict(os.environ)
    code = "import sys; from app.cli import main; sys.exit(main())"
    results: list[int] = []

    def one() -> None:
        done = subprocess.run([sys.executable, "-P", "-c", code, "setup"], env=env, capture_output=True, check=False)
        results.append(done.returncode)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [0, 0, 0, 0]
    data = json.loads(settings.read_text())
    assert sorted(e for e, _ in ours(data)) == sorted(EVENTS)
    assert "settings.json.lock" not in {p.name for p in sandbox.config.iterdir()}
