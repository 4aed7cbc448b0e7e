"""Pilot tests of the Sessions and Outputs screens and the disk browser on a real sandbox:
real folders, real git worktrees, real processes behind the live sessions. They assert on
the app's state and on the disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from app.core.outputs import Judged, judge
from app.core.paths import project_slug
from app.core.sessions import proc_start_time
from app.sandbox import LIVE_BUSY, STALE, Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.disk import DiskScreen
from app.screens.help import HelpScreen
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.tui.conftest import answer, goto, notes, settle, wait_for

SIZE = (120, 36)


def make_app(box: Sandbox, **kwargs: object) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2, **kwargs)  # type: ignore[arg-type]


def key_for(app: ClaudettoApp, path: Path | str) -> str:
    found = [k for k, v in app.store.rows.items() if v.path == str(path)]
    assert found, f"{path} is not judged: {sorted(v.path for v in app.store.rows.values())}"
    return found[0]


def table(app: ClaudettoApp, selector: str) -> Table:
    return app.screen.query_one(selector, Table)


async def goto_row(pilot, app: ClaudettoApp, key: str) -> None:
    assert isinstance(app.screen, OutputsScreen)
    assert table(app, "#outputs").move_to(key)
    await pilot.pause()


def work_line(app: ClaudettoApp) -> WorkLine:
    return app.screen.query_one(WorkLine)


async def test_mark_confirm_removes_from_disk(box: Sandbox) -> None:
    old_folder = box.claude_tmp / project_slug(box.second_project) / STALE
    build_cache = box.user_tmp / "tmp.BuildCache"
    assert old_folder.is_dir() and build_cache.is_dir()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        for path in (build_cache, old_folder):
            await goto_row(pilot, app, key_for(app, path))
            await pilot.press("space")
        assert len(app.store.marked) == 2 and app.store.marked_total() > 0
        order = [k for k in table(app, "#outputs").keys_in_order() if k in app.store.marked]
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = str(app.screen.query_one("#body").render())
        assert "Remove 2 items" in body and "Kept (" in body and "live session" in body
        # the confirmation lists what goes in the table's order (largest first here)
        listed = [line for line in body.splitlines() if "BuildCache" in line or STALE[:8] in line]
        assert ("BuildCache" in listed[0]) == (app.store.rows[order[0]].path == str(build_cache))
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not old_folder.exists() and not build_cache.exists())
        await wait_for(pilot, lambda: work_line(app).text.startswith("freed "))
        line = work_line(app)
        assert "in 2 items" in line.text
        assert not line.query_one("#work-bar").display  # a finished bar does not stay on screen
        # the removed rows are gone at once, not shown as `missing` until the next judge
        assert all(v.path not in (str(old_folder), str(build_cache)) for v in app.store.rows.values())
        assert not any(str(build_cache) in k for k in table(app, "#outputs").keys_in_order())
        assert not app.store.marked
    assert (box.user_tmp / "tmp.LiveCache0").is_dir()  # what was kept is still there


async def test_cancel_removes_nothing(box: Sandbox) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        await goto_row(pilot, app, key_for(app, build_cache))
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert app.screen.focused is not None and app.screen.focused.id == "no"  # default No
        await answer(pilot, "enter")  # enter on the focused default: No
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        await pilot.pause(0.3)
        assert build_cache.is_dir()
        assert app.store.marked  # still marked: nothing happened


async def test_a_removal_that_raises_is_shown_and_the_next_one_runs(box: Sandbox) -> None:
    """The worker's failure reaches the screen: no "A removal is already running." forever."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    broken = [False]

    def judge_or_fail() -> Judged:
        if broken[0]:
            raise RuntimeError("the disk went away")
        return judge()

    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2, judge_outputs=judge_or_fail)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, OutputsScreen)
        await goto_row(pilot, app, key_for(app, build_cache))
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        broken[0] = True  # the removal judges again first: that is where it raises
        await answer(pilot, "y")
        await wait_for(pilot, lambda: "failed" in work_line(app).text)
        assert "the disk went away" in work_line(app).text
        assert any("the disk went away" in n for n in notes(app))
        assert screen.working == ""
        broken[0] = False
        await settle(pilot, app)
        assert build_cache.is_dir()
        await goto_row(pilot, app, key_for(app, build_cache))
        if not app.store.marked:
            await pilot.press("space")
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert not any("already running" in n for n in notes(app))
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not build_cache.exists())


async def test_kept_row_refuses_mark_and_says_why(box: Sandbox) -> None:
    live_cache = box.user_tmp / "tmp.LiveCache0"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key = key_for(app, live_cache)
        assert app.store.rows[key].action == "keep" and app.store.rows[key].reason == "live"
        await goto_row(pilot, app, key)
        await pilot.press("space")
        await pilot.pause()
        assert key not in app.store.marked
        assert any("Cannot mark" in m and "live session" in m for m in notes(app)), notes(app)


async def test_read_only_refuses_every_removal(box: Sandbox) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        await goto_row(pilot, app, key_for(app, build_cache))
        await pilot.press("space", "d", "s")
        await pilot.pause(0.2)
        assert not app.store.marked
        assert not isinstance(app.screen, ConfirmModal)
        assert any("Read-only" in m for m in notes(app))
    assert build_cache.is_dir()


async def test_session_appears_and_disappears(box: Sandbox) -> None:
    app = make_app(box)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        async with app.run_test(size=SIZE) as pilot:
            await goto(pilot, "sessions")
            await settle(pilot, app, sizes=False)
            sessions = table(app, "#sessions")
            before = sessions.row_count
            assert before == 3
            file = box.config / "sessions" / f"{child.pid}.json"
            file.write_text(json.dumps({"pid": child.pid, "sessionId": "0a0a0a0a-new", "cwd": str(box.project),
                                        "status": "busy", "procStart": proc_start_time(child.pid),
                                        "startedAt": int(time.time() * 1000), "updatedAt": int(time.time() * 1000)}))
            await wait_for(pilot, lambda: sessions.row_count == before + 1)
            assert str(file) in sessions.keys_in_order()
            assert any(s.session_id == "0a0a0a0a-new" and s.live for s in app.store.sessions)
            file.unlink()
            await wait_for(pilot, lambda: sessions.row_count == before)
    finally:
        child.kill()
        child.wait()


async def test_sessions_live_first_then_latest_update(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "sessions")
        await settle(pilot, app, sizes=False)
        by_file = {s.file: s for s in app.store.sessions}
        shown = [by_file[k] for k in table(app, "#sessions").keys_in_order()]
        assert [s.live for s in shown] == sorted((s.live for s in shown), reverse=True)
        live = [s.updated_at or 0 for s in shown if s.live]
        assert live == sorted(live, reverse=True)
        box.children[0].kill()  # LIVE_BUSY's process ends: its session goes stale, and down
        box.children[0].wait()
        await wait_for(pilot, lambda: sum(s.live for s in app.store.sessions) == 1)

        def states() -> list[str]:
            return [str(table(app, "#sessions").get_row_at(i)[0]) for i in range(table(app, "#sessions").row_count)]

        await wait_for(pilot, lambda: states() == ["● live", "○ stale", "○ stale"])


async def test_a_live_sessions_worktree_is_among_its_outputs(box: Sandbox) -> None:
    live_task = str(box.project / ".claude" / "worktrees" / "live-task")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "sessions")
        await settle(pilot, app)
        sessions = table(app, "#sessions")
        busy = next(s.file for s in app.store.sessions if s.session_id == LIVE_BUSY)
        assert sessions.move_to(busy)
        await pilot.pause(0.1)
        owned = table(app, "#owned")
        assert f"worktree:{live_task}" in owned.keys_in_order()
        await goto(pilot, "outputs")
        outputs = table(app, "#outputs")
        row = outputs.get_row(f"worktree:{live_task}")
        assert str(row[[c.value for c in outputs.columns].index("session")]) == LIVE_BUSY[:8]


async def test_selecting_a_session_shows_its_outputs(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "sessions")
        await settle(pilot, app)
        stale_file = next(s.file for s in app.store.sessions if s.session_id == STALE)
        assert table(app, "#sessions").move_to(stale_file)
        await pilot.pause(0.1)
        assert table(app, "#owned").row_count == len(app.store.owned_by(STALE)) > 0
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        screen = app.screen
        await wait_for(pilot, lambda: screen.filter == STALE)  # type: ignore[attr-defined]
        shown = set(table(app, "#outputs").keys_in_order())
        assert shown == {k for k, v in app.store.rows.items() if STALE in v.path or v.session == STALE}


async def test_disk_browser_with_ncdu_keys(box: Sandbox) -> None:
    tree = box.project / ".claude" / "worktrees" / "agent-a3f9c2e1b7"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key = key_for(app, tree)
        await goto_row(pilot, app, key)
        row_size = str(table(app, "#outputs").get_row(key)[2])
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DiskScreen))
        disk = app.screen
        assert isinstance(disk, DiskScreen)
        listing = disk.query_one("#disk", Table)
        await wait_for(pilot, lambda: listing.row_count > 0)
        title = str(disk.query_one("#disk-title").render())
        assert f"{row_size} in" in title and "sorted by size" in title  # the same size as its row
        assert listing.keys_in_order()[0] == str(tree / "node_modules")  # largest first
        await pilot.press("n")  # by name; again: reversed
        names = [os.path.basename(k) for k in listing.keys_in_order()]
        assert names == sorted(names, key=str.lower)
        await pilot.press("n")
        assert "reversed" in str(disk.query_one("#disk-title").render())
        assert listing.move_to(str(tree / "node_modules"))
        await pilot.press("right")
        await wait_for(pilot, lambda: disk.folder == str(tree / "node_modules"))
        await wait_for(pilot, lambda: disk.listing is not None)
        await pilot.press("h")  # up: the cursor is back on the folder we came from
        await wait_for(pilot, lambda: disk.folder == str(tree) and disk.listing is not None)
        assert listing.cursor_key() == str(tree / "node_modules")
        await pilot.press("l", "left")
        await wait_for(pilot, lambda: disk.folder == str(tree) and disk.listing is not None)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))


async def test_disk_browser_says_what_is_not_a_folder(box: Sandbox) -> None:
    """A missing path, a symlink or a file is said as such, never "1 Byte in 1 entries"."""
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        for path, said in ((box.user_tmp / "tmp.Vanished00", "gone"), (box.user_tmp / "tmp.LinkToNote", "symlink"),
                           (box.user_tmp / "claude-report.md", "a file")):
            app.push_screen(DiskScreen(str(path)))
            await wait_for(pilot, lambda: isinstance(app.screen, DiskScreen) and app.screen.listing is not None)
            title = str(app.screen.query_one("#disk-title").render())
            assert said in title and "entries" not in title, title
            assert app.screen.query_one("#disk", Table).row_count == 0  # never its own child
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))


async def test_sort_filter_help_home_end(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        outputs = table(app, "#outputs")
        first = outputs.keys_in_order

        assert first()[0] == max(app.store.rows, key=lambda k: app.store.size(app.store.rows[k]) or 0)
        await pilot.press("k")
        assert app.store.rows[first()[0]].kind == min(v.kind for v in app.store.rows.values())
        await pilot.press("a")
        oldest = min((v.mtime for v in app.store.rows.values() if v.mtime), default=None)
        assert app.store.rows[first()[0]].mtime == oldest
        await pilot.press("a")  # the same key again: reversed
        assert app.store.rows[first()[-1]].mtime == oldest
        await pilot.press("z", "z")  # largest first, then reversed: the header says which
        assert "size ▲" in str(next(c.label for c in outputs.columns.values() if c.key.value == "size"))
        await pilot.press("end")
        assert outputs.cursor_row == outputs.row_count - 1
        await pilot.press("home")
        assert outputs.cursor_row == 0
        await pilot.press("slash")
        await pilot.press(*"worktree")
        await pilot.pause(0.1)
        assert outputs.row_count == sum(1 for v in app.store.rows.values() if "worktree" in v.path)
        await pilot.press("escape")  # leaves the filter box: focus moves, filter cleared
        await pilot.pause(0.1)
        assert outputs.row_count == len(app.store.rows)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        assert ("d", "Remove", "Ask, then remove the marked rows") in help_screen.key_rows()
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "sessions")
        await pilot.press("q")
    assert app.return_code == 0


async def test_sweep_shows_dry_run_then_removes(box: Sandbox) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "dry run" in app.screen.title_text  # type: ignore[attr-defined]
        assert build_cache.is_dir()  # the dry run removed nothing
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not build_cache.exists())
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in work_line(app).text)
    assert (box.user_tmp / "tmp.LiveCache0").is_dir()
    assert os.path.isdir(box.project / ".claude" / "worktrees" / "dirty-wip")


async def test_empty_state_names_the_paths_it_searched(tmp_path: Path) -> None:
    # the autouse sandbox fixture points every variable at empty folders under tmp_path
    from app.core import paths
    from app.widgets.empty import EmptyState

    app = ClaudettoApp(poll_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "sessions")
        await settle(pilot, app)
        empty = app.screen.query_one(EmptyState)
        await wait_for(pilot, lambda: empty.display, timeout=5)  # not at the next 30 s refresh
        text = str(empty.render())
        for where in (paths.sessions_dir(), paths.claude_tmp_dir(), paths.user_tmp()):
            assert str(where) in text
        assert "claudetto --demo" in text
