"""The removal journal: one JSON object per line whatever the path, tolerant reads, per-day sums."""

from __future__ import annotations

import json
import os
import threading

from app.core import journal, paths
from tests.support import SandboxEnv


def test_append_and_read_back() -> None:
    journal.append({"path": "/t/a", "kind": "temp", "bytes": 4096, "rule": "gc",
                    "session": "s1", "result": "removed"})
    (entry,) = journal.read_entries()
    assert {k: entry[k] for k in journal.FIELDS if k != "time"} == {
        "path": "/t/a", "kind": "temp", "bytes": 4096, "rule": "gc", "session": "s1",
        "result": "removed"}
    assert len(entry["time"]) == 20 and entry["time"].endswith("Z")


def test_odd_paths_stay_one_line() -> None:
    odd = os.fsdecode(b"/t/new\nline\xff\xfe/\r\x00x")
    journal.append({"path": odd, "bytes": 1, "result": "removed"})
    raw = paths.journal_file().read_bytes()
    assert raw.count(b"\n") == 1 and raw.endswith(b"\n")
    json.loads(raw)  # plain ASCII JSON
    (entry,) = journal.read_entries()
    assert entry["path"] == odd
    assert os.fsencode(entry["path"]) == b"/t/new\nline\xff\xfe/\r\x00x"


def test_corrupt_lines_are_skipped_not_lost() -> None:
    journal.append({"path": "/a", "bytes": 1, "result": "removed", "time": "2026-01-02T03:04:05Z"})
    with open(paths.journal_file(), "ab") as fh:
        fh.write(b'{"path": "/half", "byt\n[1, 2]\n\xff\xfe garbage\n\n')
    journal.append({"path": "/b", "bytes": 2, "result": "removed", "time": "2026-01-02T09:00:00Z"})
    assert [e["path"] for e in journal.read_entries()] == ["/a", "/b"]
    assert b'{"path": "/half"' in paths.journal_file().read_bytes()  # never rewritten


def test_missing_journal_is_empty() -> None:
    assert journal.read_entries() == []
    assert journal.freed_per_day() == {}


def test_freed_per_day_sums_removed_bytes_only() -> None:
    rows = [
        ("2026-03-01T23:59:59Z", 100, "removed"),
        ("2026-03-01T00:00:00Z", 50, "removed"),
        ("2026-03-02T10:00:00Z", 7, "removed"),
        ("2026-03-02T11:00:00Z", 1000, "refused"),
        ("2026-03-02T12:00:00Z", 1000, "failed"),
        ("2026-03-03T12:00:00Z", "lots", "removed"),
        ("2026-13-45T12:00:00Z", 5, "removed"),
        ("nonsense", 5, "removed"),
        ("2026-03-04T12:00:00Z", True, "removed"),
        ("2026-02-28T08:00:00Z", 3, "removed"),
    ]
    for stamp, size, result in rows:
        journal.append({"time": stamp, "path": "/x", "bytes": size, "result": result})
    assert journal.freed_per_day() == {"2026-02-28": 3, "2026-03-01": 150, "2026-03-02": 7}
    assert list(journal.freed_per_day()) == ["2026-02-28", "2026-03-01", "2026-03-02"]


def test_concurrent_appends_keep_whole_lines() -> None:
    def writer(n: int) -> None:
        for i in range(50):
            journal.append({"path": f"/w{n}/{i}" + "x" * 500, "bytes": 1, "result": "removed"})

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    entries = journal.read_entries()
    assert len(entries) == 200
    assert len(paths.journal_file().read_bytes().splitlines()) == 200


def test_unwritable_journal_does_not_raise(sandbox: SandboxEnv) -> None:
    paths.journal_file().parent.mkdir(parents=True, exist_ok=True)
    paths.journal_file().mkdir()  # a folder where the file should be
    journal.append({"path": "/x", "bytes": 1, "result": "removed"})
    assert journal.read_entries() == []
