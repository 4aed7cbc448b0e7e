"""The outputs one Bash command names: what the output recorder (app/core/recorder.py) notes.

The command is read, never run (app/core/command_line.py splits it into simple commands,
and each into words as shlex would), in time linear in its length; a command longer than
`MAX_COMMAND_CHARS` is not read, and a command naming more than `MAX_OUTPUTS` outputs or
`MAX_MKTEMP_CALLS` mktemp calls has the rest left out (each logged): what a call costs the
hook stays bounded whatever the model wrote. A path that starts with `~` or `$` (or holds a
`$` or a backtick anywhere) cannot be expanded here and is not recorded; relative paths are
made absolute against the cwd, following literal `cd`s of the chain; `TMPDIR=` and `export
TMPDIR=` move where a later `mktemp` makes its path. What each simple command names is
app/core/bash_commands.py. For the unprinted-mktemp guess (app/core/mktemp.py) the reading
also counts how many times each mktemp call is written, and notes the calls whose variable
(`d=$(mktemp -d)`) the command hands to `rm`, `rmdir`, `mv`, `unlink` or a `trap`.

Loaded only when a command holds one of the recorder's trigger words.
"""

from __future__ import annotations

import gc
import os

from app.core.bash_commands import (
    MAX_MKTEMP_CALLS,
    MAX_OUTPUTS,
    Reading,
    Shell,
    _cp_call,
    read_simple,
    shown,
)
from app.core.call_folder import outside_call_folder
from app.core.command_line import MAX_COMMAND_CHARS, Scope, split_commands
from app.core.copy_origins import archive_copies, unnamed_move
from app.core.loop_counts import LoopCounts
from app.core.paths import inside
from app.core.recorder import TRIGGERS
from app.core.removed_variables import ANY_FOLDER, bind_names, loop_names, removed_variables
from app.core.shell_words import (
    absolute_path,
    clone_dir_name,
    rsync_words,
    shell_bodies,
    split_words,
)
from app.core.shell_words import copier_at as copier_at

TYPE_CHECKING = False  # `typing` costs an import on a path that runs for many Bash calls
if TYPE_CHECKING:
    from app.core.mktemp import MktempCall

#: `bash <<EOF` inside the heredoc of `bash <<EOF`...: deeper ones are not read (each level
#: reads its body again).
MAX_NESTED_SHELLS = 4
#: Commands that run the shell they are given once per input, maybe never.
_REPEATERS = frozenset({"xargs", "find", "parallel"})
#: Distinct notes for the log of one command; the rest are counted.
MAX_NOTES = 32

#: The reader's answer and its limits, as the recorder and its tests name them.
__all__ = ["MAX_MKTEMP_CALLS", "MAX_NESTED_SHELLS", "MAX_NOTES", "MAX_OUTPUTS", "clone_dir_name",
           "outputs_of_command", "read_bash", "read_command"]


def _copy_target(path: str, name: str, notes: list[str], slash: bool = False) -> str | None:
    """What `cp -r SRC path` made, seen after the fact: `path` itself when cp made it, or
    `path/<name>` when `path` was a folder already, which cannot be told apart; so
    `path/<name>` when it exists, else `path`. `name` "": unknown, and `path` a folder: not
    recorded (it may be a folder that was there and holds anything). `slash` (`cp -r SRC new/`):
    a missing target is read as a folder. A guess only: the recorder then needs evidence."""
    if not os.path.isdir(path):
        return os.path.join(path, name) if slash and name else path
    if not name:
        notes.append(f"copy into {path} not recorded: it is a folder, and the copy's name inside it "
                     "cannot be known here")
        return None
    inner = os.path.join(path, name)
    return inner if os.path.lexists(inner) else path


class _Reading(Reading):
    """A `Reading` that also knows, for the mktemp guess, how many times each distinct call
    is written, which variable each went into, and which variables the command removes."""

    __slots__ = ("_watch", "_by_key", "_ran", "_recent", "_bound", "_said", "_removing", "copied", "into", "keeps_times",
                 "moved_unnamed", "_loops", "maybe")

    def __init__(self, watch: bool) -> None:
        super().__init__()
        self._watch = watch  # the command holds `mktemp`: otherwise there is nothing to bind
        self._by_key: dict[tuple[tuple[str, ...], str | None, str | None], MktempCall] = {}
        self._ran: MktempCall | None = None  # the call the segment being read runs
        self._recent: tuple[MktempCall, int] | None = None  # the previous segment's, with its depth
        self._bound: dict[str, list[MktempCall]] = {}
        self._said: tuple[list[str], int] | None = None  # the calls' variables the last segment named
        self._removing: set[str] = set()
        self._loops = LoopCounts()  # a call in `for i in 1 2 3; do ...; done` runs three times
        self.maybe = False  # the simple command being read may not run (after `||`: command_line.Segment)
        # what every `cp` (with or without -r, its target known or not) copied, in which folder:
        # a command that also removes one of those moved it, maybe into any of its outputs
        self.copied: list[tuple[str, str | None]] = []
        self.into: list[tuple[str, str | None, list[str]]] = []  # each target, with what it moves there
        self.keeps_times = False  # a command of it may give what it makes old mtimes (`cp -a`)
        self.moved_unnamed = False  # a move of sources it does not name (`xargs mv -t "$d"`)

    def mktemp(self, args: list[str], cwd: str | None, env: dict[str, str | None]) -> None:
        before = len(self.calls)
        super().mktemp(args, cwd, env)
        key = (tuple(args), cwd, env.get("TMPDIR", self._user_tmp))
        if len(self.calls) > before:  # a new call
            self._ran = self._by_key[key] = self.calls[-1]
            self._ran.count = 0
        else:  # the same call again (the reader keeps it once), or one that makes nothing
            self._ran = self._by_key.get(key)
        if self._ran is not None:
            self._loops.count(self._ran, self.maybe)

    def segment_read(self, words: list[str], depth: int, cwd: str | None = None) -> None:
        """After each simple command: `NAME=$(mktemp ...)` binds NAME to the call the
        substitution just before it ran; a remover names the variables it is given; a `cp`
        notes what it copied (`copied`), and so do `mv` (across file systems a copy born anew) and `rsync`."""
        at, kept = copier_at(words)
        self.keeps_times = self.keeps_times or kept
        if at is not None and len(self.copied) < MAX_OUTPUTS:
            self._copying(words, at, cwd)
        for sources, target, moves in archive_copies(words, cwd) if len(self.copied) < MAX_OUTPUTS else ():
            # `tar -x` copies its archive, a move once removed; `tar -c`/`zip` what they pack
            self.copied.extend((source, cwd) for source in sources[:MAX_OUTPUTS - len(self.copied)])
            self.into.append((target, cwd, sources[:MAX_OUTPUTS] if moves else []))
            self.removing(sources if moves else [], cwd)
        if not self._watch:
            return
        defines = self._loops.read(words)
        ran, self._ran = self._ran, None
        recent, self._recent = self._recent, (ran, depth) if ran is not None else None
        if defines and recent is not None and recent[1] > depth:  # `f() { d=$(mktemp -d); }`: it may not run
            recent[0].maybe = True
        self._said = bind_names(words, depth, recent, self._said, self._bound)  # `d=$(mktemp -d)`, `w="$d"`
        loop_names(words, self._bound, self.calls)
        self._removing.update(removed_variables(words))

    def _copying(self, words: list[str], at: int, cwd: str | None) -> None:
        """What a `cp`, `mv` or `rsync` copies (`copied`), into which target with what it moves
        there (`into`); `rsync --remove-source-files` removes its sources, a move by itself."""
        call = _cp_call(words[at + 1:]) if os.path.basename(words[at]) != "rsync" else None
        plain = rsync_words(words[at + 1:]) if call is None else [*call.plain, call.target] if call.target else call.plain
        self.copied.extend((source, cwd) for source in plain[:-1][:MAX_OUTPUTS - len(self.copied)])
        moves = "--remove-source-files" in words or call is not None and os.path.basename(words[at]) == "mv"
        self.moved_unnamed = self.moved_unnamed or moves and unnamed_move(plain[:-1], self._bound)
        if len(plain) > 1 and len(self.into) < MAX_OUTPUTS:
            self.into.append((plain[-1], cwd, plain[:-1][:MAX_OUTPUTS] if moves else []))
        self.removing(plain[:-1] if "--remove-source-files" in words else [], cwd)

    def mark_removed(self) -> None:
        # `rm -rf "$(basename "$d")"`, `"$1"`, a glob (`$TMPDIR/tmp.*`: `TMPDIR/`, not `d/` of a
        # call's folder, whose entries it names): which folder it removed is unknown
        every = any(name == ANY_FOLDER or name[-1:] == "/" and name[:-1] not in self._bound for name in self._removing)
        for call in self.calls if every else (c for name in self._removing for c in self._bound.get(name, ())):
            call.removed = True


# --- the public face ----------------------------------------------------------------------


def read_command(command: str, cwd: str | None, stdout: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The outputs of one Bash call and notes on what was left out (for the log).

    `cwd` None: the folder is unknown, so only absolute paths can be recorded. It looks at
    the disk only for `cp -r SRC DEST` (was DEST a folder?); an unprinted mktemp path is
    found by the recorder (app/core/recorder.py), which also records a copy or worktree
    only with evidence that the call made it (app/core/created.py)."""
    outputs, notes, _, _ = read_bash(command, cwd, stdout)
    return outputs, notes


def read_bash(command: str, cwd: str | None, stdout: str, origins: dict[str, str] | None = None,
              copied: list[tuple[str, str | None]] | None = None, into: list[tuple[str, str | None, list[str]]] | None = None,
              flags: dict[str, object] | None = None) -> tuple[list[tuple[str, str]], list[str], list[MktempCall], dict[str, tuple[bool, str | None]]]:
    """`read_command`, plus the mktemp calls whose path the stdout does not name (the
    recorder looks for those on disk), plus how to judge each `copy`/`worktree` path (the
    recorder records one only with evidence this call made it, app/core/created.py):
    path -> (merged, outer). `merged`: only a birth time can show it; `outer`: the target
    `cp -r SRC DEST` named when the copy was taken as `DEST/<name>` (DEST was a folder), to
    be taken instead when DEST itself was born in the call. `origins`, when given, gets the
    absolute local path each copy or clone was made from; `copied`, when given, every word
    any `cp`, `rsync` or `git clone` of the command copied, with its folder
    (`recorder.copied_paths`); `into`, the target of each `cp`, `mv` and `rsync`, with the sources it moves
    there (`mv`, `rsync --remove-source-files`); `flags`, `keeps_times` (`shell_words.keeps_times`) and `lent`."""
    if not any(word in command for word in TRIGGERS):
        return [], [], [], {}
    if len(command) > MAX_COMMAND_CHARS:
        return [], [f"command not read: {len(command)} characters, more than {MAX_COMMAND_CHARS}; "
                    "nothing recorded"], [], {}
    reading = _Reading("mktemp" in command)
    collecting = gc.isenabled()
    gc.disable()  # the readers make many small objects and no cycles: collections cost half the time
    try:
        _read_chain(command, Shell(cwd), reading, 0)
    except ValueError as exc:  # Unreadable, from either reader
        return [], [f"cannot read the command ({exc}); nothing recorded"], [], {}
    finally:
        if collecting:
            gc.enable()
    notes = reading.notes
    notes.extend(reading.left_out())
    outputs, claims = _named(reading, notes, {} if origins is None else origins)
    outputs = outside_call_folder(outputs, cwd, notes)
    if copied is not None:
        copied.extend([*reading.copied, *(s for made in reading.sources.values() for s in made)])
    if into is not None:
        into.extend(reading.into)
    if flags is not None:
        flags.update(keeps_times=reading.keeps_times, lent=reading.lent, moved_unnamed=reading.moved_unnamed)
    moved = _Removals(reading, {}).moved(reading.copied, {}) if reading.copied and reading.removed else None
    if moved is not None:
        notes.append(f"nothing recorded: the command copies {shown(moved)} and removes it, a move: the only "
                     "copy may lie in any folder it made")
        return [], _bounded(notes), [], {}
    unprinted: list[MktempCall] = []
    if reading.calls:
        from app.core.mktemp import printed_paths

        reading.mark_removed()
        for call in reading.calls:
            printed = printed_paths(stdout, call) if stdout else []
            outputs.extend(("temp", path) for path in printed)
            if not printed:
                unprinted.append(call)
    return _unique(outputs), _bounded(notes), unprinted, claims


def _named(reading: _Reading, notes: list[str], origins: dict[str, str]
           ) -> tuple[list[tuple[str, str]], dict[str, tuple[bool, str | None]]]:
    """The outputs the command names, as absolute paths, and how to judge each copy or
    worktree (see `read_bash`); a copy or clone whose source the command removes is left out."""
    outputs: list[tuple[str, str]] = []
    claims: dict[str, tuple[bool, str | None]] = {}
    resolved: dict[str, str] = {}  # the folders of this command's paths, resolved once
    removals = _Removals(reading, resolved)
    for key in reading.found:
        kind, raw, base, inside, merged = key
        path = absolute_path(base, raw, resolved)
        if path is None:
            notes.append(f"{kind} {shown(raw)} not recorded: it cannot be expanded here")
            continue
        sources = reading.sources.get(key)
        gone = removals.moved(sources, resolved) if sources else None
        if gone is not None:
            notes.append(f"{kind} {shown(raw)} not recorded: the command removes its source {shown(gone)}, so it "
                         "is a move, the only copy left")
            continue
        outer = None
        if inside is not None:
            chosen = _copy_target(path, inside, notes, raw.endswith("/"))
            if chosen is not None and chosen != path:
                merged, outer = True, path
            path = chosen
        if path is not None:
            outputs.append((kind, path))
            if kind in ("copy", "worktree") and path not in claims:
                claims[path] = (merged, outer)
                origin = absolute_path(sources[0][1], sources[0][0], resolved) if sources else None
                if origin is not None:
                    origins[path] = origin
    return outputs, claims


class _Removals:
    """What the command removes (`rm`, `rmdir`), resolved once, to tell a copy or clone whose
    source goes with it (`cp -r data x && rm -rf data`: a move, whose copy is the only one
    left, as `mv` would leave it; `rm -rf data/*` after it leaves the only copy of what was
    in it): the same word in the same folder (`"$src"` too), a path at, above or below the
    source, or a glob that matches one of those at the source's depth. Past
    MAX_OUTPUTS words, or MAX_GLOBS globs, every copy with a source counts as moved (unsure:
    not recorded). Each check costs at most a comparison per word: linear in the command."""

    MAX_GLOBS = 32

    def __init__(self, reading: _Reading, resolved: dict[str, str]) -> None:
        self.words = {(home_spelled(word), where) for word, where in reading.removed}
        self.paths: list[str] = []
        self.globs: list[tuple[str, list[int]]] = []  # with the places of its slashes
        self.unexpanded: list[tuple[str, str | None]] = []  # `$HOME/proj`, `"$d"/x`: as written
        for word, where in reading.removed:
            path = absolute_path(where, word, resolved)
            if path is None:
                self.unexpanded.append(_as_written(word, where))
            elif any(c in word for c in "*?["):
                self.globs.append((path, _slashes(path)))
            elif path is not None:
                self.paths.append(path)
        self.many = reading.removes_many or len(self.globs) > self.MAX_GLOBS

    def moved(self, sources: list[tuple[str, str | None]], resolved: dict[str, str]) -> str | None:
        """The source that the command removes, or None."""
        for source, base in dict.fromkeys(sources):  # a word repeated is read once
            if self.many or (home_spelled(source), base) in self.words:
                return source
            path = absolute_path(base, source, resolved)
            if path is None:
                written = _as_written(source, base)
                if any(where == written[1] and (inside(word, written[0]) or inside(written[0], word))
                       for word, where in self.unexpanded):
                    return source
                continue
            if any(inside(path, gone) or inside(gone, path) for gone in self.paths) or self._globbed(path):
                return source
        return None

    def _globbed(self, path: str) -> bool:
        if not self.globs:
            return False
        from fnmatch import fnmatchcase

        cuts = _slashes(path)  # the glob against the source's folder of its depth, or cut to the source's
        depth = len(cuts) - 1
        return any(fnmatchcase(path[:cuts[len(at) - 1]], glob) if len(at) <= depth
                   else fnmatchcase(path, glob[:at[depth]]) for glob, at in self.globs)


def home_spelled(word: str) -> str:
    """One spelling of a word that starts at the home (`~/x`, `${HOME}/x`, `$HOME/x`): the
    hook expands none of them, yet a copy of `~/proj` and an `rm -rf "$HOME/proj"` are a move."""
    if word == "~" or word.startswith("~/"):
        return "$HOME" + word[1:]
    return "$HOME" + word[7:] if word.startswith("${HOME}") else word


def _as_written(word: str, base: str | None) -> tuple[str, str | None]:
    """A word the hook cannot expand, in one spelling, with the folder it is relative to (none
    for one that starts at a variable or the home): `$HOME/proj/.` and `~/proj` are alike."""
    word = os.path.normpath(home_spelled(word))
    return word, None if word[0] in "$/" else base


def _slashes(path: str) -> list[int]:
    """Where each `/` of an absolute path is, and its end: `path[:cuts[k]]` is its folder of depth k."""
    return [i for i, c in enumerate(path) if c == "/"] + [len(path)]


def _read_chain(command: str, shell: Shell, reading: _Reading, nesting: int, maybe: bool = False) -> None:
    """Every output a command line names, in order, following its `cd`s and TMPDIR=s.

    `outside`: each subshell the reading is in, with the shell outside it, to go back to
    when it ends. Moving to a segment's subshell walks only the scopes entered or left, each
    once in the whole line: linear however deep the nesting. `maybe`: the line may run never,
    or many times (the script of a shell after `||`, or run by `xargs`, `find -exec`)."""
    outside: list[tuple[Scope, Shell]] = []
    entered: set[Scope] = set()
    for segment in split_commands(command):
        words = split_words(segment.text)
        newly: list[Scope] = []
        scope = segment.scope
        while scope is not None and scope not in entered:
            newly.append(scope)
            scope = scope.parent
        while outside and outside[-1][0] is not scope:  # left a subshell: what it changed ends
            left, shell = outside.pop()
            entered.discard(left)
        for opened in reversed(newly):
            outside.append((opened, Shell(shell.cwd, shell.env)))
            entered.add(opened)
        bodies, what = shell_bodies(words, segment.text, segment.heredoc)
        before = Shell(shell.cwd, shell.env) if bodies else None
        cwd, reading.maybe = shell.cwd, segment.maybe or maybe
        env = read_simple(words, shell, reading)
        reading.segment_read(words, segment.depth, cwd)
        if before is None:  # `bash <<EOF` and `bash -c` run their script; any other heredoc is data
            continue
        if nesting >= MAX_NESTED_SHELLS:
            reading.notes.append(f"a shell's {what} nested deeper than {MAX_NESTED_SHELLS} not read")
            continue
        for body in bodies:
            _read_chain(body, Shell(before.cwd, env), reading, nesting + 1,  # with the shell's own TMPDIR=
                        reading.maybe or os.path.basename(words[0]) in _REPEATERS)


def _bounded(notes: list[str]) -> list[str]:
    """Each note once, at most MAX_NOTES of them: a command repeating a thing a thousand
    times must not write a thousand log lines."""
    unique = list(dict.fromkeys(notes))
    return unique[:MAX_NOTES] + [f"{len(unique) - MAX_NOTES} more notes on this command left out"
                                 ] if len(unique) > MAX_NOTES else unique


def _unique(outputs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    first: dict[str, str] = {}
    for kind, path in outputs:
        first.setdefault(path, kind)
    return [(kind, path) for path, kind in first.items()]


def outputs_of_command(command: str, cwd: str, stdout: str) -> list[tuple[str, str]]:
    """(kind, absolute path) of each output a Bash command names (see `read_command`)."""
    return read_command(command, cwd, stdout)[0]
