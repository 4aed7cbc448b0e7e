"""The two-reader scan: the folders still to read are shared through one queue, and whatever
the pieces, the helper's fate or the threads around, the answer is the one-process answer."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from app.core import scan_two, scan_walk, scanner
from app.core.scanner import scan, scan_many

pytestmark = pytest.mark.skipif(not scanner.PARALLEL, reason="one core: a scan never splits")


def _du(flag: str, path: Path) -> int:
    out = subprocess.run(["du", "-s", flag, str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def _wide(base: Path, folders: int = 120, files: int = 5) -> Path:
    """Many folders of a few files, a repository of each kind and hard links shared by all."""
    shared = base.parent / f"{base.name}-shared"
    shared.write_bytes(b"s" * 50_000)
    for f in range(folders):
        sub = base / f"p{f:03d}" / "lib"
        sub.mkdir(parents=True)
        for i in range(files):
            (sub / f"f{i}.js").write_bytes(b"x" * (100 * i + f))
        os.link(shared, sub / "linked")
    (base / "p007" / ".git" / "objects").mkdir(parents=True)
    (base / "p042" / "lib" / ".git").write_text("gitdir: /elsewhere\n")
    bare = base / "p099" / "bare.git"
    for part in ("objects", "refs"):
        (bare / part).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    return base


@pytest.fixture
def small_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "SPLIT_AFTER", 30)


def test_both_readers_take_pieces_and_agree_with_one(tmp_path: Path, small_split: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    root = _wide(tmp_path / "t")
    one = scan(root, parallel=False)
    taken: list[int] = []
    real_read = os.read
    parent = os.getpid()

    def counting_read(fd: int, n: int) -> bytes:
        got = real_read(fd, n)
        if n == 4 and len(got) == 4 and os.getpid() == parent:
            taken.append(int.from_bytes(got, "little"))
        return got

    monkeypatch.setattr(os, "read", counting_read)
    two = scan(root, parallel=True)
    assert two == one
    assert one.repos == tuple(sorted(os.path.realpath(root / p) for p in ("p007", "p042/lib", "p099/bare.git")))
    assert two.apparent == _du("-b", root) and two.disk == _du("-B1", root)
    assert taken and len(taken) == len(set(taken))  # this process took pieces, each once


def test_the_pieces_are_cut_wherever_the_tree_is_narrow(tmp_path: Path, small_split: None) -> None:
    """A chain of single folders pauses with one folder pending: the shallowest are read first
    until there are pieces enough, and nothing is counted twice or lost."""
    deep = tmp_path / "chain"
    here = deep
    for level in range(6):
        here = here / f"level{level}"
        here.mkdir(parents=True)
        for i in range(8):
            (here / f"f{i}").write_bytes(b"c" * 10)
    _wide(here / "fan", folders=90, files=2)
    assert scan(deep, parallel=True) == scan(deep, parallel=False)


def test_a_helper_that_dies_has_its_pieces_read_here(tmp_path: Path, small_split: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = _wide(tmp_path / "t")
    one = scan(root, parallel=False)
    parent = os.getpid()
    real_write_all = scan_two.write_all

    def die_in_the_helper(fd: int, data: bytes) -> None:
        if os.getpid() != parent:
            os._exit(3)  # killed before it could send its totals
        real_write_all(fd, data)

    monkeypatch.setattr(scan_two, "write_all", die_in_the_helper)
    assert scan(root, parallel=True) == one


def test_a_split_from_a_thread_while_another_holds_a_lock(tmp_path: Path, small_split: None) -> None:
    """The dashboard's workers and the cleanup's helper scan from a thread: the forked helper
    touches no lock, so a lock another thread holds at the fork cannot hang it."""
    root = _wide(tmp_path / "t")
    one = scan(root, parallel=False)
    held = threading.Lock()
    release = threading.Event()

    def hold() -> None:
        with held:
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    results: list[scanner.TreeSize] = []
    worker = threading.Thread(target=lambda: results.append(scan(root, parallel=True)))
    worker.start()
    worker.join(30)
    release.set()
    holder.join(30)
    assert not worker.is_alive()
    assert results == [one]


def test_a_budget_stops_both_readers(tmp_path: Path, small_split: None) -> None:
    root = _wide(tmp_path / "t", folders=60, files=30)  # the clock is read every 512 entries
    partial = scan(root, parallel=True, budget_s=0)
    assert partial.partial is True
    assert partial.entries < scan(root, parallel=False).entries


def test_every_piece_goes_through_the_queue_when_there_are_more_than_it_holds(
        tmp_path: Path, small_split: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_two, "MAX_PIECES", 7)  # pieces of several folders each
    root = _wide(tmp_path / "t", folders=100, files=1)
    assert scan(root, parallel=True) == scan(root, parallel=False)


def test_a_big_folder_is_listed_a_chunk_at_a_time_with_the_same_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder whose own size says it is huge is streamed (memory stays flat for a million
    names in one folder); the answer is the one of a listing taken whole."""
    root = _wide(tmp_path / "t", folders=100, files=3)
    flat = root / "flat"
    flat.mkdir()
    for i in range(1500):  # more than one chunk of names
        (flat / f"entry-{i:05d}").write_bytes(b"f" * (i % 7))
    whole = scan(root, parallel=False)
    assert whole.apparent == _du("-b", root)
    monkeypatch.setattr(scan_walk, "BIG_FOLDER", -1)  # every folder counts as big

    def no_listdir(*_: object) -> list[str]:
        raise AssertionError("a big folder was listed whole")

    monkeypatch.setattr(os, "listdir", no_listdir)
    assert scan(root, parallel=False) == whole
    monkeypatch.setattr(scanner, "SPLIT_AFTER", 30)
    assert scan(root, parallel=True) == whole
    progress = list(scanner.scan_iter(root, every=100))
    assert len(progress) >= whole.entries // 100 - 1


def test_a_wide_tree_gets_its_second_reader_before_its_entries_say_it_is_big(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders waiting to be read each cost an open and a listing whatever they hold: a
    folder of many subfolders (a node_modules) is shared out as soon as it is listed."""
    root = tmp_path / "node_modules"
    wide = scanner.SPLIT_AFTER // 4 + 10
    for i in range(wide):  # fewer entries in all than SPLIT_AFTER
        (root / f"pkg-{i}").mkdir(parents=True)
    (root / "pkg-3" / "index.js").write_bytes(b"i" * 3000)
    forks: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(os, "fork", counted_fork)
    one = scan(root, parallel=False)
    assert forks == [] and one.entries == wide + 2 < scanner.SPLIT_AFTER
    assert scan(root, parallel=True) == one
    assert forks == [1]
    narrow = tmp_path / "narrow"
    narrow.mkdir()
    for i in range(wide):  # as many entries, as files: no fork for them
        (narrow / f"f{i}").write_bytes(b"")
    assert scan(narrow, parallel=True).entries == wide + 1
    assert forks == [1]


def test_the_links_and_fifos_of_a_split_tree_are_counted_apart_by_both_readers(tmp_path: Path) -> None:
    """`others` (the entries that are no regular file) adds up the same whether one reader or
    two read the tree, alone or among others: a removal reports regular files only."""
    top = tmp_path / "big"
    for d in range(40):
        folder = top / f"d{d:02}"
        folder.mkdir(parents=True)
        for f in range(200):
            (folder / f"f{f}").write_bytes(b"x")
        (folder / "link").symlink_to("f0")
        os.mkfifo(folder / "pipe")
    alone = scan(top, parallel=False)
    assert (alone.files, alone.others) == (40 * 202, 80)
    assert scan(top, parallel=True).others == 80
    small = tmp_path / "small"
    small.mkdir()
    (small / "l").symlink_to("/")
    assert [t.others for t in scan_many([top, small], parallel=True)] == [80, 1]
