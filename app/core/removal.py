"""THE safe removal: every sweep, release and dashboard action removes through `remove()`.

`remove(path, root, rule)` removes `path` only when THE containment rule allows it
(app/core/containment.py), it stays on the root's file system and no mount point lies in it.
At the moment of removal all of it is checked again, fd-relative (app/core/fd_removal.py): a parent
or the target swapped for a symlink meanwhile stops it, nothing inside is followed or written
through, no other file system is entered.

Each step the guard of the next: the folder is renamed into the trash (app/core/trash.py; atomic,
undoable); the caller's guard is asked again where it now is (a reason puts it back); the journal
line is written (or it is put back: `journal`); only then is it purged: here (no other purge takes
it meanwhile: `.purging-`), or, big, by a detached one. With no trash on its file system, in place
after a `started` line (a kill is reported; a half-emptied folder keeps its old mtime: judged again).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from app.core import journal, mounts
from app.core.containment import containment, resolve_parents
from app.core.fd_removal import (
    DIR_FLAGS,
    SWAPPED,
    Kept,
    Refused,
    count_at_least,
    empty_dir,
    open_parent,
)
from app.core.in_flight import last_look
from app.core.journal import report_unfinished, unfinished_removals
from app.core.log import log
from app.core.paths import resolve_parents as _resolved
from app.core.purge import leftovers_step, purge_here, purge_step, purge_trash, spawn_purge
from app.core.removal_job import Guard, Removal, Removing
from app.core.scan_tally import EntryId, entry_id, same_entry
from app.core.scanner import PathLike, TreeSize, scan, text_path
from app.core.trash import ROOT_TRASH_NAME, drop_origin, put_back, to_purge, to_trash, trash_places

#: The removal's whole API, so that its callers need one module.
__all__ = ["ROOT_TRASH_NAME", "Guard", "Removal", "containment", "leftovers_step", "purge_step", "purge_trash",
           "remove", "report_unfinished", "resolve_parents", "spawn_purge", "trash_places", "unfinished_removals"]

# `trash=None` (auto) trashes a folder of at least this many entries, or a file this big.
TRASH_MIN_ENTRIES = 1000
TRASH_MIN_FILE_BYTES = 1 << 30


#: `path` with every parent resolved and the last component kept as it is
_target = _resolved


def remove(path: PathLike, root: PathLike, rule: str, *, kind: str = "",
           session: str | None = None, size: int | TreeSize | None = None,
           dry_run: bool = False, trash: bool | None = None, journal: bool = True,
           spawn: bool = True, guard: Guard | None = None, expect: EntryId | None = None,
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
    `size`: disk bytes already measured (or a TreeSize), None measures. Only the entry a
    TreeSize measured, or `expect` names (what a question showed: `scan_tally.EntryId`), or else the
    first check found, is removed: another put under its name since is `changed`. `spawn=False`
    leaves the purge to the caller (`spawn_purge()` once at its end). `_before_remove` is a
    test seam called between the check and the removal (a race). A dry run measures and
    checks but removes nothing and writes no journal line.
    """
    text = text_path(path)
    job = Removing(text, rule, kind, session, journal and not dry_run, guard)
    job.expected = expect or (size.top if isinstance(size, TreeSize) else None)
    checked = _check(job, root)
    if checked is not None:
        return checked
    job.measured = _measure(job.target, size)
    if dry_run:
        return _dry_run(job)
    if _before_remove is not None:
        _before_remove(job.target)
    trashed = False
    try:
        with open_parent(job.root_real, job.target, job.root_dev, job.root_ino) as (parent_fd, name):
            trashed = _remove_at(parent_fd, name, trash, job)
    except Refused as refused:
        if job.committed:
            return job.committed[0]
        return job.result("missing") if refused.reason == "missing" else job.result("refused", refused.reason)
    except Kept as kept:
        if kept.reason == "journal":  # nothing could be journaled: nor is this answer
            return Removal(text, rule, kind, session, "kept", "journal", 0, 0, 0)
        return job.result("kept", kept.reason)
    except OSError as exc:
        job.tally.error(exc, "remove")
    return _outcome(job, trashed, spawn)


def _dry_run(job: Removing) -> Removal:
    """What the removal would do, measured: kept where its own last look would keep it (a
    folder of another user's inside that this user cannot empty), else the bytes it frees."""
    from app.core.cleanup_guard import closed_inside

    if closed_inside(job.target) is not None:
        return job.result("kept", "not_removed")
    return job.result("dry_run", None, job.measured.disk, job.measured.files - job.measured.others, job.measured.folders)


def _check(job: Removing, root: PathLike) -> Removal | None:
    """The checks before anything is touched: containment, the root's file system, no mount
    point at or inside the path. None when it may go on (`job` then knows where)."""
    reason = containment(job.path, root)
    if reason == "missing":
        return job.result("missing")
    if reason is not None:
        return job.result("refused", reason)
    job.target = _target(job.path)
    job.root_real = os.path.realpath(text_path(root))
    try:
        root_st = os.stat(job.root_real)
        job.root_dev, job.root_ino = root_st.st_dev, root_st.st_ino
        target_st = os.lstat(job.target)
        checked = entry_id(job.target, target_st)
        if job.expected is not None and not same_entry(job.expected, checked):
            return job.result("refused", "changed")  # not the entry measured or asked about
        job.expected = checked
        if target_st.st_dev != job.root_dev:
            return job.result("refused", "other_fs")
        if target_st.st_uid != os.geteuid():
            return job.result("refused", "owner")
    except OSError:
        return job.result("missing")
    held = mounts.mounts_crossed(job.root_real, job.target)
    if held:
        log(f"removal: {job.target} holds or lies in a mount point ({held[0]}); kept")
        return job.result("refused", "mount")
    return None


def _outcome(job: Removing, trashed: bool, spawn: bool) -> Removal:
    """The answer once the removal ran: the committed line (with what was really counted
    when it was purged here), or `failed` with what was freed when it was cut short."""
    tally = job.tally
    if job.committed:
        if trashed and spawn:
            spawn_purge()
        if tally.errors:
            log(f"removal: the purge of {job.path!r} left {tally.errors} error(s) in the trash "
                f"({tally.first_error}); the next purge tries again")
        if trashed:
            return job.committed[0]
        stuck = job.left.disk if job.left is not None else 0
        if stuck and job.write:  # the line said all of it; this much of it is still there
            journal.append({"path": job.path, "kind": job.kind, "bytes": stuck, "rule": job.rule, "result": "left",
                            "session": job.session, "id": job.token, "reason": tally.first_error})
        return replace(job.committed[0], bytes=max(0, job.measured.disk - stuck), files=tally.regular,
                       folders=tally.folders)
    if tally.errors or tally.other_fs:
        left = scan(job.target) if os.path.lexists(job.target) else TreeSize(job.target, 0, 0, 0, 0)
        why = tally.first_error or f"other_fs: {tally.other_fs} mount(s) left"
        return job.result("failed", why, max(0, job.measured.disk - left.disk), tally.regular, tally.folders)
    return job.result("removed", None, job.measured.disk, tally.regular, tally.folders)


def _measure(target: str, size: int | TreeSize | None) -> TreeSize:
    if isinstance(size, TreeSize):
        return size
    if size is None:
        return scan(target)
    return TreeSize(target, 0, max(0, int(size)), 0, 0)


def _remove_at(parent_fd: int, name: str, trash: bool | None, job: Removing) -> bool:
    """Remove `name` in the folder `parent_fd`; True when a detached purge finishes it."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise Refused("missing") from None
    if stat.S_ISLNK(st.st_mode):
        raise Refused("symlink")
    if job.expected is not None and not same_entry(job.expected, entry_id(f"/proc/self/fd/{parent_fd}/{name}", st)):
        raise Refused("changed")  # another entry under its name since the first check
    if st.st_dev != job.root_dev:
        raise Refused("other_fs")
    if st.st_uid != os.geteuid():
        raise Refused("owner")  # another user's by now: never root's to take
    if stat.S_ISDIR(st.st_mode):
        return _remove_dir(parent_fd, name, st, trash, job)
    return _remove_file(parent_fd, name, st, trash, job)


def _remove_file(parent_fd: int, name: str, st: os.stat_result, trash: bool | None, job: Removing) -> bool:
    """A file: checked, renamed into the trash (where it must still be the file checked: a
    name saved over meanwhile, by an editor's new file or a link, goes back), journaled and
    unlinked there; a very big one is left to the detached purge. With no trash it is
    unlinked in place, once more compared with the file checked right before."""
    job.keep_unless_clear(job.target)
    detached = bool(trash) or (trash is None and st.st_blocks * 512 >= TRASH_MIN_FILE_BYTES)
    moved = to_trash(parent_fd, name, st, job.root_real, job.token, job.target)
    if moved is not None:
        trash_fd, slot, _ = moved
        try:
            _commit_or_put_back(job, trash_fd, slot, parent_fd, name, detached)
            if not detached and _unlinked(trash_fd, slot, st, job):
                drop_origin(trash_fd, slot)
                return False
            to_purge(trash_fd, slot)
        finally:
            os.close(trash_fd)
        return True
    _still_checked(parent_fd, name, st)
    job.commit(False)
    _still_checked(parent_fd, name, st, job)
    if not _unlinked(parent_fd, name, st, job):
        job.take_back(job.tally.first_error)
    return False


def _still_checked(parent_fd: int, name: str, st: os.stat_result, job: Removing | None = None) -> None:
    """Refused (its committed line taken back) unless `name` is still the file checked."""
    try:
        now = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        if job is not None:
            job.take_back()
        raise Refused("missing" if now is None else "symlink" if stat.S_ISLNK(now.st_mode) else "changed")


def _unlinked(fd: int, name: str, st: os.stat_result, job: Removing) -> bool:
    """Unlink `name` in the folder `fd`, counted; False (the error counted) when it refuses
    to go (`chattr +i`, `+a`). Gone or a folder meanwhile: refused, its line taken back."""
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        job.take_back()
        raise Refused("missing") from None
    except IsADirectoryError:  # swapped for a folder after the check: nothing went
        job.take_back()
        raise Refused("changed") from None
    except OSError as exc:
        job.tally.error(exc, "unlink")
        return False
    job.tally.files += 1
    job.tally.regular += stat.S_ISREG(st.st_mode)
    return True


def _remove_dir(parent_fd: int, name: str, st: os.stat_result, trash: bool | None, job: Removing) -> bool:
    """A folder: renamed into the trash, checked once more where it now is, journaled, then
    purged here (or left to the detached purge); in place when there is no trash."""
    try:
        dir_fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in SWAPPED:
            raise Refused("symlink") from None
        if exc.errno == errno.ENOENT:
            raise Refused("missing") from None
        raise
    try:
        now = os.fstat(dir_fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise Refused("changed")
        detached = trash is True or (trash is None and _is_big(job.measured, dir_fd))
        moved = to_trash(parent_fd, name, now, job.root_real, job.token, job.target)
        if moved is not None:
            return _through_trash(moved, parent_fd, name, now.st_dev, detached, job)
        # No trash on this file system: in place, after a `started` line (the next run
        # reports it if this process is killed halfway).
        job.keep_unless_clear(job.target)
        if mounts.mounts_crossed(job.root_real, job.target):
            # a bind mount made since the first check has the folder's own device: only
            # the mount table, read again right before the walk, shows it
            raise Kept("in_use")
        from app.core.cleanup_guard import closed_inside

        if closed_inside(job.target) is not None:  # it could not go whole (`in_flight.last_look`)
            raise Kept("not_removed")
        job.start()
        empty_dir(dir_fd, job.root_dev, job.tally)
        if job.tally.errors or job.tally.other_fs:  # it stays, half emptied: with the age it had,
            with contextlib.suppress(OSError):  # or it would look young and wait a whole period
                os.utime(dir_fd, ns=(now.st_atime_ns, now.st_mtime_ns))
    finally:
        os.close(dir_fd)
    try:
        os.rmdir(name, dir_fd=parent_fd)
        job.tally.folders += 1
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno in SWAPPED:
            raise Refused("symlink") from None  # swapped after it was emptied: left alone
        job.tally.error(exc, name)
    return False


def _through_trash(moved: tuple[int, str, str], parent_fd: int, name: str, dev: int, detached: bool,
                   job: Removing) -> bool:
    """A folder now in the trash: the guard once more where it is, the journal line, then
    the purge here unless `detached`. A keep puts it back where it was."""
    trash_fd, slot, slot_path = moved
    try:
        _commit_or_put_back(job, trash_fd, slot, parent_fd, name, detached, slot_path)
        # purged here under a `.purging-` name: no other purge (a session start's, running
        # now) takes it from under this one; killed midway, the next purge finishes it
        slot = to_purge(trash_fd, slot, here=not detached)
        if detached:
            return True
        job.left = purge_here(trash_fd, slot, os.path.dirname(slot_path), dev, job.tally)
        return False
    finally:
        os.close(trash_fd)


def _commit_or_put_back(job: Removing, trash_fd: int, slot: str, parent_fd: int, name: str,
                        trashed: bool, where: str | None = None) -> None:
    """The guard asked again where the entry now is (`where`), then its journal line; a keep,
    or Ctrl-C before the line is written, puts it back where it was at once."""
    try:
        # a mount made since the first check, or another removal's hold on a folder inside
        reason = None if where is None else last_look(where, job.target) or job.ask(where)
        if reason is not None:
            raise Kept(reason)
        job.commit(trashed)
    except (Kept, KeyboardInterrupt, SystemExit):
        put_back(trash_fd, slot, parent_fd, name, job.token)
        raise


def _is_big(measured: TreeSize, dir_fd: int) -> bool:
    if measured.entries:
        return measured.entries >= TRASH_MIN_ENTRIES
    return count_at_least(dir_fd, TRASH_MIN_ENTRIES)


