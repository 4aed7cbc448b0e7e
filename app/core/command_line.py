"""Splitting a shell command line into the simple commands it runs, and each of those into
its words, without running it.

Chains (`&&`, `||`, `;`, `|`, `&`, newlines) and `( )` subshells are split with quotes,
`$(...)`, backticks, comments and heredocs respected; the contents of a command substitution
come before the command that holds it, which sees a stand-in (`SUBST`) instead. Each simple
command is then split into words as `shlex.split` does (POSIX rules): app/core/shell_words.py.

A command is whatever the model wrote, so both readers are linear in its length whatever it
holds (30,000 nested `$(`, a megabyte-long word, a thousand heredocs): one pass, no
recursion, no re-scan from the start, runs of ordinary characters taken by one regular
expression search, no backtracking patterns. A command longer than `MAX_COMMAND_CHARS` is
not read at all (the recorder logs it and records nothing).
"""

from __future__ import annotations

from app.core.shell_words import MAX_PATH_CHARS, Unreadable, rx, split_words

TYPE_CHECKING = False  # `typing` costs an import; `re` is imported on first use (see shell_words)
if TYPE_CHECKING:
    import re

#: What this module's callers read a command with, in one place.
__all__ = ["MAX_COMMAND_CHARS", "MAX_PATH_CHARS", "SUBST", "Scope", "Segment", "Unreadable", "split_commands",
           "split_words"]

#: The stand-in for a command substitution: it starts with `$`, so it is never recorded.
SUBST = "$__subst__"
#: A longer command is not read: nothing is recorded and the log says so. Real commands are a
#: few KiB; reading is linear, and this keeps the worst case of a hook call well under 1 s.
MAX_COMMAND_CHARS = 256 * 1024
class Scope:
    """One `( )` subshell or `$( )`/backtick substitution: a `cd` inside it does not outlive
    it, nor reach a sibling. Linked to the scope it opened in, so a segment names its whole
    nesting in O(1) (a tuple per segment would cost its depth, quadratic for deep nesting)."""

    __slots__ = ("parent", "depth")

    def __init__(self, parent: Scope | None) -> None:
        self.parent = parent
        self.depth: int = parent.depth + 1 if parent is not None else 1


class Segment:
    """One simple command as text, the heredoc bodies it reads (data unless it is a shell),
    the innermost subshell it runs in (None: the command line's own shell), and `maybe`: it
    runs only if a command before it fails (after `||`, or in a substitution there)."""

    __slots__ = ("text", "heredoc", "scope", "maybe")

    def __init__(self, text: str, heredoc: list[list[str]], scope: Scope | None = None, maybe: bool = False) -> None:
        self.text, self.heredoc = text, heredoc
        self.scope = scope
        self.maybe = maybe

    @property
    def depth(self) -> int:
        return self.scope.depth if self.scope is not None else 0


# --- splitting a command line into simple commands ---------------------------------------

_TOP, _PAREN, _BACKTICK = 0, 1, 2


class _Frame:
    """The command line being read, or one substitution inside it (`$( )` or backticks),
    read in the same pass: its own current command, heredocs and subshells. `limit`: where
    its text ends at the latest (a backtick's closing one is found first; `$( )` ends at its
    matching `)`). `quoted`: inside a "..." (a substitution in it returns there)."""

    __slots__ = ("kind", "limit", "depth", "base", "opened", "cur", "blank", "heredocs", "pending", "quoted",
                 "maybe", "after_or")

    def __init__(self, kind: int, limit: int, base: Scope | None) -> None:
        self.kind = kind
        self.limit = limit
        self.depth = 1  # `(` minus `)` in a $( ): 0 closes it
        self.base = base
        self.opened: list[Scope] = []  # the `( )` subshells open at this point
        self.cur: list[str] = []
        self.blank = True  # `cur` holds only white space: a `(` here opens a subshell
        self.heredocs: list[list[str]] = []
        self.pending: list[tuple[str, bool, list[str]]] = []  # (delimiter, strip tabs, body sink)
        self.quoted = False
        self.maybe = False  # opened after `||`: nothing in it surely runs
        self.after_or = False  # the command being read follows `||` (or a pipe from one)

    def scope(self) -> Scope | None:
        return self.opened[-1] if self.opened else self.base

    def add(self, piece: str) -> None:
        self.cur.append(piece)
        self.blank = False

    def close(self, segments: list[Segment]) -> None:
        text = "".join(self.cur).strip()
        if text:
            segments.append(Segment(text, self.heredocs, self.scope(), self.maybe or self.after_or))
        self.cur = []
        self.blank = True
        self.heredocs = []


def split_commands(command: str) -> list[Segment]:
    """The simple commands of a command line, in the order they run: the contents of a
    command substitution come before the command that holds it. Linear in the length."""
    splitter = _Splitter(command)
    while not splitter.done:
        if splitter.frame.quoted:
            splitter.in_double_quotes()
        else:
            splitter.step()
    return splitter.segments


class _Splitter:
    """The one pass of `split_commands`: where it is (`i`), the frame it reads in and the
    frames that hold it (innermost last), and the simple commands made so far. Each special
    character has its handler (`_HANDLERS`); a run of ordinary ones is taken by one search."""

    __slots__ = ("text", "i", "frame", "outer", "segments", "done")

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.frame = _Frame(_TOP, len(text), None)
        self.outer: list[_Frame] = []
        self.segments: list[Segment] = []
        self.done = False

    def in_double_quotes(self) -> None:
        frame, text = self.frame, self.text
        match = rx().double_special.search(text, self.i, frame.limit)
        if match is None:
            raise Unreadable("unbalanced double quote")
        j = match.start()
        if j > self.i:
            frame.cur.append(text[self.i:j])
        c = text[j]
        if c == '"':
            frame.cur.append(c)
            frame.quoted = False
            self.i = j + 1
        elif c == "\\":
            frame.cur.append(text[j : j + 2])
            self.i = j + 2
        elif c == "`" or text.startswith("$(", j, frame.limit):
            self.substitution(j)
        else:
            frame.cur.append(c)
            self.i = j + 1

    def step(self) -> None:
        """The run of ordinary characters up to the next special one, then that one."""
        frame, text, limit = self.frame, self.text, self.frame.limit
        match = rx().special.search(text, self.i, limit)
        j = match.start() if match is not None else limit
        if j > self.i:
            chunk = text[self.i:j]
            frame.cur.append(chunk)
            if frame.blank and not chunk.isspace():
                frame.blank = False
        if match is None:
            self.end_of_frame()
            return
        self.i = j + 1
        _HANDLERS[text[j]](self, j)

    def end_of_frame(self) -> None:
        frame = self.frame
        if frame.kind == _PAREN:
            raise Unreadable("unbalanced $( )")
        frame.close(self.segments)
        if frame.kind == _TOP:
            self.done = True
            return
        self.frame = self.outer.pop()  # a backtick substitution ends at its closing backtick
        self.frame.add(SUBST)
        self.i = frame.limit + 1

    def substitution(self, j: int) -> None:
        self.i, self.frame = _open_substitution(self.text, j, self.frame, self.outer)

    def backslash(self, j: int) -> None:
        if not self.text.startswith("\\\n", j, self.frame.limit):  # else a line continuation: dropped
            self.frame.add(self.text[j : j + 2])
        self.i = j + 2

    def single_quote(self, j: int) -> None:
        end = self.text.find("'", j + 1, self.frame.limit)
        if end < 0:
            raise Unreadable("unbalanced single quote")
        self.frame.add(self.text[j : end + 1])
        self.i = end + 1

    def double_quote(self, j: int) -> None:
        self.frame.add('"')
        self.frame.quoted = True

    def dollar(self, j: int) -> None:
        if self.text.startswith("$(", j, self.frame.limit):
            self.substitution(j)
        else:
            self.frame.add("$")

    def hash(self, j: int) -> None:
        frame = self.frame
        if frame.cur and not frame.cur[-1][-1:].isspace():
            frame.add("#")  # inside a word: no comment
            return
        end = self.text.find("\n", j, frame.limit)
        self.i = frame.limit if end < 0 else end

    def less(self, j: int) -> None:
        text, frame = self.text, self.frame
        if text.startswith("<<<", j, frame.limit):
            frame.add("<<<")  # a here-string: a word follows, not a heredoc
            self.i = j + 3
        elif text.startswith("<<", j, frame.limit):
            self.heredoc(j)
        else:
            frame.add("<")

    def heredoc(self, j: int) -> None:
        p, frame = rx(), self.frame
        heredoc = p.heredoc.match(self.text, j, frame.limit)
        if heredoc is None:
            raise Unreadable("a heredoc without a delimiter")
        delimiter = p.delimiter_piece.sub(_unquoted, heredoc.group(2))
        body: list[str] = []  # filled after the next newline
        frame.pending.append((delimiter, heredoc.group(1) == "-", body))
        frame.heredocs.append(body)
        frame.cur.append(" ")
        self.i = heredoc.end()

    def newline(self, j: int) -> None:
        frame = self.frame
        frame.after_or = frame.after_or and frame.blank  # `a ||` NEWLINE `b`: b follows the `||`
        frame.close(self.segments)
        if frame.pending:
            self.i = _read_heredocs(self.text, self.i, frame.pending, frame.limit)
            frame.pending = []

    def separator(self, j: int) -> None:
        text, c = self.text, self.text[j]
        if c == "&" and (text[j + 1 : j + 2] == ">" or text[j - 1 : j] in (">", "<")):
            self.frame.add(c)  # &> and >& are redirections
        elif c == "|" and text[j - 1 : j] == ">":
            self.frame.add(c)  # >| is a redirection
        else:
            self.frame.close(self.segments)
            self.frame.after_or = text[j : j + 2] == "||" or c == "|" and self.frame.after_or
            if text[j + 1 : j + 2] in ("&", "|", ";"):
                self.i = j + 2

    def open_paren(self, j: int) -> None:
        frame = self.frame
        if frame.kind == _PAREN:
            frame.depth += 1
        if frame.blank:
            frame.opened.append(Scope(frame.scope()))
        else:
            frame.add("(")

    def close_paren(self, j: int) -> None:
        frame = self.frame
        if frame.kind == _PAREN:
            frame.depth -= 1
            if frame.depth == 0:  # the end of this $( )
                frame.close(self.segments)
                self.frame = self.outer.pop()
                self.frame.add(SUBST)
                return
        if frame.opened:
            frame.close(self.segments)
            frame.opened.pop()
        else:
            frame.add(")")


#: The special characters of `Patterns.special`, each with what reading it does.
_HANDLERS = {
    "\\": _Splitter.backslash, "'": _Splitter.single_quote, '"': _Splitter.double_quote,
    "`": _Splitter.substitution, "$": _Splitter.dollar, "#": _Splitter.hash, "<": _Splitter.less,
    "\n": _Splitter.newline, ";": _Splitter.separator, "&": _Splitter.separator, "|": _Splitter.separator,
    "(": _Splitter.open_paren, ")": _Splitter.close_paren,
}


def _unquoted(piece: re.Match[str]) -> str:
    return next(group for group in piece.groups() if group is not None)


def _open_substitution(text: str, j: int, frame: _Frame, outer: list[_Frame]) -> tuple[int, _Frame]:
    """At a backtick or `$(` (`j`): the index to read on from and the frame to read it in.
    `$(( ))` is arithmetic, skipped whole; the others open a frame of their own."""
    limit = frame.limit
    if text.startswith("$((", j, limit):
        frame.add(SUBST)
        return _skip_arithmetic(text, j + 1, limit), frame
    outer.append(frame)
    scope = Scope(frame.scope())
    backtick = text[j] == "`"
    inner = _Frame(_BACKTICK, _backtick_end(text, j + 1, limit), scope) if backtick else _Frame(_PAREN, limit, scope)
    inner.maybe = frame.maybe or frame.after_or
    return j + (1 if backtick else 2), inner


def _backtick_end(text: str, i: int, limit: int) -> int:
    """The index of the backtick that closes the one before `i` (the first not escaped)."""
    search = rx().backtick_special.search
    while True:
        match = search(text, i, limit)
        if match is None:
            raise Unreadable("unbalanced backtick")
        if text[match.start()] == "`":
            return match.start()
        i = match.start() + 2


def _skip_arithmetic(text: str, i: int, limit: int) -> int:
    """`i` points at the first `(` of `$((`; the index after its matching `)`. Quotes and
    substitutions inside are skipped (arithmetic runs nothing claudetto records), with an
    explicit stack: one entry per open context, a paren depth or -1 for a "..."."""
    stack = [0]
    j = i
    while stack:
        j = _in_arith_quotes(text, j, limit, stack) if stack[-1] < 0 else _in_arith_parens(text, j, limit, stack)
    return j


def _next_special(pattern: re.Pattern[str], text: str, j: int, limit: int, what: str) -> tuple[int, str]:
    match = pattern.search(text, j, limit)
    if match is None:
        raise Unreadable(f"unbalanced {what}")
    return match.start(), text[match.start()]


def _in_arith_quotes(text: str, j: int, limit: int, stack: list[int]) -> int:
    """One step inside a "..." of an arithmetic expansion; where to read on."""
    j, c = _next_special(rx().double_special, text, j, limit, "double quote")
    if c == "\\":
        return j + 2
    if c == '"':
        stack.pop()
    elif c == "`":
        return _backtick_end(text, j + 1, limit) + 1
    elif text.startswith("$(", j, limit):
        stack.append(0)  # its `(` is counted next
    return j + 1


def _in_arith_parens(text: str, j: int, limit: int, stack: list[int]) -> int:
    """One step among the parentheses of an arithmetic expansion; where to read on."""
    j, c = _next_special(rx().paren_special, text, j, limit, "$( )")
    if c == "\\":
        return j + 2
    if c == "'":
        end = text.find("'", j + 1, limit)
        if end < 0:
            raise Unreadable("unbalanced single quote")
        return end + 1
    if c == "`":
        return _backtick_end(text, j + 1, limit) + 1
    if c == '"':
        stack.append(-1)
    elif c == "(":
        stack[-1] += 1
    else:
        stack[-1] -= 1
        if stack[-1] == 0:
            stack.pop()
    return j + 1


def _read_heredocs(text: str, i: int, pending: list[tuple[str, bool, list[str]]], limit: int) -> int:
    for delimiter, strip_tabs, sink in pending:
        while i <= limit:
            end = text.find("\n", i, limit)
            line = text[i:limit] if end < 0 else text[i:end]
            i = limit + 1 if end < 0 else end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            sink.append(line)
    return min(i, limit)


