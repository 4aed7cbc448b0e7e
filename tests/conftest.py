"""Every test runs in a sandbox: HOME, CLAUDE_CONFIG_DIR, CLAUDE_CODE_TMPDIR, TMPDIR and
CLAUDETTO_HOME all point under tmp_path, and no CLAUDETTO_<BOUND> leaks in."""

from __future__ import annotations

import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from app.core.bounds import DEFAULTS
from tests import support
from tests.support import SandboxEnv, make_sandbox


@pytest.fixture(scope="session", autouse=True)
def repo_templates(tmp_path_factory: pytest.TempPathFactory) -> None:
    """make_repo copies the repositories it made before from here (see make_repo)."""
    support.REPO_TEMPLATES = tmp_path_factory.mktemp("repo-templates")


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


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """What is loaded by now (pytest, textual, hypothesis, every test module: ~70,000
    objects) lives as long as the worker: frozen, the collector no longer walks it, and a
    young generation of 10,000 objects makes the full walks rare. Each full walk cost ~0.15 s,
    a fifth of a dashboard test's CPU; nothing a test checks depends on when cycles go."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 100)


def _cpu() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """With CLAUDETTO_TEST_CPU=<file>, each test's CPU seconds (this process and the children
    it waited for, setup and teardown included) are appended to <file>: wall time on a shared
    machine says little of what a test costs."""
    import os

    out = os.environ.get("CLAUDETTO_TEST_CPU")
    if not out:
        return (yield)
    before = _cpu()
    result = yield
    with open(out, "a", encoding="utf-8") as f:
        f.write(f"{_cpu() - before:.3f}\t{item.nodeid}\n")
    return result
