"""The Ledger screen's data: every file Claude edited, judged against the disk now
(`ledger.ledger_files`, which writes nothing), with what changed since the last edit: its
size and modification time then (the stat the ledger stored with the edit) and now.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from app.core.ledger import LedgerFile


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

    @property
    def key(self) -> str:
        return self.file.path

    @property
    def shown(self) -> tuple[object, ...]:
        """What the row's cells are made from (LedgerFile has no equality of its own)."""
        f = self.file
        return (f.path, f.agent, f.session, f.hash, f.changed, f.deleted, f.told, f.edited_ns, self.before, self.after)


def _edit_stats() -> dict[str, Stat]:
    """The stat each ledger entry stored with its edit (size, mtime_ns)."""
    from app.core import paths
    from app.core.state import read_json

    data = read_json(paths.ledger_file_str(), dict)
    files = data.get("files") if isinstance(data, dict) else None
    found: dict[str, Stat] = {}
    for path, entry in (files or {}).items() if isinstance(files, dict) else ():
        size = entry.get("size") if isinstance(entry, dict) else None
        mtime = entry.get("mtime_ns") if isinstance(entry, dict) else None
        if isinstance(size, int) and isinstance(mtime, int) and not isinstance(size, bool) and not isinstance(mtime, bool):
            found[str(path)] = Stat(size, mtime / 1e9)
    return found


def _stat_now(path: str) -> Stat | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return Stat(st.st_size, st.st_mtime)


def read_ledger() -> list[LedgerRow]:
    """Every ledger file, changed ones first, then the latest edit first. Raises OSError
    when ledger.json is there but cannot be read (the screen says why)."""
    from app.core.ledger import ledger_files

    files = ledger_files()
    before = _edit_stats()
    rows = [LedgerRow(f, before.get(f.path), _stat_now(f.path)) for f in files]
    return sorted(rows, key=lambda r: (not r.file.changed, -r.file.edited_ns, r.file.path))
