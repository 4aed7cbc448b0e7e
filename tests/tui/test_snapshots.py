"""A snapshot of each screen and of the modal, on the sandbox, with time frozen.

The sandbox is built under the test's tmp_path, and every path on screen is shown relative
to one of its roots (`~`, `$TMPDIR`, `$CLAUDE_CODE_TMPDIR/claude-$UID`, a project slug under
HOME as `~-code-…`), so the tmp_path never shows. Its live sessions carry no pid (the
contract counts them live), and the app's clock is the sandbox's build time, so every
humanized age is fixed too: nothing in a picture varies between runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.sandbox import STALE, Sandbox, build_sandbox
from app.tui import ClaudettoApp
from tests.tui.conftest import point_at, settle

SIZE = (120, 36)


@pytest.fixture
def snapbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    box = build_sandbox(tmp_path / "box", live_processes=False, scale=0.25)
    point_at(box, monkeypatch)
    try:
        yield box
    finally:
        box.close()


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=3600)


async def ready(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot, pilot.app)
    pilot.app.clear_notifications()
    await pilot.pause(0.1)


def test_sessions_screen(snapbox: Sandbox, snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await ready(pilot)
        table = pilot.app.screen.query_one("#sessions")
        row = next(i for i in range(table.row_count) if str(table.get_row_at(i)[1]) == STALE[:8])
        table.move_cursor(row=row)
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=SIZE, run_before=before)


def test_outputs_screen(snapbox: Sandbox, snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("2")
        await ready(pilot)
        await pilot.press("space")  # the largest row: removable
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=SIZE, run_before=before)


def test_outputs_screen_small_terminal(snapbox: Sandbox, snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("2")
        await ready(pilot)

    assert snap_compare(make_app(snapbox), terminal_size=(80, 24), run_before=before)


def test_confirm_modal(snapbox: Sandbox, snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("2")
        await ready(pilot)
        await pilot.press("space", "space", "d")
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=SIZE, run_before=before)


def test_confirm_modal_small_terminal(snapbox: Sandbox, snap_compare) -> None:  # type: ignore[no-untyped-def]
    """At 80x24 each line fits (short reasons, paths cut from the left) and the buttons show."""
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("2")
        await ready(pilot)
        await pilot.press("space", "space", "d")
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=(80, 24), run_before=before)


def test_help_screen(snapbox: Sandbox, snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("2")
        await ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=SIZE, run_before=before)


def test_disk_browser(snapbox: Sandbox, snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def before(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.press("2")
        await ready(pilot)
        screen = pilot.app.screen
        screen.filter_text("agent-a3f9")
        await pilot.pause(0.2)
        screen.query_one("#outputs").focus()
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.05)
            if pilot.app.screen.query("#disk") and pilot.app.screen.query_one("#disk").row_count:
                break
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=SIZE, run_before=before)
