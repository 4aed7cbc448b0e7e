"""What a scan answers (`TreeSize`, `ScanProgress`) and the running totals it keeps while it
reads (`Tally`): the same numbers whichever reader counted them, so that two readers'
totals add up and a hard link both of them met is taken off once."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

PathLike = str | bytes | os.PathLike[str] | os.PathLike[bytes]

_S_ISDIR = stat.S_ISDIR
_S_ISREG = stat.S_ISREG

#: One entry itself, not whatever bears its name later: (device, inode, birth time or -1.0).
#: The inode number of an entry removed is given to the next one made (ext4 does at once:
#: `rm -rf out && mkdir out`); its birth time tells them apart where the file system keeps one.
EntryId = tuple[int, int, float]


def entry_id(path: str, st: os.stat_result) -> EntryId:
    """The EntryId of `path` (itself, no symlink followed), `st` its lstat."""
    from app.core.created import birth_time

    born = birth_time(path)
    return st.st_dev, st.st_ino, -1.0 if born is None else born


def same_entry(one: EntryId, other: EntryId) -> bool:
    """Whether two EntryIds are one entry (a birth time not known on one side: by the inode)."""
    return one[:2] == other[:2] and (one[2] < 0 or other[2] < 0 or one[2] == other[2])


@dataclass(frozen=True)
class TreeSize:
    path: str
    apparent: int  # bytes (st_size), hard links once
    disk: int  # st_blocks * 512, hard links once
    files: int  # non-directories (files, symlinks, others)
    folders: int  # directories, the top one included when it is a directory
    errors: int = 0  # entries that vanished / could not be read
    partial: bool = False  # stopped by budget or cancel
    # real paths of the folders inside holding a `.git` entry and of the bare repositories
    # inside (the top included), sorted; complete only when not partial
    repos: tuple[str, ...] = ()
    # of `files`, those that are no regular file (symlinks, FIFOs, sockets, devices): a
    # report of files removed counts regular files only
    others: int = 0
    # (device, inode) of the path itself as measured: a removal handed this measure removes
    # that entry only, never another one put under its name since
    top: EntryId | None = field(default=None, compare=False)

    @property
    def entries(self) -> int:
        return self.files + self.folders


@dataclass(frozen=True)
class ScanProgress:
    path: str
    files: int
    folders: int
    disk: int


def text_path(path: PathLike) -> str:
    """A path as text; bytes that are not UTF-8 become surrogate escapes (and back)."""
    value = os.fspath(path)
    return os.fsdecode(value) if isinstance(value, bytes) else value


class Tally:
    """The running totals of one reader (a plain object: attribute access is cheap)."""

    __slots__ = ("apparent", "blocks", "files", "others", "folders", "errors", "seen", "new_links",
                 "repos", "skip", "walked", "real", "big", "top")

    def __init__(self) -> None:
        self.apparent = 0
        self.blocks = 0
        self.files = 0
        self.others = 0  # of the files, those that are no regular file
        self.folders = 0
        self.errors = 0
        self.seen: set[tuple[int, int]] = set()  # hard-linked files already counted
        self.new_links: list[tuple[int, int, int, int]] | None = None  # set in a forked reader
        self.repos: list[str] = []  # folders holding a repository, spelled as walked
        self.skip: frozenset[str] = frozenset()  # mount points inside, spelled as walked
        self.big: set[str] = set()  # folders listed a chunk at a time (scan_walk.BIG_FOLDER)
        self.walked = ""  # the top as the walk spells it, without a trailing slash
        self.real = ""  # the top's real path, without a trailing slash
        self.top: EntryId | None = None  # the top itself

    def count(self, st: os.stat_result) -> None:
        """One entry met outside the walk's own loop (the top, a child the budget missed)."""
        if _S_ISDIR(st.st_mode):
            self.folders += 1
        else:
            self.files += 1
            self.others += not _S_ISREG(st.st_mode)
            if st.st_nlink > 1:
                self.seen.add((st.st_dev, st.st_ino))
        self.apparent += st.st_size
        self.blocks += st.st_blocks

    def first_link(self, st: os.stat_result) -> bool:
        """Whether this hard-linked file is met for the first time (then it counts); a forked
        reader also notes it, so that the other reader can take off what both counted."""
        key = (st.st_dev, st.st_ino)
        if key in self.seen:
            return False
        self.seen.add(key)
        if self.new_links is not None:
            self.new_links.append((st.st_dev, st.st_ino, st.st_size, st.st_blocks))
        return True

    def add(self, apparent: int, blocks: int, files: int, folders: int, errors: int, others: int = 0) -> None:
        self.apparent += apparent
        self.blocks += blocks
        self.files += files
        self.others += others
        self.folders += folders
        self.errors += errors

    def result(self, path: str, partial: bool) -> TreeSize:
        return TreeSize(path, self.apparent, self.blocks * 512, self.files, self.folders,
                        self.errors, partial, self._real_repos(), self.others, self.top)

    def _real_repos(self) -> tuple[str, ...]:
        """The repositories as real paths: the walk never follows a symlink, so a folder's
        real path is the top's real path plus the rest of the walked spelling."""
        if not self.repos:
            return ()
        cut = len(self.walked)
        return tuple(sorted({(self.real + p[cut:]).rstrip("/") or "/" for p in self.repos}))
