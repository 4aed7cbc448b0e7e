"""Everything the sweeps judge, as one list of Verdicts (for the dashboard's Outputs screen).

A thin aggregator with no rule of its own: the output GC's plan (`app.core.gc.plan`) and
the session-start cleanup's plan (`app.core.hygiene.plan`) each judge their paths; this
module only turns both into Verdicts and puts them side by side. A sweep module that is
missing or fails is reported in `Judged.problems`, never raised, so the dashboard still
shows what the other one judged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.log import log
from app.core.verdict import Verdict

# GC report statuses (CONTRACT "JSON shapes", gc) -> Verdict actions
_GC_ACTIONS = {"would_remove": "remove", "removed": "remove", "kept": "keep", "skip": "skip", "missing": "missing"}


@dataclass(frozen=True)
class Judged:
    verdicts: list[Verdict]
    problems: list[str] = field(default_factory=list)  # one line per sweep that could not judge


def judge_all(projects: Sequence[str | os.PathLike[str]] | None = None,
              current_session: str | None = None) -> list[Verdict]:
    """Every path the GC and the cleanup judge, GC first (see `judge` for the problems)."""
    return judge(projects, current_session).verdicts


def judge(projects: Sequence[str | os.PathLike[str]] | None = None,
          current_session: str | None = None) -> Judged:
    """Verdicts of both sweeps (dry runs: nothing is removed, no state is written).

    `projects` defaults to every known project (CONTRACT "Known projects")."""
    verdicts: list[Verdict] = []
    problems: list[str] = []
    try:
        from app.core import gc

        verdicts.extend(gc_verdicts(gc.plan(current_session=current_session)))
    except Exception as exc:  # noqa: BLE001 - one sweep failing must not hide the other
        problems.append(f"output GC: {type(exc).__name__}: {exc}")
    try:
        from app.core import hygiene, paths

        chosen = list(projects) if projects is not None else paths.known_projects()
        report = hygiene.plan(chosen, current_session=current_session)
        verdicts.extend(report.verdicts)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"cleanup: {type(exc).__name__}: {exc}")
    for line in problems:
        log(f"outputs: {line}")
    return Judged(verdicts, problems)


def gc_verdicts(report: Any) -> list[Verdict]:
    """A GC report as Verdicts: its own `verdicts` when it has them, else one per entry."""
    own = getattr(report, "verdicts", None)
    if own is not None:
        return list(own)
    found = []
    for entry in getattr(report, "entries", []):
        if isinstance(entry, Verdict):
            found.append(entry)
            continue
        status = str(getattr(entry, "status", "kept"))
        found.append(
            Verdict(
                path=str(entry.path),
                kind=str(getattr(entry, "kind", "temp")),
                action=_GC_ACTIONS.get(status, "keep"),  # type: ignore[arg-type]
                reason=str(getattr(entry, "reason", "") or ""),
                rule="gc",
                root=str(getattr(entry, "root", "") or ""),
                size=getattr(entry, "size", None),
                session=getattr(entry, "session", None),
                mtime=getattr(entry, "mtime", None),
                project=getattr(entry, "project", None),
            )
        )
    return found
