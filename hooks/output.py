"""What a hook may print, in the shapes Claude Code reads (CLAUDE_CODE_FACTS "Hook output").

Context the model reads is capped here, in one place: Claude counts a hook's
`additionalContext` in UTF-16 units (JavaScript string length) and, past 10,000, saves the
text to a file and shows the model only a preview. claudetto keeps every text it prints
under CONTEXT_CAP units, cut at a line boundary, so the model always sees whole lines and
is told how many were left out. JSON goes out with ASCII escapes: a lone surrogate (from a
non-UTF-8 file name) or a non-UTF-8 locale can then never make the write fail.
"""

from __future__ import annotations

import sys

from app.core.fastjson import dumps

#: Under Claude's 10,000 with room for its own wrapping; counted in UTF-16 units.
CONTEXT_CAP = 9_000


def _closing_line(left_out: int) -> str:
    return f"(claudetto: {left_out} more line{'s' if left_out != 1 else ''} left out)"


def cap_context(text: str, cap: int = CONTEXT_CAP) -> str:
    """`text` itself when it is under `cap` UTF-16 units; else its first whole lines and a
    closing line saying how many lines were left out, together under `cap`.

    A first line longer than the cap on its own is cut inside (at a character, never
    between the halves of a surrogate pair) and counted among the lines left out."""
    # Each character is one or two units: text short enough in characters needs no count.
    if len(text) * 2 < cap:
        return text
    from app.core.ledger_line import utf16_len  # the one count of UTF-16 units, as Claude counts

    if utf16_len(text) < cap:
        return text
    lines = text.split("\n")
    # Room for the closing line, sized for the largest count it can name.
    room = cap - 1 - utf16_len("\n" + _closing_line(len(lines)))
    kept: list[str] = []
    used = 0
    for line in lines:
        units = utf16_len(line) + (1 if kept else 0)
        if used + units > room:
            break
        kept.append(line)
        used += units
    if not kept:
        head = _cut_units(lines[0], room - 1)
        return f"{head}\u2026\n{_closing_line(len(lines))}"
    return "\n".join(kept) + "\n" + _closing_line(len(lines) - len(kept))


def _cut_units(line: str, units: int) -> str:
    """The longest prefix of `line` of at most `units` UTF-16 units."""
    count = 0
    for index, char in enumerate(line):
        count += 2 if ord(char) > 0xFFFF else 1
        if count > units:
            return line[:index]
    return line


def emit(text: str) -> None:
    """Write `text` to stdout now, whole, or raise (OSError: no stdout, a pipe Claude closed).

    Straight to the file descriptor, past Python's buffer: a caller learns in this call
    whether the model got it (the ledger marks a line told only then), and no byte is left
    buffered for the interpreter's exit to fail on (which would print a warning and exit 120)."""
    out = sys.stdout
    if out is None:  # started with no stdout at all
        raise OSError("no stdout to write to")
    try:
        fd = out.fileno()
    except (AttributeError, ValueError):  # a stream with no descriptor (a test's capture)
        out.write(text)
        out.flush()
        return
    import os

    out.flush()
    data = memoryview(text.encode("utf-8", "surrogateescape"))
    while data:
        data = data[os.write(fd, data):]


def context(event: str, text: str) -> None:
    """Add `text` to the model's context; nothing at all when it is empty (0 tokens). Raises
    OSError when stdout cannot take it (see `emit`)."""
    if not text:
        return
    payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": cap_context(text)}}
    emit(dumps(payload, ensure_ascii=True) + "\n")


def deny(reason: str) -> None:
    """Refuse a PreToolUse call, with the reason the model will read (capped like context)."""
    payload = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": cap_context(reason),
        }
    }
    emit(dumps(payload, ensure_ascii=True) + "\n")


def worktree_path(path: str) -> None:
    """WorktreeCreate: the absolute path, as the last non-empty line of stdout.

    Written as the file system's own bytes: a path that is not valid UTF-8 (held as
    surrogate escapes) is printed as the folder's real name rather than failing the write."""
    import os

    sys.stdout.flush()
    sys.stdout.buffer.write(os.fsencode(path) + b"\n")
    sys.stdout.buffer.flush()


def fail_loud(message: str) -> int:
    """WorktreeCreate and WorktreeRemove: one line on stderr and exit 1, which Claude acts
    on (Create: the creation is aborted; Remove: the folder is reported kept)."""
    sys.stderr.write(" ".join(message.splitlines()) + "\n")
    return 1
