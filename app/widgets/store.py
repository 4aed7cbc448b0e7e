"""The judged outputs every screen shares: verdicts keyed by rule and path, measured sizes,
marks. Judging and measuring run in thread workers; results come back as past-tense
Messages to the App, which hands them to `OutputStore.apply`, and screens hear of each
change through two signals (`changed`: the verdicts; `sized`: a size or the progress)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from textual.message import Message
from textual.signal import Signal
from textual.worker import get_current_worker

from app.core.outputs import Judged, judge
from app.core.sessions import Session, read_sessions
from app.core.verdict import Verdict

Judge = Callable[[], Judged]

# The size worker pauses this long every YIELD_EVERY entries, so the UI thread gets the GIL
# (without it a key waits ~1 s behind a 200,000-file scan; with it, bench/tui.py).
YIELD_EVERY = 256
PAUSE_S = 0.002


def key_of(verdict: Verdict) -> str:
    return f"{verdict.rule}:{verdict.path}"


@dataclass
class OutputsJudged(Message):
    judged: Judged


@dataclass
class SizesMeasured(Message):
    sizes: dict[str, int]  # path -> disk bytes
    done: int
    total: int
    files: int
    finished: bool = False
    cancelled: bool = False


@dataclass
class SessionsRead(Message):
    sessions: list[Session]


@dataclass
class SizeProgress:
    done: int = 0
    total: int = 0
    files: int = 0
    running: bool = False
    cancelled: bool = False


@dataclass
class OutputStore:
    app: object
    judge: Judge = field(default=judge)
    rows: dict[str, Verdict] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    marked: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    progress: SizeProgress = field(default_factory=SizeProgress)
    judged: bool = False
    sessions: list[Session] = field(default_factory=list)
    sessions_read: bool = False

    def __post_init__(self) -> None:
        self.changed: Signal[None] = Signal(self.app, "outputs-changed")  # type: ignore[arg-type]
        self.sized: Signal[None] = Signal(self.app, "outputs-sized")  # type: ignore[arg-type]
        self.sessions_changed: Signal[None] = Signal(self.app, "sessions-changed")  # type: ignore[arg-type]

    # --- what the screens read --------------------------------------------------------------

    def size(self, verdict: Verdict) -> int | None:
        return self.sizes.get(verdict.path, verdict.size)

    def total(self, action: str) -> int:
        """Disk bytes of the distinct paths with this action (a path judged twice counts once)."""
        seen: dict[str, int] = {}
        for verdict in self.rows.values():
            if verdict.action == action:
                seen[verdict.path] = self.size(verdict) or 0
        return sum(seen.values())

    def marked_total(self) -> int:
        return sum(self.size(self.rows[k]) or 0 for k in self.marked if k in self.rows)

    def owned_by(self, session_id: str | None) -> list[Verdict]:
        return [v for v in self.rows.values() if session_id and v.session == session_id]

    # --- work -------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Judge again in a thread worker (a running judge is replaced)."""
        self.app.run_worker(self._judge, thread=True, exclusive=True, group="judge",  # type: ignore[attr-defined]
                            name="judge outputs")

    def _judge(self) -> None:
        judged = self.judge()
        if not get_current_worker().is_cancelled:
            self.app.post_message(OutputsJudged(judged))  # type: ignore[attr-defined]

    def measure(self) -> None:
        """Fill in the sizes no sweep measured, in a thread worker with progress."""
        todo = sorted({v.path for v in self.rows.values() if v.size is None and v.path not in self.sizes})
        self.progress = SizeProgress(total=len(todo), running=bool(todo))
        if todo:
            self.app.run_worker(lambda: self._measure(todo), thread=True, exclusive=True,  # type: ignore[attr-defined]
                                group="sizes", name="measure sizes")

    def cancel_measure(self) -> bool:
        if not self.progress.running:
            return False
        self.app.workers.cancel_group(self.app, "sizes")  # type: ignore[attr-defined]
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
                    self.app.post_message(SizesMeasured(found, done - 1, len(todo), files, True, True))  # type: ignore[attr-defined]
                    return
                time.sleep(PAUSE_S)  # hand the GIL to the UI thread: a key is answered at once
                try:
                    step = next(scan)
                except StopIteration as stop:
                    tree = stop.value
                    found[path] = int(tree.disk)
                    files += int(tree.files)
                    break
                if time.monotonic() - last > 0.1:
                    last = time.monotonic()
                    self.app.post_message(SizesMeasured(found, done - 1, len(todo), files + int(step.files)))  # type: ignore[attr-defined]
                    found = {}
            if time.monotonic() - last > 0.1:
                last = time.monotonic()
                self.app.post_message(SizesMeasured(found, done, len(todo), files))  # type: ignore[attr-defined]
                found = {}
        self.app.post_message(SizesMeasured(found, len(todo), len(todo), files, True))  # type: ignore[attr-defined]

    def poll_sessions(self) -> None:
        """Read `sessions/` again in a thread worker (the App calls this every second)."""
        self.app.run_worker(self._read_sessions, thread=True, exclusive=True, group="sessions",  # type: ignore[attr-defined]
                            name="read sessions")

    def _read_sessions(self) -> None:
        found = read_sessions()
        if not get_current_worker().is_cancelled:
            self.app.post_message(SessionsRead(found))  # type: ignore[attr-defined]

    # --- results (main thread) --------------------------------------------------------------

    def apply_judged(self, message: OutputsJudged) -> None:
        self.rows = {key_of(v): v for v in message.judged.verdicts}
        self.problems = list(message.judged.problems)
        self.marked = {k for k in self.marked if k in self.rows and self.rows[k].removable}
        self.judged = True
        self.changed.publish(None)
        self.measure()

    def apply_sizes(self, message: SizesMeasured) -> None:
        if self.progress.cancelled and not message.cancelled:
            return
        self.sizes.update(message.sizes)
        self.progress = SizeProgress(message.done, message.total, message.files,
                                     running=not message.finished, cancelled=message.cancelled)
        self.sized.publish(None)

    def apply_sessions(self, message: SessionsRead) -> None:
        first = not self.sessions_read
        self.sessions_read = True
        if first or message.sessions != self.sessions:
            self.sessions = list(message.sessions)
            self.sessions_changed.publish(None)
