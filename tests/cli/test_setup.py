from __future__ import annotations

import json
import shlex

from tests.support import SandboxEnv, run_cli


def hook_entries(settings: dict) -> list[tuple[str, str]]:
    return [(event, h["command"]) for event, entries in settings.get("hooks", {}).items()
            for e in entries for h in e["hooks"]]


def test_setup_adds_every_event_once_keeps_user_hooks_and_backs_up(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    user = {"model": "x", "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "mine.sh"}]}]}}
    settings.write_text(json.dumps(user))
    for _ in range(2):
        result = run_cli("setup")
        assert result.returncode == 0, result.stderr
    data = json.loads(settings.read_text())
    entries = hook_entries(data)
    ours = [e for e in entries if e[1].endswith("# claudetto")]
    assert sorted(e[0] for e in ours) == sorted(["SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse",
                                                  "PostToolUse", "WorktreeCreate", "WorktreeRemove"])
    # the venv's python by absolute path, isolated (-I: a project's own app/ or hooks/ stays out)
    assert all(shlex.split(c)[1:4] == ["-I", "-S", "-c"] and c.startswith("/") for _, c in ours)
    assert ("PostToolUse", "mine.sh") in entries and data["model"] == "x"
    end = [h for e in data["hooks"]["SessionEnd"] for h in e["hooks"]][0]
    assert "timeout" not in end  # a settings timeout would raise every SessionEnd hook's budget
    backups = list(sandbox.config.glob("settings.json.bak-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == user  # second run changed nothing
    assert "nothing changed" in run_cli("setup").stdout


def test_dry_run_and_uninstall(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    before = sorted(p.name for p in sandbox.config.iterdir())
    result = run_cli("setup", "--dry-run", "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["changed"] is True
    assert not settings.exists()
    assert sorted(p.name for p in sandbox.config.iterdir()) == before  # not even a lock file
    assert run_cli("setup").returncode == 0
    assert run_cli("setup", "--uninstall").returncode == 0
    assert json.loads(settings.read_text()) == {}


def test_corrupt_settings_are_left_alone(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text("{oops")
    result = run_cli("setup")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "not valid JSON" in result.stderr
    assert settings.read_text() == "{oops"
