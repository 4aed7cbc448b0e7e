"""Splitting a shell command line into the simple commands it runs, and each of those into
its words, without running it.

Chains (`&&`, `||`, `;`, `|`, `&`, newlines) and `( )` subshells are split with quotes,
`$(...)`, backticks, comments and heredocs respected; the contents of a command substitution
come before the command that holds it, which sees a stand-in (`SUBST`) instead. Each simple
command is then split into words as `shlex.split` does (POSIX rules), by `split_words`.

A command is whatever the model wrote, so both readers are linear in its length whatever it
holds (30,000 nested `$(`, a megabyte-long word, a thousand heredocs): one pass, no
recursion, no re-scan from the start, runs of ordinary characters taken by one regular
expression search, no backtracking patterns. A command longer than `MAX_COMMAND_CHARS` is
not read at all (the recorder logs it and records nothing).
"""

from __future__ import annotations

import os

from app.core.paths import resolve_parents

TYPE_CHECKING = False  # `typing` costs an import; `re` is imported on first use (see Patterns)
if TYPE_CHECKING:
    import re

#: The stand-in for a command substitution: it starts with `$`, so it is never recorded.
SUBST = "$__subst__"
#: A longer command is not read: nothing is recorded and the log says so. Real commands are a
#: few KiB; reading is linear, and this keeps the worst case of a hook call well under 1 s.
MAX_COMMAND_CHARS = 256 * 1024
#: Linux's PATH_MAX: a longer path cannot be opened, so it is not recorded (and a `cd` past it
#: leaves the folder unknown); it also bounds what resolving one path costs.
MAX_PATH_CHARS = 4096


class Unreadable(ValueError):
    """The command cannot be read: it records nothing."""


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
    and the innermost subshell it runs in (None: the command line's own shell)."""

    __slots__ = ("text", "heredoc", "scope")

    def __init__(self, text: str, heredoc: list[list[str]], scope: Scope | None = None) -> None:
        self.text = text
        self.heredoc = heredoc
        self.scope = scope

    @property
    def depth(self) -> int:
        return self.scope.depth if self.scope is not None else 0


class Patterns:
    """The regular expressions of the readers, compiled on first use (`re` costs an import).
    None can backtrack: each is a character class, a literal, or possessive."""

    def __init__(self) -> None:
        import re

        # a heredoc's delimiter word, and its pieces to unquote
        self.heredoc = re.compile(r"<<(-?)[ \t]*+((?:[^\s;&|<>()\\'\"]++|\\.|'[^'\n]*+'|\"[^\"\n]*+\")++)")
        self.delimiter_piece = re.compile(r"\\(.)|'([^']*+)'|\"([^\"]*+)\"")
        self.redirect = re.compile(r"^(\d*+|&)(>>?|<|>&|<&|>\||&>>?)(.*)$")
        self.assignment = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*+)=(.*)$", re.DOTALL)
        # the characters that end a run of ordinary text: outside quotes, inside "...", inside
        # a skipped $(( )), and inside backticks
        self.special = re.compile(r"[\\'\"`$#<\n;&|()]")
        self.double_special = re.compile(r"[\\\"$`]")
        self.paren_special = re.compile(r"[\\'\"`()]")
        self.backtick_special = re.compile(r"[\\`]")
        # one piece of a shell word (POSIX shlex): plain run, '...', "..." with \-escapes,
        # \c, or a run of shlex's whitespace
        self.word_piece = re.compile(
            r"[^ \t\r\n'\"\\]++|'[^']*+'|\"[^\"\\]*+(?:\\.[^\"\\]*+)*+\"|\\.|[ \t\r\n]++", re.DOTALL)
        self.double_escape = re.compile(r"\\([\\\"])")


_compiled: list[Patterns] = []


def rx() -> Patterns:
    if not _compiled:
        _compiled.append(Patterns())
    return _compiled[0]


# --- splitting a command line into simple commands ---------------------------------------

_TOP, _PAREN, _BACKTICK = 0, 1, 2


class _Frame:
    """The command line being read, or one substitution inside it (`$( )` or backticks),
    read in the same pass: its own current command, heredocs and subshells. `limit`: where
    its text ends at the latest (a backtick's closing one is found first; `$( )` ends at its
    matching `)`). `quoted`: inside a "..." (a substitution in it returns there)."""

    __slots__ = ("kind", "limit", "depth", "base", "opened", "cur", "blank", "heredocs", "pending", "quoted")

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

    def scope(self) -> Scope | None:
        return self.opened[-1] if self.opened else self.base

    def add(self, piece: str) -> None:
        self.cur.append(piece)
        self.blank = False

    def close(self, segments: list[Segment]) -> None:
        text = "".join(self.cur).strip()
        if text:
            segments.append(Segment(text, self.heredocs, self.scope()))
        self.cur = []
        self.blank = True
        self.heredocs = []


def split_commands(command: str) -> list[Segment]:
    """The simple commands of a command line, in the order they run: the contents of a
    command substitution come before the command that holds it. Linear in the length."""
    p = rx()
    text = command
    segments: list[Segment] = []
    frame = _Frame(_TOP, len(text), None)
    outer: list[_Frame] = []  # the frames that hold `frame`, innermost last
    i = 0
    while True:
        limit = frame.limit
        if frame.quoted:
            match = p.double_special.search(text, i, limit)
            if match is None:
                raise Unreadable("unbalanced double quote")
            j = match.start()
            if j > i:
                frame.cur.append(text[i:j])
            c = text[j]
            if c == '"':
                frame.cur.append(c)
                frame.quoted = False
                i = j + 1
            elif c == "\\":
                frame.cur.append(text[j : j + 2])
                i = j + 2
            elif c == "`" or text.startswith("$(", j, limit):
                i, frame = _open_substitution(text, j, frame, outer)
            else:
                frame.cur.append(c)
                i = j + 1
            continue
        match = p.special.search(text, i, limit)
        j = match.start() if match is not None else limit
        if j > i:
            chunk = text[i:j]
            frame.cur.append(chunk)
            if frame.blank and not chunk.isspace():
                frame.blank = False
        if match is None:  # the end of this frame's text
            if frame.kind == _PAREN:
                raise Unreadable("unbalanced $( )")
            frame.close(segments)
            if frame.kind == _TOP:
                return segments
            frame = outer.pop()  # a backtick substitution ends at its closing backtick
            frame.add(SUBST)
            i = limit + 1
            continue
        c = text[j]
        i = j + 1
        if c == "\\":
            if not text.startswith("\\\n", j, limit):  # else a line continuation: dropped
                frame.add(text[j : j + 2])
            i = j + 2
        elif c == "'":
            end = text.find("'", j + 1, limit)
            if end < 0:
                raise Unreadable("unbalanced single quote")
            frame.add(text[j : end + 1])
            i = end + 1
        elif c == '"':
            frame.add(c)
            frame.quoted = True
        elif c == "`" or text.startswith("$(", j, limit):
            i, frame = _open_substitution(text, j, frame, outer)
        elif c == "#" and (not frame.cur or frame.cur[-1][-1:].isspace()):
            end = text.find("\n", j, limit)
            i = limit if end < 0 else end
        elif c == "<" and text.startswith("<<<", j, limit):
            frame.add("<<<")  # a here-string: a word follows, not a heredoc
            i = j + 3
        elif c == "<" and text.startswith("<<", j, limit):
            heredoc = p.heredoc.match(text, j, limit)
            if heredoc is None:
                raise Unreadable("a heredoc without a delimiter")
            delimiter = p.delimiter_piece.sub(_unquoted, heredoc.group(2))
            body: list[str] = []  # filled after the next newline
            frame.pending.append((delimiter, heredoc.group(1) == "-", body))
            frame.heredocs.append(body)
            frame.cur.append(" ")
            i = heredoc.end()
        elif c == "\n":
            frame.close(segments)
            if frame.pending:
                i = _read_heredocs(text, i, frame.pending, limit)
                frame.pending = []
        elif c in ";&|":
            if c == "&" and (text[j + 1 : j + 2] == ">" or text[j - 1 : j] in (">", "<")):
                frame.add(c)  # &> and >& are redirections
            elif c == "|" and text[j - 1 : j] == ">":
                frame.add(c)  # >| is a redirection
            else:
                frame.close(segments)
                if text[j + 1 : j + 2] in ("&", "|", ";"):
                    i = j + 2
        elif c == "(":
            if frame.kind == _PAREN:
                frame.depth += 1
            if frame.blank:
                frame.opened.append(Scope(frame.scope()))
            else:
                frame.add(c)
        elif c == ")":
            if frame.kind == _PAREN:
                frame.depth -= 1
                if frame.depth == 0:  # the end of this $( )
                    frame.close(segments)
                    frame = outer.pop()
                    frame.add(SUBST)
                    continue
            if frame.opened:
                frame.close(segments)
                frame.opened.pop()
            else:
                frame.add(c)
        else:  # `$` not starting `$(`, `#` inside a word, a lone `<`
            frame.add(c)


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
    if text[j] == "`":
        inner = _Frame(_BACKTICK, _backtick_end(text, j + 1, limit), scope)
        return j + 1, inner
    return j + 2, _Frame(_PAREN, limit, scope)


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
    p = rx()
    stack = [0]
    j = i
    while stack:
        if stack[-1] < 0:
            match = p.double_special.search(text, j, limit)
            if match is None:
                raise Unreadable("unbalanced double quote")
            j = match.start()
            c = text[j]
            if c == "\\":
                j += 2
            elif c == '"':
                stack.pop()
                j += 1
            elif c == "`":
                j = _backtick_end(text, j + 1, limit) + 1
            elif text.startswith("$(", j, limit):
                stack.append(0)
                j += 1  # its `(` is counted next
            else:
                j += 1
            continue
        match = p.paren_special.search(text, j, limit)
        if match is None:
            raise Unreadable("unbalanced $( )")
        j = match.start()
        c = text[j]
        if c == "\\":
            j += 2
        elif c == "'":
            end = text.find("'", j + 1, limit)
            if end < 0:
                raise Unreadable("unbalanced single quote")
            j = end + 1
        elif c == '"':
            stack.append(-1)
            j += 1
        elif c == "`":
            j = _backtick_end(text, j + 1, limit) + 1
        elif c == "(":
            stack[-1] += 1
            j += 1
        else:
            stack[-1] -= 1
            j += 1
            if stack[-1] == 0:
                stack.pop()
    return j


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


# --- splitting a simple command into words -----------------------------------------------


def split_words(text: str) -> list[str]:
    """The words of one simple command, exactly as `shlex.split(text, posix=True)` gives
    them, in linear time (shlex reads a character at a time and grows each word by string
    concatenation: quadratic on a long word). Raises Unreadable with shlex's messages."""
    p = rx()
    piece = p.word_piece.match
    words: list[str] = []
    word: list[str] = []
    quoted = False  # the word has a quoted part: '' is a word, nothing is not
    i = 0
    n = len(text)
    while i < n:
        match = piece(text, i)
        if match is None:  # a lone `\` at the end, or an open quote
            raise Unreadable(_unread_word(text, i))
        part = match.group()
        c = part[0]
        if c in " \t\r\n":
            if word or quoted:
                words.append("".join(word))
                word = []
                quoted = False
        elif c == "'":
            word.append(part[1:-1])
            quoted = True
        elif c == '"':
            inner = part[1:-1]
            word.append(p.double_escape.sub(r"\1", inner) if "\\" in inner else inner)
            quoted = True
        elif c == "\\":
            word.append(part[1])
        else:
            word.append(part)
        i = match.end()
    if word or quoted:
        words.append("".join(word))
    return words


def _unread_word(text: str, i: int) -> str:
    """shlex's message for the piece at `i` that does not close: an escape at the very end
    (also inside an open "...") is "No escaped character", an open quote the other."""
    if text[i] == "'":
        return "No closing quotation"
    tail = len(text) - len(text.rstrip("\\"))
    return "No escaped character" if tail % 2 else "No closing quotation"


def absolute_path(base: str | None, raw: str, cache: dict[str, str] | None = None) -> str | None:
    """A shell word as an absolute path against `base`, its parents resolved; None when it
    cannot be known here (see `joined_path`). The seed: a path that starts with `~` or `$` is
    not recorded. `cache`: resolved folders, shared by the paths of one command (see
    paths.resolve_parents)."""
    path = joined_path(base, raw)
    return None if path is None else resolve_parents(path, cache)


def joined_path(base: str | None, raw: str) -> str | None:
    """A shell word joined to `base` as text, resolved later by `absolute_path` (a `cd`
    chain resolves once, not at every step); None when it cannot be known here: it starts
    with `~`, holds a `$` or a backtick (unexpanded), is `-`, is relative with no known base,
    or is longer than `MAX_PATH_CHARS`."""
    if not raw or raw[0] == "~" or "$" in raw or "`" in raw or raw == "-":
        return None
    if os.path.isabs(raw):
        path = raw
    elif base is None:
        return None
    else:
        path = os.path.join(base, raw)
    return path if len(path) <= MAX_PATH_CHARS else None
