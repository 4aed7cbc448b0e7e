"""Sessions of another config folder (a second account: `CLAUDE_CONFIG_DIR=~/.claude-work
claude`) count as live when a running process of the same home uses that folder; another
home's (another user's world, a sandbox, a parallel test) never does."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

from app.core import sessions
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, execed


def other_claude(config: Path, home: str, tmp: str | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """A Claude of `config` in `home`, sharing our temp folders unless given its own `tmp`."""
    own_tmp = {"TMPDIR": tmp, "CLAUDE_CODE_TMPDIR": tmp} if tmp else {}
    child = execed(subprocess.Popen(["sleep", "60"], env={**os.environ, "HOME": home,
                                                          "CLAUDE_CONFIG_DIR": str(config), **own_tmp}))
    session = str(uuid.uuid4())
    (config / "sessions").mkdir(parents=True)
    (config / "sessions" / f"{child.pid}.json").write_text(json.dumps(
        {"pid": child.pid, "sessionId": session, "cwd": "/srv/work", "procStart": proc_start_time(child.pid)}))
    return child, session


def test_a_second_accounts_running_session_is_live(sandbox: SandboxEnv) -> None:
    child, session = other_claude(sandbox.home / ".claude-work", str(sandbox.home))
    try:
        live = sessions.liveness()
        assert session in live.ids and "/srv/work" in live.cwds
    finally:
        child.kill()
        child.wait()
    assert session not in sessions.liveness().ids


def test_a_config_folder_of_another_home_is_not_read(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Another home with temp folders of its own (a sandbox, a parallel test): its sessions
    are no concern of this home's cleanup. (One sharing our Claude temp folder is read: its
    session folders lie beside ours, tests/core/test_red_team_11_cleanup.py.)"""
    (tmp_path / "their-tmp").mkdir()
    child, session = other_claude(tmp_path / "elsewhere" / ".claude", str(tmp_path / "elsewhere"),
                                  str(tmp_path / "their-tmp"))
    try:
        assert session not in sessions.liveness().ids
    finally:
        child.kill()
        child.wait()
