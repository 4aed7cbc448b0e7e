"""THE containment rule of every removal: may this path go, under that root?

`containment(path, root)` is what `removal.remove` checks first, and again fd-relative at
the moment of removal: a path may go only when it is strictly inside its root after every
parent is resolved, is not itself a symlink, and its real path stays inside the root's.
"Inside a folder" itself is one rule for the whole program: `paths.inside`.
"""

from __future__ import annotations

import os
import stat

from app.core import paths
from app.core.paths import strictly_inside

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.core.scanner import PathLike


def resolve_parents(path: PathLike) -> str:
    """`path` with every parent resolved through the file system (symlinks and `..` alike)
    and the last component kept as it is: the one spelling of a path that two records, a
    live folder and a root can be compared in."""
    from app.core.scanner import text_path

    return paths.resolve_parents(text_path(path))


def no_root(root_real: str) -> bool:
    """Whether a real path is too wide to be any removal's root: `/` or the home (each holds
    every project of the user). The sweeps refuse such roots on their own; this keeps a caller
    that passes one from removing anything under it. A folder above the home may be a root (a
    TMPDIR set above it, as a sandbox does), but never for the home or anything in it
    (`users_home`)."""
    return root_real == "/" or root_real == os.path.realpath(paths.home_str())


def users_home(target: str, root_real: str, places: tuple[str, ...] | None = None) -> bool:
    """THE rule of a root above the user's own places: whether `target` (parents resolved) is,
    holds or lies in the home (or one of `places`, real paths) that `root_real` holds."""
    for place in (os.path.realpath(paths.home_str()),) if places is None else places:
        if strictly_inside(place, root_real) and (paths.inside(target, place) or paths.inside(place, target)):
            return True
    return False


def containment(path: PathLike, root: PathLike) -> str | None:
    """THE containment rule: None when `path` may be removed under `root`, else why not.

    None: `path` is strictly inside `root` after resolving every parent, is not itself a
    symlink, and its real path stays inside realpath(root). Reasons: "outside_root" (not
    strictly inside, the root itself, or a root that is none: `no_root`), "escapes_root" (a parent resolves outside the
    root), "missing" (nothing there), "symlink" (the path itself is a symlink).
    """
    from app.core.scanner import text_path

    try:
        text, root_text = text_path(path), text_path(root)
        if not root_text.startswith("/") or not text.startswith("/"):
            # "" or a relative root or path names a place below wherever the program runs (a
            # hook runs in the user's project): no root at all, nothing of a sweep's
            return "outside_root"
        root_real = os.path.realpath(root_text)
        if no_root(root_real):
            return "outside_root"
        target = resolve_parents(text)
        if not strictly_inside(target, root_real):
            lexical = os.path.abspath(text)
            if (strictly_inside(lexical, os.path.abspath(root_text))
                    or strictly_inside(lexical, root_real)):
                return "escapes_root"
            return "outside_root"
        if users_home(target, root_real):
            return "outside_root"
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except (OSError, ValueError):
        return "outside_root"
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return None
