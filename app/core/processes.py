"""Who else works in a folder right now, besides the Claude sessions: the working folder,
root, executable, open files and mapped files of every process this user can see
(`/proc/<pid>/cwd`, `root`, `exe`, `fd/*`, `maps`), the temp folder its environment names
(`TMPDIR`, `TMP`, `TEMP`: a job started with `TMPDIR=<a session's folder>` writes there
between long pauses, holding nothing open meanwhile), the absolute paths its command line
names (`python3 /tmp/tmp.X/serve.py` has read its script and closed it; a server run by a
venv's `bin/python` maps nothing of the venv but shows it there), and the unix sockets bound
in it (`/proc/net/unix`, and by the socket file's identity those it names no longer:
`socket_files`).

A dev server Claude started in a `mktemp -d` folder a week ago, a shell the user `cd`-ed
into a worktree, an editor holding a file open in a scratch folder: their session may be
long gone, but removing the folder under them breaks work in progress. A folder that holds
any of these paths is `in_use`. The kernel keeps these links current through renames, so
the same check finds a process in a folder that was moved aside for its removal.

This process is not counted: it is the one looking; nor is a copy of it forked without a new
program (the scanner's helper: forked from a threaded process, it holds copies of whatever
folder handles this process had open at that moment). Every other child counts. Without
/proc (not Linux) nothing is found.
"""

from __future__ import annotations

import os

_PROC = "/proc"
_LINKS = ("cwd", "root", "exe")
#: The variables that name a process's temp folder (`mktemp`, Python's `tempfile`, ...).
_TEMP_KEYS = (b"\0TMPDIR=/", b"\0TMP=/", b"\0TEMP=/")
#: How much of a process's environment is read: a few KiB as a rule.
_ENVIRON_MAX = 1 << 20
#: How old a reading `judging_paths_in_use` may hand out: judging many folders in one go
#: reads /proc once, not once per folder. A removal's last check always reads it anew.
_JUDGING_S = 1.0
_last: tuple[float, tuple[str, ...]] | None = None


class PathsInUse(tuple[str, ...]):
    """The paths of one reading, and the identities (device, inode) of the socket files
    servers are bound to that no name leads to (`socket_files`): `first_inside` looks for
    those in a folder only when it finds no path."""

    unplaced_sockets: frozenset[tuple[int, int]] = frozenset()

    def socket_inside(self, folder: str) -> str | None:
        """`socket_files.socket_inside`, walked once per folder for this reading (a listing
        asks of each folder more than once within the second it reuses a reading)."""
        from app.core.socket_files import socket_inside

        walked: dict[str, str | None] = self.__dict__.setdefault("walked", {})
        if folder not in walked:
            walked[folder] = socket_inside(folder, self.unplaced_sockets)
        return walked[folder]


def paths_in_use() -> tuple[str, ...]:
    """The absolute paths other processes work in or hold open, sorted and distinct."""
    from app.core.socket_files import bound_socket_files

    me = os.getpid()
    pids = _pids()
    found: set[str] = set()
    real: dict[bytes, str] = {}  # most processes share one TMPDIR: it is resolved once
    mine = _cmdline(me)
    # The command lines of this process's callers name what they asked it to act on
    # (`uv run claudetto release PATH`): that is no use of the path.
    callers = _ancestors(me)
    for pid in pids:
        if pid == me or (_parent(pid) == me and _cmdline(pid) == mine):
            continue
        base = f"{_PROC}/{pid}"
        for link in _LINKS:
            _add(found, f"{base}/{link}")
        _add_maps(found, f"{base}/maps")
        _add_temp_folders(found, f"{base}/environ", real)
        if pid not in callers:
            _add_arguments(found, _cmdline(pid), f"{base}/cwd")
        try:
            fds = os.listdir(f"{base}/fd")
        except OSError:
            continue
        for fd in fds:
            _add(found, f"{base}/fd/{fd}")
    _add_bound_sockets(found)
    placed, unplaced = bound_socket_files()
    found.update(placed)
    found.discard("/")  # every process's root: it holds nothing in particular
    used = PathsInUse(sorted(found))
    used.unplaced_sockets = unplaced
    return used


def _add_temp_folders(found: set[str], environ: str, real: dict[bytes, str]) -> None:
    """The temp folders a process's environment names, as it began (real paths). A temp
    folder of `/tmp` or of `claude-<uid>` lies above the folders judged: it keeps none."""
    data = _read_environ(environ)
    if data is None:
        return  # gone meanwhile, or another user's
    data = b"\0" + data  # each key is found as NUL + name
    for key in _TEMP_KEYS:
        at = data.find(key)
        if at < 0:
            continue
        start = at + len(key) - 1
        end = data.find(b"\0", start)
        value = data[start:end if end >= 0 else len(data)]
        if value not in real and len(value) < 4096:
            real[value] = os.path.realpath(os.fsdecode(value))
        if value in real:
            found.add(real[value])


def _read_environ(environ: str) -> bytes | None:
    """At most `_ENVIRON_MAX` bytes of `/proc/<pid>/environ`, in small reads: a 1 MiB
    buffer for each process (most hold a few KiB) would cost more than all the rest."""
    try:
        fd = os.open(environ, os.O_RDONLY)
    except OSError:
        return None
    parts: list[bytes] = []
    size = 0
    try:
        while size < _ENVIRON_MAX:
            chunk = os.read(fd, min(1 << 16, _ENVIRON_MAX - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(parts)


def _add_bound_sockets(found: set[str]) -> None:
    """The files of the unix sockets some process has bound and still holds open (a dev
    server's `$TMPDIR/tmp.X/dev.sock`): its open files read `socket:[...]`, so only the
    kernel's list of sockets names the path. Removing it cuts every new client off."""
    try:
        with open(f"{_PROC}/net/unix", "rb") as fh:
            data = fh.read()
    except OSError:
        return
    real: dict[str, str] = {}  # a desktop binds hundreds of sockets in a few folders
    for line in data.splitlines()[1:]:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith(b"/"):
            bound = os.path.normpath(os.fsdecode(fields[7]))  # as it was bound: parents unresolved
            folder = os.path.dirname(bound)
            if folder not in real:
                real[folder] = os.path.realpath(folder)
            found.add(os.path.join(real[folder], os.path.basename(bound)))


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return []  # no /proc: nothing is known to be in use by another process


def config_dirs_of_processes(home: str | None) -> set[str]:
    """The `CLAUDE_CONFIG_DIR` each running process of `home` was started with (its
    environment as it began: `/proc/<pid>/environ`)."""
    found: set[str] = set()
    for pid in _pids():
        data = _read_environ(f"{_PROC}/{pid}/environ")
        if data is None:
            continue
        if b"CLAUDE_CONFIG_DIR=/" not in data:
            continue
        env = dict(item.split(b"=", 1) for item in data.split(b"\0") if b"=" in item)
        config = env.get(b"CLAUDE_CONFIG_DIR", b"")
        if home and os.fsdecode(env.get(b"HOME", b"")) == home and config.startswith(b"/"):
            found.add(os.fsdecode(config))
    return found


def judging_paths_in_use() -> tuple[str, ...]:
    """`paths_in_use()` for a judgement (a listing, a verdict before the removal's own last
    check): a reading up to a second old is reused."""
    import time

    global _last
    now = time.monotonic()
    if _last is None or now - _last[0] > _JUDGING_S:
        _last = (now, paths_in_use())
    return _last[1]


def _add(found: set[str], link: str) -> None:
    try:
        target = os.readlink(link)
    except OSError:
        return  # gone meanwhile, or another user's
    # Sockets, pipes and anonymous inodes read `socket:[...]` and the like; a deleted
    # file reads `<path> (deleted)` and holds nothing on disk a removal could break.
    if target.startswith("/") and not target.endswith(" (deleted)"):
        found.add(target)


def _add_maps(found: set[str], maps: str) -> None:
    """The files a process has mapped (its libraries, a `.so` loaded from a temp folder)."""
    try:
        with open(maps, "rb") as fh:
            data = fh.read()
    except OSError:
        return
    for line in data.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith(b"/"):
            path = os.fsdecode(fields[5])
            if not path.endswith(" (deleted)"):
                found.add(path)


def _add_arguments(found: set[str], cmdline: bytes | None, cwd_link: str) -> None:
    """The paths a command line names: absolute ones, relative ones read from the process's
    cwd (`node node_modules/.bin/vite` typed in a checkout), and an option's value
    (`--directory=dist`): a server that reads its files as it goes holds none of them open.
    argv[0] counts only when written as a path (`.venv/bin/python`: the exe is the link's
    target, elsewhere)."""
    args = (cmdline or b"").split(b"\0")
    cwd: str | None = None
    for arg in args if args and b"/" in args[0] else args[1:]:
        value = arg.split(b"=", 1)[1] if arg.startswith(b"-") and b"=" in arg else arg
        if not value or value.startswith(b"-") or len(value) >= 4096:
            continue
        if not value.startswith(b"/"):
            if cwd is None:
                try:
                    cwd = os.readlink(cwd_link)
                except OSError:
                    cwd = ""  # gone meanwhile, or another user's: its relative paths name nothing
            if not cwd:
                continue
            value = os.path.join(os.fsencode(cwd), value)
        found.add(os.path.normpath(os.fsdecode(value)))


def _ancestors(pid: int) -> set[int]:
    found: set[int] = set()
    parent = _parent(pid)
    while parent is not None and parent > 1 and parent not in found and len(found) < 64:
        found.add(parent)
        parent = _parent(parent)
    return found


def _parent(pid: int) -> int | None:
    from app.core.claude_process import proc_stat

    try:
        found = proc_stat(pid)
    except OSError:
        return None
    return found[1] if found is not None else None


def _cmdline(pid: int) -> bytes | None:
    try:
        with open(f"{_PROC}/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return None


def first_inside(folder: str, used: tuple[str, ...]) -> str | None:
    """The first path of `used` at `folder` or below it (a path above it, such as a
    `TMPDIR` of `/tmp`, keeps nothing), else a socket file in it that a server is bound to
    under a name that no longer leads there, else None."""
    from app.core.paths import inside

    found = next((p for p in used if inside(p, folder)), None)
    if found is None and isinstance(used, PathsInUse) and used.unplaced_sockets:
        found = used.socket_inside(folder)
    return found
