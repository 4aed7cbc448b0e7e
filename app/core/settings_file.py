"""The user's `settings.json` as a file: read it, and write it back keeping its form.

The file is the user's, often kept in a dotfiles repository and linked in, so a change keeps
its form: a symlink is written through (the link stays, its target changes, atomically: a
temp file in the target's folder renamed onto it), the file keeps its mode, its owner where
we may set it, its indentation, its line ends and its trailing newline; the old text is kept
beside it first. A file nobody may write is refused, not overwritten. Writers are serialised
by a lock on the target's folder, which exists already and is never replaced, so nothing is
left beside the file. app/core/setup.py decides what changes.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCK_WAIT_S = 5.0


class SetupError(Exception):
    """settings.json cannot be read or changed safely; nothing was written."""


class SettingsChanged(SetupError):
    """settings.json changed between setup's read and its write: Claude (or an editor) saved
    it, without claudetto's lock. Writing on would lose that save; setup reads again."""


@dataclass(frozen=True)
class Layout:
    """How the user's file is written, so that a rewrite changes only the hook entries."""

    indent: str = "  "
    newline: str = "\n"
    trailing_newline: bool = True
    bom: bool = False  # a UTF-8 BOM first (Windows editors write one; Claude's CLI reads it)


def layout_of(raw: str) -> Layout:
    """The indentation (a run of spaces or a tab; two spaces when there is none to see), the
    line end and whether the text ends in a newline."""
    newline = "\r\n" if "\r\n" in raw else "\n"
    bom = raw.startswith("\ufeff")
    trailing = raw.endswith("\n") or not raw.removeprefix("\ufeff").strip()
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in raw.splitlines()[1:]
               if line.strip() and line[:1] in (" ", "\t")]
    if indents and indents[0].startswith("\t"):
        return Layout("\t", newline, trailing, bom)
    widths = [len(lead) for lead in indents if not lead.startswith("\t")]
    return Layout(" " * min(widths) if widths else "  ", newline, trailing, bom)


def render(data: Any, layout: Layout, shown: Path) -> str:
    """The text to write, checked before anything is written (the backup included): strict
    JSON, and UTF-8 that a file can hold (a `\\ud800` escape parses to a lone surrogate no
    UTF-8 file can carry)."""
    try:
        text = json.dumps(data, indent=layout.indent, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start:exc.end].encode("unicode_escape").decode("ascii")
        raise SetupError(f"{shown} holds {bad}, a lone surrogate escape no UTF-8 file can carry; "
                         "nothing changed") from None
    except ValueError as exc:
        raise SetupError(f"{shown}: a number JSON cannot hold ({exc}); nothing changed") from None
    except RecursionError:
        raise SetupError(f"{shown} is nested too deeply to write; nothing changed") from None
    if layout.newline != "\n":
        text = text.replace("\n", layout.newline)
    return ("\ufeff" if layout.bom else "") + text + (layout.newline if layout.trailing_newline else "")


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive flock on the folder itself: it exists already and a rename inside it
    never replaces it, so two setups cannot both hold it and no lock file is left behind."""
    import fcntl

    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise SetupError(f"cannot open {folder}: {exc.strerror}; nothing changed") from exc
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise SetupError(f"cannot lock {folder}: {exc.strerror}; nothing changed") from exc
                if time.monotonic() >= deadline:
                    raise SetupError(f"another claudetto setup is changing {folder}; nothing changed") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def read_settings(target: Path) -> tuple[str, os.stat_result | None]:
    """The text and status of the settings file, or ("", None) when there is none. Opened
    without blocking and checked to be a regular file before a byte is read: a named pipe in
    its place would hold setup (and the folder's lock) until someone writes to it, and a
    device or a folder is nothing a rewrite may replace."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return "", None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket: nothing to open
            raise SetupError(f"{target} is a socket, not a file; nothing changed") from exc
        raise SetupError(f"cannot read {target}: {exc.strerror}; nothing changed") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SetupError(f"{target} is {_kind_of(st.st_mode)}, not a file; nothing changed")
        with open(fd, encoding="utf-8", newline="", closefd=False) as fh:
            return fh.read(), st
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {target}: {exc}; nothing changed") from exc
    finally:
        os.close(fd)


#: how long an empty or broken settings.json is read again before it is taken as it is
SETTLE_S = 1.0


def read_settled(target: Path) -> tuple[str, os.stat_result | None]:
    """`read_settings`, read again (for up to SETTLE_S) while the file, saved within the last
    SETTLE_S, is empty or not JSON. Claude saves settings.json with a plain truncating write,
    no temp file and no rename: read in that instant, the file is empty or half written.
    Taken for "no settings", setup would rename the hooks alone into place and Claude's save
    would go to the replaced file, losing every setting; taken for broken, setup would refuse
    a good file. A file that stays so, or was so before, is what it is: empty (no settings),
    or refused as not JSON."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        raw, st = read_settings(target)
        if (st is None or time.monotonic() >= deadline or time.time() - st.st_mtime >= SETTLE_S
                or _whole(raw)):
            return raw, st
        time.sleep(0.02)


def _whole(raw: str) -> bool:
    try:
        json.loads(raw.removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        return False
    return True


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def parse_settings(raw: str, shown: Path) -> dict[str, Any]:
    """The settings as an object. A number is kept only when it goes back out as the JSON it
    came in as: Python reads `1e400` as infinity and `NaN` as a float, and would write them
    back as `Infinity` and `NaN`, which no JSON parser (Claude's included) accepts, losing
    every setting in the file. Integers stay exact (Python's are unbounded), up to the digits
    Python will convert."""

    def refuse(token: str) -> Any:
        raise SetupError(f"{shown}: {token[:40]} is a number JSON cannot hold; nothing changed")

    def number(token: str) -> float:
        value = float(token)
        return value if math.isfinite(value) else refuse(token)

    def integer(token: str) -> int:
        try:
            return int(token)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise SetupError(f"{shown}: a number of {len(token)} digits, too long to keep exactly; "
                             "nothing changed") from None

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # a rewrite keeps one value per key: the other (Claude reads only the last) would be
        # lost from the file without a word
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise SetupError(f"{shown} holds the key {json.dumps(key)[:60]} twice in one object; "
                                 "nothing changed (merge them by hand: Claude reads only the last)")
            seen.add(key)
        return dict(pairs)

    raw = raw.removeprefix("\ufeff")  # a BOM, as Claude's CLI reads the file (kept on write: Layout)
    try:
        data = json.loads(raw, parse_float=number, parse_int=integer, parse_constant=refuse,
                          object_pairs_hook=unique) if raw.strip() else {}
    except ValueError as exc:
        raise SetupError(f"{shown} is not valid JSON ({exc}); nothing changed") from exc
    except RecursionError:
        raise SetupError(f"{shown} is nested too deeply to read; nothing changed") from None
    if not isinstance(data, dict):
        raise SetupError(f"{shown} is not a JSON object; nothing changed")
    return data


def refuse_read_only(link: Path, target: Path, st: os.stat_result | None) -> None:
    """A rename would replace a read-only file regardless of its mode: check it first. No
    write bit at all counts as read-only even for root: the user made it so on purpose. A
    rename also splits a hard link, leaving the other name with the old text: refused too."""
    if st is None:
        return
    shown = link if link == target else f"{link} (-> {target})"
    if not st.st_mode & 0o222 or not os.access(target, os.W_OK):
        raise SetupError(f"{shown} is read-only; nothing changed (make it writable, or add the hooks by hand)")
    if st.st_nlink > 1:  # a rename would split it from its other name (a dotfiles copy) silently
        raise SetupError(f"{shown} has {st.st_nlink} hard links (the same file under another name, a dotfiles "
                         "repository's copy?); a rewrite would split them, nothing changed (make it a symlink, "
                         "or add the hooks by hand)")


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def keep_backup(link: Path, raw: str, st: os.stat_result | None) -> str:
    """The old text beside the settings file (beside the link, not in a dotfiles repository),
    with the old file's mode: settings may hold tokens, and a backup must not widen access."""
    mode = stat.S_IMODE(st.st_mode) & 0o666 if st is not None else 0o600
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = link.with_name(f"{link.name}.bak-{stamp}")
    n = 1
    while True:
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            break
        except FileExistsError:
            name = link.with_name(f"{link.name}.bak-{stamp}-{n}")
            n += 1
        except OSError as exc:
            raise SetupError(f"cannot write the backup {name}: {exc.strerror}; nothing changed") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            _keep_owner(fh.fileno(), st)  # a backup root made under sudo is still the user's to read
            os.fchmod(fh.fileno(), mode | 0o200)
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())  # the backup is the way back: on disk before the file changes
    except OSError as exc:
        # a full disk (or a file size limit) cut it short: half a backup looks like a whole one
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise SetupError(f"cannot write the backup {name}: {exc.strerror}; nothing changed") from exc
    return str(name)


#: setup's backups kept beside settings.json: the first (the file before claudetto ever
#: changed it) and the newest ones, this many in all
BACKUPS_KEPT = 10
_BACKUP_NAME = r"\.bak-\d{8}-\d{6}(?:-\d+)?"


def backups(link: Path) -> list[Path]:
    """Setup's backups beside `link`, newest first: only regular files named exactly as setup
    names them (nothing else in the config folder is ours to read or take away)."""
    import re

    pattern = re.compile(re.escape(link.name) + _BACKUP_NAME)
    found: list[tuple[int, str]] = []
    try:
        with os.scandir(link.parent) as entries:
            for entry in entries:
                if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    except OSError:
        return []
    return [link.parent / name for _mtime, name in sorted(found, reverse=True)]


def prune_backups(link: Path) -> list[str]:
    """Setup's backups beyond BACKUPS_KEPT, taken away (oldest first, the very first kept): one
    is made at every change, and a user who runs setup at every upgrade would pile up one a
    time in the config folder. The names taken away are returned (and nothing is raised: a
    backup that cannot go stays)."""
    found = backups(link)[::-1]
    gone: list[str] = []
    for path in found[1:len(found) - BACKUPS_KEPT + 1]:
        with contextlib.suppress(OSError):
            os.unlink(path)
            gone.append(path.name)
    return gone


def refuse_changed(target: Path, raw: str, st: os.stat_result | None) -> None:
    """Raise SettingsChanged unless `target` still holds `raw` (or is still missing): the
    compare of a compare-and-swap, made just before the rename. Claude writes settings.json
    whole (a `/config` change, an "always allow"), so the text is what tells."""
    try:
        now, now_st = read_settings(target)
    except SetupError as exc:
        raise SettingsChanged(f"{target} changed while setup was writing it ({exc})") from None
    if now != raw or (now_st is None) != (st is None):
        raise SettingsChanged(f"{target} changed while setup was writing it (Claude or an editor saved it)")


def write_keeping_form(target: Path, text: str, mode: int, st: os.stat_result | None, *,
                       expect: str | None = None) -> None:
    """Replace `target` atomically: a temp file in its own folder with its mode (and owner,
    where we may set it), fsynced, renamed onto it; with `expect` (the text setup read), only
    while the file still holds it (SettingsChanged otherwise, the file left as it is)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise SetupError(f"cannot write in {target.parent}: {exc.strerror}; nothing changed") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            _keep_owner(fh.fileno(), st)
            os.fchmod(fh.fileno(), mode)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if expect is not None:
            refuse_changed(target, expect, st)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise SetupError(f"cannot write {target}: {exc.strerror}; nothing changed") from exc
        raise


def _keep_owner(fd: int, st: os.stat_result | None) -> None:
    """The old file's owner on the new one, where we may set it (before the mode: a chown
    clears set-id bits)."""
    if st is not None and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(OSError):
            os.fchown(fd, st.st_uid, st.st_gid)


def remove_old_lock(link: Path) -> None:
    """Older versions left an empty `settings.json.lock` file; take it away. Only an empty
    regular file: a lock folder or a non-empty file is someone else's."""
    old = link.with_name(link.name + ".lock")
    try:
        st = os.lstat(old)
        if stat.S_ISREG(st.st_mode) and st.st_size == 0:
            os.unlink(old)
    except OSError:
        pass
