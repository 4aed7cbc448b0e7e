"""Pilot tests of the Checkouts, Ledger, Memory and Overview screens on a real sandbox: the
checkouts are real git worktrees made and registered by the core, the memory files and the
ledger real files; each test checks the disk (or the journal) as well as the screen."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from app.core import checkouts
from app.core.journal import append
from app.core.paths import project_slug
from app.sandbox import LIVE_BUSY, Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.overview import OverviewScreen
from app.screens.supersede import SupersedeModal
from app.tui import ClaudettoApp
from app.widgets.charts import DayBars
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.tui.conftest import answer, goto, notes, settle, wait_for

SIZE = (120, 36)


def make_app(box: Sandbox, **kwargs: object) -> ClaudettoApp:
    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2, **kwargs)  # type: ignore[arg-type]


def table(app: ClaudettoApp, selector: str) -> Table:
    return app.screen.query_one(selector, Table)


def detail(app: ClaudettoApp, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def checkouts_listed(pilot, app: ClaudettoApp) -> Table:
    await goto(pilot, "checkouts")
    listing = table(app, "#checkouts")
    await wait_for(pilot, lambda: listing.row_count > 0)
    return listing


async def test_release_end_to_end_deletes_the_scratch_and_keeps_tmp(box: Sandbox) -> None:
    checkout = box.project / ".claude" / "worktrees" / "bold-oak-a3f2"
    assert (checkout / "node_modules").is_dir() and (checkout / ".tmp" / "notes.md").is_file()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        listing = await checkouts_listed(pilot, app)
        assert listing.move_to(str(checkout))
        await wait_for(pilot, lambda: "release would delete" in detail(app, "#detail"))
        assert "node_modules" in detail(app, "#detail") and ".tmp/ stays" in detail(app, "#detail")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        body = str(app.screen.query_one("#body").render())
        assert "node_modules" in body and ".tmp/ stays" in body
        assert (checkout / "node_modules").is_dir()  # the dry run deleted nothing
        await answer(pilot, "y")
        await wait_for(pilot, lambda: not (checkout / "node_modules").exists())
        await wait_for(pilot, lambda: "released" in app.screen.query_one(WorkLine).text)
        await wait_for(pilot, lambda: "released" in str(listing.get_row(str(checkout))))
    assert (checkout / ".tmp" / "notes.md").read_text() == "what bold-oak-a3f2 was doing\n"
    assert (checkout / ".git").is_file()  # the checkout stays on disk, for a later session
    assert checkouts.registry()[str(checkout)]["state"] == "released"


async def test_a_held_checkout_is_not_released(box: Sandbox) -> None:
    checkout = box.project / ".claude" / "worktrees" / "live-task"
    (checkout / "node_modules").mkdir()
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        listing = await checkouts_listed(pilot, app)
        assert listing.move_to(str(checkout))
        await pilot.press("r")
        await wait_for(pilot, lambda: "held by" in app.screen.query_one(WorkLine).text)
        assert LIVE_BUSY[:8] in app.screen.query_one(WorkLine).text
        assert not isinstance(app.screen, ConfirmModal)
    assert (checkout / "node_modules").is_dir()


async def test_removal_refused_on_a_dirty_worktree(box: Sandbox) -> None:
    dirty = box.project / ".claude" / "worktrees" / "dirty-wip"
    clean = box.project / ".claude" / "worktrees" / "old-clean"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        listing = await checkouts_listed(pilot, app)
        assert listing.move_to(str(dirty))
        await pilot.press("d")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmModal)
        assert any("Cannot remove dirty-wip" in n and "changed, untracked or secret" in n for n in notes(app))
        # listed as removable, then made dirty before the yes: the core judges again and keeps it
        assert listing.move_to(str(clean))
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        old = os.lstat(clean).st_mtime
        (clean / "new-work.txt").write_text("not committed anywhere\n")
        os.utime(clean, (old, old))  # still old: only the new file makes it worth keeping
        await answer(pilot, "y")
        await wait_for(pilot, lambda: "kept" in app.screen.query_one(WorkLine).text)
        assert "changed, untracked or secret" in app.screen.query_one(WorkLine).text
    assert (dirty / "notes.txt").read_text() == "half done\n"
    assert (clean / "new-work.txt").read_text() == "not committed anywhere\n"


async def test_supersede_end_to_end(box: Sandbox) -> None:
    stack = box.config / "projects" / project_slug(box.project) / "memory" / "stack.md"
    before = stack.read_text().splitlines()
    assert before[5] == "The shop runs on Flask 2.2.5."
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        findings = table(app, "#findings")
        await wait_for(pilot, lambda: findings.row_count >= 5)
        pin = next(k for k, f in app.screen.findings.items() if f.kind == "stale_version_pin")  # type: ignore[attr-defined]
        assert findings.move_to(pin)
        await wait_for(pilot, lambda: "▶ The shop runs on Flask 2.2.5." in detail(app, "#memory-file"))
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        await pilot.press(*"The shop runs on Flask 3.0.")
        await answer(pilot, "enter")
        await wait_for(pilot, lambda: "~~" in stack.read_text())
        await wait_for(pilot, lambda: not any(f.kind == "stale_version_pin"
                                              for f in app.screen.findings.values()))  # type: ignore[attr-defined]
    today = time.strftime("%Y-%m-%d")
    assert stack.read_text().splitlines() == [*before[:5], "~~The shop runs on Flask 2.2.5.~~",
                                              f"Correction ({today}): The shop runs on Flask 3.0.", *before[6:]]


async def test_index_drift_strikes_the_dangling_line(box: Sandbox) -> None:
    index = box.config / "projects" / project_slug(box.project) / "memory" / "MEMORY.md"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        findings = table(app, "#findings")
        await wait_for(pilot, lambda: findings.row_count >= 5)
        screen = app.screen
        unlisted = next(k for k, f in screen.findings.items() if f.kind == "index_unlisted_file")  # type: ignore[attr-defined]
        assert findings.move_to(unlisted)
        before = index.read_text()
        await pilot.press("i")  # asks with the line it would add; no leaves the index alone
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "- [Old notes](old-notes.md) — unlisted" in str(app.screen.query_one("#body").render())
        await answer(pilot, "escape")
        await wait_for(pilot, lambda: app.screen is screen)
        assert index.read_text() == before
        gone = next(k for k, f in screen.findings.items() if f.kind == "index_missing_file")  # type: ignore[attr-defined]
        assert findings.move_to(gone)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        await answer(pilot, "enter")  # the correction is written for you
        await wait_for(pilot, lambda: "~~[Deploy](deploy.md) — the deploy steps~~" in index.read_text())
    assert "`deploy.md` no longer exists" in index.read_text().splitlines()[2]


async def test_ledger_row_after_an_outside_change(box: Sandbox) -> None:
    readme = box.project / "README.md"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "ledger")
        ledger = table(app, "#ledger")
        await wait_for(pilot, lambda: str(readme) in ledger.keys_in_order())
        columns = [c.value for c in ledger.columns]
        assert str(ledger.get_row(str(readme))[columns.index("changed")]) == "no"
        await pilot.press("c")  # the changed ones only: the README is not among them yet
        assert str(readme) not in ledger.keys_in_order() and ledger.row_count == 3
        await pilot.press("c")
        assert str(readme) in ledger.keys_in_order()
        before = readme.stat().st_size
        readme.write_text("# webshop\n\nA small shop, now with a longer readme.\n")
        await pilot.press("r")
        await wait_for(pilot, lambda: str(ledger.get_row(str(readme))[columns.index("changed")]) == "yes")
        unchanged = [k for k in ledger.keys_in_order() if not app.screen.rows[k].file.changed]  # type: ignore[attr-defined]
        assert unchanged == []  # every row changed now; before, the unchanged one came last
        assert ledger.move_to(str(readme))
        await pilot.pause(0.1)
        text = detail(app, "#ledger-detail")
        assert "changed after the edit" in text
        assert f"at the edit: {before} Bytes" in text and f"now:         {readme.stat().st_size} Bytes" in text


async def test_overview_charts_the_journal_and_the_growth(tmp_path: Path) -> None:
    """A journal with removals over several days, and a live session whose output grows."""
    now = time.time()
    day = 86400
    for back, size in ((0, 3 << 20), (2, 5 << 20), (2, 1 << 20), (6, 8 << 20), (30, 99 << 20)):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - back * day))
        append({"time": stamp, "path": f"/tmp/x{back}", "kind": "temp", "bytes": size, "rule": "gc",
                "session": "s", "result": "removed"})
    append({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), "path": "/tmp/y", "kind": "temp",
            "bytes": 1 << 30, "rule": "gc", "session": "s", "result": "kept"})  # not freed: not counted
    grows = Path(os.environ["TMPDIR"]) / "tmp.Grows"
    grows.mkdir()
    (grows / "a").write_bytes(b"x" * 100_000)
    sessions = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "sessions"
    sessions.mkdir()
    (sessions / "9.json").write_text(json.dumps({"sessionId": "feedbeef-0000", "cwd": str(tmp_path)}))
    records = Path(os.environ["CLAUDETTO_HOME"]) / "gc" / "feedbeef-0000.json"
    records.parent.mkdir(parents=True)
    records.write_text(json.dumps({"records": [{"path": str(grows), "kind": "temp", "session": "feedbeef-0000",
                                                "time": now, "cwd": str(tmp_path)}]}))
    app = ClaudettoApp(poll_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        bars = screen.query_one(DayBars)
        await wait_for(pilot, lambda: bars.days)
        per_day = dict(bars.days)
        assert len(bars.days) == 14
        assert per_day[time.strftime("%Y-%m-%d", time.gmtime(now))] == 3 << 20
        assert per_day[time.strftime("%Y-%m-%d", time.gmtime(now - 2 * day))] == 6 << 20
        assert per_day[time.strftime("%Y-%m-%d", time.gmtime(now - 6 * day))] == 8 << 20
        assert sum(per_day.values()) == 17 << 20  # 30 days back is off the chart
        chart = str(bars.render())
        assert "17.0 MiB freed in 14 days" in chart and "█" in chart
        await wait_for(pilot, lambda: app.store.growth.get("feedbeef-0000"))
        (grows / "b").write_bytes(b"y" * 4_000_000)
        app.store.sample_growth()
        await wait_for(pilot, lambda: len(app.store.growth["feedbeef-0000"]) == 2)
        growing = screen.query_one("#growing", Table)
        await pilot.pause(0.1)
        row = [str(cell) for cell in growing.get_row(str(sessions / "9.json"))]
        assert row[0] == "feedbeef" and row[-2].startswith("+") and row[-1].strip().endswith("█")


async def test_finish_a_release_that_was_cut_short(box: Sandbox) -> None:
    checkout = box.project / ".claude" / "worktrees" / "quiet-fern-2b9e"
    assert checkouts.registry()[str(checkout)]["state"] == "cut_short"
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        listing = await checkouts_listed(pilot, app)
        assert "cut short" in str(listing.get_row(str(checkout)))
        assert listing.move_to(str(checkout))
        await wait_for(pilot, lambda: "r finishes the release" in detail(app, "#detail"))
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert app.screen.title_text.startswith("Finish the release of quiet-fern-2b9e")  # type: ignore[attr-defined]
        await answer(pilot, "y")
        await wait_for(pilot, lambda: "released" in str(listing.get_row(str(checkout))))
    assert not (checkout / "node_modules").exists() and (checkout / ".tmp" / "notes.md").is_file()
    assert checkouts.registry()[str(checkout)]["state"] == "released"


async def test_overview_opens_the_biggest_item_on_outputs(box: Sandbox) -> None:
    app = make_app(box)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        biggest = app.screen.query_one("#biggest", Table)
        await wait_for(pilot, lambda: biggest.row_count > 0)
        first = app.store.rows[biggest.keys_in_order()[0]]
        assert app.store.size(first) == max(app.store.size(v) or 0 for v in app.store.rows.values())
        biggest.focus()
        await pilot.press("o")
        await wait_for(pilot, lambda: app.current_mode == "outputs")
        await wait_for(pilot, lambda: app.screen.filter == first.path)  # type: ignore[attr-defined]
        assert table(app, "#outputs").keys_in_order() == [f"{first.rule}:{first.path}"]
