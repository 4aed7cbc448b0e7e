"""Red team, round four, on the dashboard: what it shows of a name is the name on disk. A
folder may be called anything but `/` and NUL: `[bold]`, `[@click=app.quit]`, a newline, an
escape sequence. Shown as markup such a name hides its brackets or becomes a clickable
action; a newline hides the rest of its row (or, in a confirmation, draws a line that looks
like another path going); an escape byte reaches the terminal. Real sandbox, real folders,
the pilot."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

from rich.text import Text

from app.core import paths
from app.sandbox import Sandbox
from app.screens.checkouts import CheckoutsScreen
from app.screens.confirm import ConfirmModal
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.support import set_mtime
from tests.tui.conftest import answer, goto, settle, wait_for

SIZE = (120, 36)
# a folder name a user (or a tool) can make: markup, an action, an escape, a second line
ODD = "[@click=app.quit]notes[bold] \x1b[2J\nsecond"
SHOWN = "[@click=app.quit]notes[bold] ␛[2J␊second"


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2)


def odd_folder(box: Sandbox) -> Path:
    folder = box.project / ".claude" / "worktrees" / ODD
    (folder / "sub").mkdir(parents=True)
    return folder


def cell_text(table: Table, key: str) -> str:
    """The row as drawn: every cell's characters (a str cell would be read as markup)."""
    cells = table.get_row(key)
    assert all(isinstance(cell, Text) for cell in cells), cells
    return " ".join(cell.plain for cell in cells)


async def test_an_odd_name_is_shown_as_it_is_in_the_outputs_and_its_notification(box: Sandbox) -> None:
    folder = odd_folder(box)
    app = make_app(box)
    async with app.run_test(size=(200, 36)) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key = next(k for k, v in app.store.rows.items() if v.path == str(folder))
        assert isinstance(app.screen, OutputsScreen)
        table = app.screen.query_one("#outputs", Table)
        drawn = cell_text(table, key)
        assert SHOWN in drawn
        assert "\x1b" not in drawn and "\n" not in drawn
        assert table.move_to(key)
        await pilot.press("space")  # not a worktree: kept, and the notification names it
        await pilot.pause()
        said = list(app._notifications)[-1]  # noqa: SLF001 - what the user saw
        assert not said.markup
        assert SHOWN in said.message and "\x1b" not in said.message
        assert app.is_running  # a click on the name would not have quit


async def test_an_odd_name_is_shown_as_it_is_in_the_checkouts_detail_and_the_removal_question(
        box: Sandbox) -> None:
    """The checkout's name in its row, in the pane below and in the question of `d`: the
    path asked about is the one that goes, on one line."""
    folder = odd_folder(box)
    app = make_app(box)
    async with app.run_test(size=(200, 40)) as pilot:
        await goto(pilot, "checkouts")
        screen = app.screen
        assert isinstance(screen, CheckoutsScreen)
        await wait_for(pilot, lambda: str(folder) in screen.infos)
        table = screen.query_one("#checkouts", Table)
        assert SHOWN in cell_text(table, str(folder))
        assert table.move_to(str(folder))
        await pilot.pause()
        pane = str(screen.detail_pane.render())
        assert SHOWN in pane and "\x1b" not in pane


async def test_a_marked_folder_with_a_newline_is_one_line_of_the_question_and_of_the_work_line(
        box: Sandbox) -> None:
    """A removable probe folder named `fswatch-probe-Zz` + newline + `  1.0 GiB  temp  notes`:
    the question must not draw a second line that reads as another folder going."""
    probe = Path(paths.claude_tmp_dir()) / "fswatch-probe-Zz\n  1.0 GiB  temp  notes"
    probe.mkdir()
    set_mtime(probe, 3 * 3600)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key = next(k for k, v in app.store.rows.items() if v.path == str(probe))
        assert app.store.rows[key].action == "remove"
        assert isinstance(app.screen, OutputsScreen)
        assert app.screen.query_one("#outputs", Table).move_to(key)
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = str(app.screen.query_one("#body").render())
        assert "fswatch-probe-Zz␊  1.0 GiB  temp  notes" in body
        assert not any(line.startswith("  1.0 GiB") for line in body.splitlines())
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not os.path.lexists(probe))
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in app.screen.query_one(WorkLine).text)
        assert "\n" not in app.screen.query_one(WorkLine).text


async def mark_and_ask(pilot, app: ClaudettoApp, path: Path) -> None:
    """Mark the row of `path` and open the question of `d`."""
    await goto(pilot, "outputs")
    await settle(pilot, app)
    key = next(k for k, v in app.store.rows.items() if v.path == str(path))
    assert app.store.rows[key].action == "remove"
    assert isinstance(app.screen, OutputsScreen)
    assert app.screen.query_one("#outputs", Table).move_to(key)
    await pilot.press("space", "d")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))


async def test_a_folder_moved_into_a_marked_name_while_asked_is_not_removed(box: Sandbox, tmp_path: Path) -> None:
    """The question names an old probe folder. Before the yes, the user renames it away and
    moves an old folder of their own into that name (`mv` keeps its age): by name and age
    the probe rule would take it, but the yes was to the folder the question named."""
    probe = Path(paths.claude_tmp_dir()) / "fswatch-probe-Ab3k9Q"
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work\n")
    set_mtime(precious, 3 * 3600)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await mark_and_ask(pilot, app, probe)
        probe.rename(probe.with_name("fswatch-probe-Ab3k9Q.old"))
        precious.rename(probe)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in app.screen.query_one(WorkLine).text)
        assert "replaced" in app.screen.query_one(WorkLine).text
    assert (probe / "thesis.tex").read_text() == "years of work\n"
    assert probe.with_name("fswatch-probe-Ab3k9Q.old").is_dir()  # never asked about: left


async def test_the_sweep_removes_no_folder_moved_into_a_listed_name(box: Sandbox, tmp_path: Path) -> None:
    """The same through `s`: the dry run listed the probe folder; what bears its name by the
    yes is another folder, and it stays."""
    probe = Path(paths.claude_tmp_dir()) / "fswatch-probe-Ab3k9Q"
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work\n")
    set_mtime(precious, 3 * 3600)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "fswatch-probe-Ab3k9Q" in str(app.screen.query_one("#body").render()).split("Kept")[0]
        probe.rename(probe.with_name("fswatch-probe-Ab3k9Q.old"))
        precious.rename(probe)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in app.screen.query_one(WorkLine).text)
    assert (probe / "thesis.tex").read_text() == "years of work\n"


async def test_a_supersede_on_a_memory_file_changed_under_the_viewer_asks_nothing_until_shown_again(
        box: Sandbox) -> None:
    """The viewer shows `The shop runs on Flask 2.2.5.` as line 6 of stack.md, with the
    evidence. Claude then adds a line at the top: line 6 is now the line above it, a fact
    that holds. `u` must not offer to strike that one under the evidence of the other; once
    shown again it strikes the line the finding names."""
    from app.core.paths import project_slug
    from app.screens.memory import MemoryScreen
    from app.screens.supersede import SupersedeModal

    stack = box.config / "projects" / project_slug(box.project) / "memory" / "stack.md"
    before = stack.read_text()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        findings = screen.query_one("#findings", Table)
        await wait_for(pilot, lambda: findings.row_count >= 5)
        pin = next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin")
        assert findings.move_to(pin)
        viewer = screen.query_one("#memory-file")
        await wait_for(pilot, lambda: "▶ The shop runs on Flask 2.2.5." in str(viewer.render()))
        stack.write_text("# Updated by Claude\n" + before)
        await pilot.press("u")
        await pilot.pause()
        assert not isinstance(app.screen, SupersedeModal)
        assert "changed since it was shown" in list(app._notifications)[-1].message  # noqa: SLF001
        await wait_for(pilot, lambda: any(f.kind == "stale_version_pin" and f.line == 7
                                          for f in screen.findings.values()))
        pin = next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin")
        assert findings.move_to(pin)
        await wait_for(pilot, lambda: "▶ The shop runs on Flask 2.2.5." in str(viewer.render()))
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        assert str(app.screen.query_one("#struck").render()) == "The shop runs on Flask 2.2.5."
        await answer(pilot, "escape")
    assert stack.read_text() == "# Updated by Claude\n" + before


def tree_state(top: Path) -> dict[str, tuple[int, int]]:
    """Every entry under `top` (not followed): its size (0 for a folder) and mtime."""
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            found[os.path.join(folder, name)] = (0 if name in dirs else st.st_size, st.st_mtime_ns)
    return found


async def say_yes_to_anything(pilot, app: ClaudettoApp, screen: object) -> None:
    """Whatever a key opened, answered as a careless user would: yes, a correction, enter."""
    from app.screens.supersede import SupersedeModal

    for _ in range(5):
        if app.screen is screen:
            return
        if isinstance(app.screen, ConfirmModal):
            await answer(pilot, "y")
        elif isinstance(app.screen, SupersedeModal):
            await pilot.press(*"true now")
            await answer(pilot, "enter")
        else:
            await pilot.press("escape")
        await pilot.pause(0.2)


async def test_read_only_refuses_every_key_and_palette_command_of_every_screen(box: Sandbox) -> None:
    """`--read-only`: every command the palette (ctrl+p) lists on every screen, run on a
    removable row (a finding with a line), each question it might open answered yes. The
    state, the temp folders, the projects and their memory are as they were."""
    from app.commands import live_bindings

    watched = [box.state, box.user_tmp, box.project, box.second_project, box.config / "projects",
               Path(paths.claude_tmp_dir())]
    before = {str(top): tree_state(top) for top in watched}
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2, read_only=True)
    ran: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        for mode, row in (("outputs", "worktree:"), ("checkouts", ""), ("memory", ""), ("overview", ""),
                          ("sessions", ""), ("ledger", "")):
            await goto(pilot, mode)
            screen: Any = app.screen
            table = next(iter(screen.query(Table)))
            await wait_for(pilot, partial(lambda t: t.row_count > 0, table))
            removable = [k for k, v in app.store.rows.items() if v.action == "remove" and k.startswith(row)]
            if mode == "outputs":  # marked as a mark carried over would be: `d` must still refuse
                assert table.move_to(removable[0])
                app.store.marked.add(removable[0])
            elif mode == "checkouts":
                await wait_for(pilot, partial(lambda s: any(i.removable for i in s.infos.values()), screen))
                assert table.move_to(next(p for p, i in screen.infos.items() if i.removable))
            elif mode == "memory":
                assert table.move_to(next(k for k, f in screen.findings.items()
                                          if f.kind == "stale_version_pin"))
            for node, binding in list(live_bindings(screen)):
                if binding.id == "quit" or binding.action.startswith("switch_mode"):
                    continue
                ran.append(f"{mode}:{binding.id}")
                await app.run_action(binding.action, node)
                await pilot.pause(0.2)
                await say_yes_to_anything(pilot, app, screen)
        await pilot.pause(0.5)
    assert {"outputs:mark", "outputs:remove", "outputs:sweep", "checkouts:release", "checkouts:checkout-remove",
            "memory:supersede", "memory:fix-index"} <= set(ran)
    after = {str(top): tree_state(top) for top in watched}
    for top in before:
        changed = sorted(set(before[top].items()) ^ set(after[top].items()))
        changed = [entry for entry in changed if "/tasks/" not in entry[0]]  # the live sessions' own output grows
        assert not changed, changed[:10]


async def test_quitting_while_a_removal_runs_leaves_each_item_whole_or_gone_and_journaled(box: Sandbox) -> None:
    """Every removable row marked, yes, and `q` at once: the removal is cancelled between
    items, never inside one. Each marked path is afterwards either as it was, or gone with
    its line in the journal."""
    import asyncio
    import json

    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        marked = {k: v.path for k, v in app.store.rows.items() if v.action == "remove"}
        assert len(marked) >= 5
        before = {path: tree_state(Path(path)) if os.path.isdir(path) else {} for path in marked.values()}
        app.store.marked.update(marked)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "y", "q")
    await asyncio.get_running_loop().shutdown_default_executor()  # the removal's thread has ended
    journal = Path(box.env["CLAUDETTO_HOME"]) / "journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()] if journal.exists() else []
    removed = {line["path"] for line in lines if line.get("result") == "removed"}
    for path, tree in before.items():
        if os.path.lexists(path):
            assert (tree_state(Path(path)) if os.path.isdir(path) else {}) == tree, f"{path} half removed"
        else:
            assert path in removed, f"{path} went unjournaled"


async def test_the_question_lists_every_marked_path_and_says_which_the_filter_hides(box: Sandbox) -> None:
    """Twenty-odd rows marked, then a filter shows one of them: `d` asks about all of them.
    A yes is to each path, so each is in the question (none behind "… and 4 more"), and the
    question says first that the filter hides some."""
    claude_tmp = Path(paths.claude_tmp_dir())
    extra = [claude_tmp / f"fswatch-probe-Old{n:03d}" for n in range(12)]
    for probe in extra:
        probe.mkdir()
        set_mtime(probe, 3 * 3600)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        marked = {k: v.path for k, v in app.store.rows.items() if v.action == "remove"}
        assert len(marked) > 16
        app.store.marked.update(marked)
        assert isinstance(app.screen, OutputsScreen)
        app.screen.filter_text("tmp.BuildCache")
        await pilot.pause()
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = app.screen.body  # type: ignore[attr-defined]
        going = body.split("Kept")[0]
        assert body.startswith(f"{len(marked) - 1} of these are marked rows the filter hides now.")
        assert "more" not in going
        assert len(going.split("\n\n")[0].splitlines()[2:]) == len(marked)  # one line each
        for probe in extra:
            assert probe.name in going
        await answer(pilot, "n")


async def test_keys_typed_into_the_filter_are_text_not_removals(box: Sandbox) -> None:
    """Rows marked, the filter open: typing `d`, `s`, space and `y` (a path's letters) asks
    nothing and removes nothing; they are the filter's text."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        app.store.marked.update(k for k, v in app.store.rows.items() if v.path == str(build_cache))
        await pilot.press("slash", "d", "s", "space", "y", "enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, OutputsScreen)
        assert app.screen.filter == "ds y"
    assert build_cache.is_dir()
