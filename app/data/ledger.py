"""The Ledger screen's data: every file Claude edited, judged against the disk now
(`ledger.ledger_files`, which writes nothing), with what changed since the last edit: its
size and modification time then (the stat the ledger stored with the edit) and now.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from app.core.ledger import LedgerFile, ledger_files


@dataclass(frozen=True)
class Stat:
    size: int
    mtime: float  # seconds


@dataclass(frozen=True)
class LedgerRow:
    """One ledger file; `before` is its stat at the last edit, `after` now (None: gone or
    not known)."""

    file: LedgerFile
    before: Stat | None
    after: Stat | None
    answers: bool = True  # False: on a remote mount that does not answer, never looked at

    @property
    def key(self) -> str:
        return self.file.path

    @property
    def shown(self) -> tuple[object, ...]:
        """What the row's cells are made from (LedgerFile has no equality of its own)."""
        f = self.file
        return (f.path, f.agent, f.session, f.hash, f.changed, f.deleted, f.told, f.edited_ns, self.before, self.after,
                self.answers)


def _edit_stat(f: LedgerFile) -> Stat | None:
    """The stat the ledger holds for the file (taken at its last edit, or at a touch since)."""
    if f.edit_size is None or f.edit_mtime_ns is None:
        return None
    return Stat(f.edit_size, f.edit_mtime_ns / 1e9)


def _stat_now(path: str) -> Stat | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return Stat(st.st_size, st.st_mtime)


def read_ledger() -> list[LedgerRow]:
    """Every ledger file, changed ones first, then the latest edit first. Raises OSError
    when ledger.json is there but cannot be read (the screen says why)."""
    from app.core.hung_mounts import reachable

    rows = [LedgerRow(f, _edit_stat(f), _stat_now(f.path)) if reachable(f.path) else LedgerRow(f, _edit_stat(f), None, False)
            for f in ledger_files()]
    return sorted(rows, key=lambda r: (not r.file.changed, -r.file.edited_ns, r.file.path))
