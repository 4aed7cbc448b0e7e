"""What a `mktemp` call in a Bash command made, for the output recorder.

Usually mktemp prints the path and the recorder takes it from the call's stdout (a name
that fits the template, in the folder the call makes its path in). In
`d=$(mktemp -d) && cd "$d"` the path goes into the substitution and is never printed; then
the recorder looks for it by the two things it knows: the template (as GNU mktemp reads its
options) and the time of the call. It lists the one folder mktemp used (no recursion) and
takes the entries that fit the template, are this user's, are a folder for `-d` (a regular
file otherwise), changed status within the call's window and are not this session's
records already. Such a guess is made only when it is exact: as many entries as the command
has unprinted calls of that template and folder (`a=$(mktemp -d); b=$(mktemp -d)` is two);
fewer or more, and none is taken (the log says why). A call that may not have run (after
`||`, in an `if` or `case`, in a loop of unknown count) makes every count a guess: its
template is not looked for (another program's folder made then fit the call that never ran). A call whose variable the command
itself removes or moves (`rm -rf "$d"`, `trap 'rm -rf "$d"' EXIT`, `mv "$d" ...`) is not
guessed at all: its own path is gone, and what fits is someone else's. Another session's
record does not hide an entry: two sessions making folders at the same moment are not told
apart by taking turns, and a path recorded by both is one entry of the sweep, live while
either is. Printed or found, a path is then recorded only with evidence that the call
created it (app/core/created.py): a name and a fresh ctime are a guess, not a proof.

Only loaded when a command holds the word `mktemp` (it imports `re`).
"""

from __future__ import annotations

import os
import re
import stat
import time

from app.core.created import DEFAULT_TIMEOUT_MS as DEFAULT_TIMEOUT_MS
from app.core.created import MAX_TIMEOUT_MS as MAX_TIMEOUT_MS
from app.core.created import window_s as window_s
from app.core.shell_words import absolute_path

#: GNU mktemp's template when none is given (in $TMPDIR, else /tmp).
DEFAULT_TEMPLATE = "tmp.XXXXXXXXXX"
#: File time stamps come from a coarse clock: allow this much past "now" (seconds).
_CLOCK_SLACK_S = 1.0

_LONG_OPTIONS = ("directory", "dry-run", "quiet", "suffix", "tmpdir", "help", "version")


class MktempCall:
    """One `mktemp` call as read from a command: a pattern for the base name it makes, the
    folder it makes it in (None when that cannot be known here), whether it is a folder, and
    the cwd it ran in (a relative path it prints is relative to that). `count`: how many
    times the command runs it as written (the reader finds each distinct call once);
    `removed`: the command removes or moves the variable it went into."""

    __slots__ = ("pattern", "template", "folder", "directory", "cwd", "count", "removed", "maybe")

    def __init__(self, pattern: re.Pattern[str], template: str, folder: str | None, directory: bool,
                 cwd: str | None = None) -> None:
        self.pattern = pattern
        self.template = template  # the base name as written, X's and suffix included
        self.folder = folder
        self.directory = directory
        self.cwd = cwd
        self.count = 1
        self.removed = False
        self.maybe = False  # it may not have run: after `||`, in an `if`, or a loop of unknown count

    def key(self) -> tuple[str, str | None, bool]:
        return (self.pattern.pattern, self.folder, self.directory)


def _long_option(name: str) -> str | None:
    """getopt's long option: the full name, or a unique prefix of one."""
    if name in _LONG_OPTIONS:
        return name
    matches = [option for option in _LONG_OPTIONS if option.startswith(name)]
    return matches[0] if len(matches) == 1 else None


def read_mktemp(args: list[str], cwd: str | None, tmpdir: str | None) -> MktempCall | None:
    """The call `mktemp ARGS` makes, as GNU mktemp reads them; None when it makes nothing
    (`-u`, `--help`, a bad option or template: mktemp fails). `tmpdir` is $TMPDIR for the call
    ("" when empty or unset, so /tmp; None when it cannot be known here)."""
    options = _read_options(args)
    if options is None:
        return None
    template = options.template
    if template is None:
        template = DEFAULT_TEMPLATE
        options.use_tmpdir = True
    name_pattern = _name_pattern(template, options.suffix, bsd_prefix=options.legacy_t)
    if name_pattern is None:
        return None
    if options.use_tmpdir and (os.path.isabs(template) or (options.legacy_t and "/" in template)):
        return None  # GNU refuses both
    where = _where(template, options, cwd, tmpdir)
    folder = None if where is None else os.path.dirname(where)
    base = os.path.basename(template) + (options.suffix or "")
    return MktempCall(name_pattern, base, folder, options.directory, cwd)


class _Options:
    """What GNU mktemp reads from its arguments."""

    __slots__ = ("directory", "legacy_t", "use_tmpdir", "dir_arg", "suffix", "template")

    def __init__(self) -> None:
        self.directory = self.legacy_t = self.use_tmpdir = False
        self.dir_arg: str | None = None
        self.suffix: str | None = None
        self.template: str | None = None


def _read_options(args: list[str]) -> _Options | None:
    """The options and the one template; None when mktemp would refuse or make nothing."""
    options = _Options()
    operands_only = False
    i = 0
    while i < len(args):
        arg = args[i]
        if operands_only or not arg.startswith("-") or arg == "-":
            if options.template is not None:
                return None  # too many templates
            options.template = arg
        elif arg == "--":
            operands_only = True
        else:
            i = _long(args, i, options) if arg.startswith("--") else _letters(args, i, options)
            if i < 0:
                return None
        i += 1
    return options


def _long(args: list[str], i: int, options: _Options) -> int:
    """One long option at `i`; the index of its last word, or -1 when mktemp makes nothing."""
    name, eq, value = args[i][2:].partition("=")
    option = _long_option(name)
    if option in (None, "help", "version", "dry-run"):
        return -1
    if option == "directory":
        options.directory = True
    elif option == "suffix":
        i, options.suffix = _value(args, i, value if eq else None)
        if options.suffix is None:
            return -1
    elif option == "tmpdir":
        options.use_tmpdir = True
        if eq:
            options.dir_arg = value
    return i


def _letters(args: list[str], i: int, options: _Options) -> int:
    """A group of short options at `i`; the index of its last word, or -1 as for `_long`."""
    letters = args[i][1:]
    for pos, letter in enumerate(letters):
        if letter == "d":
            options.directory = True
        elif letter == "u":
            return -1  # --dry-run: nothing is made
        elif letter == "t":
            options.legacy_t = options.use_tmpdir = True
        elif letter == "p":
            i, options.dir_arg = _value(args, i, letters[pos + 1 :] or None)
            if options.dir_arg is None:
                return -1
            options.use_tmpdir = True
            break
        elif letter != "q":
            return -1
    return i


def _value(args: list[str], i: int, glued: str | None) -> tuple[int, str | None]:
    """An option's value: glued to it (`--suffix=x`, `-pDIR`), else the next word; (the index
    of the last word read, the value or None when there is none)."""
    if glued is not None:
        return i, glued
    i += 1
    return i, args[i] if i < len(args) else None


def _where(template: str, options: _Options, cwd: str | None, tmpdir: str | None) -> str | None:
    """The absolute path the template is made in (its X's still in), None when unknown."""
    if not options.use_tmpdir:
        return absolute_path(cwd, template)
    if options.legacy_t:  # -t: $TMPDIR wins over -p DIR
        root = tmpdir if tmpdir != "" else (options.dir_arg or "/tmp")
    else:
        root = absolute_path(cwd, options.dir_arg) if options.dir_arg else (tmpdir if tmpdir != "" else "/tmp")
    return None if root is None else absolute_path(cwd, os.path.join(root, template))


def _name_pattern(template: str, suffix: str | None, *, bsd_prefix: bool) -> re.Pattern[str] | None:
    """The base names the template can give: its trailing run of (at least 3) X's, each
    replaced by a letter or a digit. With no --suffix, what follows the last X is the suffix."""
    if suffix is None:
        last = template.rfind("X")
        stem, suffix = (template[: last + 1], template[last + 1 :]) if last >= 0 else (template, "")
    elif template.endswith("X"):
        stem = template
    else:
        return None  # GNU: with --suffix, the template must end in X
    if "/" in suffix:
        return None
    count = len(stem) - len(stem.rstrip("X"))
    prefix = os.path.basename(stem[: len(stem) - count])
    if count >= 3:
        return re.compile(re.escape(prefix) + f"[A-Za-z0-9]{{{count}}}" + re.escape(suffix))
    if bsd_prefix and count == 0 and "/" not in template:  # BSD `mktemp -t prefix`: prefix.XXXXXXXX
        return re.compile(re.escape(template) + r"\.[A-Za-z0-9]{8}")
    return None  # too few X's: mktemp fails


def printed_paths(stdout: str, call: MktempCall) -> list[str]:
    """The paths in a Bash call's stdout that this mktemp call can have made: words, and whole
    lines that are an absolute path (a template may hold spaces), whose name fits the template
    and which lie in the folder the call makes its path in (when that is known). A listing of
    other `tmp.*` entries (`mktemp -d && ls -d /var/tmp/tmp.*`) is not the call's output; one
    in the same folder is told apart by the recorder's evidence check (app/core/created.py)."""
    found: set[str] = set()
    for line in stdout.splitlines():
        words = set(line.split())
        whole = line.strip()
        if whole.startswith("/"):
            words.add(whole)
        for word in words:
            if "\x00" in word or not call.pattern.fullmatch(os.path.basename(word.rstrip("/"))):
                continue
            path = absolute_path(call.cwd, word)
            if path and (call.folder is None or os.path.dirname(path) == call.folder):
                found.add(path)
    return sorted(found)


def find_unprinted(calls: list[MktempCall], window: float, known: set[str]) -> tuple[list[str], list[str]]:
    """The paths the calls made, found by template and time (see the module's docstring),
    and notes for the log. `known`: paths never taken (this command's printed ones, this
    session's records)."""
    groups: dict[tuple[str, str | None, bool], list[MktempCall]] = {}
    for call in calls:
        groups.setdefault(call.key(), []).append(call)
    notes: list[str] = []
    taken: dict[tuple[str, str | None, bool], list[str]] = {}
    for key, group in groups.items():
        call = group[0]
        what = f"mktemp{' -d' if call.directory else ''} {call.template!r}"
        if any(c.removed for c in group):
            notes.append(f"temp of {what} not looked for: the command removes or moves its variable, so "
                         "what fits it now is not the call's")
        elif call.folder is None:
            notes.append(f"temp of {what} not recorded: its folder cannot be expanded here")
        elif any(c.maybe for c in group):
            notes.append(f"temp of {what} not looked for: a call of it may not have run (after `||`, in an "
                         "`if`, a `case` or a loop of unknown count), so what fits it may be another program's")
        else:
            matches = _fitting(call, window, known, notes, what)
            wanted = sum(c.count for c in group)
            if matches is None:
                continue
            if not matches:
                notes.append(f"temp of {what} not printed and nothing in {call.folder} fits it and the last "
                             f"{window:.0f} s")
            elif len(matches) == wanted:
                taken[key] = sorted(matches)
                notes.append(f"temp of {what} not printed, found by template and time: {', '.join(matches)}")
            else:
                notes.append(f"temp of {what} not recorded: {len(matches)} entries of {call.folder} fit it and "
                             f"the last {window:.0f} s, for {wanted} unprinted call(s); only as many as the "
                             "calls is a guess")
    return _unshared(taken, notes), notes


def _fitting(call: MktempCall, window: float, known: set[str], notes: list[str], what: str) -> list[str] | None:
    """The entries of the call's folder that fit it (name, owner, kind, a ctime in the
    window), not `known`; None when the folder cannot be listed (noted)."""
    assert call.folder is not None
    now = time.time()
    since = now - window
    uid = os.getuid()
    matches: list[str] = []
    try:
        with os.scandir(call.folder) as entries:
            for entry in entries:
                if not call.pattern.fullmatch(entry.name):
                    continue
                path = os.path.join(call.folder, entry.name)
                if path in known:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind_fits = stat.S_ISDIR(st.st_mode) if call.directory else stat.S_ISREG(st.st_mode)
                if kind_fits and st.st_uid == uid and since <= st.st_ctime <= now + _CLOCK_SLACK_S:
                    matches.append(path)
    except OSError as exc:
        notes.append(f"temp of {what} not found: cannot list {call.folder}: {exc.strerror or exc}")
        return None
    return matches


def _unshared(taken: dict[tuple[str, str | None, bool], list[str]], notes: list[str]) -> list[str]:
    """The paths found, leaving out every group that shares one with another (two templates
    that both fit a name: which call made it is unknown, so neither count holds)."""
    owners: dict[str, int] = {}
    for found in taken.values():
        for path in found:
            owners[path] = owners.get(path, 0) + 1
    kept: list[str] = []
    for found in taken.values():
        if any(owners[path] > 1 for path in found):
            notes.append(f"temps {', '.join(found)} not recorded: another mktemp call of the command fits them too")
        else:
            kept.extend(found)
    return kept


def unprinted_paths(calls: list[MktempCall], window: float, outputs: list[tuple[str, str]],
                    notes: list[str], session: object) -> list[str]:
    """The paths of mktemp calls whose output was not printed, found by template and time
    (`find_unprinted`); never one this command printed or this session (`session`, the hook's
    id) recorded already. Another session's record hides nothing: that would hand a folder to
    whichever hook ran first, and the guess is exact or nothing."""
    from app.core.gc_records import read_records

    known = {path for _, path in outputs}
    if isinstance(session, str) and session:
        known.update(record.path for record in read_records(session))
    found, more = find_unprinted(calls, window, known)
    notes.extend(more)
    return found
