"""The lines a supersede pushed down. A correction is a new line below the struck one, so
every line number under it names the next line up once it is written: a second number read
from the same listing (`grep -n`, `claudetto memory`, another terminal) would strike a right
fact. The last supersede of each file is remembered with the file's state it left, so a bare
number below it is refused while the file is still exactly as that supersede left it.

Kept in claudetto's own state, never in memory; losing it only loses the guard.
"""

from __future__ import annotations

import json
import os

from app.core import paths
from app.core.log import log

RECORD_NAME = "memory-supersede-shifts.json"
RECORD_MAX = 64  # files: the oldest go first; a record only matters until the file changes
RECORD_BYTES_MAX = 256 * 1024

State = tuple[int, int, int]


def _record_path() -> str:
    return os.path.join(paths.claudetto_home_str(), RECORD_NAME)


def _load() -> dict[str, list[int]]:
    from app.core.state import read_regular

    try:
        data = json.loads(read_regular(_record_path(), limit=RECORD_BYTES_MAX))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:  # unreadable or nested too deeply: no guard, nothing else lost
        log(f"memory: {RECORD_NAME} unreadable ({type(exc).__name__}: {exc}); supersede guard reset")
        return {}
    if not isinstance(data, dict):
        log(f"memory: {RECORD_NAME} is not a JSON object; supersede guard reset")
        return {}
    return {file: entry for file, entry in data.items() if isinstance(entry, list) and len(entry) == 4
            and all(isinstance(n, int) and not isinstance(n, bool) for n in entry)}


def struck_last(real: str, state: State) -> int | None:
    """The line the last supersede of `real` struck, while `real` is still in the `state` it
    left (else None: the file was written since, so a number read now is read after it)."""
    entry = _load().get(real)
    return entry[3] if entry is not None and tuple(entry[:3]) == state else None


def remember(real: str, state: State, line: int) -> None:
    """Record that the supersede of line `line` left `real` in `state` (caller holds the lock)."""
    from app.core.state import write_atomic

    records = _load()
    records.pop(real, None)
    records[real] = [*state, line]
    kept = dict(list(records.items())[-RECORD_MAX:])
    try:
        write_atomic(_record_path(), json.dumps(kept).encode("utf-8"), durable=False)
    except OSError as exc:  # the correction is written; only the guard for a stale number is lost
        log(f"memory: cannot record the supersede of {real}: {exc}")
