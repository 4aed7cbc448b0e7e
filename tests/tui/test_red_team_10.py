"""Red team, round ten, on the dashboard's approvals: a person says yes to what the screen
showed, and the program must act only on what is still true at that moment. The checkout
`d` asked about old-clean while it was clean, merged and unused; before the yes it took a
commit, a file, a live session, or was swapped for a symlink or another folder of its name.
Keys held down or doubled must not act twice. Real sandbox, real git, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from app import format as fmt
from app.core.sessions import proc_start_time
from app.sandbox import Sandbox
from app.screens.confirm import ConfirmModal
from app.tui import ClaudettoApp
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.cli.test_demo_cleanup import BIN, TMUX, Tmux, wait_until
from tests.support import git
from tests.tui.conftest import answer, answerable, goto, wait_for

SIZE = (120, 36)


def make_app(box: Sandbox, **kwargs: Any) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2, **kwargs)


def old_clean(box: Sandbox) -> Path:
    return box.project / ".claude" / "worktrees" / "old-clean"


def journal(box: Sandbox) -> list[dict[str, Any]]:
    path = Path(box.env["CLAUDETTO_HOME"]) / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def ask_removal(pilot: Any, app: ClaudettoApp, checkout: Path) -> None:
    """old-clean highlighted, shown removable, and `d` pressed: the question is open."""
    await goto(pilot, "checkouts")
    listing = app.screen.query_one("#checkouts", Table)
    await wait_for(pilot, lambda: str(checkout) in listing.keys_in_order())
    assert "removable" in " ".join(c.plain for c in listing.get_row(str(checkout)))
    assert listing.move_to(str(checkout))
    await pilot.pause()
    await pilot.press("d")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))


async def answer_yes(pilot: Any, app: ClaudettoApp) -> str:
    """Yes, then the line the screen ends with."""
    from app.screens.checkouts import CheckoutsScreen

    await answer(pilot, "y")
    await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy
                   and (": removed" in app.screen.query_one(WorkLine).text
                        or ": kept" in app.screen.query_one(WorkLine).text), timeout=60)
    # the notification the line goes with is a message of its own: handled a moment later
    await wait_for(pilot, lambda: bool(app._notifications))  # noqa: SLF001 - what the user sees
    return app.screen.query_one(WorkLine).text


def live_session_in(box: Sandbox, folder: Path) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(["sleep", "60"])
    record = {"pid": child.pid, "sessionId": "1f0e3c9a-0000-4000-8000-00000000abcd", "cwd": str(folder),
              "status": "busy", "procStart": proc_start_time(child.pid), "startedAt": int(box.now * 1000)}
    (box.config / "sessions" / f"{child.pid}.json").write_text(json.dumps(record), encoding="utf-8")
    return child


def as_old(checkout: Path) -> None:
    """The folder's own time put back: only the change decides, not a fresh mtime."""
    old = os.stat(checkout.parent / "dirty-wip").st_mtime
    os.utime(checkout, (old, old))


def add_commit(checkout: Path) -> None:
    (checkout / "late.py").write_text("LATE = 1\n", encoding="utf-8")
    git(checkout, "add", "late.py")
    git(checkout, "commit", "-q", "-m", "work done after the listing")
    as_old(checkout)


def add_file(checkout: Path) -> None:
    (checkout / "draft.md").write_text("not saved anywhere else\n", encoding="utf-8")
    as_old(checkout)


def edit_file(checkout: Path) -> None:
    with open(checkout / "README.md", "a", encoding="utf-8") as fh:
        fh.write("an edit saved nowhere else\n")


CHANGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a commit": (add_commit, "unmerged"),
    "an untracked file": (add_file, "dirty"),
    "an edited file": (edit_file, "dirty"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_a_checkout_changed_after_the_question_is_kept_and_the_screen_says_why(
        box: Sandbox, change: str) -> None:
    """old-clean was removable when `d` asked; before the yes it took `change`. The removal
    judges again: the folder, its branch and the work stay; the line says kept and why, as a
    warning, and the journal names no removal of it."""
    checkout = old_clean(box)
    make_change, reason = CHANGES[change]
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_removal(pilot, app, checkout)
        make_change(checkout)
        line = await answer_yes(pilot, app)
        note = list(app._notifications)[-1]  # noqa: SLF001 - what the user saw last
    assert checkout.is_dir() and "removed" not in line, line
    assert fmt.reason("keep", reason) in line, line
    assert note.severity == "warning" and note.title == "Kept"
    assert not any(e.get("path") == str(checkout) and e.get("result", "removed") == "removed" for e in journal(box))


async def test_a_session_started_in_a_checkout_after_the_question_keeps_it(box: Sandbox) -> None:
    """A session started inside old-clean while the question was open: kept (live)."""
    checkout = old_clean(box)
    app = make_app(box)
    child: subprocess.Popen[bytes] | None = None
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ask_removal(pilot, app, checkout)
            child = live_session_in(box, checkout)
            line = await answer_yes(pilot, app)
    finally:
        if child is not None:
            child.kill()
            child.wait()
    assert checkout.is_dir()
    assert "kept" in line and "live" in line.lower(), line


async def test_a_checkout_swapped_for_a_symlink_to_home_removes_nothing_of_home(box: Sandbox) -> None:
    """old-clean moved away and a symlink to the home put in its name before the yes: the
    home, the moved checkout and the link all stay. The line says what it is now (a symlink,
    not the checkout listed): the core's reason for the home it points at ("a live session
    uses it") is no reason about this checkout, and read as one it sent the user looking for
    a session in a folder no session ever used."""
    checkout = old_clean(box)
    moved = checkout.with_name("old-clean.moved")
    marker = box.home / "precious.txt"
    marker.write_text("mine\n", encoding="utf-8")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_removal(pilot, app, checkout)
        os.rename(checkout, moved)
        os.symlink(box.home, checkout)
        line = await answer_yes(pilot, app)
    assert marker.read_text(encoding="utf-8") == "mine\n"
    assert checkout.is_symlink() and moved.is_dir()
    assert ": removed" not in line and "symlink" in line and "live session" not in line, line


async def test_a_checkout_replaced_by_another_folder_of_its_name_keeps_the_new_one(box: Sandbox) -> None:
    """The user removed old-clean by hand (git worktree remove) and made a folder of their own
    in its name, with an old date: the yes was to the clean checkout, not to their folder."""
    checkout = old_clean(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_removal(pilot, app, checkout)
        git(box.project, "worktree", "remove", str(checkout))
        checkout.mkdir()
        (checkout / "mine.txt").write_text("the user's own\n", encoding="utf-8")
        old = box.now - 40 * 86400
        os.utime(checkout / "mine.txt", (old, old))
        os.utime(checkout, (old, old))
        line = await answer_yes(pilot, app)
    assert (checkout / "mine.txt").read_text(encoding="utf-8") == "the user's own\n", line
    assert "removed" not in line, line


# --- keys that arrive together ----------------------------------------------------------------


def burst(app: ClaudettoApp, *keys: str) -> None:
    """Keys as a terminal delivers a held or doubled key: queued together, before the app has
    acted on the first (the pilot's press waits for each; a person's fingers do not)."""
    from textual import events

    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


async def test_a_doubled_yes_removes_the_checkout_once_and_acts_on_nothing_else(box: Sandbox) -> None:
    """`y` twice, both queued before the first is handled: one removal of old-clean, no error,
    no second removal started, and every other checkout still there."""
    from app.screens.checkouts import CheckoutsScreen

    checkout = old_clean(box)
    others = sorted(p.name for p in checkout.parent.iterdir() if p != checkout)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_removal(pilot, app, checkout)
        await answerable(pilot)
        burst(app, "y", "y", "y")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy
                       and ": removed" in app.screen.query_one(WorkLine).text, timeout=60)
        await pilot.pause(0.5)
        errors = [n for n in app._notifications if n.severity == "error"]  # noqa: SLF001
        assert not errors, [n.message for n in errors]
        assert isinstance(app.screen, CheckoutsScreen)
    assert not checkout.exists()
    assert sorted(p.name for p in checkout.parent.iterdir()) == others
    assert sum(1 for e in journal(box) if e.get("path") == str(checkout)) == 1


async def test_enter_held_on_the_yes_button_removes_once_and_the_app_keeps_running(box: Sandbox) -> None:
    """Tab to Yes and Enter held down: each Enter presses the button before the dialog has
    closed on the first. One removal, no error, the Checkouts screen still there."""
    from textual.widgets import Button

    from app.screens.checkouts import CheckoutsScreen

    checkout = old_clean(box)
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_removal(pilot, app, checkout)
        app.screen.query_one("#yes", Button).focus()
        await answerable(pilot)
        burst(app, "enter", "enter", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy
                       and ": removed" in app.screen.query_one(WorkLine).text, timeout=60)
        await pilot.pause(0.5)
        assert isinstance(app.screen, CheckoutsScreen) and app.is_running
        assert not [n.message for n in app._notifications if n.severity == "error"]  # noqa: SLF001
    assert not checkout.exists()
    assert sum(1 for e in journal(box) if e.get("path") == str(checkout)) == 1


# --- --read-only, by mouse ----------------------------------------------------------------------


def every_entry(top: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under `top`, links not followed: mode, size (0 for a folder) and mtime."""
    found: dict[str, tuple[int, int, int]] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            found[os.path.join(folder, name)] = (st.st_mode, 0 if name in dirs else st.st_size, st.st_mtime_ns)
    return found


async def test_read_only_every_click_on_every_screen_writes_nothing_anywhere(box: Sandbox) -> None:
    """`--read-only`, by mouse: every key of every screen's footer clicked on a removable row
    (a finding with a line on Memory), every question that opens answered yes, a row clicked
    twice (Outputs browses it). Nothing anywhere in the sandbox changes: not the state, not the
    config (sessions, settings, memory), not the temp folders, not the projects, not a mode or
    an mtime; only the live sessions' own task outputs grow."""
    from textual.widgets._footer import FooterKey

    from tests.tui.test_red_team_4 import say_yes_to_anything

    before = every_entry(box.root)
    app = make_app(box, read_only=True)
    clicked: list[str] = []
    said: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        for mode in ("outputs", "checkouts", "memory", "overview", "sessions", "ledger"):
            await goto(pilot, mode)
            screen: Any = app.screen
            table = next(iter(screen.query(Table)))
            await wait_for(pilot, partial(lambda t: t.row_count > 0, table))
            if mode == "outputs":
                await wait_for(pilot, lambda: any(v.removable for v in app.store.rows.values()))
                assert table.move_to(next(k for k, v in app.store.rows.items() if v.removable))
            elif mode == "checkouts":
                await wait_for(pilot, partial(lambda s: any(i.removable for i in s.infos.values()), screen))
                assert table.move_to(next(p for p, i in screen.infos.items() if i.removable))
            elif mode == "memory":
                assert table.move_to(next(k for k, f in screen.findings.items() if f.kind == "stale_version_pin"))
            await pilot.pause(0.2)
            for key in list(screen.query(FooterKey)):
                if key.action in ("app.quit", "quit") or not key.is_mounted or app.screen is not screen:
                    continue
                clicked.append(f"{mode}:{key.action}")
                seen = {id(n) for n in app._notifications}  # noqa: SLF001 - what the user saw
                await pilot.click(key)
                await pilot.pause(0.2)
                said += [f"{key.action}: {n.message}" for n in app._notifications if id(n) not in seen]  # noqa: SLF001
                await say_yes_to_anything(pilot, app, screen)
            if app.screen is screen and table.row_count:
                await pilot.click(table, offset=(4, 2), times=2)
                await pilot.pause(0.3)
                await say_yes_to_anything(pilot, app, screen)
        await pilot.pause(0.5)
    refused = {n.split(":")[0] for n in said if "Read-only" in n}
    assert {"mark", "remove_marked", "release", "remove", "supersede"} <= refused, said  # clicks reach the actions
    assert {"outputs:mark", "outputs:remove_marked", "checkouts:release", "checkouts:remove",
            "memory:supersede", "memory:fix_index"} <= set(clicked), clicked
    after = every_entry(box.root)
    changed = sorted(set(before.items()) ^ set(after.items()))
    changed = [entry for entry in changed if "/tasks/" not in entry[0]]
    assert not changed, changed[:10]


# --- the dashboard ended by a signal -------------------------------------------------------------


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A private tmux server: a real terminal for the dashboard."""
    if TMUX is None:
        pytest.skip("tmux is not installed")
    server = Tmux(tmp_path)
    try:
        yield server
    finally:
        server.run("kill-server")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_the_real_dashboard_as_q_does(tmux: Tmux, tmp_path: Path, signum: int) -> None:
    """`claudetto` (not the demo) in a real terminal, ended by `kill` or by SIGHUP: Python's
    default ended the process on the spot, with a removal running cut in the middle of an
    item, and the terminal left showing the dashboard in raw mode (the shell's prompt drawn
    over it). The app ends as `q` ends it: the shell is back, the status is 128 + the signal."""
    pid_file, exit_file = tmp_path / "pid", tmp_path / "exit-code"
    command = (f"sh -c 'echo $$ > {pid_file}; exec {BIN / 'claudetto'}'; echo $? > {exit_file}; sleep 30")
    started = tmux.run("new-session", "-d", "-s", "demo", "-x", "120", "-y", "36", "-c", str(tmp_path), command)
    assert started.returncode == 0, started.stderr
    wait_until(lambda: "Overview" in tmux.screen() and pid_file.exists(), 120, "the dashboard was not drawn")
    os.kill(int(pid_file.read_text()), signum)
    wait_until(lambda: exit_file.exists() and exit_file.read_text().strip(), 20, "claudetto did not exit")
    assert exit_file.read_text().strip() == str(128 + signum)
    assert "Overview" not in tmux.screen()  # the app left the alternate screen: the shell is back


# --- a release said yes to, the scratch swapped meanwhile -----------------------------------------


async def test_a_release_whose_scratch_became_a_link_to_home_deletes_nothing_of_home(box: Sandbox) -> None:
    """`r` on bold-oak lists node_modules to delete. Before the yes, node_modules is moved away
    and a symlink to the home put in its name (the same path: the question's list still
    matches). Nothing of the home and nothing of the moved folder goes. The release passes the
    link by without a word, and the line read "released, freed 0 Bytes; .tmp/ and everything
    else kept": node_modules, said yes to, seemed gone. The line names it as kept, a warning."""
    from app.screens.checkouts import CheckoutsScreen
    from tests.tui.test_red_team_7 import ask_release, bold_oak

    checkout = bold_oak(box)
    scratch = checkout / "node_modules"
    moved = box.home / "node_modules.kept"
    marker = box.home / "precious.txt"
    marker.write_text("mine\n", encoding="utf-8")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_release(pilot, app, checkout)
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        os.rename(scratch, moved)
        os.symlink(box.home, scratch)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, CheckoutsScreen) and not app.screen.busy
                       and "releas" in app.screen.query_one(WorkLine).text
                       and "…" not in app.screen.query_one(WorkLine).text, timeout=60)
        line = app.screen.query_one(WorkLine).text
        await wait_for(pilot, lambda: bool(app._notifications))  # noqa: SLF001 - its own message
        note = list(app._notifications)[-1]  # noqa: SLF001 - what the user saw last
    assert marker.read_text(encoding="utf-8") == "mine\n", line
    assert (moved / "react" / "index.js").is_file(), line
    assert scratch.is_symlink()
    assert "node_modules kept (not the folder listed now)" in line, line
    assert note.severity == "warning"


async def test_the_yes_removes_the_checkout_the_question_named_after_the_rows_moved(box: Sandbox) -> None:
    """The question names old-clean. While it is open the listing is read again, a new
    checkout comes in, and the highlighted row is that other checkout now. The yes removes
    old-clean, and nothing else (held)."""
    from app.screens.checkouts import CheckoutsScreen

    checkout = old_clean(box)
    newcomer = checkout.with_name("aaa-newcomer")
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await ask_removal(pilot, app, checkout)
        screen = app.screen_stack[-2]
        assert isinstance(screen, CheckoutsScreen)
        listing = screen.query_one("#checkouts", Table)
        git(box.project, "worktree", "add", "-q", "-b", "worktree-aaa-newcomer", str(newcomer))
        screen.action_refresh()
        await wait_for(pilot, lambda: str(newcomer) in listing.keys_in_order())
        assert listing.move_to(str(newcomer))  # where a reordered listing may leave the cursor
        line = await answer_yes(pilot, app)
    assert not checkout.exists() and newcomer.is_dir(), line
    assert line.startswith("old-clean: removed"), line


@pytest.mark.parametrize("change", sorted(CHANGES))
async def test_a_worktree_marked_on_the_outputs_screen_and_changed_before_the_yes_is_kept(
        box: Sandbox, change: str) -> None:
    """The same checkout through the Outputs screen (its row `worktree … will remove (age)`):
    marked, asked, then `change` before the yes. Kept, and the outcome says kept, never
    removed."""
    from app.screens.outputs import OutputsScreen
    from tests.tui.conftest import settle

    checkout = old_clean(box)
    make_change, _reason = CHANGES[change]
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "outputs")
        await settle(pilot, app)
        key = next(k for k, v in app.store.rows.items() if v.path == str(checkout))
        assert app.store.rows[key].removable
        assert app.screen.query_one("#outputs", Table).move_to(key)
        await pilot.pause()
        await pilot.press("space", "d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        make_change(checkout)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                       and "freed" in app.screen.query_one(WorkLine).text, timeout=60)
        line = app.screen.query_one(WorkLine).text
        await wait_for(pilot, lambda: bool(app._notifications))  # noqa: SLF001 - its own message
        title = list(app._notifications)[-1].title  # noqa: SLF001 - what the user saw last
    assert checkout.is_dir(), line
    assert "in 0 items; 1 kept" in line and title == "Nothing removed", (line, title)
