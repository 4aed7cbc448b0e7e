"""How the ledger reads a file to hash it: a short one into a bytes object, a long one into
anonymous memory in huge pages. Both must give the hash of exactly the file's bytes, also
when the file holds more than its stat said (it grew during the read)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def _jobs(tmp_path: Path) -> list[tuple[str, list[tuple[dict[str, Any], str]]]]:
    """Files in every state a look can find, each with what the ledger knew of it."""
    jobs: list[tuple[str, list[tuple[dict[str, Any], str]]]] = []
    for i in range(12):
        f = tmp_path / f"f{i:02}.bin"
        f.write_bytes(bytes([i]) * (70_000 + i))  # long enough for the C hash, where it is
        known: list[tuple[dict[str, Any], str]] = []
        if i % 4 == 1:  # unchanged, its stat old enough: known without a read
            os.utime(f, (1_000_000_000, 1_000_000_000))
            seen = ledger_look.read_and_hash(str(f))
            assert seen.sig is not None and seen.hash is not None
            known = [(seen.sig, seen.hash)]
        elif i % 4 == 2:
            f.unlink()
        elif i % 4 == 3:
            f.unlink()
            f.mkdir()
        jobs.append((str(f), known))
    return jobs


@pytest.fixture
def four_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several threads look, whatever this machine has."""
    monkeypatch.setattr(ledger_look, "_cores", lambda: 4)


@pytest.mark.usefixtures("four_cores")
def test_looking_at_many_files_at_once_finds_what_one_by_one_finds(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    one_by_one = [ledger_look.look(path, known) for path, known in jobs]
    together = ledger_look.look_all(jobs)
    assert [(s.kind, s.hash, s.fresh) for s in together] == [(s.kind, s.hash, s.fresh) for s in one_by_one]
    assert {s.kind for s in together} == {"file", "deleted"} and sum(not s.fresh for s in together) > 3
    assert [s.hash for s in together[0::4]] == [expected(Path(p).read_bytes()) for p, _ in jobs[0::4]]


@pytest.mark.usefixtures("four_cores")
def test_a_look_that_fails_fails_the_whole_look_after_the_others(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    broken: list[tuple[Any, list[tuple[dict[str, Any], str]]]] = [*jobs[:5], (None, []), *jobs[5:]]
    with pytest.raises(TypeError):
        ledger_look.look_all(broken)
