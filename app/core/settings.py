"""Claude's layered settings, as far as claudetto needs them: `cleanupPeriodDays`.

Claude layers its settings files user < project < project local < managed (policy), a key
set in a higher layer winning; claudetto reads the same files in the same order (the
`--settings` of one session and server- or MDM-delivered policy are out of its sight). The
policy comes as `managed-settings.json` and the fragments of the `managed-settings.d/`
folder beside it (systemd-style drop-ins, one per team), each `*.json` there merged on top
of it in name order: a `cleanupPeriodDays` a fragment sets is the machine's.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.log import log

DEFAULT_CLEANUP_PERIOD_DAYS = 30
#: A larger value is no date offset (JavaScript dates, Claude's own, span 10^8 days either
#: side of 1970): Claude's cut-off date is then invalid and it removes nothing, so a larger
#: value (2**31, a "keep for ever") counts as this many days: nothing is that old.
MAX_CLEANUP_PERIOD_DAYS = 100_000_000


def settings_files(project: str | os.PathLike[str] | None = None) -> list[Path]:
    """The settings files in the order Claude layers them, the last one winning: user,
    project, project local, then the managed policy file and its fragments, which nothing
    overrides."""
    files = [paths.user_settings()]
    if project is not None:
        base = Path(project) / ".claude"
        files += [base / "settings.json", base / "settings.local.json"]
    managed = paths.managed_settings()
    return [*files, managed, *managed_fragments(managed)]


def managed_fragments(managed: Path) -> list[Path]:
    """The drop-in files of the policy (`managed-settings.d/*.json` beside `managed`) in the
    order Claude merges them, the last winning: by name, hidden files left out. A folder that
    cannot be listed is logged: its fragments are out of sight."""
    folder = managed.parent / "managed-settings.d"
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        log(f"settings: cannot list {folder}: {exc}")
        return []
    return [folder / name for name in names if name.endswith(".json") and not name.startswith(".")]


#: A settings file past this is not one a person wrote; it is not read.
SETTINGS_BYTES_MAX = 16 * 1024 * 1024


def read_settings(file: str | os.PathLike[str], limit: int | None = None) -> Any:
    """The JSON of one settings file, for every reader of Claude's settings.

    A symlink is followed (dotfile managers link settings.json), but the read never blocks
    and never runs away: a FIFO, a device or a folder in its place raises OSError without
    being read (a FIFO would hang the session-start cleanup for good), and so does a file
    past `limit` (SETTINGS_BYTES_MAX unless given). A UTF-8 BOM is allowed (editors write
    one); anything that is not JSON, nested too deeply included, raises ValueError.

    Except for a moment: Claude saves its settings files and `.claude.json` with a plain
    truncating write, no temp file and no rename, so read in that instant a good file is
    empty or half written. A file changed within the last SETTLE_S that reads as not JSON is
    read again until it settles (at most SETTLE_S): taken as broken, a longer
    `cleanupPeriodDays` would give way to the default, a folder added to a live session
    (`additionalDirectories`) or a project `.claude.json` lists would lose the protection it
    gives, and the cleanup would delete what the user asked to keep. A file broken for
    longer is judged at once."""
    from app.core import fastjson

    deadline = 0.0
    while True:
        try:
            return fastjson.loads(read_config_bytes(file, limit))
        except ValueError:
            import time

            deadline = deadline or time.monotonic() + SETTLE_S
            if time.monotonic() >= deadline or not _saved_just_now(file):
                raise
            time.sleep(0.02)


#: how long a settings file saved a moment ago that reads as not JSON is read again
SETTLE_S = 1.0


def _saved_just_now(file: str | os.PathLike[str]) -> bool:
    import time

    try:
        return time.time() - os.stat(file).st_mtime < SETTLE_S
    except OSError:
        return False


def read_config_bytes(file: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a config file, read as `read_settings` reads them: a symlink followed, a
    FIFO, device or folder in its place an OSError without being read, and so is a file past
    `limit` (SETTINGS_BYTES_MAX unless given)."""
    st = os.stat(file)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{os.fspath(file)} is not a regular file")
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the stat
            raise OSError(f"{os.fspath(file)} is not a regular file")
        limit = limit or SETTINGS_BYTES_MAX
        raw = fh.read(limit + 1)
    if len(raw) > limit:
        raise OSError(f"{os.fspath(file)} is longer than {limit} bytes")
    return raw


def cleanup_period_days(project: str | os.PathLike[str] | None = None) -> int:
    """`cleanupPeriodDays` from the layered settings: user, project, project local, managed.

    A missing file is silent; an unreadable file or a value that is not a positive whole
    number is logged and ignored, so the default of 30 days (or a lower layer) holds; a value
    above MAX_CLEANUP_PERIOD_DAYS counts as that maximum (keep everything).
    """
    days = DEFAULT_CLEANUP_PERIOD_DAYS
    for file in settings_files(project):
        try:
            data = read_settings(file)
        except FileNotFoundError:
            continue
        except OSError as exc:
            log(f"settings: cannot read {file}: {exc}; cleanupPeriodDays stays {days}")
            continue
        except ValueError as exc:
            log(f"settings: {file} is not JSON ({str(exc)[:200]}); cleanupPeriodDays stays {days}")
            continue
        if not isinstance(data, dict) or "cleanupPeriodDays" not in data:
            continue
        value = data["cleanupPeriodDays"]
        if not isinstance(value, bool) and isinstance(value, int | float) and value > MAX_CLEANUP_PERIOD_DAYS:
            days = MAX_CLEANUP_PERIOD_DAYS  # "keep for ever" (2**31, 1e400): no folder is that old
            continue
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not value >= 1 or value != int(value)):
            log(f"settings: {file} cleanupPeriodDays={value!r} is invalid; it stays {days}")
            continue
        days = int(value)
    return days


def cleanup_period_seconds(project: str | os.PathLike[str] | None = None) -> float:
    return cleanup_period_days(project) * 86400.0
