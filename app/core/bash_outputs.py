"""The outputs one Bash command names: what the output recorder (app/core/recorder.py) notes.

The command is read, never run (app/core/command_line.py splits it into simple commands,
and each into words as shlex would), in time linear in its length; a command longer than
`MAX_COMMAND_CHARS` is not read, and a command naming more than `MAX_OUTPUTS` outputs or
`MAX_MKTEMP_CALLS` mktemp calls has the rest left out (each logged): what a call costs the
hook stays bounded whatever the model wrote. A path that starts with `~` or `$` (or holds a
`$` or a backtick anywhere) cannot be expanded here and is not recorded; relative paths are
made absolute against the cwd, following literal `cd`s of the chain; `TMPDIR=` and `export
TMPDIR=` move where a later `mktemp` makes its path.

Loaded only when a command holds one of the recorder's trigger words.
"""

from __future__ import annotations

import gc
import os

from app.core import paths
from app.core.command_line import MAX_COMMAND_CHARS, Scope, split_commands
from app.core.recorder import TRIGGERS
from app.core.shell_words import MAX_PATH_CHARS, absolute_path, joined_path, rx, split_words

TYPE_CHECKING = False  # `typing` costs an import on a path that runs for many Bash calls
if TYPE_CHECKING:
    from app.core.mktemp import MktempCall

# --- reading one simple command -----------------------------------------------------------

_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "fi", "done"})
_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "sudo", "nice", "stdbuf", "xargs"})
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})

_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path", "--super-prefix"})
_WORKTREE_VALUE_OPTIONS = frozenset({"-b", "-B", "--reason"})
_CLONE_VALUE_OPTIONS = frozenset({
    "-o", "--origin", "-b", "--branch", "-u", "--upload-pack", "--reference", "--reference-if-able",
    "--separate-git-dir", "--depth", "--shallow-since", "--shallow-exclude", "-c", "--config",
    "--template", "-j", "--jobs", "--filter", "--server-option", "--bundle-uri", "--ref-format",
    "--revision",
})
_CP_VALUE_OPTIONS = frozenset({"-t", "--target-directory", "-S", "--suffix"})

#: Distinct outputs one command may name; the rest are left out (logged). Each costs stats.
MAX_OUTPUTS = 256
#: Distinct mktemp calls one command may hold; the rest are left out (logged). An unprinted
#: one costs a listing of its folder.
MAX_MKTEMP_CALLS = 16
#: `bash <<EOF` inside the heredoc of `bash <<EOF`...: deeper ones are not read (each level
#: reads its body again).
MAX_NESTED_SHELLS = 4
#: Distinct notes for the log of one command; the rest are counted.
MAX_NOTES = 32

#: An output as written in the command: (kind, raw, base, inside, merged). `raw` is relative
#: to `base` (None when unknown, after `cd "$d"`). `inside` is set for `cp -r SRC DEST` alone:
#: the name the copy has when DEST was a folder already ("" when that name is unknown).
#: `merged`: the copy may be a folder that was there, with entries added (`src/.`, `-T`,
#: `DIR/<name>`), so only a birth time can show this call made it (app/core/created.py).
_Found = tuple[str, str, str | None, str | None, bool]


class _Reading:
    """What the command read so far names: each output once (a command repeating one costs
    nothing more), each distinct mktemp call once, and notes for the log."""

    __slots__ = ("found", "calls", "notes", "_mktemp_seen", "_left_out", "_user_tmp")

    def __init__(self) -> None:
        self.found: dict[_Found, None] = {}
        self.calls: list[MktempCall] = []
        self.notes: list[str] = []
        self._mktemp_seen: set[tuple[tuple[str, ...], str | None, str | None]] = set()
        self._left_out = {"outputs": 0, "mktemp calls": 0}
        self._user_tmp: str | None = None

    def output(self, kind: str, raw: str, base: str | None, inside: str | None = None,
               merged: bool = False) -> None:
        key = (kind, raw, base, inside, merged)
        if key in self.found:
            return
        if len(self.found) >= MAX_OUTPUTS:
            self._left_out["outputs"] += 1
            return
        self.found[key] = None

    def mktemp(self, args: list[str], cwd: str | None, env: dict[str, str | None]) -> None:
        if "TMPDIR" in env:
            tmpdir = env["TMPDIR"]
        else:
            if self._user_tmp is None:
                self._user_tmp = paths.user_tmp_str()
            tmpdir = self._user_tmp
        if any(len(arg) > MAX_PATH_CHARS for arg in args):
            self.notes.append("a mktemp call not read: an argument longer than any path")
            return
        key = (tuple(args), cwd, tmpdir)
        if key in self._mktemp_seen:
            return  # the same call again: the same template and folder, found once
        self._mktemp_seen.add(key)
        if len(self._mktemp_seen) > MAX_MKTEMP_CALLS:
            self._left_out["mktemp calls"] += 1
            return
        from app.core.mktemp import read_mktemp

        call = read_mktemp(args, cwd, tmpdir)
        if call is not None:
            self.calls.append(call)

    def left_out(self) -> list[str]:
        limits = {"outputs": MAX_OUTPUTS, "mktemp calls": MAX_MKTEMP_CALLS}
        return [f"{count} more {what} of the command not recorded: at most {limits[what]} are read per command"
                for what, count in self._left_out.items() if count]


class _Shell:
    """What the chain read so far changed: the cwd (literal `cd`s) and $TMPDIR (absent: the
    hook's own; "" empty, so /tmp; None when it cannot be known here)."""

    __slots__ = ("cwd", "env")

    def __init__(self, cwd: str | None, env: dict[str, str | None] | None = None) -> None:
        self.cwd = cwd
        self.env = dict(env or {})


def _drop_redirections(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        match = rx().redirect.match(word)
        if match:
            skip_next = match.group(3) == "" and not match.group(2).endswith("&")
            continue
        kept.append(word)
    return kept


def _assign(word: str, cwd: str | None, reading: _Reading, env: dict[str, str | None]) -> None:
    """An assignment: CLAUDE_CONFIG_DIR= is an output; TMPDIR= moves mktemp's folder."""
    match = rx().assignment.match(word)
    if not match:
        return
    name, value = match.groups()
    if name == "CLAUDE_CONFIG_DIR" and value:
        reading.output("config", value, cwd)
    elif name == "TMPDIR":
        env["TMPDIR"] = absolute_path(cwd, value) if value else ""


def _read_simple(words: list[str], shell: _Shell, reading: _Reading) -> None:
    """Note the outputs of one simple command; a `cd` moves `shell.cwd`, TMPDIR= `shell.env`.
    Words are passed by index, never by slicing the list again (quadratic in their number)."""
    cwd = shell.cwd
    env = shell.env  # copied before the first assignment: it holds for this command only
    words = _drop_redirections(words)
    n = len(words)
    k = 0
    while k < n and words[k] in _KEYWORDS:
        k += 1
    while k < n and rx().assignment.match(words[k]):
        if env is shell.env:
            env = dict(env)
        _assign(words[k], cwd, reading, env)
        k += 1
    if k >= n:  # only assignments: they hold for the rest of the chain
        shell.env = env
        return
    while k < n:
        name = os.path.basename(words[k])
        if name == "env":
            k += 1
            while k < n and (words[k].startswith("-") or rx().assignment.match(words[k])):
                if env is shell.env:
                    env = dict(env)
                _assign(words[k], cwd, reading, env)
                k += 2 if words[k] in ("-u", "-C", "--unset", "--chdir") else 1
        elif name in _WRAPPERS:
            k += 1
            while k < n and words[k].startswith("-"):
                k += 2 if words[k] in ("-u", "-n", "-g") else 1
        elif name == "timeout":  # timeout [options] DURATION COMMAND...
            k += 1
            while k < n and words[k].startswith("-"):
                k += 2 if words[k] in ("-s", "-k", "--signal", "--kill-after") else 1
            k += 1
        else:
            break
    if k >= n:
        return
    name = os.path.basename(words[k])
    args = words[k + 1 :]
    if name in _DECLARERS:
        for word in args:
            _assign(word, cwd, reading, shell.env)
    elif name in ("cd", "pushd"):
        targets = [a for a in args if not a.startswith("-") or a == "-"]
        shell.cwd = joined_path(cwd, targets[0]) if targets else None
    elif name == "git":
        _read_git(args, cwd, reading)
    elif name == "cp":
        _read_cp(args, cwd, reading)
    elif name == "mktemp":
        reading.mktemp(args, cwd, env)


def _positionals(args: list[str], value_options: frozenset[str]) -> list[str]:
    found: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            found.extend(args[i + 1 :])
            break
        if arg.startswith("-") and len(arg) > 1:
            if arg in value_options:
                i += 1
            elif arg[:2] in value_options and not arg.startswith("--"):
                pass  # -bname: the value is glued on
        else:
            found.append(arg)
        i += 1
    return found


def _read_git(args: list[str], cwd: str | None, reading: _Reading) -> None:
    base = cwd
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            base = absolute_path(base, args[i + 1]) if args[i + 1] else base
            i += 2
        elif args[i] in _GIT_VALUE_OPTIONS:
            i += 2
        else:
            i += 1
    if i >= len(args):
        return
    sub, rest = args[i], args[i + 1 :]
    if sub == "worktree" and rest[:1] == ["add"]:
        targets = _positionals(rest[1:], _WORKTREE_VALUE_OPTIONS)
        if targets:
            reading.output("worktree", targets[0], base)
    elif sub == "clone":
        targets = _positionals(rest, _CLONE_VALUE_OPTIONS)
        bare = any(a in ("--bare", "--mirror") for a in rest)
        if len(targets) >= 2:
            reading.output("copy", targets[1], base)
        elif targets:
            name = clone_dir_name(targets[0], bare=bare)
            if name:
                reading.output("copy", name, base)


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


def _read_cp(args: list[str], cwd: str | None, reading: _Reading) -> None:
    """`cp -r` records what cp made. Into a folder (several sources, a target ending in `/`,
    `-t DIR`) that is `DIR/<name of each source>`, never DIR itself, which was there before
    and may hold anything. One source into a plain target: the target, unless cp copied into
    a folder that was there (see `_copy_target`). `-T`: the target, always."""
    recursive = parents = no_target_dir = False
    target: str | None = None
    plain: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            plain.extend(args[i + 1 :])
            break
        if arg.startswith("--"):
            if arg in ("--recursive", "--archive"):
                recursive = True
            elif arg == "--parents":
                parents = True
            elif arg == "--no-target-directory":
                no_target_dir = True
            elif arg.startswith("--target-directory="):
                target = arg.split("=", 1)[1]
            elif arg in _CP_VALUE_OPTIONS:
                if arg == "--target-directory" and i + 1 < len(args):
                    target = args[i + 1]
                i += 1
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            for pos, letter in enumerate(letters):
                if letter in "rRa":
                    recursive = True
                elif letter == "T":
                    no_target_dir = True
                if letter in "tS":
                    value = letters[pos + 1 :]
                    if not value and i + 1 < len(args):
                        value = args[i + 1]
                        i += 1
                    if letter == "t":
                        target = value
                    break
        else:
            plain.append(arg)
        i += 1
    if not recursive:
        return
    if parents:
        reading.notes.append("cp --parents not recorded: the folders it makes inside the target cannot be told "
                     "from the ones that were there")
        return
    if target is None:
        if len(plain) < 2:
            return
        target, sources = plain[-1], plain[:-1]
        if no_target_dir or (len(sources) == 1 and not target.endswith("/")):
            name = "" if no_target_dir else _copy_name(sources[0])
            if name == "." or no_target_dir:  # `cp -r dir/. dest`, `-T`: dest itself, merged or new
                reading.output("copy", target, cwd, merged=True)
            else:
                reading.output("copy", target, cwd, inside=name or "")
            return
    else:
        sources = plain
    if not target:
        return
    for source in sources:
        name = _copy_name(source)
        if not name or name == ".":
            reading.notes.append(f"copy of {_shown(source)} into {_shown(target)} not recorded: its name there cannot be known here")
        else:
            reading.output("copy", target.rstrip("/") + "/" + name, cwd, merged=True)


def _copy_name(source: str) -> str:
    """The name cp gives a copy of `source` inside a folder: its last part. "." when the copy
    is the folder's own content (`src/.`); "" when it cannot be known here (a glob, `$x`, `~`,
    `..`, `/`)."""
    trimmed = source.rstrip("/")
    name = os.path.basename(trimmed)
    if name == ".":
        return name
    if not name or name == ".." or any(c in name for c in "*?[$`") or (name[0] == "~" and "/" not in trimmed):
        return ""
    return name


def _copy_target(path: str, name: str, notes: list[str]) -> str | None:
    """What `cp -r SRC path` made, seen after the fact: `path` itself when cp made it, or
    `path/<name>` when `path` was a folder already, which cannot be told apart; so
    `path/<name>` when it exists, else `path`. `name` "": unknown, and `path` a folder: not
    recorded (it may be a folder that was there and holds anything). This is the reader's
    guess only: the recorder then needs evidence the call made the path it records."""
    if not os.path.isdir(path):
        return path
    if not name:
        notes.append(f"copy into {path} not recorded: it is a folder, and the copy's name inside it "
                     "cannot be known here")
        return None
    inner = os.path.join(path, name)
    return inner if os.path.lexists(inner) else path


# --- the public face ----------------------------------------------------------------------


def read_command(command: str, cwd: str | None, stdout: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The outputs of one Bash call and notes on what was left out (for the log).

    `cwd` None: the folder is unknown, so only absolute paths can be recorded. It looks at
    the disk only for `cp -r SRC DEST` (was DEST a folder?); an unprinted mktemp path is
    found by the recorder (app/core/recorder.py), which also records a copy or worktree
    only with evidence that the call made it (app/core/created.py)."""
    outputs, notes, _, _ = read_bash(command, cwd, stdout)
    return outputs, notes


def read_bash(command: str, cwd: str | None, stdout: str
              ) -> tuple[list[tuple[str, str]], list[str], list[MktempCall], dict[str, tuple[bool, str | None]]]:
    """`read_command`, plus the mktemp calls whose path the stdout does not name (the
    recorder looks for those on disk), plus how to judge each `copy`/`worktree` path (the
    recorder records one only with evidence this call made it, app/core/created.py):
    path -> (merged, outer). `merged`: only a birth time can show it; `outer`: the target
    `cp -r SRC DEST` named when the copy was taken as `DEST/<name>` (DEST was a folder), to
    be taken instead when DEST itself was born in the call."""
    if not any(word in command for word in TRIGGERS):
        return [], [], [], {}
    if len(command) > MAX_COMMAND_CHARS:
        return [], [f"command not read: {len(command)} characters, more than {MAX_COMMAND_CHARS}; "
                    "nothing recorded"], [], {}
    reading = _Reading()
    collecting = gc.isenabled()
    gc.disable()  # the readers make many small objects and no cycles: collections cost half the time
    try:
        _read_chain(command, _Shell(cwd), reading, 0)
    except ValueError as exc:  # Unreadable, from either reader
        return [], [f"cannot read the command ({exc}); nothing recorded"], [], {}
    finally:
        if collecting:
            gc.enable()
    notes = reading.notes
    notes.extend(reading.left_out())
    outputs: list[tuple[str, str]] = []
    claims: dict[str, tuple[bool, str | None]] = {}
    resolved: dict[str, str] = {}  # the folders of this command's paths, resolved once
    for kind, raw, base, inside, merged in reading.found:
        path = absolute_path(base, raw, resolved)
        if path is None:
            notes.append(f"{kind} {_shown(raw)} not recorded: it cannot be expanded here")
            continue
        outer = None
        if inside is not None:
            chosen = _copy_target(path, inside, notes)
            if chosen is not None and chosen != path:
                merged, outer = True, path
            path = chosen
        if path is not None:
            outputs.append((kind, path))
            if kind in ("copy", "worktree") and path not in claims:
                claims[path] = (merged, outer)
    unprinted: list[MktempCall] = []
    if reading.calls:
        from app.core.mktemp import printed_paths

        for call in reading.calls:
            printed = printed_paths(stdout, call) if stdout else []
            outputs.extend(("temp", path) for path in printed)
            if not printed:
                unprinted.append(call)
    return _unique(outputs), _bounded(notes), unprinted, claims


def _read_chain(command: str, shell: _Shell, reading: _Reading, nesting: int) -> None:
    """Every output a command line names, in order, following its `cd`s and TMPDIR=s.

    `outside`: each subshell the reading is in, with the shell outside it, to go back to
    when it ends. Moving to a segment's subshell walks only the scopes entered or left, each
    once in the whole line: linear however deep the nesting."""
    outside: list[tuple[Scope, _Shell]] = []
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
            outside.append((opened, _Shell(shell.cwd, shell.env)))
            entered.add(opened)
        runs_heredoc = (bool(segment.heredoc) and bool(words) and os.path.basename(words[0]) in _SHELLS
                        and "-c" not in words)
        if not runs_heredoc:  # `bash <<EOF` runs its heredoc; any other heredoc is data
            _read_simple(words, shell, reading)
            continue
        before = _Shell(shell.cwd, shell.env)
        _read_simple(words, shell, reading)
        if nesting >= MAX_NESTED_SHELLS:
            reading.notes.append(f"a shell's heredoc nested deeper than {MAX_NESTED_SHELLS} not read")
            continue
        for body in segment.heredoc:
            _read_chain("\n".join(body), _Shell(before.cwd, before.env), reading, nesting + 1)


def _shown(word: str) -> str:
    """A word of the command as a note shows it: quoted, and cut short (a word can be as
    long as the command)."""
    return repr(word) if len(word) <= 200 else repr(word[:200]) + f"... ({len(word)} characters)"


def _bounded(notes: list[str]) -> list[str]:
    """Each note once, at most MAX_NOTES of them: a command repeating a thing a thousand
    times must not write a thousand log lines."""
    unique = list(dict.fromkeys(notes))
    if len(unique) > MAX_NOTES:
        unique = unique[:MAX_NOTES] + [f"{len(unique) - MAX_NOTES} more notes on this command left out"]
    return unique


def _unique(outputs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    result = []
    for kind, path in outputs:
        if path not in seen:
            seen.add(path)
            result.append((kind, path))
    return result


def outputs_of_command(command: str, cwd: str, stdout: str) -> list[tuple[str, str]]:
    """(kind, absolute path) of each output a Bash command names (see `read_command`)."""
    return read_command(command, cwd, stdout)[0]
