"""The output recorder: what a session makes outside the project, noted when it makes it.

PostToolUse runs this after every Bash and Write call, so it is stdlib only and does no I/O
at all unless a command made something: a temp folder (`mktemp`), a worktree (`git worktree
add`), a copy (`git clone`, `cp -r/-R/-a`), a config folder (`CLAUDE_CONFIG_DIR=`) or a
scratch file (a Write into the user's temp folder). Each output becomes one record in
`CLAUDETTO_HOME/gc/<session>.json`, once per path; the output GC (app/core/gc.py) sweeps them.

The command is read, never run: chains (`&&`, `||`, `;`, `|`, `&`, newlines, subshells) are
split with quotes, `$(...)`, backticks and heredocs respected, then each simple command is
split with shlex. A command that cannot be read records nothing and the log says why. A path
that starts with `~` or `$` (or holds a `$` or a backtick anywhere) cannot be expanded here
and is not recorded; relative paths are made absolute against the cwd, following literal
`cd`s of the chain.
"""

from __future__ import annotations

import os
import time

from app.core import paths
from app.core.log import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

    from app.core.gc_records import OutputRecord as OutputRecord
    from app.core.gc_records import read_records as read_records
    from app.core.gc_records import records_files as records_files

KINDS = ("temp", "worktree", "copy", "config", "scratch")

#: A command none of these words appear in makes no output: it costs no parsing, no import.
_TRIGGERS = ("mktemp", "worktree", "clone", "cp", "CLAUDE_CONFIG_DIR")

#: The stand-in for a command substitution: it starts with `$`, so it is never recorded.
_SUBST = "$__subst__"


class _Unreadable(ValueError):
    """The command cannot be read: it records nothing."""


# --- splitting a command line into simple commands ---------------------------------------


class _Segment:
    """One simple command as text, the heredoc bodies it reads (data unless it is a shell),
    and its subshell depth (a `cd` inside ( ) or $( ) does not outlive it)."""

    __slots__ = ("text", "heredoc", "depth")

    def __init__(self, text: str, heredoc: list[list[str]], depth: int = 0) -> None:
        self.text = text
        self.heredoc = heredoc
        self.depth = depth


def _skip_single(text: str, i: int) -> int:
    end = text.find("'", i + 1)
    if end < 0:
        raise _Unreadable("unbalanced single quote")
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
    raise _Unreadable("unbalanced backtick")


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
    raise _Unreadable("unbalanced $( )")


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
                out.append(text[start:j] + _SUBST)
            start = j = end
            continue
        j += 1
    raise _Unreadable("unbalanced double quote")


class _Patterns:
    """The regular expressions of the parser, compiled on first use (`re` costs an import)."""

    def __init__(self) -> None:
        import re

        self.heredoc = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([^\s;&|<>()]+))")
        self.redirect = re.compile(r"^(\d*|&)(>>?|<|>&|<&|>\||&>>?)(.*)$")
        self.assignment = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


_compiled: list[_Patterns] = []


def _rx() -> _Patterns:
    if not _compiled:
        _compiled.append(_Patterns())
    return _compiled[0]


def split_commands(command: str, base_depth: int = 0) -> list[_Segment]:
    """The simple commands of a command line, in the order they run: the contents of a
    command substitution come before the command that holds it."""
    segments: list[_Segment] = []
    subs: list[str] = []
    cur: list[str] = []
    pending: list[tuple[str, bool, list[str]]] = []  # (delimiter, strip tabs, body sink)
    heredocs: list[list[str]] = []
    depth = 0
    text = command
    n = len(text)
    i = 0

    def close() -> None:
        nonlocal cur, heredocs
        segment = "".join(cur).strip()
        if segment:
            segments.append(_Segment(segment, heredocs, base_depth + depth))
        cur = []
        heredocs = []

    def inner_substitutions() -> None:
        for sub in subs:
            segments.extend(split_commands(sub, base_depth + depth + 1))
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
            cur.append(_SUBST)
            i = end
            inner_substitutions()
        elif c == "#" and (not cur or cur[-1][-1:].isspace()):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            match = _rx().heredoc.match(text, i)
            if match is None:
                raise _Unreadable("a heredoc without a delimiter")
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
            depth += 1
            i += 1
        elif c == ")" and depth > 0:
            close()
            depth -= 1
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


class _Found:
    """An output as written in the command (`raw`) and the folder it is relative to
    (`base`; None when unknown, after `cd "$d"`)."""

    __slots__ = ("kind", "raw", "base")

    def __init__(self, kind: str, raw: str, base: str | None) -> None:
        self.kind = kind
        self.raw = raw
        self.base = base


def _drop_redirections(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        match = _rx().redirect.match(word)
        if match:
            skip_next = match.group(3) == "" and not match.group(2).endswith("&")
            continue
        kept.append(word)
    return kept


def _config_value(word: str) -> str | None:
    match = _rx().assignment.match(word)
    if match and match.group(1) == "CLAUDE_CONFIG_DIR" and match.group(2):
        return match.group(2)
    return None


def _read_simple(words: list[str], cwd: str | None, found: list[_Found],
                 templates: list[tuple[re.Pattern[str], str]]) -> str | None:
    """Note the outputs of one simple command; returns the cwd after it (a `cd` changes it)."""
    words = _drop_redirections(words)
    while words and words[0] in _KEYWORDS:
        words = words[1:]
    while words and _rx().assignment.match(words[0]):
        value = _config_value(words[0])
        if value is not None:
            found.append(_Found("config", value, cwd))
        words = words[1:]
    while words:
        name = os.path.basename(words[0])
        if name == "env":
            words = words[1:]
            while words and (words[0].startswith("-") or _rx().assignment.match(words[0])):
                value = _config_value(words[0])
                if value is not None:
                    found.append(_Found("config", value, cwd))
                words = words[2:] if words[0] in ("-u", "-C", "--unset", "--chdir") else words[1:]
        elif name in _WRAPPERS:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-u", "-n", "-g") else words[1:]
        elif name == "timeout":  # timeout [options] DURATION COMMAND...
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-s", "-k", "--signal", "--kill-after") else words[1:]
            words = words[1:]
        else:
            break
    if not words:
        return cwd
    name = os.path.basename(words[0])
    args = words[1:]
    if name in _DECLARERS:
        for word in args:
            value = _config_value(word)
            if value is not None:
                found.append(_Found("config", value, cwd))
    elif name in ("cd", "pushd"):
        targets = [a for a in args if not a.startswith("-") or a == "-"]
        return _joined(cwd, targets[0]) if targets else None
    elif name == "git":
        _read_git(args, cwd, found)
    elif name == "cp":
        _read_cp(args, cwd, found)
    elif name == "mktemp":
        templates.append(_mktemp_pattern(args))
    return cwd


def _joined(base: str | None, raw: str) -> str | None:
    """`raw` made absolute against `base`; None when it cannot be known here."""
    if not raw or raw[0] in "~$" or "$" in raw or "`" in raw or raw == "-":
        return None
    if os.path.isabs(raw):
        return os.path.normpath(raw)
    if base is None:
        return None
    return os.path.normpath(os.path.join(base, raw))


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


def _read_git(args: list[str], cwd: str | None, found: list[_Found]) -> None:
    base = cwd
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            base = _joined(base, args[i + 1]) if args[i + 1] else base
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
            found.append(_Found("worktree", targets[0], base))
    elif sub == "clone":
        targets = _positionals(rest, _CLONE_VALUE_OPTIONS)
        bare = any(a in ("--bare", "--mirror") for a in rest)
        if len(targets) >= 2:
            found.append(_Found("copy", targets[1], base))
        elif targets:
            name = clone_dir_name(targets[0], bare=bare)
            if name:
                found.append(_Found("copy", name, base))


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


def _read_cp(args: list[str], cwd: str | None, found: list[_Found]) -> None:
    recursive = False
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
    if target is None and len(plain) >= 2:
        target = plain[-1]
    if target:
        found.append(_Found("copy", target, cwd))


def _mktemp_pattern(args: list[str]) -> tuple[re.Pattern[str], str]:
    """A pattern for the base name of what this `mktemp` prints."""
    import re
    template = None
    suffix = ""
    bsd_prefix = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--suffix="):
            suffix = arg.split("=", 1)[1]
        elif arg == "-p":
            i += 1  # -p DIR
        elif arg == "-t":
            bsd_prefix = True
        elif arg.startswith("-"):
            pass
        elif template is None:
            template = arg
        i += 1
    base = os.path.basename(template) if template else "tmp.XXXXXXXXXX"
    match = re.search(r"X{3,}(?!.*X{3,})", base)
    if match:
        pattern = re.escape(base[: match.start()]) + f"[A-Za-z0-9]{{{len(match.group(0))}}}" + re.escape(base[match.end():] + suffix)
    elif bsd_prefix:  # BSD `mktemp -t prefix`: prefix.XXXXXXXX
        pattern = re.escape(base) + r"\.[A-Za-z0-9]+"
    else:
        pattern = re.escape(base + suffix)
    return re.compile(pattern), base


# --- the public face ----------------------------------------------------------------------


def read_command(command: str, cwd: str | None, stdout: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The outputs of one Bash call and notes on what was left out (for the log).

    `cwd` None: the folder is unknown, so only absolute paths can be recorded."""
    notes: list[str] = []
    if not any(word in command for word in _TRIGGERS):
        return [], notes
    import shlex

    try:
        segments = split_commands(command)
        parsed: list[tuple[list[str], list[str], int]] = []
        for segment in segments:
            bodies = ["\n".join(b) for b in segment.heredoc]
            parsed.append((shlex.split(segment.text, posix=True), bodies, segment.depth))
    except ValueError as exc:  # _Unreadable and shlex's "No closing quotation"
        return [], [f"cannot read the command ({exc}); nothing recorded"]
    found: list[_Found] = []
    templates: list[tuple[re.Pattern[str], str]] = []
    here = cwd
    saved: list[str | None] = []  # the cwd outside each subshell we are in
    for words, bodies, depth in parsed:
        while len(saved) < depth:
            saved.append(here)
        while len(saved) > depth:
            here = saved.pop()
        shell = bool(words) and os.path.basename(words[0]) in _SHELLS and "-c" not in words
        before = here
        here = _read_simple(words, here, found, templates)
        if shell:  # `bash <<EOF` runs its heredoc; any other heredoc is data
            for body in bodies:
                inner, inner_notes = read_command(body, before, "")
                found.extend(_Found(kind, path, None) for kind, path in inner)
                notes.extend(inner_notes)
    outputs: list[tuple[str, str]] = []
    for item in found:
        path = _joined(item.base, item.raw)
        if path is None:
            notes.append(f"{item.kind} {item.raw!r} not recorded: it cannot be expanded here")
        else:
            outputs.append((item.kind, path))
    if templates and stdout:
        outputs.extend(("temp", p) for p in _printed_temps(stdout, templates, cwd))
    return _unique(outputs), notes


def _printed_temps(stdout: str, templates: list[tuple[re.Pattern[str], str]], cwd: str | None) -> list[str]:
    found = []
    for line in stdout.splitlines():
        for word in {line.strip(), *line.split()}:
            if not word or "\x00" in word:
                continue
            name = os.path.basename(word.rstrip("/"))
            if any(pattern.fullmatch(name) for pattern, _ in templates):
                path = _joined(cwd, word)
                if path:
                    found.append(path)
    return found


def _unique(outputs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    result = []
    for kind, path in outputs:
        if path not in seen:
            seen.add(path)
            result.append((kind, path))
    return result


def outputs_of_command(command: str, cwd: str, stdout: str) -> list[tuple[str, str]]:
    """(kind, absolute path) of each output a Bash command made; pure, no I/O."""
    return read_command(command, cwd, stdout)[0]


def scratch_of_write(file_path: str) -> str | None:
    """The path of a Write's file when it lies inside the user's temp folder, else None."""
    if not file_path.startswith("/"):
        return None
    path = os.path.normpath(file_path)
    tmp = os.fspath(paths.user_tmp())
    inside = tmp.rstrip("/") + "/"
    if path.startswith(inside) or os.path.realpath(path).startswith(inside):
        return path
    return None


def _stdout_of(response: Any) -> str:
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        out = response.get("stdout")
        return out if isinstance(out, str) else ""
    return ""


def record_outputs(payload: dict[str, Any]) -> None:
    """PostToolUse on Bash and Write: record what the call made outside the project."""
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd.startswith("/"):
        cwd = None
    outputs: list[tuple[str, str]] = []
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str) or not command.strip():
            return
        outputs, notes = read_command(command, cwd, _stdout_of(payload.get("tool_response")))
        for note in notes:
            log(f"gc recorder: {note}")
    elif tool == "Write":
        file_path = tool_input.get("file_path")
        path = scratch_of_write(file_path) if isinstance(file_path, str) else None
        if path:
            outputs = [("scratch", path)]
    if outputs:
        _store(payload, outputs, cwd or "")


def _store(payload: dict[str, Any], outputs: list[tuple[str, str]], cwd: str) -> None:
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        log(f"gc recorder: no session_id, {len(outputs)} output(s) not recorded: {outputs[:3]}")
        return
    now = time.time()

    def change(data: Any) -> Any:
        data = normal_records(data, session)
        known = {r.get("path") for r in data["records"]}
        for kind, path in outputs:
            if path not in known:
                known.add(path)
                data["records"].append({"path": path, "kind": kind, "session": session, "time": now, "cwd": cwd})
        return data

    from app.core.state import update_json

    update_json(paths.gc_records_file(session), change, lambda: {"session": session, "records": []})


def normal_records(data: Any, session: str) -> dict[str, Any]:
    """A records file as read, made the expected shape without losing any good record."""
    if isinstance(data, list):
        data = {"session": session, "records": data}
    if not isinstance(data, dict):
        data = {"session": session, "records": []}
    records = data.get("records")
    data["records"] = [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
    return data


def __getattr__(name: str) -> Any:
    """The read side (OutputRecord, read_records, records_files) lives in app.core.gc_records,
    off the hot path: it is loaded only when one of them is asked for."""
    if name in ("OutputRecord", "read_records", "records_files"):
        from app.core import gc_records

        return getattr(gc_records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
