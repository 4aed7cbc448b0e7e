"""Every test runs in a sandbox: HOME, CLAUDE_CONFIG_DIR, CLAUDE_CODE_TMPDIR, TMPDIR and
CLAUDETTO_HOME all point under tmp_path, and no CLAUDETTO_<BOUND> leaks in."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.bounds import DEFAULTS
from tests.support import SandboxEnv, make_sandbox


@pytest.fixture(autouse=True)
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    env, variables = make_sandbox(tmp_path / "sb")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    for name in DEFAULTS:
        monkeypatch.delenv(f"CLAUDETTO_{name}", raising=False)
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    monkeypatch.delenv("CLAUDETTO_PYTHON", raising=False)
    monkeypatch.chdir(tmp_path)
    return env


@pytest.fixture
def live_pid() -> Iterator[int]:
    """A running process to name in a sessions file: a live session's Claude."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts (a shell in a folder, a server): all killed at its end."""
    running: list[subprocess.Popen[bytes]] = []
    yield running
    for proc in running:
        proc.kill()
        proc.wait()
