"""`gh repo clone REPO [DIR] [-- GITFLAGS]`: the folder GitHub's CLI clones into.

It is `git clone` under another name, so what it makes is a copy like any other and is
recorded as one (app/core/bash_commands.py); left out, a throwaway clone in the temp folder
would be kept for ever. gh hands git the folder and the flags after `--` as they stand,
after the URL, so a plain word among those flags is the folder (`-- --depth 1 DIR`); without
one git names it after the repository (`OWNER/REPO`, `REPO` or a URL), `REPO.git` for a bare
or mirror clone.

Loaded with the command reader, only for commands holding a trigger word.
"""

from __future__ import annotations

from app.core.shell_words import clone_dir_name

#: gh's own options of `repo clone` that take the next word as their value.
_VALUE_OPTIONS = frozenset({"-u", "--upstream-remote-name"})


def gh_clone_target(args: list[str]) -> str | None:
    """The folder `gh ARGS` clones into, as written (relative to the cwd), or None when ARGS
    is no `gh repo clone` or the folder cannot be known here."""
    if args[:2] != ["repo", "clone"]:
        return None
    plain: list[str] = []
    git_flags: list[str] = []
    i = 2
    while i < len(args):
        arg = args[i]
        if arg == "--":
            git_flags = args[i + 1:]
            break
        if arg in _VALUE_OPTIONS:
            i += 1
        elif not arg.startswith("-"):
            plain.append(arg)
        i += 1
    if not plain:
        return None
    if len(plain) >= 2:
        return plain[1]
    from app.core.bash_commands import _CLONE_VALUE_OPTIONS, _positionals

    named = _positionals(git_flags, _CLONE_VALUE_OPTIONS)  # git reads them after the URL: a word is the folder
    if named:
        return named[0]
    return clone_dir_name(plain[0], bare=any(f in ("--bare", "--mirror") for f in git_flags))
