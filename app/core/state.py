"""claudetto's JSON state: read tolerant, write atomic, serialized by a lock.

Every state file (`gc/<session>.json`, `ledger.json`, `checkouts.json`) goes through here:
a writer takes an exclusive flock on `<file>.lock`, reads, changes, writes a temp file,
fsyncs it and renames it over the old one. A writer that cannot get the lock in time tries
again, at most LEDGER_WRITE_TRIES times. A corrupt file is moved aside (never deleted) and
the program goes on with an empty state.

It runs on the hook hot path, so it imports neither json (see fastjson), pathlib, typing
nor contextlib. Paths may be given as str or Path.
"""

from __future__ import annotations

import errno
import os
import time

from app.core import fastjson
from app.core.bounds import bound
from app.core.log import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

LOCK_WAIT_S = 2.0


class StateBusy(OSError):
    """The lock of a state file could not be had in time."""


def read_json(path: str | os.PathLike[str], default: Callable[[], Any]) -> Any:
    """The JSON in `path`, or `default()` when it is missing or corrupt (moved aside)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return default()
    except OSError as exc:
        log(f"state: cannot read {name}: {exc}")
        return default()
    try:
        return fastjson.loads(raw)
    except ValueError as exc:
        move_aside(name, f"not JSON ({exc})")
        return default()


def move_aside(name: str, why: str) -> None:
    aside = f"{name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    try:
        os.replace(name, aside)
        log(f"state: {name} is corrupt: {why}; moved aside to {aside}")
    except OSError as exc:
        log(f"state: {name} is corrupt: {why}; could not move it aside: {exc}")


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write `data` to `path` through a temp file in the same folder, fsync, rename."""
    name = os.fspath(path)
    folder, base = os.path.split(name)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    payload = fastjson.dumps(data).encode("utf-8", "surrogateescape")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class locked:  # noqa: N801 - used like a function: `with locked(path):`
    """Hold the exclusive flock of `path` (on `<path>.lock`), waiting at most `wait_s`."""

    def __init__(self, path: str | os.PathLike[str], wait_s: float | None = None) -> None:
        self.name = os.fspath(path)
        self.wait_s = LOCK_WAIT_S if wait_s is None else wait_s
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl  # a C extension (~0.2 ms): only writers pay for it, not a read-only prompt

        os.makedirs(os.path.dirname(self.name), exist_ok=True)
        fd = os.open(self.name + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        deadline = time.monotonic() + self.wait_s
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK) or time.monotonic() >= deadline:
                    os.close(fd)
                    if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise StateBusy(errno.EAGAIN, f"state file busy: {self.name}") from None
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        self.fd = fd

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing releases the lock
            self.fd = -1


def update_json(path: str | os.PathLike[str], change: Callable[[Any], Any], default: Callable[[], Any]) -> Any:
    """Read, change and write one state file under its lock; returns the written data.

    `change` gets the current data (or `default()`) and returns the new data; returning the
    same object after changing it in place is fine. A writer that lost the race for the lock
    tries again, at most LEDGER_WRITE_TRIES times; then it raises StateBusy.
    """
    tries = max(1, bound("LEDGER_WRITE_TRIES"))
    last: OSError | None = None
    for attempt in range(tries):
        try:
            with locked(path):
                data = change(read_json(path, default))
                write_json_atomic(path, data)
                return data
        except StateBusy as exc:
            last = exc
            log(f"state: lost the race for {os.fspath(path)} (try {attempt + 1} of {tries})")
    assert last is not None
    raise last


def remove_json_if(path: str | os.PathLike[str], condition: Callable[[Any], bool]) -> bool:
    """Delete a state file under its lock when `condition(data)` holds for what it holds now
    (a writer may have raced in since the caller looked). True when it was deleted."""
    name = os.fspath(path)
    with locked(name, wait_s=1.0):
        try:
            with open(name, "rb") as fh:
                data = fastjson.loads(fh.read())
        except FileNotFoundError:
            return False
        if not condition(data):
            return False
        os.unlink(name)
        return True

