"""Which detached job runs what. Each area adds its step here; steps run one after another
in one process, and one failing step is logged without stopping the next."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.core.log import log

Step = Callable[[dict[str, Any]], None]


def _steps(*names: str) -> Callable[[dict[str, Any]], None]:
    """A job made of steps named `module:function`, imported only when the job runs."""

    def job(payload: dict[str, Any]) -> None:
        import importlib

        for name in names:
            module_name, func_name = name.split(":")
            try:
                step: Step = getattr(importlib.import_module(module_name), func_name)
                step(payload)
            except Exception as exc:  # noqa: BLE001 - one step's failure must not stop the rest
                log(f"jobs: step {name} failed: {type(exc).__name__}: {exc}")

    return job


JOBS: dict[str, Callable[[dict[str, Any]], None]] = {
    # SessionStart: the hygiene cleanup (issue 5), then the GC sweep (issue 4).
    "session-start": _steps(
        "app.core.hygiene:session_start_step",
        "app.core.gc:session_start_step",
        # a trash left by a killed purge: start a purge (issue 3)
        "app.core.removal:leftovers_step",
    ),
    # SessionEnd: the GC sweep with the ending session not counted as live (issue 4).
    "session-end": _steps(
        "app.core.gc:session_end_step",
    ),
    # remove() renamed a big tree into the trash: purge it (issue 3). One runs at a time.
    "purge-trash": _steps(
        "app.core.removal:purge_step",
    ),
}
