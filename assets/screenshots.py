"""Make the README's screenshots: each screen and dialog of the dashboard on the demo
sandbox at 120x36, saved as SVG beside this file.

    .venv/bin/python assets/screenshots.py

The sandbox is built under a temp folder and removed after; its live sessions carry no pid
and the clock is the sandbox's build time, so the pictures do not change between runs
except where the machine shows through (the uid in `claude-<uid>` is shown as `$UID`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HERE = Path(__file__).resolve().parent
SIZE = (120, 36)


async def until(pilot: Any, check: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("the dashboard did not get there in time")
        await pilot.pause(0.05)


async def shoot(name: str, steps: Callable[[Any], Awaitable[None]], now: float) -> None:
    from app.tui import ClaudettoApp

    app = ClaudettoApp(clock=lambda: now, poll_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.store.judged and app.store.sessions_read and not app.store.progress.running
                    and len(app.store.growth) == 2)
        await steps(pilot)
        await pilot.pause(0.5)
        app.clear_notifications()
        await pilot.pause(0.2)
        app.save_screenshot(f"{name}.svg", str(HERE))
    print(f"  {name}.svg")


def on(mode: str, key: str, *then: str, table: str = "", row: Callable[[Any], str] | None = None,
       wait: str = "") -> Callable[[Any], Awaitable[None]]:
    """Go to a screen, optionally put the cursor on a row, then press keys."""
    async def steps(pilot: Any) -> None:
        await pilot.press(key)
        await until(pilot, lambda: pilot.app.current_mode == mode)
        if table:
            found = pilot.app.screen.query_one(table)
            await until(pilot, lambda: found.row_count > 0)
            if row is not None:
                found.move_to(row(pilot))
        if wait:
            await until(pilot, lambda: wait in str(pilot.app.screen.query_one("#detail").render()))
        for press in then:
            await pilot.press(press)
            await pilot.pause(0.3)

    return steps


async def main() -> None:
    from app.sandbox import STALE, build_sandbox

    base = Path(tempfile.mkdtemp(prefix="claudetto-screenshots-"))
    try:
        box = build_sandbox(base / "box", live_processes=False, scale=0.25)
        os.environ.update(box.env)
        os.chdir(box.home)
        trees = box.project / ".claude" / "worktrees"

        def memory_pin(pilot: Any) -> str:
            return next(k for k, f in pilot.app.screen.findings.items() if f.kind == "stale_version_pin")

        def stale(pilot: Any) -> str:
            return next(s.file for s in pilot.app.store.sessions if s.session_id == STALE)

        async def overview(pilot: Any) -> None:
            await until(pilot, lambda: pilot.app.screen.query_one("DayBars").days)

        shots: dict[str, Callable[[Any], Awaitable[None]]] = {
            "overview": overview,
            "sessions": on("sessions", "2", table="#sessions", row=stale),
            "outputs": on("outputs", "3", "space", "space"),
            "confirm": on("outputs", "3", "space", "space", "d"),
            "disk": on("outputs", "3", "down", "down", "down", "down", "b"),
            "checkouts": on("checkouts", "4", table="#checkouts", row=lambda _p: str(trees / "bold-oak-a3f2"),
                            wait="release would delete"),
            "release": on("checkouts", "4", "r", table="#checkouts", row=lambda _p: str(trees / "bold-oak-a3f2"),
                          wait="release would delete"),
            "ledger": on("ledger", "5", table="#ledger", row=lambda _p: str(box.project / "src" / "app.py")),
            "memory": on("memory", "6", table="#findings", row=memory_pin),
            "supersede": on("memory", "6", "u", table="#findings", row=memory_pin),
        }
        print(f"screenshots ({SIZE[0]}x{SIZE[1]}) in {HERE}:")
        for name, steps in shots.items():
            await shoot(name, steps, box.now)
        box.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
