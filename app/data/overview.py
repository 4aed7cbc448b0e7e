"""The Overview screen's data: what can go now by kind, the biggest items, the space freed
per day (from the removal journal, `journal.freed_per_day`), and how fast each live
session's outputs grow (the store's samples). Plain functions over plain data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from app.core.verdict import Verdict

DAYS = 14
DAY_S = 86400


@dataclass(frozen=True)
class KindTotal:
    kind: str
    count: int
    size: int


def reclaimable_by_kind(verdicts: Iterable[Verdict], size_of: dict[str, int | None]) -> list[KindTotal]:
    """What a sweep would remove now, per kind, largest first (a path counted once, and only
    when no rule keeps it)."""
    from app.data.removals import kept_paths

    verdicts = list(verdicts)
    totals: dict[str, tuple[int, int]] = {}
    seen: set[str] = set(kept_paths(verdicts))
    for verdict in verdicts:
        if verdict.action != "remove" or verdict.path in seen:
            continue
        seen.add(verdict.path)
        count, size = totals.get(verdict.kind, (0, 0))
        totals[verdict.kind] = (count + 1, size + (size_of.get(verdict.path) or 0))
    return sorted((KindTotal(k, c, s) for k, (c, s) in totals.items()), key=lambda t: (-t.size, t.kind))


def biggest_items(verdicts: Iterable[Verdict], size: Callable[[Verdict], int | None], count: int) -> list[Verdict]:
    """The `count` biggest paths, each once: a folder two rules judge (a worktree the GC recorded
    is also a checkout) is one item, shown with a rule that keeps it when one does, as a removal
    of it would end."""
    from app.data.removals import one_per_path

    return one_per_path(sorted(verdicts, key=lambda v: (-(size(v) or 0), v.path, v.action == "remove")))[:count]


def freed_days(per_day: dict[str, int], now: float, days: int = DAYS) -> list[tuple[str, int]]:
    """The last `days` days up to `now` (UTC dates, oldest first), each with the bytes the
    journal says were removed that day (0 for a day without removals)."""
    today = int(now // DAY_S)
    return [(day, per_day.get(day, 0))
            for day in (time.strftime("%Y-%m-%d", time.gmtime((today - back) * DAY_S)) for back in range(days - 1, -1, -1))]


def read_freed_per_day() -> dict[str, int]:
    """"YYYY-MM-DD" -> bytes removed that day, from the journal (a worker calls this)."""
    from app.core.journal import freed_per_day

    return freed_per_day()


def growth_rate(samples: list[tuple[float, int]]) -> float | None:
    """Bytes per minute over the samples (first to last), None with fewer than two."""
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return None
    (t0, b0), (t1, b1) = samples[0], samples[-1]
    return (b1 - b0) / (t1 - t0) * 60
