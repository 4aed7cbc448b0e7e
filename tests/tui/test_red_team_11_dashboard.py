"""Red team, round eleven, on the dashboard as a person uses it: what the screen counts and
asks must be what goes, once; a key held or doubled acts once; a row the person looked at is
the row a key acts on, though the list sorted itself again meanwhile; a session that ended
stops keeping its outputs on screen, not only in the CLI. Real sandbox, real git, real
processes, the pilot."""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial
from pathlib import Path
from typing import Any, cast

from app import format as fmt
from app.sandbox import Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.outputs import OutputsScreen
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.support import git, run_hook
from tests.tui.conftest import (
    BeforeRemoval,
    answer,
    answerable,
    ask_to_remove,
    goto,
    journal_lines,
    make_app,
    outputs_rows,
    remove_on_outputs,
    settle,
    wait_for,
    work_text,
)

SIZE = (120, 36)
STALE_SESSION = "9b3e7d21-6a4f-4e8b-b2c5-7d1f0e9a3c42"  # the sandbox's stale session (notes)


def burst(app: ClaudettoApp, *keys: str) -> None:
    """Keys as a terminal delivers a held or doubled key: queued together, before the app has
    acted on the first (the pilot's press waits for each; a person's fingers do not)."""
    from textual import events

    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


def worktree_the_session_made(box: Sandbox, name: str, session: str = STALE_SESSION) -> Path:
    """`git worktree add .claude/worktrees/<name>` run by the stale session through Claude's
    Bash tool, its PostToolUse piped to the hook (so the GC records it), then left a month
    old: both sweeps judge the one folder, each by its own rule."""
    command = f"git worktree add -q .claude/worktrees/{name} -b {name}"
    subprocess.run(["bash", "-c", command], cwd=box.project, check=True, capture_output=True)
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(box.project),
               "transcript_path": "/nowhere.jsonl", "tool_name": "Bash", "tool_input": {"command": command},
               "tool_response": {"stdout": "", "stderr": "", "interrupted": False, "isImage": False},
               "tool_use_id": "toolu_1"}
    assert run_hook(payload, cwd=box.project).returncode == 0
    checkout = box.project / ".claude" / "worktrees" / name
    old = box.now - 40 * 86400
    os.utime(checkout, (old, old))
    return checkout


async def test_two_rows_of_one_path_are_one_item_asked_once_and_removed_once(box: Sandbox) -> None:
    """A worktree a session made with `git worktree add` is judged by the GC (its record) and
    by the worktree rule: two rows, one folder. Both marked, the header and the question count
    one item of its size, the yes removes it (through a rule that can: the GC's last check
    alone called it in use), the line says `1 item` with nothing kept, and git forgets it."""
    checkout = worktree_the_session_made(box, "gc-made")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        keys = [k for k in table.keys_in_order() if k.endswith(f":{checkout}")]
        assert sorted(k.split(":", 1)[0] for k in keys) == ["gc", "worktree"]
        for key in keys:
            assert table.move_to(key)
            await pilot.pause()
            await pilot.press("space")
        store = app.store
        size = store.size(store.rows[keys[0]]) or 0
        assert size > 0 and store.marked_total() == size
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = cast(ConfirmModal, app.screen).body
        assert f"Remove 1 item, {fmt.size(size)}:" in body
        assert body.count("gc-made") == 1
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in work_text(app), timeout=60)
        line = work_text(app)
    assert not checkout.exists()
    assert line.startswith("freed ") and " in 1 item" in line and "kept" not in line, line
    assert [e["result"] for e in journal_lines(box) if e["path"] == str(checkout)] == ["removed"]
    assert str(checkout) not in git(box.project, "worktree", "list", "--porcelain")


async def test_a_doubled_yes_on_the_outputs_question_removes_once(box: Sandbox) -> None:
    """`d` asks about tmp.BuildCache; `y` comes three times, queued before the first is
    handled (a held key). One removal runs to its end: the folder goes, the journal has one
    line of it, the line says it went (not `cancelled`), and no error is shown."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        assert table.move_to(f"gc:{build_cache}")
        await pilot.pause()
        await pilot.press("space", "d")
        await answerable(pilot)  # read, then a held `y`
        burst(app, "y", "y", "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in work_text(app), timeout=60)
        await pilot.pause(0.3)
        line = work_text(app)
        errors = [n.message for n in app._notifications if n.severity == "error"]  # noqa: SLF001
    assert not build_cache.exists()
    assert not errors, errors
    assert "in 1 item" in line and "kept" not in line, line
    assert [e["result"] for e in journal_lines(box) if e["path"] == str(build_cache)] == ["removed"]


def row_text(table: Table, key: str) -> str:
    return " ".join(cell.plain for cell in table.get_row(key))


async def test_an_ended_sessions_outputs_are_no_longer_shown_kept_for_it(box: Sandbox) -> None:
    """tmp.LiveCache0 is kept because its session (c7a41e09) runs. The session's process ends:
    within a few polls the Sessions count says so, and so does the Outputs row (`will remove
    (age)`, as `claudetto gc --dry-run` now says), and the header's reclaimable total grows,
    without the person pressing `r`."""
    live_cache = box.user_tmp / "tmp.LiveCache0"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        key = f"gc:{live_cache}"
        assert "keep: live" in row_text(table, key)
        before = app.store.total("remove")
        session_file = next(f for f in (box.config / "sessions").glob("*.json")
                            if json.loads(f.read_text(encoding="utf-8"))["sessionId"].startswith("c7a41e09"))
        child = next(c for c in box.children if c.pid == int(session_file.stem))
        child.kill()
        child.wait()  # reaped, as Claude's own parent would: a zombie still runs by /proc
        await wait_for(pilot, lambda: "will remove (age)" in row_text(table, key), timeout=20)
        assert app.store.total("remove") > before
        assert sum(1 for s in app.store.sessions if s.live) == 1


async def test_a_list_sorted_again_under_the_cursor_leaves_it_on_the_row_the_person_read(box: Sandbox) -> None:
    """The person reads the top row (the biggest output), then a judgement they did not ask
    for comes in (a session ended, say) in which another output grew past it. The cursor stays
    on the row they read, and space marks that one, not the one that moved under the cursor."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
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
        await pilot.press("space")
        assert app.store.marked == {read}


async def test_an_empty_machine_keeps_the_header_and_the_whole_message_on_small_terminals() -> None:
    """Nothing at all (the autouse sandbox), on 80x24 and 60x20: on Overview, Sessions and
    Outputs the header line stays on the first row and the screen is not scrolled under it,
    and the "No Claude Code data found" box shows its first line (it scrolls inside itself
    when it is taller than its room); the Sessions screen does not offer an empty outputs
    panel that pushes the rest off."""
    from app.widgets.empty import EmptyState
    from app.widgets.totals import TotalsBar

    for size in ((80, 24), (60, 20)):
        app = ClaudettoApp(poll_s=0.2)
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app)
            for mode in ("overview", "sessions", "outputs"):
                await goto(pilot, mode)
                await pilot.pause(0.2)
                screen = app.screen
                empty = screen.query_one(EmptyState)
                assert empty.display, (size, mode)
                assert screen.query_one(TotalsBar).region.y == 0, (size, mode)
                assert screen.scroll_offset.y == 0, (size, mode)
                top = empty.region
                assert top.height > 4 and top.y > 0 and top.bottom <= size[1] - 1, (size, mode, top)
                assert "No Claude Code data found" in str(empty.render()), (size, mode)


async def test_a_checkout_removed_on_outputs_is_not_listed_removable_on_checkouts(box: Sandbox) -> None:
    """The person reads Checkouts (old-clean: removable), removes old-clean from Outputs, and
    comes back: the Checkouts screen lists it no more (it said `removable` for a folder gone,
    until ctrl+r)."""
    checkout = box.project / ".claude" / "worktrees" / "old-clean"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: str(checkout) in listing.keys_in_order())
        await remove_on_outputs(pilot, app, f"worktree:{checkout}")
        assert not checkout.exists()
        await goto(pilot, "checkouts")
        await wait_for(pilot, lambda: str(checkout) not in listing.keys_in_order(), timeout=20)


def test_an_age_under_a_month_reads_in_days_not_as_a_month() -> None:
    """A session folder 20 to 29 days old is `keep: young` under the default 30-day
    cleanupPeriodDays; its age column said "a month ago" (humanize rounds up), which reads as
    old enough to go. Under a month the age says its days; a month and more reads as before."""
    now = 1_800_000_000.0
    day = 86400.0
    assert [fmt.age(now - d * day, now) for d in (20, 25, 29.9)] == ["20 days ago", "25 days ago", "29 days ago"]
    assert fmt.age(now - 2.5 * day, now) == "2 days ago"
    assert fmt.age(now - 40 * day, now) == "a month ago"
    assert fmt.age(now - 1.5 * day, now) == "a day ago"


async def test_resizing_while_a_removal_runs_removes_what_was_asked_once_and_refits(box: Sandbox) -> None:
    """Two marked rows, the yes, then the terminal shrinks twice while the removal runs (a
    window dragged): both go, each once in the journal, nothing else goes, the line counts
    2 items, and the table ends fitted to the new width (session and age dropped)."""
    build_cache = box.user_tmp / "tmp.BuildCache"
    copy = box.user_tmp / "webshop-copy"
    before = BeforeRemoval.of(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_to_remove(pilot, app, f"gc:{build_cache}", f"gc:{copy}")
        await answer(pilot, "y")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.resize_terminal(60, 20)
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in work_text(app), timeout=60)
        line = work_text(app)
        screen = app.screen
        assert isinstance(screen, OutputsScreen)
        assert "session" not in screen.fitted.keys and "age" not in screen.fitted.keys
    assert " in 2 items" in line and "kept" not in line, line
    assert before.names_now() == sorted(set(before.names) - {build_cache.name, copy.name})
    went = before.removed()
    assert sorted(went) == sorted([str(build_cache), str(copy)])


async def test_the_freed_per_day_chart_shows_a_removal_made_on_outputs(box: Sandbox) -> None:
    """The Overview's chart of the journal was read once, when the screen first came: a
    removal made on Outputs afterwards was missing from today's bar when the person went back
    to the Overview. Now today's bar grows by what went."""
    from app.widgets.charts import DayBars

    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        bars = app.screen.query_one(DayBars)
        await wait_for(pilot, lambda: bool(getattr(bars, "days", None)))
        today_before = bars.days[-1][1]
        await remove_on_outputs(pilot, app, f"gc:{build_cache}")
        freed = next(e["bytes"] for e in journal_lines(box) if e["path"] == str(build_cache))
        assert freed > 0
        await goto(pilot, "overview")
        await wait_for(pilot, lambda: bars.days[-1][1] == today_before + freed, timeout=20)


async def test_every_table_tab_reaches_on_the_overview_answers_open(box: Sandbox) -> None:
    """The Overview's footer offers `tab Next panel` and `o Open`. Tab went to the
    "Reclaimable now" table too, which has no cursor: there `o` did nothing and said nothing.
    Every table tab reaches now opens its highlighted row on another screen."""
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        reached = []
        for _ in range(4):
            await pilot.press("tab")
            await pilot.pause()
            focused = app.screen.focused
            assert isinstance(focused, Table), focused
            reached.append(focused.id)
        assert set(reached) == {"biggest", "growing"}, reached
        for table_id, mode in (("biggest", "outputs"), ("growing", "sessions")):
            await goto(pilot, "overview")
            app.screen.query_one(f"#{table_id}", Table).focus()
            await pilot.pause()
            await pilot.press("o")
            await wait_for(pilot, partial(lambda mode: app.current_mode == mode, mode))


async def test_a_row_gone_above_the_cursor_leaves_it_on_the_row_the_person_read(box: Sandbox) -> None:
    """The cursor is on tmp.BuildCache; a row above it leaves the list in a judgement the
    person did not ask for (its folder removed by something else). The cursor stays on
    tmp.BuildCache (it slid onto the next row) and space marks tmp.BuildCache."""
    import shutil

    build_cache = box.user_tmp / "tmp.BuildCache"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        read = f"gc:{build_cache}"
        assert table.move_to(read)
        await pilot.pause()
        above = table.keys_in_order()[: table.cursor_row]
        gone = next(k for k in above if k.startswith("session_folder:"))
        shutil.rmtree(gone.split(":", 1)[1])
        app.store.refresh()
        await wait_for(pilot, lambda: gone not in table.keys_in_order(), timeout=20)
        await pilot.pause()
        assert table.cursor_key() == read
        await pilot.press("space")
        assert app.store.marked == {read}


async def test_the_question_is_made_again_for_a_narrower_terminal_not_wrapped(box: Sandbox) -> None:
    """`d` asks on a 120-column terminal, then the window shrinks to 60 columns with the
    question open. The list of what goes was made for 104 cells: wrapped into 48, a path's tail
    stood on a line of its own, reading as one more thing going. Now the question is made again
    for the new width: every line fits, each path on its one line with its size."""
    from textual.widgets import Static

    probe = next(box.claude_tmp.glob("fswatch-probe-Ab3k9Q"))
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        for key in (f"gc:{box.user_tmp / 'tmp.BuildCache'}", f"probe:{probe}"):
            assert table.move_to(key), key
            await pilot.pause()
            await pilot.press("space")
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        modal = app.screen
        assert isinstance(modal, ConfirmModal)
        await pilot.resize_terminal(60, 20)
        await pilot.pause(0.2)
        width = ConfirmModal.body_width(60)
        lines = modal.body.splitlines()
        items = [line for line in lines if line.startswith("  ")]  # one path each, going or kept
        assert len(items) > 2 and max(len(line) for line in items) <= width, lines
        listed = [line for line in lines if "probe-Ab3k9Q" in line or "tmp.BuildCache" in line]
        assert len(listed) == 2 and all("KiB" in line or "MiB" in line for line in listed), lines
        shown = str(modal.query_one("#body", Static).render())
        assert all(line in shown.splitlines() for line in items), shown
        await answer(pilot, "n")


async def test_a_live_sessions_worktree_judged_twice_is_one_of_its_outputs(box: Sandbox) -> None:
    """A live session made a worktree with `git worktree add` and works in it: the GC's row
    (its record) and the worktree rule's row (its cwd) both belong to it. The Sessions panel
    lists both rows but counts one output of the folder's size (it said 2, twice the size)."""
    from textual.widgets import Label

    from app.core.sessions import proc_start_time

    session = "4d1c0e55-0000-4000-8000-00000000beef"
    checkout = worktree_the_session_made(box, "live-made", session=session)
    child = subprocess.Popen(["sleep", "60"])
    try:
        record = {"pid": child.pid, "sessionId": session, "cwd": str(checkout), "status": "busy",
                  "procStart": proc_start_time(child.pid), "startedAt": int(box.now * 1000)}
        (box.config / "sessions" / f"{child.pid}.json").write_text(json.dumps(record), encoding="utf-8")
        app = make_app(box)
        async with app.run_test(size=SIZE) as pilot:
            await goto(pilot, "sessions")
            await settle(pilot, app)
            sessions = app.screen.query_one("#sessions", Table)
            await wait_for(pilot, lambda: sessions.move_to(str(box.config / "sessions" / f"{child.pid}.json")))
            owned = app.screen.query_one("#owned", Table)
            await wait_for(pilot, lambda: owned.row_count == 2)
            size = app.store.size(app.store.rows[f"worktree:{checkout}"]) or 0
            title = str(app.screen.query_one("#owned-title", Label).render())
            assert f"Outputs of {session[:8]}: 1, {fmt.size(size)}" in title, title
    finally:
        child.kill()
        child.wait()


def test_the_question_keeps_the_tables_order_when_a_path_has_two_rows() -> None:
    """Each path once, at the place of its first row: the question lists in the table's order."""
    from app.core.verdict import Verdict
    from app.data.removals import one_per_path

    a_gc, b, a_worktree = (Verdict("/w/a", "worktree", "remove", "age", "gc", "/w"),
                           Verdict("/t/b", "temp", "remove", "age", "gc", "/t"),
                           Verdict("/w/a", "worktree", "remove", "age", "worktree", "/w"))
    assert one_per_path([a_gc, b, a_worktree]) == [a_gc, b]
    assert one_per_path([b, a_worktree, a_gc]) == [b, a_worktree]


async def test_a_checkout_whose_session_ended_is_not_shown_held_by_a_running_one(box: Sandbox) -> None:
    """The person watches Checkouts: live-task is held by 5f0c2a8e (●, `keep: live`). The
    session's process ends: within a few polls the row shows it ended (○) and live-task is no
    longer kept for a live session (it said ● and `keep: live` until ctrl+r)."""
    checkout = box.project / ".claude" / "worktrees" / "live-task"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: str(checkout) in listing.keys_in_order())
        assert "●" in row_text(listing, str(checkout)) and "keep: live" in row_text(listing, str(checkout))
        session_file = next(f for f in (box.config / "sessions").glob("*.json")
                            if json.loads(f.read_text(encoding="utf-8"))["cwd"] == str(checkout))
        child = next(c for c in box.children if c.pid == int(session_file.stem))
        child.kill()
        child.wait()
        await wait_for(pilot, lambda: "○" in row_text(listing, str(checkout))
                       and "keep: live" not in row_text(listing, str(checkout)), timeout=20)


async def test_no_verdict_is_cut_in_any_table_at_120_or_80_columns(box: Sandbox) -> None:
    """Every verdict cell of the Overview's biggest items, Outputs, Checkouts and the Sessions
    panel fits its column at 120 and at 80 columns: the Overview's was 18 cells wide, and
    `keep: not_a_worktree` read `keep: not_a_workt…`."""
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for size in ((120, 36), (80, 24)):
            await pilot.resize_terminal(*size)
            for mode, table_id in (("overview", "biggest"), ("outputs", "outputs"), ("checkouts", "checkouts"),
                                   ("sessions", "owned")):
                await goto(pilot, mode)
                table = app.screen.query_one(f"#{table_id}", Table)
                await wait_for(pilot, partial(lambda table: table.row_count > 0, table))
                column = table.columns[next(k for k in table.columns if k.value == "verdict")]
                cells = [str(table.get_cell(key, "verdict")) for key in table.keys_in_order()]
                assert max(len(cell) for cell in cells) <= column.width, (size, mode, column.width, cells)


async def test_a_release_on_checkouts_is_seen_on_outputs(box: Sandbox) -> None:
    """bold-oak-a3f2 released on Checkouts (its node_modules deleted): the Outputs row of the
    checkout showed the size it had before the release until `r`; now it follows."""
    from app.widgets.detail import DetailPane

    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        key = f"worktree:{checkout}"
        before = app.store.size(app.store.rows[key]) or 0
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: listing.move_to(str(checkout)))
        await wait_for(pilot, lambda: "release would delete" in str(app.screen.query_one(DetailPane).render()))
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "y")
        await wait_for(pilot, lambda: "released" in app.screen.query_one(WorkLine).text, timeout=60)
        assert not (checkout / "node_modules").exists()
        await wait_for(pilot, lambda: key in app.store.rows and (app.store.size(app.store.rows[key]) or 0) < before,
                       timeout=20)


async def test_a_row_marked_while_a_removal_runs_stays_marked_for_the_next(box: Sandbox) -> None:
    """tmp.BuildCache is being removed; meanwhile the person marks webshop-copy for the next
    `d`. When the removal ends, BuildCache's mark goes with it, webshop-copy's stays (every
    mark was dropped, and the next `d` said "Nothing is marked")."""
    import threading

    from textual.widgets import Static

    from app.core.outputs import judge

    build_cache, copy = box.user_tmp / "tmp.BuildCache", box.user_tmp / "webshop-copy"
    holding, go_on = threading.Event(), threading.Event()

    def held_judge() -> Any:  # the removal's own judgement waits: it is running, for sure
        if holding.is_set():
            go_on.wait(30)
        return judge()

    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2, judge_outputs=held_judge)
    async with app.run_test(size=SIZE) as pilot:
        table = await outputs_rows(pilot, app)
        assert table.move_to(f"gc:{build_cache}")
        await pilot.pause()
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        holding.set()
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and bool(app.screen.working))
        outputs = cast(OutputsScreen, app.screen)
        assert table.move_to(f"gc:{copy}")
        await pilot.pause()
        await pilot.press("space")
        assert outputs.working
        holding.clear()
        go_on.set()
        await wait_for(pilot, lambda: not outputs.working and "freed" in work_text(app), timeout=60)
        assert not build_cache.exists()
        assert app.store.marked == {f"gc:{copy}"}
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = str(app.screen.query_one("#body", Static).render())
        assert "webshop-copy" in body and "tmp.BuildCache" not in body
        await answer(pilot, "n")
