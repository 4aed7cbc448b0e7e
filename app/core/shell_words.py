"""The words of one simple command, as `shlex.split` gives them, and a word as a path.

Both readers of a command (app/core/command_line.py splits a command line into simple
commands, this module each of those into words) are linear in the command's length: one
pass, runs of ordinary characters taken by one regular expression search, no pattern that
can backtrack. Their patterns are compiled on first use (`re` costs an import).
"""

from __future__ import annotations

import os

from app.core.paths import resolve_parents

TYPE_CHECKING = False  # `typing` costs an import; `re` is imported on first use (see Patterns)
if TYPE_CHECKING:
    pass

#: Linux's PATH_MAX: a longer path cannot be opened, so it is not recorded (and a `cd` past it
#: leaves the folder unknown); it also bounds what resolving one path costs.
MAX_PATH_CHARS = 4096


class Unreadable(ValueError):
    """The command cannot be read: it records nothing."""


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
    cannot be known here (see `joined_path`: a path that starts with `~` or `$` expands to
    something unknown here). `cache`: resolved folders, shared by the paths of one command
    (see paths.resolve_parents)."""
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


def clone_dir_name(url: str, *, bare: bool = False) -> str | None:
    """The folder `git clone URL` makes, as git derives it ("humanish" part of the URL)."""
    if url[:1] in "~$" or "$" in url:
        return None
    path = url.rstrip("/")
    if path.endswith("/.git"):
        path = path[: -len("/.git")]
    path = path.rstrip("/")
    cut = max(path.rfind("/"), path.rfind(":"))
    name = path[cut + 1 :]
    for suffix in (".git", ".bundle"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if not name or name in (".", ".."):
        return None
    return name + ".git" if bare else name


def local_source(url: str) -> str | None:
    """The folder `git clone URL` copies from when URL names a local repository (a path, or
    `file://`), else None: a remote stays where it is whatever the command removes."""
    if url.startswith("file://"):
        return url[len("file://"):]
    return None if ":" in url else url


#: The options of rsync that take the next word as their value.
_RSYNC_VALUES = frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--exclude-from", "-T",
                           "--include-from", "--files-from", "--temp-dir", "--log-file", "--chmod", "--rsync-path",
                           "--backup-dir", "--suffix", "--compare-dest", "--copy-dest", "--link-dest", "-M"})


def rsync_words(args: list[str]) -> list[str]:
    """The local sources of `rsync [options] SRC... DEST` (not `host:path`), then DEST."""
    plain = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in _RSYNC_VALUES)]
    return [a for a in plain[:-1] if ":" not in a.split("/", 1)[0]] + plain[-1:]


#: Commands that can give what they make the old mtimes of what they copy or unpack.
TIME_KEEPERS = frozenset({"cp", "mv", "rsync", "tar", "bsdtar", "unzip"})
_COPIERS = frozenset({"cp", "mv", "rsync"})


def fetched(word: str) -> bool:
    """Whether a copy's source word names something another program fetches, not a local path:
    a URL (`s3://bucket/k`, `gs://…`, `https://…`), a container's or pod's path
    (`docker cp web:/srv/data`, `kubectl cp ns/pod:/var/log`), a host's (`host:dir`). What
    it copied can be fetched again: it is never a source the GC keeps a copy for."""
    head, colon, _ = word.partition(":")
    return bool(colon and head) and word[0] not in "/~$." and (word.find(":/") == len(head) or "/" not in head)


def copier_at(words: list[str]) -> tuple[int | None, bool]:
    """Where the first `cp`, `mv` or `rsync` of a simple command is (None: nowhere), and whether
    a command of it may give what it makes old mtimes (`keeps_times`: `cp -a`, `tar -x`)."""
    at = next((i for i, word in enumerate(words) if os.path.basename(word) in TIME_KEEPERS), None)
    if at is None:
        return None, False
    name = os.path.basename(words[at])
    kept = keeps_times(name, words[at + 1:])
    if name not in _COPIERS:
        at = next((i for i in range(at + 1, len(words)) if os.path.basename(words[i]) in _COPIERS), None)
    return at, kept


def keeps_times(name: str, args: list[str]) -> bool:
    """Whether `name ARGS` (one of TIME_KEEPERS) may give the folder it makes or fills its
    source's mtime: `unzip`; `cp -a`, `-p`, `--preserve` (timestamps, all), unless it makes
    links (`-l`, `-s`: the copy's files are the source's own, edits land there); `rsync -a`,
    `-t`; a `tar` that extracts without `-m`. Such a copy looks as old as its source, so the
    GC counts it from its record too (app/core/age.py). A `mv` renames: the folder it moves
    into gets a new mtime, and one it moves whole is no output. Saying yes too often only
    keeps an output longer."""
    short = "".join(a[1:] for a in args if a[:1] == "-" and a[1:2] != "-")
    long = {a.partition("=")[0]: a.partition("=")[2] for a in args if a[:2] == "--"}
    if name in ("cp", "rsync"):
        return _copy_keeps_times(name, short, long)
    if name in ("tar", "bsdtar"):
        old_style = bool(args) and args[0][:1] != "-" and "x" in args[0]  # `tar xzf a.tgz`
        extracts = "x" in short or "--extract" in long or "--get" in long or old_style
        return extracts and "m" not in short and "--touch" not in long
    return name == "unzip"


def _copy_keeps_times(name: str, short: str, long: dict[str, str]) -> bool:
    if name == "rsync":
        return "a" in short or "t" in short or "--archive" in long or "--times" in long
    kept = long.get("--preserve")
    if "l" in short or "s" in short or "--link" in long or "--symbolic-link" in long:
        return False
    if "a" in short or "p" in short or "--archive" in long:
        return True
    return kept is not None and (not kept or "timestamps" in kept or "all" in kept)


def clone_lender(args: list[str], source: str | None) -> str | None:
    """The repository `git clone ARGS` borrows objects from, as written: `--reference X`,
    `--reference-if-able X`, or the source itself with `--shared`/`-s` (the clone's
    `objects/info/alternates` names it from then on); None without, or with `--dissociate`."""
    if "--dissociate" in args:
        return None
    for i, arg in enumerate(args):
        key, eq, value = arg.partition("=")
        if key in ("--reference", "--reference-if-able"):
            return value if eq else args[i + 1] if i + 1 < len(args) else None
    shared = any(a == "--shared" or a[:1] == "-" and a[1:2] != "-" and "s" in a for a in args)
    return source if shared else None


def matched_now(path: str, most: int) -> list[str]:
    """A path the shell expanded (`cp ~/proj/*.md "$d"/`, `cp -r {src,docs} "$d"/`) as the names
    it matches now (at most `most`), while a cp's sources are all still there; as written when
    none match (a mv took them): a source that cannot be found counts as gone, which keeps what
    it went into. A brace word that names a file as it is was quoted: it is that file."""
    words = brace_words(path, most) if "{" in path and not os.path.lexists(path) else [path]
    if not any(c in path for c in "*?["):
        return words
    import glob
    import itertools

    found = (name for word in words for name in sorted(glob.iglob(word)) or [word])
    return list(itertools.islice(found, most))  # never a whole tree listed


def brace_words(word: str, most: int) -> list[str]:
    """The words bash's brace expansion makes of `word`, at most `most`: `src/{a,b}.txt` is
    `src/a.txt` and `src/b.txt`, nested braces and `{1..3}` too; `${x}` and a brace with neither
    a comma nor a range are left as they are, and so is a word too long to be a path or with
    more than 64 braces (each brace is a scan of the word: reading stays linear)."""
    start = word.find("{") if len(word) <= 4096 and word.count("{") <= 64 else -1
    while start != -1:
        end, parts = _alternatives(word, start) if word[start - 1:start] != "$" else (start, None)
        if parts is not None:
            found: list[str] = []
            for part in parts:  # each alternative with what follows it, expanded in turn
                found += [word[:start] + rest for rest in brace_words(part + word[end + 1:], most - len(found))]
                if len(found) >= most:
                    break
            return found[:most]
        start = word.find("{", start + 1)
    return [word]


def _alternatives(word: str, start: int) -> tuple[int, list[str] | None]:
    """(the index of the brace that closes the one at `start`, what it lists), or None when it
    lists nothing bash expands (no comma at its level, no `a..b` range) or never closes."""
    depth, last = 0, start + 1
    parts: list[str] = []
    for k in range(start, len(word)):
        if word[k] == "{":
            depth += 1
        elif word[k] == "}":
            depth -= 1
            if depth == 0:
                inner = word[last:k]
                if parts:
                    return k, [*parts, inner]
                low, dots, high = inner.partition("..")
                numbers = dots and low.lstrip("-").isdigit() and high.lstrip("-").isdigit()
                step = 1 if numbers and int(high) >= int(low) else -1
                return k, [str(n) for n in range(int(low), int(high) + step, step)][:1000] if numbers else None
        elif word[k] == "," and depth == 1:
            parts.append(word[last:k])
            last = k + 1
    return len(word), None


#: The shells whose `-c` script or heredoc the reader reads as a command.
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})


def shell_script(words: list[str]) -> str | None:
    """The script of `bash -c SCRIPT` (`sh -lc`, `sudo bash -c`, `xargs sh -c`): read as the command
    around it is, since a copy and a removal inside one (`bash -c "cp -r ~/proj $d/" && rm -rf
    ~/proj`) are a move all the same. None for another command or a shell running a file."""
    k = next((i + 1 for i, word in enumerate(words) if os.path.basename(word) in SHELLS), len(words))
    while k < len(words) and words[k][:1] in ("-", "+") and words[k] not in ("-", "--"):
        if words[k][1:2] != "-" and "c" in words[k][1:]:
            return words[k + 1] if k + 1 < len(words) else None
        k += 2 if words[k][1:] in ("o", "O") else 1
    return None


def shell_bodies(words: list[str], text: str, heredoc: list[list[str]]) -> tuple[list[str], str]:
    """What the shell a simple command starts runs, read as a command line of its own: the
    script of `bash -c SCRIPT`, or the heredoc bodies of `bash <<EOF` (any other command's
    heredoc is data); none for another command. With what they are, for the log."""
    script = shell_script(words) if "sh" in text else None  # each shell's name ends so
    if script is not None:
        return [script], "script"
    if heredoc and words and os.path.basename(words[0]) in SHELLS and "-c" not in words:
        return ["\n".join(body) for body in heredoc], "heredoc"
    return [], ""
