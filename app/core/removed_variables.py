"""Which shell variables one simple command may remove the folder of, for the mktemp guess.

`d=$(mktemp -d) ... rm -rf "$d"` leaves nothing of the call: what fits its template and time
afterwards is someone else's (the user's script, another tool on mktemp's default template),
so the recorder must not look for it (app/core/mktemp.py). Claude cleans up in many
spellings, and each one missed hands the guess a stranger's folder: `rm -rf "$d"/` (the
trailing slash names the folder itself, not an entry), a second name for the same folder
(`w="$d"; rm -rf "$w"`), `find "$d" -delete`, `git worktree remove "$d"`, `tar --remove-files`,
`zip -m`, a one-line script (`python3 -c "shutil.rmtree(...)" "$d"`), a removal of a
substitution, of `$PWD` or of what `xargs` reads (which folder it is cannot be told: every
call counts as removed), a removal run by `eval`. When unsure the answer is "may remove": a folder not looked for
is at worst one output left on disk.

Loaded with the command reader, only for commands holding a trigger word.
"""

from __future__ import annotations

import os

from app.core.command_line import SUBST

TYPE_CHECKING = False  # `typing` costs an import on a path that runs for many Bash calls
if TYPE_CHECKING:
    import re
    from typing import TypeVar

    T = TypeVar("T")

#: A simple command holding one of these words may remove or move a folder a variable names.
REMOVERS = frozenset({"rm", "rmdir", "mv", "unlink", "trap", "shred", "srm", "trash", "trash-put", "gio"})
#: What a remover's word names when which folder it removes cannot be told: a substitution
#: (`rm -rf "$(basename "$d")"`), the shell's own folder (`cd "$d" && rm -rf "$PWD"`).
ANY_FOLDER = "*"
_ANY_NAMES = frozenset({SUBST[1:], "PWD", "OLDPWD"})
#: Interpreters whose inline code (`-c`, `-e`) may remove whatever folder it is handed.
_INTERPRETERS = ("python", "perl", "ruby", "node", "php", "deno", "bun")

_NAMES: tuple[re.Pattern[str], re.Pattern[str]] | None = None


def _names() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`$d`, `${d}`, `${d:?}` in a word: the variable's name, then what follows it (read by
    `_whole`); and a whole value that is only another variable (`$d`, `${d}/`)."""
    global _NAMES
    if _NAMES is None:
        import re

        _NAMES = (re.compile(r"\$(\{?)([A-Za-z_][A-Za-z0-9_]*+)"),
                  re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*+)|\{([A-Za-z_][A-Za-z0-9_]*+)\})/*+"))
    return _NAMES


def _whole(word: str, end: int, braced: bool) -> bool:
    """Whether the variable ending at `end` names the folder itself: nothing of a path follows
    it but slashes (`$d`, `$d/`, `${d:?}/`), never `$d/inside` (an entry: the folder stays)."""
    if braced:  # a `}` far off (or none) reads as the end of the word: whole, when unsure
        close = word.find("}", end, end + 4096)
        end = close + 1 if close >= 0 else len(word)
    while end < len(word) and word[end] == "/":  # no copy of the rest: linear in the word's length
        end += 1
    return end == len(word) or not (word[end].isalnum() or word[end] in "._-*?[~")


def named_variables(word: str) -> list[str]:
    """The variables a word names as a whole folder (see `_whole`)."""
    return [m.group(2) for m in _names()[0].finditer(word) if _whole(word, m.end(), bool(m.group(1)))]


def _zip_moves(words: list[str]) -> bool:
    return any(w == "--move" or w[:1] == "-" and w[1:2] != "-" and "m" in w for w in words)


#: Commands that remove what they are handed only with an option: `find "$d" -delete` (`-exec
#: rm` names `rm`), `git worktree remove "$d"`, `tar --remove-files`, `zip -m`.
_REMOVING_WITH = {
    "find": lambda words: "-delete" in words,
    "git": lambda words: "worktree" in words and "remove" in words,
    "tar": lambda words: "--remove-files" in words,
    "zip": _zip_moves,
}


def may_remove(words: list[str]) -> bool:
    """Whether the simple command may remove a folder it is handed: a remover (`rm`, `rmdir`,
    `mv`, `unlink`, `trap`, a trash command), one of `_REMOVING_WITH` with its option, or an
    interpreter running inline code (`python3 -c`, `perl -e`, `node -e`)."""
    names = {os.path.basename(word) for word in words}
    if names & REMOVERS or any(_REMOVING_WITH[name](words) for name in names & _REMOVING_WITH.keys()):
        return True
    # `-`: the code comes on its input (`python3 - "$d" <<EOF`), as unseen as inline code
    return any(name.startswith(_INTERPRETERS) for name in names) and any(w in ("-c", "-e", "-E", "-") for w in words)


def removed_variables(words: list[str]) -> list[str]:
    """The variables whose folder the simple command may remove (none when it removes nothing).
    `eval "rm -rf $d"` runs the words of its argument; a remover `xargs` runs is handed what
    comes in on its input (`echo "$d" | xargs rm -rf`): which folder cannot be told."""
    names = {os.path.basename(word) for word in words}
    if "eval" in names:
        words = [part for word in words for part in word.split()]
    if not may_remove(words):
        return []
    found = [ANY_FOLDER if name in _ANY_NAMES else name for word in words for name in named_variables(word)]
    found += [name for word in words for name in _unnamed(word)]
    return [*found, ANY_FOLDER] if "xargs" in names else found


def _unnamed(word: str) -> list[str]:
    """What a remover's word may remove besides the variables it names whole: any folder for a
    parameter that is no name (`sh -c 'rm -rf "$1"' sh "$d"`, `"${dirs[@]}"`, `${!ref}`) or a
    glob outside every variable's folder (`rm -rf "$TMPDIR"/tmp.*` reads `TMPDIR/`, `cd .. && rm
    -rf tmp.*`: which folders it matched cannot be told); `NAME/` for a glob in a variable's folder
    (`rm -f "$d"/*.tmp` leaves `$d`; a glob in a folder no call's variable names may match one,
    see `bash_outputs._Reading.mark_removed`)."""
    import re

    dollar = word.find("$")  # below: a path that climbs out of a variable's folder (`"$d"/../tmp.*`)
    if re.search(r"\$(?:[0-9@*!]|\{[0-9@*!#]|\{[A-Za-z_][A-Za-z0-9_]*\[)", word) or (
            dollar >= 0 and re.search(r"/\.\.(?:/|$)", word[dollar:])):
        return [ANY_FOLDER]
    if not any(c in word for c in "*?[") or any(c.isspace() for c in word):
        return []  # none, or inline code (`python3 -c "...glob('$TMPDIR/x*')..."`), no path
    found = re.match(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})/+[^/]", word)
    return [f"{found.group(1) or found.group(2)}/"] if found else [ANY_FOLDER]


def bind_names(words: list[str], depth: int, recent: tuple[T, int] | None, said: tuple[list[str], int] | None,
               bound: dict[str, list[T]]) -> tuple[list[str], int]:
    """Bind the variables a simple command assigns (`bound`: variable -> the mktemp calls whose
    folder it may name): `d=$(mktemp -d)` to the call its substitution just ran (`recent`, with
    its depth), `w="$d"` to what `d` names, and `r=$(realpath "$d")` to what the substitution just
    read names (`said`, with its depth): a path made from `$d` may be `$d` (`$(dirname "$d")`
    holds it). `e=$(date +%s)` names no call's folder. Returns what this command names, with
    its depth: the next one's `said`."""
    from app.core.shell_words import rx

    names = ([n for word in words for n in named_variables(word) if n in bound], depth)
    for match in filter(None, map(rx().assignment.match, words)):
        name, value = match.group(1), match.group(2)
        alias = alias_of(value)
        if recent is not None and recent[1] > depth and SUBST in value:
            bound.setdefault(name, []).append(recent[0])
        elif alias is not None and alias in bound:
            bound.setdefault(name, []).extend(bound[alias])
        elif said is not None and said[1] > depth and SUBST in value:
            bound.setdefault(name, []).extend(c for other in said[0] for c in bound.get(other, ()))
    return names


def alias_of(value: str) -> str | None:
    """The variable an assignment's value is another name for (`w=$d`, `w="${d}/"`), or None."""
    found = _names()[1].fullmatch(value)
    return None if found is None else found.group(1) or found.group(2)


def loop_names(words: list[str], bound: dict[str, list[T]], every: list[T]) -> None:
    """Bind the names a loop or a `read` gives values (`bound`: variable -> the mktemp calls
    whose folder it may name): `for x in "$d" "$e"` makes `x` another name for `d` and `e`; `read
    x` (`echo "$d" | while read -r x`) reads what comes in, which may be any call's (`every`)."""
    if len(words) > 2 and words[0] == "for" and words[2] == "in":
        for name in (n for word in words[3:] for n in named_variables(word) if n in bound):
            bound.setdefault(words[1], []).extend(bound[name])
    at = next((i for i, word in enumerate(words) if word == "read"), None)
    if at is not None and every:
        for name in (w for w in words[at + 1:] if w[:1] != "-" and w.isidentifier()):
            bound.setdefault(name, []).extend(every)
