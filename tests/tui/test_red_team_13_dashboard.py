"""The dashboard's approve-and-remove attacked a thirteenth time: what a yes removes must be
what the question showed. Outputs pins each path's device and inode when it asks (and the
core now holds the removal to that pin at its own last moment); the Checkouts screen asked
about a checkout and removed whatever bore its name when the yes came. Real sandbox, real
git, the pilot. Docstrings marked (Held.) passed at once."""

from __future__ import annotations

import os
from pathlib import Path

from app.sandbox import Sandbox
from app.screens.checkouts import CheckoutsScreen
from app.screens.confirm import ConfirmModal
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.support import git
from tests.tui.conftest import answer, goto, wait_for

SIZE = (120, 36)


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2)


def the_users_old_worktree(box: Sandbox, at: Path) -> None:
    """While the question is open: the listed checkout goes (another session's WorktreeRemove,
    or the user's `git worktree remove`), and the user moves an old worktree of their own to its
    name (`git worktree move`): clean, its branch merged, a month old, as the listed one was."""
    git(box.project, "worktree", "remove", "--force", str(at))
    mine = box.root / "mine-old"
    git(box.project, "worktree", "add", "-q", "-b", "mine-old", str(mine))
    old = box.now - 40 * 86400
    os.utime(mine, (old, old))
    git(box.project, "worktree", "move", str(mine), str(at))
    os.utime(at, (old, old))


async def test_a_checkout_replaced_while_its_question_was_open_is_not_removed(box: Sandbox) -> None:
    """LOSS (fixed). `d` on old-clean (removable) asks; before the yes, old-clean is gone and
    the user's own month-old worktree was moved to its name. The yes removed that worktree: the
    question named another folder. Now the yes is to the folder listed (its device and inode
    when asked, as on Outputs): another one under its name is `replaced`, and stays."""
    checkout = box.project / ".claude" / "worktrees" / "old-clean"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: str(checkout) in listing.keys_in_order())
        assert listing.move_to(str(checkout))
        await pilot.pause()
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        the_users_old_worktree(box, checkout)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen)
                       and ("kept" in app.screen.query_one(WorkLine).text
                            or "removed" in app.screen.query_one(WorkLine).text), timeout=60)
        line = app.screen.query_one(WorkLine).text
    assert checkout.is_dir() and git(checkout, "branch", "--show-current").strip() == "mine-old", line
    assert "kept" in line and "replaced" in line, line


MARKUP = "tmp.[bold red]Cache[@click=app.quit]x[link=https:x]"  # a name holds no slash: no closing tags


async def test_a_folder_named_in_markup_is_shown_and_removed_as_it_is_named(box: Sandbox) -> None:
    """(Held.) An old recorded output named `tmp.[bold red]Cache[@click=app.quit]x[link=https:x]`
    beside a folder named as its markup would read (`tmp.Cachex`, the user's): the row and the
    question show the brackets as they are, and the yes removes that folder, never the other."""
    from app.screens.outputs import OutputsScreen
    from tests.support import add_record
    from tests.tui.test_red_team_11_dashboard import outputs_rows, work_text

    odd = box.user_tmp / MARKUP
    odd.mkdir()
    (odd / "blob.bin").write_bytes(b"b" * 20_000)
    plain = box.user_tmp / "tmp.Cachex"
    plain.mkdir()
    (plain / "mine.txt").write_text("the user's\n")
    add_record("0e5d0c6a-1111-4222-8333-944455556666", odd, kind="temp")
    old = box.now - 40 * 86400
    for folder in (odd, plain):
        os.utime(folder, (old, old))
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        assert table.move_to(f"gc:{odd}")
        assert "Cache[@click=app.quit]x[link=https:x]" in " ".join(  # the row cuts a path from the left
            cell.plain for cell in table.get_row(f"gc:{odd}"))
        await pilot.pause()
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        shown = str(app.screen.query_one("#body").render())
        assert "Cache[@click=app.quit]x[link=https:x]" in shown, shown
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and "freed" in work_text(app), timeout=60)
        line = work_text(app)
    assert not odd.exists(), line
    assert (plain / "mine.txt").read_text() == "the user's\n"
