"""The bounds of CONTRACT "Bounds", in one module; `CLAUDETTO_<NAME>` overrides each."""

from __future__ import annotations

import os

DEFAULTS: dict[str, int] = {
    "PROBE_MAX_AGE_MIN": 60,
    "SWEEP_TIMEOUT_MS": 60_000,
    "LEDGER_MAX_FILES": 200,
    "LEDGER_WRITE_TRIES": 5,
    "GC_MAX_AGE_DAYS": 7,
    "GC_MAX_BYTES": 5 * 1024**3,
}

#: 2**53: the largest whole number a float holds exactly.
CEILING = 2**53


def bound(name: str) -> int:
    """The value of one bound: the env override when it is a whole number >= 0, else the default.

    A bad override is ignored (the default holds) and logged once: a typo must not turn a guard
    off, and must not go unnoticed either. A huge one is cut to CEILING: it still means "no
    limit in practice", and every sum or product of it stays a float the sweeps can compare.
    """
    default = DEFAULTS[name]
    raw = os.environ.get(f"CLAUDETTO_{name}")
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0:
        _say(name, raw, f"is not a whole number >= 0; the default {default} holds")
    elif value == 0 and default:
        _say(name, raw, f"is in force (the default is {default}): no time, size or count at all")
    return min(value, CEILING) if value >= 0 else default


_SAID: set[str] = set()


def _say(name: str, raw: str, what: str) -> None:
    """Say once per process that an override was passed over (and what holds instead), or that a 0
    is in force: a user who set `CLAUDETTO_GC_MAX_AGE_DAYS=3d` learns why outputs stay seven days,
    one who set 0 why the GC took every unused output at once. An empty value is unset."""
    if not raw.strip() or name in _SAID:
        return
    _SAID.add(name)
    from app.core.log import log  # only on this path: bounds are read on the hook hot path

    log(f"bounds: CLAUDETTO_{name}={raw!r} {what}")


def all_bounds() -> dict[str, int]:
    """Every bound with its value in force (for `--json` reports and the help screen)."""
    return {name: bound(name) for name in DEFAULTS}
