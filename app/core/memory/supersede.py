"""Supersede, never delete: strike a wrong fact (`~~…~~`) and add a dated correction below it,
in one atomic write. The wrong fact stays readable with its correction: a memory that loses
the why gets re-learned wrong, and the strike silences later sweeps.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

from app.core import paths
from app.core.memory.facts import opens_comment
from app.core.memory.strike import NotStruck, struck_line
from app.core.memory_lint import (
    INDEX_LINE_MAX,
    INDEX_NAME,
    fenced_lines,
    frontmatter,
    memory_folder_of,
)
from app.core.paths import strictly_inside

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import AnyStr

MEMORY_FILE_BYTES_MAX = 1024 * 1024
#: a correction is one line below the struck one, not a document
CORRECTION_MAX = 2000
#: a line quoted in a refusal is cut here
SHOWN_MAX = 200


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


def supersede(file: str, line: int, correction: str, *, expect: str | None = None, dry_run: bool = False,
              today: str | None = None) -> Superseded:
    """Strike line `line` of a memory file (`~~…~~`) and add `Correction (<today>): <text>`
    right below it, in one atomic write (temp file, fsync, rename, under claudetto's lock;
    the file keeps its mode, owner and extended attributes). Every other byte stays as it
    was, even bytes that are not UTF-8: only the struck line has to be text. The wrong fact
    stays readable with its correction: a memory that loses the why gets re-learned wrong,
    and the strike silences later sweeps.

    Lines are numbered as `grep -n` and Claude number them: split on `\\n` only. `expect` is
    the text the caller saw on that line; when line `line` no longer holds it, nothing is
    written. Without it, a number below the line the last supersede struck is refused while
    the file is as that supersede left it: it was likely read before the correction pushed
    the lines down.

    Raises SupersedeRefused for a file outside `<config>/projects/*/memory/` (symlinks
    resolved), read-only, a line out of range, empty, in the frontmatter or a code block,
    struck, not the expected text, or moved by the last supersede; for a correction that
    would not be one line of the file (in `MEMORY.md`, one index line)."""
    import time

    real = memory_file(file, SupersedeRefused)
    _refuse_not_markdown(file, real)
    text = _correction_text(correction)
    date = today or time.strftime("%Y-%m-%d")
    if dry_run:
        raw, before = _read_memory(real)
        refuse_read_only(real, before, SupersedeRefused)
        _still_meant(real, raw, before, line, expect)
        return _superseded(real, raw, line, text, date, dry_run=True)
    from app.core.memory import shifts

    with memory_write_lock(SupersedeRefused):
        raw, before = _read_memory(real)
        refuse_read_only(real, before, SupersedeRefused)
        _still_meant(real, raw, before, line, expect)
        result = _superseded(real, raw, line, text, date, dry_run=False)
        write_unchanged(real, _rewritten(raw, result), before, SupersedeRefused, old=raw)
        shifts.remember(real, file_state(os.stat(real)), line)
    return result


def _correction_text(correction: str) -> str:
    """The correction on one line: every run of blanks one space; refused when empty, when
    it holds a control character, or past CORRECTION_MAX (a correction is a line, not a file)."""
    text = " ".join(correction.split())
    if not text:
        raise SupersedeRefused("the correction is empty")
    if any(c < " " or "\x7f" <= c <= "\x9f" or "\ud800" <= c <= "\udfff" for c in text):
        raise SupersedeRefused("the correction holds a control character or a byte that is not UTF-8; "
                               "nothing changed (give it as plain text)")
    if opens_comment(text):  # every line below would be a comment: unseen, never swept
        raise SupersedeRefused("the correction opens an HTML comment (`<!--`) it does not close, which would hide "
                               "every line below it; nothing changed (close it with `-->` or leave it out)")
    if len(text) > CORRECTION_MAX:
        raise SupersedeRefused(f"the correction is {len(text)} characters, over {CORRECTION_MAX}: it is one line "
                               "below the struck one; nothing changed (put the detail in a topic file)")
    return text


def _rewritten(raw: bytes, result: Superseded) -> bytes:
    """`raw` with line `result.line` replaced by the struck line and the correction, each in
    the line ending the struck line had (the first line's when it was the last and had none):
    every other byte as it was."""
    lines = split_lines(raw)
    tail = lines[result.line - 1][len(line_body(lines[result.line - 1])):]  # "\r\n", "\n", a lone "\r" or ""
    first = lines[0][len(line_body(lines[0])):]
    ending = tail if tail.endswith(b"\n") else first if first.endswith(b"\n") else b"\n"
    lines[result.line - 1: result.line] = [result.struck.encode("utf-8") + ending,
                                           result.correction.encode("utf-8") + tail]
    return b"".join(lines)


def split_lines(data: bytes) -> list[bytes]:
    """The lines of `data` with their endings, split on `\\n` only, as `grep -n`, Claude and
    every check here count them: a form feed, `\\x85` or `\\u2028` is inside a line (pure)."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def text_lines(path: str, upto: int) -> list[str]:
    """The first `upto` lines of a memory file as text, without their endings and numbered
    as every check numbers them (`\n` only; a byte that is not UTF-8 shown replaced); []
    when it cannot be read. Reading stops at `upto`: a viewer needs the lines up to the one
    it shows, however far down the file that one is. A file that is no regular file has no
    lines, as the sweep reads it (`open_regular`: a named pipe would wait for a writer for ever)."""
    from itertools import islice

    from app.core.state import open_regular

    try:
        with open(open_regular(path), encoding="utf-8", errors="replace", newline="\n") as fh:
            return [line_body(line) for line in islice(fh, upto)]
    except OSError:
        return []


def line_body(line: AnyStr) -> AnyStr:
    """A line without its ending: the `\\n` and one `\\r` before it (pure; text or bytes)."""
    nl, cr = ("\n", "\r") if isinstance(line, str) else (b"\n", b"\r")
    body = line[:-1] if line.endswith(nl) else line
    return body[:-1] if body.endswith(cr) else body


def refuse_read_only(real: str, st: os.stat_result, refused: type[MemoryWriteRefused]) -> None:
    """A rename replaces a read-only file regardless of its mode: no write bit at all counts
    as read-only even for root, as for settings.json: the user made it so on purpose. A rename
    also splits a hard link: the other name (a note in the user's own folders) would keep the
    old text while memory got the new, silently; such a file is refused the same way."""
    if not st.st_mode & 0o222 or not os.access(real, os.W_OK):
        if _on_read_only_mount(real):
            raise refused(f"{real} is on a read-only file system; nothing changed")
        raise refused(f"{real} is read-only; nothing changed (make it writable to correct it)")
    if st.st_nlink > 1:
        raise refused(f"{real} has {st.st_nlink} hard links (the same file under another name); a rewrite "
                      "would split them, nothing changed (edit it by hand, or copy it in place of the link)")


def _on_read_only_mount(real: str) -> bool:
    try:
        return bool(os.statvfs(real).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _still_meant(real: str, raw: bytes, before: os.stat_result, number: int, expect: str | None) -> None:
    """Refuse a line number that no longer names the line the caller meant."""
    lines = split_lines(raw)
    body = line_body(lines[number - 1]).decode("utf-8", "replace") if 1 <= number <= len(lines) else None
    if expect is not None:
        if number == 1:  # a BOM is no text anybody sees on the line, whether the caller kept it or not
            expect = expect.removeprefix("\ufeff")
            body = body.removeprefix("\ufeff") if body is not None else None
        if body is None or body.strip() != expect.strip():
            now = "is out of range" if body is None else f"reads {_shown(body)}"
            raise SupersedeRefused(f"line {number} of {real} changed: it {now}, not {_shown(expect)}; "
                                   "nothing changed, look again")
        return
    from app.core.memory import shifts

    seen = shifts.listed(real, number)
    if seen is not None and body is not None and seen[0] != file_state(before) \
            and body.strip()[:shifts.LISTED_TEXT_MAX] != seen[1]:
        raise SupersedeRefused(
            f"line {number} of {real} changed since the memory findings named it: it read {_shown(seen[1])}, "
            f"now {_shown(body)}; nothing changed (look again; to strike it as it is, say --expect TEXT)")
    struck = shifts.struck_last(real, file_state(before))
    if struck is not None and number > struck and body is not None:
        raise SupersedeRefused(
            f"line {number} of {real} moved: the correction added below line {struck} pushed every "
            f"line under it down by one; nothing changed (line {number} now reads {_shown(body)}: "
            "to strike it, say so with --expect TEXT)")


def _shown(line: str) -> str:
    """A line quoted in a refusal: the refusal is one line on stderr, and a memory line may
    be a long paragraph."""
    text = line.strip()
    return repr(text if len(text) <= SHOWN_MAX else text[:SHOWN_MAX - 1] + "\u2026")


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
        shown = f"{file} (a link to {real})" if spelled is not None else file  # its name is, its real place not
        raise refused(f"{shown} is not in a memory folder ({config}/projects/*/memory/); nothing changed")
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


def _read_memory(real: str) -> tuple[bytes, os.stat_result]:
    from app.core.state import FileTooLarge, read_regular

    try:
        before = os.stat(real)
        return read_regular(real, limit=MEMORY_FILE_BYTES_MAX), before
    except FileTooLarge:
        raise SupersedeRefused(f"cannot read {real}: it is longer than {MEMORY_FILE_BYTES_MAX} bytes (1 MiB), more "
                               "than a memory file Claude writes; nothing changed (edit it by hand)") from None
    except OSError as exc:
        raise SupersedeRefused(f"cannot read {real}: {exc.strerror or exc}") from None


def _superseded(real: str, raw: bytes, number: int, text: str, date: str, *, dry_run: bool) -> Superseded:
    lines = split_lines(raw)
    if not 1 <= number <= len(lines):
        raise SupersedeRefused(f"line {number} is out of range: {real} has {len(lines)} line{'s' if len(lines) != 1 else ''}")
    try:
        body = line_body(lines[number - 1]).decode("utf-8")
    except UnicodeDecodeError:
        raise SupersedeRefused(f"line {number} of {real} is not UTF-8 text; nothing changed") from None
    if not body.strip():
        raise SupersedeRefused(f"line {number} of {real} is empty: there is no fact to strike")
    content = raw.decode("utf-8", "replace")  # the same `\n`s: other lines need not be text to be counted
    found = frontmatter(content)
    if found is not None and number <= found[1]:
        raise SupersedeRefused(f"line {number} of {real} is in the frontmatter: edit it instead")
    if number in fenced_lines(content):
        raise SupersedeRefused(f"line {number} of {real} is in a code block: edit it instead")
    following = line_body(lines[number]).decode("utf-8", "replace") if number < len(lines) else None
    try:
        struck, correction = struck_line(body, following, date, text)
    except NotStruck as why:
        raise SupersedeRefused(f"line {number} of {real} {why}") from None
    if len(correction.strip()) > INDEX_LINE_MAX and _is_index(real):
        raise SupersedeRefused(f"the correction line would be {len(correction.strip())} characters, over the "
                               f"{INDEX_LINE_MAX} of one {INDEX_NAME} pointer line; nothing changed (shorten it)")
    return Superseded(real, number, struck, correction, number + 1, dry_run)


def correction_room(file: str, body: str, today: str | None = None) -> int:
    """The most characters a correction of the line `body` of `file` may have: CORRECTION_MAX,
    and in MEMORY.md what one pointer line holds beside the line's own marks and the date
    (the rule `supersede` refuses by, for a dialog to ask no more)."""
    import time

    if not _is_index(os.path.realpath(file)):
        return CORRECTION_MAX
    try:
        _struck, one = struck_line(body, None, today or time.strftime("%Y-%m-%d"), "X")
    except NotStruck:
        return CORRECTION_MAX
    return max(0, min(CORRECTION_MAX, INDEX_LINE_MAX - len(one.strip()) + 1))


def _is_index(real: str) -> bool:
    folder = memory_folder_of(real)
    return folder is not None and os.path.basename(real) == INDEX_NAME and os.path.dirname(real) == os.path.realpath(folder)


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

    kept = _user_xattrs(real)
    try:
        write_atomic(real, data, mode=stat.S_IMODE(before.st_mode), before_replace=unchanged,
                     owner=(before.st_uid, before.st_gid))
    except OSError as exc:  # a full disk, a folder that takes no new file: the temp file is gone again
        raise refused(f"cannot write {real}: {exc.strerror or exc}; nothing changed") from None
    for name, value in kept.items():  # the rename made a new inode: the user's tags go with the text
        try:
            os.setxattr(real, name, value, follow_symlinks=False)
        except OSError as exc:
            from app.core.log import log

            log(f"memory: {real} lost its extended attribute {name} in the rewrite: {exc}")


def _user_xattrs(real: str) -> dict[str, bytes]:
    """The `user.*` extended attributes of a file (an editor's or a file manager's tags,
    a sync tool's ids): a rewrite by rename would drop them. {} where there are none."""
    if not hasattr(os, "listxattr"):
        return {}
    try:
        return {name: os.getxattr(real, name, follow_symlinks=False)
                for name in os.listxattr(real, follow_symlinks=False) if name.startswith("user.")}
    except OSError:
        return {}
