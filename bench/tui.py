"""TUI benchmarks, printed as ratios against baselines run in the same process.

1. Time to the first full paint of each screen with 2,000 rows (target <= 1 s each): the
   first frame the app hands to the terminal once that screen's table holds every row (and,
   second figure, until the app is idle after it), each screen started as the first one;
   baseline: the same for a bare Textual app with one Static. The rows are real where that
   is cheap (2,000 session files, 2,000 judged outputs) and made in memory where making
   them for real would take minutes and measure git, not the screen (2,000 checkouts,
   ledger files, memory findings: the screen's data source hands them over at once).
2. Delay before a key press is answered while a 200,000-file size scan runs in the worker
   (target <= 100 ms); baseline: the same key presses with no scan running.

Everything runs in a sandbox under the temp folder (HOME, CLAUDE_CONFIG_DIR, ... point at it).

    .venv/bin/python bench/tui.py            # 2,000 rows, 200,000 files
    BENCH_TUI_ROWS=500 BENCH_TUI_FILES=20000 .venv/bin/python bench/tui.py   # smaller
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import Static  # noqa: E402

from app.core.ledger import LedgerFile  # noqa: E402
from app.core.memory import Finding  # noqa: E402
from app.core.outputs import Judged  # noqa: E402
from app.core.verdict import Verdict  # noqa: E402
from app.core.worktrees import WorktreeInfo  # noqa: E402

ROWS = int(os.environ.get("BENCH_TUI_ROWS", "2000"))
FILES = int(os.environ.get("BENCH_TUI_FILES", "200000"))
SIZE = (120, 36)
# each screen, the table that must hold every row, and how many rows that is
TABLES = {"overview": ("#biggest", 30), "sessions": ("#sessions", ROWS), "outputs": ("#outputs", ROWS),
          "checkouts": ("#checkouts", ROWS), "ledger": ("#ledger", ROWS), "memory": ("#findings", ROWS)}


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("baseline")


async def first_paint(app: App[None], ready: Callable[[App[None]], bool]) -> tuple[float, float]:
    """(first frame once `ready`, app idle after it), in seconds from the start."""
    frames: list[float] = []
    shown = app._display  # noqa: SLF001 - where each frame goes to the terminal

    def display(screen: Any, renderable: Any) -> None:
        if renderable is not None and not frames and ready(app):
            frames.append(time.perf_counter())
        shown(screen, renderable)

    app._display = display  # type: ignore[method-assign]  # noqa: SLF001
    start = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        while not frames:
            await pilot.pause(0.005)
        await pilot.pause()  # the app is idle again
        return frames[0] - start, time.perf_counter() - start


def sandbox(base: Path) -> None:
    """Point every path of the program at `base` (never the real home or ~/.claude)."""
    for name, folder in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "home/.claude"), ("CLAUDE_CODE_TMPDIR", "ctmp"),
                         ("TMPDIR", "utmp"), ("CLAUDETTO_HOME", "state")):
        (base / folder).mkdir(parents=True, exist_ok=True)
        os.environ[name] = str(base / folder)
    os.environ["CLAUDETTO_MANAGED_SETTINGS"] = str(base / "managed-settings.json")


def many_outputs(base: Path, n: int) -> Judged:
    now = time.time()
    return Judged([Verdict(path=str(base / f"tmp.{i:010d}"), kind="temp", action="remove" if i % 3 else "keep",
                           reason="age" if i % 3 else "young", rule="gc", root=str(base), size=4096 * (i + 1),
                           session=f"{i % 7:08x}-session", mtime=now - i * 600) for i in range(n)])


def many_sessions(n: int) -> None:
    folder = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    now_ms = int(time.time() * 1000)
    for i in range(n):  # no pid: each counts as live, as the contract says
        (folder / f"{i}.json").write_text(json.dumps({"sessionId": f"{i:08x}-0000-4000-8000-000000000000",
                                                      "cwd": f"/work/project-{i % 50}", "status": "idle",
                                                      "startedAt": now_ms - i * 60_000, "updatedAt": now_ms - i * 1000}))


def many_checkouts(base: Path, n: int) -> list[WorktreeInfo]:
    found = []
    for i in range(n):
        path = str(base / "repo" / ".claude" / "worktrees" / f"task-{i:05d}")
        verdict = Verdict(path=path, kind="worktree", action="keep" if i % 2 else "remove",
                          reason="young" if i % 2 else "age", rule="worktree", root=str(base), project=str(base))
        found.append(WorktreeInfo(path, str(base / "repo"), f"task-{i:05d}", f"worktree-task-{i:05d}", 1 << 20,
                                  "session", "unmanaged", {}, not i % 2, verdict.reason, verdict))
    return found


def many_ledger_rows(base: Path, n: int) -> list[Any]:
    from app.data.ledger import LedgerRow, Stat

    now = time.time_ns()
    return [LedgerRow(LedgerFile(str(base / "repo" / f"file{i:05d}.py"), "main", "s", f"{i:016x}", bool(i % 5 == 0),
                                 False, False, now - i * 10**9), Stat(100, now / 1e9), Stat(120, now / 1e9))
            for i in range(n)]


def many_findings(base: Path, n: int) -> Any:
    from app.data.memory import MemoryFindings

    root = str(base / "repo")
    return MemoryFindings([Finding(root, str(base / "memory" / f"topic{i // 10:04d}.md"), i % 10 + 1,
                                   "vanished_artifact", f"src/gone{i}.py", f"`src/gone{i}.py` is not in the tree")
                           for i in range(n)], [root], [])


def make_tree(base: Path, files: int) -> Path:
    top = base / "tree"
    per = 1000
    for d in range(0, files, per):
        folder = top / f"d{d // per:05d}"
        folder.mkdir(parents=True)
        for i in range(min(per, files - d)):
            (folder / f"f{i}").touch()
    return top


def starting_on(mode: str) -> Any:
    """The app with `mode` as its first screen, as Overview is."""
    import app.tui

    return type(f"On{mode.title()}", (app.tui.ClaudettoApp,), {
        "DEFAULT_MODE": mode, "CSS_PATH": str(Path(app.tui.__file__).with_name("tui.tcss"))})


async def paint_of(mode: str, judged: Judged) -> tuple[float, float]:
    selector, rows = TABLES[mode]
    times = []
    for _ in range(3):
        app = starting_on(mode)(judge_outputs=lambda: judged, poll_s=3600)

        def ready(a: App[None], selector: str = selector, rows: int = rows) -> bool:
            tables = a.screen.query(selector)
            return bool(tables) and tables.first().row_count >= rows  # type: ignore[attr-defined]

        times.append(await first_paint(app, ready))
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


async def key_delays(judged: Judged, presses: int, scanning: bool) -> list[float]:
    app = starting_on("outputs")(judge_outputs=lambda: judged, poll_s=3600)
    delays: list[float] = []
    async with app.run_test(size=SIZE):
        while not app.store.judged or type(app.screen).__name__ != "OutputsScreen":
            await asyncio.sleep(0.01)
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
    sandbox(base)
    import app.data.checkouts
    import app.screens.ledger
    import app.screens.memory

    try:
        bares = [await first_paint(Bare(), lambda a: True) for _ in range(3)]
        bare, bare_idle = statistics.median(t[0] for t in bares), statistics.median(t[1] for t in bares)
        judged = many_outputs(base, ROWS)
        many_sessions(ROWS)
        checkouts, rows, findings = many_checkouts(base, ROWS), many_ledger_rows(base, ROWS), many_findings(base, ROWS)
        # the screens' data sources hand the made rows over at once (the paint is measured, not git)
        setattr(app.data.checkouts, "read_checkouts", lambda: checkouts)  # noqa: B010
        setattr(app.screens.ledger, "read_ledger", lambda: rows)  # noqa: B010
        setattr(app.screens.memory, "read_findings", lambda: findings)  # noqa: B010
        print(f"first full paint with {ROWS:,} rows (bare app {bare * 1000:.0f} ms / idle {bare_idle * 1000:.0f} ms; "
              "target <= 1000 ms):")
        for mode in TABLES:
            paint, idle = await paint_of(mode, judged)
            print(f"  {mode:<10} {paint * 1000:5.0f} ms, idle at {idle * 1000:5.0f} ms  "
                  f"(ratios {paint / bare:.1f}x / {idle / bare_idle:.1f}x)")

        t0 = time.perf_counter()
        tree = make_tree(base, FILES)
        print(f"  built {FILES:,} files in {time.perf_counter() - t0:.1f} s")
        tree_judged = Judged([Verdict(path=str(tree), kind="temp", action="remove", reason="age", rule="gc",
                                      root=str(base), size=None, mtime=time.time())])
        idle_keys = await key_delays(tree_judged, 10, False)
        busy = await key_delays(tree_judged, 20, True)
        worst, median_busy, median_idle = max(busy), statistics.median(busy), statistics.median(idle_keys)
        print(f"key answered during a {FILES:,}-file scan: median {median_busy * 1000:.0f} ms, worst "
              f"{worst * 1000:.0f} ms (idle median {median_idle * 1000:.0f} ms, ratio "
              f"{median_busy / median_idle:.1f}x; target <= 100 ms)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
