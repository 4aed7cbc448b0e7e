"""Names shown as they are. A path, a branch, a session id or a memory line comes from the
disk, and a folder may be named anything but `/` and NUL: `[bold]`, `[@click=app.quit]`,
a newline, an escape sequence. Shown through markup such a name would hide its own brackets,
turn into a clickable action or fail to parse; a newline would hide the rest of a table
row, and an escape byte would reach the terminal. Everything the dashboard shows of a name
goes through here: no markup, and each control character drawn as its visible symbol
(U+2400 block) so the name shown is the name on disk, one line, however odd.
"""

from __future__ import annotations

from rich.text import Text

from app.core.ledger_line import BREAKING

# C0 controls and DEL as their control pictures; C1 controls (a terminal reads some of them
# as escapes), line and paragraph separators and bidi overrides (which start a line or reorder
# what follows, so a name would read as another) as the replacement character: one character
# for one, so a styled cell's spans still cover theirs
_VISIBLE = ({c: 0x2400 + c for c in range(0x20)} | {0x7F: 0x2421} | dict.fromkeys(range(0x80, 0xA0), 0xFFFD)
            | dict.fromkeys(map(ord, BREAKING), 0xFFFD))
_LINES = {c: v for c, v in _VISIBLE.items() if c != 0x0A}


def visible(text: str, *, lines: bool = False) -> str:
    """`text` with every control character drawn as a symbol; `lines` keeps its newlines
    (a message of several lines, whose own names were made visible first)."""
    return text.translate(_LINES if lines else _VISIBLE)


def plain(value: object) -> object:
    """A table cell that shows what it holds: a str as Text (never read as markup), a Text
    with its control characters visible (its styles kept), anything else as it is."""
    if isinstance(value, str):
        return Text(visible(value))
    if isinstance(value, Text):
        shown = visible(value.plain)
        if shown != value.plain:  # same length: every span still covers its characters
            value = value.copy()
            value.plain = shown
    return value
