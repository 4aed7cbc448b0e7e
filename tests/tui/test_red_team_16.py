"""The dashboard's approve-and-remove attacked a sixteenth time.

Found and fixed:
- a folder two rules judge and one of them keeps was still removed through the other. A
  worktree a session made with `git worktree add .claude/worktrees/<name>` ten days ago is past
  the GC's 7 days (`will remove`) and `young` to the worktree rule: the Overview listed it kept,
  yet its GC row marked and `d` removed it, `s` listed it under both "Remove" and "Kept" and
  removed it, and the header counted it reclaimable and kept at once. One a live session made
  is `live` to the GC and removable to the worktree rule: Checkouts listed it `removable` and
  `d` removed it. A path now goes only when every rule that judges it says so, and every
  screen shows the rule that keeps it.
- a path in wide characters (CJK) was fitted to its column by characters, not cells: the table
  cut it at the right, and two outputs differing only at their ends read the same.
- the command palette read a session's cwd as markup: `site [old]` showed as `site `, a
  `[@click=…]` became an action, and an escape byte reached the terminal.
- the Ledger's pane gave an edited file's name and its agent's type as they are: an escape
  reached the terminal and a newline broke the name in two.

Real sandbox, real git, real folders, real processes, the pilot."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app import format as fmt
from app.sandbox import LIVE_WAITING, Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.outputs import OutputsScreen
from app.widgets.plain import visible
from app.widgets.table import Table
from app.widgets.totals import TotalsBar
from tests.tui.conftest import (
    BeforeRemoval,
    answer,
    goto,
    make_app,
    notes,
    old_output_beside,
    outputs_rows,
    remove_on_checkouts,
    settle,
    wait_for,
    work_text,
)
from tests.tui.test_red_team_11_dashboard import worktree_the_session_made

SIZE = (120, 36)


def young_worktree_the_gc_recorded(box: Sandbox) -> Path:
    """A worktree the stale session made with `git worktree add` ten days ago: past the GC's
    7 days, inside cleanupPeriodDays (30)."""
    checkout = worktree_the_session_made(box, "ten-days")
    old = box.now - 10 * 86400
    os.utime(checkout, (old, old))
    return checkout


async def test_a_worktree_one_rule_keeps_cannot_be_marked_by_the_row_of_another(box: Sandbox) -> None:
    """LOSS (fixed). Two rows, `will remove (age)` (the GC's) and `keep: young` (the worktree
    rule's): space on the first marked it, and `d`, `y` removed the checkout the Overview
    listed kept. Now both rows say `keep: young`, space refuses and says why, `d` has nothing
    to ask, and the checkout stays."""
    checkout = young_worktree_the_gc_recorded(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        rows = {k.split(":", 1)[0]: app.store.rows[k] for k in table.keys_in_order() if k.endswith(f":{checkout}")}
        assert (rows["gc"].action, rows["worktree"].action, rows["worktree"].reason) == ("remove", "keep", "young")
        for key in (f"gc:{checkout}", f"worktree:{checkout}"):
            row = " ".join(cell.plain for cell in table.get_row(key))
            assert "keep: young" in row and "will remove" not in row, row
        assert table.move_to(f"gc:{checkout}")
        await pilot.pause()
        await pilot.press("space")
        await pilot.pause(0.2)
        assert not app.store.marked, app.store.marked
        assert any("ten-days" in n and fmt.reason("keep", "young") in n for n in notes(app)), notes(app)
        await pilot.press("d")
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmModal)
    assert checkout.is_dir()


async def test_the_sweep_keeps_a_worktree_one_rule_keeps_and_says_so(box: Sandbox) -> None:
    """LOSS (fixed). `s`: the question listed the ten-day worktree to remove (and again as
    kept), and the yes removed it. Now it is listed kept only, with the reason, the header's
    reclaimable total leaves it out, and the yes keeps it; the rest of the sweep goes."""
    checkout = young_worktree_the_gc_recorded(box)
    before = BeforeRemoval.of(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        size = app.store.size(app.store.rows[f"worktree:{checkout}"]) or 0
        assert size > 0
        reclaimable = app.store.total("remove")
        removable = {v.path: app.store.size(v) or 0 for v in app.store.rows.values()
                     if v.removable and v.path != str(checkout)}
        assert reclaimable == sum(removable.values()), (reclaimable, sum(removable.values()))
        header = str(app.screen.query_one(TotalsBar).render())
        assert f"reclaimable {fmt.size(reclaimable)}" in header, header
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=60)
        body = app.screen.body
        listed, _, kept = body.partition("Kept (")
        assert "ten-days" not in listed and kept, body
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in work_text(app), timeout=60)
        line = work_text(app)
    assert checkout.is_dir(), line
    assert str(checkout) not in before.removed()
    assert sorted(before.removed()) == sorted(removable), line


async def test_a_checkout_a_live_session_made_is_kept_on_checkouts_as_on_outputs(box: Sandbox) -> None:
    """LOSS (fixed). The waiting live session ran `git worktree add .claude/worktrees/made-live`
    a month ago and works on in the project: the GC keeps the folder (`keep: live`: the Claude
    that made it runs), the worktree rule calls it removable (no session works in it).
    Checkouts listed it `removable`, and `d`, `y` removed it. Now the row says why it is kept,
    `d` asks nothing, and the worker's own judgement of every rule holds it too."""
    from app.data import removals

    checkout = worktree_the_session_made(box, "made-live", session=LIVE_WAITING)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")  # first: the outputs are judged while it reads
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: str(checkout) in listing.keys_in_order() and app.store.judged)
        await wait_for(pilot, lambda: "keep: live" in " ".join(c.plain for c in listing.get_row(str(checkout))))
        assert app.store.rows[f"gc:{checkout}"].reason == "live"
        row = " ".join(cell.plain for cell in listing.get_row(str(checkout)))
        assert "removable" not in row, row
        await remove_on_checkouts(pilot, app, checkout)
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmModal)
        assert any("made-live" in n and fmt.reason("keep", "live") in n for n in notes(app)), notes(app)
        info = app.screen.infos[str(checkout)]
        # the removal itself, as the worker runs it, judged by every rule at its moment
        assert app.screen.removal(info, removals.pin([info.verdict]))[1:] == (False, 0, "live")
    assert checkout.is_dir()


WIDE = "プロジェクトの一時的なビルド成果物です"  # 20 characters, 40 cells


async def test_two_outputs_named_in_wide_characters_differ_on_screen_by_their_ends(box: Sandbox) -> None:
    """LOSS of what the row says (fixed). Two old recorded outputs named in Japanese, the same
    but for their last character (`…-1` and `…-2`): a path was fitted to its column by its
    characters, not its cells (a CJK character takes two), so the table cut both at the right,
    behind `…`, and the two rows read the same; the one space marks is then a guess. Now a path
    is fitted by cells, cut from the left: each row ends with what tells it apart."""
    from rich.cells import cell_len

    first, _mine = old_output_beside(box, f"{WIDE}-1", "mine-1", "0e5d0c6a-1111-4222-8333-944455556688")
    second, _mine = old_output_beside(box, f"{WIDE}-2", "mine-2", "0e5d0c6a-1111-4222-8333-944455556699")
    app = make_app(box)
    for size in ((120, 36), (80, 24)):
        async with app.run_test(size=size) as pilot:
            table = await outputs_rows(pilot, app)
            screen = app.screen
            assert isinstance(screen, OutputsScreen)
            column = screen.fitted.keys.index("path")
            for path, end in ((first, "-1"), (second, "-2")):
                cell = table.get_row(f"gc:{path}")[column]
                assert cell.plain.endswith(end) and cell_len(cell.plain) <= screen.fitted.rest, (size, cell.plain)
        app = make_app(box)


# --- the command palette ----------------------------------------------------------------------


async def test_the_palette_shows_a_sessions_folder_named_in_brackets_as_it_is(box: Sandbox) -> None:
    """LOSS of what the palette says (fixed). A live session works in `~/code/site [old]` (a
    folder named as people name copies): ctrl+p listed "Outputs of session 1f0e3c9a" with its
    cwd read as markup, `…/code/site ` (`[old]` taken for a style); a folder `[@click=app.quit]`
    became an action, and a name with `[/]` in its path made the palette fail. Now the cwd
    shows as it is, on its one line."""
    import json
    import subprocess

    from textual.command import CommandPalette

    from app.core.sessions import proc_start_time

    folder = box.home / "code" / "site [old]" / "[" / "] [@click=app.quit]x\x1b[2J"
    folder.mkdir(parents=True)
    child = subprocess.Popen(["sleep", "60"])
    try:
        record = {"pid": child.pid, "sessionId": "1f0e3c9a-0000-4000-8000-00000000abcd", "cwd": str(folder),
                  "status": "busy", "procStart": proc_start_time(child.pid), "startedAt": int(box.now * 1000)}
        (box.config / "sessions" / f"{child.pid}.json").write_text(json.dumps(record), encoding="utf-8")
        app = make_app(box)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            for typed in ("", "1f0e3c9a"):  # what the palette lists at once, and what it finds
                await pilot.press("ctrl+p")
                await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
                await pilot.press(*typed)
                await wait_for(pilot, lambda: listed(app))
                assert listed(app) == [f"Outputs of session 1f0e3c9a\nlive, {visible(str(folder))}"], listed(app)
                await pilot.press("escape")
                await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette))
            assert app.is_running
    finally:
        child.kill()
        child.wait()


def listed(app: Any) -> list[str]:
    """The palette's entries of the session 1f0e3c9a, as drawn (their text)."""
    from textual.widgets import OptionList

    options = app.screen.query_one(OptionList)
    prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    return [prompt for prompt in prompts if "1f0e3c9a" in prompt]


# --- the ledger's pane ------------------------------------------------------------------------


async def test_the_ledger_pane_shows_an_edited_files_control_characters_as_symbols(box: Sandbox) -> None:
    """LOSS of what the pane says (fixed). Claude wrote `notes<ESC>[2J<LF>plan.md` (a name pasted
    from a terminal) and a subagent of a type named with an escape edited it: the table showed
    `␛` and `␊`, but the pane below gave the name, and the agent, as they are: the escape
    reached the terminal and the newline broke the name over two lines. Now the pane draws
    them as the table does."""
    from app.widgets.detail import DetailPane
    from tests.support import run_hook

    odd = box.project / "notes\x1b[2J\nplan.md"
    odd.write_text("the plan\n", encoding="utf-8")
    agent = "reviewer\x1b]0;owned\x07"
    payload = {"session_id": LIVE_WAITING, "cwd": str(box.project), "hook_event_name": "PostToolUse",
               "transcript_path": str(box.config / "projects" / "t.jsonl"), "tool_name": "Edit",
               "tool_input": {"file_path": str(odd), "old_string": "a", "new_string": "b"},
               "tool_response": {"filePath": str(odd)}, "agent_type": agent, "agent_id": "a9"}
    assert run_hook(payload, cwd=box.project).returncode == 0
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "ledger")
        table = app.screen.query_one("#ledger", Table)
        await wait_for(pilot, lambda: any("plan.md" in k for k in table.keys_in_order()))
        key = next(k for k in table.keys_in_order() if "plan.md" in k)
        assert table.move_to(key)
        await pilot.pause(0.2)
        pane = str(app.screen.query_one(DetailPane).render())
    first, second = pane.split("\n")[:2]
    assert first.endswith("notes␛[2J␊plan.md"), pane
    assert "reviewer␛]0;owned␇" in second, pane
    assert not set(pane) & {"\x1b", "\x07"}, repr(pane)


async def test_the_sessions_panel_shows_a_worktree_one_rule_keeps_as_kept(box: Sandbox) -> None:
    """The stale session's panel lists its outputs as the sweeps judged them: the ten-day
    worktree (its GC row) said `will remove (age)`, though the worktree rule keeps it; now it
    says `keep: young`, as on Outputs."""
    from app.sandbox import STALE

    checkout = young_worktree_the_gc_recorded(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "sessions")
        await settle(pilot, app)
        sessions = app.screen.query_one("#sessions", Table)
        stale = next(s.file for s in app.store.sessions if s.session_id == STALE)
        await wait_for(pilot, lambda: sessions.move_to(stale))
        owned = app.screen.query_one("#owned", Table)
        await wait_for(pilot, lambda: f"gc:{checkout}" in owned.keys_in_order())
        row = " ".join(cell.plain for cell in owned.get_row(f"gc:{checkout}"))
        assert "keep: young" in row and "will remove" not in row, row


async def test_the_checkouts_pane_shows_a_declared_scratch_name_as_it_is(box: Sandbox) -> None:
    """The project's `.claude/claudetto.json` names a scratch folder whose name holds an escape
    (pasted from a terminal): the release plan in the Checkouts pane drew the name as it is, the
    escape reaching the terminal. Now it draws it as every other name, one symbol a control."""
    import json

    from app.widgets.detail import DetailPane

    odd = "out\x1b[2J"
    (box.project / ".claude" / "claudetto.json").write_text(json.dumps({"scratch": ["node_modules", odd]}))
    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    (checkout / odd).mkdir()
    (checkout / odd / "x.bin").write_bytes(b"x" * 5000)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        table = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: str(checkout) in table.keys_in_order())
        assert table.move_to(str(checkout))
        pane = app.screen.query_one(DetailPane)
        await wait_for(pilot, lambda: "release would delete" in str(pane.render()))
        shown = str(pane.render())
    assert "out␛[2J" in shown and "\x1b" not in shown, repr(shown)


def test_the_help_screen_shows_a_folder_named_with_an_escape_as_it_is(monkeypatch: Any, tmp_path: Path) -> None:
    """A state folder named with an escape (CLAUDETTO_HOME set from a pasted path): the help
    screen's list of where claudetto looks drew it as it is, the escape reaching the terminal."""
    from app.screens.help import HelpScreen

    odd = tmp_path / "state\x1b]0;x\x07"
    monkeypatch.setenv("CLAUDETTO_HOME", str(odd))
    rows = [str(cell) for column in HelpScreen.places_table(HelpScreen.__new__(HelpScreen)).columns
            for cell in column._cells]
    assert any("state␛]0;x␇" in cell for cell in rows), rows
    assert not any("\x1b" in cell or "\x07" in cell for cell in rows), rows
