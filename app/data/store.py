"""What every screen shares: the judged outputs (verdicts keyed by rule and path, measured
sizes, marks), the sessions, and how fast each live session's outputs grow.

Judging, measuring, reading `sessions/` and sampling growth run in thread workers; each
worker hands its result straight back to the store on the UI thread (`call_from_thread`),
and screens hear of a change through three signals (`changed`: the verdicts or the marks;
`sized`: a size or the progress; `sessions_changed`). Nothing here draws.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.signal import Signal
from textual.worker import Worker, get_current_worker

from app.core.outputs import Judged, judge
from app.core.sessions import Session, read_sessions
from app.core.verdict import Verdict

Judge = Callable[[], Judged]

# The size worker pauses this long every YIELD_EVERY entries, so the UI thread gets the GIL
# (without it a key waits ~1 s behind a 200,000-file scan; with it, bench/tui.py).
YIELD_EVERY = 256
PAUSE_S = 0.002
# Growth: one sample of each live session's outputs every GROWTH_EVERY_S, the last
# GROWTH_SAMPLES kept (10 minutes); a sample that cannot finish in GROWTH_BUDGET_S is dropped
# (a partial size would draw a dip that never happened).
GROWTH_EVERY_S = 10.0
GROWTH_SAMPLES = 60
GROWTH_BUDGET_S = 2.0


def key_of(verdict: Verdict) -> str:
    return f"{verdict.rule}:{verdict.path}"


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def live_places(sessions: list[Session]) -> set[tuple[str | None, str | None]]:
    """What of the sessions a verdict depends on: which are live, and where they work."""
    return {(s.session_id, s.cwd) for s in sessions if s.live}


@dataclass
class SizeProgress:
    done: int = 0
    total: int = 0
    files: int = 0
    running: bool = False
    cancelled: bool = False


class Store:
    """The app's one store; screens read it and subscribe to its signals."""

    def __init__(self, app: App[Any], judge_outputs: Judge = judge) -> None:
        self.app = app
        self.judge = judge_outputs
        self.rows: dict[str, Verdict] = {}
        self.sizes: dict[str, int] = {}
        self.marked: set[str] = set()
        self.problems: list[str] = []
        self.progress = SizeProgress()
        self.judged = False
        self.sessions: list[Session] = []
        self.sessions_read = False
        self.growth: dict[str, list[tuple[float, int]]] = {}  # live session -> (time, bytes)
        # paths the dashboard removed: the GC's records name them until its next sweep, and
        # a judge meanwhile calls them `missing`; such a row is not shown again
        self.gone: set[str] = set()
        self._owned: dict[str, list[Verdict]] | None = None  # session -> its verdicts, made on demand
        self.changed: Signal[None] = Signal(app, "outputs-changed")
        self.sized: Signal[None] = Signal(app, "outputs-sized")
        self.sessions_changed: Signal[None] = Signal(app, "sessions-changed")

    # --- what the screens read --------------------------------------------------------------

    def size(self, verdict: Verdict) -> int | None:
        return self.sizes.get(verdict.path, verdict.size)

    def total(self, action: str) -> int:
        """Disk bytes of the distinct paths with this action (a path judged twice counts once)."""
        from app.data.removals import kept_paths

        held = kept_paths(self.rows.values()) if action == "remove" else {}  # what one rule keeps stays
        seen: dict[str, int] = {}
        for verdict in self.rows.values():
            if verdict.action == action and verdict.path not in held:
                seen[verdict.path] = self.size(verdict) or 0
        return sum(seen.values())

    def marked_paths(self) -> dict[str, Verdict]:
        """Each marked path once, with the first of its marked rows: a folder two rules judge
        (a worktree the GC recorded, a session folder) is one row of each, one thing to remove."""
        paths: dict[str, Verdict] = {}
        for key in sorted(self.marked):
            if key in self.rows:
                paths.setdefault(self.rows[key].path, self.rows[key])
        return paths

    def marked_total(self) -> int:
        return sum(self.size(v) or 0 for v in self.marked_paths().values())

    @property
    def found_nothing(self) -> bool:
        """No Claude Code data at all: no session file, nothing any sweep judges."""
        return self.judged and not self.rows and self.sessions_read and not self.sessions

    def session_of(self, verdict: Verdict) -> str | None:
        """The session a verdict belongs to: its own, else the live session working inside it
        (a worktree that is a live session's cwd is that session's, though nothing recorded it)."""
        if verdict.session:
            return verdict.session
        if verdict.kind != "worktree":
            return None
        for session in self.sessions:
            if session.live and session.session_id and session.cwd and inside(session.cwd, verdict.path):
                return session.session_id
        return None

    def owned_by(self, session_id: str | None) -> list[Verdict]:
        """The verdicts of one session (an index made once per change of rows or sessions:
        2,000 live sessions over 2,000 rows must not cost 4 million looks)."""
        if not session_id:
            return []
        if self._owned is None:
            self._owned = {}
            for verdict in self.rows.values():
                owner = self.session_of(verdict)
                if owner:
                    self._owned.setdefault(owner, []).append(verdict)
        return list(self._owned.get(session_id, ()))

    # --- work -------------------------------------------------------------------------------

    def start(self, poll_s: float) -> None:
        """Read the sessions now and every `poll_s`, judge once, sample growth from now on."""
        self.poll_sessions()
        self.refresh()
        self.app.set_interval(poll_s, self.poll_sessions, name="poll sessions")
        self.app.set_interval(GROWTH_EVERY_S, self.sample_growth, name="sample growth")

    def hand_back(self, callback: Callable[..., object], *args: Any) -> None:
        """Run `callback(*args)` on the UI thread, from a worker; dropped when the app is gone."""
        if get_current_worker().is_cancelled:
            return
        try:
            self.app.call_from_thread(callback, *args)
        except RuntimeError:  # the app stopped meanwhile: nobody is left to show it
            pass

    def refresh(self) -> None:
        """Judge again in a thread worker (a running judge is replaced)."""
        self.app.run_worker(self._judge, thread=True, exclusive=True, group="judge", name="Judging the outputs",
                            exit_on_error=False)

    def _judge(self) -> None:
        self.hand_back(self.apply_judged, self.judge())

    def measure(self) -> None:
        """Fill in the sizes no sweep measured, in a thread worker with progress."""
        # every judgement measures again what the sweeps did not (a size kept from the last one
        # shows meanwhile): a folder that grew or lost its scratch since must not keep its old size
        todo = sorted({v.path for v in self.rows.values() if v.size is None})
        self.sizes = {path: size for path, size in self.sizes.items() if path in todo}
        self.progress = SizeProgress(total=len(todo), running=bool(todo))
        if todo:
            self.app.run_worker(lambda: self._measure(todo), thread=True, exclusive=True,
                                group="sizes", name="Measuring sizes", exit_on_error=False)

    def cancel_measure(self) -> bool:
        if not self.progress.running:
            return False
        self.app.workers.cancel_group(self.app, "sizes")
        self.progress.running = False
        self.progress.cancelled = True
        self.sized.publish(None)
        return True

    def _measure(self, todo: list[str]) -> None:
        from app.core.scanner import scan_iter

        worker = get_current_worker()
        found: dict[str, int] = {}
        files, last = 0, time.monotonic()
        for done, path in enumerate(todo, 1):
            if not os.path.lexists(path):
                continue
            scan = scan_iter(path, every=YIELD_EVERY)
            while True:
                if worker.is_cancelled:
                    return
                time.sleep(PAUSE_S)  # hand the GIL to the UI thread: a key is answered at once
                try:
                    step = next(scan)
                except StopIteration as stop:
                    found[path] = int(stop.value.disk)
                    files += int(stop.value.files)
                    break
                if time.monotonic() - last > 0.1:
                    last = time.monotonic()
                    self.hand_back(self.apply_sizes, found, SizeProgress(done - 1, len(todo), files + int(step.files),
                                                                          running=True))
                    found = {}
            if time.monotonic() - last > 0.1:
                last = time.monotonic()
                self.hand_back(self.apply_sizes, found, SizeProgress(done, len(todo), files, running=True))
                found = {}
        self.hand_back(self.apply_sizes, found, SizeProgress(len(todo), len(todo), files))

    def poll_sessions(self) -> None:
        """Read `sessions/` again in a thread worker (every `poll_s`)."""
        self.app.run_worker(self._read_sessions, thread=True, exclusive=True, group="sessions",
                            name="Reading the sessions", exit_on_error=False)

    def _read_sessions(self) -> None:
        self.hand_back(self.apply_sessions, read_sessions())

    def sample_growth(self) -> None:
        """Measure what each live session made, in a thread worker (GROWTH_EVERY_S)."""
        owned = {s.session_id: sorted({v.path for v in self.owned_by(s.session_id)})
                 for s in self.sessions if s.live and s.session_id}
        if owned:
            self.app.run_worker(lambda: self._sample(owned), thread=True, exclusive=True,
                                group="growth", name="Sampling growth", exit_on_error=False)

    def _sample(self, owned: dict[str, list[str]]) -> None:
        from app.core.scanner import scan

        sizes: dict[str, int] = {}
        for session_id, folders in owned.items():
            trees = [scan(path, budget_s=GROWTH_BUDGET_S) for path in folders if os.path.lexists(path)]
            if not any(tree.partial for tree in trees):
                sizes[session_id] = sum(tree.disk for tree in trees)
        self.hand_back(self.apply_growth, time.time(), sizes)

    # --- results (UI thread) ----------------------------------------------------------------

    def apply_judged(self, judged: Judged) -> None:
        self.rows = {key_of(v): v for v in judged.verdicts if not (v.action == "missing" and v.path in self.gone)}
        self._owned = None
        self.problems = list(judged.problems)
        from app.data.removals import kept_paths

        held = kept_paths(self.rows.values())
        self.marked = {k for k in self.marked if k in self.rows and self.rows[k].path not in held}
        self.judged = True
        self.changed.publish(None)
        self.measure()
        if not self.growth:
            self.sample_growth()  # the first point of each sparkline, without waiting

    def apply_sizes(self, sizes: dict[str, int], progress: SizeProgress) -> None:
        if self.progress.cancelled:
            return
        self.sizes.update(sizes)
        self.progress = progress
        self.sized.publish(None)

    def apply_sessions(self, sessions: list[Session]) -> None:
        first = not self.sessions_read
        self.sessions_read = True
        if first or sessions != self.sessions:
            live_before = live_places(self.sessions)
            self.sessions = list(sessions)
            self._owned = None
            self.sessions_changed.publish(None)
            if not first and self.judged and live_places(sessions) != live_before:
                # a session that ended keeps nothing now, one that started keeps its folders:
                # the verdicts (`keep: live`) follow within the poll, as the CLI's would
                self.refresh()

    def apply_growth(self, at: float, sizes: dict[str, int]) -> None:
        for session_id, size in sizes.items():
            self.growth[session_id] = [*self.growth.get(session_id, []), (at, size)][-GROWTH_SAMPLES:]
        for gone in set(self.growth) - {s.session_id for s in self.sessions if s.live}:
            del self.growth[gone]
        self.sized.publish(None)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """A store worker raised: say so, and leave nothing waiting on it (a judge that
        failed leaves the last verdicts; a measure that failed stops its progress)."""
        error = worker.error
        self.app.notify(f"{worker.name} failed: {type(error).__name__}: {error}", title="Something went wrong",
                        severity="error", timeout=10)
        if worker.group == "judge":
            self.judged = True
            self.changed.publish(None)
        elif worker.group == "sizes":
            self.progress = SizeProgress(self.progress.done, self.progress.total, self.progress.files)
            self.sized.publish(None)

    def forget(self, removed: list[str]) -> None:
        """Drop the rows of paths a removal took, at once (not at the next judge)."""
        self.gone.update(removed)
        self.rows = {k: v for k, v in self.rows.items() if v.path not in self.gone}
        self._owned = None
        self.marked &= set(self.rows)
        self.changed.publish(None)
