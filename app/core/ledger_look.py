"""The edit ledger's look at the disk: what a file holds now, read as rarely as it can be.

A file's stat (size, mtime_ns, ctime_ns, inode, device) stands for its content: a program
can set an mtime back but never a ctime, so a stat equal to the one a hash was taken with
means the same bytes, and the file is not read again. Except a racy stat: one taken less
than RACY_NS after the file's own mtime/ctime cannot prove it (a later write in the same
timestamp tick would leave it equal, git's "racy clean"), so such a file is checked by hash
until its stat is old enough.

On the hot path of every prompt and edit: os, stat and time (loaded by the interpreter
anyway) and nothing else of the stdlib. The hash is imported only when a file is read: a
prompt with nothing changed needs none.
"""

from __future__ import annotations

import os
import stat
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

# A stat taken less than this after the file's own mtime/ctime cannot prove that the
# content is unchanged (see the module's doc).
RACY_NS = 2_000_000_000

# Files longer than this are not read on the hot path (about 0.3 s with C, 3 s without).
MAX_HASH_BYTES_C = 256 * 1024 * 1024
MAX_HASH_BYTES_PY = 32 * 1024 * 1024

SIG_KEYS = ("size", "mtime_ns", "ctime_ns", "inode", "dev")


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


# --- the hash, imported when a file is read (a prompt with nothing changed reads none) ------


def fnv1a_64(data: bytes | bytearray | memoryview) -> int:
    from app.core.fnv import fnv1a_64 as hash_of

    return hash_of(data)


def hex64(value: int) -> str:
    from app.core.fnv import hex64 as shown_as

    return shown_as(value)


def c_available() -> bool:
    from app.core.fnv import c_available as available

    return available()


# --- the stat -------------------------------------------------------------------------------


def unmoved(path: str, entry: Mapping[str, Any]) -> bool:
    """True when the file's stat now equals the one the entry's hash was taken with, and that
    one was old enough to trust: the content is the entry's, known without a read. The check
    each unchanged file costs at every prompt, so it is one stat and one expression."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    return (st.st_size == entry["size"] and st.st_mtime_ns == entry["mtime_ns"]
            and st.st_ctime_ns == entry["ctime_ns"] and st.st_ino == entry["inode"]
            and st.st_dev == entry["dev"] and stat.S_ISREG(st.st_mode)
            and entry["seen_ns"] - max(entry["mtime_ns"], entry["ctime_ns"]) >= RACY_NS)


def sig(st: os.stat_result, seen_ns: int) -> dict[str, int]:
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "dev": st.st_dev,
        "seen_ns": seen_ns,
    }


def same_sig(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in SIG_KEYS)


def racy(stored: Mapping[str, Any]) -> bool:
    """True when the stat was taken too soon after the file's last change to trust it."""
    try:
        return int(stored["seen_ns"]) - max(int(stored["mtime_ns"]), int(stored["ctime_ns"])) < RACY_NS
    except (KeyError, TypeError, ValueError, OverflowError):
        return True


# --- the look ---------------------------------------------------------------------------------


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
        if st.st_size > MAX_HASH_BYTES_PY and (st.st_size > MAX_HASH_BYTES_C or not c_available()):
            return Look("file", None, seen, True)
        with open(fd, "rb", buffering=0, closefd=False) as fh:
            data = fh.read()
        return Look("file", hex64(fnv1a_64(data)), seen, True)
    except OSError:
        return _UNREADABLE
    finally:
        os.close(fd)
