"""Is a folder the worktree that git's entry for it describes?

Git keeps a linked worktree in two halves: the folder, whose `.git` file names an entry
(`<git dir>/worktrees/<id>`), and that entry, whose `gitdir` file names the folder back. The
entry holds what exists nowhere else: the index (staged work), HEAD (commits made on a
detached HEAD), its reflog. `git worktree list` finds the folder through the entry, the
judgement reads the entry the folder's `.git` names, and the removal (`git worktree remove`
once the folder is gone) deletes the entry that names the folder. When the two disagree (a
folder replaced by a copy of another worktree, a `.git` file copied from one), the entry
that is deleted is not the one that was judged: a commit only its HEAD holds, or its staged
files, would go unseen. Such a folder is not the worktree git lists: `not_a_worktree`.
"""

from __future__ import annotations

import os


def names_its_entry(folder: str) -> bool:
    """Whether `folder`'s `.git` file names a worktree entry whose `gitdir` names this same
    `.git` back (each pointer as git writes it: absolute, or relative to the file's folder).
    False when either cannot be read: unsure, keep."""
    from app.core.repository_rules import read_pointer
    from app.core.unique_work import GitFailed

    dot_git = os.path.join(folder, ".git")
    try:
        entry = os.path.join(folder, read_pointer(dot_git, "gitdir:"))
        back = os.path.join(entry, read_pointer(os.path.join(entry, "gitdir")))
    except GitFailed:
        return False
    return os.path.realpath(back) == os.path.realpath(dot_git)
