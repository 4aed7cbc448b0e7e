"""The dashboard attacked a seventeenth time: hung mounts, doubled keys, names and sizes.

Real sandbox, real git, real folders, real processes, real FUSE mounts, the pilot."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.sandbox import Sandbox
from app.screens.disk import DiskScreen
from app.widgets.table import Table
from tests.support import hung_fuse_mounts
from tests.tui.conftest import make_app, notes, old_output_beside, outputs_rows, wait_for

SIZE = (120, 36)


@contextmanager
def output_with_a_dead_mount(box: Sandbox, name: str) -> Iterator[Path]:
    """A month-old recorded output folder holding a file and `remote`, an `sshfs` whose host
    went away (every look at the mount point waits); the mount is cut when the block ends."""
    folder, _mine = old_output_beside(box, name, f"{name}-mine", "0e5d0c6a-1111-4222-8333-9444555566aa")
    with hung_fuse_mounts() as mount:
        mount(folder / "remote")
        yield folder


def disk_title(app: Any) -> str:
    return str(app.screen.query_one("#disk-title").render())


async def test_browsing_an_output_with_a_dead_mount_inside_lists_it_and_never_waits(box: Sandbox) -> None:
    """HANG. `b` on an output folder holding a dead `sshfs` mount: the disk browser's worker
    looked at the mount point (its modification time) and waited for ever: the title said
    `measuring…` for good, and the app could not end (its worker never returned). Now the
    mount point is listed (a mount, never looked at) beside the folder's other entries."""
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        with output_with_a_dead_mount(box, "tmp.RemoteWork") as folder:
            app.store.refresh()
            table = await outputs_rows(pilot, app)
            await wait_for(pilot, lambda: f"gc:{folder}" in table.keys_in_order())
            assert table.move_to(f"gc:{folder}")
            await pilot.pause()
            await pilot.press("b")
            await wait_for(pilot, lambda: isinstance(app.screen, DiskScreen))
            try:
                await wait_for(pilot, lambda: "measuring" not in disk_title(app), timeout=10)
            finally:
                shown = disk_title(app)
            listing = app.screen.query_one("#disk", Table)
            assert sorted(os.path.basename(p) for p in listing.keys_in_order()) == ["blob.bin", "remote"]
            assert "mount point" in " ".join(cell.plain for cell in listing.get_row(str(folder / "remote")))
            assert listing.move_to(str(folder / "remote"))
            await pilot.pause()
            await pilot.press("right")  # going in would look at it: said, not waited on
            await wait_for(pilot, lambda: any("mount point" in n for n in notes(app)), timeout=5)
            assert app.screen.folder == str(folder)
        assert "2 entries" in shown, shown


async def test_the_ledger_screen_lists_a_file_on_a_dead_sshfs_and_keeps_reading(box: Sandbox) -> None:
    """HANG. Claude edited `notes.md` on an `sshfs` share whose host went away. The Ledger
    screen's read looked at the file (the core's judgement, then its size and time now) and
    never returned: `reading…` for good, a new stuck worker every 5 s until none was left for
    any screen, and the app could not end. Now the file is listed, not looked at, and the
    other files are read as before."""
    from app.core import ledger
    from app.widgets.detail import DetailPane

    remote, here = box.project / "remote", box.project / "here.md"
    remote.mkdir()
    (remote / "notes.md").write_text("remote notes\n")
    here.write_text("local\n")
    for path in (remote / "notes.md", here):
        assert ledger.record_file(str(path), "main", "0e5d0c6a-1111-4222-8333-9444555566bb")
    here.write_text("changed by the user\n")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        with hung_fuse_mounts() as mount:
            mount(remote)
            await pilot.press("5")
            await wait_for(pilot, lambda: app.current_mode == "ledger")
            table = app.screen.query_one("#ledger", Table)
            try:
                await wait_for(pilot, lambda: str(remote / "notes.md") in table.keys_in_order(), timeout=10)
            finally:
                listed = table.keys_in_order()
            assert table.move_to(str(remote / "notes.md"))
            await pilot.pause(0.2)
            pane = str(app.screen.query_one(DetailPane).render())
        assert str(here) in listed, listed
        assert "does not answer" in pane and "unchanged" not in pane, pane


async def test_the_marked_count_and_the_reclaimable_total_stay_in_the_header_at_40_columns(box: Sandbox) -> None:
    """LOSS of what is about to go. The header keeps the marked count and total, and what a
    sweep would free, at any width (the other parts give way first): at 40 columns both went
    and the screens' tabs stayed, so two rows marked on a narrow terminal (a split pane)
    were nowhere said. Now the tabs give way before them (the current screen's name first)."""
    from app import format as fmt
    from app.widgets.totals import TotalsBar

    app = make_app(box)
    async with app.run_test(size=(40, 12)) as pilot:
        await outputs_rows(pilot, app)
        await pilot.press("space", "space")
        await pilot.pause(0.2)
        line = str(app.screen.query_one(TotalsBar).render())
        assert len(line) <= 40 - 2, line
        assert f"marked 2 · {fmt.size(app.store.marked_total())}" in line, line
        assert f"free {fmt.size(app.store.total('remove'))}" in line, line
    async with make_app(box).run_test(size=(60, 12)) as pilot:
        await outputs_rows(pilot, pilot.app)
        await pilot.press("space")
        await pilot.pause(0.2)
        line = str(pilot.app.screen.query_one(TotalsBar).render())
        assert "marked 1 · " in line and "free " in line and "3 Outputs" in line, line


async def test_the_sweeps_question_gives_the_reason_of_every_kept_path(box: Sandbox) -> None:
    """LOSS of why. The sweep's question listed 15 kept paths and then "… and 3 more": three
    outputs the sweep keeps were said kept with no path and no reason, and a path two rules
    keep was listed twice (and counted twice). Now each kept path is listed once, with the
    reason of the rule that keeps it (the list scrolls, as the list of what goes does)."""
    from app import format as fmt
    from app.data import removals
    from app.screens.confirm import ConfirmModal

    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await outputs_rows(pilot, app)
        kept = removals.kept_paths(app.store.rows.values())
        assert len(kept) > 15, len(kept)  # more than the question used to list
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = app.screen.body
    lines = body.split("\n")
    head = next(i for i, line in enumerate(lines) if line.startswith("Kept ("))
    assert lines[head] == f"Kept ({len(kept)}), and why:", lines[head]
    listed = lines[head + 1:head + 1 + len(kept)]
    assert not any("… and" in line for line in lines), body
    for verdict in kept.values():
        line = next((one for one in listed if one.rstrip().endswith(
            fmt.compact_path(verdict.path, 104 - 45, verdict.project))), None)
        assert line is not None and fmt.reason(verdict.action, verdict.reason) in line, (verdict.path, body)


async def test_a_session_file_with_a_time_out_of_range_is_shown_and_the_dashboard_runs_on(box: Sandbox) -> None:
    """CRASH. A session file whose `startedAt` (milliseconds) lies before year 1, or whose
    `updatedAt` lies past year 9999 (a file half written, or written by another tool): the
    Sessions screen's age cell raised OverflowError and the dashboard died with a traceback.
    Now such a time reads as the farthest age the screen can say, and every screen still runs."""
    import json

    from app import format as fmt

    odd = box.config / "sessions" / "99999999.json"
    odd.write_text(json.dumps({"pid": 99999999, "sessionId": "0e5d0c6a-1111-4222-8333-9444555566cc",
                               "cwd": str(box.project), "startedAt": -10**14, "updatedAt": 10**17}), encoding="utf-8")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        table = app.screen.query_one("#sessions", Table)
        await wait_for(pilot, lambda: str(odd) in table.keys_in_order())
        row = " ".join(cell.plain for cell in table.get_row(str(odd)))
        await pilot.press("3")
        await wait_for(pilot, lambda: app.current_mode == "outputs")
        assert app.is_running
    assert "years ago" in row, row
    assert fmt.age(-1e11, box.now) and fmt.age(1e15, box.now) and fmt.ms_age(-10**20, box.now)


def unblock_readers(fifo: Path, seconds: float, said: list[str]) -> None:
    """For `seconds`: whenever a reader waits on `fifo`, open it for writing and close it (the
    reader gets an empty file); each time, note it in `said`. A test that a screen never waits
    on one must not itself wait for ever when it does."""
    import errno
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            said.append("a reader waited")
        except OSError as exc:
            if exc.errno not in (errno.ENXIO, errno.ENOENT):
                raise
        time.sleep(0.05)


async def test_a_memory_file_replaced_by_a_fifo_never_freezes_the_memory_screen(box: Sandbox) -> None:
    """FREEZE. A memory file with a finding was replaced by a named pipe after the sweep (`mkfifo`
    in its name: a tool's log pipe, a prank): the cursor on its finding opened it to show its
    lines, on the screen's own thread, and waited for a writer for ever: no key, not even `q`,
    was answered again. Now a file that is no regular file shows no lines (the sweep, on its
    next run, drops its findings), and every key is answered."""
    import threading
    import time

    from app.screens.memory import MemoryScreen

    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await wait_for(pilot, lambda: isinstance(app.screen, MemoryScreen) and len(app.screen.findings) > 1)
        screen = app.screen
        table = screen.query_one("#findings", Table)
        first = screen.findings[table.keys_in_order()[0]].file
        other = next(k for k in table.keys_in_order() if screen.findings[k].file != first)
        fifo = Path(screen.findings[other].file)
        fifo.unlink()
        os.mkfifo(fifo)
        said: list[str] = []
        watchdog = threading.Thread(target=unblock_readers, args=(fifo, 8.0, said), daemon=True)
        watchdog.start()
        began = time.monotonic()
        assert table.move_to(other)
        await pilot.pause(0.2)
        await pilot.press("down", "up")
        await pilot.pause(0.2)
        took = time.monotonic() - began
        viewer = str(screen.query_one("#memory-file").render())
        watchdog.join()
    assert not said and took < 3, (said, took)
    assert fifo.name in viewer, viewer


async def test_the_removal_question_shows_its_answers_on_a_40x10_terminal(box: Sandbox) -> None:
    """HIDDEN ANSWERS. On a 40x10 terminal (a split pane) the removal question drew its title
    and list, but its buttons fell below the dialog's last row: no `Remove (y)`, no `No (n)`,
    nothing said how to answer. Now the buttons go compact (one row each) when the terminal is
    short, and both are inside the dialog, on screen."""
    from textual.containers import Vertical
    from textual.widgets import Button

    from app.screens.confirm import ConfirmModal

    app = make_app(box)
    async with app.run_test(size=(40, 10)) as pilot:
        await outputs_rows(pilot, app)
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.pause(0.3)
        dialog = app.screen.query_one(Vertical).region
        for name in ("#yes", "#no"):
            button = app.screen.query_one(name, Button).region
            assert button.height >= 1 and dialog.y <= button.y and button.bottom <= dialog.bottom - 1, (
                name, button, dialog)
        await pilot.press("n")


async def test_the_supersede_dialog_shows_its_box_and_answers_on_a_40x10_terminal(box: Sandbox) -> None:
    """HIDDEN BOX. On a 40x10 terminal the supersede dialog drew its title, the line and the
    why, and its correction box and buttons fell below the dialog's last row: a correction was
    typed blind, and enter wrote what nobody saw. Now, on a short terminal, the why (the
    finding the screen behind shows) gives way, the box and the buttons take one row each, and
    the box, the line and both buttons are on screen."""
    from textual.containers import Vertical
    from textual.widgets import Button, Input

    from app.screens.memory import MemoryScreen
    from app.screens.supersede import SupersedeModal

    app = make_app(box)
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.press("6")
        await wait_for(pilot, lambda: isinstance(app.screen, MemoryScreen) and app.screen.findings)
        await pilot.pause(0.3)
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        await pilot.pause(0.3)
        dialog = app.screen.query_one(Vertical).region
        shown = [app.screen.query_one(name).region for name in ("#struck",)]
        shown += [app.screen.query_one("#correction", Input).region]
        shown += [app.screen.query_one(name, Button).region for name in ("#write", "#cancel")]
        for region in shown:
            assert region.height >= 1 and dialog.y <= region.y and region.bottom <= dialog.bottom - 1, (region, dialog)
        await pilot.press("escape")


async def test_the_header_stays_on_the_first_row_of_every_screen_at_40x10(box: Sandbox) -> None:
    """LOSS of what is about to go. At 40x10 the Sessions, Ledger and Checkouts screens scrolled
    under their header line to show the table's cursor: the marked count and total, and what a
    sweep frees, were nowhere on screen. Now the header is docked on the first row of every
    screen, at any height."""
    from app.widgets.totals import TotalsBar

    app = make_app(box)
    async with app.run_test(size=(40, 10)) as pilot:
        await outputs_rows(pilot, app)
        await pilot.press("space")
        for key, mode in (("1", "overview"), ("2", "sessions"), ("4", "checkouts"), ("5", "ledger"), ("6", "memory"),
                          ("3", "outputs")):
            key_mode = [mode]
            await pilot.press(key)
            await wait_for(pilot, lambda: app.current_mode == key_mode[0])  # noqa: B023 - awaited here
            await pilot.pause(1.0)
            bar = app.screen.query_one(TotalsBar)
            visible_region = bar.region.intersection(app.screen.region)
            assert visible_region.height == 1 and visible_region.y == 0, (mode, bar.region, app.screen.scroll_offset)
            assert "marked 1 · " in str(bar.render()), (mode, str(bar.render()))


async def test_a_release_whose_project_went_away_says_so_in_words(box: Sandbox) -> None:
    """WRONG MESSAGE. The project's drive was unmounted (here: the project moved away) after the
    Checkouts screen listed its checkout: `r` said `bold-oak-a3f2: away`, a status, not what
    happened. Now it says, as `claudetto release` does, that the checkout and its project are
    not there and that its record stays for when they are back."""
    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_mode == "checkouts")
        table = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: str(checkout) in table.keys_in_order())
        assert table.move_to(str(checkout))
        await pilot.pause(0.2)
        os.rename(box.project, box.project.with_name("webshop-unmounted"))
        try:
            await pilot.press("r")
            await wait_for(pilot, lambda: any("bold-oak-a3f2" in n for n in notes(app)))
        finally:
            os.rename(box.project.with_name("webshop-unmounted"), box.project)
        said = next(n for n in notes(app) if "bold-oak-a3f2" in n)
    assert said != "bold-oak-a3f2: away" and "not there" in said and "record stays" in said, said


async def test_a_line_struck_while_the_index_fix_is_asked_is_said_struck(box: Sandbox, monkeypatch: Any) -> None:
    """LOST RECORD. `u` on a finding, a correction, enter: the strike ran in a worker. `i` on
    the unlisted topic before it ended started the index line's dry run in the same exclusive
    group, which cancelled the strike's worker: the line was struck on disk, but its result
    was dropped: no `Struck line N` note, no sweep after it, the struck finding still listed.
    Now each write's result is shown, whatever starts after it."""
    import threading

    from app.core import memory
    from app.screens.confirm import ConfirmModal
    from app.screens.memory import MemoryScreen
    from app.screens.supersede import SupersedeModal
    from tests.tui.conftest import answer

    real, gate, waiting = memory.supersede, threading.Event(), threading.Event()

    def held(*args: Any, **kwargs: Any) -> Any:
        waiting.set()
        gate.wait(20)
        return real(*args, **kwargs)

    monkeypatch.setattr(memory, "supersede", held)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await wait_for(pilot, lambda: isinstance(app.screen, MemoryScreen) and len(app.screen.findings) >= 5)
        screen = app.screen
        table = screen.query_one("#findings", Table)
        pin = next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin")
        topic = next(k for k, f in screen.findings.items() if f.kind == "index_unlisted_file")
        assert table.move_to(pin)
        await pilot.pause(0.2)
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        await pilot.press(*"pinned to 3.1 now")
        await answer(pilot, "enter")
        await wait_for(pilot, waiting.is_set)
        assert table.move_to(topic)
        await pilot.pause(0.2)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        gate.set()
        await pilot.pause(1.0)
        said = notes(app)
    assert any(n.startswith("Struck line") for n in said), said
