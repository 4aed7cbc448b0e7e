"""A git that waits to open a FIFO is stopped at once, not after its whole timeout.

git opens the files it reads in a work tree and its git dir (`.gitignore` in each folder it
lists, `.gitattributes`, `info/exclude`, `index`, `packed-refs`, ...) without O_NONBLOCK: a
FIFO made under such a name (`mkfifo .gitignore`, a log pipe a script set up in a session's
scratch repository) leaves git waiting inside `open` for a writer that never comes. Every
`git status` of a judgement then took the full GIT_TIMEOUT_S (120 s), past the whole
cleanup's deadline, at every session start, since the folder is kept and judged again.

While git runs, its threads and the processes it started are looked at every LOOK_S: one
waiting for the other end of a FIFO (its kernel wait channel) is stopped with git, and the
command fails, as one git could not finish does: the folder is unsure, so kept. So is one
waiting on a remote file system's server while a remote mount does not answer (a config's
`core.excludesFile` on an `sshfs` whose host went away: git waited its whole timeout).
"""

from __future__ import annotations

import os
import subprocess
import time

#: How often a running git is looked at: a git that answers sooner is never looked at.
LOOK_S = 0.5
#: The kernel's wait channels of a task blocked opening a FIFO until the other end opens it
#: (`wait_for_partner` since Linux 2.6; older kernels showed `pipe_wait` or `fifo_open`).
_FIFO_WAITS = frozenset({b"wait_for_partner", b"pipe_wait", b"fifo_open"})
#: Those of a task waiting on a remote file system's server (FUSE, NFS, SMB).
_REMOTE_WAITS = (b"fuse_", b"request_wait_answer", b"rpc_", b"nfs", b"cifs", b"smb", b"wait_for_response")


def communicate(proc: subprocess.Popen[bytes], data: bytes | None, timeout: float | None,
                watch: bool = True) -> tuple[bytes, bytes, str | None]:
    """`proc`'s output and None; or empty output and why it was stopped: "timeout", or the
    FIFO one of its processes waited to open (looked for when `watch`: not while git runs
    the repository's hooks, the user's programs, which may wait on a FIFO of theirs)."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        step = LOOK_S if end is None else max(0.0, min(LOOK_S, end - time.monotonic()))
        try:
            out, err = proc.communicate(data, timeout=step)
            return out, err, None
        except subprocess.TimeoutExpired:
            data = None  # written already: a second call may not send it again
        waiting = fifo_waiter(proc.pid) if watch else None
        if waiting is None and (end is None or time.monotonic() < end):
            continue
        for pid in {proc.pid, *(waiting[:1] if waiting else ())}:
            _kill(pid)
        proc.wait()
        return b"", b"", "timeout" if waiting is None else f"git waits {waiting[1]}"


def fifo_waiter(pid: int) -> tuple[int, str] | None:
    """(pid, what it waits on) of the first process of `pid` and those it started (to a few
    levels) whose thread waits to open a FIFO (its path as far as it can be read), or on a
    remote mount while one does not answer; None when none does."""
    from app.core.hung_mounts import dead_mount
    from app.core.socket_files import path_being_opened

    family, seen = [pid], set[int]()
    while family and len(seen) < 64:
        one = family.pop()
        seen.add(one)
        for task in _listing(f"/proc/{one}/task"):
            base = f"/proc/{one}/task/{task}"
            wchan = _read(f"{base}/wchan").strip()
            if wchan in _FIFO_WAITS:
                return one, f"to open the FIFO {path_being_opened(base) or '(a path that cannot be read)'}"
            if wchan.startswith(_REMOTE_WAITS) and (dead := dead_mount()) is not None:
                return one, f"on {dead}, a remote mount that does not answer"
            family += [int(c) for c in _read(f"{base}/children").split() if int(c) not in seen]
    return None


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass  # ended meanwhile


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(4096)
    except OSError:
        return b""
