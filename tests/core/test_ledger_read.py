"""How the ledger reads a file to hash it: a short one into a bytes object, a long one into
anonymous memory in huge pages. Both must give the hash of exactly the file's bytes, also
when the file holds more than its stat said (it grew during the read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core import fnv, ledger_look


def content_hash(path: str) -> str | None:
    seen = ledger_look.read_and_hash(path)
    assert seen.kind == "file" and seen.fresh
    return seen.hash


def expected(data: bytes) -> str:
    return fnv.hex64(fnv.fnv1a_64_py(data)) if len(data) < 1 << 16 else fnv.hex64(fnv.fnv1a_64(data))


def test_a_long_file_hashes_as_its_bytes(tmp_path: Path) -> None:
    f = tmp_path / "big.bin"
    data = bytes(range(256)) * (ledger_look.BIG_READ_BYTES // 256) + b"tail \x80\xff"
    f.write_bytes(data)
    assert os.path.getsize(f) >= ledger_look.BIG_READ_BYTES
    assert content_hash(str(f)) == expected(data)


@pytest.mark.parametrize("data", [b"", b"x", b"\x00\xff" * 5000])
def test_the_long_file_route_gives_the_same_hash_at_every_length(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 data: bytes) -> None:
    f = tmp_path / "f.bin"
    f.write_bytes(data)
    short = content_hash(str(f))
    monkeypatch.setattr(ledger_look, "BIG_READ_BYTES", 0)
    assert content_hash(str(f)) == short == expected(data)


@pytest.mark.skipif(not os.path.exists("/proc/self/cmdline"), reason="needs Linux /proc")
def test_a_file_that_holds_more_than_its_stat_said_is_hashed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc files say size 0 and hold more: the same as a file that grew while it was read."""
    assert os.stat("/proc/self/cmdline").st_size == 0
    whole = Path("/proc/self/cmdline").read_bytes()
    assert whole
    monkeypatch.setattr(ledger_look, "BIG_READ_BYTES", 0)
    assert content_hash("/proc/self/cmdline") == expected(whole)
