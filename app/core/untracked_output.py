"""May an untracked entry of `git status` (`??`) go with its checkout as build output?

The worktree rule (seed 000) says the files in the folders a tool makes again do not count:
node_modules, .venv, __pycache__, dist, build, target, .next, coverage. A project that never
listed them in `.gitignore` (a `python3.12 -m venv .venv`, which writes no `.gitignore` in it,
an `npm install` in a repository without one) has them untracked rather than ignored, yet
they are the same output, and a release deletes them by name already: kept, such a worktree
would stay `dirty` for ever.

Only a folder git lists as wholly untracked counts (`?? web/node_modules/`: nothing in it is
tracked), or a link with such a name (the link goes, what it points at is never followed).
A new file inside a folder that holds tracked files (`?? build/gen.sh` beside a tracked
`build/Makefile`) is the project's source, not output: it keeps the checkout `dirty`. What
such a folder may hold that nothing makes again is judged as for an ignored one: a secret
(`repository_rules._secret_ignored` lists untracked and ignored files alike), a repository of
its own or another system's working copy (the walk in app/core/unique_work.py).
"""

from __future__ import annotations

import os


def untracked_output(work_tree: str, entry: str) -> bool:
    """Whether the `??` entry is a wholly untracked regenerable folder (or a link so named),
    or a wholly untracked folder whose every file lies inside regenerable ones."""
    from app.core.repository_rules import REGENERABLE, ignored_ok

    parts = [p for p in entry.rstrip("/").split("/") if p]
    if not parts or any(p in REGENERABLE for p in parts[:-1]):
        return False  # inside a folder git tracks files of: the project's own
    if not entry.endswith("/") and not os.path.islink(os.path.join(work_tree, *parts)):
        return False  # a single new file
    return ignored_ok(work_tree, entry)
