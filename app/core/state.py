"""claudetto's JSON state: read tolerant, write atomic, serialized by a lock.

Every state file (`gc/<session>.json`, `ledger.json`, `checkouts.json`) goes through here:
a writer takes an exclusive flock on `<file>.lock`, reads, changes, writes a temp file,
fsyncs it and renames it over the old one. A writer that cannot get the lock in time tries
again, at most LEDGER_WRITE_TRIES times. A corrupt file is moved aside (never deleted) and
the program goes on with an empty state.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from app.core.bounds import bound
from app.core.log import log

T = TypeVar("T")

LOCK_WAIT_S = 2.0


class StateBusy(OSError):
    """The lock of a state file could not be had in time."""


def read_json(path: Path, default: Callable[[], T]) -> T | Any:
    """The JSON in `path`, or `default()` when it is missing or corrupt (moved aside)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return default()
    except OSError as exc:
        log(f"state: cannot read {path}: {exc}")
        return default()
    try:
        return json.loads(raw)
    except ValueError as exc:
        _move_aside(path, f"not JSON ({exc})")
        return default()


def _move_aside(path: Path, why: str) -> None:
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    try:
        os.replace(path, aside)
        log(f"state: {path} is corrupt: {why}; moved aside to {aside}")
    except OSError as exc:
        log(f"state: {path} is corrupt: {why}; could not move it aside: {exc}")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write `data` to `path` through a temp file in the same folder, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    payload = json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False).encode("utf-8", "surrogateescape")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        try:
            os.write(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def locked(path: Path, wait_s: float | None = None) -> Iterator[None]:
    """Hold the exclusive flock of `path` (on `<path>.lock`), waiting at most `wait_s`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + (LOCK_WAIT_S if wait_s is None else wait_s)
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                if time.monotonic() >= deadline:
                    raise StateBusy(errno.EAGAIN, f"state file busy: {path}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def update_json(path: Path, change: Callable[[Any], Any], default: Callable[[], Any]) -> Any:
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
            log(f"state: lost the race for {path} (try {attempt + 1} of {tries})")
    assert last is not None
    raise last
