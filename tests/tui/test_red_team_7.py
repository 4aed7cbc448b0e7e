"""Red team, round seven, on the dashboard after round six's core: a removal refuses a path
another user owns, a release refuses a checkout that became a symlink or runs elsewhere, a
supersede refuses a hard link or a file saved meanwhile. Each refusal must read as one
(never a success toast, never a row gone while its folder stays), the Overview must agree
with the CLI's dry runs, and the screens must hold at odd sizes and counts. Real sandbox,
real folders, real processes, the pilot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.sandbox import Sandbox
from app.screens.confirm import ConfirmModal, GuardedModal
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.support import run_cli
from tests.tui.conftest import answer, answerable, goto, settle, wait_for

SIZE = (120, 36)
NOBODY = 65534  # another user: the tests run as root (chown needs it), as round six's core does
ROOT = Path(__file__).resolve().parents[2]


def make_app(box: Sandbox) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2)


def last_note(app: ClaudettoApp) -> Any:
    return list(app._notifications)[-1]  # noqa: SLF001 - what the user saw last


def reclaimable(app: ClaudettoApp) -> int:
    """The Overview's "Reclaimable now", in bytes, as the screen sums it."""
    from app.data import overview

    store = app.store
    sizes = {v.path: store.size(v) for v in store.rows.values()}
    return sum(k.size for k in overview.reclaimable_by_kind(store.rows.values(), sizes))


def cli_reclaimable(box: Sandbox) -> int:
    """What `gc --dry-run --json` and `clean --dry-run --json` say would go, for the same state."""
    gc = run_cli("gc", "--dry-run", "--json", cwd=box.project)
    clean = run_cli("clean", "--dry-run", "--json", str(box.project), cwd=box.project)
    assert gc.returncode == 0 and clean.returncode == 0, gc.stderr + clean.stderr
    return int(json.loads(gc.stdout)["freed"]) + int(json.loads(clean.stdout)["cleaned"]["bytes"])


def removal_ended(app: ClaudettoApp) -> bool:
    from app.screens.outputs import OutputsScreen

    screen = app.screen
    return isinstance(screen, OutputsScreen) and not screen.working and "freed" in screen.query_one(WorkLine).text


def session_folder_row(app: ClaudettoApp) -> tuple[str, str]:
    key, verdict = next((k, v) for k, v in app.store.rows.items()
                        if v.kind == "session_folder" and v.action == "remove")
    return key, verdict.path


# --- Outputs: a removal refused --------------------------------------------------------------


async def test_a_marked_folder_another_user_took_is_kept_and_said_so_not_toasted_as_removed(box: Sandbox) -> None:
    """A session folder marked, then given to another user before the yes: the core refuses
    it (`owner`, shown as `outside_root`). The toast must not read "Removed" in green; the row
    stays (its folder is there), and the Overview, now counting it out, agrees with the CLI."""
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key, path = session_folder_row(app)
        app.store.marked.add(key)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        os.chown(path, NOBODY, NOBODY)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: removal_ended(app))
        note = last_note(app)
        assert note.severity == "warning" and note.title == "Nothing removed", (note.title, note.message)
        assert "1 kept (outside_root)" in note.message and "\n" not in note.message
        # the screen judges again after a removal: wait for that answer, not the one before it
        await wait_for(pilot, lambda: key in app.store.rows and app.store.rows[key].action == "skip")
        await settle(pilot, app)
        assert os.path.isdir(path)
        assert app.store.rows[key].action == "skip" and app.store.rows[key].reason == "outside_root"
        assert key in app.screen.query_one("#outputs", Table).keys_in_order()
        shown = reclaimable(app)
    assert shown == cli_reclaimable(box)


async def test_a_marked_record_the_gc_no_longer_owns_is_not_called_missing_while_it_is_there(box: Sandbox) -> None:
    """A GC output given to another user after it was marked: its record no longer proves it
    the call's own, so the GC passes it over and the re-judge no longer lists it. It is kept,
    and the toast must not say `missing` of a folder that is still there."""
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key, path = next((k, v.path) for k, v in app.store.rows.items()
                         if v.rule == "gc" and v.action == "remove" and os.path.isdir(v.path))
        app.store.marked.add(key)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        os.chown(path, NOBODY, NOBODY)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: removal_ended(app))
        note = last_note(app)
    assert os.path.isdir(path)
    assert "missing" not in note.message and "kept (not judged removable now)" in note.message, note.message
    assert note.severity == "warning"


# --- Checkouts: a release refused or cut short -------------------------------------------------


def bold_oak(box: Sandbox) -> Path:
    return box.project / ".claude" / "worktrees" / "bold-oak-a3f2"


async def ask_release(pilot: Any, app: ClaudettoApp, checkout: Path) -> None:
    await goto(pilot, "checkouts")
    listing = app.screen.query_one("#checkouts", Table)
    await wait_for(pilot, lambda: listing.row_count > 0)
    assert listing.move_to(str(checkout))
    await pilot.press("r")


async def test_a_release_that_kept_scratch_another_user_took_says_what_stayed(box: Sandbox) -> None:
    """The release is asked and said yes to; meanwhile node_modules became another user's. The
    core keeps it (outside_root) and still calls the checkout released: the line must say what
    stayed and why, as a warning, not "released, freed 0 B" in green."""
    from app.screens.checkouts import CheckoutsScreen

    checkout = bold_oak(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_release(pilot, app, checkout)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        os.chown(checkout / "node_modules", NOBODY, NOBODY)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy
                       and "released" in app.screen.query_one(WorkLine).text)
        line = app.screen.query_one(WorkLine).text
        note = last_note(app)
    assert (checkout / "node_modules").is_dir()
    assert "node_modules kept (outside_root)" in line, line
    assert note.severity == "warning" and "\n" not in note.message


async def test_a_checkout_turned_symlink_is_said_so_not_called_unmanaged(box: Sandbox, tmp_path: Path) -> None:
    """The checkout's folder was moved away and a symlink put in its place after the screen
    read it: `r` is refused (`not_managed`); the line says it is a symlink now, not that
    claudetto never made it, and what it points at keeps its node_modules."""
    checkout = bold_oak(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: listing.row_count > 0)
        moved = tmp_path / "elsewhere"
        os.rename(checkout, moved)
        os.symlink(moved, checkout)
        assert listing.move_to(str(checkout))
        await pilot.press("r")
        await wait_for(pilot, lambda: "nothing released" in app.screen.query_one(WorkLine).text)
        line = app.screen.query_one(WorkLine).text
    assert "symlink" in line and "not a session checkout" not in line, line
    assert (moved / "node_modules").is_dir()


async def test_a_release_running_in_another_process_is_said_busy_and_nothing_goes(box: Sandbox) -> None:
    """Another process (a SessionEnd's detached release, say) holds the checkout's release
    lock: the yes waits for it, then says another release runs; node_modules is untouched
    by this one and the screen is ready for the next key."""
    from app.screens.checkouts import CheckoutsScreen

    checkout = bold_oak(box)
    holder = subprocess.Popen(
        [sys.executable, "-P", "-c", "import sys, time\nfrom app.core.state import locked\n"
         "from app.core.release import lock_of\nwith locked(lock_of(sys.argv[1])):\n"
         "    print('held', flush=True)\n    time.sleep(60)\n", str(checkout)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        app = make_app(box)
        async with app.run_test(size=SIZE) as pilot:
            await ask_release(pilot, app, checkout)
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
            await answer(pilot, "y")
            await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy
                           and "another release" in app.screen.query_one(WorkLine).text)
            assert last_note(app).severity == "warning"
    finally:
        holder.kill()
        holder.wait()
    assert (checkout / "node_modules").is_dir()


# --- Memory: a supersede refused ---------------------------------------------------------------


def stack_md(box: Sandbox) -> Path:
    from app.core.paths import project_slug

    return box.config / "projects" / project_slug(box.project) / "memory" / "stack.md"


async def open_supersede(pilot: Any, app: ClaudettoApp) -> None:
    """The stale version pin of stack.md highlighted and `u` pressed: the dialog is open."""
    from app.screens.memory import MemoryScreen
    from app.screens.supersede import SupersedeModal

    await goto(pilot, "memory")
    screen = app.screen
    assert isinstance(screen, MemoryScreen)
    findings = screen.query_one("#findings", Table)
    await wait_for(pilot, lambda: any(f.kind == "stale_version_pin" for f in screen.findings.values()))
    assert findings.move_to(next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin"))
    await wait_for(pilot, lambda: "▶ The shop runs on Flask 2.2.5." in str(screen.query_one("#memory-file").render()))
    await pilot.press("u")
    await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))


async def refused_note(pilot: Any, app: ClaudettoApp) -> Any:
    await pilot.press(*"Flask 3.0 now")
    await answer(pilot, "enter")
    await wait_for(pilot, lambda: any(n.title == "Nothing changed" for n in app._notifications))  # noqa: SLF001
    return next(n for n in app._notifications if n.title == "Nothing changed")  # noqa: SLF001


async def test_a_supersede_of_a_hard_linked_memory_file_is_refused_in_one_line(box: Sandbox) -> None:
    """stack.md is also a note in the user's own folder (a hard link): the supersede is
    refused, said in one warning line, and neither name changes."""
    stack = stack_md(box)
    before = stack.read_text()
    os.link(stack, box.home / "my-stack-notes.md")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await open_supersede(pilot, app)
        note = await refused_note(pilot, app)
    assert note.severity == "warning" and "hard links" in note.message and "\n" not in note.message
    assert stack.read_text() == before == (box.home / "my-stack-notes.md").read_text()


async def test_a_supersede_refused_because_claude_saved_the_file_meanwhile_shows_the_file_again(
        box: Sandbox) -> None:
    """The dialog is open on line 6 when Claude saves stack.md with a line added on top:
    the supersede is refused (the line changed), and the screen sweeps again, so the finding
    and the viewer name the line where the fact is now (7), not the stale 6."""
    from app.screens.memory import MemoryScreen

    stack = stack_md(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await open_supersede(pilot, app)
        changed = "# Saved by Claude\n" + stack.read_text()
        stack.write_text(changed)
        note = await refused_note(pilot, app)
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        await wait_for(pilot, lambda: any(f.kind == "stale_version_pin" and f.line == 7
                                          for f in screen.findings.values()), timeout=10)
        viewer = screen.query_one("#memory-file")
        await wait_for(pilot, lambda: "   7 ▶ The shop runs on Flask 2.2.5." in str(viewer.render()), timeout=10)
    assert "changed" in note.message and note.severity == "warning"
    assert stack.read_text() == changed


async def test_the_release_question_lists_scratch_another_user_owns_as_kept(box: Sandbox) -> None:
    """node_modules is another user's before `r`: the release will keep it (outside_root),
    so the question must list it as kept, not as a folder that goes."""
    checkout = bold_oak(box)
    os.chown(checkout / "node_modules", NOBODY, NOBODY)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_release(pilot, app, checkout)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = app.screen.body  # type: ignore[attr-defined]
        await answer(pilot, "n")
    assert "kept (outside_root): node_modules" in body, body


# --- Quitting, nothing at all, many outputs ------------------------------------------------------


async def test_quitting_while_a_release_runs_leaves_it_finished_or_not_started_and_journaled(box: Sandbox) -> None:
    """A yes to the release and `q` at once: afterwards node_modules is either all there
    (the release never started) or gone with its journal line, and the checkout is never
    left `cut_short` by the dashboard."""
    import asyncio

    from app.core import checkouts

    checkout = bold_oak(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_release(pilot, app, checkout)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await answer(pilot, "y", "q")
    await asyncio.get_running_loop().shutdown_default_executor()  # the release's thread has ended
    state = (checkouts.registry().get(str(checkout)) or {}).get("state")
    journal = Path(box.env["CLAUDETTO_HOME"]) / "journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()] if journal.exists() else []
    went = {line["path"] for line in lines if line.get("result") == "removed"}
    if (checkout / "node_modules").exists():
        assert state == "active" and str(checkout / "node_modules") not in went
    else:
        assert state == "released" and str(checkout / "node_modules") in went


async def test_nothing_at_all_every_screen_and_key_answers_and_the_overview_agrees_with_the_cli(
        tmp_path: Path) -> None:
    """The sandbox the autouse fixture makes: no session, no output, no checkout, no ledger, no
    memory. Every screen, every key of it: nothing crashes, each says it is empty, and the
    Overview's 0 is the CLI's 0."""
    from app.screens.outputs import OutputsScreen

    project = tmp_path / "empty-project"
    project.mkdir()
    app = ClaudettoApp(poll_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for mode in ("overview", "sessions", "outputs", "checkouts", "ledger", "memory"):
            await goto(pilot, mode)
            await pilot.press("space", "d", "s", "u", "i", "c", "f", "o", "b", "enter", "tab", "home", "end")
            await pilot.pause(0.3)
            while app.screen.is_modal:
                if isinstance(app.screen, GuardedModal):
                    await answerable(pilot)
                await pilot.press("escape")
                await pilot.pause(0.1)
        assert isinstance(app.screen, type(app.screen)) and app.is_running
        await goto(pilot, "outputs")
        assert isinstance(app.screen, OutputsScreen)
        assert app.store.rows == {} and reclaimable(app) == 0
        assert not [n for n in app._notifications if n.severity == "error"]  # noqa: SLF001
    gc = json.loads(run_cli("gc", "--dry-run", "--json", cwd=project).stdout)
    clean = json.loads(run_cli("clean", "--dry-run", "--json", str(project), cwd=project).stdout)
    assert gc["freed"] == 0 and clean["cleaned"]["bytes"] == 0


async def test_five_thousand_outputs_are_listed_marked_sorted_and_filtered(tmp_path: Path) -> None:
    """5,000 real folders judged removable: every row is there, a mark, a sort and a filter
    answer, and the header's marked total is the marked rows' sizes (bench/tui.py times it)."""
    from app.core.outputs import Judged
    from app.core.verdict import Verdict

    top = tmp_path / "many"
    verdicts = []
    for n in range(5000):
        folder = top / f"out-{n:04d}"
        folder.mkdir(parents=True)
        verdicts.append(Verdict(str(folder), "temp", "remove", "age", "gc", str(top), size=4096 * (n % 7 + 1),
                                mtime=1.0e9 + n))
    app = ClaudettoApp(poll_s=5, judge_outputs=lambda: Judged(verdicts))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await goto(pilot, "outputs")
        table = app.screen.query_one("#outputs", Table)
        await wait_for(pilot, lambda: table.row_count == 5000)
        await pilot.press("space", "space", "space")
        await wait_for(pilot, lambda: len(app.store.marked) == 3)
        assert app.store.marked_total() == sum(app.store.rows[k].size or 0 for k in app.store.marked)
        await pilot.press("a")
        await wait_for(pilot, lambda: table.keys_in_order()[0].endswith("out-0000"))
        await pilot.press("slash", *"out-4999", "enter")
        await wait_for(pilot, lambda: table.row_count == 1)


async def test_a_checkout_another_process_is_releasing_reads_as_releasing_not_cut_short(box: Sandbox) -> None:
    """A release runs in another process (a SessionEnd's detached one): its record is
    `cut_short` with that process's pid while it works. The row and the pane must not tell
    the user it was cut short and that `r` finishes it: it is being released now, by whom."""
    from app.core import checkouts
    from app.core.sessions import proc_start_time

    checkout = bold_oak(box)
    worker = subprocess.Popen(["sleep", "60"])
    try:
        def cut(records: dict[str, Any]) -> None:
            records[str(checkout)].update(state="cut_short", cut_short={
                "time": 0, "pid": worker.pid, "proc_start": proc_start_time(worker.pid), "planned": ["node_modules"]})
        checkouts.edit_registry(cut)
        app = make_app(box)
        async with app.run_test(size=SIZE) as pilot:
            await goto(pilot, "checkouts")
            listing = app.screen.query_one("#checkouts", Table)
            await wait_for(pilot, lambda: listing.row_count > 0)
            assert listing.move_to(str(checkout))
            await wait_for(pilot, lambda: "releasing" in " ".join(c.plain for c in listing.get_row(str(checkout))))
            pane = app.screen.query_one("#detail")
            await wait_for(pilot, lambda: f"process {worker.pid}" in str(pane.render()))
            assert "r finishes" not in str(pane.render())
    finally:
        worker.kill()
        worker.wait()


async def test_a_checkout_removal_refused_for_another_users_folder_keeps_the_row_and_says_why(box: Sandbox) -> None:
    """old-clean (removable) became another user's while the removal was asked: the core keeps
    it; the line says kept, as a warning, the row stays, and the Overview agrees with the CLI."""
    from app.screens.checkouts import CheckoutsScreen

    checkout = box.project / ".claude" / "worktrees" / "old-clean"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "checkouts")
        listing = app.screen.query_one("#checkouts", Table)
        await wait_for(pilot, lambda: listing.row_count > 0)
        assert listing.move_to(str(checkout))
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        os.chown(checkout, NOBODY, NOBODY)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy
                       and "kept" in app.screen.query_one(WorkLine).text)
        note = last_note(app)
        assert note.severity == "warning" and note.title == "Kept"
        await wait_for(pilot, lambda: str(checkout) in listing.keys_in_order())
        await settle(pilot, app)
        app.store.refresh()
        await settle(pilot, app)
        shown = reclaimable(app)
    assert checkout.is_dir()
    assert shown == cli_reclaimable(box)


async def test_the_supersede_dialog_keeps_its_input_and_buttons_on_a_60x20_screen(box: Sandbox) -> None:
    """A long remembered line (a paragraph, as Claude sometimes writes) on a 60x20 terminal:
    the line to strike scrolls, the correction box and both buttons stay on screen."""
    from app.screens.supersede import SupersedeModal

    stack = stack_md(box)
    text = stack.read_text().replace("The shop runs on Flask 2.2.5.",
                                     "The shop runs on Flask 2.2.5." + " and a long explanation of why" * 30)
    stack.write_text(text)
    app = make_app(box)
    async with app.run_test(size=(60, 20)) as pilot:
        from app.screens.memory import MemoryScreen

        await goto(pilot, "memory")
        screen = app.screen
        assert isinstance(screen, MemoryScreen)
        await wait_for(pilot, lambda: any(f.kind == "stale_version_pin" for f in screen.findings.values()))
        assert screen.query_one("#findings", Table).move_to(
            next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin"))
        await pilot.pause(0.2)
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        await pilot.pause(0.2)
        for selector in ("#supersede-title", "#struck-box", "#correction", "#write", "#cancel"):
            region = app.screen.query_one(selector).region
            assert region.height > 0 and region.bottom <= 20 and region.y >= 0, (selector, region)


async def test_keys_pressed_while_each_screen_reads_again_change_nothing_unasked(box: Sandbox) -> None:
    """Refresh and, before its answer, every action key of the screen, each question answered
    no: no worker fails, nothing leaves the disk, and every screen still answers."""
    from app.screens.supersede import SupersedeModal

    worktrees = box.project / ".claude" / "worktrees"
    before = sorted(p.name for p in worktrees.iterdir())
    refresh = {"overview": "r", "sessions": "r", "outputs": "r", "checkouts": "ctrl+r", "ledger": "r", "memory": "r"}
    keys = {"outputs": ("space", "d", "s"), "checkouts": ("down", "r", "d"), "memory": ("u", "i"),
            "ledger": ("c",), "sessions": ("o",), "overview": ("tab",)}
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for mode, pressed in keys.items():
            await goto(pilot, mode)
            await pilot.press(refresh[mode], *pressed)
            for _ in range(10):
                await pilot.pause(0.1)
                if isinstance(app.screen, ConfirmModal):
                    await answer(pilot, "n")
                elif isinstance(app.screen, SupersedeModal):
                    await answer(pilot, "escape")
        await settle(pilot, app)
        errors = [n.message for n in app._notifications if n.severity == "error"]  # noqa: SLF001
    assert errors == []
    assert sorted(p.name for p in worktrees.iterdir()) == before
