"""The sandbox: a realistic Claude Code environment under one folder, for the tests and for
`claudetto --demo` (build.py builds it, content.py adds what each screen shows in every
state, demo.py runs one for the length of a process and removes it)."""

from app.sandbox.build import (
    DAY,
    LIVE_BUSY,
    LIVE_WAITING,
    MIB,
    OLD_GONE,
    STALE,
    STALE_PID,
    YOUNG_GONE,
    Sandbox,
    build_sandbox,
)
from app.sandbox.demo import (
    DEMO_MARKER,
    DEMO_PREFIX,
    DemoRun,
    demo_owner,
    make_demo_folder,
    remove_stale_demos,
)

__all__ = ["DAY", "DEMO_MARKER", "DEMO_PREFIX", "LIVE_BUSY", "LIVE_WAITING", "MIB", "OLD_GONE", "STALE", "STALE_PID",
           "YOUNG_GONE", "DemoRun", "Sandbox", "build_sandbox", "demo_owner", "make_demo_folder", "remove_stale_demos"]
