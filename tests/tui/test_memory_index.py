"""The Memory screen's `i` on a topic file no MEMORY.md line names: a dialog shows the line,
`memory.add_to_index` appends it, the finding goes on the next sweep; no, a change in
between and --read-only each leave the index as it was. Checked on the disk as well as on
screen, on the sandbox's own memory rot. The dialog has its snapshot here too."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from app.core.paths import project_slug
from app.sandbox import Sandbox
from app.screens.confirm import ConfirmModal
from app.screens.supersede import SupersedeModal
from app.tui import ClaudettoApp
from app.widgets.table import Table
from tests.tui.conftest import answer, goto, notes, wait_for
from tests.tui.test_snapshots import SIZES, built, loaded, ready, snapbox  # noqa: F401 - fixtures used by name
from tests.tui.test_snapshots import make_app as snapshot_app

SIZE = (120, 36)
LINE = "- [Old notes](old-notes.md) — unlisted"


def index_of(box: Sandbox) -> Path:
    return box.config / "projects" / project_slug(box.project) / "memory" / "MEMORY.md"


def unlisted(app: ClaudettoApp) -> list[str]:
    return [k for k, f in app.screen.findings.items() if f.kind == "index_unlisted_file"]  # type: ignore[attr-defined]


async def ask_to_list(pilot: Any, app: ClaudettoApp) -> str:
    """On the Memory screen, `i` on the unlisted finding; the dialog's body once it shows."""
    await goto(pilot, "memory")
    findings = app.screen.query_one("#findings", Table)
    await wait_for(pilot, lambda: findings.row_count >= 5)
    [key] = unlisted(app)
    assert findings.move_to(key)
    await pilot.press("i")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmModal))
    return str(app.screen.query_one("#body").render())


async def test_i_adds_the_index_line_and_the_finding_goes(box: Sandbox) -> None:
    index = index_of(box)
    before = index.read_text()
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        body = await ask_to_list(pilot, app)
        assert LINE in body and "as line 4" in body
        assert index.read_text() == before  # asking writes nothing
        await answer(pilot, "y")
        await wait_for(pilot, lambda: index.read_text() != before)
        await wait_for(pilot, lambda: app.screen.swept is not None and not unlisted(app))  # type: ignore[attr-defined]
        assert "MEMORY.md line 4 now lists old-notes.md." in notes(app)
    assert index.read_text() == before + LINE + "\n"


async def test_i_on_a_dangling_line_strikes_it_through_supersede(box: Sandbox) -> None:
    index = index_of(box)
    before = index.read_text().splitlines()
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        findings = app.screen.query_one("#findings", Table)
        await wait_for(pilot, lambda: findings.row_count >= 5)
        [gone] = [k for k, f in app.screen.findings.items() if f.kind == "index_missing_file"]  # type: ignore[attr-defined]
        assert findings.move_to(gone)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(app.screen, SupersedeModal))
        await answer(pilot, "enter")  # the correction is written for you
        await wait_for(pilot, lambda: app.screen.swept is not None and not any(  # type: ignore[attr-defined]
            f.kind == "index_missing_file" for f in app.screen.findings.values()))  # type: ignore[attr-defined]
    today = time.strftime("%Y-%m-%d")
    assert index.read_text().splitlines() == [
        before[0], "- ~~[Deploy](deploy.md) — the deploy steps~~",
        f"- Correction ({today}): `deploy.md` no longer exists; this pointer is kept only as history.", *before[2:]]


async def test_no_writes_nothing(box: Sandbox) -> None:
    index = index_of(box)
    before = index.read_bytes()
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await ask_to_list(pilot, app)
        await answer(pilot, "n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        await pilot.pause(0.3)
        assert unlisted(app)
    assert index.read_bytes() == before


async def test_an_index_changed_while_the_dialog_was_open_is_left_alone(box: Sandbox) -> None:
    index = index_of(box)
    changed = index.read_text() + "- [Ops](ops.md) — written by Claude meanwhile\n"
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await ask_to_list(pilot, app)
        index.write_text(changed)
        await answer(pilot, "y")
        await wait_for(pilot, lambda: any("changed since the line was shown" in n for n in notes(app)))
    assert index.read_text() == changed


async def test_read_only_disables_it(box: Sandbox) -> None:
    index = index_of(box)
    before = index.read_bytes()
    app = ClaudettoApp(clock=lambda: box.now, poll_s=0.2, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "memory")
        findings = app.screen.query_one("#findings", Table)
        await wait_for(pilot, lambda: findings.row_count >= 5)
        assert findings.move_to(unlisted(app)[0])
        await pilot.press("i")
        await wait_for(pilot, lambda: any(n.startswith("Read-only") for n in notes(app)))
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ConfirmModal)
    assert index.read_bytes() == before


@SIZES
def test_index_line_modal(snapbox: Sandbox, snap_compare: Any, size: tuple[int, int]) -> None:  # noqa: F811
    async def before(pilot: Any) -> None:
        await ready(pilot, "memory")
        table = await loaded(pilot, "#findings")
        [key] = [k for k, f in pilot.app.screen.findings.items() if f.kind == "index_unlisted_file"]
        table.move_to(key)
        await pilot.press("i")
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmModal))
        await pilot.pause(0.3)

    assert snap_compare(snapshot_app(snapbox), terminal_size=size, run_before=before)
