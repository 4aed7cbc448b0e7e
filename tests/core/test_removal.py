"""Safe removal on real trees: containment reasons, fd-relative removal that never follows a
symlink, the swap race, the trash and its detached purge, the journal line of each call."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from app.core import journal, paths, removal
from app.core.removal import Removal, containment, purge_trash, remove
from app.core.scanner import scan
from app.core.state import locked
from tests.support import SandboxEnv


def _fingerprint(top: Path) -> dict[str, tuple[int, str]]:
    """Every entry under `top` with its mode and content hash (symlinks: their target)."""
    out: dict[str, tuple[int, str]] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            if os.path.islink(p):
                digest = os.readlink(p)
            elif os.path.isfile(p):
                digest = hashlib.sha1(Path(p).read_bytes()).hexdigest()
            else:
                digest = ""
            out[p] = (st.st_mode, digest)
    return out


def _tree(base: Path, folders: int = 2, files: int = 3) -> Path:
    for f in range(folders):
        sub = base / f"d{f}" / "deeper"
        sub.mkdir(parents=True)
        for i in range(files):
            (sub / f"f{i}").write_bytes(b"x" * 3000)
    return base


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A root to remove inside and an outside folder that must never change."""
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    _tree(outside)
    (outside / "precious").write_text("keep me")
    return root, outside


def test_containment_reasons(world: tuple[Path, Path], tmp_path: Path) -> None:
    root, outside = world
    _tree(root)
    (root / "file").write_text("f")
    (root / "to_out").symlink_to(outside)
    (root / "to_in").symlink_to(root / "d0")
    assert containment(root / "d0", root) is None
    assert containment(root / "file", root) is None
    assert containment(str(root / "d0") + "/", root) is None
    assert containment(root / "d0" / ".." / "d1", root) is None
    assert containment(root, root) == "outside_root"
    assert containment(outside, root) == "outside_root"
    assert containment(root / ".." / "outside", root) == "outside_root"
    assert containment(root / "d0" / ".." / ".." / "outside" / "precious", root) == "outside_root"
    assert containment("/", root) == "outside_root"
    assert containment(root / "to_out", root) == "symlink"
    assert containment(root / "to_in", root) == "symlink"
    assert containment(root / "to_out" / "precious", root) == "escapes_root"
    assert containment(root / "to_out" / "d0", root) == "escapes_root"
    assert containment(root / "to_out" / "..", root) == "outside_root"  # lexically the root itself
    assert containment(root / "nope", root) == "missing"
    assert containment(root / "nope" / "deeper", root) == "missing"
    # A root named through a symlink: its real path is what counts.
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    assert containment(alias / "d0", alias) is None
    assert containment(root / "d0", alias) is None
    assert containment(alias / "d0", root) is None
    assert containment(alias, alias) == "outside_root"


def test_remove_a_tree_in_place(world: tuple[Path, Path], sandbox: SandboxEnv) -> None:
    root, _ = world
    target = _tree(root / "t")
    (target / "d0" / "link").symlink_to("/etc")
    before = scan(target)
    result = remove(target, root, "gc", kind="temp", session="s1", trash=False)
    assert (before.files, before.others) == (7, 1)  # the scan counts the link among its entries
    assert result == Removal(str(target), "gc", "temp", "s1", "removed", None, before.disk,
                             files=6, folders=5)  # regular files: the link is none
    assert not os.path.lexists(target) and root.is_dir()
    (line,) = journal.read_entries()
    assert line["path"] == str(target) and line["result"] == "removed" and line["bytes"] == before.disk
    assert (line["kind"], line["rule"], line["session"]) == ("temp", "gc", "s1")
    assert line["time"].endswith("Z")


def test_remove_a_file_and_a_missing_path(world: tuple[Path, Path]) -> None:
    root, _ = world
    f = root / "f"
    f.write_bytes(b"a" * 9000)
    size = os.lstat(f).st_blocks * 512
    result = remove(f, root, "gc")
    assert (result.status, result.bytes, result.files, result.folders) == ("removed", size, 1, 0)
    assert not f.exists()
    again = remove(f, root, "gc")
    assert again.status == "missing" and again.reason is None
    assert [e["result"] for e in journal.read_entries()] == ["removed", "missing"]


def test_outside_and_symlinks_are_refused_and_untouched(world: tuple[Path, Path]) -> None:
    root, outside = world
    (root / "to_out").symlink_to(outside)
    (root / "to_file").symlink_to(outside / "precious")
    before = _fingerprint(outside)
    for path, reason in [
        (root / "to_out", "symlink"),
        (root / "to_file", "symlink"),
        (root / "to_out" / "d0", "escapes_root"),
        (root / "to_out" / "precious", "escapes_root"),
        (outside / "d0", "outside_root"),
        (root, "outside_root"),
    ]:
        result = remove(path, root, "gc")
        assert (result.status, result.reason, result.bytes) == ("refused", reason, 0), path
    assert _fingerprint(outside) == before
    assert (root / "to_out").is_symlink() and (root / "to_file").is_symlink()
    assert [e["reason"] for e in journal.read_entries()] == [
        "symlink", "symlink", "escapes_root", "escapes_root", "outside_root", "outside_root"]


@pytest.mark.parametrize("trash", [False, True])
def test_links_inside_the_tree_are_never_followed(world: tuple[Path, Path], trash: bool,
                                                  sandbox: SandboxEnv) -> None:
    root, outside = world
    target = _tree(root / "t")
    (target / "d0" / "dir_link").symlink_to(outside)
    (target / "d1" / "file_link").symlink_to(outside / "precious")
    (target / "hard").hardlink_to(outside / "precious")
    os.link(outside / "d0" / "deeper" / "f0", target / "d1" / "deeper" / "hard2")
    before = _fingerprint(outside)
    result = remove(target, root, "gc", trash=trash)
    assert result.status == "removed" and result.trashed is trash
    assert not os.path.lexists(target)
    purge_trash()
    assert _fingerprint(outside) == before
    assert (outside / "precious").read_text() == "keep me"
    assert _trash_entries() == []


def _trash_entries() -> list[str]:
    found: list[str] = []
    for place in removal.trash_places():
        if place.is_dir():
            found.extend(os.listdir(place))
    return found


def test_folder_swapped_for_a_symlink_is_left_alone(world: tuple[Path, Path]) -> None:
    root, outside = world
    target = _tree(root / "t")
    before = _fingerprint(outside)

    def swap(checked: str) -> None:
        os.rename(checked, str(root / "moved"))
        os.symlink(outside, checked)

    for trash in (False, True):
        result = remove(target, root, "gc", trash=trash, _before_remove=swap)
        assert (result.status, result.reason) == ("refused", "symlink")
        assert target.is_symlink() and os.readlink(target) == str(outside)
        assert _fingerprint(outside) == before
        target.unlink()
        os.rename(root / "moved", target)


def test_parent_swapped_for_a_symlink_is_refused(world: tuple[Path, Path]) -> None:
    root, outside = world
    _tree(root / "p")
    (outside / "d0" / "deeper").rename(outside / "d0" / "deeper-kept")
    (outside / "d0" / "deeper").mkdir()
    (outside / "d0" / "deeper" / "victim").write_text("v")
    before = _fingerprint(outside)

    def swap(checked: str) -> None:
        os.rename(root / "p" / "d0", root / "elsewhere")
        os.symlink(outside / "d0", root / "p" / "d0")

    result = remove(root / "p" / "d0" / "deeper", root, "gc", _before_remove=swap)
    assert (result.status, result.reason) == ("refused", "escapes_root")
    assert _fingerprint(outside) == before


def test_dry_run_removes_nothing_and_writes_nothing(world: tuple[Path, Path], sandbox: SandboxEnv) -> None:
    root, _ = world
    target = _tree(root / "t")
    before = scan(target)
    result = remove(target, root, "gc", dry_run=True)
    assert (result.status, result.bytes, result.files, result.folders) == (
        "dry_run", before.disk, before.files, before.folders)
    assert target.is_dir() and scan(target) == before
    assert remove(root / "x", root, "gc", dry_run=True).status == "missing"
    assert remove(root, root, "gc", dry_run=True).status == "refused"
    assert not paths.journal_file().exists()


def test_journal_flag_off(world: tuple[Path, Path]) -> None:
    root, _ = world
    (root / "f").write_text("x")
    assert remove(root / "f", root, "gc", journal=False).status == "removed"
    assert journal.read_entries() == []


def test_odd_names_are_removed_and_journalled(world: tuple[Path, Path]) -> None:
    root, _ = world
    raw_root = os.fsencode(str(root))
    weird = raw_root + b"/we\nird\xff\xfe"
    os.makedirs(weird + b"/sub\n\xff")
    with open(weird + b"/sub\n\xff/f\xff", "wb") as fh:
        fh.write(b"data")
    result = remove(weird, raw_root, "gc", trash=False)
    assert result.status == "removed" and result.files == 1 and result.folders == 2
    assert not os.path.lexists(weird)
    raw_lines = paths.journal_file().read_bytes().splitlines()
    assert len(raw_lines) == 1
    (entry,) = journal.read_entries()
    assert os.fsencode(entry["path"]) == weird


def test_size_given_is_trusted(world: tuple[Path, Path]) -> None:
    root, _ = world
    target = _tree(root / "t")
    result = remove(target, root, "gc", size=12345, trash=False)
    assert result.status == "removed" and result.bytes == 12345 and result.files == 6
    tree = _tree(root / "u")
    measured = scan(tree)
    result = remove(tree, root, "gc", size=measured, trash=True)
    assert (result.bytes, result.files, result.folders, result.trashed) == (
        measured.disk, measured.files, measured.folders, True)


def test_auto_trash_for_big_trees_only(world: tuple[Path, Path]) -> None:
    root, _ = world
    small = _tree(root / "small")
    assert remove(small, root, "gc").trashed is False
    big = root / "big"
    big.mkdir()
    for i in range(removal.TRASH_MIN_ENTRIES):
        (big / f"f{i}").touch()
    result = remove(big, root, "gc", size=1)
    assert result.status == "removed" and result.trashed is True and not big.exists()
    purge_trash()
    assert _trash_entries() == []


def test_leftover_trash_is_purged(sandbox: SandboxEnv) -> None:
    leftover = _tree(paths.trash_dir() / "1700000000000000000-123-0a")
    (leftover / "d0" / "link").symlink_to(sandbox.home)
    (paths.trash_dir() / "1700000000000000000-124-0b").write_text("x")
    home_before = _fingerprint(sandbox.home)
    purge_trash()
    assert os.listdir(paths.trash_dir()) == []
    assert _fingerprint(sandbox.home) == home_before


def test_one_purge_runs_and_one_waits(sandbox: SandboxEnv) -> None:
    _tree(paths.trash_dir() / "1700000000000000000-125-0c")
    home = paths.claudetto_home()
    done = threading.Event()
    with locked(home / "trash"):  # a purge is running
        def purge_then_say() -> None:
            purge_trash()
            done.set()

        waiter = threading.Thread(target=purge_then_say)
        waiter.start()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not _held(home / "trash-waiter"):
            time.sleep(0.01)
        assert _held(home / "trash-waiter")
        started = time.monotonic()
        purge_trash()  # a third one gives up at once: the waiter covers it
        assert time.monotonic() - started < 0.5
        assert removal.spawn_purge() is None  # nor is one spawned
        assert not done.is_set() and (paths.trash_dir() / "1700000000000000000-125-0c").exists()
    waiter.join(10)
    assert done.is_set() and os.listdir(paths.trash_dir()) == []


def _held(path: Path) -> bool:
    from app.core.state import StateBusy

    try:
        with locked(path, wait_s=0):
            return False
    except StateBusy:
        return True


def test_detached_purge_empties_the_trash(world: tuple[Path, Path]) -> None:
    root, _ = world
    target = _tree(root / "t", folders=3, files=5)
    result = remove(target, root, "gc", trash=True)
    assert result.trashed and not target.exists()
    deadline = time.monotonic() + 20
    while _trash_entries() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _trash_entries() == []


def test_other_file_system_is_refused(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    try:
        if not shm.is_dir() or os.lstat(shm).st_dev == os.lstat("/dev").st_dev:
            pytest.skip("no separate /dev/shm")
        probe = shm / f"claudetto-test-{os.getpid()}-{time.monotonic_ns()}"
        probe.write_text("x")
    except OSError:
        pytest.skip("/dev/shm not writable")
    try:
        result = remove(probe, "/dev", "gc", journal=False)
        assert (result.status, result.reason) == ("refused", "other_fs")
        assert probe.read_text() == "x"
    finally:
        probe.unlink()


def test_root_on_another_file_system_trashes_inside_the_root(sandbox: SandboxEnv) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK) or \
            os.lstat(shm).st_dev == os.lstat(sandbox.state.parent).st_dev:
        pytest.skip("no separate writable /dev/shm")
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="claudetto-test-", dir=shm))
    try:
        target = _tree(root / "t")
        result = remove(target, root, "gc", trash=True, spawn=False)
        assert result.status == "removed" and result.trashed
        place = root / removal.ROOT_TRASH_NAME
        assert place in removal.trash_places() and len(os.listdir(place)) == 1
        purge_trash()
        assert os.listdir(place) == [] and not target.exists()
    finally:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def test_session_start_spawns_a_purge_for_leftovers_only(sandbox: SandboxEnv) -> None:
    removal.leftovers_step({})
    assert not paths.trash_dir().exists() or os.listdir(paths.trash_dir()) == []
    _tree(paths.trash_dir() / "1700000000000000000-126-0d")
    removal.leftovers_step({})
    deadline = time.monotonic() + 20
    while _trash_entries() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _trash_entries() == []


def test_a_trash_behind_a_symlinked_log_root_is_never_purged_or_used(sandbox, tmp_path) -> None:
    from app.core import paths, removal

    victim = tmp_path / "victim"
    (victim / "trash" / "sub").mkdir(parents=True)
    (victim / "trash" / "sub" / "precious.txt").write_text("precious\n")
    paths.log_root().parent.mkdir(parents=True, exist_ok=True)
    paths.log_root().symlink_to(victim)
    removal.purge_trash(wait_s=1)
    assert (victim / "trash" / "sub" / "precious.txt").read_text() == "precious\n"
