"""Which detached job runs what. Each area adds its step here; steps run one after another
in one process, and one failing step is logged without stopping the next.

Only the detached child (`python -P -m app.core.jobs`) imports this table, so the sweeps it
names are loaded there and never by the hook that spawned it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.core import gc, hygiene, purge
from app.core.log import log

Step = Callable[[dict[str, Any]], None]


def _steps(*steps: Step) -> Step:
    """A job made of steps, each run whatever the one before it did."""

    def job(payload: dict[str, Any]) -> None:
        for step in steps:
            try:
                step(payload)
            except Exception as exc:  # noqa: BLE001 - one step's failure must not stop the rest
                log(f"jobs: step {step.__module__}.{step.__name__} failed: {type(exc).__name__}: {exc}")

    return job


JOBS: dict[str, Step] = {
    # SessionStart: the cleanup first (it judges Claude's temp folders as the session starts),
    # then the output GC with the starting session live, then a purge of whatever a killed
    # purge left in a trash.
    "session-start": _steps(hygiene.session_start_step, gc.session_start_step, purge.leftovers_step),
    # SessionEnd: the output GC, the ending session no longer counted as live.
    "session-end": _steps(gc.session_end_step),
    # remove() renamed a big tree into the trash: purge it. One purge runs at a time.
    purge.PURGE_JOB: _steps(purge.purge_step),
}
