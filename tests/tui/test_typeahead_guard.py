"""A question is read before it is answered: a key or a click made before it was painted, or
within its guard time (app/screens/confirm.py GUARD_S), does not answer it, and the dialog
says so; one made after the guard does. The guard here is the real one, whatever the other
dashboard tests use."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from textual import events

from app.core.paths import project_slug
from app.sandbox import STALE, Sandbox
from app.screens.confirm import GUARD_S, ConfirmModal, GuardedModal
from app.screens.supersede import SupersedeModal
from app.tui import ClaudettoApp
from app.widgets.table import Table
from tests.tui.conftest import answerable, goto, settle, wait_for

SIZE = (120, 36)


def guarded_app(**kwargs: Any) -> ClaudettoApp:
    """An app on the test's empty sandbox with the real guard (a question is pushed by hand)."""
    return ClaudettoApp(poll_s=5.0, confirm_guard_s=GUARD_S, **kwargs)


def typed(app: ClaudettoApp, *keys: str) -> None:
    """Keys as the terminal delivers them: queued now, handled when the app gets to them."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


def note(app: ClaudettoApp) -> str:
    return str(app.screen.query_one("#too-soon").render())


async def painted(pilot: Any) -> GuardedModal[Any]:
    """The question on screen, once it is painted (its guard runs from then)."""
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, GuardedModal) and pilot.app.screen.shown_at is not None)
    return pilot.app.screen


async def test_a_y_typed_before_the_question_appears_does_not_answer_it() -> None:
    """`y` typed 0.1 s before the question comes (the app busy meanwhile, so the key reaches
    the dialog): no answer, the dialog says why; a `y` after the guard answers it."""
    answers: list[bool | None] = []
    app = guarded_app()
    async with app.run_test(size=SIZE) as pilot:
        typed(app, "y")
        time.sleep(0.1)  # the key waits in the queue while the app is busy, as a worker's result lands
        app.push_screen(ConfirmModal("Remove 1 marked (4.0 KiB)?", "/tmp/x"), answers.append)
        await painted(pilot)
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmModal) and answers == []
        assert "Read first: press y again" in note(app)
        await answerable(pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: answers == [True])


async def test_a_y_typed_just_after_the_question_appears_does_not_answer_it() -> None:
    """`y` 0.1 s after the question is painted is within the guard: no answer. After the
    guard (counted from that early `y` too) the same key answers."""
    answers: list[bool | None] = []
    app = guarded_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ConfirmModal("Remove 1 marked (4.0 KiB)?", "/tmp/x"), answers.append)
        modal = await painted(pilot)
        await pilot.pause(0.1)
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is modal and answers == []
        assert "Read first: press y again" in note(app)
        assert not modal.answerable()
        await pilot.pause(GUARD_S)  # the guard runs out with no key pressed
        assert modal.answerable()
        await pilot.press("y")
        await wait_for(pilot, lambda: answers == [True])


async def test_a_held_enter_does_not_answer_the_next_question() -> None:
    """Enter held on Yes answers the first question; its repeats land on the next question,
    which comes right after, and answer nothing while the key is down (each repeat is too
    soon). Released, one Enter answers it."""
    answers: list[tuple[str, bool | None]] = []
    app = guarded_app()

    def first_answered(yes: bool | None) -> None:
        answers.append(("first", yes))
        app.push_screen(ConfirmModal("Full sweep (dry run): 3 to remove", "/tmp/y"),
                        lambda yes: answers.append(("second", yes)))

    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ConfirmModal("Remove 1 marked (4.0 KiB)?", "/tmp/x"), first_answered)
        first = await answerable(pilot)
        first.query_one("#yes").focus()
        await pilot.pause()
        held_until = time.monotonic() + GUARD_S + 0.4  # held longer than the guard
        while time.monotonic() < held_until:
            typed(app, "enter")  # a terminal repeats a held key every ~30 ms
            await pilot.pause(0.03)
        second = app.screen
        assert answers == [("first", True)]
        assert isinstance(second, ConfirmModal) and second is not first
        assert "Read first: press enter again" in note(app)
        await answerable(pilot)
        await pilot.press("enter")  # on No, the default: the second question was never confirmed
        await wait_for(pilot, lambda: len(answers) == 2)
        assert answers == [("first", True), ("second", False)]


async def test_a_click_in_the_guard_time_presses_nothing() -> None:
    """A click on Yes while the guard runs does nothing but say so; one after it answers."""
    answers: list[bool | None] = []
    app = guarded_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ConfirmModal("Remove 1 marked (4.0 KiB)?", "/tmp/x"), answers.append)
        await painted(pilot)
        await pilot.click("#yes")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal) and answers == []
        assert "Read first: click again" in note(app)
        await answerable(pilot)
        await pilot.click("#yes")
        await wait_for(pilot, lambda: answers == [True])


async def test_an_enter_right_behind_the_index_fix_writes_no_correction() -> None:
    """The index fix opens the supersede dialog with its correction filled in: an Enter typed
    right behind the key that opened it writes nothing; one after the guard writes it."""
    given: list[str | None] = []
    app = guarded_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(SupersedeModal("~/memory/MEMORY.md", 3, "- [notes](notes.md)", "notes.md is gone",
                                       "`notes.md` no longer exists."), given.append)
        typed(app, "enter")
        await painted(pilot)
        await pilot.pause(0.1)
        assert isinstance(app.screen, SupersedeModal) and given == []
        assert "Read first: press enter again" in note(app)
        await answerable(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: given == ["`notes.md` no longer exists."])


async def test_d_and_y_typed_together_remove_nothing_until_the_question_is_read(box: Sandbox) -> None:
    """On Outputs, a marked row and `d` `y` typed in one go: the `y` lands on the question `d`
    raised before it could be read, and nothing is removed. After the guard, `y` removes it."""
    stale = Path(box.claude_tmp) / project_slug(box.second_project) / STALE
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2, confirm_guard_s=GUARD_S)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key = next(k for k, row in app.store.rows.items() if row.path == str(stale))
        assert app.screen.query_one("#outputs", Table).move_to(key)
        await pilot.press("space")
        assert app.store.marked == {key}
        typed(app, "d", "y")
        await painted(pilot)
        await pilot.pause(0.2)
        assert isinstance(app.screen, ConfirmModal) and stale.is_dir()
        assert "Read first: press y again" in note(app)
        await answerable(pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: not stale.exists())


async def test_a_question_shown_again_from_under_another_screen_is_guarded_again() -> None:
    """Read once, then covered (help, the palette) and shown again: a key pressed right as it
    comes back is meant for what covered it, and answers nothing."""
    from app.screens.help import HelpScreen

    answers: list[bool | None] = []
    app = guarded_app()
    async with app.run_test(size=SIZE) as pilot:
        modal = ConfirmModal("Remove 1 marked (4.0 KiB)?", "/tmp/x")
        app.push_screen(modal, answers.append)
        await answerable(pilot)
        app.push_screen(HelpScreen())
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        app.pop_screen()
        await pilot.press("y")
        await pilot.pause()
        assert app.screen is modal and answers == []
        await answerable(pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: answers == [True])


async def test_a_yes_that_reaches_the_question_before_it_is_built_answers_nothing() -> None:
    """A key typed on the screen below reaches the bindings of the question pushed meanwhile,
    before the question is even built: no answer, no error, and the note shows once it is."""
    answers: list[bool | None] = []
    app = guarded_app()
    async with app.run_test(size=SIZE) as pilot:
        modal = ConfirmModal("Remove 1 marked (4.0 KiB)?", "/tmp/x")
        app.push_screen(modal, answers.append)
        assert await app.run_action("answer(True)", modal)  # as the binding of `y` would, at once
        await painted(pilot)
        await pilot.pause(0.1)
        assert app.screen is modal and answers == [] and app.is_running
        assert "Read first: press y again" in note(app)
