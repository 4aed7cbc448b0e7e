"""The edit ledger's look at the disk: what a file holds now, read only when its stat
moved (see `ledger_entry` for when a stat stands for the content), and then hashed.

Imported by an edit, and by a prompt only when some file needs a look: a prompt with
nothing changed never loads it, nor the hash. It imports os, stat and time (loaded by the
interpreter anyway) and nothing else of the stdlib; `mmap` only for a long file.
"""

from __future__ import annotations

import os
import stat
import time

from app.core import fnv
from app.core.ledger_entry import SIG_KEYS, racy, same_sig, sig

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _thread import LockType
    from collections.abc import Callable
    from typing import Any

# Files longer than this are not read on the hot path (about 0.3 s with C, 3 s without).
MAX_HASH_BYTES_C = 256 * 1024 * 1024
MAX_HASH_BYTES_PY = 32 * 1024 * 1024

# Files read at the same time by one look at several (see `look_all`).
LOOK_THREADS = 4

# From this length a file is read into anonymous memory in 2 MiB pages rather than into a
# bytes object of 4 KiB pages: for 10 MB, ~3 ms less of the ~5 ms the read costs besides the
# copy (fewer page faults, and the hash walks 5 pages instead of 2,500). Below it the bytes
# object is as cheap, and the `mmap` module is not loaded.
BIG_READ_BYTES = 4 * 1024 * 1024

class Look:
    """What is on disk at a path: a file (hash None when too large to read), or nothing."""

    __slots__ = ("kind", "hash", "sig", "fresh")

    def __init__(self, kind: str, digest: str | None, sig: dict[str, int] | None, fresh: bool) -> None:
        self.kind = kind  # "file" | "deleted" | "unreadable"
        self.hash = digest
        self.sig = sig  # the stat the hash belongs to, with seen_ns
        self.fresh = fresh  # the sig was taken now (not a stored one reused)


_DELETED = Look("deleted", None, None, False)
_UNREADABLE = Look("unreadable", None, None, False)


# --- the look ---------------------------------------------------------------------------------


def look_all(jobs: list[tuple[str, list[tuple[dict[str, Any], str]]]]) -> list[Look]:
    """`look(path, known)` of each job, in order, several at once: the C hash lets go of
    the GIL, so ten changed 1 MiB files take the time of five on two cores. At most
    LOOK_THREADS files are read at a time (each read holds its whole file in memory).
    An exception of one look is raised here, after the others finished."""
    threads = min(_cores(), LOOK_THREADS, len(jobs))
    if threads < 2:
        return [look(path, known) for path, known in jobs]
    import _thread  # built in and loaded at start: `threading` would cost ~1 ms

    results: list[Look | BaseException | None] = [None] * len(jobs)
    todo = iter(range(len(jobs)))
    taking = _thread.allocate_lock()

    def work() -> None:
        while True:
            with taking:
                i = next(todo, None)
            if i is None:
                return
            try:
                results[i] = look(*jobs[i])
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
                results[i] = exc

    finished = [_start(work) for _ in range(threads - 1)]
    work()
    for done in finished:
        if done is not None:
            done.acquire()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [result for result in results if isinstance(result, Look)]


def _start(work: Callable[[], None]) -> LockType | None:
    """Run `work` in a new thread; a lock that is released when it is done, or None when
    no thread could be started (the caller's own thread does the work then)."""
    import _thread

    done = _thread.allocate_lock()
    done.acquire()

    def run() -> None:
        try:
            work()
        finally:
            done.release()

    try:
        _thread.start_new_thread(run, ())
    except RuntimeError:  # no thread to be had (a limit): fewer hands, same work
        done.release()
        return None
    return done


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS has no affinity
        return os.cpu_count() or 1


def look(path: str, known: list[tuple[dict[str, Any], str]]) -> Look:
    """Stat first; when the stat equals a stored one (and is not racy), its hash holds
    without reading the file. Otherwise read and hash it."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return _DELETED
    except (OSError, ValueError):
        return _UNREADABLE
    if not stat.S_ISREG(st.st_mode):
        return _DELETED
    for stored, digest in known:
        if same_sig(stored, sig(st, 0)) and not racy(stored):
            return Look("file", digest, {k: stored[k] for k in (*SIG_KEYS, "seen_ns")}, False)
    return read_and_hash(path)


def read_and_hash(path: str) -> Look:
    """Open, fstat (before reading, so a write during the read shows up as a moved stat
    next time), read, hash."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return _DELETED
    except (OSError, ValueError):
        return _UNREADABLE
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _DELETED
        seen = sig(st, time.time_ns())
        if st.st_size > MAX_HASH_BYTES_PY and (st.st_size > MAX_HASH_BYTES_C or not fnv.c_available()):
            return Look("file", None, seen, True)
        if st.st_size < BIG_READ_BYTES:
            return Look("file", fnv.hex64(fnv.fnv1a_64(_read_all(fd))), seen, True)
        return Look("file", _hash_big(fd, st.st_size), seen, True)
    except OSError:
        return _UNREADABLE
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    with open(fd, "rb", buffering=0, closefd=False) as fh:
        return fh.read()


def _hash_big(fd: int, size: int) -> str:
    """The hash of a long file, read into anonymous memory asked for in huge pages (see
    BIG_READ_BYTES). Never a map of the file itself: a concurrent truncation (a formatter's
    PostToolUse hook rewriting the file) would kill the hook with SIGBUS mid-hash."""
    import mmap

    with mmap.mmap(-1, size + 1, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS) as buf:
        try:
            buf.madvise(mmap.MADV_HUGEPAGE)
        except (AttributeError, OSError):  # no huge pages here (macOS, a kernel without THP)
            pass
        view = memoryview(buf)
        try:
            got = 0
            while got <= size:
                n = os.readv(fd, [view[got:]])
                if not n:
                    break
                got += n
            if got > size:  # it grew while being read: all of it, as a short file is read
                os.lseek(fd, 0, os.SEEK_SET)
                return fnv.hex64(fnv.fnv1a_64(_read_all(fd)))
            return fnv.hex64(fnv.fnv1a_64(view[:got]))
        finally:
            view.release()
