"""The console scripts' entry (`claudetto`, `claudetto-gc`): claudetto's own `app` first.

A console script imports its target from `sys.path`, where PYTHONPATH comes before
site-packages: with a `.` there (common in a shell profile), a project's own `app/` package
would run instead of claudetto's, its code and then a traceback. This module's name is
claudetto's alone, so it is the one installed; it binds `app` from its own folder before
anything imports it, and every `app.*` module then comes from that package's `__path__`.
"""

from __future__ import annotations

import os
import sys


def _own_app() -> None:
    if "app" in sys.modules:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    try:
        import app  # noqa: F401 - bound in sys.modules before anything imports it from the path
    finally:
        sys.path.remove(here)


def main() -> int:
    _own_app()
    from app.cli import main as run

    return run()


def gc_main() -> int:
    _own_app()
    from app.cli import gc_main as run

    return run()
