"""Listing a topic file in `MEMORY.md`: the one pointer line the index lacks, appended.

Claude recalls through the index, not the folder: a topic file no index line names is
invisible. The fix is one line in the form Claude writes itself (`- [Title](file.md) —
one-line hook`), appended at the end, and nothing else touched: every other byte of
`MEMORY.md` stays as it was, even bytes that are not UTF-8. The write takes the lock
`supersede` takes and is refused when the index changed in between (or since the line was
shown), so two writers never lose each other's line. "Listed" means what the sweep means
(`index.index_drift`): adding is idempotent, a listed file is refused.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from app.core.memory.index import INDEX_LOADED_BYTES, INDEX_LOADED_LINES, listed_at, loaded_lines
from app.core.memory.supersede import (
    MEMORY_FILE_BYTES_MAX,
    MemoryWriteRefused,
    file_state,
    memory_file,
    memory_write_lock,
    refuse_read_only,
    write_unchanged,
)
from app.core.memory_lint import (
    INDEX_LINE_MAX,
    INDEX_NAME,
    fenced_lines,
    frontmatter,
    memory_folder_of,
)

#: characters a link target cannot hold as they are: they would end it, or (`#`, `?`) cut it
_UNSAFE_IN_TARGET = frozenset(" ()<>%#?[]\"'")
_HEADING = re.compile(r" {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$")

State = tuple[int, int, int]


class IndexRefused(MemoryWriteRefused):
    """An index line that must not be added, with the one line that says why."""


@dataclass(frozen=True)
class IndexAdded:
    index: str  # the MEMORY.md written (or that would be)
    topic: str  # the topic file, relative to the memory folder
    line: str  # the added line, without its line ending
    number: int  # its line number in the index
    loaded: bool  # within the part of the index Claude loads each session
    seen: State  # the index the line was made against (`file_state`): pass it back to write that
    dry_run: bool


def add_to_index(topic_file: str, *, dry_run: bool = False, seen: State | None = None,
                 shown: str | None = None) -> IndexAdded:
    """Append the line that lists `topic_file` to the `MEMORY.md` of its memory folder, in one
    atomic write (temp file, fsync, rename, under the memory write lock; the index keeps its
    mode and line endings, and the line is an item of the index's own list: `in_form`). `seen` is the index's state when the line was shown (a dry run's
    `seen`): the write is refused when the index is no longer that. `shown` is the line as it
    was shown (a dry run's `line`): the line is made from the topic's frontmatter, which
    Claude may rewrite before the yes, and a yes to one line never writes another.

    Raises IndexRefused for a topic file outside a memory folder (symlinks resolved), not a
    visible `.md` file or the index itself; an index that is missing, not a regular file (a
    symlink too), too large, already listing the file, or changed in between."""
    folder, topic, real = _topic(topic_file)
    index = os.path.join(folder, INDEX_NAME)
    line = index_line(real, topic)
    if dry_run:
        raw, before = _read_index(index)
        refuse_read_only(index, before, IndexRefused)
        return _added(index, topic, in_form(line, raw), raw, before, seen=seen, dry_run=True)
    with memory_write_lock(IndexRefused):
        raw, before = _read_index(index)
        added = _added(index, topic, in_form(line, raw), raw, before, seen=seen, dry_run=False)
        if shown is not None and added.line != shown:
            raise IndexRefused(f"the line that lists {topic} is no longer the one shown ({topic} changed its title "
                               "or description since); nothing changed, look again")
        write_unchanged(index, appended(raw, added.line), before, IndexRefused, old=raw)
    return added


def _topic(topic_file: str) -> tuple[str, str, str]:
    """(memory folder, topic name relative to it, real path) of a topic file: named as the
    sweep names it, by its spelling when that is inside the folder."""
    real = memory_file(topic_file, IndexRefused)
    given = os.path.abspath(topic_file)
    resolved_parent = os.path.join(os.path.realpath(os.path.dirname(given)), os.path.basename(given))
    for path in (given, resolved_parent, real):
        folder = memory_folder_of(path)
        if folder is not None and path.startswith(folder + "/"):
            topic = path[len(folder) + 1:]
            break
    else:
        raise IndexRefused(f"{topic_file} is not in a memory folder; nothing changed")
    if topic == INDEX_NAME:
        raise IndexRefused(f"{topic_file} is the index itself, not a topic file")
    if not topic.lower().endswith(".md") or any(part.startswith(".") for part in topic.split("/")):
        raise IndexRefused(f"{topic_file} is not a topic file (a visible .md file in the memory folder)")
    if any("\ud800" <= ch <= "\udfff" for ch in topic):
        # a name byte that is not UTF-8: no Markdown link (UTF-8 text) can name it again
        from app.core.log import printable

        raise IndexRefused(f"{printable(topic)} is not named in UTF-8, so no index line can point at it; "
                           "rename it, nothing changed")
    return folder, topic, real


def _read_index(index: str) -> tuple[bytes, os.stat_result]:
    from app.core.state import FileTooLarge, NotRegularFile, read_regular

    try:
        before = os.lstat(index)
        return read_regular(index, limit=MEMORY_FILE_BYTES_MAX), before
    except FileNotFoundError:
        raise IndexRefused(f"there is no {INDEX_NAME} in {os.path.dirname(index)}; nothing changed") from None
    except NotRegularFile as exc:
        raise IndexRefused(f"{exc}: {INDEX_NAME} must be a regular file; nothing changed") from None
    except FileTooLarge:
        raise IndexRefused(f"{index} is over {MEMORY_FILE_BYTES_MAX} bytes; nothing changed") from None
    except OSError as exc:
        raise IndexRefused(f"cannot read {index}: {exc.strerror or exc}") from None


def _added(index: str, topic: str, line: str, raw: bytes, before: os.stat_result, *,
           seen: State | None, dry_run: bool) -> IndexAdded:
    """What adding `line` to the index `raw` gives, or the refusal."""
    now = file_state(before)
    if seen is not None and now != seen:
        raise IndexRefused(f"{index} changed since the line was shown; nothing changed, look again")
    folder = os.path.dirname(index)
    at = listed_at(folder, raw.decode("utf-8", "replace"), topic)
    if at is not None:
        past = "" if at <= loaded_lines(raw.decode("utf-8", "replace")) else (
            ", past what Claude loads each session: move that line up (a second line at the end would be past it too)")
        raise IndexRefused(f"{INDEX_NAME} already lists {topic} at line {at}{past}; nothing changed")
    if listed_at(folder, appended(raw, line).decode("utf-8", "replace"), topic) is None:
        # the index ends inside a fenced code block or an HTML comment left open: a line
        # there is code or a note, which neither Claude's recall nor the sweep reads as a pointer
        raise IndexRefused(f"a line added at the end of {INDEX_NAME} would not list {topic}: the index ends inside "
                           "a code block or an HTML comment that is not closed; nothing changed (close it first)")
    number = raw.count(b"\n") + (1 if raw and not raw.endswith(b"\n") else 0) + 1  # `\n` only, as grep -n
    loaded = number <= INDEX_LOADED_LINES and len(appended(raw, line)) <= INDEX_LOADED_BYTES
    return IndexAdded(index, topic, line, number, loaded, now, dry_run)


def appended(raw: bytes, line: str) -> bytes:
    """`raw` with `line` after its last line, in the line ending its first line uses (pure).
    Lines end at `\\n` only: a last line ending in a lone `\\r` gets its `\\n`, not a merge."""
    first = raw.find(b"\n")
    ending = b"\r\n" if first > 0 and raw[first - 1:first] == b"\r" else b"\n"
    lead = b"" if not raw or raw.endswith(b"\n") else b"\n" if raw.endswith(b"\r") else ending
    return raw + lead + line.encode("utf-8") + ending


# --- the line -------------------------------------------------------------------------------

#: a pointer line as the index writes it: indent, list marker, the gap before the link
_POINTER = re.compile(r"([ \t]*)([-*+]|\d{1,9}[.)])([ \t]+)\[[^\]\n]*\]\([^)\n]*\)")


def in_form(line: str, raw: bytes) -> str:
    """Claude's pointer line (`- [Title](file.md) — hook`, from `index_line`) as an item of
    the index's own list, the one its last pointer line is in: the same indent and marker
    (a numbered list goes on counting, or repeats a number it repeats). Markdown starts a
    new list at another marker: `* [Title](file.md)` items stay one list (pure)."""
    found = [m for m in map(_POINTER.match, raw.decode("utf-8", "replace").split("\n")) if m]
    if not found or not line.startswith("- ["):
        return line
    indent, marker, gap = found[-1].groups()
    if marker[0].isdigit():
        numbers = [int(m.group(2)[:-1]) for m in found if m.group(2)[0].isdigit()]
        repeats = len(numbers) > 1 and numbers[-1] == numbers[-2]
        marker = f"{numbers[-1] + (0 if repeats else 1)}{marker[-1]}"
    styled = f"{indent}{marker}{gap}{line[2:]}"
    return styled if len(styled.strip()) <= INDEX_LINE_MAX else line


def index_line(topic_file: str, topic: str) -> str:
    """`- [Title](topic) — hook`, as Claude writes its own index lines: the title from the
    frontmatter's `name`, else the first heading, else the file name; the hook from its
    `description` (left out when there is none). One line, at most INDEX_LINE_MAX characters."""
    from app.core.state import read_regular

    try:
        text = read_regular(topic_file, limit=MEMORY_FILE_BYTES_MAX).decode("utf-8", "replace")
    except OSError:
        text = ""
    found = frontmatter(text)
    meta, body_from = found if found is not None else ({}, 0)
    stem = os.path.splitext(os.path.basename(topic))[0]
    title = one_line(meta.get("name", "")) or _first_heading(text, body_from) or stem
    title = title.replace("[", "").replace("]", "").strip() or stem
    hook = one_line(meta.get("description", ""))
    return _fitted(link_target(topic), title, hook)


def link_target(topic: str) -> str:
    """A topic's name as a Markdown link target that reads back as the same name (pure)."""
    from urllib.parse import quote

    return "".join(quote(ch) if ch in _UNSAFE_IN_TARGET or not ch.isprintable() else ch for ch in topic)


def one_line(text: str) -> str:
    """`text` on one line: every run of blanks or control characters one space (pure)."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def _first_heading(text: str, body_from: int) -> str:
    fenced = fenced_lines(text)
    for number, line in enumerate(text.split("\n"), start=1):
        if number > body_from and number not in fenced:
            match = _HEADING.match(line.rstrip("\r"))
            if match and one_line(match.group(1)):
                return one_line(match.group(1))
    return ""


def _fitted(target: str, title: str, hook: str) -> str:
    """The line within INDEX_LINE_MAX: the hook is cut first (with …), then the title."""
    def line(title: str, hook: str) -> str:
        return f"- [{title}]({target})" + (f" — {hook}" if hook else "")

    if len(line(title, hook)) <= INDEX_LINE_MAX:
        return line(title, hook)
    room = INDEX_LINE_MAX - len(line(title, "…"))
    if hook and room >= 8:
        return line(title, hook[:room].rstrip() + "…")
    room = INDEX_LINE_MAX - len(line("…", ""))
    return line(title if len(title) <= room else title[:max(1, room)].rstrip() + "…", "")
