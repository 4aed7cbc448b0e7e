"""How a memory line is struck and where its correction goes (pure functions of the text).

A strike leaves the Markdown what it was: a list item stays the same item (its quote, marker,
checkbox and heading marks outside the `~~`), text struck before stays as it was (a line
Claude corrected in part, `~~old~~ new`, can still have its new part struck), and a table
row stays a row of its table: each cell struck, the correction a row of its own, since a
plain line amid the rows would end the table and turn the rows below it into a paragraph.
"""

from __future__ import annotations

import re

from app.core.code_spans import CODE_SPAN


class NotStruck(Exception):
    """A line that cannot be struck, with the phrase that says why (`is already struck`)."""


LEAD = re.compile(r"(\s*(?:>\s*)*(?:[-*+]\s+|\d+[.)]\s+)?(?:\[[ xX]\]\s+)?)(#{1,6}\s+)?")
_STRUCK = re.compile(r"(~~.*?~~)")
_CODE = CODE_SPAN
#: a table's cell separator: a `|` outside inline code and not escaped (`\|`)
_SEPARATOR = re.compile(r"(`+).*?\1|\\.|(\|)")
_DELIMITER_ROW = re.compile(r"\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*")


def struck_line(body: str, following: str | None, date: str, text: str) -> tuple[str, str]:
    """(the struck line, the correction line below it) for the line `body` (without its
    ending; `following` is the next line's, or None), or NotStruck."""
    bom = "\ufeff" if body.startswith("\ufeff") else ""  # stays the file's first character
    if body[len(bom):].lstrip().startswith("|"):
        return _struck_row(body, following, date, text)
    lead = LEAD.match(body, len(bom))
    assert lead is not None  # every group is optional
    prefix, heading = lead.group(1), lead.group(2) or ""
    struck = struck_text(body[lead.end():].rstrip())
    if struck is None:
        raise NotStruck("is already struck" if "~~" in body else "holds no text to strike")
    return f"{bom}{prefix}{heading}{struck}", f"{prefix}Correction ({date}): {text}"


def struck_text(rest: str) -> str | None:
    """`rest` struck through: each run of text not struck yet wrapped in `~~`, the struck
    runs and the blanks around the text kept; None when nothing is left to strike, or a
    `~~` is left open (where the strike ends cannot be told)."""
    parts = _struck_parts(rest)
    if any("~~" in _CODE.sub(" ", part) for part in parts[0::2]):
        return None
    out = []
    for at, part in enumerate(parts):
        text = part.strip()
        if at % 2 or not text:
            out.append(part)
            continue
        start = part.index(text)
        out.append(f"{part[:start]}~~{text}~~{part[start + len(text):]}")
    struck = "".join(out)
    return struck if struck != rest else None


def _struck_parts(rest: str) -> list[str]:
    """`rest` split as `_STRUCK.split` splits it (text, struck, text, ...), but a `~~` inside
    inline code is text (`` `~~` ``), as the sweep reads it: no strike starts or ends there."""
    code = _CODE.sub(lambda m: "`" * len(m.group(0)), rest)
    parts, at = [], 0
    for struck in _STRUCK.finditer(code):
        parts += [rest[at:struck.start()], rest[struck.start():struck.end()]]
        at = struck.end()
    return [*parts, rest[at:]]


def _struck_row(body: str, following: str | None, date: str, text: str) -> tuple[str, str]:
    """A table row with each cell struck, and a row that holds the correction."""
    if _DELIMITER_ROW.fullmatch(body.lstrip("\ufeff")):
        raise NotStruck("is the delimiter row of a table: edit the table instead")
    if following is not None and "|" in following and _DELIMITER_ROW.fullmatch(following):
        raise NotStruck("is the header row of a table: edit the table instead")
    pipes = [m.start(2) for m in _SEPARATOR.finditer(body) if m.group(2)]
    cells = [body[: pipes[0] + 1]]
    for start, end in zip(pipes, [*pipes[1:], len(body)], strict=True):
        cell = body[start + 1: end]
        cells.append((struck_text(cell) or cell) + body[end: end + 1])
    struck = "".join(cells)
    if struck == body:
        raise NotStruck("is already struck" if "~~" in body else "holds no text to strike")
    indent = body[: len(body) - len(body.lstrip())].lstrip("\ufeff")
    return struck, f"{indent}| Correction ({date}): {text.replace('|', chr(92) + '|')} |"
