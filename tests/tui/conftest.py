"""TUI tests run on the sandbox builder's environment, with the clock frozen at build time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.sandbox import Sandbox, build_sandbox


def point_at(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in box.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(box.home)


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A sandbox with real live processes, pointed at by the environment."""
    sandbox = build_sandbox(tmp_path / "box", scale=0.25)
    point_at(sandbox, monkeypatch)
    try:
        yield sandbox
    finally:
        sandbox.close()


async def settle(pilot, app, *, sizes: bool = True, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until the outputs are judged (and measured) and the sessions read."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        store = app.store
        if store.judged and store.sessions_read and not (sizes and store.progress.running):
            await pilot.pause(0.05)
            return
    raise AssertionError("the app did not settle in time")
