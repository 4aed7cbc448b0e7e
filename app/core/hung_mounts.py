"""Remote mounts that do not answer: a path on one is never looked at.

An `sshfs` whose host went away (a laptop offline, a VPN dropped), an NFS server down: every
look at a path on it (`lstat`, `realpath`, `isdir`) waits, for ever or for minutes. Claude
records every project it ran in (`.claude.json`), and a session working there names its cwd:
one look at such a path held the whole cleanup (and its lock: no session start cleaned again)
and every hook that reads who is live. So before a path of a known project or a session is
looked at, the remote mount it lies on (a FUSE, NFS, SMB, 9p... file system, by the kernel's
mount list) is asked once, in a thread given `PROBE_S`: one that does not answer in time is
hung for this process: its paths are not looked at (a known project there is not judged, a
session's cwd there is compared as it is written, and its session stays live by its id).
"""

from __future__ import annotations

import os

#: How long a remote mount has to answer one look.
PROBE_S = 0.5
#: File system types of mounts that may stop answering: FUSE ones and network ones.
_REMOTE = ("fuse", "nfs", "cifs", "smb", "9p", "ceph", "glusterfs", "afs", "davfs", "lustre", "gpfs")
_ANSWERS: dict[str, bool] = {}


def reachable(path: str | None) -> bool:
    """Whether `path` (absolute) lies on no remote mount, or on one that answers."""
    if not path or not path.startswith("/"):
        return True
    point = _remote_mount_of(os.path.normpath(path))
    if point is None:
        return True
    if point not in _ANSWERS:
        _ANSWERS[point] = _answers(point)
    return _ANSWERS[point]


def real_paths(found: list[str | None]) -> list[str]:
    """The real path of each given path; one on a remote mount that does not answer as it is
    written (normalized): still compared, never looked at."""
    return [real_path(path) for path in found if path]


def real_path(path: str) -> str:
    """The real path of `path` (`real_paths`), as written when its remote mount does not answer."""
    return os.path.realpath(path) if reachable(path) else os.path.normpath(path)


def remote_devices() -> frozenset[int]:
    """The devices (`st_dev`) of the remote mounts this process sees, from the mount table
    (empty without one): a file recorded on one may stop answering. One read, no import: the
    edit ledger asks at a prompt, only when a file of it lies on an anonymous device."""
    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return frozenset()
    found = set()
    for line in lines:
        head, _, tail = line.partition(b" - ")
        fields, kind = head.split(b" "), tail.split(b" ")[:1]
        if len(fields) > 2 and kind and kind[0].decode("ascii", "replace").startswith(_REMOTE):
            major, _, minor = fields[2].partition(b":")
            if major.isdigit() and minor.isdigit():
                found.add(os.makedev(int(major), int(minor)))
    return frozenset(found)


def dead_mount() -> str | None:
    """The first remote mount this process sees that does not answer (each asked once), or None."""
    return next((point for point in _remote_points() if not reachable(point)), None)


def did_not_answer(path: str) -> str | None:
    """A look at `path` did not answer in time (a caller that stats in a thread of its own, as
    the edit ledger does): the remote mount it lies on is hung for this process, as if asked
    here. Returns that mount point, or None when `path` lies on no remote mount."""
    point = _remote_mount_of(os.path.normpath(path))
    if point is not None:
        _ANSWERS[point] = False
    return point


def _answers(point: str) -> bool:
    import threading

    done = threading.Event()

    def look() -> None:
        try:
            os.lstat(point)
        except OSError:
            pass
        done.set()

    threading.Thread(target=look, name="mount-probe", daemon=True).start()
    if done.wait(PROBE_S):
        return True
    _ANSWERS[point] = False  # before the log line, whose own name may lie on that mount
    from app.core.log import log

    log(f"mounts: {point} does not answer (a remote mount whose server is gone?); nothing on it is looked at")
    return False


def _remote_mount_of(path: str) -> str | None:
    """The deepest remote mount point at or above `path`, if any."""
    found = None
    for point in _remote_points():
        if (path == point or path.startswith(point.rstrip("/") + "/")) and (found is None or len(point) > len(found)):
            found = point
    return found


_READ: list[tuple[float, list[str]]] = []


def _remote_points() -> list[str]:
    """The mount points of remote file systems, from `/proc/self/mountinfo` (none without it);
    read again after a second (a sweep asks for every session, at every removal)."""
    import time

    now = time.monotonic()
    if not _READ or now - _READ[0][0] > 1.0:
        _READ[:] = [(now, _read_remote_points())]
    return _READ[0][1]


def _read_remote_points() -> list[str]:
    from app.core.mounts import _unescape

    try:
        with open("/proc/self/mountinfo", "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    found: list[str] = []
    for line in lines:
        head, _, tail = line.partition(b" - ")
        fields, kind = head.split(b" "), tail.split(b" ")[:1]
        if len(fields) > 4 and kind and kind[0].decode("ascii", "replace").startswith(_REMOTE):
            found.append(_unescape(fields[4]))
    return found
