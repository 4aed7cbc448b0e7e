"""TUI benchmarks (issue 6), printed as ratios against baselines run in the same process.

1. Time to the first full paint of the Outputs screen with 2,000 judged outputs (target
   <= 1 s): the first frame the app hands to the terminal once the table holds every row
   (and, second figure, until the app is idle after it); baseline: the same for a bare
   Textual app with one Static.
2. Delay before a key press is answered while a 200,000-file size scan runs in the worker
   (target <= 100 ms); baseline: the same key presses with no scan running.

    .venv/bin/python bench/tui.py            # 2,000 outputs, 200,000 files
    BENCH_TUI_ROWS=500 BENCH_TUI_FILES=20000 .venv/bin/python bench/tui.py   # smaller
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import Static  # noqa: E402

from app.core.outputs import Judged  # noqa: E402
from app.core.verdict import Verdict  # noqa: E402
from app.tui import ClaudettoApp  # noqa: E402

ROWS = int(os.environ.get("BENCH_TUI_ROWS", "2000"))
FILES = int(os.environ.get("BENCH_TUI_FILES", "200000"))
SIZE = (120, 36)


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("baseline")


async def first_paint(app: App[None], ready, step=None) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(first frame once `ready`, app idle after it), in seconds from the start; `step`
    drives the app (as a user's key would) while it is not ready."""
    frames: list[float] = []
    shown = app._display  # noqa: SLF001 - where each frame goes to the terminal

    def display(screen, renderable) -> None:  # type: ignore[no-untyped-def]
        if renderable is not None and not frames and ready(app):
            frames.append(time.perf_counter())
        shown(screen, renderable)

    app._display = display  # type: ignore[method-assign]  # noqa: SLF001
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        while not frames:
            if step is not None:
                step(app)
            await pilot.pause(0.005)
        await pilot.pause()  # the app is idle again
        return frames[0] - start, time.perf_counter() - start


def many(base: Path, n: int) -> Judged:
    now = time.time()
    return Judged([Verdict(path=str(base / f"tmp.{i:010d}"), kind="temp", action="remove" if i % 3 else "keep",
                           reason="age" if i % 3 else "young", rule="gc", root=str(base), size=4096 * (i + 1),
                           session=f"{i % 7:08x}-session", mtime=now - i * 600) for i in range(n)])


def make_tree(base: Path, files: int) -> Path:
    top = base / "tree"
    per = 1000
    for d in range(0, files, per):
        folder = top / f"d{d // per:05d}"
        folder.mkdir(parents=True)
        for i in range(min(per, files - d)):
            (folder / f"f{i}").touch()
    return top


async def key_delays(app: ClaudettoApp, presses: int, scanning: bool) -> list[float]:
    delays: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        while not app.store.judged or type(app.screen).__name__ != "OutputsScreen":
            await pilot.pause(0.01)
        screen = app.screen
        for i in range(presses):
            if scanning and not app.store.progress.running:  # measure the tree again
                app.store.sizes.clear()
                app.store.measure()
                await asyncio.sleep(0.05)  # let the worker get into the tree
            key, want = ("a", "age") if i % 2 == 0 else ("z", "size")
            start = time.perf_counter()
            # the key goes in as the terminal would send it; we time the action, not
            # the Pilot's own wait for every widget to go idle
            app.post_message(events.Key(key, key))
            while getattr(screen, "sort_by", None) != want:
                if time.perf_counter() - start > 10:
                    raise SystemExit(f"no answer to {key!r} in 10 s")
                await asyncio.sleep(0.001)
            delays.append(time.perf_counter() - start)
            await asyncio.sleep(0.02)
    return delays


async def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="claudetto-bench-tui-"))
    try:
        bares = [await first_paint(Bare(), lambda a: True) for _ in range(3)]
        bare, bare_idle = statistics.median(t[0] for t in bares), statistics.median(t[1] for t in bares)
        judged = many(base, ROWS)
        times = []
        for _ in range(3):
            app = ClaudettoApp(judge_outputs=lambda: judged, poll_s=3600)
            app.MODES = dict(ClaudettoApp.MODES)

            def ready(a: App[None]) -> bool:
                if not a.store.judged or a.current_mode != "outputs":  # type: ignore[attr-defined]
                    return False
                tables = a.screen.query("#outputs")
                return bool(tables) and tables.first().row_count == ROWS  # type: ignore[attr-defined]

            def step(a: App[None]) -> None:
                if a.store.judged and a.current_mode != "outputs":  # type: ignore[attr-defined]
                    a.switch_mode("outputs")

            times.append(await first_paint(app, ready, step))
        paint = statistics.median(t[0] for t in times)
        idle = statistics.median(t[1] for t in times)
        print(f"first full paint, {ROWS} outputs: {paint * 1000:.0f} ms, idle after it at {idle * 1000:.0f} ms "
              f"(bare app {bare * 1000:.0f} ms / {bare_idle * 1000:.0f} ms, ratios {paint / bare:.1f}x / "
              f"{idle / bare_idle:.1f}x; target <= 1000 ms)")

        t0 = time.perf_counter()
        tree = make_tree(base, FILES)
        print(f"  built {FILES:,} files in {time.perf_counter() - t0:.1f} s")
        tree_judged = Judged([Verdict(path=str(tree), kind="temp", action="remove", reason="age", rule="gc",
                                      root=str(base), size=None, mtime=time.time())])
        idle = await key_delays(ClaudettoApp(judge_outputs=lambda: tree_judged, poll_s=3600), 10, False)
        busy = await key_delays(ClaudettoApp(judge_outputs=lambda: tree_judged, poll_s=3600), 20, True)
        worst, median_busy, median_idle = max(busy), statistics.median(busy), statistics.median(idle)
        print(f"key answered during a {FILES:,}-file scan: median {median_busy * 1000:.0f} ms, worst "
              f"{worst * 1000:.0f} ms (idle median {median_idle * 1000:.0f} ms, ratio "
              f"{median_busy / median_idle:.1f}x; target <= 100 ms)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
