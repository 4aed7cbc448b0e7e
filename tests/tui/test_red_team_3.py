"""Red team, round three, on the dashboard's removals: what the user said yes to is all that
may go. The full sweep's dry run listed some folders to remove and others kept, and a
session ended while the question was on the screen; a repository was made in a marked
folder after the listing. Real sandbox, real processes, the pilot."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.core import journal
from app.sandbox import Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.support import git
from tests.tui.conftest import answer, goto, settle, wait_for

SIZE = (120, 36)


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2)


def work_text(app: ClaudettoApp) -> str:
    return app.screen.query_one(WorkLine).text


async def test_the_sweep_removes_nothing_its_dry_run_listed_as_kept(box: Sandbox) -> None:
    """`s` shows the dry run: tmp.LiveCache0 is kept (its session is live). The session ends
    while the question is on the screen, so by the yes that folder is removable too; but the
    user said yes to the list shown, and it was listed as kept."""
    live_cache = box.user_tmp / "tmp.LiveCache0"
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = app.screen.body  # type: ignore[attr-defined]
        assert "tmp.BuildCache" in body.split("Kept")[0]
        assert "tmp.LiveCache0" in body.split("Kept")[1]
        waiting = box.children[1]  # the live session that made tmp.LiveCache0 ends
        waiting.kill()
        waiting.wait()
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not build_cache.exists())
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working)
    assert (live_cache / "blob.bin").exists()


async def test_a_repository_made_inside_after_the_listing_keeps_the_folder(box: Sandbox, tmp_path: Path) -> None:
    """The confirmation is on the screen; meanwhile the user turns the marked folder into a
    repository and commits work that exists nowhere else. The yes must not take it."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        found = [k for k, v in app.store.rows.items() if v.path == str(build_cache)]
        assert found and isinstance(app.screen, OutputsScreen)
        assert app.screen.query_one("#outputs", Table).move_to(found[0])
        await pilot.pause()
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        work = build_cache / "prototype"
        work.mkdir()
        git(work, "init", "-q")
        (work / "idea.py").write_text("print('a day of work')\n")
        git(work, "add", "idea.py")
        git(work, "commit", "-q", "-m", "wip")
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working)
        await pilot.pause(0.3)
        assert "0 items; 1 kept" in work_text(app), work_text(app)
    assert (work / "idea.py").read_text() == "print('a day of work')\n"
    assert subprocess.run(["git", "-C", str(work), "log", "--oneline"], capture_output=True,
                          text=True, check=True).stdout.strip().endswith("wip")


async def test_a_release_deletes_only_the_scratch_its_question_listed(box: Sandbox) -> None:
    """`r` lists what the release deletes (node_modules). While the question is open the user
    puts notes in a new `build/` of the checkout; the yes was to the list shown, so the
    release asks again (with build/ in the list) instead of deleting it unasked."""
    from app.screens.checkouts import CheckoutsScreen

    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: listing.row_count > 0)
        assert listing.move_to(str(checkout))
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = app.screen.body  # type: ignore[attr-defined]
        assert "node_modules" in body and "build" not in body
        (checkout / "build").mkdir()
        (checkout / "build" / "deploy-notes.md").write_text("how to ship it, by hand\n")
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal) and "build" in app.screen.body)
        assert (checkout / "node_modules").is_dir()  # nothing went on the first yes
        await answer(pilot, "n")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy)
    assert (checkout / "build" / "deploy-notes.md").read_text() == "how to ship it, by hand\n"
    assert (checkout / "node_modules").is_dir()


async def test_a_release_goes_ahead_when_nothing_more_would_go(box: Sandbox) -> None:
    """The same question answered with nothing changed: the release runs on the first yes."""
    from app.screens.checkouts import CheckoutsScreen

    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: listing.row_count > 0)
        assert listing.move_to(str(checkout))
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen)
                       and "released" in app.screen.query_one(WorkLine).text)
    assert not (checkout / "node_modules").exists()
    assert (checkout / ".tmp" / "notes.md").exists()


@pytest.mark.parametrize("child_first", [False, True])
async def test_a_parent_and_its_child_marked_together_go_once_and_are_counted_once(
        box: Sandbox, child_first: bool) -> None:
    """tmp.BuildCache and `tmp.BuildCache/objects` (recorded on its own) are both marked, in
    either order of the table: both go, nothing outside them does, and the freed total counts
    the child's bytes once, not once more inside its parent."""
    import os

    from app.core.removal import resolve_parents
    from tests.support import add_record, set_mtime

    build_cache = box.user_tmp / "tmp.BuildCache"
    objects = build_cache / "objects"
    objects.mkdir()
    (objects / "pack.bin").write_bytes(os.urandom(256 * 1024))
    set_mtime(objects, 10 * 86400)
    set_mtime(build_cache, 10 * 86400)
    add_record("stale-recorder", objects)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        keys = {v.path: k for k, v in app.store.rows.items()}
        parent_key, child_key = keys[resolve_parents(build_cache)], keys[resolve_parents(objects)]
        screen = app.screen
        assert isinstance(screen, OutputsScreen)
        table = screen.query_one("#outputs", Table)
        for key in (parent_key, child_key):
            assert table.move_to(key)
            await pilot.pause()
            await pilot.press("space")
        for _ in range(3):
            order = [k for k in table.keys_in_order() if k in (parent_key, child_key)]
            if (order[0] == child_key) == child_first:
                break
            await pilot.press("z")
            await pilot.pause(0.2)
        assert (order[0] == child_key) == child_first
        total = app.store.size(app.store.rows[parent_key]) or 0
        before = len(journal.read_entries())
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working)
        await pilot.pause(0.3)
        line = work_text(app)
        assert "in 2 items" in line and "kept" not in line, line
        assert not build_cache.exists()
        freed = sum(e["bytes"] for e in journal.read_entries()[before:] if e.get("result") == "removed")
        assert freed <= total + 8192, (freed, total)
    assert (box.user_tmp / "tmp.LiveCache0" / "blob.bin").exists()
