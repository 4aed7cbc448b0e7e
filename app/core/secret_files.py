"""THE one list of secret-looking file names, and the search for them where git cannot look.

A file matching SECRET_PATTERNS (a private key, an `.env`, credentials) is never regenerable:
a folder holding one is kept (`dirty`). Inside a repository git finds them
(app/core/unique_work.py asks `ls-files`); `first_secret` finds them in the rest of a
folder: a key generated in a temp folder is as lost as an uncommitted edit once it goes.
"""

from __future__ import annotations

import os
import stat

# Files that hold secrets or local configuration: never regenerable, wherever they lie.
SECRET_PATTERNS = (".env*", "*.pem", "*.key", "id_*", "credentials*", ".credentials*", "*.local.*")

# Folders that package managers fill from a registry: a CA bundle (`certifi/cacert.pem`, in
# every virtualenv that has pip) or a test key shipped inside a package is no user's secret.
INSTALLED = frozenset({"site-packages", "dist-packages"})

_BARE_MARKS = ("HEAD", "objects", "refs")


def _shapes() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """SECRET_PATTERNS sorted by shape (`X*`, `*X`, `*X*`, any other), so that a name is
    matched by a few string methods: a walk asks about every name of a tree."""
    prefixes, suffixes, infixes, others = [], [], [], []
    for pattern in SECRET_PATTERNS:
        core = pattern.strip("*")
        if "*" in core or not core:
            others.append(pattern)
        elif pattern == f"{core}*":
            prefixes.append(core)
        elif pattern == f"*{core}":
            suffixes.append(core)
        elif pattern == f"*{core}*":
            infixes.append(core)
        else:
            others.append(pattern)
    return tuple(prefixes), tuple(suffixes), tuple(infixes), tuple(others)


_PREFIXES, _SUFFIXES, _INFIXES, _OTHERS = _shapes()


def looks_secret(name: str) -> bool:
    """Whether a file name matches SECRET_PATTERNS (case-insensitive; `*` is any text)."""
    lowered = name.lower()
    return (lowered.startswith(_PREFIXES) or lowered.endswith(_SUFFIXES)
            or any(infix in lowered for infix in _INFIXES)
            or any(_glob(lowered, pattern) for pattern in _OTHERS))


def _glob(name: str, pattern: str) -> bool:
    parts = pattern.split("*")
    if len(parts) == 1:
        return name == pattern
    first, last = parts[0], parts[-1]
    if not name.startswith(first) or len(name) < len(first) + len(last) or not name.endswith(last):
        return False
    at, end = len(first), len(name) - len(last)
    for middle in parts[1:-1]:
        found = name.find(middle, at, end)
        if found < 0:
            return False
        at = found + len(middle)
    return True


def installed(parts: list[str]) -> bool:
    """Whether a relative path lies inside an installed package (below `site-packages`, or
    below a package folder of `node_modules`)."""
    for i, part in enumerate(parts[:-1]):
        if part in INSTALLED or (part == "node_modules" and i + 2 < len(parts)):
            return True
    return False


def first_secret(top: str, parts: list[str]) -> str | None:
    """THE search for a secret where git cannot look: the first secret-looking regular file at
    or below `top` outside every repository and installed package, as a path relative to what
    `parts` names (`top`'s own place: its name in a checkout, or an output's name; `top` may
    be where it was moved for removal, so its own name says nothing). None when there is none.

    A repository is left to git's rules (a tracked `.env.example` is committed, not lost); no
    symlink is followed (deleting a link loses no content) and no installed package entered,
    so the walk reads names only. A folder it cannot list is named: unsure, keep."""
    try:
        own = os.lstat(top)
    except OSError:
        return None
    if not stat.S_ISDIR(own.st_mode):
        secret = stat.S_ISREG(own.st_mode) and looks_secret(parts[-1]) and not installed(parts)
        return "/".join(parts) if secret else None
    stack = [(top, parts)]
    while stack:
        folder, where = stack.pop()
        try:
            entries = _listed(top, folder)
        except FileNotFoundError:
            continue
        except OSError:
            return "/".join(where)
        names = {e.name for e in entries}
        if ".git" in names or all(m in names for m in _BARE_MARKS):
            continue  # a repository: git's rules judge it
        for entry in entries:
            child = [*where, entry.name]
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not installed([*child, ""]):
                        stack.append((f"{folder}/{entry.name}", child))
                elif looks_secret(entry.name) and entry.is_file(follow_symlinks=False) and not installed(child):
                    return "/".join(child)
            except OSError:
                return "/".join(child)
    return None


def _listed(top: str, folder: str) -> list[os.DirEntry[str]]:
    """The entries of `folder`; one deeper than the system's path limit is opened from `top`
    down a part at a time (an output thousands of folders deep is still judged, not kept
    for ever as unlistable)."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError as exc:
        from app.core.scan_walk import open_long

        fd = open_long(top, folder, exc)
        if fd < 0:
            raise
    try:
        with os.scandir(fd) as it:
            return list(it)
    finally:
        os.close(fd)
