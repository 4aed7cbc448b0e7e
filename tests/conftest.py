"""Every test runs in a sandbox: HOME, CLAUDE_CONFIG_DIR, CLAUDE_CODE_TMPDIR, TMPDIR and
CLAUDETTO_HOME all point under tmp_path, and no CLAUDETTO_<BOUND> leaks in."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from app.core.bounds import DEFAULTS
from tests import support
from tests.support import SandboxEnv, make_sandbox


@pytest.fixture(scope="session", autouse=True)
def repo_templates(tmp_path_factory: pytest.TempPathFactory) -> None:
    """make_repo copies the repositories it made before from here (see make_repo)."""
    support.REPO_TEMPLATES = tmp_path_factory.mktemp("repo-templates")


@pytest.fixture(autouse=True)
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    env, variables = make_sandbox(tmp_path / "sb")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    for name in DEFAULTS:
        monkeypatch.delenv(f"CLAUDETTO_{name}", raising=False)
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    monkeypatch.delenv("CLAUDETTO_PYTHON", raising=False)
    for name in support._ELSEWHERE:  # a suite run from a git hook or `git bisect run`: git stays in tmp_path
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return env


@pytest.fixture
def live_pid() -> Iterator[int]:
    """A running process to name in a sessions file: a live session's Claude."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts (a shell in a folder, a server): all killed at its end."""
    running: list[subprocess.Popen[bytes]] = []
    yield running
    for proc in running:
        proc.kill()
        proc.wait()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """What is loaded by now (pytest, textual, hypothesis, every test module: ~70,000
    objects) lives as long as the worker: frozen, the collector no longer walks it, and a
    young generation of 10,000 objects makes the full walks rare. Each full walk cost ~0.15 s,
    a fifth of a dashboard test's CPU; nothing a test checks depends on when cycles go."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 100)


def _cpu() -> float:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """With CLAUDETTO_TEST_CPU=<file>, each test's CPU seconds (this process and the children
    it waited for, setup and teardown included) are appended to <file>: wall time on a shared
    machine says little of what a test costs."""
    import os

    out = os.environ.get("CLAUDETTO_TEST_CPU")
    if not out:
        return (yield)
    before = _cpu()
    result = yield
    with open(out, "a", encoding="utf-8") as f:
        f.write(f"{_cpu() - before:.3f}\t{item.nodeid}\n")
    return result


# --- the longest tests first -----------------------------------------------------------------
# The suite runs on two cores: a long test that starts near the end leaves a core idle while it
# runs alone. Each run keeps what each test cost (this machine's venv, not the repository); the
# next run starts the costliest first and ends with the cheap ones. The cost is its CPU and a
# fifth of its waits: tests that mostly wait (the dashboard's pauses) are not bunched at the
# start, where three of them at once would leave both cores idle.
DURATIONS = Path(__file__).resolve().parent.parent / ".venv" / "test-durations.json"
WAIT_SHARE = 0.2
_COST: dict[str, float] = {}
_STARTED = pytest.StashKey[float]()


def _read_durations() -> dict[str, float]:
    try:
        data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, (int, float))} \
        if isinstance(data, dict) else {}


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: object) -> None:
    """Every xdist worker orders its collection by the same costs, read once here: workers
    that collected in different orders could not share the work."""
    config = node.config  # type: ignore[attr-defined]
    if not hasattr(config, "_claudetto_durations"):
        config._claudetto_durations = _read_durations()
    node.workerinput["claudetto_durations"] = config._claudetto_durations  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Costliest first. Under xdist each worker starts with one contiguous share of the
    collection: the shares are packed here so that each holds whole units and about a third
    of the cost, each in its own costliest-first order."""
    worker = getattr(config, "workerinput", None)
    cost = worker.get("claudetto_durations", {}) if worker is not None else _read_durations()
    # A module whose tests share a module-scoped fixture (a day built once, a corpus) stays in
    # one block, costed as a whole, on one worker: scattered among the others, or dealt out to
    # every worker, its fixture was built again at each return to the module (ten builds of
    # 5 s where one does).
    shared = _modules_with_shared_fixtures(items)
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_unit(item, shared), []).append(item)
    for members in units.values():
        members.sort(key=lambda item: -cost.get(item.nodeid, 0.0))
    ordered = sorted(units.values(), key=lambda members: -sum(cost.get(i.nodeid, 0.0) for i in members))
    workers = int(worker.get("workercount", 1)) if worker is not None else 1
    shares = _pack(ordered, cost, workers) if workers > 1 else [ordered]
    items[:] = [item for share in shares for members in share for item in members]


def _share_sizes(count: int, workers: int) -> list[int]:
    """How many tests the work-stealing scheduler first sends each worker, in order: the
    pending tests divided evenly among the workers still to serve."""
    sizes = []
    for k in range(workers):
        sizes.append(count // (workers - k))
        count -= sizes[-1]
    return sizes


def _pack(units: list[list[pytest.Item]], cost: dict[str, float],
          workers: int) -> list[list[list[pytest.Item]]]:
    """The units in `workers` shares of exactly the scheduler's sizes, each unit whole, each
    share's cost as even as a greedy fill makes it (the units of many tests first, while
    every share has room for them; then the single tests, costliest first, to the cheapest
    share with room). A unit too big for any share's room is cut where it must be."""
    sizes = _share_sizes(sum(len(u) for u in units), workers)
    shares: list[list[list[pytest.Item]]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for members in sorted(units, key=lambda u: len(u) == 1):  # stable: costliest first in each kind
        while members:
            rooms = [k for k in range(workers) if sizes[k] > 0]
            fits = [k for k in rooms if sizes[k] >= len(members)] or rooms
            k = min(fits, key=lambda k: load[k])
            part, members = members[:sizes[k]], members[sizes[k]:]
            shares[k].append(part)
            sizes[k] -= len(part)
            load[k] += sum(cost.get(i.nodeid, 0.0) for i in part)
    for share in shares:  # the costliest first in each share; the cheap tail is what others steal
        share.sort(key=lambda part: -sum(cost.get(i.nodeid, 0.0) for i in part))
    return shares


def _modules_with_shared_fixtures(items: list[pytest.Item]) -> set[str]:
    """The modules that define a fixture of module scope (or wider than a test) themselves:
    a test may reach it through request.getfixturevalue, which its fixture list does not show."""
    if not items:
        return set()
    manager = items[0].session._fixturemanager
    every = getattr(manager, "_arg2fixturedefs", {})
    return {d.baseid for defs in every.values() for d in defs
            if d.scope in ("module", "class", "package") and d.baseid and d.baseid.endswith(".py")}


def _unit(item: pytest.Item, shared: set[str]) -> str:
    """The module's id when the test uses a fixture of module scope (or wider than the test,
    narrower than the session), or its module defines one, else the test's own."""
    module = item.nodeid.split("::", 1)[0]
    if module in shared:
        return module
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        if defs and defs[-1].scope in ("module", "class", "package"):
            return module
    return item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_STARTED] = _cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    """The teardown's report carries the test's CPU seconds to the controller."""
    report = yield
    if call.when == "teardown" and _STARTED in item.stash and isinstance(report, pytest.TestReport):
        report.user_properties.append(("cpu", round(_cpu() - item.stash[_STARTED], 3)))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if len(report.nodeid) > 500:  # some ids spell a generated megabyte: not worth keeping
        return
    cpu = next((v for k, v in report.user_properties if k == "cpu"), None)
    if not isinstance(cpu, (int, float)):  # setup and call: their wall time, until the teardown tells the CPU
        _COST[report.nodeid] = _COST.get(report.nodeid, 0.0) + report.duration
        return
    wall = _COST.get(report.nodeid, 0.0) + report.duration
    _COST[report.nodeid] = round(cpu + WAIT_SHARE * max(wall - cpu, 0.0), 3)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (or a run without workers) keeps the costs it saw, beside those of
    tests this run did not run."""
    if hasattr(session.config, "workerinput") or not _COST or not DURATIONS.parent.is_dir():
        return
    merged = {**_read_durations(), **_COST}
    part = DURATIONS.with_name(f"{DURATIONS.name}.{os.getpid()}")
    try:
        part.write_text(json.dumps(merged, sort_keys=True), encoding="utf-8")
        os.replace(part, DURATIONS)
    except OSError:
        part.unlink(missing_ok=True)
