"""The new text of the user's settings.json: the old text with only what changed rewritten.

A person lays settings.json out as they like: a short list on one line
(`"allow": ["Read", "Bash(ls:*)"]`), `"caf\\u00e9"` escaped, `1E3`, keys without a space
after the colon. Written back whole by `json.dumps`, all of that would change on every
`claudetto setup`, and `setup --uninstall` would not give the user their file back. So
setup edits the text: every value that is the same keeps its bytes, a member that went is
cut out with its comma, a new one is written in the file's layout after its last sibling,
a changed one is edited the same way inside. Setup then uninstall leaves the file byte for
byte as it was.

The result is checked: it must read back as exactly the settings setup meant to write,
else (and for a file on one line, which has no layout to keep) the whole file is written
from the settings (`render` in app/core/settings_file.py).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass
class _Node:
    """A value in the text: where it starts and ends. Its members are read only when the
    edit goes into it (`_members`): the values that stay are skipped at the C scanner's
    speed, so a 4 MB list of permissions costs what one JSON read costs."""

    start: int
    end: int


@dataclass
class _Member:
    """One member of an object or a list: the blank space before it, the key and colon as
    written (nothing in a list), its value, and the blank space after it."""

    before: str
    head: str
    value: _Node
    after: str


class _NotJson(ValueError):
    pass


def _space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _value(text: str, at: int) -> _Node:
    """The value starting at `at` (no blank space before it)."""
    return _Node(at, _DECODER.raw_decode(text, at)[1])


def _members(text: str, node: _Node) -> tuple[list[_Member], str]:
    """The members of the object or list `node`, and the blank space inside an empty one."""
    char = text[node.start]
    close = "}" if char == "{" else "]"
    members: list[_Member] = []
    cursor = node.start + 1
    while True:
        start = _space(text, cursor)
        if text[start:start + 1] == close and not members:
            return members, text[cursor:start]
        head_end = start
        if char == "{":
            key_end = json.decoder.scanstring(text, start + 1)[1]  # type: ignore[attr-defined]
            colon = _space(text, key_end)
            if text[colon:colon + 1] != ":":
                raise _NotJson(colon)
            head_end = _space(text, colon + 1)
        value = _value(text, head_end)
        after_end = _space(text, value.end)
        members.append(_Member(text[cursor:start], text[start:head_end], value, text[value.end:after_end]))
        if text[after_end:after_end + 1] == close:
            return members, ""
        if text[after_end:after_end + 1] != ",":
            raise _NotJson(after_end)
        cursor = after_end + 1


def _same(old: Any, new: Any) -> bool:
    """Equal and of one JSON type, key order included (`1 == 1.0 == True` in Python)."""
    if type(old) is not type(new):
        return False
    if isinstance(old, dict):
        return list(old) == list(new) and all(_same(old[key], new[key]) for key in old)
    if isinstance(old, list):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)


@dataclass(frozen=True)
class _Style:
    indent: str
    newline: str


def _line_indent(text: str, at: int) -> str:
    """The blank space that starts the line `at` is on."""
    start = text.rfind("\n", 0, at) + 1
    return text[start:_space(text, start)].replace("\n", "").replace("\r", "")


def _render(value: Any, indent: str, style: _Style, one_line: bool = False) -> str:
    """`value` written afresh, its lines after the first indented by `indent` (on one line
    among siblings that are on one line)."""
    if one_line:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    text = json.dumps(value, indent=style.indent, ensure_ascii=False, allow_nan=False)
    return text.replace("\n", style.newline + indent)


def _edit(text: str, node: _Node, old: Any, new: Any, style: _Style) -> str:
    if _same(old, new):
        return text[node.start:node.end]
    if isinstance(old, dict) and isinstance(new, dict) and text[node.start] == "{":
        keys = list(old)
        pairs = [(keys.index(key) if key in old else None, key) for key in new]
        return _rebuild(text, node, [(i, key, old.get(key), new[key]) for i, key in pairs], style)
    if isinstance(old, list) and isinstance(new, list) and text[node.start] == "[":
        return _rebuild(text, node, [(i, None, old[i] if i is not None else None, value)
                                     for i, value in zip(_matched(old, new), new, strict=True)], style)
    return _render(new, _line_indent(text, node.start), style)


def _matched(old: list[Any], new: list[Any]) -> list[int | None]:
    """For each element of `new`, the element of `old` it stands in place of (the same, or
    one changed in place: the first ones of a changed run, an entry that lost a hook of ours
    and the entry of ours that follows it), or None for a new one."""
    canon = [[json.dumps(v, sort_keys=True, ensure_ascii=True) for v in side] for side in (old, new)]
    found: list[int | None] = [None] * len(new)
    blocks = difflib.SequenceMatcher(None, canon[0], canon[1], autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in blocks:
        if tag in ("equal", "replace"):
            for offset in range(min(i2 - i1, j2 - j1)):
                found[j1 + offset] = i1 + offset
    return found


def _rebuild(text: str, node: _Node, wanted: list[tuple[int | None, str | None, Any, Any]],
             style: _Style) -> str:
    """The container with the members `wanted` (old index or None, key, old value, new
    value), in that order: the old ones as written (edited inside when changed), the new
    ones in the layout of their siblings."""
    members, empty_inside = _members(text, node)
    outer = _line_indent(text, node.start)
    one_line = bool(members) and "\n" not in text[node.start:node.end]
    closing = members[-1].after if members else empty_inside
    if members:
        before = members[-1].before
        if not before and one_line:
            before = " "
        first = members[0]
        colon = first.head[json.decoder.scanstring(first.head, 1)[1]:] if first.head else ": "  # type: ignore[attr-defined]
    else:
        before, colon = style.newline + outer + style.indent, ": "
        closing = style.newline + outer
    inner = before.rsplit("\n", 1)[-1] if "\n" in before else outer + style.indent
    parts: list[str] = []
    for count, (index, key, old_value, new_value) in enumerate(wanted):
        last = count == len(wanted) - 1
        if index is None:
            head = json.dumps(key, ensure_ascii=False) + colon if key is not None else ""
            piece = before + head + _render(new_value, inner, style, one_line)
            after = ""
        else:
            member = members[index]
            piece = member.before + member.head + _edit(text, member.value, old_value, new_value, style)
            after = "" if index == len(members) - 1 else member.after
        parts.append(piece + (closing if last else after))
    if not wanted:
        return text[node.start] + text[node.end - 1]
    return text[node.start] + ",".join(parts) + text[node.end - 1]


def edited_text(raw: str, old: dict[str, Any], new: dict[str, Any], indent: str, newline: str) -> str | None:
    """`raw` (the file's text, which reads as `old`) edited to read as `new`, every byte of
    what stayed the same kept; None when the text cannot be edited so (one line, or text
    this reader does not follow), and the file is then written whole."""
    start = _space(raw, 1 if raw.startswith("\ufeff") else 0)
    try:
        top = _value(raw, start)
    except (_NotJson, ValueError, IndexError, RecursionError):
        return None
    if "\n" not in raw[top.start:top.end]:
        return None
    try:
        text = raw[:top.start] + _edit(raw, top, old, new, _Style(indent, newline)) + raw[top.end:]
        # the edit must read back as exactly what setup means to write, or it is not used
        return text if _same(json.loads(text.removeprefix("\ufeff")), new) else None
    except (ValueError, IndexError, RecursionError):
        return None


#: setup's backups read at an uninstall, newest first (settings files may be megabytes)
BACKUPS_READ = 4


def restored_text(candidates: list[Path], raw: str, new: dict[str, Any], edited: str | None,
                  installed: Callable[[str, dict[str, Any]], str | None]) -> str | None:
    """At an uninstall, the text of setup's newest backup (`candidates`, newest first) when the
    file is still what the install made of that backup (`installed(text, settings)` gives `raw`
    back; None for a backup that holds claudetto's entries itself, the file before an upgrade):
    the file as it was before setup, byte for byte, where the edit cannot give it back (a file
    on one line is written whole at the install; a `"hooks"` that was empty, null, or held an
    empty list of one of claudetto's events is filled by the install, and the edit would take
    it away). A file the user changed since keeps those changes: the edit stands (None),
    unless there is none (`edited` None) and a backup reads as `new`, the settings without
    claudetto's entries."""
    for path in candidates[:BACKUPS_READ]:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, encoding="utf-8", newline="") as fh:
                text = fh.read()
            body = text.removeprefix("\ufeff")  # blank, as setup reads it: no settings
            old = json.loads(body, object_pairs_hook=_unique) if body.strip() else {}
        except (OSError, ValueError, RecursionError):
            continue
        if not isinstance(old, dict):
            continue
        if (edited is None and _same(old, new)) or installed(text, old) == raw:
            return text
    return None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each there once: a backup with a key twice is not restored
    (which of the two a reader keeps is the reader's choice)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key twice")
    return found
