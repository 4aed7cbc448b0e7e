"""One call of `removal.remove`: its answer (`Removal`), and what it has done so far.

Its journal lines are written here: the committed `removed` line right before the step that
cannot be undone, a `started` line before a removal in place, and a `left` line taking back
what a committed line counted when that step then took nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from app.core import journal
from app.core.fd_removal import Kept, Tally
from app.core.log import log
from app.core.scan_tally import EntryId
from app.core.scanner import TreeSize


@dataclass(frozen=True)
class Removal:
    path: str
    rule: str
    kind: str
    session: str | None
    status: str  # "removed" | "kept" | "refused" | "missing" | "failed" | "dry_run"
    # kept: the guard's reason, or `journal` (the journal could not be written first);
    # refused: outside_root|symlink|escapes_root|other_fs|mount|changed|owner; failed: the error
    reason: str | None
    bytes: int  # disk bytes freed (or that would be)
    files: int  # non-directories removed
    folders: int  # directories removed
    trashed: bool = False  # renamed into a trash folder; a detached purge finishes it

    @property
    def removed(self) -> bool:
        return self.status == "removed"


#: A last check at the moment of removal: given the path where the entry is now (a folder
#: already moved aside into the trash), None lets it go, a keep reason puts it back.
Guard = Callable[[str], "str | None"]


class Removing:
    """One call of `remove`: what it removes, how it journals, and what it has done so far."""

    def __init__(self, path: str, rule: str, kind: str, session: str | None, write: bool,
                 guard: Guard | None) -> None:
        self.path = path
        self.rule = rule
        self.kind = kind
        self.session = session
        self.write = write
        self.guard = guard
        self.token = os.urandom(6).hex()
        self.target = path  # parents resolved, once checked
        self.root_real = ""
        self.root_dev = -1
        self.root_ino = -1  # the root as checked: one swapped (a parent relinked) since is not it
        self.expected: EntryId | None = None  # the entry to remove itself
        self.measured = TreeSize(path, 0, 0, 0, 0)
        self.tally = Tally()
        self.committed: list[Removal] = []
        self.left: TreeSize | None = None  # what a purge here could not take (`chattr +i`)

    def result(self, status: str, reason: str | None = None, freed: int = 0, files: int = 0,
               folders: int = 0) -> Removal:
        """An answer other than the committed removal, journaled with this call's id."""
        result = Removal(self.path, self.rule, self.kind, self.session, status, reason, freed, files, folders)
        if self.write:
            journal.append_result(result, self.token)
        return result

    def commit(self, trashed: bool) -> None:
        """The journal line, written right before the step that cannot be undone."""
        m = self.measured
        result = Removal(self.path, self.rule, self.kind, self.session, "removed", None, m.disk, m.files - m.others,
                         m.folders, trashed)
        if self.write:
            try:
                journal.append_result(result, self.token, strict=True)
            except OSError:
                raise Kept("journal") from None
        self.committed.append(result)

    def start(self) -> None:
        """The `started` line of a removal in place, written before anything goes."""
        if self.write:
            try:
                journal.append_started(self.path, self.rule, self.kind, self.session, self.measured.disk,
                                       self.token)
            except OSError:
                raise Kept("journal") from None

    def ask(self, where: str) -> str | None:
        """The guard's answer for the entry where it now is; a guard that fails keeps it
        (when unsure, keep)."""
        if self.guard is None:
            return None
        try:
            return self.guard(where)
        except Exception as exc:  # noqa: BLE001 - any failure of a check means: keep
            log(f"removal: the check before removing {where!r} failed ({type(exc).__name__}: {exc}); kept")
            return "failed"

    def take_back(self, why: str | None = None) -> None:
        """The committed line taken back (`journal.take_back`): its unlink took nothing: the
        file was gone (another removal took it after this one's check), or refused to go
        (`why`: an immutable file)."""
        if self.write and self.committed:
            journal.take_back(self.committed[0], self.token, why)
        self.committed.clear()

    def keep_unless_clear(self, where: str) -> None:
        reason = self.ask(where)
        if reason is not None:
            raise Kept(reason)
