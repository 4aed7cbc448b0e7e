"""Splitting a shell command line into the simple commands it runs, without running it.

Chains (`&&`, `||`, `;`, `|`, `&`, newlines) and `( )` subshells are split with quotes,
`$(...)`, backticks, comments and heredocs respected; the contents of a command substitution
come before the command that holds it, which sees a stand-in (`SUBST`) instead. The output
recorder's reader (app/core/bash_outputs.py) then splits each simple command with shlex.
"""

from __future__ import annotations

import os

from app.core.paths import resolve_parents

#: The stand-in for a command substitution: it starts with `$`, so it is never recorded.
SUBST = "$__subst__"


class Unreadable(ValueError):
    """The command cannot be read: it records nothing."""


# --- splitting a command line into simple commands ---------------------------------------


class Segment:
    """One simple command as text, the heredoc bodies it reads (data unless it is a shell),
    and the subshells it runs in, outermost first: a number for each `( )` or `$( )`, unique
    in the command line (a `cd` inside one does not outlive it, nor reach a sibling)."""

    __slots__ = ("text", "heredoc", "scope")

    def __init__(self, text: str, heredoc: list[list[str]], scope: tuple[int, ...] = ()) -> None:
        self.text = text
        self.heredoc = heredoc
        self.scope = scope

    @property
    def depth(self) -> int:
        return len(self.scope)


def _skip_single(text: str, i: int) -> int:
    end = text.find("'", i + 1)
    if end < 0:
        raise Unreadable("unbalanced single quote")
    return end + 1


def _skip_backtick(text: str, i: int) -> int:
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "`":
            return j + 1
        j += 1
    raise Unreadable("unbalanced backtick")


def _skip_paren(text: str, i: int) -> int:
    """`i` points at the `(` of `$(`; returns the index after the matching `)`."""
    depth = 0
    j = i
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "'":
            j = _skip_single(text, j)
            continue
        if c == '"':
            j = _skip_double(text, j, [])
            continue
        if c == "`":
            j = _skip_backtick(text, j)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise Unreadable("unbalanced $( )")


def _skip_double(text: str, i: int, subs: list[str], out: list[str] | None = None) -> int:
    """`i` points at an opening `"`; returns the index after the closing one. Command
    substitutions inside are collected in `subs` and replaced by a stand-in in `out`."""
    j = i + 1
    start = j
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == '"':
            if out is not None:
                out.append(text[start:j])
            return j + 1
        if c == "$" and text.startswith("$(", j) or c == "`":
            end = _skip_backtick(text, j) if c == "`" else _skip_paren(text, j + 1)
            if not text.startswith("$((", j):
                subs.append(text[j + 2 : end - 1] if c == "$" else text[j + 1 : end - 1])
            if out is not None:
                out.append(text[start:j] + SUBST)
            start = j = end
            continue
        j += 1
    raise Unreadable("unbalanced double quote")


class Patterns:
    """The regular expressions of the parser, compiled on first use (`re` costs an import)."""

    def __init__(self) -> None:
        import re

        self.heredoc = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|<>()]+))")
        self.redirect = re.compile(r"^(\d*|&)(>>?|<|>&|<&|>\||&>>?)(.*)$")
        self.assignment = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


_compiled: list[Patterns] = []


def rx() -> Patterns:
    if not _compiled:
        _compiled.append(Patterns())
    return _compiled[0]


def split_commands(command: str, base_scope: tuple[int, ...] = (), numbers: list[int] | None = None
                   ) -> list[Segment]:
    """The simple commands of a command line, in the order they run: the contents of a
    command substitution come before the command that holds it. `numbers`: the last subshell
    number given (shared with the substitutions inside)."""
    numbers = numbers if numbers is not None else [0]
    opened: list[int] = []  # the `( )` subshells open at this point
    segments: list[Segment] = []
    subs: list[str] = []
    cur: list[str] = []
    pending: list[tuple[str, bool, list[str]]] = []  # (delimiter, strip tabs, body sink)
    heredocs: list[list[str]] = []
    text = command
    n = len(text)
    i = 0

    def close() -> None:
        nonlocal cur, heredocs
        segment = "".join(cur).strip()
        if segment:
            segments.append(Segment(segment, heredocs, base_scope + tuple(opened)))
        cur = []
        heredocs = []

    def inner_substitutions() -> None:
        for sub in subs:
            numbers[0] += 1
            segments.extend(split_commands(sub, base_scope + tuple(opened) + (numbers[0],), numbers))
        subs.clear()

    while i < n:
        c = text[i]
        if c == "\\":
            if text.startswith("\\\n", i):  # a line continuation
                i += 2
                continue
            cur.append(text[i : i + 2])
            i += 2
        elif c == "'":
            end = _skip_single(text, i)
            cur.append(text[i:end])
            i = end
        elif c == '"':
            parts: list[str] = []
            end = _skip_double(text, i, subs, parts)
            cur.append('"' + "".join(parts) + '"')
            i = end
            inner_substitutions()
        elif c == "`" or text.startswith("$(", i):
            end = _skip_backtick(text, i) if c == "`" else _skip_paren(text, i + 1)
            if not text.startswith("$((", i):
                subs.append(text[i + 2 : end - 1] if c == "$" else text[i + 1 : end - 1])
            cur.append(SUBST)
            i = end
            inner_substitutions()
        elif c == "#" and (not cur or cur[-1][-1:].isspace()):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            match = rx().heredoc.match(text, i)
            if match is None:
                raise Unreadable("a heredoc without a delimiter")
            delimiter = next(g for g in match.groups()[1:] if g is not None)
            body: list[str] = []  # filled after the next newline
            pending.append((delimiter, match.group(1) == "-", body))
            heredocs.append(body)
            cur.append(" ")
            i = match.end()
        elif c == "\n":
            close()
            i += 1
            if pending:
                i = _read_heredocs(text, i, pending)
                pending = []
        elif c in ";&|":
            if c == "&" and (text[i + 1 : i + 2] == ">" or text[i - 1 : i] in (">", "<")):
                cur.append(c)  # &> and >& are redirections
                i += 1
                continue
            if c == "|" and text[i - 1 : i] == ">":
                cur.append(c)  # >| is a redirection
                i += 1
                continue
            close()
            i += 2 if text[i + 1 : i + 2] in ("&", "|", ";") else 1
        elif c == "(" and not "".join(cur).strip():
            numbers[0] += 1
            opened.append(numbers[0])
            i += 1
        elif c == ")" and opened:
            close()
            opened.pop()
            i += 1
        else:
            cur.append(c)
            i += 1
    close()
    return segments


def _read_heredocs(text: str, i: int, pending: list[tuple[str, bool, list[str]]]) -> int:
    n = len(text)
    for delimiter, strip_tabs, sink in pending:
        while i <= n:
            end = text.find("\n", i)
            line = text[i:] if end < 0 else text[i:end]
            i = n + 1 if end < 0 else end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
            sink.append(line)
    return min(i, n)


def absolute_path(base: str | None, raw: str) -> str | None:
    """A shell word as an absolute path against `base`; None when it cannot be known here:
    it starts with `~`, holds a `$` or a backtick (unexpanded), is `-`, or is relative with
    no known base. The seed: a path that starts with `~` or `$` is not recorded."""
    if not raw or raw[0] == "~" or "$" in raw or "`" in raw or raw == "-":
        return None
    if os.path.isabs(raw):
        return resolve_parents(raw)
    if base is None:
        return None
    return resolve_parents(os.path.join(base, raw))

