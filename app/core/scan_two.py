"""The rest of a big tree read by two processes: this one and one forked helper, both taking
pieces of the tree from one queue.

Reading a tree is mostly system calls, and on 2 cores two readers beat one by ~1.8x (threads
do not: the GIL). The folders still to read are cut into pieces that both readers take from
one queue, the shallowest (likely the biggest) first, so that neither waits for the other at
the end. Hard links seen by both are counted once; a helper that dies is replaced by this
process reading its pieces again.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
from collections.abc import Iterable

from app.core.scan_tally import Tally
from app.core.scan_walk import NEVER, drain, walk

PARALLEL = hasattr(os, "fork") and (os.cpu_count() or 1) > 1
PIECES = 64  # at least this many pieces, when the tree has them
MAX_PIECES = 2_048  # the queue (4 bytes a piece) is written before anyone reads it: 8 KiB fits
# the smallest pipe buffer among the systems claudetto runs on (16 KiB on macOS, 64 KiB on Linux)


class _Queue:
    """The pieces still to read: a pipe holding each piece's number (4 bytes), written before
    the fork. A read of 4 bytes from a pipe is never split, so each piece goes to exactly
    one reader."""

    def __init__(self, pieces: list[list[str]], fd: int) -> None:
        self.pieces = pieces
        self.fd = fd
        self.taken: list[int] | None = None  # the pieces this reader took, when it keeps count

    def take(self, into: list[str]) -> bool:
        """Put the next piece on `into`; False when the queue is empty."""
        try:
            got = os.read(self.fd, 4)
        except OSError:
            return False
        if len(got) != 4:
            return False
        index = int.from_bytes(got, "little")
        if self.taken is not None:
            self.taken.append(index)
        into.extend(reversed(self.pieces[index]))  # the piece's first folder is read first
        return True


def finish_in_two(top: str, tally: Tally, stack: list[str], dev: int | None,
                  deadline: float | None) -> str:
    """Read the rest of the tree (the folders on `stack`) with a forked helper; the status.

    The helper inherits everything it needs and only reads the tree, counts and writes its
    totals (no import, no lock, the garbage collector off), so a fork from a process with
    other threads (the dashboard's workers, the cleanup's helper) is safe; it leaves with
    `os._exit`."""
    if len(stack) < PIECES:  # too few pieces to share well: read the shallowest ones first
        status = drain(walk(top, tally, stack, dev, deadline, None, NEVER, spread=PIECES))
        if status != "paused":
            return status
    if len(stack) < 2:
        return drain(walk(top, tally, stack, dev, deadline, None, NEVER))
    per = -(-len(stack) // MAX_PIECES)
    pieces = [stack[i:i + per] for i in range(0, len(stack), per)]
    stack.clear()
    queue = _queue(pieces)
    if queue is None:
        return _read_pieces(top, tally, pieces, range(len(pieces)), dev, deadline)
    try:
        return _share(top, tally, queue, dev, deadline)
    finally:
        os.close(queue.fd)


def _queue(pieces: list[list[str]]) -> _Queue | None:
    """Every piece's number in a pipe (None when no pipe can be made)."""
    try:
        queue_r, queue_w = os.pipe()
    except OSError:
        return None
    try:
        try:
            write_all(queue_w, b"".join(i.to_bytes(4, "little") for i in range(len(pieces))))
        finally:
            os.close(queue_w)
    except OSError:
        os.close(queue_r)
        return None
    return _Queue(pieces, queue_r)


def _share(top: str, tally: Tally, queue: _Queue, dev: int | None, deadline: float | None) -> str:
    """Fork the helper, read pieces here until the queue is empty, add the helper's totals."""
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return _read_pieces(top, tally, queue.pieces, range(len(queue.pieces)), dev, deadline)
    gc_was_on = gc.isenabled()
    gc.disable()  # off from the fork on in the helper: no finalizer of the parent's objects runs there
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid == 0:
        _helper(top, tally, queue, dev, deadline, read_fd, write_fd)
    if gc_was_on:
        gc.enable()
    os.close(write_fd)
    if pid < 0:  # no helper: this process reads every piece
        os.close(read_fd)
        return drain(walk(top, tally, [], dev, deadline, None, NEVER, refill=queue.take))
    queue.taken = []
    tally.new_links = None
    try:
        status = drain(walk(top, tally, [], dev, deadline, None, NEVER, refill=queue.take))
        payload = _read_all(read_fd)
    finally:
        os.close(read_fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    their_status = _merge(tally, payload)
    if their_status is None:  # the helper died: read what it took here
        theirs = sorted(set(range(len(queue.pieces))) - set(queue.taken))
        their_status = _read_pieces(top, tally, queue.pieces, theirs, dev, deadline)
    return "partial" if "partial" in (status, their_status) else "done"


def _helper(top: str, tally: Tally, queue: _Queue, dev: int | None, deadline: float | None,
            read_fd: int, write_fd: int) -> None:
    """The forked helper: count its pieces, send the totals, leave without cleanup."""
    code = 1
    try:
        os.close(read_fd)
        half = Tally()
        half.seen = tally.seen  # the links counted before the fork stay counted
        half.new_links = []
        half.skip = tally.skip
        half.big = tally.big
        status = drain(walk(top, half, [], dev, deadline, None, NEVER, refill=queue.take))
        write_all(write_fd, marshal.dumps((half.apparent, half.blocks, half.files, half.folders,
                                           half.errors, status, half.new_links, half.repos)))
        code = 0
    finally:
        os._exit(code)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _merge(tally: Tally, payload: bytes) -> str | None:
    """Add the helper's totals to this reader's; its status, or None when it sent nothing
    whole (it died)."""
    try:
        apparent, blocks, files, folders, errors, status, links, repos = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    tally.add(apparent, blocks, files, folders, errors)
    tally.repos.extend(repos)
    for link_dev, link_ino, size, link_blocks in links:
        key = (link_dev, link_ino)
        if key in tally.seen:  # both readers counted this inode: once is enough
            tally.apparent -= size
            tally.blocks -= link_blocks
        else:
            tally.seen.add(key)
    return str(status)


def _read_pieces(top: str, tally: Tally, pieces: list[list[str]], which: Iterable[int],
                 dev: int | None, deadline: float | None) -> str:
    """Read the given pieces in this process."""
    stack = [folder for i in which for folder in pieces[i]]
    return drain(walk(top, tally, stack, dev, deadline, None, NEVER))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
