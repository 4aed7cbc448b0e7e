"""A removal's outcome stays on the Outputs work line. After a removal the store judges and
measures again; the line showed that measure's progress and then went blank, so a person who
looked up a second later never read what was kept, and why."""

from __future__ import annotations

from pathlib import Path

from app.data.store import SizeProgress
from app.sandbox import Sandbox
from app.screens.outputs import OutputsScreen
from app.widgets.progress import WorkLine
from tests.tui.test_red_team_2 import SIZE, confirm_and_finish, make_app, mark_then, work_text


async def test_the_outcome_of_a_removal_outlasts_the_measure_that_follows_it(box: Sandbox, tmp_path: Path) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await mark_then(pilot, app, build_cache)
        build_cache.rename(box.user_tmp / "moved-away")
        build_cache.symlink_to(elsewhere)  # kept: the row no longer names what the person saw
        await confirm_and_finish(pilot, app)
        assert "1 kept" in work_text(app), work_text(app)
        # the measure that follows a judgement, as the poll starts it when a session ends
        for progress in (SizeProgress(1, 13, 40, running=True), SizeProgress(13, 13, 78)):
            app.store.apply_sizes({}, progress)
            await pilot.pause()
            assert isinstance(app.screen, OutputsScreen)
            line = app.screen.query_one(WorkLine)
            assert line.display and "1 kept" in work_text(app), work_text(app)
