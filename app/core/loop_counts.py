"""How many times the loops around a command run it, for the unprinted-mktemp guess.

`for i in 1 2 3 4 5; do d=$(mktemp -d); ...; done` runs one written mktemp call five times.
The guess (app/core/mktemp.py) takes the entries that fit a call only when exactly as many
fit as the calls ran: counted once, five fresh folders never fit one call, and the
session's five throwaway folders were kept for ever. A `for` over literal words runs once
per word. Any other loop (`while`, `until`, `select`, a `for` over a glob, a variable, a
substitution or a brace expansion, C-style `for ((...))`) runs an unknown number of times,
none included; so do an `if` or `case` branch and a shell function's body: a call inside one
is marked `maybe` (`count`), and the guess looks for none of its template (a call that never
ran was counted, and another program's folder of those seconds fit it: when unsure, nothing
is recorded).

Loaded with the command reader, only for commands holding a trigger word.
"""

from __future__ import annotations

from app.core.command_line import SUBST

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.core.mktemp import MktempCall

#: Words that may open a simple command before its name (`do for ...`, `then while ...`).
_LEADING = frozenset({"do", "then", "else", "elif", "{", "!", "time"})
#: A loop word holding one of these may stand for any number of words.
_EXPANDS = frozenset("$`*?[{")


class LoopCounts:
    """The loops the reading is inside, each with how many times it runs (None: unknown)."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: list[int | None] = []

    def read(self, words: list[str]) -> bool:
        """One simple command as read, in order: a loop's head opens it, `done` closes it.
        True when a substitution in this very command may run never: it defines a function (`f()
        { d=$(mktemp -d); }`: the body runs as often as `f` is called), or it is a branch of a
        `case` (`case $x in a) d=$(mktemp -d);; esac`)."""
        k = 0
        while k < len(words) and words[k] in _LEADING:
            if words[k] == "{":
                self._open.append(1)  # a group `{ ...; }` runs once: its `}` closes it
            k += 1
        if k >= len(words):
            return False
        head = words[k]
        if head in ("done", "fi", "esac", "}"):
            if self._open:
                self._open.pop()
        elif head == "for":
            self._open.append(_for_count(words, k + 1))
        elif head in ("while", "until", "select", "if", "case", "function") or head.endswith("()"):
            self._open.append(None)  # each may run its body never, or (a function) many times
            branch = head == "case" and "in" in words[k:] and SUBST in "".join(words[words.index("in", k):])
            return head == "function" or head.endswith("()") or branch
        return False

    def count(self, call: MktempCall, maybe: bool) -> None:
        """One more run of `call` as written here; `maybe`: the command holding it may not run
        (after `||`). Neither may one inside a loop of unknown count or an `if` or `case`, and
        then the count proves nothing: a folder of its template is no more the call's."""
        call.count += self.times()
        call.maybe = call.maybe or maybe or None in self._open

    def times(self) -> int:
        """How many times a command read now runs: the product of the known loops around it."""
        count = 1
        for runs in self._open:
            count *= runs or 1
        return count


def _for_count(words: list[str], k: int) -> int | None:
    """The words `for NAME in WORDS` loops over, when each is a literal word; else None."""
    if k + 1 >= len(words) or words[k + 1] != "in" or words[k].startswith("("):
        return None
    items = words[k + 2:]
    if not items or any(c in _EXPANDS for item in items for c in item):
        return None
    return len(items)
