"""Where the mount points are: a scan or a removal never crosses one.

Comparing `st_dev` is not enough: a bind mount of the same file system (`mount --bind
/home/me/data /tmp/x/data`) has the device of its parent, so a removal that only compared
devices walked into it and emptied the user's data. The kernel's own list of this process's
mount points, `/proc/self/mountinfo`, names every one, bind mounts included. Without /proc
(macOS) the set is empty and `os.path.ismount` (a device change or the root) is what is left.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from typing import BinaryIO

from app.core.paths import inside, strictly_inside

MOUNTINFO = "/proc/self/mountinfo"


class _Table:
    """This process's mount table, read again only when the kernel says it changed.

    A sweep asks about mounts before every removal (a hundred folders: a hundred reads and
    parses of the table). The kernel marks an open mountinfo file when any mount or unmount
    happens in its namespace since the last look (poll reports POLLPRI): so the table is
    read once, and again as soon as it may differ. A mount made after the poll and before a
    removal is the same race a fresh read has; nothing is kept longer than that."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new lock and nothing read. A forked child starts so: the lock may have been held
        by another thread at the fork, and polling the parent's open file would take the
        change mark the parent is waiting for (the mark belongs to the shared open file)."""
        self.lock = threading.Lock()
        self.fh: BinaryIO | None = None
        self.poller: select.poll | None = None
        self.data: bytes | None = None
        self.parsed: dict[str, frozenset[str]] = {}

    def read(self) -> bytes | None:
        """The table's bytes, or None without /proc (or when it cannot be read)."""
        with self.lock:
            try:
                if self.fh is None or self.poller is None:
                    fh = open(MOUNTINFO, "rb")  # noqa: SIM115 - kept open to be polled
                    poller = select.poll()
                    poller.register(fh.fileno(), select.POLLPRI | select.POLLERR)
                    self.fh, self.poller, self.data = fh, poller, fh.read()
                    self.parsed = {}
                elif self.poller.poll(0):
                    self.fh.seek(0)
                    self.data, self.parsed = self.fh.read(), {}
            except (OSError, ValueError):
                self.fh, self.poller, self.data = None, None, None
                self.parsed = {}
            return self.data

    def get(self, name: str, parse: Callable[[bytes], frozenset[str]]) -> frozenset[str]:
        """`parse(data)` of the current table, computed once while the table stays."""
        data = self.read()
        if data is None:
            return frozenset()
        with self.lock:
            found = self.parsed.get(name)
        if found is None:
            found = parse(data)
            with self.lock:
                if self.data is data:
                    self.parsed[name] = found
        return found


_TABLE = _Table()
os.register_at_fork(after_in_child=_TABLE.reset)


def _unescape(field: bytes) -> str:
    """A mountinfo path field: spaces, tabs, newlines and backslashes come as `\\ooo`."""
    if b"\\" not in field:
        return os.fsdecode(field)
    out = bytearray()
    i = 0
    while i < len(field):
        if field[i] == 0x5C and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(int(field[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(field[i])
            i += 1
    return os.fsdecode(bytes(out))


def mount_points() -> frozenset[str]:
    """The real paths of every mount point this process sees (empty without /proc)."""
    return _TABLE.get("points", _points)


def _points(data: bytes) -> frozenset[str]:
    found = set()
    for line in data.splitlines():
        fields = line.split(b" ")
        if len(fields) > 4:
            found.add(_unescape(fields[4]))
    return frozenset(found)


def mount_sources() -> frozenset[str]:
    """The folders here that a mount shows elsewhere: the source of each bind mount (`mount
    --bind <scratch>/data /mnt/x`, named here through a mount of the same file system that
    holds it), the layers of each overlay (`upperdir`, `workdir`, `lowerdir`) and the image
    file of each attached loop device. No mount
    point lies in such a folder, yet deleting it empties what the mount shows: a removal
    keeps it (`in_use`). Empty without /proc. The loop devices are read each time: attaching
    one changes no mount table."""
    return _TABLE.get("sources", _sources) | _loop_backing_files()


def _sources(data: bytes) -> frozenset[str]:
    found: set[str] = set()
    roots: list[tuple[bytes, str, str]] = []  # (device, root on that file system, mount point)
    for line in data.splitlines():
        fields = line.split(b" ")
        if b"-" in fields[6:]:
            roots.append((fields[2], _unescape(fields[3]), _unescape(fields[4])))
            found.update(_overlay_layers(fields[fields.index(b"-", 6) + 1:]))
    return frozenset(found | _bind_sources(roots))


def _loop_backing_files() -> set[str]:
    """The image file behind each attached loop device (`mount -o loop <scratchpad>/disk.img
    /mnt/x`): deleted, it lives on only until the device is detached."""
    found: set[str] = set()
    try:
        names = [name for name in os.listdir("/sys/block") if name.startswith("loop")]
    except OSError:
        return found
    for name in names:
        try:
            with open(f"/sys/block/{name}/loop/backing_file", "rb") as fh:  # only while attached
                found.add(os.fsdecode(fh.read().rstrip(b"\n")))
        except OSError:
            continue
    return found


def _overlay_layers(after: list[bytes]) -> set[str]:
    """The layer folders named by the super options of an overlay's mountinfo line (the part
    after ` - `: type, source, options)."""
    if after[:1] != [b"overlay"] or len(after) < 3:
        return set()
    layers: set[str] = set()
    for option in _unescape(after[2]).split(","):
        key, _, value = option.partition("=")
        if key in ("upperdir", "workdir", "lowerdir"):
            layers.update(part for part in value.split(":") if part.startswith("/"))
    return layers


def _bind_sources(roots: list[tuple[bytes, str, str]]) -> set[str]:
    """Where each mount of part of a file system (its root is not `/`) comes from, named
    through every other mount of that file system that holds it."""
    by_dev: dict[bytes, list[tuple[str, str]]] = {}
    for dev, root, point in roots:
        by_dev.setdefault(dev, []).append((root, point))
    return {point.rstrip("/") + root[len(top.rstrip("/")):]
            for mounted in by_dev.values() if len(mounted) > 1 for root, _ in mounted if root != "/"
            for top, point in mounted if top != root and inside(root, top)}


def is_mount_point(path: str | os.PathLike[str], known: frozenset[str] | None = None) -> bool:
    """Whether `path` (its real path) is a mount point; `known` saves reading the list again."""
    real = os.path.realpath(path)
    points = mount_points() if known is None else known
    if real in points:
        return True
    try:
        return os.path.ismount(real)
    except OSError:
        return False


def mounts_inside(path: str | os.PathLike[str], known: frozenset[str] | None = None) -> list[str]:
    """The mount points at `path` or below it (its real path), and the folders there that a
    mount shows elsewhere (`mount_sources`), sorted."""
    real = os.path.realpath(path)
    points = mount_points() if known is None else known
    found = sorted(p for p in points | mount_sources() if inside(p, real))
    if not found and is_mount_point(real, points):
        found = [real]
    return found


def mounts_crossed(root: str, path: str, known: frozenset[str] | None = None) -> list[str]:
    """The mount points a removal of `path` under `root` would cross: at `path` or below it,
    and on the way down to it from `root` (strictly inside the root, above the path).

    The second kind is the one a device check misses: `mount --bind ~/proj $TMPDIR/work`
    makes `$TMPDIR/work/build` the user's `~/proj/build`, on the same file system, with no
    mount point at or below it. `root` itself may be a mount point: that is where it lies.
    """
    points = mount_points() if known is None else known
    real_root = os.path.realpath(root)
    above = sorted(p for p in points if strictly_inside(p, real_root) and strictly_inside(path, p))
    return above + mounts_inside(path, points)


#: A mount table's path field as a path (`/proc/<pid>/mountinfo` of any process).
unescape = _unescape


def namespace_of(pid: str) -> str | None:
    """The mount namespace of process `pid` (`mnt:[<inode>]`), None when it ended. Another
    user's process (a container's, root's, for a user in the `docker` group) closes that link
    to this user, yet its mount table is open to every user: the table then stands for it (one
    like this process's own is this namespace), so its mounts (`docker run -v <folder>:/data`)
    are looked at too."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except PermissionError:
        pass
    except OSError:
        return None
    try:
        with open(f"/proc/{pid}/mountinfo", "rb") as fh:
            table = fh.read()
    except OSError:
        return None
    return namespace_of("self") if table == _TABLE.read() else f"table:{hash(table)}"


def sources_here(theirs: list[tuple[str, str, str]], ours: list[tuple[str, str, str]]) -> set[str]:
    """The folders here that the mounts of another mount namespace show (`docker run -v
    <folder>:/data`): each mount of `theirs` (mount point, device, root on its file system)
    named through every mount of that device in `ours` that holds its root. A server there
    reading /data as requests come holds nothing of it open; deleting the folder empties it."""
    return {os.path.normpath(os.path.join(point, os.path.relpath(root, top)))
            for _, device, root in theirs for point, dev, top in ours if dev == device and inside(root, top)}


def overlay_layers_in(mountinfo: str) -> set[str]:
    """The layer folders of the overlays in another mount namespace's table (`/proc/<pid>/
    mountinfo`: a sandbox's `bwrap --overlay`, rootless podman), as their options name them:
    such an overlay has a device of its own, no mount here shows it."""
    try:
        with open(mountinfo, "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return set()
    return {layer for line in lines if b" - overlay " in line
            for layer in _overlay_layers(line.split(b" - ", 1)[1].split(b" "))}
