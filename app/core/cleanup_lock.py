"""One session-start cleanup removes at a time.

Two cleanups at once (two `claudetto clean`, a session start's beside them) judge the same
folders. A folder only one of them can move aside, but a gate log is journaled as removed
before it is unlinked: the one that lost the race to unlink it still counted it, and its
journal said it removed it too. So a cleanup that removes holds `CLAUDETTO_HOME/hygiene.lock`
(a dry run, which writes no state, takes none).

The lock is a POSIX record lock (`lockf`), not a `flock`: the measuring walk forks a helper,
which would share a `flock` and, its cleanup killed, hold it on until its walk ends, so the
next session start would find a cleanup running where none is. A record lock is the
process's own: no fork inherits it, and it goes with the process.
"""

from __future__ import annotations

import os
import time

from app.core import paths
from app.core.log import log


class one_at_a_time:  # noqa: N801 - used like a function: `with one_at_a_time(wait_s):`
    """Hold the cleanup's lock, waiting at most `wait_s`; StateBusy (one clear line) when
    another cleanup still holds it then. Without a state folder to lock in, the cleanup runs
    unlocked (logged): its removals keep everything then, having no journal either."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self.fd = -1

    def __enter__(self) -> None:
        import errno
        import fcntl

        from app.core.state import StateBusy, open_lock_file

        home = paths.claudetto_home_str()
        try:
            os.makedirs(home, exist_ok=True)
            fd = open_lock_file(os.path.join(home, "hygiene.lock"))
        except OSError as exc:
            log(f"hygiene: cannot take the cleanup's lock ({exc}); running without it")
            return
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.fd = fd
                return
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):  # no POSIX locks here (NFS without lockd)
                    log(f"hygiene: cannot take the cleanup's lock ({exc}); running without it")
                    os.close(fd)
                    return
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StateBusy("another cleanup is still running; try again when it ends") from None
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the lock
            self.fd = -1
