"""What one simple command of a Bash call names as its outputs: `cd` and assignments that
move where later commands act, `CLAUDE_CONFIG_DIR=`, `git worktree add`, `git clone`, `gh repo
clone` (app/core/gh_clone.py), `cp -r`, and `mktemp` (as GNU mktemp reads it: app/core/mktemp.py).

Words come from app/core/shell_words.py; app/core/bash_outputs.py reads the whole command
line with these and turns what they name into absolute paths. Each reader takes its words
by index, never by slicing the list again (quadratic in their number)."""

from __future__ import annotations

import os

from app.core import paths, shell_words
from app.core.gh_clone import gh_clone_target
from app.core.shell_words import MAX_PATH_CHARS, absolute_path, joined_path, local_source, rx

TYPE_CHECKING = False  # `typing` costs an import on a path that runs for many Bash calls
if TYPE_CHECKING:
    from app.core.mktemp import MktempCall

_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "fi", "done"})
_WRAPPERS = frozenset({"command", "builtin", "exec", "nohup", "time", "sudo", "nice", "stdbuf", "xargs"})
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})

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

#: An output as written in the command: (kind, raw, base, inside, merged). `raw` is relative
#: to `base` (None when unknown, after `cd "$d"`). `inside` is set for `cp -r SRC DEST` alone:
#: the name the copy has when DEST was a folder already ("" when that name is unknown).
#: `merged`: the copy may be a folder that was there, with entries added (`src/.`, `-T`,
#: `DIR/<name>`), so only a birth time can show this call made it (app/core/created.py).
_Found = tuple[str, str, str | None, str | None, bool]


class Reading:
    """What the command read so far names: each output once (a command repeating one costs
    nothing more), each distinct mktemp call once, and notes for the log."""

    __slots__ = ("found", "calls", "notes", "sources", "removed", "removes_many", "_mktemp_seen", "_left_out",
                 "_user_tmp", "lent")

    def __init__(self) -> None:
        self.found: dict[_Found, None] = {}
        # what each copy or clone was made from, and what the command removes (`rm`, `rmdir`):
        # a copy whose source the command removes is a move, the only copy left
        self.sources: dict[_Found, list[tuple[str, str | None]]] = {}
        self.removed: list[tuple[str, str | None]] = []
        self.removes_many = False  # more than MAX_OUTPUTS words removed: which copy is moved is unknown
        self.lent: list[tuple[str, str, str | None]] = []  # (lender, clone borrowing its objects, folder)
        self.calls: list[MktempCall] = []
        self.notes: list[str] = []
        self._mktemp_seen: set[tuple[tuple[str, ...], str | None, str | None]] = set()
        self._left_out = {"outputs": 0, "mktemp calls": 0}
        self._user_tmp: str | None = None

    def output(self, kind: str, raw: str, base: str | None, inside: str | None = None,
               merged: bool = False, source: str | None = None) -> None:
        key = (kind, raw, base, inside, merged)
        if source is not None and (key in self.found or len(self.found) < MAX_OUTPUTS):
            self.sources.setdefault(key, []).append((source, base))
        if key in self.found:
            return
        if len(self.found) >= MAX_OUTPUTS:
            self._left_out["outputs"] += 1
            return
        self.found[key] = None

    def removing(self, args: list[str], cwd: str | None) -> None:
        """`rm`/`rmdir ARGS` in `cwd`: what a copy's source is checked against, at most
        MAX_OUTPUTS words (each costs a comparison with every source)."""
        for arg in _positionals(args, frozenset()):
            if len(self.removed) >= MAX_OUTPUTS:
                self.removes_many = True
                return
            self.removed.append((arg, cwd))

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


class Shell:
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


def _assign(word: str, cwd: str | None, reading: Reading, env: dict[str, str | None]) -> None:
    """An assignment: CLAUDE_CONFIG_DIR= is an output; TMPDIR= moves mktemp's folder."""
    match = rx().assignment.match(word)
    if not match:
        return
    name, value = match.groups()
    if name == "CLAUDE_CONFIG_DIR" and value:
        reading.output("config", value, cwd)
    elif name == "TMPDIR":
        env["TMPDIR"] = absolute_path(cwd, value) if value else ""


def read_simple(words: list[str], shell: Shell, reading: Reading) -> dict[str, str | None]:
    """Note the outputs of one simple command; a `cd` moves `shell.cwd`, TMPDIR= `shell.env`.
    The environment the command runs with (`TMPDIR=/x bash -c ...`: the script's mktemp uses
    /x). Words are passed by index, never by slicing the list again (quadratic in their number)."""
    words = _drop_redirections(words)
    k = 0
    while k < len(words) and words[k] in _KEYWORDS:
        k += 1
    k, env = _assignments(words, k, shell, reading)
    if k >= len(words):  # only assignments: they hold for the rest of the chain
        shell.env = env
        return env
    k, env = _unwrapped(words, k, shell, reading, env)
    if k < len(words):
        _run(os.path.basename(words[k]), words[k + 1 :], shell, reading, env)
    return env


def _assignments(words: list[str], k: int, shell: Shell, reading: Reading) -> tuple[int, dict[str, str | None]]:
    """`A=1 B=2 cmd`: the assignments in front hold for this command only (the environment
    is copied before the first one); (the index after them, the command's environment)."""
    env = shell.env
    while k < len(words) and rx().assignment.match(words[k]):
        if env is shell.env:
            env = dict(env)
        _assign(words[k], shell.cwd, reading, env)
        k += 1
    return k, env


def _unwrapped(words: list[str], k: int, shell: Shell, reading: Reading,
               env: dict[str, str | None]) -> tuple[int, dict[str, str | None]]:
    """Past the commands that run another one (`env A=1`, `sudo`, `nice`, `timeout 5` ...):
    the index of the command that runs, and its environment."""
    n = len(words)
    while k < n:
        name = os.path.basename(words[k])
        if name == "env":
            k += 1
            while k < n and (words[k].startswith("-") or rx().assignment.match(words[k])):
                if env is shell.env:
                    env = dict(env)
                _assign(words[k], shell.cwd, reading, env)
                k += 2 if words[k] in ("-u", "-C", "--unset", "--chdir") else 1
        elif name in _WRAPPERS:
            k = _past_options(words, k + 1, ("-u", "-n", "-g"))
        elif name == "timeout":  # timeout [options] DURATION COMMAND...
            k = _past_options(words, k + 1, ("-s", "-k", "--signal", "--kill-after")) + 1
        else:
            break
    return k, env


def _past_options(words: list[str], k: int, with_value: tuple[str, ...]) -> int:
    while k < len(words) and words[k].startswith("-"):
        k += 2 if words[k] in with_value else 1
    return k


def _run(name: str, args: list[str], shell: Shell, reading: Reading, env: dict[str, str | None]) -> None:
    """What the command `name` itself makes, or where it moves the shell."""
    cwd = shell.cwd
    if name in _DECLARERS:
        for word in args:
            _assign(word, cwd, reading, shell.env)
    elif name in ("cd", "pushd", "popd"):  # where `popd` goes back to is not followed: unknown
        targets = [a for a in args if not a.startswith("-") or a == "-"]
        shell.cwd = joined_path(cwd, targets[0]) if targets and name != "popd" else None
    elif name == "git":
        _read_git(args, cwd, reading)
    elif name == "cp":
        _read_cp(args, cwd, reading)
    elif name == "gh" and (cloned := gh_clone_target(args)) is not None:  # `gh repo clone`: a git clone
        reading.output("copy", cloned, cwd)
    elif name == "mktemp":
        reading.mktemp(args, cwd, env)
    elif name in ("rm", "rmdir"):
        reading.removing(args, cwd)


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


def _read_git(args: list[str], cwd: str | None, reading: Reading) -> None:
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
    elif sub == "clone" and (targets := _positionals(rest, _CLONE_VALUE_OPTIONS)):
        source = local_source(targets[0])
        name = targets[1] if len(targets) >= 2 else shell_words.clone_dir_name(targets[0], bare=any(
            a in ("--bare", "--mirror") for a in rest))
        if name:
            reading.output("copy", name, base, source=source)
            lender = shell_words.clone_lender(rest, source)  # `--reference X`: the clone needs X's objects
            if lender and len(reading.lent) < MAX_OUTPUTS:
                reading.lent.append((lender, name, base))


class _CpCall:
    """`cp ARGS` as GNU cp reads them: what matters for what it makes."""

    __slots__ = ("recursive", "parents", "no_target_dir", "target", "plain")

    def __init__(self) -> None:
        self.recursive = self.parents = self.no_target_dir = False
        self.target: str | None = None
        self.plain: list[str] = []


def _cp_call(args: list[str]) -> _CpCall:
    call = _CpCall()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            call.plain.extend(args[i + 1 :])
            break
        if arg.startswith("--"):
            i = _cp_long(args, i, call)
        elif arg.startswith("-") and len(arg) > 1:
            i = _cp_letters(args, i, call)
        else:
            call.plain.append(arg)
        i += 1
    return call


def _cp_long(args: list[str], i: int, call: _CpCall) -> int:
    arg = args[i]
    if arg in ("--recursive", "--archive"):
        call.recursive = True
    elif arg == "--parents":
        call.parents = True
    elif arg == "--no-target-directory":
        call.no_target_dir = True
    elif arg.startswith("--target-directory="):
        call.target = arg.split("=", 1)[1]
    elif arg in _CP_VALUE_OPTIONS:
        if arg == "--target-directory" and i + 1 < len(args):
            call.target = args[i + 1]
        i += 1
    return i


def _cp_letters(args: list[str], i: int, call: _CpCall) -> int:
    letters = args[i][1:]
    for pos, letter in enumerate(letters):
        if letter in "rRa":
            call.recursive = True
        elif letter == "T":
            call.no_target_dir = True
        if letter in "tS":
            value = letters[pos + 1 :]
            if not value and i + 1 < len(args):
                value = args[i + 1]
                i += 1
            if letter == "t":
                call.target = value
            break
    return i


def _read_cp(args: list[str], cwd: str | None, reading: Reading) -> None:
    """`cp -r` records what cp made. Into a folder (several sources, `-t DIR`) that is
    `DIR/<name of each source>`, never DIR itself, which was there before and may hold
    anything. One source: the target (`new/` too, made when missing; not with `src/.` or an
    unknown name), unless cp copied into a folder that was there (`bash_outputs._copy_target`)."""
    call = _cp_call(args)
    if not call.recursive:
        return
    if call.parents:
        reading.notes.append("cp --parents not recorded: the folders it makes inside the target cannot be told "
                             "from the ones that were there")
        return
    target, sources = call.target, call.plain
    if target is None:
        if len(sources) < 2:
            return
        target, sources = sources[-1], sources[:-1]
        if call.no_target_dir or len(sources) == 1 and (target[-1:] != "/" or _copy_name(sources[0]) not in ("", ".")):
            name = "" if call.no_target_dir else _copy_name(sources[0])
            if name == "." or call.no_target_dir:  # `cp -r dir/. dest`, `-T`: dest itself, merged or new
                reading.output("copy", target, cwd, merged=True, source=sources[0])
            else:
                reading.output("copy", target, cwd, inside=name or "", source=sources[0])
            return
    if not target:
        return
    for source in dict.fromkeys(sources):  # `cp -r a a a d/` makes d/a once
        name = _copy_name(source)
        if not name or name == ".":
            reading.notes.append(f"copy of {shown(source)} into {shown(target)} not recorded: its name there "
                                 "cannot be known here")
        else:
            reading.output("copy", target.rstrip("/") + "/" + name, cwd, merged=True, source=source)


def _copy_name(source: str) -> str:
    """The name cp gives a copy of `source` inside a folder: its last part. "." when the copy
    is the folder's own content (`src/.`); "" when it cannot be known here (a glob, a brace,
    `$x`, `~`, `..`, `/`)."""
    trimmed = source.rstrip("/")
    name = os.path.basename(trimmed)
    if name == ".":
        return name
    if not name or name == ".." or any(c in name for c in "*?[{$`") or (name[0] == "~" and "/" not in trimmed):
        return ""
    return name


def shown(word: str) -> str:
    """A word as a note shows it: quoted, cut short (a word can be as long as the command)."""
    return repr(word) if len(word) <= 200 else repr(word[:200]) + f"... ({len(word)} characters)"
