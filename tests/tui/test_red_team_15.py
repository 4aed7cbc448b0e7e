"""The dashboard's approve-and-remove attacked a fifteenth time.

Found and fixed:
- a folder whose name holds a right-to-left override (U+202E), an isolate or a line separator
  (U+2028) was shown in the row and the question as it is: the override reorders what follows
  on a terminal that draws bidi text (`tmp.` + U+202E + `txt.exe` reads `tmp.exe.txt`) and a
  separator may start a line of its own. Each now shows as the replacement character, as a C1
  control does; the ledger and the command line escape the same characters.
- a question on a narrow terminal (20x8, 40x12) wrapped each listed path: its tail was a line
  of its own, which reads as one more item going. Each item is now one line, cut from the left.

Held: a sweep answered after `claudetto gc` ran in another terminal; a folder of the user's
moved to a listed name before `d`; a checkout removed on Checkouts, then asked about again on
Outputs before it reloaded.

Real sandbox, real folders, real processes, the pilot. Docstrings marked (Held.) passed at once."""

from __future__ import annotations

import os
from pathlib import Path

from app.sandbox import Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from tests.tui.conftest import (
    BeforeRemoval,
    answer,
    ask_to_remove,
    goto,
    make_app,
    mark_rows,
    old_output_beside,
    remove_on_checkouts,
    remove_on_outputs,
    settle,
    wait_for,
    work_text,
)

SIZE = (120, 36)


BIDI = "tmp.\u202etxt.exe\u2028  1.0 GiB  kept  \u2066notes\u2069"


async def test_a_name_with_a_bidi_override_or_line_separator_is_shown_in_one_order_on_one_line(
        box: Sandbox) -> None:
    """LOSS of what the question says (fixed). An old recorded output whose name holds U+202E,
    U+2028 and an isolate: the question drew them as they are, so the name read reordered and a
    separator could draw a line that looks like one more item. Now the row and the question
    show none of them, and the yes removes that folder, never its neighbour."""
    odd, plain = old_output_beside(box, BIDI, "tmp.exe.txt", "0e5d0c6a-1111-4222-8333-944455556677")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        row, shown, line = await remove_on_outputs(pilot, app, f"gc:{odd}")
    assert not set(row) & set("\u202e\u2028\u2066\u2069"), repr(row)
    assert "txt.exe" in shown and not set(shown) & set("\u202e\u2028\u2066\u2069"), repr(shown)
    assert not set(line) & set("\u202e\u2028\u2066\u2069"), repr(line)
    assert not odd.exists(), line
    assert (plain / "mine.txt").read_text() == "the user's\n"


async def test_a_sweep_answered_after_claudetto_gc_ran_in_another_terminal_removes_nothing_new(
        box: Sandbox) -> None:
    """(Held.) `s` on Outputs asks about the full sweep; before the yes, `claudetto gc` runs in
    another terminal and removes those same outputs, and the user makes a folder of their own
    under one of the names. The yes removes nothing more: the user's folder stays (it is not
    what was asked about), no traceback, and each path is journaled removed once."""
    import json

    from tests.support import run_cli

    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=60)
        asked = str(app.screen.query_one("#body").render())
        other = run_cli("gc", "--json")
        assert other.returncode == 0 and "Traceback" not in other.stderr, other.stderr
        gone = [e["path"] for e in json.loads(other.stdout)["entries"] if e["status"] == "removed"]
        assert gone, other.stdout
        mine = Path(gone[0])
        mine.mkdir()
        (mine / "notes.txt").write_text("the user's\n")
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working, timeout=60)
        await pilot.pause(0.3)
        line = work_text(app)
    assert (mine / "notes.txt").read_text() == "the user's\n", (asked, line)
    assert "Traceback" not in line
    journal = box.state / "journal.jsonl"
    removed = [json.loads(x).get("path") for x in journal.read_text().splitlines() if x.strip()]
    assert all(removed.count(p) == 1 for p in gone), removed


async def test_a_question_shrunk_to_20x8_and_back_lists_each_item_on_one_line_and_removes_only_those(
        box: Sandbox) -> None:
    """LOSS of what the question says (fixed). Two marked rows, `d`, then the window is dragged
    to 20x8 (and 40x12) while the question is open. The list was made for at least 45 cells and
    wrapped into 12: `…/tmp.Bu` on one line, `ildCache` on the next, a line that reads as one
    more item going. Now each listed item is one line, cut from the left (its path's end, which
    names it, stays), prose still wraps; the yes removes those two and nothing else."""
    from textual.geometry import Region
    from textual.widgets import Static

    build_cache = box.user_tmp / "tmp.BuildCache"
    copy = box.user_tmp / "webshop-copy"
    before = BeforeRemoval.of(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        modal = await ask_to_remove(pilot, app, f"gc:{build_cache}", f"gc:{copy}")
        for size in ((20, 8), (40, 12)):
            await pilot.resize_terminal(*size)
            await pilot.pause(0.3)
            body = modal.query_one("#body", Static)
            drawn = [strip.text for strip in body.render_lines(Region(0, 0, body.size.width, body.size.height))]
            assert app.screen is modal
            for name in ("tmp.BuildCache", "webshop-copy"):
                assert any(line.rstrip().endswith(name[-10:]) for line in drawn), (size, drawn)
            assert not any(line.strip() in ("ildCache", "Cache", "copy", "-copy") for line in drawn), drawn
        await pilot.resize_terminal(*SIZE)
        await pilot.pause(0.2)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in work_text(app), timeout=60)
        line = work_text(app)
    assert before.names_now() == sorted(set(before.names) - {build_cache.name, copy.name}), line
    went = before.removed()
    assert sorted(went) == sorted([str(build_cache), str(copy)])


async def test_a_folder_of_the_users_moved_to_a_listed_name_before_d_is_not_removed(box: Sandbox) -> None:
    """(Held.) The row for tmp.BuildCache is read; before `d`, the folder is gone (`rm -rf`
    by the session) and the user moves a month-old folder of their own to that name (`mv`
    keeps its times). The question is asked at `d` about what bears the name then; the yes
    must not take the user's folder: the GC recorded another folder under that name."""
    import shutil

    build_cache = box.user_tmp / "tmp.BuildCache"
    mine = box.home / "thesis-backup"
    mine.mkdir()
    (mine / "chapter1.tex").write_text("the user's\n")
    old = box.now - 40 * 86400
    os.utime(mine / "chapter1.tex", (old, old))
    os.utime(mine, (old, old))
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await mark_rows(pilot, app, f"gc:{build_cache}")
        shutil.rmtree(build_cache)
        os.rename(mine, build_cache)
        await pilot.pause(0.5)
        await pilot.press("d")
        if isinstance(app.screen, ConfirmModal) or await _asked(pilot, app):
            await answer(pilot, "y")
            await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working,
                           timeout=60)
            await pilot.pause(0.3)
        line = work_text(app)
    assert (build_cache / "chapter1.tex").read_text() == "the user's\n", line


async def _asked(pilot: object, app: ClaudettoApp) -> bool:
    """Whether `d` asked (it may say instead that nothing removable is marked)."""
    try:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal), 3)
    except AssertionError:
        return False
    return True


async def test_a_checkout_removed_on_checkouts_then_asked_again_on_outputs_goes_once(box: Sandbox) -> None:
    """(Held.) old-clean is marked on Outputs; the person goes to Checkouts, removes it there
    (`d`, `y`), and back on Outputs presses `d` and `y` at once, before Outputs reloads. No
    traceback; old-clean is journaled removed once; nothing else of the sandbox goes."""
    from app.screens.checkouts import CheckoutsScreen
    checkout = box.project / ".claude" / "worktrees" / "old-clean"
    before = BeforeRemoval.of(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await mark_rows(pilot, app, f"worktree:{checkout}")
        await remove_on_checkouts(pilot, app, checkout)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not checkout.exists(), timeout=60)
        await goto(pilot, "outputs")
        await pilot.press("d")
        if await _asked(pilot, app):
            await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working, timeout=60)
        await pilot.pause(0.5)
        line = work_text(app)
    assert "Traceback" not in line and "Error" not in line, line
    went = before.removed()
    assert went.count(str(checkout)) == 1, went
    assert before.names_now() == before.names
