"""The detail pane below the Checkouts and Ledger tables (app/widgets/detail.py), and the
layout the base screen gives every table screen: on a real sandbox, with real git worktrees
and a real ledger file."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Footer, Input

from app.core.git import status_counts
from app.sandbox import Sandbox
from app.screens.checkouts import CheckoutsScreen
from app.tui import ClaudettoApp
from app.widgets.detail import DetailPane, DetailPlan
from app.widgets.empty import EmptyState
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from app.widgets.totals import TotalsBar
from tests.tui.conftest import goto, wait_for

SIZE = (120, 36)
PLAN = DetailPlan("#pane", "reading the things…", "No things anywhere.")


def said(app: App[None], selector: str) -> str:
    return str(app.screen.query_one(selector).render())


class PaneApp(App[None]):
    def compose(self) -> ComposeResult:
        yield DetailPane(PLAN)


async def test_the_pane_says_reading_then_empty_then_the_row_then_the_problem_until_a_good_read() -> None:
    app = PaneApp()
    async with app.run_test() as pilot:
        pane = app.query_one(DetailPane)
        assert said(app, "#pane") == "reading the things…"
        pane.show(None)
        await pilot.pause()
        assert said(app, "#pane") == "reading the things…"  # nothing read yet: not "empty"
        pane.loaded()
        pane.show(None)
        await pilot.pause()
        assert said(app, "#pane") == "No things anywhere."
        pane.show(Text("the row in full"))
        await pilot.pause()
        assert said(app, "#pane") == "the row in full"
        pane.failed("The things cannot be read: disk on fire")
        await pilot.pause()
        assert said(app, "#pane") == "The things cannot be read: disk on fire"
        pane.show(Text("another row"))  # a highlight that moves does not hide the problem
        await pilot.pause()
        assert said(app, "#pane") == "The things cannot be read: disk on fire"
        pane.loaded()
        pane.show(Text("another row"))
        await pilot.pause()
        assert said(app, "#pane") == "another row"


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2)


async def test_a_ledger_that_cannot_be_read_says_why_and_a_good_read_clears_it(box: Sandbox) -> None:
    ledger = Path(box.env["CLAUDETTO_HOME"]) / "ledger.json"
    aside = ledger.with_name("ledger.json.aside")
    ledger.rename(aside)
    ledger.mkdir()  # a folder where the file should be: reading it fails for real
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "ledger")
        await wait_for(pilot, lambda: "The ledger cannot be read" in said(app, "#ledger-detail"))
        assert app.screen.query_one("#ledger", Table).row_count == 0
        ledger.rmdir()
        aside.rename(ledger)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.screen.query_one("#ledger", Table).row_count > 0)
        await wait_for(pilot, lambda: "last edit by" in said(app, "#ledger-detail"))
        assert "cannot be read" not in said(app, "#ledger-detail")


def git_line(app: ClaudettoApp) -> str:
    found = re.search(r"git: .*", said(app, "#detail"))
    return found.group(0) if found else ""


async def test_the_checkouts_pane_shows_what_git_says_of_the_highlighted_checkout_now(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        table = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: table.row_count > 0)
        path = table.cursor_key()
        assert path is not None and os.path.isdir(path)
        before = status_counts(path)
        assert not before.error
        await wait_for(pilot, lambda: git_line(app).startswith(f"git: {before.changed} changed, "))
        assert git_line(app).startswith(f"git: {before.changed} changed, {before.untracked} untracked, "
                                        f"{before.ignored} ignored; {before.unmerged} commit")
        Path(path, "fresh-notes.md").write_text("new\n")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: f"{before.untracked + 1} untracked" in git_line(app))
        assert status_counts(path).untracked == before.untracked + 1


async def test_a_checkout_gone_under_the_pane_says_git_cannot_say(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        table = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: table.row_count > 0)
        await wait_for(pilot, lambda: "git: reading" not in said(app, "#detail"))
        path = table.cursor_key()
        assert path is not None
        shutil.rmtree(path)
        screen = app.screen
        assert isinstance(screen, CheckoutsScreen)
        screen.show_detail()  # what a highlight that comes again does: read it again
        await wait_for(pilot, lambda: "git: cannot say (no git checkout here)" in said(app, "#detail"))
        assert "git: reading" not in said(app, "#detail")


async def test_each_table_screen_has_the_header_of_its_mode_its_table_and_what_goes_around_it(box: Sandbox) -> None:
    app = make_app(box)
    expected = {
        "outputs": [TotalsBar, Input, EmptyState, Table, WorkLine, Footer],
        "checkouts": [TotalsBar, Table, DetailPane, WorkLine, Footer],
        "ledger": [TotalsBar, Table, DetailPane, Footer],
    }
    async with app.run_test(size=SIZE) as pilot:
        for mode, kinds in expected.items():
            await goto(pilot, mode)
            children = list(app.screen.children)
            assert [type(child) for child in children] == kinds
            assert app.screen.query_one(TotalsBar).current == mode
            assert app.screen.query_one(Table).has_focus
