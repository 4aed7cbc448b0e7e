"""What the edit ledger tells the model: one line per changed file, exactly as CONTRACT
writes it, kept to one printable line of valid Unicode whatever the path holds.

Imported only when there is something to tell (or a bad entry to name in the log): a prompt
with nothing changed never loads it.
"""

from __future__ import annotations


def change_line(path: str, agent: str) -> str:
    """The context line, exactly as CONTRACT writes it, a deleted file's too (a deletion is
    a change; the contract has one line for every change and nothing after it)."""
    return f"The user or a tool changed `{shown(path)}` after the last edit of `{shown(agent)}`."


def shown(text: str) -> str:
    """`text` as one printable line of valid Unicode: a newline as `\\n`, and a byte that is
    not UTF-8 (a `\\udcXX` surrogate escape, which no UTF-8 output can carry) as `\\xXX`,
    the way Python writes bytes.

    Every control character, line or paragraph separator and bidi override is escaped the
    same way (`\\t`, `\\x1b`, `\\x85`, `\\u2028`, `\\u202e`): a file name is the one
    part of the line its author chose, and any of them would start a line of its own in the
    model's context (or in a terminal) or reorder what follows. A zero-width joiner and the
    like stay: an emoji sequence in a name is shown as it is."""
    if text.isprintable():
        return text
    if not text.isascii():
        try:
            text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no file name can hold: each one on its own
            text = "".join(_shown_char(c) for c in text)
    return "".join(repr(c)[1:-1] if c in BREAKING or c < " " or "\x7f" <= c <= "\x9f" else c for c in text)


# line and paragraph separators, and the bidi embeddings, overrides and isolates
BREAKING = frozenset("\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _shown_char(c: str) -> str:
    if "\ud800" <= c <= "\udfff":
        from app.core.log import escaped

        return escaped(c)
    return c


def utf16_len(text: str) -> int:
    """The length Claude counts: UTF-16 units (a character past U+FFFF counts two)."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for c in text if c > "\uffff")
