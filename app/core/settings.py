"""Claude's layered settings, as far as claudetto needs them: `cleanupPeriodDays`."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from app.core import paths
from app.core.log import log

DEFAULT_CLEANUP_PERIOD_DAYS = 30


def settings_files(project: str | os.PathLike[str] | None = None) -> list[Path]:
    """The settings files in the order Claude layers them, the last one winning."""
    files = [paths.user_settings()]
    if project is not None:
        base = Path(project) / ".claude"
        files += [base / "settings.json", base / "settings.local.json"]
    return files


def cleanup_period_days(project: str | os.PathLike[str] | None = None) -> int:
    """`cleanupPeriodDays` from the layered settings: user, project, project local.

    A missing file is silent; an unreadable file or a value that is not a whole number >= 1
    is logged and ignored, so the default of 30 days (or a lower layer) holds.
    """
    days = DEFAULT_CLEANUP_PERIOD_DAYS
    for file in settings_files(project):
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as exc:
            log(f"settings: cannot read {file}: {exc}; cleanupPeriodDays stays {days}")
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            log(f"settings: {file} is not JSON ({exc}); cleanupPeriodDays stays {days}")
            continue
        if not isinstance(data, dict) or "cleanupPeriodDays" not in data:
            continue
        value = data["cleanupPeriodDays"]
        if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
                or value < 1 or value != int(value)):
            log(f"settings: {file} cleanupPeriodDays={value!r} is invalid; it stays {days}")
            continue
        days = int(value)
    return days


def cleanup_period_seconds(project: str | os.PathLike[str] | None = None) -> float:
    return cleanup_period_days(project) * 86400.0
