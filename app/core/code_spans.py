"""The inline code spans of one Markdown line, found in linear time.

A span opens with a run of backticks and closes at the next run of the same length
(CommonMark); a run that no later run matches is text. The regular expression this replaces,
`(`+)(.+?)\\1`, retried every shorter opener from every backtick of a run left open: a line of
a few thousand backticks in a memory file held the SessionStart sweep and the memory write
lint for minutes (cubic in the run's length). Here each run is looked at once.

`CODE_SPAN` answers `finditer` and `sub` as that pattern did, with `group(0)` the whole span
and `group(2)` its content, so its callers read the same. Stdlib only (re), no other import:
the write lint loads it on the PreToolUse hook.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

_RUN = re.compile(r"`+")


class Span:
    """One code span, read like a match of `(`+)(.+?)\\1`."""

    __slots__ = ("_text", "_start", "_end", "_tick")

    def __init__(self, text: str, start: int, end: int, tick: int) -> None:
        self._text, self._start, self._end, self._tick = text, start, end, tick

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end

    def group(self, number: int = 0) -> str:
        if number == 0:
            return self._text[self._start:self._end]
        if number == 1:
            return "`" * self._tick
        return self._text[self._start + self._tick:self._end - self._tick]


class CodeSpans:
    """`finditer` and `sub` over the code spans of a line (see the module's doc)."""

    def finditer(self, text: str) -> Iterator[Span]:
        runs = [(m.start(), m.end()) for m in _RUN.finditer(text)] if "`" in text else []
        following: list[int | None] = [None] * len(runs)
        last: dict[int, int] = {}
        for index in range(len(runs) - 1, -1, -1):  # the next run of the same length, for each
            length = runs[index][1] - runs[index][0]
            following[index] = last.get(length)
            last[length] = index
        index = 0
        while index < len(runs):
            closer = following[index]
            if closer is None:
                index += 1
                continue
            start, end = runs[index][0], runs[closer][1]
            yield Span(text, start, end, runs[index][1] - start)
            index = closer + 1

    def sub(self, repl: str | Callable[[Span], str], text: str) -> str:
        if "`" not in text:
            return text  # most lines: no span, and no generator to start
        parts: list[str] = []
        at = 0
        for span in self.finditer(text):
            parts.append(text[at:span.start()])
            parts.append(repl(span) if callable(repl) else repl)
            at = span.end()
        if not parts:
            return text
        parts.append(text[at:])
        return "".join(parts)


CODE_SPAN = CodeSpans()
