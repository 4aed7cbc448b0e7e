"""TUI tests run on the sandbox builder's environment, with the clock frozen at build time."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.sandbox import Sandbox, build_sandbox

# the key of each screen (app/tui.py SCREENS)
KEYS = {"overview": "1", "sessions": "2", "outputs": "3", "checkouts": "4", "ledger": "5", "memory": "6"}


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


async def settle(pilot: Any, app: Any, *, sizes: bool = True, timeout: float = 30.0) -> None:
    """Wait until the outputs are judged (and measured) and the sessions read."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        store = app.store
        if store.judged and store.sessions_read and not (sizes and store.progress.running):
            await pilot.pause(0.05)
            return
    raise AssertionError("the app did not settle in time")


async def wait_for(pilot: Any, check: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not met in time")


async def goto(pilot: Any, mode: str) -> None:
    """Show a screen by its key, as a user would, and wait until it is the current one."""
    await pilot.press(KEYS[mode])
    await wait_for(pilot, lambda: pilot.app.current_mode == mode and pilot.app.screen.is_mounted)
    await pilot.pause()


def notes(app: Any) -> list[str]:
    """The notifications the app showed, oldest first."""
    return [n.message for n in app._notifications]  # noqa: SLF001 - what the user saw
