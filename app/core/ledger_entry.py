"""The edit ledger's state file, what an entry must hold before the ledger judges it, which
file an edit wrote (and whether it wrote at all), and when the stat an entry holds still
stands for the file's content.

`ledger.json` under CLAUDETTO_HOME is `{"version": 1, "files": {path: entry}}`, the oldest
edit first (and `left` while a file that left the ledger waits to be told: `ledger_shared`). An entry holds `agent`, `session`, `hash` (16 hex digits), the stat its hash was
taken with (`size`, `mtime_ns`, `ctime_ns`, `inode`, `dev`, and `seen_ns`, when it was taken),
`edited_ns`, and `told`: null, or what the model was told (`{"deleted": true, ...}`, or
`{"deleted": false, "hash": ..., <the stat it saw>}`).

A file's stat (size, mtime_ns, ctime_ns, inode, device) stands for its content: a program
can set an mtime back but never a ctime, so a stat equal to the one a hash was taken with
means the same bytes, and the file is not read again. Except a racy stat: one taken less
than RACY_NS after the file's own mtime/ctime cannot prove it (a later write in the same
timestamp tick would leave it equal, git's "racy clean"), so such a file is checked by hash
until its stat is old enough.

An entry this version cannot trust (a number that is NaN, infinite, negative or a bool, a
hash that is not 16 hex digits) is skipped and logged, never judged: one bad entry never
silences the others. It stays in the file (it may be a newer version's) and ages out.

On the hot path of every prompt and edit: it imports only what the hook has loaded anyway.
A prompt with nothing changed needs this module and `ledger`, nothing more.
"""

from __future__ import annotations

import os
import stat

from app.core import paths
from app.core.log import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

VERSION = 1

# A stat taken less than this after the file's own mtime/ctime cannot prove that the
# content is unchanged (see the module's doc).
RACY_NS = 2_000_000_000

SIG_KEYS = ("size", "mtime_ns", "ctime_ns", "inode", "dev")


def empty() -> dict[str, Any]:
    return {"version": VERSION, "files": {}}


def files_of(data: Any) -> dict[str, Any]:
    """The entries of a ledger as read (anything else reads as no entries)."""
    if isinstance(data, dict) and isinstance(data.get("files"), dict):
        return data["files"]
    return {}


def writable(data: Any) -> dict[str, Any]:
    """The ledger to change in place; JSON of another shape is moved aside, never lost."""
    if isinstance(data, dict) and isinstance(data.get("files"), dict):
        return data
    if data != empty():
        from app.core.state import move_aside  # the one place that keeps a bad state file

        move_aside(paths.ledger_file_str(), f"a JSON {type(data).__name__} that is not a ledger")
    return empty()


def trusted(files: dict[str, Any], session: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The entries this version can judge, in file order; each other one is logged.

    With `session`: only that session's entries (and those no session can claim); another
    session's entries are judged, and their flaws logged, at that session's prompts."""
    good: list[tuple[str, dict[str, Any]]] = []
    for path, entry in files.items():
        if session is not None and isinstance(entry, dict):
            owner = entry.get("session")
            if owner != session and isinstance(owner, str) and owner:
                continue
        why = flaw(path, entry)
        if why is None:
            good.append((path, entry))
        else:
            from app.core.ledger_line import shown

            log(f"ledger: skipped the entry of {shown(str(path))}: {why}")
    return good


# the stat fields of an entry: (lowest, highest) value a real stat can give
_U64 = (0, 2**64 - 1)
_FILE_TIME = (-(2**95), 2**95)  # a file may be dated before 1970 or past 2262 (touch -d)
_NS = (0, 2**63 - 1)  # our own clock: never before 1970
_RANGES = {"size": _U64, "inode": _U64, "dev": _U64, "mtime_ns": _FILE_TIME, "ctime_ns": _FILE_TIME,
           "seen_ns": _NS}
_HEX = frozenset("0123456789abcdef")
_U64_MAX, (_TIME_MIN, _TIME_MAX), _NS_MAX = _U64[1], _FILE_TIME, _NS[1]


def flaw(path: Any, entry: Any) -> str | None:
    """Why this version cannot trust an entry, or None when it can judge it. Numbers must be
    ints in range (not NaN, an infinity, a float, a bool or negative where a stat cannot be):
    they are compared, subtracted and shown, and one bad value must not stop the rest."""
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return "not an absolute path"
    if not isinstance(entry, dict):
        return "not an object"
    if not isinstance(entry.get("agent"), str) or not entry["agent"]:
        return "no agent"
    if not isinstance(entry.get("session"), str) or not entry["session"]:
        return "no session"
    if not is_hash(entry.get("hash")):
        return "no 16-digit hash"
    if not _numbers_fit(entry):
        why = _bad_numbers(entry, {**_RANGES, "edited_ns": _NS})
        if why:
            return why
    return _told_flaw(entry.get("told"))


def _told_flaw(told: Any) -> str | None:
    """Why the told record of an entry cannot be trusted, or None (null is no record)."""
    if told is None:
        return None
    if not isinstance(told, dict) or not isinstance(told.get("deleted"), bool):
        return "told is not a told record"
    if told["deleted"]:
        return None
    if told.get("hash") is not None and not is_hash(told["hash"]):
        return "told: no 16-digit hash"
    why = _bad_numbers(told, _RANGES)
    return f"told: {why}" if why else None


def _numbers_fit(entry: dict[str, Any]) -> bool:
    """`_bad_numbers(entry, ...)` is None, in one expression: the check runs for every entry at
    every prompt, and the loop that names the bad number is only needed when there is one."""
    size, inode, dev = entry.get("size"), entry.get("inode"), entry.get("dev")
    mtime, ctime = entry.get("mtime_ns"), entry.get("ctime_ns")
    seen, edited = entry.get("seen_ns"), entry.get("edited_ns")
    return (type(size) is int and type(inode) is int and type(dev) is int and type(mtime) is int
            and type(ctime) is int and type(seen) is int and type(edited) is int
            and 0 <= size <= _U64_MAX and 0 <= inode <= _U64_MAX and 0 <= dev <= _U64_MAX
            and _TIME_MIN <= mtime <= _TIME_MAX and _TIME_MIN <= ctime <= _TIME_MAX
            and 0 <= seen <= _NS_MAX and 0 <= edited <= _NS_MAX)


def is_hash(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 16 and _HEX.issuperset(value)


def _bad_numbers(record: dict[str, Any], ranges: dict[str, tuple[int, int]]) -> str | None:
    for key, (low, high) in ranges.items():
        value = record.get(key)
        if type(value) is not int:
            return f"{key} is {str(value)[:40]}, not an integer"
        if not low <= value <= high:
            return f"{key} {value} is out of range"
    return None


# --- what an edit's payload names -----------------------------------------------------------


def edited_path(payload: Mapping[str, Any]) -> str | None:
    """The absolute path an edit tool wrote (`notebook_path` for NotebookEdit), or None. Resolved as Claude resolves it before it
    writes: `~` is the home, a relative path is taken from the payload's `cwd`, `..` and `.`
    are folded by name, and a leading `//` is `/` (other tools and the model show it so)."""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    raw = tool_input.get("notebook_path" if payload.get("tool_name") == "NotebookEdit" else "file_path")
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None
    if raw == "~" or raw.startswith("~/"):  # `~user` would cost a password-database lookup
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            return None
        raw = home + raw[1:]
    if not os.path.isabs(raw):
        cwd = payload.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            return None
        raw = os.path.join(cwd, raw)
    path = os.path.normpath(raw)
    return "/" + path.lstrip("/") if path.startswith("//") else path


def failed(response: Any) -> bool:
    """True when the tool's response says the edit did not happen (an old_string not found,
    a file changed since it was read). Such an edit must leave no entry: it would take the
    content on disk, often the very change behind the model's back that made the edit fail,
    for the model's own, and that change would never be told."""
    if isinstance(response, str):
        return response.lstrip().startswith(("<tool_use_error>", "Error:", "Error "))
    if isinstance(response, dict):
        error = response.get("error")
        return (response.get("is_error") is True or response.get("success") is False
                or (isinstance(error, str) and error.strip() != ""))
    return False


# --- the stat an entry holds --------------------------------------------------------------


def unmoved(path: str, entry: Mapping[str, Any], st: os.stat_result | None | bool = True) -> bool:
    """True when the file's stat now equals the one the entry's hash was taken with, and that
    one was old enough to trust: the content is the entry's, known without a read. The check
    each unchanged file costs at every prompt, so it is one stat and one expression. `st`:
    the stat already taken (None: nothing there), else it is taken here."""
    if st is True:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return False
    if not isinstance(st, os.stat_result):
        return False
    return (st.st_size == entry["size"] and st.st_mtime_ns == entry["mtime_ns"]
            and st.st_ctime_ns == entry["ctime_ns"] and st.st_ino == entry["inode"]
            and st.st_dev == entry["dev"] and stat.S_ISREG(st.st_mode)
            and entry["seen_ns"] - max(entry["mtime_ns"], entry["ctime_ns"]) >= RACY_NS)


def sig(st: os.stat_result, seen_ns: int) -> dict[str, int]:
    """The stat as an entry (or a told record) stores it; `seen_ns` is when it was taken."""
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
        "dev": st.st_dev,
        "seen_ns": seen_ns,
    }


def same_sig(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in SIG_KEYS)


def racy(stored: Mapping[str, Any]) -> bool:
    """True when the stat was taken too soon after the file's last change to trust it."""
    try:
        return int(stored["seen_ns"]) - max(int(stored["mtime_ns"]), int(stored["ctime_ns"])) < RACY_NS
    except (KeyError, TypeError, ValueError, OverflowError):
        return True


# --- a file that does not answer ----------------------------------------------------------

#: How long one hook waits for the stat of a file: a file on a mount whose server went away
#: (an sshfs whose host is gone, a dead NFS share) answers no look at all, ever, and Claude
#: kills a prompt hook that waits at 30 s (nothing told), the model's turn waiting with an
#: edit's hook for up to 600 s. A local stat answers in microseconds, a slow share in ms.
ANSWER_WAIT_S = 1.0

#: the paths, and the mount points they lie under, that did not answer in this process:
#: never looked at again
_silent: set[str] = set()
_silent_mounts: set[str] = set()


def stats(items: list[tuple[str, Any]], wait_s: float = ANSWER_WAIT_S) -> dict[str, os.stat_result | None]:
    """The stat of each `(path, device it was recorded on)` (None: nothing there, or no
    access). A file recorded on a remote mount (FUSE, NFS...) is looked at in a second thread:
    one whose own stat does not answer within `wait_s` is left out, logged, and never looked at
    again in this process, nor is any other path under its mount (the same dead share): each
    silent mount costs `wait_s` once. Other files cost a stat, as before."""
    found: dict[str, os.stat_result | None] = {}
    far: frozenset[int] = frozenset()
    if any(type(dev) is int and os.major(dev) == 0 for _path, dev in items):  # FUSE, NFS: anonymous devices
        from app.core.hung_mounts import remote_devices

        far = remote_devices()
    todo = []
    for path, dev in items:
        if dev in far or _is_silent(path):
            todo.append(path)
            continue
        try:
            found[path] = os.stat(path)
        except (OSError, ValueError):
            found[path] = None
    todo = [path for path in todo if not _is_silent(path)]
    while todo:
        import _thread  # built in; `threading` would cost a hook ~2 ms to import

        done, at = _thread.allocate_lock(), [0]
        done.acquire()
        _thread.start_new_thread(_stat_all, (todo, found, at, done))
        if _finished(done, at, wait_s):
            break
        path = todo[at[0]]  # the one it waits on
        from app.core.hung_mounts import did_not_answer

        _silent.add(path)
        mount = did_not_answer(path)
        if mount is not None:
            _silent_mounts.add(mount)
        log(f"ledger: {path} does not answer (on {mount or 'a mount'}, whose server went away?); "
            "not looked at this time")
        todo = [p for p in todo[at[0] + 1:] if p not in found and not _is_silent(p)]
    return dict(found)


def to_look(listed: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The entries a prompt must judge: not those unchanged since they were hashed (what
    `_judge` would say, without a read), nor those on a mount that does not answer (judged at
    a later prompt, once it answers: see `stats`)."""
    answered = stats([(path, entry["dev"]) for path, entry in listed])
    return [(path, entry) for path, entry in listed
            if path in answered and not (entry.get("told") is None and unmoved(path, entry, answered[path]))]


def _finished(done: Any, at: list[int], wait_s: float) -> bool:
    """Whether the thread stat'ing got through its list, waiting `wait_s` for each file (a
    slow share, WSL's 9p `/mnt/c`, takes ms a file: many files take long, and still answer)."""
    while True:
        seen = at[0]
        if done.acquire(timeout=wait_s):
            return True
        if at[0] == seen:
            return False


def _is_silent(path: str) -> bool:
    return path in _silent or any(path.startswith(mount.rstrip("/") + "/") for mount in _silent_mounts)


def _stat_all(todo: list[str], found: dict[str, os.stat_result | None], at: list[int], done: Any) -> None:
    try:
        for index, path in enumerate(todo):
            at[0] = index
            try:
                found[path] = os.stat(path)
            except (OSError, ValueError):
                found[path] = None
    finally:
        done.release()
