"""A snapshot of each screen and modal at 80x24 and 120x36, on the sandbox, with time frozen.

The sandbox is built once for the worker under the tmp folder (no test here changes it:
marks, dry runs and open dialogs write nothing), and every path on screen is shown
relative to one of its roots (`~`, `$TMPDIR`, `$CLAUDE_CODE_TMPDIR/claude-$UID`, a project
slug under HOME as `~-code-…`), so the tmp folder never shows. Its live sessions carry no
pid (the contract counts them live), and the app's clock is the sandbox's build time, so
every humanized age is fixed too. The help lists the real folders claudetto reads, which
differ per machine: there, fixed stand-ins take their place.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.data import overview as overview_data
from app.sandbox import STALE, Sandbox, build_sandbox
from app.screens.help import HelpScreen
from app.tui import ClaudettoApp
from app.widgets.table import Table
from tests.tui.conftest import as_in_a_test, goto, point_at, settle, wait_for

SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
PLACES = [("sessions", "~/.claude/sessions"), ("Claude temp", "/tmp/claude-1000"), ("user temp", "/tmp"),
          ("gate logs", "/tmp/claudetto"), ("projects", "~/.claude/projects"), ("state", "~/.claudetto"),
          ("journal", "~/.claudetto/journal.jsonl")]


@pytest.fixture(scope="session")  # once per worker, however the worker's tests interleave modules
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    base = tmp_path_factory.mktemp("snapshots")
    with as_in_a_test(base):
        box = build_sandbox(base / "box", live_processes=False, scale=0.25)
    try:
        yield box
    finally:
        box.close()


@pytest.fixture
def snapbox(built: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    point_at(built, monkeypatch)
    monkeypatch.setattr(HelpScreen, "places", staticmethod(lambda: PLACES))
    # The sandbox's journal is dated from today: the chart's bars stand where they always do,
    # and its day labels are shown as the snapshots were taken (Nov 17-30), whatever today is.
    real = overview_data.freed_days

    def fixed_dates(per_day: dict[str, int], now: float, days: int = overview_data.DAYS) -> list[tuple[str, int]]:
        found = real(per_day, now, days)
        return [(f"2026-11-{31 - len(found) + i:02d}", size) for i, (_day, size) in enumerate(found)]

    monkeypatch.setattr(overview_data, "freed_days", fixed_dates)
    return built


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=3600)


async def ready(pilot: Any, mode: str | None = None) -> None:
    """Judged, measured, each live session sampled once; on `mode`'s screen; nothing blinking."""
    app = pilot.app
    if mode:
        await goto(pilot, mode)
    await settle(pilot, app)
    await wait_for(pilot, lambda: len(app.store.growth) == 2)
    await pilot.pause(0.2)
    app.clear_notifications()
    await pilot.pause(0.1)


async def loaded(pilot: Any, selector: str, ready_text: str = "") -> Table:
    """The screen's table once its worker filled it (and its detail pane says `ready_text`)."""
    table = pilot.app.screen.query_one(selector, Table)
    await wait_for(pilot, lambda: table.row_count > 0)
    if ready_text:
        await wait_for(pilot, lambda: ready_text in str(pilot.app.screen.query_one("#detail").render()))
    await pilot.pause(0.2)
    return table


@SIZES
def test_overview(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot)
        await wait_for(pilot, lambda: pilot.app.screen.query_one("DayBars").days)
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_sessions(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "sessions")
        stale = next(s.file for s in pilot.app.store.sessions if s.session_id == STALE)
        pilot.app.screen.query_one("#sessions", Table).move_to(stale)
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_outputs(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "outputs")
        await pilot.press("space", "space")  # the two largest rows: removable
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_checkouts(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "checkouts")
        table = await loaded(pilot, "#checkouts")
        table.move_to(str(snapbox.project / ".claude" / "worktrees" / "bold-oak-a3f2"))
        await loaded(pilot, "#checkouts", "release would delete")

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_release_modal(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "checkouts")
        table = await loaded(pilot, "#checkouts")
        table.move_to(str(snapbox.project / ".claude" / "worktrees" / "quiet-fern-2b9e"))
        await loaded(pilot, "#checkouts", "release would delete")
        await pilot.press("r")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmModal")
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_ledger(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "ledger")
        table = await loaded(pilot, "#ledger")
        table.move_to(str(snapbox.project / "src" / "app.py"))
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_memory(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "memory")
        table = await loaded(pilot, "#findings")
        screen = pilot.app.screen
        table.move_to(next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin"))
        await pilot.pause(0.2)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_supersede_modal(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "memory")
        table = await loaded(pilot, "#findings")
        screen = pilot.app.screen
        table.move_to(next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin"))
        await pilot.press("u")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "SupersedeModal")
        correction = pilot.app.screen.query_one("#correction")
        correction.cursor_blink = False  # a blinking cursor would make every picture differ
        correction.value = "The shop runs on Flask 3.0."
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_confirm_modal(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "outputs")
        await pilot.press("space", "space", "d")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmModal")
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


def test_confirm_modal_after_a_key_typed_ahead(snapbox: Sandbox, snap_compare: Any) -> None:
    """`d` and `y` typed together: the dialog says the `y` was too soon, and the list still
    fits with the title and the buttons at 80x24."""
    from textual import events

    async def before(pilot: Any) -> None:
        await ready(pilot, "outputs")
        await pilot.press("space", "space")
        for key in ("d", "y"):  # queued together, as fast fingers send them
            pilot.app.post_message(events.Key(key, key))
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmModal"
                       and pilot.app.screen.query_one("#too-soon").has_class("-said"))
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=(80, 24), run_before=before)


@SIZES
def test_help(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "outputs")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


@SIZES
def test_disk_browser(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:
    async def before(pilot: Any) -> None:
        await ready(pilot, "outputs")
        screen = pilot.app.screen
        screen.filter_text("agent-a3f9")
        await pilot.pause(0.2)
        screen.query_one("#outputs").focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.screen.query("#disk") and pilot.app.screen.listing is not None)
        await pilot.pause(0.3)

    assert snap_compare(make_app(snapbox), terminal_size=size, run_before=before)


def test_no_tmp_folder_on_screen(snapbox: Sandbox) -> None:
    """What the pictures rest on: no path on screen names the module's tmp folder."""
    svgs = Path(__file__).parent / "__snapshots__" / "test_snapshots"
    for svg in svgs.glob("*.svg"):
        text = svg.read_text(encoding="utf-8")
        assert "pytest-of" not in text and str(snapbox.root.parent.name) not in text, svg.name
