"""The socket files running servers listen on, known by the file's identity, not its name,
and the FIFOs processes wait at.

`/proc/net/unix` names a socket by the path it was bound with. A server that bound
`server.sock` from inside a folder (a socket path is limited to 108 bytes) and then changed
folder shows only that bare name; a folder renamed since the bind, or a socket file linked
into place under another name (ssh's ControlMaster binds a temporary name, links it to the
final one and unlinks the first), shows a name that no longer leads to it. The kernel's
socket diagnostics (netlink `NETLINK_SOCK_DIAG`, attribute `UNIX_DIAG_VFS`) give the device
and inode of every bound socket's file whatever it is called now. A socket file with one of
those identities is a live server's address: removing it cuts every new client off.

A socket whose name still leads to its file, or whose file sits in the folder its name
names, is placed by that one look. Only the others ("unplaced") cost more: a bounded walk of
a folder before it goes, and only of a folder on the device of such a socket. Without
netlink (not Linux, a kernel without unix_diag, a sandbox that refuses it) nothing more is
known: the names in `/proc/net/unix` alone count, as before.

A FIFO's reader (`read line < $dir/fifo`) waits inside `open` until a writer comes: it holds
no handle on it yet, and the writer finds it by its name, so removing it leaves the reader
waiting for ever. The path a process is blocked opening is read from the call itself
(`/proc/<pid>/syscall` and the process's memory, where this user may read them).
"""

from __future__ import annotations

import os
import stat

from app.core.hung_mounts import reachable

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST_DUMP = 0x301  # NLM_F_REQUEST | NLM_F_ROOT | NLM_F_MATCH
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_UDIAG_SHOW_NAME, _UDIAG_SHOW_VFS = 1, 2
_UNIX_DIAG_NAME, _UNIX_DIAG_VFS = 0, 1
_INO_MASK = 0xFFFFFFFF  # the kernel reports 32 bits of the inode
#: A desktop holds a few thousand unix sockets, ~50 bytes each in the dump: far below this.
_DUMP_MAX_BYTES = 16 << 20
_DUMP_TIMEOUT_S = 1.0
#: How many entries the folder a socket's name names may hold for it to be looked through.
_NAMED_FOLDER_MAX = 4096
#: How many entries a folder's walk for an unplaced socket file visits (~0.4 s with the
#: folder in the page cache). A walk that stops short has not seen everything: the folder
#: is kept, as when anything else is unsure.
WALK_MAX_ENTRIES = 500_000

Identity = tuple[int, int]  # (st_dev, st_ino & 0xFFFFFFFF)


def bound_socket_files() -> tuple[list[str], frozenset[Identity]]:
    """The socket files running servers are bound to: the paths of those found by their
    name, and the identities of the others (unplaced)."""
    placed: list[str] = []
    unplaced: set[Identity] = set()
    listing: dict[bytes, dict[Identity, str] | None] = {}
    for ident, name in _bound_by_identity().items():
        path = _place(name, ident, listing)
        if path:
            placed.append(path)
        elif path is None:
            unplaced.add(ident)
    return placed, frozenset(unplaced)


def add_sockets_by_name(found: set[str], table: str = "/proc/net/unix") -> None:
    """The files of the unix sockets some process has bound and still holds open (a dev
    server's `$TMPDIR/tmp.X/dev.sock`): its open files read `socket:[...]`, so only the
    kernel's list of sockets (of this network namespace, or `table`'s) names the path.
    Removing it cuts every new client off."""
    try:
        with open(table, "rb") as fh:
            data = fh.read()
    except OSError:
        return
    real: dict[str, str] = {}  # a desktop binds hundreds of sockets in a few folders
    for line in data.splitlines()[1:]:
        fields = line.split(None, 7)
        if len(fields) == 8 and names_a_path(fields[7]):
            bound = os.path.normpath(os.fsdecode(fields[7]))  # as it was bound: parents unresolved
            folder = os.path.dirname(bound)
            if folder not in real:  # one on a remote mount that does not answer: as it was bound
                real[folder] = os.path.realpath(folder) if reachable(folder) else folder
            found.add(os.path.join(real[folder], os.path.basename(bound)))


def other_network_sockets(base: str, seen: set[str]) -> set[str]:
    """The socket files bound in the network namespace of the process at `base`
    (`/proc/<pid>`) by name, when that namespace is not this one's and not in `seen`: a
    sandbox without network (`unshare -n`, `bwrap --unshare-net`) lists its sockets apart."""
    if not seen:
        seen.add(_network("/proc/self"))
    net = _network(base)
    found: set[str] = set()
    if net and net not in seen:
        seen.add(net)
        add_sockets_by_name(found, f"{base}/net/unix")
    return found


def _network(base: str) -> str:
    try:
        return os.readlink(f"{base}/ns/net")
    except OSError:
        return ""  # gone, or another user's


def socket_inside(folder: str, unplaced: frozenset[Identity]) -> str | None:
    """The first socket file at or below `folder` whose identity is in `unplaced`; `folder`
    itself when the walk stopped at its bound before seeing everything; else None."""
    try:
        dev = os.lstat(folder).st_dev
    except OSError:
        return None
    inodes = {ino for d, ino in unplaced if d == dev}
    if not inodes:
        return None
    stack, seen = [folder], 0
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                entries = list(listing)
        except OSError:
            continue  # gone meanwhile, or unreadable: nothing removable either
        seen += len(entries)
        if seen > WALK_MAX_ENTRIES:
            return folder
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif (entry.inode() & _INO_MASK) in inodes and _is_socket(entry.path, dev, inodes):
                return entry.path
    return None


def _is_socket(path: str, dev: int, inodes: set[int]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_dev == dev and (st.st_ino & _INO_MASK) in inodes


def _place(name: bytes, ident: Identity, listing: dict[bytes, dict[Identity, str] | None]) -> str | None:
    """Where the socket file of `ident` is, found through the name it was bound with: in
    the folder the name is in, under that name or another (a file linked there), one look
    at each folder for all its sockets. "" when that folder was seen whole and holds no
    such file: it was removed (the server listens on, unreachable), not moved with a
    renamed folder. None: unknown."""
    if not names_a_path(name):
        return None
    folder = name.rpartition(b"/")[0] or b"/"
    if not reachable(os.fsdecode(folder)):
        return None  # on a remote mount that does not answer: never looked at
    if folder not in listing:
        listing[folder] = _sockets_in(os.fsdecode(folder))
    sockets = listing[folder]
    if sockets is None:  # gone, unreadable or too big to list: the name alone
        path = os.fsdecode(name)
        return path if _identity(path) == ident else None
    return sockets.get(ident, "")


def names_a_path(name: bytes) -> bool:
    """Whether a bound socket's name is a path here. A relative name is the binder's
    folder's; so is `/proc/self/fd/<n>/srv.sock` (or `/dev/fd/...`): a server in a folder
    too deep for the 108-byte limit binds through a handle on it, and read here that names
    the reader's own handle <n>, another folder altogether."""
    return name.startswith(b"/") and not name.startswith((b"/proc/", b"/dev/fd/"))


def _sockets_in(folder: str) -> dict[Identity, str] | None:
    """The identity and path of every entry of `folder` that may be a socket (neither a
    folder nor a regular file), or None when it cannot be listed whole."""
    try:
        dev = os.lstat(folder).st_dev
        with os.scandir(folder) as entries:
            found: dict[Identity, str] = {}
            for count, entry in enumerate(entries):
                if count >= _NAMED_FOLDER_MAX:
                    return None
                if not entry.is_dir(follow_symlinks=False) and not entry.is_file(follow_symlinks=False):
                    found[(dev, entry.inode() & _INO_MASK)] = entry.path
            return found
    except OSError:
        return None


def _identity(path: str) -> Identity | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino & _INO_MASK) if stat.S_ISSOCK(st.st_mode) else None


def _bound_by_identity() -> dict[Identity, bytes]:
    """Every bound unix socket of this network namespace that has a file: its file's
    identity and the name it was bound with (a server's accepted connections repeat both;
    two servers may bind the same relative name in two folders)."""
    found: dict[Identity, bytes] = {}
    for name, kdev, ino in _dump():
        # The kernel's own device numbers: 12 bits of major above 20 of minor.
        found.setdefault((os.makedev(kdev >> 20, kdev & 0xFFFFF), ino), name)
    return found


def _dump() -> list[tuple[bytes, int, int]]:
    """(name, kernel device, inode) of each bound socket with a file, from one sock_diag
    dump; whatever was read when it fails or runs past its bounds."""
    import socket
    import struct

    found: list[tuple[bytes, int, int]] = []
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_SOCK_DIAG)
    except (OSError, AttributeError):
        return found  # no netlink here
    with sock:
        sock.settimeout(_DUMP_TIMEOUT_S)
        request = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0,
                              _UDIAG_SHOW_NAME | _UDIAG_SHOW_VFS, 0xFFFFFFFF, 0xFFFFFFFF)
        header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST_DUMP, 1, 0)
        read = 0
        try:
            sock.sendto(header + request, (0, 0))
            while read < _DUMP_MAX_BYTES:
                data = sock.recv(1 << 16)
                read += len(data)
                if not data or not _parse(data, found):
                    break
        except OSError:
            pass  # refused or too slow: what was read still counts
    return found


def _parse(data: bytes, found: list[tuple[bytes, int, int]]) -> bool:
    """Adds the sockets of one batch of messages; False once the dump is over."""
    import struct

    at = 0
    while at + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, at)
        if kind in (_NLMSG_DONE, _NLMSG_ERROR) or length < 16:
            return False
        end = min(at + length, len(data))
        name, vfs = b"", None
        attr = at + 32  # past the netlink header and unix_diag_msg
        while attr + 4 <= end:
            size, key = struct.unpack_from("=HH", data, attr)
            if size < 4:
                break
            if key == _UNIX_DIAG_NAME:
                name = data[attr + 4:attr + size].rstrip(b"\0")
            elif key == _UNIX_DIAG_VFS and size >= 12:
                vfs = struct.unpack_from("=II", data, attr + 4)
            attr += (size + 3) & ~3
        if vfs is not None:
            found.append((name, vfs[1], vfs[0]))
        at += (length + 3) & ~3
    return True


#: The calls that open a path, by machine: call number -> the argument (1-based) naming it.
_OPEN_CALLS = {"x86_64": {2: 1, 257: 2, 437: 2}, "aarch64": {56: 2, 437: 2}}
_AT_FDCWD = 0xFFFFFF9C  # -100 in 32 bits: a path relative to the caller's working folder


def path_being_opened(base: str) -> str | None:
    """The path the process at `base` (`/proc/<pid>`) waits to open (a FIFO's reader or
    writer waiting for the other end), or None: it is in no such call, or it cannot be read."""
    import platform

    try:
        with open(f"{base}/syscall", "rb") as fh:
            fields = fh.read().split()
        arg = _OPEN_CALLS.get(platform.machine(), {}).get(int(fields[0])) if fields[:1] != [b"running"] else None
        if arg is None or len(fields) <= arg:
            return None
        name = _string_at(f"{base}/mem", int(fields[arg], 16))
        if name and not name.startswith(b"/"):
            dirfd = int(fields[1], 16) & 0xFFFFFFFF if arg == 2 else _AT_FDCWD
            name = os.path.join(os.fsencode(os.readlink(f"{base}/{'cwd' if dirfd == _AT_FDCWD else f'fd/{dirfd}'}")), name)
    except (OSError, ValueError, IndexError, OverflowError):
        return None  # gone meanwhile, another user's, or a call of another shape
    return os.path.normpath(os.fsdecode(name)) if name.startswith(b"/") else None


def _string_at(mem: str, address: int) -> bytes:
    """The NUL-ended string at `address` of a process's memory, read a page at a time (the
    next page may not be mapped), at most PATH_MAX bytes."""
    read = b""
    with open(mem, "rb", buffering=0) as fh:
        while len(read) < 4096 and b"\0" not in read:
            fh.seek(address + len(read))
            chunk = fh.read(4096 - (address + len(read)) % 4096)
            if not chunk:
                break
            read += chunk
    return read.split(b"\0", 1)[0]
