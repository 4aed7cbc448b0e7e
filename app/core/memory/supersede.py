"""Supersede, never delete: strike a wrong fact (`~~…~~`) and add a dated correction below it,
in one atomic write. The wrong fact stays readable with its correction: a memory that loses
the why gets re-learned wrong, and the strike silences later sweeps.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass

from app.core import paths
from app.core.memory_lint import fenced_lines, frontmatter, memory_folder_of
from app.core.paths import strictly_inside

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

MEMORY_FILE_BYTES_MAX = 1024 * 1024


class MemoryWriteRefused(Exception):
    """A write into memory that must not happen, with the one line that says why."""


class SupersedeRefused(MemoryWriteRefused):
    """A supersede that must not happen, with the one line that says why."""


@dataclass(frozen=True)
class Superseded:
    file: str  # the real path written (symlinks resolved)
    line: int
    struck: str  # the new text of the line
    correction: str  # the added line
    correction_line: int
    dry_run: bool


_LEAD = re.compile(r"(\s*(?:>\s*)*(?:[-*+]\s+|\d+[.)]\s+)?(?:\[[ xX]\]\s+)?)(#{1,6}\s+)?")


def supersede(file: str, line: int, correction: str, *, expect: str | None = None, dry_run: bool = False,
              today: str | None = None) -> Superseded:
    """Strike line `line` of a memory file (`~~…~~`) and add `Correction (<today>): <text>`
    right below it, in one atomic write (temp file, fsync, rename, under claudetto's lock;
    the file keeps its mode). The wrong fact stays readable with its correction: a memory
    that loses the why gets re-learned wrong, and the strike silences later sweeps.

    Lines are numbered as `grep -n` and Claude number them: split on `\\n` only. `expect` is
    the text the caller saw on that line; when line `line` no longer holds it, nothing is
    written. Without it, a number below the line the last supersede struck is refused while
    the file is as that supersede left it: it was likely read before the correction pushed
    the lines down.

    Raises SupersedeRefused for a file outside `<config>/projects/*/memory/` (symlinks
    resolved), read-only, a line out of range, empty, in the frontmatter or a code block,
    struck, not the expected text, or moved by the last supersede."""
    import time

    real = memory_file(file, SupersedeRefused)
    _refuse_not_markdown(file, real)
    text = " ".join(correction.split())
    if not text:
        raise SupersedeRefused("the correction is empty")
    if any(c < " " or "\x7f" <= c <= "\x9f" or "\ud800" <= c <= "\udfff" for c in text):
        raise SupersedeRefused("the correction holds a control character or a byte that is not UTF-8; "
                               "nothing changed (give it as plain text)")
    date = today or time.strftime("%Y-%m-%d")
    if dry_run:
        content, before = _read_memory(real)
        refuse_read_only(real, before, SupersedeRefused)
        _still_meant(real, content, before, line, expect)
        return _superseded(real, content, line, text, date, dry_run=True)
    from app.core.memory import shifts

    with memory_write_lock(SupersedeRefused):
        content, before = _read_memory(real)
        refuse_read_only(real, before, SupersedeRefused)
        _still_meant(real, content, before, line, expect)
        result = _superseded(real, content, line, text, date, dry_run=False)
        lines = split_lines(content)
        tail = lines[line - 1][len(line_body(lines[line - 1])):]  # "\r\n", "\n", a lone "\r" or ""
        first = lines[0][len(line_body(lines[0])):]
        ending = tail if tail.endswith("\n") else first if first.endswith("\n") else "\n"
        lines[line - 1: line] = [result.struck + ending, result.correction + tail]
        write_unchanged(real, "".join(lines).encode("utf-8"), before, SupersedeRefused, old=content.encode("utf-8"))
        shifts.remember(real, file_state(os.stat(real)), line)
    return result


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their endings, split on `\\n` only, as `grep -n`, Claude and
    every check here count them: a form feed, `\\x85` or `\\u2028` is inside a line (pure)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def line_body(line: str) -> str:
    """A line without its ending: the `\\n` and one `\\r` before it (pure)."""
    body = line[:-1] if line.endswith("\n") else line
    return body[:-1] if body.endswith("\r") else body


def refuse_read_only(real: str, st: os.stat_result, refused: type[MemoryWriteRefused]) -> None:
    """A rename replaces a read-only file regardless of its mode: no write bit at all counts
    as read-only even for root, as for settings.json: the user made it so on purpose. A rename
    also splits a hard link: the other name (a note in the user's own folders) would keep the
    old text while memory got the new, silently; such a file is refused the same way."""
    if not st.st_mode & 0o222 or not os.access(real, os.W_OK):
        raise refused(f"{real} is read-only; nothing changed (make it writable to correct it)")
    if st.st_nlink > 1:
        raise refused(f"{real} has {st.st_nlink} hard links (the same file under another name); a rewrite "
                      "would split them, nothing changed (edit it by hand, or copy it in place of the link)")


def _still_meant(real: str, content: str, before: os.stat_result, number: int, expect: str | None) -> None:
    """Refuse a line number that no longer names the line the caller meant."""
    lines = split_lines(content)
    body = line_body(lines[number - 1]) if 1 <= number <= len(lines) else None
    if body is not None and number == 1:
        body = body.removeprefix("\ufeff")  # a BOM is no text anybody sees on the line
    if expect is not None:
        if body is None or body.strip() != expect.strip():
            now = "is out of range" if body is None else f"reads {body.strip()!r}"
            raise SupersedeRefused(f"line {number} of {real} changed: it {now}, not {expect.strip()!r}; "
                                   "nothing changed, look again")
        return
    from app.core.memory import shifts

    struck = shifts.struck_last(real, file_state(before))
    if struck is not None and number > struck and body is not None:
        raise SupersedeRefused(
            f"line {number} of {real} moved: the correction added below line {struck} pushed every "
            f"line under it down by one; nothing changed (line {number} now reads {body.strip()!r}: "
            "to strike it, say so with --expect TEXT)")


@contextmanager
def memory_write_lock(refused: type[MemoryWriteRefused] = MemoryWriteRefused) -> Iterator[None]:
    """The one lock every write into memory holds (in claudetto's own state, so nothing is
    left in memory): a supersede and an index line never interleave their read and rename.
    A lock that cannot be had (another writer holds it, CLAUDETTO_HOME is a file, read-only,
    another user's) is `refused` in one line: nothing was read or written yet."""
    from app.core.state import StateBusy, locked

    home = paths.claudetto_home_str()
    try:
        held = locked(os.path.join(home, "memory-supersede"))
        held.__enter__()
    except StateBusy:
        raise refused("another memory write holds the lock; nothing changed, try again") from None
    except OSError as exc:
        raise refused(f"cannot take the memory write lock in {home} (CLAUDETTO_HOME): "
                      f"{exc.strerror or exc}; nothing changed") from None
    try:
        yield
    finally:
        held.__exit__()


def memory_file(file: str, refused: type[MemoryWriteRefused]) -> str:
    """The real path of a memory file (symlinks resolved), refused (`refused`) when its real
    place is not in a memory folder, or it is not a regular file."""
    given = os.path.abspath(file)
    real = os.path.realpath(given)
    spelled = memory_folder_of(given)
    inside = memory_folder_of(real) is not None or (
        spelled is not None and strictly_inside(real, os.path.realpath(spelled)))
    if not inside:
        config = paths.config_dir_str()
        raise refused(f"{file} is not in a memory folder ({config}/projects/*/memory/); nothing changed")
    if not os.path.lexists(real):
        raise refused(f"{file}: no such file")
    if not os.path.isfile(real):
        raise refused(f"{file} is not a file")
    return real


def _refuse_not_markdown(file: str, real: str) -> None:
    """A memory folder linked to a dotfiles folder or to home reaches `.bashrc` and source
    files too: only Markdown is memory (Claude writes nothing else there), by both names."""
    given = os.path.abspath(file)
    if not all(name.lower().endswith(".md") for name in (os.path.basename(given), os.path.basename(real))):
        shown = file if real == given else f"{file} (-> {real})"
        raise SupersedeRefused(f"{shown} is not a memory file (Claude's memory files are .md files); "
                               "nothing changed")


def _read_memory(real: str) -> tuple[str, os.stat_result]:
    from app.core.state import read_regular

    try:
        before = os.stat(real)
        return read_regular(real, limit=MEMORY_FILE_BYTES_MAX).decode("utf-8"), before
    except UnicodeDecodeError:
        raise SupersedeRefused(f"{real} is not UTF-8 text; nothing changed") from None
    except OSError as exc:
        raise SupersedeRefused(f"cannot read {real}: {exc.strerror or exc}") from None


def _superseded(real: str, content: str, number: int, text: str, date: str, *, dry_run: bool) -> Superseded:
    lines = split_lines(content)
    if not 1 <= number <= len(lines):
        raise SupersedeRefused(f"line {number} is out of range: {real} has {len(lines)} line{'s' if len(lines) != 1 else ''}")
    body = line_body(lines[number - 1])
    if not body.strip():
        raise SupersedeRefused(f"line {number} of {real} is empty: there is no fact to strike")
    if "~~" in body:
        raise SupersedeRefused(f"line {number} of {real} is already struck")
    found = frontmatter(content)
    if found is not None and number <= found[1]:
        raise SupersedeRefused(f"line {number} of {real} is in the frontmatter: edit it instead")
    if number in fenced_lines(content):
        raise SupersedeRefused(f"line {number} of {real} is in a code block: edit it instead")
    bom = "\ufeff" if body.startswith("\ufeff") else ""  # stays the file's first character
    lead = _LEAD.match(body, len(bom))
    assert lead is not None  # every group is optional
    prefix, heading = lead.group(1), lead.group(2) or ""
    rest = body[lead.end():].rstrip()
    if not rest:
        raise SupersedeRefused(f"line {number} of {real} holds no text to strike")
    return Superseded(real, number, f"{bom}{prefix}{heading}~~{rest}~~", f"{prefix}Correction ({date}): {text}",
                      number + 1, dry_run)


def file_state(st: os.stat_result) -> tuple[int, int, int]:
    """What tells a file changed: modification time, size, inode (a rename over it)."""
    return st.st_mtime_ns, st.st_size, st.st_ino


def write_unchanged(real: str, data: bytes, before: os.stat_result, refused: type[MemoryWriteRefused], *,
                    old: bytes) -> None:
    """Replace `real` by `data` through a temp file beside it (fsync, rename), with its mode
    and owner, unless it changed since it was read as `old` (then nothing is written and `refused` says
    so). Claude writes memory without claudetto's lock, in place: an edit of the same length
    within one tick of the file system's clock leaves size, time and inode as they were, so
    the bytes themselves are compared too, just before the rename."""
    import stat

    from app.core.state import read_regular, write_atomic

    refuse_read_only(real, before, refused)

    def unchanged() -> None:
        try:
            same = file_state(os.lstat(real)) == file_state(before) and read_regular(real, limit=len(old)) == old
        except OSError:  # gone, swapped for a link, grown past what was read
            same = False
        if not same:
            raise refused(f"{real} changed while it was being written (Claude or an editor saved it); "
                          "nothing changed, try again")

    write_atomic(real, data, mode=stat.S_IMODE(before.st_mode), before_replace=unchanged,
                 owner=(before.st_uid, before.st_gid))
