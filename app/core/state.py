"""claudetto's JSON state: read tolerant, write atomic, serialized by a lock.

Every state file (`gc/<session>.json`, `ledger.json`, `checkouts.json`) goes through here:
a writer takes an exclusive flock on `<file>.lock`, reads, changes, writes a temp file,
fsyncs it and renames it over the old one. A writer that cannot get the lock in time tries
again, at most LEDGER_WRITE_TRIES times. A corrupt file is moved aside (never deleted) and
the program goes on with an empty state.

Every state file is opened through `read_regular` / `open_regular`: a FIFO, socket, device
or symlink where a state file belongs is refused without being opened for reading (a FIFO
would block the reader until some writer came, and hang the prompt hook or the CLI).

State is written as pure ASCII JSON: a path whose bytes are not UTF-8 (a folder named in
Latin-1) lives in Python as a str with `\\udcXX` surrogate escapes, written as that escape
and read back to the same str, so os.fsencode gives back the very bytes. A file an older
version wrote with such raw bytes still reads (decoded with surrogateescape).

It runs on the hook hot path, so it imports neither json (see fastjson), pathlib, typing
nor contextlib. Paths may be given as str or Path.
"""

from __future__ import annotations

import errno
import os
import stat
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


# A state file past this is not one claudetto wrote (the ledger holds LEDGER_MAX_FILES entries)
READ_LIMIT = 64 * 1024 * 1024


class NotRegularFile(OSError):
    """Something else than a regular file (a FIFO, socket, device, folder or symlink) sits
    where a regular file is expected; it was not opened for reading."""


class FileTooLarge(OSError):
    """A file longer than the caller's limit; it was not read."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(name: str, what: str) -> NotRegularFile:
    return NotRegularFile(f"{name} is {what}, not a regular file")


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """A file descriptor on the regular file at `path`, opened with `flags` (plus O_NONBLOCK,
    O_NOFOLLOW, O_CLOEXEC); created when `flags` holds O_CREAT and nothing is there.

    Raises NotRegularFile when anything else is there (looked at with lstat first, so a
    device is never opened; O_NONBLOCK and an fstat cover a swap in between), or the
    OSError of the system (FileNotFoundError when nothing is there and O_CREAT is not set).
    """
    name = os.fspath(path)
    try:
        st = os.lstat(name)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    else:
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(name, _kind(st.st_mode))
    try:
        fd = os.open(name, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # swapped for a symlink, socket, folder
            raise _not_regular(name, "something else by now") from None
        raise
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _not_regular(name, _kind(st.st_mode))
    return fd


def read_regular(path: str | os.PathLike[str], limit: int = READ_LIMIT) -> bytes:
    """The bytes of the regular file at `path`, never blocking and never following a symlink.

    Raises FileNotFoundError when nothing is there, NotRegularFile for a FIFO, socket,
    device, folder or symlink, FileTooLarge past `limit` bytes, or another OSError.
    """
    name = os.fspath(path)
    fd = open_regular(name)
    try:
        chunks: list[bytes] = []
        total = 0
        size = os.fstat(fd).st_size
        while True:  # never more than one byte past `limit`: a read allocates what it asks for
            chunk = os.read(fd, min(max(size - total, 0) + 65536, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileTooLarge(f"{name} is longer than {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def parse_state(raw: bytes) -> Any:
    """JSON state as written here (ASCII) or by an older version (UTF-8 with raw bytes)."""
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    return fastjson.loads(raw.decode("utf-8", "surrogateescape"))


def read_json(path: str | os.PathLike[str], default: Callable[[], Any], *, strict: bool = False) -> Any:
    """The JSON in `path`, or `default()` when it is missing, unreadable (logged: a FIFO, a
    socket, too large...) or corrupt (moved aside). With `strict` an unreadable file raises
    its OSError instead: a command shows it rather than an empty state. Only the very file
    read is moved aside: a writer may have put good state there while it was parsed."""
    name = os.fspath(path)
    read_as = _identity(name)
    try:
        raw = read_regular(name)
    except FileNotFoundError:
        return default()
    except OSError as exc:
        if strict:
            raise
        log(f"state: cannot read {name}: {exc}")
        return default()
    try:
        return parse_state(raw)
    except ValueError as exc:
        if _dry_run[0]:
            log(f"state: {name} is corrupt: {exc}; left where it is (a dry run writes no state)")
        elif read_as is None or _identity(name) != read_as:
            log(f"state: {name} was corrupt when read ({exc}) and has been replaced since; left as it is")
        else:
            move_aside(name, f"not JSON ({exc})")
        return default()


def _identity(name: str) -> tuple[int, int, int, int] | None:
    """What tells a file was replaced (renamed over) or rewritten since; None when not there."""
    try:
        st = os.lstat(name)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


_dry_run = [False]


def dry_run() -> None:
    """From now on, in this process, a corrupt state file a reader meets is read as empty
    but left where it is: a command's `--dry-run` (or `--read-only`) writes no state, and
    setting the file aside would hand the next writer an empty registry. Writers are not
    changed: one that runs sets it aside as ever, so nothing is overwritten unseen."""
    _dry_run[0] = True


def _read_for_update(name: str, default: Callable[[], Any]) -> Any:
    """What a writer starts from. Something that is no state file (a FIFO, a folder, a file
    past READ_LIMIT), or another user's that this user cannot open (`_theirs_in_ours`), is
    moved aside and the writer starts afresh; a state file of this user's that cannot be read
    now (EACCES, EIO) raises, so the write cannot replace records it never saw."""
    try:
        raw = read_regular(name)
    except FileNotFoundError:
        return default()
    except (NotRegularFile, FileTooLarge) as exc:
        move_aside(name, str(exc))
        return default()
    except PermissionError:
        if not _theirs_in_ours(name):
            raise
        move_aside(name, _THEIRS)
        return default()
    return _parsed(name, raw, default)


def _parsed(name: str, raw: bytes, default: Callable[[], Any]) -> Any:
    """The state `raw` holds; a file that is not JSON is moved aside (never deleted) and the
    state starts afresh."""
    try:
        return parse_state(raw)
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


def write_json_atomic(path: str | os.PathLike[str], data: Any, *, durable: bool = True) -> None:
    """Write `data` to `path` through a temp file in the same folder, fsync (unless not
    `durable`), rename."""
    # ASCII: lone surrogates (non-UTF-8 path bytes) as escapes; NaN and infinities as json
    # writes them, so a bad number that was read is kept for its reader to judge, and it
    # never makes every later write of the file fail
    write_atomic(path, fastjson.dumps(data, ensure_ascii=True, allow_nan=True).encode("ascii"), durable=durable)


def write_atomic(path: str | os.PathLike[str], payload: bytes, *, mode: int = 0o600,
                 before_replace: Callable[[], None] | None = None, durable: bool = True,
                 owner: tuple[int, int] | None = None) -> None:
    """Replace `path` by `payload`: a temp file in the same folder with `mode`, fsynced,
    renamed over it, so a reader sees the old file or the new one, never half of one.
    `before_replace` may still refuse (raise) once the temp file is written: then nothing
    is replaced. The temp file never outlives a failure. Not `durable`: no fsync; the rename
    is still atomic against a killed process, but a power cut may lose the new content.
    `owner` (uid, gid): the new file's, where we may set it (a user's file rewritten by root
    under sudo must stay theirs, or Claude can no longer write it)."""
    name = os.fspath(path)
    folder, base = os.path.split(name)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            if owner is not None and owner != (os.geteuid(), os.getegid()):
                try:
                    os.fchown(fd, *owner)
                except OSError:  # not ours to give away: the file is the writer's
                    pass
            if mode != 0o600:
                os.fchmod(fd, mode)  # after the chown, which clears set-id bits
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, name)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _leftovers(folder, f".{base}.")


def _leftovers(folder: str, prefix: str) -> None:
    """Temp files of killed earlier writes of this file go (`state_leftovers`)."""
    try:
        names = [n for n in os.listdir(folder or ".") if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return
    if names:
        from app.core.state_leftovers import remove_leftovers

        remove_leftovers(folder, prefix, names)


def open_state_file(name: str, flags: int) -> int:
    """`name` opened with `flags` (`open_regular`). A file there that another user made and
    this user cannot open, in a folder of this user's own, is set aside (kept, renamed) and
    made anew: a run under `sudo` that kept the home made root's, mode 0600, and every later
    writer failed on it for good (the journal's lock, then the journal itself, refused every
    line: nothing was removed again). One of this user's own stays as it is (made read-only
    on purpose: nothing is written past it)."""
    try:
        return open_regular(name, flags)
    except PermissionError:
        if not _theirs_in_ours(name):
            raise
    move_aside(name, _THEIRS)
    return open_regular(name, flags)


_THEIRS = "another user's file, which this user cannot open"


def _theirs_in_ours(name: str) -> bool:
    """Whether the state file `name`, which this user cannot open, is another user's in a
    folder of this user's own: what a run under `sudo` that kept the home leaves (root's,
    mode 0600). Set aside, it is kept; left, every later write would fail on it for good."""
    try:
        return os.lstat(name).st_uid != os.getuid() and os.stat(os.path.dirname(name) or ".").st_uid == os.getuid()
    except OSError:
        return False


def open_lock_file(name: str) -> int:
    """The lock file `name` opened for writing, made when missing (`open_state_file`). A
    lock file holds no data: a FIFO or such in its place is set aside too."""
    try:
        return open_state_file(name, os.O_RDWR | os.O_CREAT)
    except NotRegularFile as exc:
        move_aside(name, str(exc))
    return open_regular(name, os.O_RDWR | os.O_CREAT)


class locked:  # noqa: N801 - used like a function: `with locked(path):`
    """Hold the exclusive flock of `path` (on `<path>.lock`), waiting at most `wait_s`."""

    def __init__(self, path: str | os.PathLike[str], wait_s: float | None = None) -> None:
        self.name = os.fspath(path)
        self.wait_s = LOCK_WAIT_S if wait_s is None else wait_s
        self.fd = -1

    def __enter__(self) -> None:
        import fcntl  # a C extension (~0.2 ms): only writers pay for it, not a read-only prompt

        os.makedirs(os.path.dirname(self.name), exist_ok=True)
        fd = open_lock_file(self.name + ".lock")
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


def update_json(path: str | os.PathLike[str], change: Callable[[Any], Any], default: Callable[[], Any], *,
                durable: bool = True) -> Any:
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
                data = change(_read_for_update(os.fspath(path), default))
                write_json_atomic(path, data, durable=durable)
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
            data = parse_state(read_regular(name))
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as exc:  # not a state file it can judge: left as it is
            log(f"state: {name} not removed: {exc}")
            return False
        if not condition(data):
            return False
        os.unlink(name)
        return True

