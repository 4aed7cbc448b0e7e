"""What outside a session checkout still runs from it, though nothing in it is unique.

A merged, clean checkout may still be where something of the user's imports or runs from:
`pip install -e .` run in it with the main checkout's venv active (the project's `.venv` then
imports the package from the checkout's `src/`), `npm link` or `ln -s "$PWD/bin/tool"
~/.local/bin/tool`, a git hook `pre-commit install` wrote naming its venv's Python. Removing it
breaks the user's project or command: it is kept `in_use`, as the output GC keeps a temp
folder so named (the same reading of the user's places: `gc_records.OutsideNames`, with the
checkout's own project among them).
"""

from __future__ import annotations

import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.core.gc_records import OutsideNames

#: Seconds one reading of the user's places serves: a sweep judges many checkouts at once.
READING_S = 5.0
_reading: tuple[float, OutsideNames] | None = None


def named_from_outside(real: str, project: str) -> str | None:
    """The file of the user's places (the home, its folders, the known projects and `project`)
    that links into, installs from or names a path in the checkout `real`, or None. Logged."""
    from app.core.gc_records import OutsideNames

    global _reading
    now = time.monotonic()
    if _reading is None or now - _reading[0] > READING_S:
        _reading = (now, OutsideNames())
    return _reading[1].naming(real, [], (project,))
