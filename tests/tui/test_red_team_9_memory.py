"""Red team, round nine, on the Memory screen: what the supersede dialog writes when a user
pastes or types more than a line holds, a first index line behind an editor's BOM, Escape
right after Enter, a memory file that vanished under a finding, and 500 findings on an 80x24
terminal. Pilot runs on the sandbox's own memory rot; every file checked on disk."""

from __future__ import annotations

import time
from typing import Any

from textual import events
from textual.widgets import Input

from app.sandbox import Sandbox
from app.screens.memory import MemoryScreen
from app.screens.supersede import SupersedeModal
from app.tui import ClaudettoApp
from app.widgets.table import Table
from tests.tui.conftest import answer, goto, notes, wait_for
from tests.tui.test_memory_index import index_of
from tests.tui.test_red_team_7 import make_app, open_supersede, stack_md

SIZE = (120, 36)
PIN = "The shop runs on Flask 2.2.5."


def memory_screen(app: ClaudettoApp) -> MemoryScreen:
    screen = app.screen
    assert isinstance(screen, MemoryScreen)
    return screen


async def paste(pilot: Any, app: ClaudettoApp, text: str) -> Input:
    """Paste `text` into the open dialog's correction, as a terminal's bracketed paste."""
    field = app.screen.query_one("#correction", Input)
    field.post_message(events.Paste(text))
    await pilot.pause(0.1)
    return field


async def test_a_pasted_correction_of_several_lines_is_written_whole(box: Sandbox) -> None:
    """Textual's Input keeps the first line of a paste and drops the rest without a word:
    the correction written was not the one the user gave."""
    stack = stack_md(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await open_supersede(pilot, app)
        field = await paste(pilot, app, "The shop runs on Flask 3.0.\nSee pyproject.toml,\r\n\tsince the upgrade.")
        assert field.value == "The shop runs on Flask 3.0. See pyproject.toml, since the upgrade."
        await answer(pilot, "enter")
        await wait_for(pilot, lambda: "Correction (" in stack.read_text())
    today = time.strftime("%Y-%m-%d")
    assert f"~~{PIN}~~\nCorrection ({today}): The shop runs on Flask 3.0. See pyproject.toml, since the upgrade.\n" \
        in stack.read_text()


async def test_a_correction_too_long_for_its_line_is_said_in_the_dialog_and_kept_there(box: Sandbox) -> None:
    """10,000 characters pasted: the dialog says how long the line may be and stays open with
    the text, instead of closing on a refusal that loses what was pasted. Escape writes nothing."""
    stack = stack_md(box)
    before = stack.read_bytes()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await open_supersede(pilot, app)
        field = await paste(pilot, app, "y" * 10_000)
        await answer(pilot, "enter")
        await wait_for(pilot, lambda: any("10000 characters" in n for n in notes(app)))
        assert isinstance(app.screen, SupersedeModal) and len(field.value) == 10_000
        await answer(pilot, "escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MemoryScreen))
        await pilot.pause(0.3)
    assert stack.read_bytes() == before


async def open_index_strike(pilot: Any, app: ClaudettoApp) -> None:
    """`i` on the dangling MEMORY.md line (deploy.md is gone): the supersede dialog is open."""
    await goto(pilot, "memory")
    screen = memory_screen(app)
    await wait_for(pilot, lambda: any(f.kind == "index_missing_file" for f in screen.findings.values()))
    gone = next(k for k, f in screen.findings.items() if f.kind == "index_missing_file")
    assert screen.query_one("#findings", Table).move_to(gone)
    await wait_for(pilot, lambda: "▶" in str(screen.query_one("#memory-file").render()))
    await pilot.press("i")
    await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))


async def test_a_dangling_first_index_line_behind_a_bom_is_struck(box: Sandbox) -> None:
    """The viewer shows line 1 with the BOM an editor saved; `i` passed that text as the line
    the user saw, and the core refused it as changed, every time: the drift stayed forever."""
    index = index_of(box)
    lines = index.read_text().splitlines(keepends=True)
    [dangling] = [n for n, line in enumerate(lines) if "(deploy.md)" in line]
    lines.insert(0, lines.pop(dangling))
    index.write_bytes(b"\xef\xbb\xbf" + "".join(lines).encode())
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await open_index_strike(pilot, app)
        await answer(pilot, "enter")
        await wait_for(pilot, lambda: "~~" in index.read_text(encoding="utf-8"))
        assert not any("changed" in n for n in notes(app))
    written = index.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf- ~~[Deploy](deploy.md)")
    assert written.count(b"\xef\xbb\xbf") == 1 and written.endswith("".join(lines[1:]).encode())


async def test_an_index_correction_is_held_to_one_pointer_line(box: Sandbox) -> None:
    """MEMORY.md is recalled from its first 25 KB: the dialog takes no more than one pointer
    line's worth there, and says so while the text is still in it."""
    index = index_of(box)
    before = index.read_bytes()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await open_index_strike(pilot, app)
        await paste(pilot, app, " and more" * 30)
        await answer(pilot, "enter")
        await wait_for(pilot, lambda: any("this line takes at most" in n for n in notes(app)))
        assert isinstance(app.screen, SupersedeModal)
        await answer(pilot, "escape")
        await pilot.pause(0.3)
    assert index.read_bytes() == before


async def test_escape_right_after_enter_writes_the_correction_once(box: Sandbox) -> None:
    stack = stack_md(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await open_supersede(pilot, app)
        await pilot.press(*"Flask 3.0")
        await answer(pilot, "enter", "escape", "escape")
        await wait_for(pilot, lambda: "Correction (" in stack.read_text())
        await wait_for(pilot, lambda: not any(f.kind == "stale_version_pin"
                                              for f in memory_screen(app).findings.values()))
        assert isinstance(app.screen, MemoryScreen)
    text = stack.read_text()
    assert text.count("Correction (") == 1 and text.count(f"~~{PIN}~~") == 1


async def test_a_memory_file_that_vanished_under_its_finding_is_said_and_swept_again(box: Sandbox) -> None:
    """Claude deleted stack.md after the sweep: `u` asks nothing, says the file changed, and
    the next sweep shows what is true now (the index's line for it is drift)."""
    stack = stack_md(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        screen = memory_screen(app)
        await wait_for(pilot, lambda: any(f.kind == "stale_version_pin" for f in screen.findings.values()))
        assert screen.query_one("#findings", Table).move_to(
            next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin"))
        await wait_for(pilot, lambda: f"▶ {PIN}" in str(screen.query_one("#memory-file").render()))
        stack.unlink()
        await pilot.press("u")
        await wait_for(pilot, lambda: any("changed since it was shown" in n for n in notes(app)))
        assert not isinstance(app.screen, SupersedeModal)
        await wait_for(pilot, lambda: any(f.kind == "index_missing_file" and f.token == "stack.md"
                                          for f in screen.findings.values()), timeout=10)
        assert not any(f.file == str(stack) for f in screen.findings.values())
    assert not stack.exists()


async def test_500_findings_on_an_80x24_terminal(box: Sandbox) -> None:
    """Every finding a row, the last reachable, its line shown and superseded; the dialog's
    input and buttons on screen."""
    folder = index_of(box).parent
    many = folder / "many.md"
    many.write_text("---\nname: many\ndescription: many facts\nmetadata:\n  type: project\n---\n"
                    + "".join(f"- Step {n} is in `src/gone_step_{n}.py`.\n" for n in range(500)))
    with index_of(box).open("a") as fh:
        fh.write("- [Many](many.md) — many facts\n")
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "memory")
        screen = memory_screen(app)
        table = screen.query_one("#findings", Table)
        # 500 findings judged and drawn: seconds alone, minutes beside a loaded suite's other workers
        await wait_for(pilot, lambda: sum(f.file == str(many) for f in screen.findings.values()) == 500, timeout=240)
        assert table.row_count == len(screen.findings)
        last = next(k for k, f in screen.findings.items() if f.file == str(many) and f.line == 506)
        assert table.move_to(last)
        viewer = screen.query_one("#memory-file")
        await wait_for(pilot, lambda: " 506 ▶ - Step 499 is in `src/gone_step_499.py`." in str(viewer.render()))
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        for part in ("#correction", "#write", "#cancel"):
            region = app.screen.query_one(part).region
            assert region.height > 0 and region.bottom <= 24 and region.right <= 80, (part, region)
        await pilot.press(*"gone")
        await answer(pilot, "enter")
        await wait_for(pilot, lambda: "~~Step 499 is in `src/gone_step_499.py`.~~" in many.read_text())
    assert many.read_text().splitlines()[506].startswith("- Correction (")


async def test_the_correction_written_for_a_long_dangling_name_fits_its_index_line(box: Sandbox) -> None:
    """`i` writes the correction itself; for a long topic name that text was longer than the
    index line takes, so the fix the dialog offered was refused."""
    index = index_of(box)
    name = "notes-" + "a" * 110 + ".md"
    index.write_text(f"- [Long]({name}) — gone\n" + index.read_text())
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        screen = memory_screen(app)
        await wait_for(pilot, lambda: any(f.token == name for f in screen.findings.values()))
        assert screen.query_one("#findings", Table).move_to(next(k for k, f in screen.findings.items()
                                                                 if f.token == name))
        await wait_for(pilot, lambda: "▶" in str(screen.query_one("#memory-file").render()))
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        assert app.screen.query_one("#correction", Input).value == f"`{name}` no longer exists."
        await answer(pilot, "enter")
        await wait_for(pilot, lambda: f"~~[Long]({name}) — gone~~" in index.read_text())
    assert index.read_text().splitlines()[1].endswith(f": `{name}` no longer exists.")


async def test_long_lines_around_a_finding_keep_its_line_in_the_viewer(box: Sandbox) -> None:
    """A line of 3,000 characters above a finding wrapped to forty rows: the viewer shows
    twelve, and the highlighted line was out of sight."""
    stack = stack_md(box)
    lines = stack.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith(PIN))
    lines[at - 1] = "A note " + "long " * 600 + "\n"
    stack.write_text("".join(lines))
    app = make_app(box)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "memory")
        screen = memory_screen(app)
        await wait_for(pilot, lambda: any(f.kind == "stale_version_pin" for f in screen.findings.values()))
        assert screen.query_one("#findings", Table).move_to(
            next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin"))
        viewer = screen.query_one("#memory-file")
        await wait_for(pilot, lambda: f"▶ {PIN}" in str(viewer.render()))
        await pilot.pause(0.2)
        assert viewer.size.height <= screen.query_one("#viewer").size.height
        assert "A note long long" in str(viewer.render()) and "…" in str(viewer.render())
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
