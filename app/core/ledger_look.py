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
    from typing import Any

# Files longer than this are not read on the hot path (about 0.3 s with C, 3 s without).
MAX_HASH_BYTES_C = 256 * 1024 * 1024
MAX_HASH_BYTES_PY = 32 * 1024 * 1024

# From this length a file is read into anonymous memory in 2 MiB pages rather than into a
# bytes object of 4 KiB pages: for 10 MB, ~3 ms less CPU (5 page faults instead of 2,500,
# and the hash walks 5 pages); what is left is the kernel zeroing the memory and the copy.
# Below it the bytes object is as cheap, and the `mmap` module is not loaded.
BIG_READ_BYTES = 4 * 1024 * 1024

# Files to read at one prompt are read two at a time from this many bytes in all (below it a
# thread costs more than it saves), unless one is longer than PARALLEL_MAX_BYTES: two of those
# at once would hold twice the memory one read does.
PARALLEL_MIN_BYTES = 2 * 1024 * 1024
PARALLEL_MAX_BYTES = 64 * 1024 * 1024


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


def look(path: str, known: list[tuple[dict[str, Any], str]]) -> Look:
    """Stat first; when the stat equals a stored one (and is not racy), its hash holds
    without reading the file. Otherwise read and hash it."""
    first = _by_stat(path, known)
    return first if isinstance(first, Look) else read_and_hash(path)


def _by_stat(path: str, known: list[tuple[dict[str, Any], str]]) -> Look | int:
    """What the stat alone tells (nothing there, no regular file, a stored stat that still
    holds), else the file's size: it must be read."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return _DELETED
    except (OSError, ValueError) as exc:
        return _DELETED if _loop(exc) else _UNREADABLE
    if not stat.S_ISREG(st.st_mode):
        return _DELETED
    for stored, digest in known:
        if same_sig(stored, sig(st, 0)) and not racy(stored):
            return Look("file", digest, {k: stored[k] for k in (*SIG_KEYS, "seen_ns")}, False)
    return st.st_size


def look_ahead(wanted: list[tuple[str, list[tuple[dict[str, Any], str]]]], deadline_ns: int) -> dict[str, Look]:
    """The looks at several files, the reads two at a time where that pays: many long files
    changed at once (a branch switched, a formatter run over the tree). The C hash lets go
    of the interpreter's lock while it runs (cffi), and FNV-1a is one serial chain a file, so
    a second core halves the wait. Files taken after `deadline_ns` are left out (the caller
    judges them, or leaves them for the next prompt, as it would have)."""
    ahead: dict[str, Look] = {}
    sizes: list[tuple[int, str]] = []
    for path, known in wanted:
        first = _by_stat(path, known)
        if isinstance(first, Look):
            ahead[path] = first
        else:
            sizes.append((first, path))
    if (len(sizes) < 2 or sum(size for size, _ in sizes) < PARALLEL_MIN_BYTES
            or max(size for size, _ in sizes) > PARALLEL_MAX_BYTES or _cores() < 2
            or not fnv.c_available()):
        return ahead  # the caller reads them one by one, as the pure-Python hash holds the lock
    queue = [path for _, path in sorted(sizes)]  # longest first (taken from the end)
    import _thread  # `threading` would cost a hook ~2 ms to import

    done = _thread.allocate_lock()
    done.acquire()

    def second() -> None:
        try:
            _take(queue, deadline_ns, ahead)
        except BaseException:  # noqa: BLE001 - a file this thread missed is read by the caller
            pass
        finally:
            done.release()

    _thread.start_new_thread(second, ())
    _take(queue, deadline_ns, ahead)
    done.acquire()
    return ahead


def _cores() -> int:
    """The cores this process may run on (macOS has no affinity: all of them)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def _take(queue: list[str], deadline_ns: int, ahead: dict[str, Look]) -> None:
    """Read and hash files from `queue` until it is empty or the deadline passed."""
    while queue and time.monotonic_ns() <= deadline_ns:
        try:
            path = queue.pop()  # one bytecode under the interpreter's lock: each path is taken once
        except IndexError:
            return
        ahead[path] = read_and_hash(path)


def read_and_hash(path: str) -> Look:
    """Open, fstat (before reading, so a write during the read shows up as a moved stat
    next time), read, hash."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return _DELETED
    except (OSError, ValueError) as exc:
        return _DELETED if _loop(exc) else _UNREADABLE
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _DELETED
        seen = sig(st, time.time_ns())
        if st.st_size > MAX_HASH_BYTES_PY and (st.st_size > MAX_HASH_BYTES_C or not fnv.c_available()):
            return Look("file", None, seen, True)
        if st.st_size < BIG_READ_BYTES:
            data = _read_all(fd, st.st_size, MAX_HASH_BYTES_PY)
            return Look("file", fnv.hex64(fnv.fnv1a_64(data)) if data is not None else None, seen, True)
        return Look("file", _hash_big(fd, st.st_size), seen, True)
    except OSError:
        return _UNREADABLE
    finally:
        os.close(fd)


def _loop(exc: Exception) -> bool:
    """The path is a symlink loop now (the file, or a folder on its way, made a link to
    itself): no file is there, as for a dangling link. Read as unreadable, its change would
    never be told, and every prompt would log it again."""
    import errno

    return isinstance(exc, OSError) and exc.errno == errno.ELOOP


def _read_all(fd: int, size: int, limit: int) -> bytes | None:
    """The file from where `fd` stands to its end, or None once that is more than `limit`
    bytes: a file that grows while it is read (a log appended to, a sparse image extended)
    is no longer the file that was stat'ed, and one grown faster than it is read would keep
    the hook reading, and holding it all, until Claude kills it or memory runs out."""
    chunks: list[bytes] = []
    total, want = 0, size + 1  # one read for a file that kept its size, one more to see its end
    while total <= limit:
        chunk = os.read(fd, min(want, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        want = 1 << 20
    return None


def _hash_big(fd: int, size: int) -> str | None:
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
            if got > size:  # it grew while being read: all of it, as a short file is read, or too long
                os.lseek(fd, 0, os.SEEK_SET)
                data = _read_all(fd, size, MAX_HASH_BYTES_C if fnv.c_available() else MAX_HASH_BYTES_PY)
                return fnv.hex64(fnv.fnv1a_64(data)) if data is not None else None
            return fnv.hex64(fnv.fnv1a_64(view[:got]))
        finally:
            view.release()
