"""A git-ignored file of a linked worktree that is a copy of the main checkout's file.

Claude's own worktree creation copies the git-ignored files `.worktreeinclude` names (a
`.env`, local settings) into every checkout. Such a copy, changed by nobody since, holds
nothing the main checkout does not: it must not keep every checkout for ever as unique work.
Changed in the checkout, it is unique again, and kept.
"""

from __future__ import annotations

import os
import stat

#: a copy of the main checkout's file is compared only up to this size (a `.env`, a config)
MAIN_COPY_MAX = 1 << 20


def copy_of_main(git_dir: str, work_tree: str, entry: str) -> bool:
    """Whether the git-ignored file `entry` of a linked worktree is byte for byte the main
    checkout's file at the same path: what `.worktreeinclude` copied into it (a `.env`),
    changed by nobody since. It holds nothing the main checkout does not, so it keeps nothing.
    Only a regular file of at most MAIN_COPY_MAX in a worktree of a repository of the usual
    layout (`<main>/.git/worktrees/<name>`), never the main checkout's own file."""
    from app.core.git import common_dir

    common = os.path.normpath(common_dir(git_dir))  # itself for a checkout of its own: then no main
    main = os.path.dirname(common)
    if os.path.basename(common) != ".git" or os.path.realpath(main) == os.path.realpath(work_tree):
        return False
    texts = []
    for path in (os.path.join(work_tree, entry), os.path.join(main, entry)):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAIN_COPY_MAX:
                return False  # a folder, a FIFO, a device, a big file: judged as before
            data = b"".join(iter(lambda: os.read(fd, 1 << 16), b""))  # noqa: B023 - fd lives for the loop
        except OSError:
            return False
        finally:
            os.close(fd)
        texts.append(((st.st_dev, st.st_ino), data))
    return texts[0][0] != texts[1][0] and texts[0][1] == texts[1][1]
