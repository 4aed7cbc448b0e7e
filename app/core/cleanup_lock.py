"""One session-start cleanup removes at a time.

Two cleanups at once (two `claudetto clean`, a session start's beside them) judge the same
folders. A folder only one of them can move aside, but a gate log is journaled as removed
before it is unlinked: the one that lost the race to unlink it still counted it, and its
journal said it removed it too. So a cleanup that removes holds `CLAUDETTO_HOME/hygiene.lock`
(a dry run, which writes no state, takes none).
"""

from __future__ import annotations

from app.core import paths
from app.core.log import log


class one_at_a_time:  # noqa: N801 - used like a function: `with one_at_a_time(wait_s):`
    """Hold the cleanup's lock, waiting at most `wait_s`; StateBusy (one clear line) when
    another cleanup still holds it then. Without a state folder to lock in, the cleanup runs
    unlocked (logged): its removals keep everything then, having no journal either."""

    def __init__(self, wait_s: float) -> None:
        from app.core.state import locked

        self.lock = locked(paths.claudetto_home() / "hygiene", wait_s=wait_s)
        self.held = False

    def __enter__(self) -> None:
        from app.core.state import StateBusy

        try:
            self.lock.__enter__()
            self.held = True
        except StateBusy:
            raise StateBusy("another cleanup is still running; try again when it ends") from None
        except OSError as exc:
            log(f"hygiene: cannot take the cleanup's lock ({exc}); running without it")

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.lock.__exit__(*exc)
