"""The Ledger screen's rows (app/data/ledger.py): each file's stat at the last edit, as the
ledger itself holds it, beside its stat now. Real files in tmp_path, edits recorded as the
hook records them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from app.core import ledger, ledger_entry, paths
from app.data.ledger import Stat, read_ledger
from tests.support import set_mtime

SID = "9a8b7c6d-0000-4000-8000-00000000abcd"


def test_a_row_after_an_outside_change_shows_the_stat_at_the_edit_and_now(tmp_path: Path) -> None:
    f = tmp_path / "notes.md"
    f.write_text("as Claude wrote it\n")
    set_mtime(f, 3600)
    at_edit = f.stat()
    assert ledger.record_file(str(f), "main", SID)
    f.write_text("the user rewrote it, longer than before\n")
    set_mtime(f, 60)
    now = f.stat()

    (row,) = read_ledger()
    assert row.file.path == str(f) and row.file.changed and not row.file.deleted
    assert row.before == Stat(at_edit.st_size, at_edit.st_mtime_ns / 1e9)
    assert row.after == Stat(now.st_size, now.st_mtime)
    assert row.before != row.after
    assert (row.file.edit_size, row.file.edit_mtime_ns) == (at_edit.st_size, at_edit.st_mtime_ns)


def test_a_deleted_file_keeps_its_stat_at_the_edit_and_has_none_now(tmp_path: Path) -> None:
    f = tmp_path / "gone.py"
    f.write_text("x = 1\n")
    size = f.stat().st_size
    assert ledger.record_file(str(f), "main", SID)
    f.unlink()
    (row,) = read_ledger()
    assert row.file.deleted and row.after is None
    assert row.before is not None and row.before.size == size


def test_the_stat_comes_from_the_entry_that_was_judged(tmp_path: Path) -> None:
    """A row's stat and its verdict come from one read of ledger.json: an entry the ledger
    cannot trust is no row at all, not a stat without a verdict."""
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    for f in (good, bad):
        f.write_text("y = 2\n")
        assert ledger.record_file(str(f), "main", SID)
    data = json.loads(paths.ledger_file().read_text())
    data["files"][str(bad)]["size"] = -1
    data["files"][str(good)]["mtime_ns"] = 1_500_000_000 * 10**9
    paths.ledger_file().write_text(json.dumps(data))
    rows = read_ledger()
    assert [r.file.path for r in rows] == [str(good)]
    assert rows[0].before == Stat(os.path.getsize(good), 1_500_000_000.0)
    assert rows[0].file.changed is False  # same content: only its stat moved


def test_after_a_touch_the_row_shows_the_stat_the_ledger_took_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt that finds the edited content under a new stat keeps that stat (so it reads
    the file no more); the row's stat at the edit is then that one, and nothing changed."""
    monkeypatch.setattr(ledger_entry, "RACY_NS", 20_000_000)
    f = tmp_path / "touched.py"
    f.write_text("z = 3\n")
    set_mtime(f, 3600)
    assert ledger.record_file(str(f), "main", SID)
    set_mtime(f, 60)  # a touch: the same bytes
    time.sleep(0.05)  # past the racy window of the touch's ctime
    assert ledger.check_session(SID) == []
    (row,) = read_ledger()
    assert not row.file.changed
    now = f.stat()
    assert row.before == Stat(now.st_size, now.st_mtime_ns / 1e9)
    assert row.after == Stat(now.st_size, now.st_mtime)
