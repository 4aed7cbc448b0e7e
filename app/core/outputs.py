"""Everything the sweeps judge, as one list of Verdicts (for the dashboard's Outputs screen).

A thin aggregator with no rule of its own: the output GC's plan (`app.core.gc.plan`) and
the session-start cleanup's plan (`app.core.hygiene.plan`) each judge their paths and answer
with Verdicts; this module puts them side by side. A sweep that fails is reported in
`Judged.problems`, never raised, so the dashboard still shows what the other one judged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.core.log import log
from app.core.verdict import Verdict


@dataclass(frozen=True)
class Judged:
    verdicts: list[Verdict]
    problems: list[str] = field(default_factory=list)  # one line per sweep that could not judge


def judge(projects: Sequence[str | os.PathLike[str]] | None = None,
          current_session: str | None = None) -> Judged:
    """Verdicts of both sweeps, the GC's first (dry runs: nothing is removed, no state is
    written). `projects` defaults to every known project (CONTRACT "Known projects")."""
    verdicts: list[Verdict] = []
    problems: list[str] = []
    try:
        from app.core import gc

        verdicts.extend(gc.plan(current_session=current_session).entries)
    except Exception as exc:  # noqa: BLE001 - one sweep failing must not hide the other
        problems.append(f"output GC: {type(exc).__name__}: {exc}")
    try:
        from app.core import hygiene, paths

        chosen = list(projects) if projects is not None else paths.known_projects()
        verdicts.extend(hygiene.plan(chosen, current_session=current_session).verdicts)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"cleanup: {type(exc).__name__}: {exc}")
    for line in problems:
        log(f"outputs: {line}")
    return Judged(verdicts, problems)
