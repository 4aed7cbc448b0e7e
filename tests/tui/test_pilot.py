"""Pilot tests of the dashboard on a real sandbox: real folders, real git worktrees, real
processes behind the live sessions. They assert on the app's state and on the disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from app.core.paths import project_slug
from app.core.sessions import proc_start_time
from app.sandbox import STALE, Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.disk import DiskScreen
from app.screens.help import HelpScreen
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from tests.tui.conftest import settle

SIZE = (120, 36)


def make_app(box: Sandbox, **kwargs: object) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2, **kwargs)  # type: ignore[arg-type]


def key_for(app: ClaudettoApp, path: Path | str) -> str:
    found = [k for k, v in app.store.rows.items() if v.path == str(path)]
    assert found, f"{path} is not judged: {sorted(v.path for v in app.store.rows.values())}"
    return found[0]


async def goto_row(pilot, app: ClaudettoApp, key: str) -> None:  # type: ignore[no-untyped-def]
    screen = app.screen
    assert isinstance(screen, OutputsScreen)
    table = screen.query_one("#outputs")
    table.move_cursor(row=table.get_row_index(key))  # type: ignore[attr-defined]
    await pilot.pause()


async def wait_for(pilot, check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not met in time")


async def test_mark_confirm_removes_from_disk(box: Sandbox) -> None:
    old_folder = box.claude_tmp / project_slug(box.second_project) / STALE
    build_cache = box.user_tmp / "tmp.BuildCache"
    assert old_folder.is_dir() and build_cache.is_dir()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("2")
        await settle(pilot, app)
        for path in (old_folder, build_cache):
            await goto_row(pilot, app, key_for(app, path))
            await pilot.press("space")
        assert len(app.store.marked) == 2
        assert app.store.marked_total() > 0
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = str(app.screen.query_one("#body").render())
        assert "Remove 2 items" in body and "Kept (" in body and "live session" in body
        await pilot.press("y")
        await wait_for(pilot, lambda: not old_folder.exists() and not build_cache.exists())
        await wait_for(pilot, lambda: "freed" in str(app.screen.query_one("#progress-label").render()))
        line = str(app.screen.query_one("#progress-label").render())
        assert line.startswith("freed ") and "in 2 items" in line
        await settle(pilot, app)
        assert not app.store.marked
        assert all(v.path not in (str(old_folder), str(build_cache)) or v.action == "missing"
                   for v in app.store.rows.values())
    # what was kept is still there
    assert (box.user_tmp / "tmp.LiveCache0").is_dir()


async def test_cancel_removes_nothing(box: Sandbox) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        await goto_row(pilot, app, key_for(app, build_cache))
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert app.screen.focused is not None and app.screen.focused.id == "no"  # default No
        await pilot.press("enter")  # enter on the focused default: No
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        await pilot.pause(0.3)
        assert build_cache.is_dir()
        assert app.store.marked  # still marked: nothing happened


async def test_kept_row_refuses_mark_and_says_why(box: Sandbox) -> None:
    live_cache = box.user_tmp / "tmp.LiveCache0"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        key = key_for(app, live_cache)
        assert app.store.rows[key].action == "keep" and app.store.rows[key].reason == "live"
        await goto_row(pilot, app, key)
        await pilot.press("space")
        await pilot.pause()
        assert key not in app.store.marked
        messages = [n.message for n in app._notifications]  # noqa: SLF001
        assert any("Cannot mark" in m and "live session" in m for m in messages), messages


async def test_read_only_refuses_every_removal(box: Sandbox) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        await goto_row(pilot, app, key_for(app, build_cache))
        await pilot.press("space", "d", "s")
        await pilot.pause(0.2)
        assert not app.store.marked
        assert not isinstance(app.screen, ConfirmModal)
        messages = [n.message for n in app._notifications]  # noqa: SLF001
        assert any("Read-only" in m for m in messages)
    assert build_cache.is_dir()


async def test_session_appears_and_disappears(box: Sandbox) -> None:
    app = make_app(box)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app, sizes=False)
            table = app.screen.query_one("#sessions")
            before = table.row_count  # type: ignore[attr-defined]
            assert before == 3
            file = box.config / "sessions" / f"{child.pid}.json"
            file.write_text(json.dumps({"pid": child.pid, "sessionId": "0a0a0a0a-new", "cwd": str(box.project),
                                        "status": "busy", "procStart": proc_start_time(child.pid),
                                        "startedAt": int(time.time() * 1000), "updatedAt": int(time.time() * 1000)}))
            await wait_for(pilot, lambda: table.row_count == before + 1)  # type: ignore[attr-defined]
            assert str(file) in [k.value for k in table.rows]  # type: ignore[attr-defined]
            assert any(s.session_id == "0a0a0a0a-new" and s.live for s in app.store.sessions)
            file.unlink()
            await wait_for(pilot, lambda: table.row_count == before)  # type: ignore[attr-defined]
    finally:
        child.kill()
        child.wait()


async def test_session_goes_stale_when_its_process_ends(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, sizes=False)
        assert sum(s.live for s in app.store.sessions) == 2
        box.children[0].kill()
        box.children[0].wait()
        await wait_for(pilot, lambda: sum(s.live for s in app.store.sessions) == 1)
        table = app.screen.query_one("#sessions")

        def stale_rows() -> int:
            return [str(table.get_row_at(i)[0]) for i in range(table.row_count)].count("○ stale")  # type: ignore[attr-defined]

        await wait_for(pilot, lambda: stale_rows() == 2)


async def test_selecting_a_session_shows_its_outputs(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        table = app.screen.query_one("#sessions")
        stale_row = next(i for i in range(table.row_count)  # type: ignore[attr-defined]
                         if str(table.get_row_at(i)[1]) == STALE[:8])  # type: ignore[attr-defined]
        table.move_cursor(row=stale_row)  # type: ignore[attr-defined]
        await pilot.pause(0.1)
        owned = app.screen.query_one("#owned")
        assert owned.row_count == len(app.store.owned_by(STALE)) > 0  # type: ignore[attr-defined]
        await pilot.press("o")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        screen = app.screen
        await wait_for(pilot, lambda: screen.filter == STALE)  # type: ignore[attr-defined]
        rows = screen.query_one("#outputs").rows  # type: ignore[attr-defined]
        assert {k.value for k in rows} == {k for k, v in app.store.rows.items() if STALE in v.path or v.session == STALE}


async def test_disk_browser_drills_in_and_goes_up(box: Sandbox) -> None:
    tree = box.project / ".claude" / "worktrees" / "agent-a3f9c2e1b7"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        await goto_row(pilot, app, key_for(app, tree))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DiskScreen))
        disk = app.screen
        table = disk.query_one("#disk")
        await wait_for(pilot, lambda: table.row_count > 0)  # type: ignore[attr-defined]
        first = table.coordinate_to_cell_key((0, 0)).row_key.value  # type: ignore[attr-defined]
        assert first == str(tree / "node_modules")  # largest first
        await pilot.press("enter")
        await wait_for(pilot, lambda: disk.folder == str(tree / "node_modules"))  # type: ignore[attr-defined]
        await pilot.press("backspace")
        await wait_for(pilot, lambda: disk.folder == str(tree))  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))


async def test_sort_filter_help_and_footer_keys(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        screen = app.screen
        table = screen.query_one("#outputs")

        def first_key() -> str:
            return table.coordinate_to_cell_key((0, 0)).row_key.value  # type: ignore[attr-defined, no-any-return]

        biggest = max(app.store.rows, key=lambda k: app.store.size(app.store.rows[k]) or 0)
        assert first_key() == biggest
        await pilot.press("k")
        assert app.store.rows[first_key()].kind == min(v.kind for v in app.store.rows.values())
        await pilot.press("a")
        oldest = min((v.mtime for v in app.store.rows.values() if v.mtime), default=None)
        assert app.store.rows[first_key()].mtime == oldest
        await pilot.press("slash")
        await pilot.press(*"worktree")
        await pilot.pause(0.1)
        assert table.row_count == sum(1 for v in app.store.rows.values() if "worktree" in v.path)  # type: ignore[attr-defined]
        await pilot.press("escape")  # leaves the filter box: focus moves, filter cleared
        await pilot.pause(0.1)
        assert table.row_count == len(app.store.rows)  # type: ignore[attr-defined]
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "Remove marked" in str(app.screen.query_one("#help-keys").render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen))
        await pilot.press("1")
        await wait_for(pilot, lambda: app.current_mode == "sessions")
        await pilot.press("q")
    assert app.return_code == 0


async def test_sweep_shows_dry_run_then_removes(box: Sandbox) -> None:
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, app)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "dry run" in app.screen.title_text  # type: ignore[attr-defined]
        assert build_cache.is_dir()  # the dry run removed nothing
        await pilot.press("y")
        await wait_for(pilot, lambda: not build_cache.exists())
        await wait_for(pilot, lambda: "freed" in str(app.screen.query_one("#progress-label").render()))
    assert (box.user_tmp / "tmp.LiveCache0").is_dir()
    assert os.path.isdir(box.project / ".claude" / "worktrees" / "dirty-wip")


async def test_empty_state_names_the_paths_it_searched(tmp_path: Path) -> None:
    # the autouse sandbox fixture points every variable at empty folders under tmp_path
    from app.core import paths
    from app.widgets.empty import EmptyState

    app = ClaudettoApp(poll_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        empty = app.screen.query_one(EmptyState)
        await wait_for(pilot, lambda: empty.display, timeout=5)  # not at the next 30 s refresh
        text = str(empty.render())
        for where in (paths.sessions_dir(), paths.claude_tmp_dir(), paths.user_tmp()):
            assert str(where) in text
        assert "claudetto --demo" in text
