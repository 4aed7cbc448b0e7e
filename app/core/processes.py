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

import errno
import os

from app.core.claude_process import (
    KCMP_FILES,
    KCMP_FS,
    another_users_started_here,
    callers,
    cmdline,
    git_run_by,
    proc_family,
    read_environ,
    running_pids,
    shares,
    signalable,
)
from app.core.hung_mounts import real_paths
from app.core.log import log
from app.core.mounts import namespace_of as _namespace
from app.core.mounts import overlay_layers_in, sources_here, unescape
from app.core.socket_files import other_network_sockets, path_being_opened

_PROC = "/proc"
#: The variables that name a folder a process writes in as it goes: its temp folder (`mktemp`,
#: `tempfile`), its home and the folders under it (`HOME=$(mktemp -d) npm test`), Claude's config.
_TEMP_KEYS = (b"\0TMPDIR=/", b"\0TMP=/", b"\0TEMP=/", b"\0HOME=/", b"\0CLAUDE_CONFIG_DIR=/",
              *(b"\0XDG_%s=/" % k for k in (b"CACHE_HOME", b"CONFIG_HOME", b"DATA_HOME", b"STATE_HOME", b"RUNTIME_DIR")))
#: The variables that list folders a process loads from as it goes, `:`-separated.
_SEARCH_KEYS = (b"\0PATH=", b"\0LD_LIBRARY_PATH=", b"\0PYTHONPATH=", b"\0NODE_PATH=")
#: What ends a word of a shell script besides blanks: quotes, operators, redirections.
_BLANKS = bytes.maketrans(b"\"';&|()<>`=$", b" " * 12)
#: How old a reading `judging_paths_in_use` may hand out: judging many folders in one go
#: reads /proc once, not once per folder. A removal's last check always reads it anew.
_JUDGING_S = 1.0
_last: tuple[float, tuple[str, ...]] | None = None
_REAL: dict[str, str] = {}
#: How many times the list of processes is read in one reading (processes started meanwhile).
_ROUNDS = 5


class PathsInUse(tuple[str, ...]):
    """The paths of one reading, and the identities (device, inode) of the socket files
    servers are bound to that no name leads to (`socket_files`): `first_inside` looks for
    those in a folder only when it finds no path."""

    unplaced_sockets: frozenset[tuple[int, int]] = frozenset()
    hidden: int | None = None  # a process tied to this user whose folders cannot be read
    mounted: frozenset[str] = frozenset()  # the folders here other mount namespaces show

    def socket_inside(self, folder: str) -> str | None:
        """`socket_files.socket_inside`, walked once per folder for this reading (a listing
        asks of each folder more than once within the second it reuses a reading)."""
        from app.core.socket_files import socket_inside

        walked: dict[str, str | None] = self.__dict__.setdefault("walked", {})
        if folder not in walked:
            walked[folder] = socket_inside(folder, self.unplaced_sockets)
        return walked[folder]

    def names_of(self, folder: str) -> list[str]:
        """`folder` and its other names here: the same files bind-mounted elsewhere
        (`mount --bind <worktree> /mnt/wt`, a shell in /mnt/wt), or a folder inside it."""
        if "mounts" not in self.__dict__:
            self.__dict__["mounts"] = _mounts(f"{_PROC}/self/mountinfo")
        mounts = self.__dict__["mounts"]
        return list(dict.fromkeys([folder, *_name_here(folder, mounts, mounts)]))


def paths_in_use() -> tuple[str, ...]:
    """The absolute paths other processes work in or hold open, sorted and distinct. The
    list of processes is read again after they are: a process started meanwhile (a daemon's
    child whose parent left before it was read, a job forked from a shell) is read too. A
    list that cannot be read, or a process whose folders cannot be read for another cause
    than its end or its owner (no file handle left here: `EMFILE`), leaves every folder
    unsure: kept."""
    from app.core.socket_files import add_sockets_by_name, bound_socket_files

    scan, seen = _Scan(), set()
    _REAL.clear()  # the real paths of the paths command lines name, for this reading only
    pids = running_pids()
    if not pids and os.path.isdir(f"{_PROC}/self"):
        scan.unsure(0, "the list of processes cannot be read")
    for _ in range(_ROUNDS):
        new = [pid for pid in pids if pid not in seen]
        if not new:
            break
        seen.update(new)
        for pid in new:
            scan.read(pid)
        pids = running_pids()
    found = scan.found
    add_sockets_by_name(found)
    placed, unplaced = bound_socket_files()
    found.update(placed)
    found.discard("/")  # every process's root: it holds nothing in particular
    used = PathsInUse(sorted(found))
    used.unplaced_sockets = unplaced
    used.hidden = scan.hidden
    used.mounted = frozenset(scan.here.mounted - {"/"})
    return used


#: Errors that say a process is gone (or another user's): what it held is no one's concern.
_GONE = (0, errno.ENOENT, errno.ESRCH, errno.EACCES)


class _Scan:
    """One reading of every process: what they hold, and the first process whose folders
    are unknown (`hidden`: every folder is then kept)."""

    def __init__(self) -> None:
        self.me = os.getpid()
        self.mine = cmdline(self.me)
        # The command lines of this process's callers name what they asked it to act on
        # (`uv run claudetto release PATH`): that is no use of the path.
        self.callers = set(callers(self.me))
        self.here = _Namespaces()
        self.found: set[str] = set()
        self.real: dict[bytes, str] = {}  # most processes share one TMPDIR: it is resolved once
        self.owners: dict[int, tuple[int, ...]] = {}
        self.hidden: int | None = None
        self.nets: set[str] = set()  # the network namespaces whose sockets are read
        self.helpers: set[int] = set()  # the gits this process runs (`helper`)

    def unsure(self, pid: int, why: str) -> None:
        if self.hidden is None:
            log(f"processes: pid {pid}: {why}: every folder is kept")
            self.hidden = pid

    def read(self, pid: int) -> None:
        parent, threads, state = proc_family(pid)
        if pid == self.me or (parent == self.me and cmdline(pid) == self.mine):
            return
        if (parent == self.me or parent in self.helpers) and git_run_by(pid, self.me):
            self.helpers.add(pid)  # a git this process runs (git.HELPER_MARK), or what it started
            return
        base = f"{_PROC}/{pid}"
        held: set[str] = set()
        error = _add_tables(held, base)
        if threads > 1 and (not error or state == b"Z"):  # unreadable: so are its threads
            _add_threads(held, pid, whole=error != 0)
        elif error == errno.EACCES and another_users_started_here(pid, self.owners):
            self.unsure(pid, "another user's started by one of ours, cannot be read")
        elif error not in _GONE and signalable(pid):
            self.unsure(pid, f"its folders cannot be read ({os.strerror(error)})")
        _add_environment(held, f"{base}/environ", self.real)
        if pid not in self.callers:
            _add_arguments(held, cmdline(pid), f"{base}/cwd")
        held.update(filter(None, [path_being_opened(base)]), other_network_sockets(base, self.nets))
        self.found.update(self.here.translated(pid, held))


class _Namespaces:
    """The names of a process's paths here. `/proc/<pid>/cwd` and the rest read as the
    process sees them: in another mount namespace (a container started with `-v
    $PWD:/app`, rootless podman, `unshare -m`) the folder it works in reads `/app`. Each
    such path is named here through both mount tables: the mount it lies on there gives
    its device and its path on that file system, and every mount of that device here
    holding that path gives a name here. A path with no name here is kept as it reads.
    The folders its mounts show (`mounted`, named here) and its overlays' layers are in use too."""

    def __init__(self) -> None:
        self.own = _namespace("self")
        self.tables: dict[str, list[tuple[str, str, str]]] = {}
        self.mounted: set[str] = set()

    def translated(self, pid: int, held: set[str]) -> set[str]:
        theirs = _namespace(str(pid))
        if theirs is None or theirs == self.own:
            return held
        if "self" not in self.tables:
            self.tables["self"] = _mounts(f"{_PROC}/self/mountinfo")
        if theirs not in self.tables:
            self.tables[theirs] = _mounts(f"{_PROC}/{pid}/mountinfo")
            self.mounted |= sources_here(self.tables[theirs], self.tables["self"])
            self.mounted |= overlay_layers_in(f"{_PROC}/{pid}/mountinfo")
        named: set[str] = set()
        for path in held:
            named.update(_name_here(path, self.tables[theirs], self.tables["self"]) or (path,))
        return named


def _mounts(mountinfo: str) -> list[tuple[str, str, str]]:
    """(mount point, device, root on its file system) of each line of a mount table."""
    try:
        with open(mountinfo, "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(b" ", 5)
        if len(fields) == 6:
            found.append((unescape(fields[4]), os.fsdecode(fields[2]), unescape(fields[3])))
    return found


def _name_here(path: str, theirs: list[tuple[str, str, str]], ours: list[tuple[str, str, str]]) -> list[str]:
    """The names here of `path` as a process of the mount table `theirs` sees it, and the
    mount points here of the folders inside it mounted there too."""
    from app.core.paths import inside

    on = None  # the mount it lies on: the last at the longest mount point above it
    for mount in theirs:
        if inside(path, mount[0]) and (on is None or len(mount[0]) >= len(on[0])):
            on = mount
    if on is None:
        return []
    point, device, root = on
    on_fs = os.path.normpath(os.path.join(root, os.path.relpath(path, point)))
    return [os.path.normpath(os.path.join(p, os.path.relpath(on_fs, r))) if inside(on_fs, r) else p
            for p, d, r in ours if d == device and (inside(on_fs, r) or inside(r, on_fs))]


def _add_environment(found: set[str], environ: str, real: dict[bytes, str]) -> None:
    """The temp and home folders a process's environment names, as it began, and the folders it
    loads programs and libraries from (`PATH` holding a venv's `bin`, `LD_LIBRARY_PATH`,
    `PYTHONPATH`, `NODE_PATH`: read lazily, nothing held open meanwhile); real paths. A
    folder of `/tmp`, `/usr/bin` or `claude-<uid>` lies above the folders judged: it keeps
    none."""
    data = read_environ(environ)
    if data is None:
        return  # gone meanwhile, or another user's
    data = b"\0" + data  # each key is found as NUL + name
    for key in (*_TEMP_KEYS, *_SEARCH_KEYS):
        at = data.find(key)
        if at < 0:
            continue
        start = at + len(key) - key.endswith(b"/")  # the `/` a temp key ends with is the value's
        end = data.find(b"\0", start)
        value = data[start:end if end >= 0 else len(data)]
        for entry in value.split(b":") if key in _SEARCH_KEYS else (value,):
            if entry not in real and entry.startswith(b"/") and len(entry) < 4096:
                # one on a dead `sshfs` (`PATH=~/remote/bin:...`) as written: a look there waits for ever
                real[entry] = real_paths([os.fsdecode(entry)])[0]
            if entry in real:
                found.add(real[entry])


def judging_paths_in_use() -> tuple[str, ...]:
    """`paths_in_use()` for a judgement (a listing, a verdict before the removal's own last
    check): a reading up to a second old is reused."""
    import time

    global _last
    now = time.monotonic()
    if _last is None or now - _last[0] > _JUDGING_S:
        _last = (now, paths_in_use())
    return _last[1]


def _add_tables(found: set[str], base: str) -> int:
    """The working folder, root, program, mapped and open files of one process (or thread,
    `base` = `/proc/<pid>/task/<tid>`); the error number when its working folder, maps or
    list of open files cannot be read, else 0. Another user's (EACCES) hides the rest as
    well: it is not asked for."""
    cwd = _add(found, f"{base}/cwd", deleted_too=True)
    if cwd == errno.EACCES:
        return cwd
    _add(found, f"{base}/root")
    _add(found, f"{base}/exe", deleted_too=True)
    maps = _add_maps(found, f"{base}/maps")
    try:
        fds = os.listdir(f"{base}/fd")
    except OSError as exc:
        return cwd or maps or exc.errno or errno.EIO
    for fd in fds:
        _add(found, f"{base}/fd/{fd}")
    return cwd or maps


def _add_threads(found: set[str], pid: int, *, whole: bool) -> None:
    """The working folders of a process's other threads: one that unshared its file system
    context (`unshare(CLONE_FS)`) works in a folder of its own, and a process whose main
    thread ended shows nothing at `/proc/<pid>` but keeps all of it in its other threads.
    Their open files are read too when the main thread's could not be, or when the kernel
    says a thread has a table of its own (`unshare(CLONE_FILES)`; `kcmp`, one call)."""
    try:
        tids = [t for t in os.listdir(f"{_PROC}/{pid}/task") if t != str(pid)]
    except OSError:
        return
    for tid in tids:
        base = f"{_PROC}/{pid}/task/{tid}"
        if whole:
            whole = _add_tables(found, base) != 0
        elif shares(pid, int(tid), KCMP_FILES) is False:
            _add_tables(found, base)
        elif shares(pid, int(tid), KCMP_FS) is not True:
            _add(found, f"{base}/cwd", deleted_too=True)


def _add(found: set[str], link: str, *, deleted_too: bool = False) -> int:
    """Adds the path a link of /proc names; 0, or the error number when it cannot be read."""
    try:
        target = os.readlink(link)
    except OSError as exc:
        return exc.errno or errno.EIO  # gone meanwhile, or another user's
    # Sockets, pipes and anonymous inodes read `socket:[...]` and the like; a deleted
    # file reads `<path> (deleted)` and holds nothing on disk a removal could break. A
    # deleted working folder or program is still where the process works and runs from:
    # it climbs out with `..`, goes on in a folder made again at that name (`rm -rf build
    # && mkdir build`), loads what lies beside its program.
    if deleted_too and target.endswith(" (deleted)"):
        target = target[: -len(" (deleted)")]
    if target.startswith("/") and not target.endswith(" (deleted)"):
        found.add(target)
    return 0


def _add_maps(found: set[str], maps: str) -> int:
    """The files a process has mapped (its libraries, a `.so` loaded from a temp folder); 0,
    or the error number when they cannot be read."""
    try:
        with open(maps, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return exc.errno or errno.EIO
    for line in data.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith(b"/"):
            path = os.fsdecode(fields[5])
            if not path.endswith(" (deleted)"):
                found.add(path)
    return 0


def _add_arguments(found: set[str], line: bytes | None, cwd_link: str) -> None:
    """The paths a command line names: absolute ones, relative ones read from the process's
    cwd (`node node_modules/.bin/vite` typed in a checkout), and an option's value
    (`--directory=dist`), each also by its real path: a server that reads its files as it
    goes holds none of them open. argv[0] counts only when written as a path
    (`.venv/bin/python`: the exe is the link's target, elsewhere). A script (`sh -c 'until
    [ -f /tmp/x/ready ]; do sleep 1; done'`) names the absolute paths among its words."""
    args = (line or b"").split(b"\0")
    cwd: str | None = None
    for arg in args if args and b"/" in args[0] else args[1:]:
        value = arg.split(b"=", 1)[1] if arg.startswith(b"-") and b"=" in arg else arg
        if b" " in value:
            found.update(os.path.normpath(os.fsdecode(w)) for w in value.translate(_BLANKS).split() if w[:1] == b"/")
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
        path = os.path.normpath(os.fsdecode(value))  # and where a link leads (`python3 ~/demo/serve.py`):
        found.update((path, _REAL.get(path) or _REAL.setdefault(path, real_paths([path])[0])))


def first_inside(folder: str, used: tuple[str, ...]) -> str | None:
    """The first path of `used` at `folder` or below it (a path above it, such as a
    `TMPDIR` of `/tmp`, keeps nothing), else a folder in it a mount of another namespace
    shows, else a socket file in it that a server is bound to under a name that no longer
    leads there, else None."""
    from app.core.paths import inside

    if not isinstance(used, PathsInUse):
        return next((p for p in used if inside(p, folder)), None)
    names = used.names_of(folder)
    if len(names) == 1:
        found = next((p for p in used if inside(p, folder)), None)
    else:
        found = next((p for p in used if any(inside(p, name) for name in names)), None)
    if found is None:
        found = next((p for p in sorted(used.mounted) if any(inside(p, name) for name in names)), None)
    if found is None and used.hidden is not None:
        found = folder  # unsure: a process tied to this user may work in any folder
    if found is None and used.unplaced_sockets:
        found = used.socket_inside(folder)
    return found
