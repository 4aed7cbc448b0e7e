"""THE age rule (CONTRACT "Definitions", Age): how old a path is, and how old is too old.

A path's age is now minus its own modification time: not the newest time of anything inside
it, not the time a record was written. It is old once its age is over the limit of its kind
(at the limit it is still young): session folders, gate logs and worktrees use Claude's
`cleanupPeriodDays` (`settings.cleanup_period_seconds`); probe folders PROBE_MAX_AGE_MIN;
outputs of the GC GC_MAX_AGE_DAYS.

An output of the GC whose mtime may be its source's (`cp -a`, `cp -p`, `rsync -a`, `tar -x`
made it or copied into it: the recorder marks it) counts from the later of its mtime and the
time it was recorded (`output_since`): a fresh copy of a two-year-old tree was made when the
session made it, and its GC_MAX_AGE_DAYS start then. A time in the future (the clock set
back since, an archive of future mtimes) is not old until the clock passes it.
"""

from __future__ import annotations

from app.core.bounds import bound

DAY_S = 86_400.0


def is_old(mtime: float | None, limit_s: float, now: float) -> bool:
    """Whether a path last modified at `mtime` is older than `limit_s` at `now`. An unknown
    modification time is never old: when unsure, keep."""
    return mtime is not None and now - mtime > limit_s


def output_since(mtime: float | None, recorded: list[float]) -> float | None:
    """When an output's age starts: its mtime, or the newest time it was recorded by a call
    that may have given it an older one (`recorded`) when that is later; a time that is no
    time (infinite, not a number: a spoiled record) plays no part. None: never old."""
    return None if mtime is None else max([mtime, *(t for t in recorded if abs(t) < float("inf"))])


def probe_limit_s() -> float:
    """How old a file watcher's probe folder may get (PROBE_MAX_AGE_MIN)."""
    return bound("PROBE_MAX_AGE_MIN") * 60.0


def output_limit_s() -> float:
    """How old a recorded output may get before the GC takes it (GC_MAX_AGE_DAYS)."""
    return bound("GC_MAX_AGE_DAYS") * DAY_S

