"""TUI tests run on the sandbox builder's environment, with the clock frozen at build time.

The sandbox is built once per worker and copied for each test (`cp -a`: the same folders,
files, git repositories, worktrees, links and mtimes), at the one path it was built at, so
every absolute path inside it (git's worktree links, session files, records, the ledger,
the checkout registry, the slugs of project folders) holds as built. Only its live sessions
are made anew for each test: real processes, named by session files as the builder writes
them. A test may change its copy as it likes; the next test gets a fresh one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from app.core.bounds import DEFAULTS
from app.core.sessions import proc_start_time
from app.sandbox import Sandbox, build_sandbox
from app.sandbox.build import _Builder
from app.sandbox.content import CHILD, growing_output
from app.screens import confirm
from app.screens.outputs import OutputsScreen
from app.widgets.progress import WorkLine
from app.widgets.table import Table
from tests.support import make_sandbox


def _share_parsed_css() -> None:
    """Every app a test starts parses the same stylesheets again (~10% of a pilot test's CPU,
    and again on each theme or variable change): one worker keeps what it parsed, keyed by
    the CSS and the variables it was parsed with, as each Stylesheet keeps it for itself."""
    from textual.css.stylesheet import Stylesheet

    own = Stylesheet._parse_rules
    parsed: dict[tuple[Any, ...], Any] = {}

    def shared(self: Stylesheet, css: str, read_from: Any, is_default_rules: bool = False,
               tie_breaker: int = 0, scope: str = "") -> Any:
        key = (css, read_from, is_default_rules, tie_breaker, scope, tuple(self._variables.items()))
        if key not in parsed:
            parsed[key] = own(self, css, read_from, is_default_rules, tie_breaker, scope)
        return parsed[key]

    Stylesheet._parse_rules = shared  # type: ignore[method-assign]


_share_parsed_css()

# the key of each screen (app/tui.py SCREENS)
KEYS = {"overview": "1", "sessions": "2", "outputs": "3", "checkouts": "4", "ledger": "5", "memory": "6"}
SCALE = 0.25
#: How long a question takes no answer in these tests (app/screens/confirm.py GUARD_S): each
#: answer waits for it as a person would (`answer`), briefly; test_typeahead_guard.py runs the
#: real one.
TEST_GUARD_S = 0.05


@pytest.fixture(autouse=True)
def short_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confirm, "GUARD_S", TEST_GUARD_S)


def point_at(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in box.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(box.home)


@contextmanager
def as_in_a_test(base: Path) -> Iterator[None]:
    """The environment the autouse `sandbox` fixture gives a test, for a fixture of a wider
    scope (set up before it): nothing of the machine's own reaches a sandbox being built."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _env, variables = make_sandbox(base / "sb")
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        for name in [*(f"CLAUDETTO_{bound}" for bound in DEFAULTS), "CLAUDE_PLUGIN_DATA", "CLAUDETTO_PYTHON"]:
            monkeypatch.delenv(name, raising=False)
        monkeypatch.chdir(base)
        yield


@dataclass(frozen=True)
class Pristine:
    """The built sandbox (its children ended), kept aside as `saved`; each test's copy goes
    back to `box.root`, the path it was built at. `live` lists its live sessions' pids, in
    the builder's order."""

    box: Sandbox
    saved: Path
    live: tuple[int, ...]


@pytest.fixture(scope="session")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Pristine:
    base = tmp_path_factory.mktemp("tui-box")
    with as_in_a_test(base):
        built = build_sandbox(base / "box", scale=SCALE)
    live = tuple(child.pid for child in built.children)
    built.close()
    saved = base / "pristine"
    os.rename(built.root, saved)
    return Pristine(built, saved, live)


_USED = count()


def same_outputs(records: Path) -> None:
    """A copy is a new file or folder to the evidence a record keeps (device, inode, birth
    time): the records of the copy name what the copy holds, as if it had been made there."""
    from app.core.created import birth_time

    for file in records.glob("*.json"):
        data = json.loads(file.read_text(encoding="utf-8"))
        for record in data.get("records", []):
            evidence = record.get("evidence")
            if not isinstance(evidence, dict) or not os.path.lexists(record["path"]):
                continue
            st = os.lstat(record["path"])
            evidence.update(dev=st.st_dev, ino=st.st_ino)
            born = birth_time(record["path"])
            if "born" in evidence:
                evidence["born"] = born
            if "since" in evidence and born is not None:
                evidence.update(since=born - 1, until=born + 1)
        file.write_text(json.dumps(data), encoding="utf-8")


def fresh_copy(pristine: Pristine) -> Sandbox:
    """A copy of the pristine sandbox at its own path, with live sessions of its own: a real
    process for each, and its session file renamed and rewritten for it."""
    root = pristine.box.root
    if os.path.lexists(root):  # the last test's copy: set aside (pytest removes its basetemp)
        os.rename(root, root.with_name(f"used-{next(_USED)}"))
    subprocess.run(["cp", "-a", str(pristine.saved), str(root)], check=True)
    box = replace(pristine.box, env=dict(pristine.box.env), children=[], notes=list(pristine.box.notes))
    same_outputs(Path(box.env["CLAUDETTO_HOME"]) / "gc")
    sessions = box.config / "sessions"
    try:
        builder = _Builder(box, SCALE)
        for old_pid in pristine.live:
            old = sessions / f"{old_pid}.json"
            record = json.loads(old.read_text(encoding="utf-8"))
            old.unlink()  # first: the new process may have the old one's pid
            child = subprocess.Popen([sys.executable, "-c", CHILD, *growing_output(builder, record["sessionId"])],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            box.children.append(child)
            record.update(pid=child.pid, procStart=proc_start_time(child.pid))
            (sessions / f"{child.pid}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    except BaseException:
        box.close()
        raise
    return box


@pytest.fixture
def box(pristine: Pristine, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A sandbox with real live processes, pointed at by the environment."""
    sandbox = fresh_copy(pristine)
    point_at(sandbox, monkeypatch)
    try:
        yield sandbox
    finally:
        sandbox.close()


async def settle(pilot: Any, app: Any, *, sizes: bool = True, timeout: float = 30.0) -> None:
    """Wait until the outputs are judged (and measured) and the sessions read."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        store = app.store
        if store.judged and store.sessions_read and not (sizes and store.progress.running):
            await pilot.pause(0.05)
            return
    raise AssertionError("the app did not settle in time")


async def wait_for(pilot: Any, check: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not met in time")


async def goto(pilot: Any, mode: str) -> None:
    """Show a screen by its key, as a user would, and wait until it is the current one."""
    await pilot.press(KEYS[mode])
    await wait_for(pilot, lambda: pilot.app.current_mode == mode and pilot.app.screen.is_mounted)
    await pilot.pause()


def notes(app: Any) -> list[str]:
    """The notifications the app showed, oldest first."""
    return [n.message for n in app._notifications]  # noqa: SLF001 - what the user saw


async def answerable(pilot: Any, timeout: float = 30.0) -> Any:
    """Wait for a question (a ConfirmModal or a SupersedeModal) that takes an answer now: shown,
    painted and past its guard, as when a person has read it. Returns it."""
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, confirm.GuardedModal) and pilot.app.screen.answerable(),
                   timeout)
    return pilot.app.screen


async def answer(pilot: Any, *keys: str, timeout: float = 30.0) -> None:
    """Answer the question on screen with `keys`, once it takes an answer (`answerable`)."""
    await answerable(pilot, timeout)
    await pilot.press(*keys)


def make_app(box: Sandbox) -> Any:
    """The dashboard on the sandbox, its clock the sandbox's, polling five times a second."""
    from app.tui import ClaudettoApp

    return ClaudettoApp(clock=lambda: box.now, poll_s=0.2)


def work_text(app: Any) -> str:
    """The progress line of the screen shown."""
    return str(app.screen.query_one(WorkLine).text)


def journal_lines(box: Sandbox) -> list[dict[str, Any]]:
    """The removals journal of the sandbox, one entry a line, oldest first."""
    path = box.state / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


async def outputs_rows(pilot: Any, app: Any) -> Table:
    """Outputs shown and settled: its table."""
    await goto(pilot, "outputs")
    await settle(pilot, app)
    return app.screen.query_one("#outputs", Table)


async def mark_rows(pilot: Any, app: Any, *keys: str) -> Table:
    """On Outputs, as a person: the cursor on each row of `keys` in turn and `space`. The table."""
    table = await outputs_rows(pilot, app)
    for key in keys:
        assert table.move_to(key)
        await pilot.pause()
        await pilot.press("space")
    return table


async def remove_on_outputs(pilot: Any, app: Any, key: str) -> tuple[str, str, str]:
    """On Outputs, as a person: the row `key` marked, `d`, `y`, until the line says it ended.
    What the person saw: the row's text, the question's and the line's at the end."""
    table = await outputs_rows(pilot, app)
    assert table.move_to(key)
    row = " ".join(cell.plain for cell in table.get_row(key))
    await pilot.pause()
    await pilot.press("space", "d")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, confirm.ConfirmModal))
    shown = str(app.screen.query_one("#body").render())
    await answer(pilot, "y")
    await wait_for(pilot, lambda: isinstance(app.screen, OutputsScreen) and not app.screen.working
                   and "freed" in work_text(app), timeout=60)
    return row, shown, work_text(app)


def old_output_beside(box: Sandbox, name: str, neighbour: str, session: str) -> tuple[Path, Path]:
    """A month-old output folder `$TMPDIR/<name>` that `session` recorded, and beside it the
    user's folder `$TMPDIR/<neighbour>` (holding `mine.txt`), as old."""
    from tests.support import add_record

    odd = box.user_tmp / name
    odd.mkdir()
    (odd / "blob.bin").write_bytes(b"b" * 20_000)
    plain = box.user_tmp / neighbour
    plain.mkdir()
    (plain / "mine.txt").write_text("the user's\n")
    add_record(session, odd, kind="temp")
    old = box.now - 40 * 86400
    for folder in (odd, plain):
        os.utime(folder, (old, old))
    return odd, plain


@dataclass(frozen=True)
class BeforeRemoval:
    """What the sandbox held before a removal was asked: the names in its $TMPDIR, and how
    long the journal was."""

    box: Sandbox
    names: list[str]
    journaled: int

    @classmethod
    def of(cls, box: Sandbox) -> BeforeRemoval:
        return cls(box, sorted(p.name for p in box.user_tmp.iterdir()), len(journal_lines(box)))

    def names_now(self) -> list[str]:
        return sorted(p.name for p in self.box.user_tmp.iterdir())

    def removed(self) -> list[str]:
        """The paths journaled removed since."""
        return [e["path"] for e in journal_lines(self.box)[self.journaled:] if e["result"] == "removed"]


async def ask_to_remove(pilot: Any, app: Any, *keys: str) -> confirm.ConfirmModal:
    """On Outputs, as a person: the rows `keys` marked (`mark_rows`), then `d`. The question."""
    await mark_rows(pilot, app, *keys)
    await pilot.press("d")
    await wait_for(pilot, lambda: isinstance(app.screen, confirm.ConfirmModal))
    return app.screen


async def remove_on_checkouts(pilot: Any, app: Any, checkout: Path) -> None:
    """On Checkouts, as a person: the cursor on `checkout`'s row once it is listed, then `d`."""
    await goto(pilot, "checkouts")
    listing = app.screen.query_one("#checkouts", Table)
    await wait_for(pilot, lambda: str(checkout) in listing.keys_in_order())
    assert listing.move_to(str(checkout))
    await pilot.pause()
    await pilot.press("d")
