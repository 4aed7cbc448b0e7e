"""Red team, round twelve, on the dashboard as a person uses it: a question is asked on the
screen whose key asked it, never on the one the person went to meanwhile (where a `y` meant
for something else would answer it). Real sandbox, real git, real processes, the pilot."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from app.core.outputs import Judged, judge
from app.sandbox import Sandbox
from app.screens.checkouts import CheckoutsScreen
from app.screens.confirm import ConfirmModal
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from app.widgets.table import Table
from tests.tui.conftest import answer, goto, notes, settle, wait_for


def title_of(app: ClaudettoApp) -> str:
    """The title of the dialog shown (a ConfirmModal's)."""
    screen: Any = app.screen
    return str(screen.title_text)

SIZE = (120, 36)


class Gate:
    """A judge that waits while the gate is shut: the sweep's dry run (or any judgement) takes
    as long as the test says, as a real one takes seconds over many worktrees."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.waiting = threading.Event()

    def shut(self) -> None:
        self.open.clear()
        self.waiting.clear()

    def __call__(self) -> Judged:
        if not self.open.is_set():
            self.waiting.set()
            self.open.wait(30)
        return judge()


def make_app(box: Sandbox, gate: Gate | None = None) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2, judge_outputs=gate)


async def test_the_sweeps_question_waits_for_the_outputs_screen_and_a_y_elsewhere_sweeps_nothing(
        box: Sandbox) -> None:
    """`s` on Outputs starts the dry run (seconds on a real machine). The person goes to
    Checkouts meanwhile and types there. The dry run's question came up on Checkouts, on top
    of whatever the person was doing: a `y` meant for Checkouts' own question swept every
    output the dry run listed, unseen. It waits for Outputs instead (a note says so), and is
    asked there, whole, when the person comes back."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    gate = Gate()
    app = make_app(box, gate)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        assert isinstance(app.screen, OutputsScreen)
        outputs: Any = app.screen
        gate.shut()
        await pilot.press("s")
        await wait_for(pilot, gate.waiting.is_set)
        await goto(pilot, "checkouts")
        await wait_for(pilot, lambda: app.screen.query_one("#checkouts", Table).row_count > 0)
        gate.open.set()
        await wait_for(pilot, lambda: not outputs.working)
        await pilot.pause(0.1)
        assert isinstance(app.screen, CheckoutsScreen), type(app.screen)
        await pilot.press("y")
        await pilot.pause(0.2)
        assert build_cache.exists()
        assert any("dry run" in note and "Outputs" in note for note in notes(app)), notes(app)
        await goto(pilot, "outputs")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "Full sweep" in title_of(app)
        await answer(pilot, "n")
        await pilot.pause()
        assert app.screen is outputs
    assert build_cache.exists()


async def test_a_release_plan_ready_after_the_person_left_checkouts_asks_there_on_return(
        box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    """`r` on bold-oak measures what a release would delete (node_modules: seconds when it is
    big); the person goes to Outputs meanwhile, marks a row and presses `d` and `y` there.
    Their `y` is for their own question, never for the release that came up in between."""
    import app.core.release as release

    gate = Gate()
    real = release.release_checkout

    def slow(path: str, *args: Any, **kwargs: Any) -> Any:
        gate()
        return real(path, *args, **kwargs)

    monkeypatch.setattr(release, "release_checkout", slow)
    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        table = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: table.row_count > 0)
        checkouts: Any = app.screen
        assert table.move_to(str(checkout))
        await pilot.pause()
        gate.shut()
        await pilot.press("r")
        await wait_for(pilot, gate.waiting.is_set)
        await goto(pilot, "outputs")
        await settle(pilot, app)
        rows = app.screen.query_one("#outputs", Table)
        assert rows.move_to(f"gc:{build_cache}")
        await pilot.pause()
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        gate.open.set()
        await wait_for(pilot, lambda: checkouts.held is not None)
        assert "Remove 1 marked" in title_of(app)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and not build_cache.exists())
        assert (checkout / "node_modules").is_dir()
        await goto(pilot, "checkouts")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert title_of(app).startswith("Release bold-oak-a3f2")
        await answer(pilot, "n")
        await pilot.pause()
        assert app.screen is checkouts
    assert (checkout / "node_modules").is_dir()


async def test_ctrl_c_leaves_the_dashboard_as_q_does(box: Sandbox) -> None:
    """The terminal's reflex to leave: Textual's own ctrl+c stayed and said `Press
    [b]ctrl+q[/b] to quit the app`, its markup shown as text (every notification is text
    here). It ends the dashboard as `q` does (the demo's sandbox goes with it)."""
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: app.return_code is not None)
        said = notes(app)
    assert app.return_code == 0
    assert not any("[b]" in note for note in said), said


async def test_a_click_on_a_screens_tab_in_the_header_shows_that_screen(box: Sandbox) -> None:
    """With a mouse alone, the header's `1 … 6` were text: the screens were reached only
    through the palette. A click on a tab shows its screen, from any screen."""
    from app.widgets.totals import TotalsBar

    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app, sizes=False)
        for mode, key in (("ledger", "5"), ("overview", "1")):
            bar = app.screen.query_one(TotalsBar)
            line = bar.render_line(0).text
            await pilot.click(TotalsBar, offset=(line.index(f" {key} ") + 2, 0))
            await wait_for(pilot, lambda mode=mode: app.current_mode == mode)  # type: ignore[misc]


async def test_an_item_opened_from_the_overview_is_the_row_space_marks_on_outputs(box: Sandbox) -> None:
    """The person had the cursor on `tmp.BuildCache/objects` (a GC record of its own) on
    Outputs, then picks tmp.BuildCache among the Overview's biggest items and opens it. The
    filter (its path) shows both rows, and the cursor stayed on the child: the space that
    followed marked another path than the one opened. The cursor is on the item opened."""
    import os

    from app.core.removal import resolve_parents
    from tests.support import add_record, set_mtime

    build_cache = box.user_tmp / "tmp.BuildCache"
    objects = build_cache / "objects"
    objects.mkdir()
    (objects / "pack.bin").write_bytes(os.urandom(64 * 1024))
    set_mtime(objects, 10 * 86400)
    set_mtime(build_cache, 10 * 86400)
    add_record("stale-recorder", objects)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        keys = {v.path: k for k, v in app.store.rows.items()}
        parent, child = keys[resolve_parents(build_cache)], keys[resolve_parents(objects)]
        assert app.screen.query_one("#outputs", Table).move_to(child)
        await goto(pilot, "overview")
        biggest = app.screen.query_one("#biggest", Table)
        biggest.focus()
        assert biggest.move_to(parent)
        await pilot.pause()
        await pilot.press("o")
        await wait_for(pilot, lambda: app.current_mode == "outputs")
        await pilot.pause(0.1)
        assert app.screen.query_one("#outputs", Table).cursor_key() == parent
        await pilot.press("space")
        assert app.store.marked == {parent}


async def test_the_biggest_item_read_on_the_overview_is_the_one_o_opens_after_a_new_order(box: Sandbox) -> None:
    """The person reads the Overview's top item, then a judgement comes in where
    tmp.BuildCache grew past it. The cursor stayed on the first row, now another item: `o`
    opened tmp.BuildCache, where the next space marked it. It stays on the item read."""
    import os

    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        table = app.screen.query_one("#biggest", Table)
        table.focus()
        await wait_for(pilot, lambda: table.row_count > 0)
        assert table.cursor_row == 0
        read = table.cursor_key()
        assert read is not None and read != f"gc:{build_cache}"
        top_size = app.store.size(app.store.rows[read]) or 0
        when = os.stat(build_cache).st_mtime
        with open(build_cache / "grown.bin", "wb") as fh:
            fh.write(b"\1" * (top_size + (1 << 20)))
        os.utime(build_cache, (when, when))  # still old: still removable
        app.store.refresh()
        await wait_for(pilot, lambda: table.keys_in_order()[0] == f"gc:{build_cache}", timeout=20)
        await pilot.pause()
        assert table.cursor_key() == read
        await pilot.press("o")
        await wait_for(pilot, lambda: app.current_mode == "outputs")
        await pilot.pause(0.1)
        assert app.screen.query_one("#outputs", Table).cursor_key() == read


async def test_the_session_read_on_the_first_row_is_the_one_o_opens_after_another_updates(box: Sandbox) -> None:
    """Sessions sort live first, then the latest update first, and a live session's update
    time moves all the time. The person reads the top session; the other live one updates:
    it took the first row and the cursor with it, and `o` opened that one's outputs."""
    import json

    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "sessions")
        table = app.screen.query_one("#sessions", Table)
        await wait_for(pilot, lambda: table.row_count >= 3)
        assert table.cursor_row == 0
        read = table.cursor_key()
        assert read is not None
        other = next(s for s in app.store.sessions if s.live and s.file != read)
        with open(other.file, encoding="utf-8") as fh:
            record = json.load(fh)
        record["updatedAt"] = max(s.updated_at or 0 for s in app.store.sessions) + 60_000
        with open(other.file, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        await wait_for(pilot, lambda: table.keys_in_order()[0] == other.file, timeout=10)
        await pilot.pause()
        assert table.cursor_key() == read
        session_id = next(s.session_id for s in app.store.sessions if s.file == read)
        await pilot.press("o")
        await wait_for(pilot, lambda: app.current_mode == "outputs")
        assert app.screen.filter == session_id  # type: ignore[attr-defined]


async def test_the_finding_read_on_the_first_row_stays_under_the_cursor_when_one_comes_in_above(
        box: Sandbox) -> None:
    """The person reads the first finding; Claude meanwhile writes `A.md` with a stale pin,
    and the sweep (`r`) lists it first. The cursor kept the first row, now A.md's line:
    `u` would have asked to strike a line the person had not read."""
    from app.core.paths import project_slug

    memory = box.config / "projects" / project_slug(box.project) / "memory"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        table = app.screen.query_one("#findings", Table)
        await wait_for(pilot, lambda: table.row_count > 0)
        assert table.cursor_row == 0
        read = table.cursor_key()
        (memory / "A.md").write_text("---\nname: A\ndescription: a\ntype: project\n---\n"
                                     "The shop runs on Flask 2.2.5.\n", encoding="utf-8")
        with open(memory / "MEMORY.md", "a", encoding="utf-8") as fh:
            fh.write("- [A](A.md) — a\n")
        await pilot.press("r")
        await wait_for(pilot, lambda: "A.md" in (table.keys_in_order()[0]), timeout=20)
        await pilot.pause()
        assert table.cursor_key() == read


async def test_the_sweeps_question_waits_while_the_person_types_in_the_filter(box: Sandbox) -> None:
    """`s`, and while the dry run runs the person filters (`/`, typing). The question came up
    mid-word and took the focus: the next `y` typed (in `yarn`, `pyc`…) swept unread. It is
    asked once the filter box is left (enter), and the letters stay the filter's."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    gate = Gate()
    app = make_app(box, gate)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        assert isinstance(app.screen, OutputsScreen)
        outputs: Any = app.screen
        gate.shut()
        await pilot.press("s")
        await wait_for(pilot, gate.waiting.is_set)
        await pilot.press("slash", "t", "m", "p")
        gate.open.set()
        await wait_for(pilot, lambda: not outputs.working)
        await pilot.pause(0.1)
        await pilot.press("y")
        await pilot.pause(0.1)
        assert app.screen is outputs and outputs.filter == "tmpy"
        assert build_cache.exists()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "Full sweep" in title_of(app)
        await answer(pilot, "n")
    assert build_cache.exists()


def burst(app: ClaudettoApp, *keys: str) -> None:
    """Keys as a fast typist's terminal delivers them: queued together, before the app has
    acted on the first (the pilot's press waits for each; fingers do not)."""
    from textual import events

    chars = {"slash": "/", "space": " "}
    for key in keys:
        app.post_message(events.Key(key, chars.get(key, key if len(key) == 1 else None)))


async def test_a_filter_typed_in_one_burst_is_text_not_a_removal(box: Sandbox) -> None:
    """A row marked, then `/dirty` typed fast (as fingers do, or a paste): `/` asked to focus
    the filter box later, so the letters behind it went to the table's screen: `d` asked to
    remove the marked row and the `y` of the word answered yes. Every letter is the filter's."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        assert isinstance(app.screen, OutputsScreen)
        outputs: Any = app.screen
        assert outputs.query_one("#outputs", Table).move_to(f"gc:{build_cache}")
        await pilot.pause()
        await pilot.press("space")
        burst(app, "slash", "d", "i", "r", "t", "y")
        await pilot.pause(0.3)
        assert app.screen is outputs, type(app.screen)
        assert outputs.filter == "dirty"
        assert not outputs.working
        burst(app, "ctrl+a", "u", "t", "m", "p", "slash", "t")  # a path's `/` is the filter's too
        await pilot.pause(0.3)
        assert outputs.filter == "dirtyutmp/t", outputs.filter
    assert build_cache.exists()
