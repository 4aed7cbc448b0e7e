"""Where what a command copies or moves came from, beyond the sources `cp`, `mv` and `rsync`
name: an archive unpacked (`tar -x`, `unzip`) and a move whose sources are not written out.

The output recorder stores each source with the outputs of the call (`evidence.sources`), so
an output whose source is gone is kept: it holds the only copy left. Two ordinary ways to move
something into a temp folder escape the `cp`/`mv` reader. Unpacking an archive and removing it
(`d=$(mktemp -d) && tar -xzf ~/thesis.tgz -C "$d" && rm ~/thesis.tgz`) moves its content as
surely as `mv`; the archive is its source. And a `mv` that is handed its sources by another
command (`find ~/data -name '*.csv' -exec mv {} "$d"/ \\;`, `... | xargs mv -t "$d"`) names
none: across file systems the moved files are born anew, and nothing at the sweep shows they
came from elsewhere, so the call's outputs are marked `moved_in` (kept for good: when unsure,
keep).

Loaded with the command reader, only for commands holding a trigger word.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # `typing` costs an import on a path that runs for many Bash calls
if TYPE_CHECKING:
    from collections.abc import Container

#: The names of tar, and the short options of GNU tar that take a value.
_TARS = frozenset({"tar", "bsdtar", "gtar"})
_TAR_VALUES = frozenset("fCbTXKNgLVFHI")
_TAR_LONG = {"--file": "f", "--directory": "C"}


def archive_copies(words: list[str], cwd: str | None) -> list[tuple[list[str], str, bool]]:
    """What an archive command of the simple command copies, into which path, and whether it
    removes what it copied: `tar -x`/`unzip` copy their archive into their folder (not one the
    hook cannot name, which lies in a folder of the call's own: `cd "$d" && tar -xzf x.tgz`);
    `tar -c`/`zip` copy what they pack into the archive (`tar -czf "$d/old.tgz" ~/old && rm -rf
    ~/old` leaves the only copy in the temp folder, as `cp -r` and `rm` would), and `tar
    --remove-files`/`zip -m` remove it, a move by themselves. Sources as written, relative to
    `cwd` (a `tar -C DIR` joined in front)."""
    from app.core.bash_outputs import home_spelled
    from app.core.shell_words import absolute_path

    archive = unpacked(words)
    if archive is not None and (absolute_path(cwd, archive[0]) or home_spelled(archive[0])[:5] == "$HOME"):
        return [([archive[0]], archive[1], False)]
    packing = packed(words)
    return [packing] if packing is not None else []


#: GNU tar's long options that take the next word as their value when written without `=`.
_TAR_LONG_VALUES = frozenset({"--file", "--directory", "--exclude", "--exclude-from", "--files-from", "--transform",
                              "--xform", "--owner", "--group", "--mode", "--mtime", "--newer", "--label", "--format",
                              "--use-compress-program", "--blocking-factor", "--exclude-tag", "--checkpoint-action"})


def packed(words: list[str]) -> tuple[list[str], str, bool] | None:
    """(what it packs, the archive, whether it removes what it packed) of a `tar -c`/`-r`/`-u`
    or a `zip` in the simple command, as written; None for another command, or one whose
    archive or inputs it does not name (`-f -`, `-T list`)."""
    at = next((i for i, word in enumerate(words) if os.path.basename(word) in (*_TARS, "zip")), None)
    if at is None:
        return None
    args = words[at + 1:]
    found = _zip_inputs(args) if os.path.basename(words[at]) == "zip" else _tar_inputs(args)
    return found if found is not None and found[0] and found[1] not in ("", "-") else None


def _tar_inputs(args: list[str]) -> tuple[list[str], str, bool] | None:
    inputs: list[str] = []
    base, archive, packs = "", "", False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            inputs += [os.path.join(base, word) for word in args[i + 1:]]
            break
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            packs = packs or name in ("--create", "--append", "--update")
            if name in _TAR_LONG_VALUES and not eq:
                i += 1
                value = args[i] if i < len(args) else ""
            archive, base = (value, base) if name == "--file" else (archive, os.path.join(base, value)) if (
                name == "--directory") else (archive, base)
        elif arg.startswith("-") or i == 0:  # the first word is options even without a dash
            packs = packs or any(letter in "cru" for letter in arg.lstrip("-"))
            values: dict[str, str] = {}
            i = _tar_letters(args, i, values)
            archive, base = values.get("f", archive), os.path.join(base, values["C"]) if "C" in values else base
        else:
            inputs.append(os.path.join(base, arg))
        i += 1
    return (inputs, archive, "--remove-files" in args) if packs else None


def _zip_inputs(args: list[str]) -> tuple[list[str], str, bool] | None:
    """`zip [options] ARCHIVE NAMES [-x PATTERNS]`: the first plain word, then the names; `-m` moves."""
    plain = [word for k, word in enumerate(args) if not word.startswith("-")
             and not any(before in ("-x", "-i", "-b", "-t", "-n", "-P", "-O") for before in args[max(k - 1, 0):k])]
    removes = any(arg.startswith("-") and not arg.startswith("--") and "m" in arg for arg in args)
    return (plain[1:], plain[0], removes) if len(plain) > 1 else None


def unpacked(words: list[str]) -> tuple[str, str] | None:
    """(archive, folder it is unpacked into, "." for the cwd) of a `tar -x`/`unzip` in the
    simple command, as written; None for another command or an archive read from stdin."""
    at = next((i for i, word in enumerate(words) if os.path.basename(word) in _TARS or
               os.path.basename(word) == "unzip"), None)
    if at is None:
        return None
    args = words[at + 1:]
    found = _unzip(args) if os.path.basename(words[at]) == "unzip" else _tar(args)
    if found is None or found[0] in ("", "-"):
        return None
    return found


def _tar(args: list[str]) -> tuple[str, str] | None:
    """GNU tar's reading of its arguments: `-xzf A`, `xzf A` (the old style), `--file=A`,
    `-C DIR`, `--directory=DIR`; None unless it extracts a named archive."""
    values: dict[str, str] = {}
    extracts = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--"):
            extracts = extracts or arg.partition("=")[0] in ("--extract", "--get")
            i = _tar_long(args, i, values)
        elif arg.startswith("-") or i == 0:  # the first word is options even without a dash
            extracts = extracts or "x" in arg.lstrip("-")
            i = _tar_letters(args, i, values)
        i += 1
    return (values["f"], values.get("C") or ".") if extracts and "f" in values else None


def _tar_long(args: list[str], i: int, values: dict[str, str]) -> int:
    """`--file=A`, `--directory DIR` at `i` into `values`; the index of the last word read."""
    name, eq, value = args[i].partition("=")
    if name in _TAR_LONG:
        if not eq:
            i += 1
            value = args[i] if i < len(args) else ""
        values[_TAR_LONG[name]] = value
    return i


def _tar_letters(args: list[str], i: int, values: dict[str, str]) -> int:
    """A bundle of short options at `i` (`-xzf`, `-fA`, old-style `xzf`): each letter that takes
    a value takes the rest of a dashed bundle, else the next word in turn."""
    arg = args[i]
    letters = arg.lstrip("-")
    for pos, letter in enumerate(letters):
        if letter not in _TAR_VALUES:
            continue
        glued = letters[pos + 1:] if arg.startswith("-") else ""
        if glued:
            values[letter] = glued
            break
        i += 1
        values[letter] = args[i] if i < len(args) else ""
    return i


def _unzip(args: list[str]) -> tuple[str, str] | None:
    """`unzip [options] ARCHIVE [names] [-x names] [-d DIR]`: the first plain word, and `-d`."""
    archive: str | None = None
    target = "."
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-d") or arg == "-P":
            glued = arg[2:]
            if not glued:
                i += 1
            value = glued or (args[i] if i < len(args) else "")
            target = value if arg.startswith("-d") else target
        elif not arg.startswith("-") and archive is None:
            archive = arg
        i += 1
    return None if archive is None else (archive, target)


def unnamed_move(sources: list[str], own: Container[str]) -> bool:
    """Whether a move (`mv`, `rsync --remove-source-files`) moves what the hook cannot name:
    no source written at all (`xargs mv -t DIR`), a `{}` of `find -exec`/`xargs -I`, a
    substitution or a variable other than the home and those this command bound to its own
    mktemp folders (`own`: `"$d"/a.txt` lies in the call's own output)."""
    if not sources:
        return True
    for word in sources:
        if "{}" in word or "`" in word:
            return True
        if "$" in word and not word.startswith(("$HOME", "${HOME}")):
            name = word.split("$", 1)[1].lstrip("{")
            name = name[:next((k for k, c in enumerate(name) if not (c.isalnum() or c == "_")), len(name))]
            if word.count("$") > 1 or name not in own:
                return True
    return False
