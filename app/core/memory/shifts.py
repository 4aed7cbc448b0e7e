"""The lines a supersede pushed down. A correction is a new line below the struck one, so
every line number under it names the next line up once it is written: a second number read
from the same listing (`grep -n`, `claudetto memory`, another terminal) would strike a right
fact. The last supersede of each file is remembered with the file's state it left, so a bare
number below it is refused while the file is still exactly as that supersede left it.

A listing (`claudetto memory`, the SessionStart context) names lines by number too, and
Claude edits memory in the same session: the text of each line a listing named is kept with
the file's state, so a bare number whose line no longer holds that text, in a file changed
since, is refused instead of striking whatever moved onto it.

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


LISTED_NAME = "memory-listed-lines.json"
LISTED_LINES_MAX = 200  # per file: a listing shows ten in the context, a user reads a screenful
LISTED_TEXT_MAX = 400  # characters kept of a line: enough to tell two lines apart


def listed(real: str, number: int) -> tuple[State, str] | None:
    """(the file's state then, the line's text then) when the last listing named line
    `number` of `real`, else None."""
    from app.core.state import read_regular

    try:
        entry = json.loads(read_regular(os.path.join(paths.claudetto_home_str(), LISTED_NAME),
                                        limit=RECORD_BYTES_MAX * 4)).get(real)
        state, lines = (int(entry[0]), int(entry[1]), int(entry[2])), entry[3]
        text = lines.get(str(number))
    except (OSError, ValueError, RecursionError, AttributeError, LookupError, TypeError):
        return None  # none, unreadable or not of this shape: no guard, nothing else lost
    return (state, text) if isinstance(text, str) else None


def remember_listed(files: dict[str, tuple[State, dict[int, str]]]) -> None:
    """Record the lines a listing named: real path -> (its state when read, line -> text).
    Under the state file's lock: two listings at once (a session start and the CLI) both land."""
    from app.core.state import update_json

    if not files:
        return

    def change(records: object) -> dict[str, object]:
        records = dict(records) if isinstance(records, dict) else {}
        for real, (state, lines) in files.items():
            records.pop(real, None)
            kept = sorted(lines.items())[:LISTED_LINES_MAX]
            records[real] = [*state, {str(n): text.strip()[:LISTED_TEXT_MAX] for n, text in kept}]
        return dict(list(records.items())[-RECORD_MAX:])

    try:
        update_json(os.path.join(paths.claudetto_home_str(), LISTED_NAME), change, dict, durable=False)
    except OSError as exc:  # the listing is shown anyway; only the guard for its numbers is lost
        log(f"memory: cannot record the lines listed: {exc}")
