"""Is a copy still what its source holds? The comparison behind `gc_records.still_at_source`.

A `cp -r ~/proj "$TMPDIR/proj-build"` looks like work to the repository rules: the project's
git-ignored `.env` came with it, its commits may be on no remote. While the source still holds
every entry of the copy unchanged, removing the copy loses nothing. The usual use of such a copy
is a build (`cd "$TMPDIR/proj-build" && npm ci && npm run build`), and what a build adds is a
regenerable folder (`node_modules/`, `dist/`, `build/`, `target/`, CONTRACT "Regenerable
folders"): made again by the same command, no work of anyone's. So a regenerable folder of the
copy is passed over in the comparison, unless it holds what no build makes: a repository (a
package's checkout with commits of its own) or a secret-looking file outside installed packages
(a key a script wrote into `build/`). Then, or past the bounds, or on any error: not the same.
"""

from __future__ import annotations

import os
import stat

#: How much of a copy is compared with its source before the answer is "not the same" (kept).
SAME_MAX_ENTRIES = 50_000
SAME_MAX_BYTES = 256 << 20


def same_tree(copy: str, source: str) -> bool:
    """Every entry below `copy` is at the same place below `source`, the same (type, bytes, link
    target), but for the plain regenerable folders of the copy (see the module); the source may
    hold more. False past the bounds or on any error."""
    budget = [SAME_MAX_ENTRIES, SAME_MAX_BYTES]
    pending = [""]
    try:
        if not stat.S_ISDIR(os.lstat(source).st_mode):
            return False
        while pending:
            rel = pending.pop()
            with os.scandir(os.path.join(copy, rel)) as listing:
                entries = list(listing)
            for entry in entries:
                budget[0] -= 1
                name = os.path.join(rel, entry.name)
                folder = entry.is_dir(follow_symlinks=False)
                if folder and not os.path.lexists(os.path.join(source, name)) and _passed_over(entry.path, budget):
                    continue  # a build added it: the source needs none there (one it has is compared)
                if budget[0] < 0 or not _same_entry(entry, os.path.join(source, name), budget):
                    return False
                if folder:
                    pending.append(name)
    except (OSError, ValueError):
        return False
    return True


def _same_entry(entry: os.DirEntry[str], theirs: str, budget: list[int]) -> bool:
    """One entry of the copy against the source's at the same place. Raises OSError when the
    source has none."""
    import filecmp

    mine = entry.stat(follow_symlinks=False)
    other = os.lstat(theirs)
    if stat.S_IFMT(mine.st_mode) != stat.S_IFMT(other.st_mode):
        return False
    if stat.S_ISDIR(mine.st_mode):
        return True
    if stat.S_ISLNK(mine.st_mode):
        return os.readlink(entry.path) == os.readlink(theirs)
    if not stat.S_ISREG(mine.st_mode):
        return False  # a socket, a FIFO: not a copy's plain content
    budget[1] -= mine.st_size
    return budget[1] >= 0 and mine.st_size == other.st_size and filecmp.cmp(entry.path, theirs, shallow=False)


def plain_regenerable(folder: str) -> bool:
    """Whether `folder` is a regenerable folder that holds only what a build makes (see the
    module): no loss, wherever it lies, whatever its birth time (`source_emptied`)."""
    return not os.path.islink(folder) and os.path.isdir(folder) and _passed_over(folder, [SAME_MAX_ENTRIES])


def _passed_over(path: str, budget: list[int]) -> bool:
    """A regenerable folder (by name) holding no repository and no secret-looking file outside
    installed packages, every folder in it listed (its entries count against `budget`)."""
    from app.core.repository_rules import REGENERABLE
    from app.core.secret_files import installed, looks_secret

    name = os.path.basename(path)
    if name not in REGENERABLE:
        return False
    pending = [(path, [name])]
    while pending:
        folder, parts = pending.pop()
        try:
            with os.scandir(folder) as listing:
                inner = list(listing)
        except OSError:
            return False
        budget[0] -= len(inner)
        if budget[0] < 0 or any(e.name == ".git" or e.name == "objects" and _bare(folder) for e in inner):
            return False
        for e in inner:
            if e.is_dir(follow_symlinks=False):
                pending.append((e.path, [*parts, e.name]))
            elif looks_secret(e.name) and not installed([*parts, e.name]):
                return False
    return True


def _bare(folder: str) -> bool:
    return all(os.path.lexists(os.path.join(folder, mark)) for mark in ("HEAD", "objects", "refs"))
