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
from app.widgets.progress import WorkLine
from tests.support import git
from tests.tui.conftest import (
    answer,
    make_app,
    old_output_beside,
    remove_on_checkouts,
    remove_on_outputs,
    wait_for,
)

SIZE = (120, 36)


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
        await remove_on_checkouts(pilot, app, checkout)
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
    odd, plain = old_output_beside(box, MARKUP, "tmp.Cachex", "0e5d0c6a-1111-4222-8333-944455556666")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        row, shown, line = await remove_on_outputs(pilot, app, f"gc:{odd}")
    assert "Cache[@click=app.quit]x[link=https:x]" in row  # the row cuts a path from the left
    assert "Cache[@click=app.quit]x[link=https:x]" in shown, shown
    assert not odd.exists(), line
    assert (plain / "mine.txt").read_text() == "the user's\n"
