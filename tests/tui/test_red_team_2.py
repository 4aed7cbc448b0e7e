"""Red team, round two, on the dashboard's removals: a marked row whose folder changes
between the listing and the confirm (a secret written, a session started inside, a symlink
swapped in), and a parent marked with its child. Real sandbox, real processes, the pilot."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from app.core.sessions import proc_start_time
from app.sandbox import Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.tui.conftest import answer, goto, settle, wait_for

SIZE = (120, 36)


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2)


async def mark_then(pilot, app: ClaudettoApp, path: Path) -> None:
    """Mark the row of `path` and open the confirmation (the listing is now what the user saw)."""
    await goto(pilot, "outputs")
    await settle(pilot, app)
    found = [k for k, v in app.store.rows.items() if v.path == str(path)]
    assert found, f"{path} is not listed"
    assert isinstance(app.screen, OutputsScreen)
    assert app.screen.query_one("#outputs", Table).move_to(found[0])
    await pilot.pause()
    await pilot.press("space", "d")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))


async def confirm_and_finish(pilot, app: ClaudettoApp) -> None:
    await answer(pilot, "y")
    await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working)
    await pilot.pause(0.3)


def work_text(app: ClaudettoApp) -> str:
    return app.screen.query_one(WorkLine).text


async def test_a_secret_written_after_the_listing_keeps_the_folder(box: Sandbox) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await mark_then(pilot, app, build_cache)
        (build_cache / ".env").write_text("API_KEY=written-after-the-listing\n")
        await confirm_and_finish(pilot, app)
        assert "0 items; 1 kept" in work_text(app), work_text(app)
    assert (build_cache / ".env").read_text() == "API_KEY=written-after-the-listing\n"


async def test_a_session_started_inside_after_the_listing_keeps_the_folder(
        box: Sandbox, started: list[subprocess.Popen[bytes]]) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await mark_then(pilot, app, build_cache)
        claude = subprocess.Popen(["sleep", "60"], cwd=build_cache)
        started.append(claude)
        record = {"pid": claude.pid, "sessionId": "started-after-listing", "cwd": str(build_cache),
                  "status": "busy", "procStart": proc_start_time(claude.pid)}
        (box.config / "sessions" / f"{claude.pid}.json").write_text(json.dumps(record))
        await confirm_and_finish(pilot, app)
        assert "0 items; 1 kept" in work_text(app), work_text(app)
    assert build_cache.is_dir() and any(build_cache.iterdir())


async def test_a_symlink_swapped_in_after_the_listing_removes_nothing_it_points_at(
        box: Sandbox, tmp_path: Path) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work\n")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await mark_then(pilot, app, build_cache)
        build_cache.rename(box.user_tmp / "moved-away")
        build_cache.symlink_to(precious)
        await confirm_and_finish(pilot, app)
        assert "0 items; 1 kept" in work_text(app), work_text(app)
    assert (precious / "thesis.tex").read_text() == "years of work\n"


async def test_a_session_started_in_a_checkout_between_the_release_plan_and_the_yes_keeps_its_scratch(
        box: Sandbox, started: list[subprocess.Popen[bytes]]) -> None:
    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    assert (checkout / "node_modules").is_dir()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: listing.row_count > 0)
        assert listing.move_to(str(checkout))
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        claude = subprocess.Popen(["sleep", "60"], cwd=checkout)
        started.append(claude)
        record = {"pid": claude.pid, "sessionId": "resumed-in-the-checkout", "cwd": str(checkout),
                  "status": "busy", "procStart": proc_start_time(claude.pid)}
        (box.config / "sessions" / f"{claude.pid}.json").write_text(json.dumps(record))
        await answer(pilot, "y")
        await wait_for(pilot, lambda: "releasing" not in app.screen.query_one(WorkLine).text
                       and app.screen.query_one(WorkLine).text != "")
        await pilot.pause(0.5)
        assert "held by resumed-" in app.screen.query_one(WorkLine).text, app.screen.query_one(WorkLine).text
    assert (checkout / "node_modules").is_dir() and any((checkout / "node_modules").iterdir())


def _tree_state(top: Path) -> dict[str, tuple[int, int]]:
    """Every path under `top` with its size and modification time (links not followed)."""
    import os

    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            st = os.lstat(os.path.join(folder, name))
            found[os.path.join(folder, name)] = (st.st_size if not os.path.isdir(os.path.join(folder, name)) else 0,
                                                 st.st_mtime_ns)
    return found


async def test_read_only_changes_nothing_on_disk_while_it_watches(box: Sandbox) -> None:
    """`--read-only` on every screen, refreshed: claudetto's state, the temp folders and the
    projects are as they were (only claudetto's own logs may grow)."""
    watched = [box.state, box.user_tmp, box.project, box.second_project]
    before = {str(top): _tree_state(top) for top in watched}
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        for mode in ("overview", "sessions", "checkouts", "ledger", "memory", "outputs"):
            await goto(pilot, mode)
            await pilot.press("r")
            await pilot.pause(0.5)
        await settle(pilot, app)
    after = {str(top): _tree_state(top) for top in watched}
    for top in before:
        changed = sorted(set(before[top].items()) ^ set(after[top].items()))
        assert not changed, changed[:10]
