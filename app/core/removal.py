"""THE containment rule and THE safe removal: every sweep, release and dashboard action
removes through `remove()` and nothing else.

`remove(path, root, rule)` removes `path` only when it is strictly inside `root` after
every parent is resolved, is not itself a symlink and stays on the root's file system. At
the moment of removal it checks all of it again, fd-relative: it walks down from the root
with `O_NOFOLLOW` opens, so a parent or the target swapped for a symlink after the first
check makes the removal stop (the swapped entry is left alone), and it removes a tree
through directory fds, never following a symlink inside it (like `shutil.rmtree`'s safe
path), never crossing into another file system. It never chmods, truncates or writes
through anything it removes: a hard link to a file outside the root is only unlinked.

A big tree is renamed into a trash folder on the same file system (instant) and purged by
one detached process (`purge_trash`), so a hook can "remove" 200,000 entries within
Claude's 1.5 s SessionEnd budget. A purge that was killed leaves its trash to the next one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core import journal, mounts, paths
from app.core.log import log
from app.core.scanner import PathLike, TreeSize, scan, text_path
from app.core.state import StateBusy, locked, read_json, update_json

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_SWAPPED = (errno.ELOOP, errno.ENOTDIR)

# `trash=None` (auto) trashes a folder of at least this many entries, or a file this big.
TRASH_MIN_ENTRIES = 1000
TRASH_MIN_FILE_BYTES = 1 << 30
ROOT_TRASH_NAME = ".claudetto-trash"
PURGE_JOB = "purge-trash"
PURGE_WAIT_S = 6 * 3600.0  # a queued purge waits this long for the running one


@dataclass(frozen=True)
class Removal:
    path: str
    rule: str
    kind: str
    session: str | None
    status: str  # "removed" | "kept" | "refused" | "missing" | "failed" | "dry_run"
    # kept: the guard's reason, or `journal` (the journal could not be written first);
    # refused: outside_root|symlink|escapes_root|other_fs|mount|changed; failed: the error
    reason: str | None
    bytes: int  # disk bytes freed (or that would be)
    files: int  # non-directories removed
    folders: int  # directories removed
    trashed: bool = False  # renamed into a trash folder; a detached purge finishes it

    @property
    def removed(self) -> bool:
        return self.status == "removed"


#: A last check at the moment of removal: given the path where the entry is now (a folder
#: already moved aside into the trash), None lets it go, a keep reason puts it back.
Guard = Callable[[str], "str | None"]


class _Kept(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ----------------------------------------------------------------------------- containment

def _strictly_inside(path: str, root: str) -> bool:
    prefix = root if root.endswith("/") else root + "/"
    return path != root and path.startswith(prefix)


def resolve_parents(path: PathLike) -> str:
    """`path` with every parent resolved through the file system (symlinks and `..` alike)
    and the last component kept as it is: the one spelling of a path that two records, a
    live folder and a root can be compared in."""
    return _target(text_path(path))


def _target(path: str) -> str:
    """`path` with every parent resolved and the last component kept as it is."""
    return paths.resolve_parents(path)


def containment(path: PathLike, root: PathLike) -> str | None:
    """THE containment rule: None when `path` may be removed under `root`, else why not.

    None: `path` is strictly inside `root` after resolving every parent, is not itself a
    symlink, and its real path stays inside realpath(root). Reasons: "outside_root" (not
    strictly inside, or the root itself), "escapes_root" (a parent resolves outside the
    root), "missing" (nothing there), "symlink" (the path itself is a symlink).
    """
    try:
        text, root_text = text_path(path), text_path(root)
        root_real = os.path.realpath(root_text)
        target = _target(text)
        if not _strictly_inside(target, root_real):
            lexical = os.path.abspath(text)
            if (_strictly_inside(lexical, os.path.abspath(root_text))
                    or _strictly_inside(lexical, root_real)):
                return "escapes_root"
            return "outside_root"
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError):
        return "outside_root"
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return None


# ----------------------------------------------------------------------------- removal

class _Tally:
    __slots__ = ("files", "folders", "errors", "other_fs", "first_error")

    def __init__(self) -> None:
        self.files = 0
        self.folders = 0
        self.errors = 0
        self.other_fs = 0
        self.first_error: str | None = None

    def error(self, exc: OSError, where: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = f"{where}: {exc.strerror or exc}"


def remove(path: PathLike, root: PathLike, rule: str, *, kind: str = "",
           session: str | None = None, size: int | TreeSize | None = None,
           dry_run: bool = False, trash: bool | None = None, journal: bool = True,
           spawn: bool = True, guard: Guard | None = None,
           _before_remove: Callable[[str], Any] | None = None) -> Removal:
    """Remove `path` safely under `root`, all or nothing, journaled before it starts.

    A folder is first renamed into a trash folder on its own file system (one atomic step:
    a process killed after it leaves the whole tree in the trash, where the next purge
    finishes it, never a half-deleted folder in place). `guard(moved_path)` is then asked
    once more, at the moment of removal, whether the folder may go; a reason puts it back
    and the result is `kept` with that reason. `trash`: True (or None for a big tree) leaves
    the purge to one detached process, so a hook returns at once; False purges here and now.
    A folder that cannot be renamed (no trash on its file system) is removed in place after
    a `started` journal line, so the next run reports it when it was cut short.

    The journal comes first: the one line of a removal is written after the folder is moved
    aside (which can be undone) and before anything is deleted; when it cannot be written
    the folder is put back and nothing is removed (status `kept`, reason `journal`). A
    removal in place writes a `started` line before it starts and its result after.
    `size`: disk bytes already measured (or a TreeSize), None measures. `spawn=False`
    leaves the purge to the caller (`spawn_purge()` once at its end). `_before_remove` is a
    test seam called between the check and the removal (a race). A dry run measures and
    checks but removes nothing and writes no journal line.
    """
    text = text_path(path)
    write = journal and not dry_run
    token = secrets.token_hex(6)
    committed: list[Removal] = []

    def done(status: str, reason: str | None = None, freed: int = 0, files: int = 0,
             folders: int = 0, trashed: bool = False) -> Removal:
        result = Removal(text, rule, kind, session, status, reason, freed, files, folders, trashed)
        if write:
            _journal(result, token)
        return result

    reason = containment(text, root)
    if reason == "missing":
        return done("missing")
    if reason is not None:
        return done("refused", reason)
    target = _target(text)
    root_real = os.path.realpath(text_path(root))
    try:
        root_dev = os.stat(root_real).st_dev
        if os.lstat(target).st_dev != root_dev:
            return done("refused", "other_fs")
    except OSError:
        return done("missing")
    inside = mounts.mounts_inside(target)
    if inside:
        log(f"removal: {target} holds a mount point ({inside[0]}); kept")
        return done("refused", "mount")
    measured = _measure(target, size)
    if dry_run:
        return done("dry_run", None, measured.disk, measured.files, measured.folders)

    def commit(trashed: bool) -> None:
        """The journal line, written right before the step that cannot be undone."""
        result = Removal(text, rule, kind, session, "removed", None, measured.disk,
                         measured.files, measured.folders, trashed)
        if write:
            try:
                _journal(result, None, strict=True)
            except OSError:
                raise _Kept("journal") from None
        committed.append(result)

    def start() -> None:
        if write:
            try:
                _journal_start(text, rule, kind, session, measured.disk, token)
            except OSError:
                raise _Kept("journal") from None

    if _before_remove is not None:
        _before_remove(target)
    tally = _Tally()
    trashed = False
    try:
        with _open_parent(root_real, target, root_dev) as (parent_fd, name):
            trashed = _remove_at(parent_fd, name, root_dev, root_real, measured, trash,
                                 _Steps(guard, target, token, commit, start, tally))
    except _Refused as refused:
        if committed:
            return committed[0]
        if refused.reason == "missing":
            return done("missing")
        return done("refused", refused.reason)
    except _Kept as kept:
        return done("kept", kept.reason) if kept.reason != "journal" else Removal(
            text, rule, kind, session, "kept", "journal", 0, 0, 0)
    except OSError as exc:
        tally.error(exc, "remove")
    if committed:
        if trashed and spawn:
            spawn_purge()
        if tally.errors:
            log(f"removal: the purge of {text!r} left {tally.errors} error(s) in the trash "
                f"({tally.first_error}); the next purge tries again")
        if trashed:
            return committed[0]
        from dataclasses import replace  # purged here: what was really counted

        return replace(committed[0], files=tally.files, folders=tally.folders)
    if tally.errors or tally.other_fs:
        left = scan(target) if os.path.lexists(target) else TreeSize(target, 0, 0, 0, 0)
        why = tally.first_error or f"other_fs: {tally.other_fs} mount(s) left"
        return done("failed", why, max(0, measured.disk - left.disk), tally.files, tally.folders)
    return done("removed", None, measured.disk, tally.files, tally.folders)


class _Steps:
    """What one removal carries down to where the entry is removed: the last check, the
    journal writes, the tally."""

    __slots__ = ("guard", "original", "token", "commit", "start", "tally")

    def __init__(self, guard: Guard | None, original: str, token: str,
                 commit: Callable[[bool], None], start: Callable[[], None], tally: _Tally) -> None:
        self.guard = guard
        self.original = original
        self.token = token
        self.commit = commit
        self.start = start
        self.tally = tally


def _measure(target: str, size: int | TreeSize | None) -> TreeSize:
    if isinstance(size, TreeSize):
        return size
    if size is None:
        return scan(target)
    return TreeSize(target, 0, max(0, int(size)), 0, 0)


def _journal_start(path: str, rule: str, kind: str, session: str | None, size: int,
                   token: str) -> None:
    """The line written before a removal starts; raises OSError when it cannot be written."""
    from app.core.claude_process import start_of

    pid = os.getpid()
    journal.append({"path": path, "kind": kind, "bytes": size, "rule": rule, "session": session,
                    "result": "started", "id": token, "pid": pid, "proc_start": start_of(pid)},
                   strict=True)


def _journal(result: Removal, token: str | None = None, *, strict: bool = False) -> None:
    line: dict[str, Any] = {
        "path": result.path, "kind": result.kind, "bytes": result.bytes, "rule": result.rule,
        "session": result.session, "result": result.status, "reason": result.reason,
        "files": result.files, "folders": result.folders, "trashed": result.trashed}
    if result.reason == "mount":
        line["detail"] = "a mount point lies at or inside the path; nothing was removed"
    if token is not None:
        line["id"] = token
    journal.append(line, strict=strict)


def unfinished_removals() -> list[dict[str, Any]]:
    """`started` journal lines with no closing line whose process is gone: removals cut short
    (killed) in place. A folder renamed into the trash first is finished by the next purge;
    these are the rare ones that could not be renamed, reported so nobody is left guessing."""
    from app.core.sessions import process_running

    open_lines: dict[str, dict[str, Any]] = {}
    for entry in journal.read_entries():
        token = entry.get("id")
        if not isinstance(token, str):
            continue
        if entry.get("result") == "started":
            open_lines[token] = entry
        else:
            open_lines.pop(token, None)
    cut: list[dict[str, Any]] = []
    for entry in open_lines.values():
        pid, start = entry.get("pid"), entry.get("proc_start")
        if isinstance(pid, int) and not isinstance(pid, bool) and process_running(
                pid, start if isinstance(start, str) else None):
            continue  # still running: not cut short
        cut.append(entry)
    return cut


def report_unfinished() -> list[str]:
    """Close every cut-short removal's journal entry with result `interrupted`, and say so in
    the log; the paths of those removals (what is left of them is judged again as usual)."""
    reported = []
    for entry in unfinished_removals():
        path = entry.get("path")
        journal.append({"path": path, "kind": entry.get("kind"), "bytes": 0,
                        "rule": entry.get("rule"), "session": entry.get("session"),
                        "result": "interrupted", "id": entry.get("id"),
                        "reason": "the removing process ended before it finished"})
        log(f"removal: the removal of {path!r} was cut short; what is left of it stays until judged again")
        reported.append(str(path))
    return reported


@contextlib.contextmanager
def _open_parent(root_real: str, target: str, root_dev: int) -> Iterator[tuple[int, str]]:
    """The fd of `target`'s parent, reached from the root one O_NOFOLLOW open at a time."""
    parts = os.path.relpath(target, root_real).split("/")
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise _Refused("outside_root")
    try:
        fd = os.open(root_real, _DIR_FLAGS)
    except OSError as exc:
        raise _Refused("missing" if exc.errno == errno.ENOENT else "escapes_root") from None
    try:
        if os.fstat(fd).st_dev != root_dev:
            raise _Refused("other_fs")
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    raise _Refused("missing") from None
                if exc.errno in _SWAPPED:
                    raise _Refused("escapes_root") from None
                raise
            os.close(fd)
            fd = child
            if os.fstat(fd).st_dev != root_dev:
                raise _Refused("other_fs")
        yield fd, parts[-1]
    finally:
        os.close(fd)


def _remove_at(parent_fd: int, name: str, root_dev: int, root_real: str, measured: TreeSize,
               trash: bool | None, steps: _Steps) -> bool:
    """Remove `name` in the folder `parent_fd`; True when a detached purge finishes it.

    A folder is renamed into the trash first, checked once more where it now is, journaled,
    then purged here (or left to the detached purge); a file is checked, journaled and
    unlinked (a very big one goes to the trash and the detached purge)."""
    tally = steps.tally
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise _Refused("missing") from None
    if stat.S_ISLNK(st.st_mode):
        raise _Refused("symlink")
    if st.st_dev != root_dev:
        raise _Refused("other_fs")
    if not stat.S_ISDIR(st.st_mode):
        big = st.st_blocks * 512 >= TRASH_MIN_FILE_BYTES
        if steps.guard is not None:
            _ask(steps.guard, steps.original)
        if trash or (trash is None and big):
            moved = _to_trash(parent_fd, name, st, root_real, steps.token)
            if moved is not None:
                trash_fd, slot, _ = moved
                try:
                    _commit_or_put_back(steps, trash_fd, slot, parent_fd, name, True)
                finally:
                    os.close(trash_fd)
                return True
        steps.commit(False)
        try:
            os.unlink(name, dir_fd=parent_fd)
        except FileNotFoundError:
            raise _Refused("missing") from None
        except IsADirectoryError:
            raise _Refused("changed") from None
        tally.files += 1
        return False
    try:
        dir_fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in _SWAPPED:
            raise _Refused("symlink") from None
        if exc.errno == errno.ENOENT:
            raise _Refused("missing") from None
        raise
    try:
        now = os.fstat(dir_fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise _Refused("changed")
        detached = trash is True or (trash is None and _is_big(measured, dir_fd))
        moved = _to_trash(parent_fd, name, now, root_real, steps.token)
        if moved is not None:
            trash_fd, slot, slot_path = moved
            try:
                if steps.guard is not None:
                    reason = _guard_says(steps.guard, slot_path)
                    if reason is not None:
                        _put_back(trash_fd, slot, parent_fd, name, steps.token)
                        raise _Kept(reason)
                _commit_or_put_back(steps, trash_fd, slot, parent_fd, name, detached)
                if detached:
                    return True
                _purge_entry(trash_fd, slot, now.st_dev, tally)
                tally.folders += 1
                return False
            finally:
                os.close(trash_fd)
        # No trash on this file system: in place, after a `started` line (the next run
        # reports it if this process is killed halfway).
        if steps.guard is not None:
            _ask(steps.guard, steps.original)
        steps.start()
        _empty_dir(dir_fd, root_dev, tally)
    finally:
        os.close(dir_fd)
    try:
        os.rmdir(name, dir_fd=parent_fd)
        tally.folders += 1
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno in _SWAPPED:
            raise _Refused("symlink") from None  # swapped after it was emptied: left alone
        tally.error(exc, name)
    return False


def _commit_or_put_back(steps: _Steps, trash_fd: int, slot: str, parent_fd: int, name: str,
                        trashed: bool) -> None:
    try:
        steps.commit(trashed)
    except _Kept:
        _put_back(trash_fd, slot, parent_fd, name, steps.token)
        raise


def _guard_says(guard: Guard, path: str) -> str | None:
    """The guard's answer; a guard that fails keeps the path (when unsure, keep)."""
    try:
        return guard(path)
    except Exception as exc:  # noqa: BLE001 - any failure of a check means: keep
        log(f"removal: the check before removing {path!r} failed ({type(exc).__name__}: {exc}); kept")
        return "failed"


def _ask(guard: Guard, path: str) -> None:
    reason = _guard_says(guard, path)
    if reason is not None:
        raise _Kept(reason)


def _is_big(measured: TreeSize, dir_fd: int) -> bool:
    if measured.entries:
        return measured.entries >= TRASH_MIN_ENTRIES
    return _count_at_least(dir_fd, TRASH_MIN_ENTRIES)


def _count_at_least(dir_fd: int, wanted: int) -> bool:
    """Whether the tree open as `dir_fd` holds at least `wanted` entries (stops early)."""
    count = 0
    pending = [os.dup(dir_fd)]
    try:
        while pending:
            fd = pending.pop()
            try:
                with os.scandir(fd) as it:
                    for entry in it:
                        count += 1
                        if count >= wanted:
                            return True
                        if entry.is_dir(follow_symlinks=False):
                            with contextlib.suppress(OSError):
                                pending.append(os.open(entry.name, _DIR_FLAGS, dir_fd=fd))
            except OSError:
                pass
            finally:
                os.close(fd)
    finally:
        for fd in pending:
            os.close(fd)
    return False


def _empty_dir(top_fd: int, dev: int, tally: _Tally) -> None:
    """Remove everything inside the folder open as `top_fd`, fd-relative, never following
    a symlink, never entering another file system (a mount point is left, and counted)."""
    frames: list[tuple[int, list[os.DirEntry[str]], str]] = [(top_fd, _list(top_fd, tally), "")]
    while frames:
        fd, entries, _ = frames[-1]
        if not entries:
            _, _, name = frames.pop()
            if not frames:
                return
            os.close(fd)
            try:
                os.rmdir(name, dir_fd=frames[-1][0])
                tally.folders += 1
            except FileNotFoundError:
                pass
            except OSError as exc:
                tally.error(exc, name)
            continue
        entry = entries.pop()
        name = entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if not is_dir:
            try:
                os.unlink(name, dir_fd=fd)
                tally.files += 1
                continue
            except FileNotFoundError:
                continue
            except IsADirectoryError:
                pass  # it became a folder since the listing: treat it as one
            except OSError as exc:
                tally.error(exc, name)
                continue
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno in _SWAPPED:  # a symlink now: unlink the link itself, follow nothing
                try:
                    os.unlink(name, dir_fd=fd)
                    tally.files += 1
                except FileNotFoundError:
                    pass
                except OSError as again:
                    tally.error(again, name)
            else:
                tally.error(exc, name)
            continue
        try:
            if os.fstat(child).st_dev != dev:
                tally.other_fs += 1
                os.close(child)
                continue
        except OSError as exc:
            os.close(child)
            tally.error(exc, name)
            continue
        frames.append((child, _list(child, tally), name))


def _list(fd: int, tally: _Tally) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as it:
            return list(it)
    except OSError as exc:
        tally.error(exc, "list")
        return []


# ----------------------------------------------------------------------------- trash

def _places_file() -> Path:
    return paths.claudetto_home() / "trash-places.json"


def trash_places() -> list[Path]:
    """Every folder a trash may be in: claudetto's own, the one beside its logs on the temp
    file system, and each `.claudetto-trash` made inside a root on a third file system."""
    found = [paths.trash_dir(), paths.log_root() / "trash"]
    extra: Any = read_json(_places_file(), list)
    if isinstance(extra, list):
        found.extend(Path(item) for item in extra if isinstance(item, str) and item.startswith("/")
                     and os.path.basename(item) == ROOT_TRASH_NAME)  # never a folder of the user's
    return found


def _open_trash(root_real: str, dev: int) -> tuple[int, str] | None:
    """(fd, path) of a trash folder on file system `dev`, made if needed; None when there is none."""
    for place in (paths.trash_dir(), paths.log_root() / "trash"):
        fd = _open_owned_dir(place, dev, make=True)
        if fd is not None:
            return fd, os.fspath(place)
    place = Path(root_real) / ROOT_TRASH_NAME
    fd = _open_owned_dir(place, dev, make=True)
    if fd is None:
        return None
    key = os.fspath(place)
    known: Any = read_json(_places_file(), list)
    if not isinstance(known, list) or key not in known:
        try:
            update_json(_places_file(), lambda old: [*(old if isinstance(old, list) else []), key]
                        if key not in (old if isinstance(old, list) else []) else old, list)
        except OSError as exc:
            log(f"removal: cannot record trash folder {key}: {exc}")
            os.close(fd)
            return None
    return fd, key


def _open_owned_dir(place: Path, dev: int, *, make: bool) -> int | None:
    """`place` as a folder fd when it is a real folder of ours on file system `dev`, reached
    through no symlink (a trash must never be somewhere a link points at)."""
    if os.path.islink(os.path.dirname(place)):  # e.g. `<tmp>/claudetto` made a symlink
        return None
    try:
        if make:
            with contextlib.suppress(FileExistsError):
                os.makedirs(place, mode=0o700, exist_ok=True)
        fd = os.open(place, _DIR_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if st.st_dev != dev or st.st_uid != os.getuid():
        os.close(fd)
        return None
    return fd


def _to_trash(parent_fd: int, name: str, st: os.stat_result, root_real: str,
              token: str = "") -> tuple[int, str, str] | None:
    """Rename `name` into a trash folder on its file system: (trash fd, slot name, slot
    path), the caller closes the fd; None when there is no trash it can be renamed into.

    After the rename the moved entry is checked against what was opened; a swap in between
    (a symlink moved instead of the folder) is moved back and the removal refused."""
    opened = _open_trash(root_real, st.st_dev)
    if opened is None:
        return None
    trash_fd, trash_path = opened
    handed = False
    try:
        slot = f"{time.time_ns()}-{os.getpid()}-{token or secrets.token_hex(4)}"
        try:
            os.rename(name, slot, src_dir_fd=parent_fd, dst_dir_fd=trash_fd)
        except OSError as exc:
            if exc.errno in (errno.EXDEV, errno.EINVAL, errno.EACCES, errno.EPERM, errno.EBUSY):
                return None
            if exc.errno == errno.ENOENT:
                raise _Refused("missing") from None
            raise
        try:
            moved = os.stat(slot, dir_fd=trash_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise _Refused("missing") from None
        if (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino):
            _put_back(trash_fd, slot, parent_fd, name, token)
            raise _Refused("symlink" if stat.S_ISLNK(moved.st_mode) else "changed")
        handed = True
        return trash_fd, slot, os.path.join(trash_path, slot)
    finally:
        if not handed:
            os.close(trash_fd)


def _put_back(trash_fd: int, slot: str, parent_fd: int, name: str, token: str = "") -> None:
    """Move an entry out of the trash again (a swap, or a guard that said keep), never
    clobbering what took its place: then it goes beside it as `<name>.claudetto-kept-<id>`.
    It never stays in the trash, where the purge would take it."""
    try:
        os.link(slot, name, src_dir_fd=trash_fd, dst_dir_fd=parent_fd, follow_symlinks=False)
        os.unlink(slot, dir_fd=trash_fd)
        return
    except OSError:
        pass
    for candidate in (name, f"{name}.claudetto-kept-{token or secrets.token_hex(4)}"):
        try:  # a folder cannot be hard-linked: rename back unless the name was taken again
            os.stat(candidate, dir_fd=parent_fd, follow_symlinks=False)
            continue
        except FileNotFoundError:
            pass
        except OSError:
            continue
        try:
            os.rename(slot, candidate, src_dir_fd=trash_fd, dst_dir_fd=parent_fd)
        except OSError:
            continue
        if candidate != name:
            log(f"removal: {name!r} was taken meanwhile; the kept entry is now {candidate!r}")
        return
    keep = paths.claudetto_home() / "kept"
    try:
        os.makedirs(keep, mode=0o700, exist_ok=True)
        os.rename(slot, os.path.join(keep, slot), src_dir_fd=trash_fd)
        log(f"removal: {name!r} could not go back; it is kept in {keep / slot}")
    except OSError as exc:
        log(f"removal: {name!r} could not go back ({exc}); it is still in the trash as {slot}")


def spawn_purge() -> int | None:
    """Start one detached purge of the trash (`purge-trash` job); its pid, or None when a
    purge is already queued (it lists the trash only later, so it takes ours too)."""
    from app.core import jobs

    if _purge_queued():
        return None
    return jobs.spawn(PURGE_JOB, {})


def _purge_queued() -> bool:
    try:
        with locked(paths.claudetto_home() / "trash-waiter", wait_s=0.0):
            return False
    except StateBusy:
        return True
    except OSError:
        return False


def purge_step(payload: dict[str, Any]) -> None:
    """The `purge-trash` job."""
    del payload
    purge_trash()


def leftovers_step(payload: dict[str, Any]) -> None:
    """A session-start step: report removals cut short in place, and when a killed purge
    left something in a trash, start a purge."""
    del payload
    report_unfinished()
    if any(_has_entries(place) for place in trash_places()):
        spawn_purge()


def _has_entries(place: Path) -> bool:
    try:
        with os.scandir(place) as it:
            return any(True for _ in it)
    except OSError:
        return False


def purge_trash(*, wait_s: float = PURGE_WAIT_S) -> None:
    """Remove everything in every trash folder (leftovers of a killed purge included).

    One purge runs at a time (a flock); at most one more waits for it, and that one lists
    the trash only after it holds the lock, so every entry renamed before a purge was
    spawned is purged by the running one or the waiting one; later ones give up at once.
    """
    home = paths.claudetto_home()
    with contextlib.ExitStack() as held:
        waiter = contextlib.ExitStack()
        try:
            # A short wait: spawn_purge() holds this lock for a moment to look.
            waiter.enter_context(locked(home / "trash-waiter", wait_s=0.2))
            held.enter_context(locked(home / "trash", wait_s=wait_s))
        except StateBusy:
            return  # a purge is already waiting: it will list after this caller's rename
        except OSError as exc:
            log(f"removal: cannot lock the trash: {exc}")
            return
        finally:
            waiter.close()
        for _ in range(100):
            if not sum(_purge_place(place) for place in trash_places()):
                break


def _purge_place(place: Path) -> int:
    """Empty one trash folder; the count of entries removed from it. A trash reached through
    a symlinked parent, or not this user's, is left alone: it is not ours to empty."""
    if os.path.islink(os.path.dirname(place)):  # the folder itself: O_NOFOLLOW below
        log(f"removal: {place} is reached through a symlink; not purged")
        return 0
    try:
        fd = os.open(place, _DIR_FLAGS)
    except OSError:
        return 0
    try:
        if os.fstat(fd).st_uid != os.getuid():
            log(f"removal: {place} is not this user's; not purged")
            os.close(fd)
            return 0
    except OSError:
        os.close(fd)
        return 0
    removed = 0
    try:
        dev = os.fstat(fd).st_dev
        for _ in range(100):
            with os.scandir(fd) as it:
                names = [entry.name for entry in it]
            if not names:
                break
            for name in names:
                tally = _Tally()
                try:
                    _purge_entry(fd, name, dev, tally)
                    removed += 1
                except OSError as exc:
                    tally.error(exc, name)
                if tally.errors:
                    log(f"removal: purge of {place / name} left {tally.errors} error(s): {tally.first_error}")
    except OSError as exc:
        log(f"removal: cannot purge {place}: {exc}")
    finally:
        os.close(fd)
    return removed


def _purge_entry(trash_fd: int, name: str, dev: int, tally: _Tally) -> None:
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=trash_fd)
    except OSError as exc:
        if exc.errno in _SWAPPED:
            os.unlink(name, dir_fd=trash_fd)
            return
        if exc.errno == errno.ENOENT:
            return
        raise
    try:
        if os.fstat(child).st_dev != dev:
            tally.other_fs += 1
            return
        _empty_dir(child, dev, tally)
    finally:
        os.close(child)
    os.rmdir(name, dir_fd=trash_fd)


if __name__ == "__main__":  # python -P -m app.core.removal: purge the trash now
    purge_trash()
    sys.exit(0)
