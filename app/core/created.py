"""Did this call make that path? The evidence the recorder needs before it notes an output.

A command names a target; it does not prove it made it (`git clone URL dir || git -C dir
pull`, `cp -r missing dest || true`, a copy merged into a folder that was there, `mktemp -d
&& ls -d "$TMPDIR"/tmp.*` listing other programs' folders, `CLAUDE_CONFIG_DIR=<a folder
that was there> claude`). A path the GC later removes on its own age must be one this call
created, so every kind (temp, copy, worktree, config, scratch) is recorded only when the
path exists, is no symlink, is this user's, and was created within the call's window
(`window_s`): by its birth time (statx STATX_BTIME) when the file system reports one, else
by its ctime, and then every entry at its top must be that fresh too (an old entry says the
folder was there before). A copy merged into what may be an existing folder
(`src/.`, `-T`, `DIR/<name>`) needs the birth time: a ctime moves when entries are added, so
without a birth time it is not recorded.

A scratch file (a Write into the temp folder) is judged in two halves. The hook
(`write_evidence`, on every Write into the temp folder, so it reads no birth time: ctypes
costs ~3 ms) rejects what the lstat alone shows (a Write that says it replaced a file,
`type: "update"`; a ctime older than the call) and stores the call's window with the file it
saw (device, inode). The sweep (`why_unproven`, through app/core/gc_records.py) reads the
birth time then: a birth time never changes, so it says at the sweep what it said at the
call, and a file another one replaced since (another inode, a later birth) fails. An
overwrite moves a file's ctime as much as a creation does, so without a birth time only the
Write's own word that it created the file (`type: "create"`) counts; `update` is never
recorded, whatever the birth time says (a write through a temporary file and a rename gives
an old path a new birth). `why_not_written` is both halves at once.

Loaded only when a call names an output; ctypes only when a birth time is read.
"""

from __future__ import annotations

import os
import stat
import sys

_AT_FDCWD = -100
_AT_SYMLINK_NOFOLLOW = 0x100
_STATX_BTIME = 0x800
_STATX_TYPE_NLINK = 0x5  # STATX_TYPE | STATX_NLINK
_STATX_SIZE = 256  # sizeof(struct statx)
_BTIME_OFFSET = 80  # struct statx: stx_btime {__s64 tv_sec; __u32 tv_nsec; ...}
#: The Bash tool's own timeout bounds (ms): the window a call's outputs were made in.
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
#: The hook starts a little after the tool ends (Claude's own work, the interpreter's start,
#: other hooks on a busy machine): this much is looked back beyond `duration_ms` (seconds).
#: The Bash timeout needs none: it already bounds the run from above.
DURATION_SLACK_S = 2.0
#: Time stamps come from a coarse clock: this much slack either side of the window (seconds).
CLOCK_SLACK_S = 1.0
#: At most this many top entries of a folder are looked at for the ctime check.
MAX_ENTRIES = 256
#: At most this many entries inside an output are looked at for one moved in (`moved_in`).
MAX_INNER_ENTRIES = 10_000
#: Folders that only package managers and interpreters fill: not looked into for an entry moved in.
TOOL_FOLDERS = frozenset({"node_modules", ".venv", "__pycache__", ".next"})
#: A stored birth time is read again at the sweep: the same nanoseconds, up to a float's rounding.
_BIRTH_TOLERANCE_S = 1e-6

_statx_fn: object = None


def _statx() -> object:
    """glibc's `statx`, or False when the C library has none."""
    global _statx_fn
    if _statx_fn is None:
        import ctypes  # only when a birth time is needed: ~3 ms on a hook

        try:
            fn = ctypes.CDLL(None, use_errno=True).statx
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            _statx_fn = fn
        except (AttributeError, OSError):
            _statx_fn = False
    return _statx_fn


def birth_time(path: str) -> float | None:
    """The creation time of `path` itself (no symlink followed), or None when the C library
    or the file system does not report one, or the path cannot be read."""
    fn = _statx()
    if not fn:
        return None
    import ctypes

    buf = ctypes.create_string_buffer(_STATX_SIZE)
    try:
        encoded = os.fsencode(path)
    except (TypeError, ValueError):
        return None
    if b"\x00" in encoded or fn(_AT_FDCWD, encoded, _AT_SYMLINK_NOFOLLOW, _STATX_BTIME, buf) != 0:  # type: ignore[operator]
        return None
    raw = buf.raw
    order = sys.byteorder
    if not int.from_bytes(raw[0:4], order) & _STATX_BTIME:  # stx_mask: what the fs filled in
        return None
    sec = int.from_bytes(raw[_BTIME_OFFSET:_BTIME_OFFSET + 8], order, signed=True)
    nsec = int.from_bytes(raw[_BTIME_OFFSET + 8:_BTIME_OFFSET + 12], order)
    return sec + nsec / 1e9


def moved_in(folder: str, born: float, budget: int = MAX_INNER_ENTRIES, *, cut_short: str | None = None) -> str | None:
    """An entry inside `folder` born before `born` (the folder's own birth), or None. What a
    call makes in a folder it made is born after it; an older entry was moved in from
    elsewhere (a rename keeps the birth time: the user's draft parked in a temp folder), so
    it is nobody's output. A file with other hard links is passed over (removing one name
    loses no data: a local `git clone` links its objects), and so is a `.git` (git's rules,
    app/core/unique_work.py, judge a repository). Shallowest first, never through a
    symlink nor into another file system, nor into a folder only tools fill (`TOOL_FOLDERS`:
    where most entries of a big output lie, and nobody parks their own work; `build` or
    `dist` may well hold a draft, so they are looked into), at most `budget` entries (4.5 us each); None when the folder cannot be
    listed or the file system reports no birth times. A look cut short by the budget found
    nothing yet proves nothing: it returns `cut_short` (None for a second look, made after
    a full first one)."""
    fn = _statx()
    if not fn:
        return None
    import ctypes

    buf = ctypes.create_string_buffer(_STATX_SIZE)
    order = sys.byteorder
    try:
        device = os.lstat(folder).st_dev
    except OSError:
        return None
    queue, seen = [folder], 0
    for current in queue:  # grows while it is read: breadth first
        try:
            with os.scandir(current) as entries:
                names = [entry.path for entry in entries]
        except OSError:
            continue
        for name in names:
            seen += 1
            if seen > budget:
                return cut_short
            if name.endswith("/.git"):
                continue  # git's own rules judge a repository (a local clone's packs outlive their links)
            if fn(_AT_FDCWD, os.fsencode(name), _AT_SYMLINK_NOFOLLOW, _STATX_BTIME | _STATX_TYPE_NLINK, buf) != 0:  # type: ignore[operator]
                continue
            raw = buf.raw
            folder_kind = stat.S_ISDIR(int.from_bytes(raw[28:30], order))
            if int.from_bytes(raw[0:4], order) & _STATX_BTIME:
                sec = int.from_bytes(raw[_BTIME_OFFSET:_BTIME_OFFSET + 8], order, signed=True)
                nsec = int.from_bytes(raw[_BTIME_OFFSET + 8:_BTIME_OFFSET + 12], order)
                if sec + nsec / 1e9 < born and (folder_kind or int.from_bytes(raw[16:20], order) == 1):
                    return name
            if folder_kind and os.path.basename(name) not in TOOL_FOLDERS and os.makedev(int.from_bytes(raw[136:140], order),
                                          int.from_bytes(raw[140:144], order)) == device:
                queue.append(name)
    return None


def output_moved_in(folder: str, evidences: list[object], budget: int = MAX_INNER_ENTRIES,
                    shown_as: str = "", *, first_look: bool = True) -> str | None:
    """`moved_in` for a recorded output (logged as `shown_as`): its birth is the one a record
    stored (a Bash call's evidence), else the one the folder has now (a moved folder keeps it).
    A first look (the judgement) that runs out of entries keeps the folder: unsure, keep; the
    removal's second look, smaller, only adds to a full first one."""
    stored = [e.get("born") for e in evidences if isinstance(e, dict)]
    born = next((b for b in stored if isinstance(b, int | float) and not isinstance(b, bool)), None)
    if born is None:
        born = birth_time(folder)
    found = moved_in(folder, born, budget, cut_short=folder if first_look else None) if born is not None else None
    if found is not None:
        from app.core.log import log

        if found == folder:
            log(f"gc: {shown_as or folder} has over {budget} entries outside its tool folders: "
                "not all could be looked at for one moved in from elsewhere, kept")
        else:
            log(f"gc: {shown_as or folder} holds {found!r}, born before the output: moved in from elsewhere, kept")
    return found


def window_s(tool_input: dict[str, object], duration_ms: object = None) -> float:
    """How far back a call can have made something, in seconds: PostToolUse's `duration_ms`
    (the tool's real run time) plus `DURATION_SLACK_S` when the payload has one; else the
    Bash `timeout` (ms), by default 120,000, at most 600,000. Both the unprinted-mktemp
    search and the evidence checks (below) look back this far."""
    if isinstance(duration_ms, int | float) and not isinstance(duration_ms, bool) and duration_ms >= 0:
        return min(float(duration_ms), MAX_TIMEOUT_MS) / 1000 + DURATION_SLACK_S
    value = tool_input.get("timeout")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return min(float(value), MAX_TIMEOUT_MS) / 1000
    return DEFAULT_TIMEOUT_MS / 1000


def _mine(path: str, *, regular: bool = False) -> tuple[os.stat_result | None, str | None]:
    """(its lstat, None) when `path` exists, is no symlink and is this user's (a regular
    file when `regular`), else (None, the reason)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None, "it does not exist after the call"
    if stat.S_ISLNK(st.st_mode):
        return None, "it is a symlink"
    if regular and not stat.S_ISREG(st.st_mode):
        return None, "it is not a regular file"
    if st.st_uid != os.getuid():
        return None, "it is not this user's"
    return st, None


def _why_not_born(born: float, low: float, high: float, now: float) -> str | None:
    if born < low:
        return f"it was there before the call (created {now - born:.0f} s ago)"
    if born > high:
        return "its creation time is in the future"
    return None


def why_not_made(path: str, since: float, now: float, *, merged: bool, use_birth: bool = True) -> str | None:
    """None when there is evidence this call made `path` (created within `since`..`now`),
    else the reason it is not recorded, for the log (`made_evidence`, its evidence dropped)."""
    return made_evidence(path, since, now, merged=merged, use_birth=use_birth)[1]


def made_evidence(path: str, since: float, now: float, *, merged: bool,
                  use_birth: bool = True) -> tuple[dict[str, object] | None, str | None]:
    """(the identity of what the call made, None) when there is evidence this call made
    `path` (created within `since`..`now`), else (None, the reason, for the log). The
    identity (device, inode, and the birth time when the file system has one) is stored
    with the record: whoever reads it later counts the record only while the path still
    holds that object (`why_unproven`). `merged`: the copy may be a folder that was there
    before with entries added (needs a birth time). `use_birth` False: judge as on a file
    system without birth times."""
    st, why = _mine(path)
    if st is None:
        return None, why
    low, high = since - CLOCK_SLACK_S, now + CLOCK_SLACK_S
    born = birth_time(path) if use_birth else None
    why = _why_not_born(born, low, high, now) if born is not None else _why_not_fresh(path, st, low, high, merged)
    if why is not None:
        return None, why
    evidence: dict[str, object] = {"dev": st.st_dev, "ino": st.st_ino}
    if born is not None:
        evidence["born"] = born
    return evidence, None


def _why_not_fresh(path: str, st: os.stat_result, low: float, high: float, merged: bool) -> str | None:
    """Without a birth time: its ctime, and that of every entry at its top, in the window."""
    if merged:
        return ("the file system reports no creation time, and the copy may have been merged into "
                "a folder that was there")
    if not low <= st.st_ctime <= high:
        return "it was there before the call (no creation time; its ctime is older than the call)"
    if stat.S_ISDIR(st.st_mode):
        try:
            with os.scandir(path) as entries:
                for count, entry in enumerate(entries):
                    if count >= MAX_ENTRIES:
                        break
                    if entry.stat(follow_symlinks=False).st_ctime < low:
                        return f"it was there before the call (no creation time; {entry.name!r} in it is older)"
        except OSError as exc:
            return f"cannot list it: {exc.strerror or exc}"
    return None


def write_evidence(path: str, since: float, now: float, *,
                   created: bool | None) -> tuple[dict[str, object] | None, str | None]:
    """The hook's half of the evidence for a Write (no birth time read: that needs ctypes,
    ~3 ms on every Write, and a birth time never changes, so the sweep reads it).

    (evidence, None) when the file may be the Write's: the call's window and the file seen
    (device, inode) and what the Write said (`created`), for `why_unproven` at the sweep;
    (None, the reason) when it cannot be: missing, a symlink, not a regular file, another
    user's, replaced by the Write's own word, or a ctime older than the call (a creation
    sets the ctime, and nothing moves it back, so the birth cannot be later)."""
    st, why = _mine(path, regular=True)
    if st is None:
        return None, why
    if created is False:
        return None, "the Write replaced a file that was there"
    if not since - CLOCK_SLACK_S <= st.st_ctime <= now + CLOCK_SLACK_S:
        return None, "it was there before the call (its ctime is older than the call)"
    return {"since": since, "until": now, "dev": st.st_dev, "ino": st.st_ino, "created": created}, None


def _fields(evidence: object) -> tuple[float, float, int, int, bool | None] | None:
    """The parts of a stored evidence, or None when it is not the shape `write_evidence` makes."""
    if not isinstance(evidence, dict):
        return None
    since, until = evidence.get("since"), evidence.get("until")
    dev, ino, created = evidence.get("dev"), evidence.get("ino"), evidence.get("created")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (since, until)):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (dev, ino)):
        return None
    if created not in (True, None):
        return None
    return float(since), float(until), int(dev), int(ino), created  # type: ignore[arg-type]


def why_unproven(path: str, evidence: object, *, use_birth: bool = True) -> str | None:
    """None when `path` still holds what the call that recorded it made, else why not: such
    a record's path is never removed. A Bash call's evidence (`made_evidence`) is its
    identity: the same device and inode, and the same birth time when one was stored (an
    inode number comes back after a removal; a birth time does not). A Write's
    (`write_evidence`) is the file the hook saw, born within the call's window (without a
    birth time, the Write's own word that it created it). A moved object keeps all three,
    so the removal's last check passes the folder it moved aside. A path that is gone is
    None: there is nothing to remove, and the GC drops its record."""
    if isinstance(evidence, dict) and "since" not in evidence:
        return _why_not_same(path, evidence, use_birth=use_birth)
    fields = _fields(evidence)
    if fields is None:
        return "its evidence cannot be read"
    since, until, dev, ino, created = fields
    st, why = _same_object(path, dev, ino, regular=True)
    if st is None:
        return why
    born = birth_time(path) if use_birth else None
    if born is not None:
        import time

        return _why_not_born(born, since - CLOCK_SLACK_S, until + CLOCK_SLACK_S, time.time())
    if created is not True:
        return ("the file system reports no creation time and the Write does not say it created the "
                "file (an overwrite moves the ctime too)")
    return None


def _same_object(path: str, dev: int, ino: int, *, regular: bool = False
                 ) -> tuple[os.stat_result | None, str | None]:
    """(its lstat, None) when `path` holds the object (device, inode) a record saw, this
    user's and no symlink; (None, None) when it is gone; else (None, why not)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read it: {exc.strerror or exc}"
    if ((st.st_dev, st.st_ino) != (dev, ino) or stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid()
            or (regular and not stat.S_ISREG(st.st_mode))):
        return None, "another file or folder took its place after the call"
    return st, None


def _why_not_same(path: str, evidence: dict[object, object], *, use_birth: bool) -> str | None:
    """A Bash record's check: the object at `path` is the one the call made (`made_evidence`)."""
    dev, ino, born = evidence.get("dev"), evidence.get("ino"), evidence.get("born")
    if (not isinstance(dev, int) or not isinstance(ino, int) or isinstance(dev, bool) or isinstance(ino, bool)
            or not (born is None or (isinstance(born, int | float) and not isinstance(born, bool)))):
        return "its evidence cannot be read"
    st, why = _same_object(path, dev, ino)
    if st is None or born is None or not use_birth:
        return why
    now_born = birth_time(path)
    if now_born is None or abs(now_born - born) > _BIRTH_TOLERANCE_S:
        return "another file or folder took its place after the call (its creation time differs)"
    return None


def why_not_written(path: str, since: float, now: float, *, created: bool | None,
                    use_birth: bool = True) -> str | None:
    """None when there is evidence a Write created the file `path` within `since`..`now`,
    else the reason: both halves at once (`write_evidence`, then `why_unproven`).
    `created`: what the Write's response says (True for `type: "create"`, False for
    `"update"`, None when it says neither). `use_birth` False: judge as on a file system
    without birth times."""
    evidence, why = write_evidence(path, since, now, created=created)
    return why if evidence is None else why_unproven(path, evidence, use_birth=use_birth)


def lstat_mtime(path: str) -> float | None:
    """The path's own mtime now (a copy that kept its source's times is recorded with it), or
    None when it cannot be read."""
    try:
        return os.lstat(path).st_mtime
    except (OSError, ValueError):
        return None
