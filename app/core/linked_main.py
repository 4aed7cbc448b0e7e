"""The main checkout of a linked worktree, read from `.git` files alone (no git process).

A linked worktree's `.git` file names its admin folder, `<git dir>/worktrees/<id>`. Where the
git dir is `<main>/.git`, the main checkout is the folder above it. A clone made with
`--separate-git-dir` and a submodule keep their git dir elsewhere (`~/gd/proj.git`,
`<super>/.git/modules/lib`), and the main checkout's own `.git` is a file naming it: nothing in
the git dir leads back (`git worktree list` names the git dir itself as the main worktree). A
checkout Claude makes lies at `<main>/.claude/worktrees/<name>`: that `<main>` is the main
checkout when its `.git` names the same git dir. Taken for a project of its own, such a
checkout had every checkout a session asked for from inside it made inside it.
"""

from __future__ import annotations

import os
from pathlib import Path


def main_of_linked(top: Path, named: str) -> Path:
    """The main checkout of the checkout `top`, whose `.git` file says `gitdir: <named>`;
    `top` itself when it is no linked worktree or its main checkout cannot be told."""
    gitdir = _absolute(top, named)
    if gitdir.parent.name != "worktrees":
        return top
    common = gitdir.parent.parent
    if common.name == ".git":  # <main>/.git/worktrees/<id>
        return common.parent
    return _claude_main(top, common) or top


def _absolute(base: Path, named: str) -> Path:
    gitdir = Path(named)
    return gitdir if gitdir.is_absolute() else (base / gitdir).resolve()


def _claude_main(top: Path, common: Path) -> Path | None:
    """`<main>` of a checkout at `<main>/.claude/worktrees/<name>` when `<main>/.git` is a file
    naming the git dir `common`; else None."""
    if top.parent.name != "worktrees" or top.parent.parent.name != ".claude":
        return None
    main = top.parent.parent.parent
    dot_git = main / ".git"
    try:
        if not dot_git.is_file():  # never a FIFO read
            return None
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return None
    if not text.startswith("gitdir:"):
        return None
    named = _absolute(main, text[len("gitdir:"):].strip())
    return main if os.path.realpath(named) == os.path.realpath(common) else None
