"""Repositories of other version control systems: Mercurial, Subversion, Bazaar, Jujutsu,
darcs, Fossil, Pijul, Sapling.

The scanner's one walk notes a folder holding such a marker beside the git repositories it
finds (`TreeSize.repos`), so every removal that judges git work (an output, a session folder,
a worktree) keeps the folder holding one `dirty` (`unique_work`): its commits and edits are
seen by no git command, and nothing here can tell whether they are anywhere else.

Git's rules see only git: a `hg clone` or `jj git clone --no-colocate` (or a `svn checkout`
with local edits) inside `build/` holds commits and edits no git command lists, and none of
their tools need be installed here to tell. A release keeps the scratch folder holding one,
as it keeps one holding a git repository (`dirty`); its files are that repository's, never
this checkout's scratch. Inside an installed package (below `site-packages`, or a package
folder of `node_modules`) a marker is a published leftover (old packages shipped `.svn`
folders), not the user's repository.
"""

from __future__ import annotations

import os

#: The folder (or file) each system keeps at a working copy's top.
MARKS = frozenset({".hg", ".svn", ".bzr", ".jj", "_darcs", ".fslckout", "_FOSSIL_", ".pijul", ".sl"})
#: Those that are files (Fossil's checkout database), and those that are folders.
FILE_MARKS = frozenset({".fslckout", "_FOSSIL_"})
DIR_MARKS = MARKS - FILE_MARKS


def holds_mark(folder: str) -> bool:
    """Whether `folder` is itself the top of another system's working copy."""
    return any(os.path.lexists(os.path.join(folder, mark)) for mark in MARKS)


def mark_among(names: list[str], parts: list[str]) -> str | None:
    """The first of `names` (the entries of the folder `parts` names, relative to a scratch
    path) that marks another system's working copy, outside installed packages."""
    from app.core.secret_files import installed

    found = next((name for name in names if name in MARKS), None)
    return None if found is None or installed([*parts, found]) else found


def working_copy_in(folder: str, spelled: str, top: str) -> bool:
    """Whether `folder` is another system's working copy that is no installed package's
    leftover. `spelled`: the same folder named inside `top`, the tree about to go as it was
    named before any move aside (its own name counts: `node_modules/<package>/.svn`)."""
    from app.core.secret_files import installed

    if not holds_mark(folder):
        return False
    parts = os.path.relpath(spelled, os.path.dirname(top.rstrip("/")) or "/").split(os.sep)
    return not installed([*parts, ".hg"])
