"""The trash: where a removal moves a folder first (app/core/purge.py empties it).

A folder is renamed into a trash folder on its own file system: one atomic step that is
instant whatever the size, and that a killed process never leaves half done (the whole tree
is in the trash, never a half-deleted folder in place). The trash is claudetto's own
(`CLAUDETTO_HOME/trash`), or the one beside its logs on the temp file system, or a
`.claudetto-trash` made inside a root on a third file system; never a folder reached
through a symlink or of another user. A moved entry that must stay (a swap meanwhile, a
guard that said keep) is put back where it was, never left where the purge would take it.
An entry stays pending (its name prefixed, a note of its origin beside it) until its journal
line is written and `to_purge` hands it over: no purge ever takes one still being checked.

One detached process purges (`purge.purge_trash`, the `purge-trash` job): so a hook can
"remove" 200,000 entries within Claude's 1.5 s SessionEnd budget.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.core import paths
from app.core.fd_removal import DIR_FLAGS, Refused
from app.core.log import log
from app.core.state import read_json, update_json

ROOT_TRASH_NAME = ".claudetto-trash"
#: The name prefix of an entry whose removal is not journaled yet: no purge takes it.
PENDING = ".pending-"
#: The name prefix of a journaled entry its removal purges itself: no other purge takes it
#: while that process runs; one it left (killed) is finished by the next purge, never put back.
PURGING = ".purging-"
ORIGIN = ".origin"  # the note beside a pending entry: the path it came from
NAME_MAX = 255  # bytes in one name, on every file system claudetto runs on


def is_slot(name: str) -> bool:
    """Whether `name` is one a removal gives what it moves into a trash (`<ns>-<pid>-<id>`,
    pending or handed over, or the note beside a pending one). Nothing else in a trash
    folder is ours: a CLAUDETTO_HOME set to a folder of the user's that holds a `trash/` of
    their own (`~/notes`), or a folder of theirs mounted there, must never be emptied."""
    parts = name.removeprefix(PENDING).removeprefix(PURGING).removesuffix(ORIGIN).split("-")
    return (len(parts) == 3 and all(part.isascii() and part.isdigit() for part in parts[:2])
            and 0 < len(parts[2]) <= 32 and all(c in "0123456789abcdef" for c in parts[2]))


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


def open_trash(root_real: str, dev: int) -> Iterator[tuple[int, str]]:
    """(fd, path) of each trash folder on file system `dev` that can be had (made if needed),
    in the order of preference; the caller closes each fd it is given."""
    for place in (paths.trash_dir(), paths.log_root() / "trash"):
        fd = _open_owned_dir(place, dev, make=True)
        if fd is not None:
            yield fd, os.fspath(place)
    place = Path(root_real) / ROOT_TRASH_NAME
    fd = _open_owned_dir(place, dev, make=True)
    if fd is None:
        return
    key = os.fspath(place)
    known: Any = read_json(_places_file(), list)
    if not isinstance(known, list) or key not in known:
        try:
            update_json(_places_file(), lambda old: [*(old if isinstance(old, list) else []), key]
                        if key not in (old if isinstance(old, list) else []) else old, list)
        except OSError as exc:
            log(f"removal: cannot record trash folder {key}: {exc}")
            os.close(fd)
            return
    yield fd, key


def safe_parent(place: Path) -> bool:
    """Whether the folder holding a trash is one nobody else can rename things in: a real
    folder (not a symlink: `<tmp>/claudetto` made one) of this user's, or root's that no one
    else may write or that is sticky (`/tmp`). In a folder of another user's (the first user
    of a shared machine makes `/tmp/claudetto`), that user could swap the trash for another
    folder of ours between the move and the last check, which would then look at the wrong
    place, or have the purge empty one of our folders that is no trash."""
    try:
        st = os.lstat(os.path.dirname(place))
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if st.st_uid == os.getuid():
        return True
    return st.st_uid == 0 and (not st.st_mode & 0o022 or bool(st.st_mode & stat.S_ISVTX))


def _open_owned_dir(place: Path, dev: int, *, make: bool) -> int | None:
    """`place` as a folder fd when it is a real folder of ours on file system `dev`, reached
    through no symlink (a trash must never be somewhere a link points at)."""
    if os.path.lexists(os.path.dirname(place)) and not safe_parent(place):
        return None  # before anything is made in it
    try:
        if make:
            with contextlib.suppress(FileExistsError):
                os.makedirs(place, mode=0o700, exist_ok=True)
        if not safe_parent(place):
            return None
        fd = os.open(place, DIR_FLAGS)
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


def to_trash(parent_fd: int, name: str, st: os.stat_result, root_real: str,
              token: str = "", origin: str = "") -> tuple[int, str, str] | None:
    """Rename `name` into a trash folder on its file system: (trash fd, slot name, slot
    path), the caller closes the fd; None when there is no trash it can be renamed into.
    `origin` (its path) goes in a note beside it until it is handed to the purge: a process
    killed before its journal line leaves it pending, and the next purge puts it back there.

    A trash on the same device but another mount of it (a bind mount: EXDEV) is passed over
    for the next one. A folder that refuses to move at all (immutable, not writable, or the
    trash itself lies inside it) raises that OSError: removed in place it would be emptied
    first and then refuse to go, half deleted, so it is not removed at all.

    After the rename the moved entry is checked against what was opened; a swap in between
    (a symlink moved instead of the folder) is moved back and the removal refused."""
    for trash_fd, trash_path in open_trash(root_real, st.st_dev):
        handed = False
        try:
            slot = _rename_into(parent_fd, name, trash_fd, token, origin)
            if slot is None:
                continue
            try:
                moved = os.stat(slot, dir_fd=trash_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise Refused("missing") from None
            if (moved.st_dev, moved.st_ino) != (st.st_dev, st.st_ino):
                put_back(trash_fd, slot, parent_fd, name, token)
                raise Refused("symlink" if stat.S_ISLNK(moved.st_mode) else "changed")
            handed = True
            return trash_fd, slot, os.path.join(trash_path, slot)
        finally:
            if not handed:
                os.close(trash_fd)
    return None


def _rename_into(parent_fd: int, name: str, trash_fd: int, token: str, origin: str) -> str | None:
    """Rename `name` into the trash open as `trash_fd` under a pending slot name (no purge
    takes it until its journal line is written: `to_purge`); the slot, or None when this
    trash cannot take it: another mount (EXDEV), or no room for the note of its origin."""
    slot = f"{PENDING}{time.time_ns()}-{os.getpid()}-{token or os.urandom(4).hex()}"
    if not _write_origin(trash_fd, slot, origin):
        return None  # no way back for it if this process is killed: not into this trash
    try:
        os.rename(name, slot, src_dir_fd=parent_fd, dst_dir_fd=trash_fd)
    except OSError as exc:
        drop_origin(trash_fd, slot)
        if exc.errno == errno.EXDEV:
            return None
        if exc.errno == errno.ENOENT:
            raise Refused("missing") from None
        raise
    return slot


def to_purge(trash_fd: int, slot: str, *, here: bool = False) -> str:
    """Hand a journaled entry to the purge: its pending name dropped (one rename in the trash
    folder), or with `here` named `.purging-…` for the removal to purge itself. Returns the
    name it now has; left as it was (logged) if the rename fails, where the next purge finds
    it with its journal line (`_settle_pending`)."""
    ready = (PURGING if here else "") + slot.removeprefix(PENDING).removeprefix(PURGING)
    try:
        os.rename(slot, ready, src_dir_fd=trash_fd, dst_dir_fd=trash_fd)
    except OSError as exc:
        log(f"removal: {slot} could not be handed to the purge: {exc}")
        return slot
    drop_origin(trash_fd, slot)
    return ready


def _write_origin(trash_fd: int, slot: str, origin: str) -> bool:
    """The note of where a pending entry came from (no fsync: it guards against a killed
    process, whose writes the kernel keeps), and after a NUL the pid domain of the process
    moving it (`linux:<machine-id>:<pid namespace>`: a purge on another machine sharing
    CLAUDETTO_HOME cannot judge its pid); False when it could not be written whole."""
    from app.core.pid_domain import own_pid_domain

    machine, namespace = own_pid_domain()
    data = os.fsencode(origin) + (f"\0linux:{machine}:{namespace}".encode() if machine and namespace else b"")
    try:
        fd = os.open(slot + ORIGIN, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=trash_fd)
    except OSError:
        return False
    try:
        written = os.write(fd, data)
    except OSError:
        written = -1
    finally:
        os.close(fd)
    if written != len(data):
        drop_origin(trash_fd, slot)
        return False
    return True


def drop_origin(trash_fd: int, slot: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(slot + ORIGIN, dir_fd=trash_fd)


def read_origin(trash_fd: int, slot: str) -> str | None:
    """The path a pending entry came from, as its note says (None: no note)."""
    return _read_note(trash_fd, slot)[0]


def origin_domain(trash_fd: int, slot: str) -> str | None:
    """The pid domain of the process that moved a pending entry (None: not noted)."""
    return _read_note(trash_fd, slot)[1]


def _read_note(trash_fd: int, slot: str) -> tuple[str | None, str | None]:
    try:
        fd = os.open(slot + ORIGIN, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=trash_fd)
    except OSError:
        return None, None
    try:
        path, _, domain = os.read(fd, 1 << 16).partition(b"\0")
    except OSError:
        return None, None
    finally:
        os.close(fd)
    return os.fsdecode(path) or None, os.fsdecode(domain) or None


def kept_name(name: str, token: str) -> str:
    """`<name>.claudetto-kept-<token>`, the name cut short (by its bytes) so that the whole
    still fits in a name (255 bytes): beside a 255-byte name, not lost to a name too long."""
    suffix = os.fsencode(f".claudetto-kept-{token}")
    return os.fsdecode(os.fsencode(name)[:NAME_MAX - len(suffix)] + suffix)


def put_back(trash_fd: int, slot: str, parent_fd: int, name: str, token: str = "") -> None:
    """Move an entry out of the trash again (a swap, or a guard that said keep), never
    clobbering what took its place: then it goes beside it as `<name>.claudetto-kept-<id>`.
    It never stays in the trash, where the purge would take it.

    Its note of origin goes only once it is out: a process killed between the two leaves it
    pending with its way back, which the next purge takes (dropped first, a kill there left
    a kept folder in the trash with no way back, never purged and never seen again)."""
    if _parent_moved(trash_fd, slot, parent_fd):
        # another removal moved its folder away meanwhile (into the trash, judged without
        # it): put back in there, the purge of that folder would take it too
        _keep_aside(trash_fd, slot, name, "its folder was moved away meanwhile")
        return
    if _back_by_link(trash_fd, slot, parent_fd, name):
        drop_origin(trash_fd, slot)
        return
    for candidate in (name, kept_name(name, token or os.urandom(4).hex())):
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
        drop_origin(trash_fd, slot)
        if candidate != name:
            log(f"removal: {name!r} was taken meanwhile; the kept entry is now {candidate!r}")
        return
    _keep_aside(trash_fd, slot, name, "could not go back")


def _parent_moved(trash_fd: int, slot: str, parent_fd: int) -> bool:
    """Whether the folder `parent_fd` is no longer at the parent of the path the entry's note
    names (unsure, or no note: False, as before notes were read here)."""
    origin = read_origin(trash_fd, slot)
    if origin is None:
        return False
    try:
        here = os.fstat(parent_fd)
        there = os.lstat(os.path.dirname(origin))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino)


def _keep_aside(trash_fd: int, slot: str, name: str, why: str) -> None:
    """A kept entry that cannot go back where it was: into `CLAUDETTO_HOME/kept/`, whole, never
    purged; failing that it stays pending with its note, which the next purge acts on."""
    keep = paths.claudetto_home() / "kept"
    try:
        os.makedirs(keep, mode=0o700, exist_ok=True)
        os.rename(slot, os.path.join(keep, slot), src_dir_fd=trash_fd)
        drop_origin(trash_fd, slot)
        log(f"removal: {name!r} {why}; it is kept in {keep / slot}")
    except OSError as exc:
        log(f"removal: {name!r} {why} ({exc}); it is still in the trash as {slot}")


def _back_by_link(trash_fd: int, slot: str, parent_fd: int, name: str) -> bool:
    """A file put back by a hard link, then its trash name unlinked. When `name` already is
    that same file (a put-back killed between the link and the unlink), only the trash name
    goes: a second name `<name>.claudetto-kept-<id>` for it would be a copy of nothing."""
    try:
        os.link(slot, name, src_dir_fd=trash_fd, dst_dir_fd=parent_fd, follow_symlinks=False)
    except FileExistsError:
        try:
            here = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            there = os.stat(slot, dir_fd=trash_fd, follow_symlinks=False)
        except OSError:
            return False
        if stat.S_ISDIR(there.st_mode) or (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino):
            return False
    except OSError:
        return False
    try:
        os.unlink(slot, dir_fd=trash_fd)
    except FileNotFoundError:
        pass  # another put-back of it (a purge and a release settling at once) took it
    except OSError:
        return False
    return True
