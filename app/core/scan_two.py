"""Trees read by two processes: this one and one forked helper, both taking work from one
queue: the pieces of one big tree (`finish_in_two`), or whole trees of a sweep that measures
many (`share_roots`).

Reading a tree is mostly system calls, and on 2 cores two readers beat one by ~1.8x (threads
do not: the GIL). The folders still to read are cut into pieces that both readers take from
one queue, the shallowest (likely the biggest) first, so that neither waits for the other at
the end. Hard links seen by both are counted once; a helper that dies is replaced by this
process reading its pieces again.

A sweep measures many trees, most of them small (a session folder holds a few thousand
entries): one fork for each would cost more than it saves, so the trees themselves are the
pieces. Each tree is read whole by one reader into its own Tally (hard links once within a
tree, the repositories and mount points of that tree alone: the answer of a scan of it
alone); a tree found big is paused and finished afterwards by `finish_in_two`.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
import os
from collections.abc import Callable, Iterable, Iterator

from app.core.scan_tally import Tally
from app.core.scan_walk import NEVER, drain, walk

PARALLEL = hasattr(os, "fork") and (os.cpu_count() or 1) > 1
PIECES = 64  # at least this many pieces, when the tree has them
MAX_PIECES = 2_048  # the queue (4 bytes a piece) is written before anyone reads it: 8 KiB fits
# the smallest pipe buffer among the systems claudetto runs on (16 KiB on macOS, 64 KiB on Linux)

#: one tree to read, as `scan_walk.start` returns it: its top, its Tally (the top counted),
#: the folders still to read, the device it stays on
Root = tuple[str, Tally, list[str], int | None]


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
        index = _next(self.fd)
        if index is None:
            return False
        if self.taken is not None:
            self.taken.append(index)
        into.extend(reversed(self.pieces[index]))  # the piece's first folder is read first
        return True


def _next(fd: int) -> int | None:
    """The next number in the queue `fd`; None when it is empty."""
    try:
        got = os.read(fd, 4)
    except OSError:
        return None
    return int.from_bytes(got, "little") if len(got) == 4 else None


def _numbers(fd: int) -> Iterator[int]:
    while (index := _next(fd)) is not None:
        yield index


def finish_in_two(top: str, tally: Tally, stack: list[str], dev: int | None,
                  deadline: float | None) -> str:
    """Read the rest of the tree (the folders on `stack`) with a forked helper; the status."""
    if len(stack) < PIECES:  # too few pieces to share well: read the shallowest ones first
        status = drain(walk(top, tally, stack, dev, deadline, None, NEVER, spread=PIECES))
        if status != "paused":
            return status
    if len(stack) < 2:
        return drain(walk(top, tally, stack, dev, deadline, None, NEVER))
    per = -(-len(stack) // MAX_PIECES)
    pieces = [stack[i:i + per] for i in range(0, len(stack), per)]
    stack.clear()
    queue_fd = _queue(len(pieces))
    if queue_fd is None:
        return _read_pieces(top, tally, pieces, range(len(pieces)), dev, deadline)
    try:
        return _share(top, tally, _Queue(pieces, queue_fd), dev, deadline)
    finally:
        os.close(queue_fd)


def _queue(count: int) -> int | None:
    """A pipe holding the numbers 0 to `count` - 1, to read from (None when none can be made)."""
    try:
        queue_r, queue_w = os.pipe()
    except OSError:
        return None
    try:
        try:
            write_all(queue_w, b"".join(i.to_bytes(4, "little") for i in range(count)))
        finally:
            os.close(queue_w)
    except OSError:
        os.close(queue_r)
        return None
    return queue_r


def _share(top: str, tally: Tally, queue: _Queue, dev: int | None, deadline: float | None) -> str:
    """Fork the helper, read pieces here until the queue is empty, add the helper's totals."""

    def helper() -> bytes:
        half = Tally()
        half.seen = tally.seen  # the links counted before the fork stay counted
        half.new_links = []
        half.skip = tally.skip
        half.big = tally.big
        status = drain(walk(top, half, [], dev, deadline, None, NEVER, refill=queue.take))
        return marshal.dumps((half.apparent, half.blocks, half.files, half.folders,
                              half.errors, status, half.new_links, half.repos, half.others))

    forked = fork_helper(helper)
    if forked is None:  # no helper: this process reads every piece
        return drain(walk(top, tally, [], dev, deadline, None, NEVER, refill=queue.take))
    queue.taken = []
    tally.new_links = None
    with _joined(*forked) as payload:
        status = drain(walk(top, tally, [], dev, deadline, None, NEVER, refill=queue.take))
    their_status = _merge(tally, payload[0] if payload else b"")
    if their_status is None:  # the helper died: read what it took here
        theirs = sorted(set(range(len(queue.pieces))) - set(queue.taken))
        their_status = _read_pieces(top, tally, queue.pieces, theirs, dev, deadline)
    return "partial" if "partial" in (status, their_status) else "done"


def share_roots(roots: list[Root], deadline: float | None, pause_at: int | None) -> list[str]:
    """Read each tree of `roots` whole, this process and a forked helper taking the trees from
    one queue; each tree's status: "done", "partial" (the deadline), or "paused" (past
    `pause_at` entries: the rest of it is left on its stack, for `finish_in_two`).

    Each tree is counted into its own Tally by one reader, so its answer is the one of a
    scan of it alone; a helper that dies is replaced by this process reading its trees
    again from their top."""
    statuses = ["done"] * len(roots)
    todo = [i for i, root in enumerate(roots) if root[2]]
    for first in range(0, len(todo), MAX_PIECES):
        _share_some(roots, todo[first:first + MAX_PIECES], statuses, deadline, pause_at)
    return statuses


def _share_some(roots: list[Root], todo: list[int], statuses: list[str], deadline: float | None,
                pause_at: int | None) -> None:
    """`share_roots` for at most MAX_PIECES trees (the queue holds them all before the fork)."""
    queue_fd = _queue(len(todo))
    if queue_fd is None:
        for i in todo:
            statuses[i] = _read_root(roots[i], deadline, pause_at)
        return
    try:

        def helper() -> bytes:
            return marshal.dumps([_answer(todo[n], roots[todo[n]], _read_root(roots[todo[n]], deadline, pause_at))
                                  for n in _numbers(queue_fd)])

        forked = fork_helper(helper)
        mine: set[int] = set()
        with contextlib.nullcontext([b""]) if forked is None else _joined(*forked) as payload:
            for n in _numbers(queue_fd):
                mine.add(todo[n])
                statuses[todo[n]] = _read_root(roots[todo[n]], deadline, pause_at)
        theirs = _take_answers(roots, statuses, payload[0] if payload else b"")
    finally:
        os.close(queue_fd)
    for i in todo:
        if i not in mine and i not in theirs:  # the helper died: read its trees here
            statuses[i] = _read_root(roots[i], deadline, pause_at)


def _read_root(root: Root, deadline: float | None, pause_at: int | None) -> str:
    top, tally, stack, dev = root
    return drain(walk(top, tally, stack, dev, deadline, None, NEVER, pause_at))


def _answer(index: int, root: Root, status: str) -> tuple[object, ...]:
    """What the helper sends of one tree it read: its totals, and what a paused tree needs to
    be finished by the other process (the folders left, the hard links met, the big folders)."""
    _, tally, stack, _ = root
    paused = status == "paused"
    return (index, status, tally.apparent, tally.blocks, (tally.files, tally.others), tally.folders, tally.errors,
            tally.repos, stack if paused else [], tally.seen if paused else set(),
            tally.big if paused else set())


def _take_answers(roots: list[Root], statuses: list[str], payload: bytes) -> set[int]:
    """The helper's trees put in place of this process's untouched copies; their numbers
    (none when it died before it sent them whole)."""
    try:
        answers = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return set()
    taken: set[int] = set()
    for index, status, apparent, blocks, files, folders, errors, repos, stack, seen, big in answers:
        _, tally, left, _ = roots[index]
        tally.apparent, tally.blocks, (tally.files, tally.others), tally.folders, tally.errors = (
            apparent, blocks, files, folders, errors)
        tally.repos = list(repos)
        left[:] = stack
        tally.seen = set(seen) if seen else tally.seen
        tally.big = set(big) if big else tally.big
        statuses[index] = str(status)
        taken.add(index)
    return taken


def fork_helper(work: Callable[[], bytes]) -> tuple[int, int] | None:
    """Fork a helper that runs `work` and sends what it returns; (its pid, the pipe to read
    that from), or None when no helper could be made.

    `work` must only read the tree, count and build its answer (no import, no lock): then a
    fork from a process with other threads (the dashboard's workers, the cleanup's) is
    safe. The garbage collector is off from the fork on in the helper, so no finalizer of
    the parent's objects runs there; it leaves with `os._exit`, without cleanup."""
    try:
        read_fd, write_fd = os.pipe()
    except OSError:
        return None
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            write_all(write_fd, work())
            code = 0
        finally:
            os._exit(code)
    if gc_was_on:
        gc.enable()
    os.close(write_fd)
    if pid < 0:
        os.close(read_fd)
        return None
    return pid, read_fd


@contextlib.contextmanager
def _joined(pid: int, read_fd: int) -> Iterator[list[bytes]]:
    """Around this process's share of the reading: then the helper's answer is read into the
    list (empty or cut short when it died), and the helper waited for."""
    payload: list[bytes] = []
    try:
        yield payload
        payload.append(_read_all(read_fd))
    finally:
        os.close(read_fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


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
        apparent, blocks, files, folders, errors, status, links, repos, others = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    tally.add(apparent, blocks, files, folders, errors, others)
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
