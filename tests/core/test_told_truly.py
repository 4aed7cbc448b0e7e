"""What a removal frees, told truly: a file with another hard link outside the removed tree
frees no byte when the tree goes (the other link keeps its blocks), so `clean`, `gc` and the
journal never count it as freed. A `cp -al` copy of the user's project (the same inodes) in an
old session folder or an old output is the case met in the wild. Links all inside the tree
free their blocks once, as before.

Real hard links (`os.link`, `cp -al`), real commands (`claudetto clean`, `claudetto gc`), the
journal as written; the scanner's forked reader is checked against the one-process one."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from app.core import scanner
from tests.support import SandboxEnv, add_record, run_cli, set_mtime

DAY = 86_400
MB = 1 << 20


def project(home: Path, files: int = 5, size: int = MB) -> Path:
    """The user's project: `files` files of `size` random bytes each (real blocks on disk)."""
    proj = home / "proj"
    (proj / "src").mkdir(parents=True)
    for i in range(files):
        (proj / "src" / f"f{i}.bin").write_bytes(os.urandom(size))
    return proj


def blocks_of(paths: list[Path]) -> int:
    return sum(os.lstat(p).st_blocks * 512 for p in paths)


def tree_paths(top: Path) -> tuple[list[Path], list[Path]]:
    """The folders (the top included) and the non-folders of `top`."""
    folders, others = [top], []
    for here, dirs, files in os.walk(top):
        folders += [Path(here) / d for d in dirs]
        others += [Path(here) / f for f in files]
    return folders, others


def age_all(top: Path, seconds: float) -> None:
    for here, dirs, files in os.walk(top, topdown=False):
        for name in [*files, *dirs]:
            set_mtime(Path(here) / name, seconds)
    set_mtime(top, seconds)


def journal_lines(sandbox: SandboxEnv) -> list[dict[str, object]]:
    file = sandbox.state / "journal.jsonl"
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def old_session_folder(sandbox: SandboxEnv) -> Path:
    folder = sandbox.claude_tmp / "-work" / str(uuid.uuid4())
    (folder / "scratchpad").mkdir(parents=True)
    return folder


# --- clean: an old session folder --------------------------------------------------------------


def test_clean_counts_nothing_of_a_cp_al_copy_of_the_users_project(sandbox: SandboxEnv) -> None:
    proj = project(sandbox.home)
    folder = old_session_folder(sandbox)
    subprocess.run(["cp", "-al", str(proj), str(folder / "scratchpad" / "x")], check=True)
    folders, files = tree_paths(folder)
    assert len(files) == 5 and all(os.lstat(f).st_nlink == 2 for f in files)
    frees = blocks_of(folders)  # the folders' own blocks: all the removal gives back
    age_all(folder, 40 * DAY)

    result = run_cli("clean", "--json")
    assert result.returncode == 0, result.stderr
    cleaned = json.loads(result.stdout)["cleaned"]
    assert not folder.exists()
    assert cleaned["bytes"] == frees < 5 * MB
    assert cleaned["files"] == 5  # the links went: five files were removed
    assert all((proj / "src" / f"f{i}.bin").stat().st_nlink == 1 for i in range(5))
    removed = [line for line in journal_lines(sandbox) if line["path"] == str(folder)]
    assert [line["bytes"] for line in removed if line["result"] == "removed"] == [frees]


def test_clean_counts_links_all_inside_the_folder_once_and_in_full(sandbox: SandboxEnv) -> None:
    folder = old_session_folder(sandbox)
    data = folder / "scratchpad" / "data.bin"
    data.write_bytes(os.urandom(MB))
    os.link(data, folder / "twin.bin")  # both links go with the folder: its blocks are freed
    folders, _ = tree_paths(folder)
    frees = blocks_of(folders) + os.lstat(data).st_blocks * 512
    age_all(folder, 40 * DAY)

    result = run_cli("clean", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cleaned"]["bytes"] == frees >= MB
    assert not folder.exists()


def test_a_dry_run_says_what_the_removal_would_free(sandbox: SandboxEnv) -> None:
    proj = project(sandbox.home, files=2)
    folder = old_session_folder(sandbox)
    own = folder / "scratchpad" / "own.bin"
    own.write_bytes(os.urandom(MB))
    for i in range(2):
        os.link(proj / "src" / f"f{i}.bin", folder / "scratchpad" / f"f{i}.bin")
    folders, _ = tree_paths(folder)
    frees = blocks_of([*folders, own])
    age_all(folder, 40 * DAY)

    result = run_cli("clean", "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cleaned"]["bytes"] == frees
    assert folder.exists()


# --- gc: an old output ----------------------------------------------------------------------


def hard_linked_output(sandbox: SandboxEnv) -> tuple[Path, Path, int]:
    """`cp -al ~/proj $TMPDIR/x`, one file of its own added, a month old and recorded: the
    project, the copy, and the disk bytes its removal frees (its folders and its own file)."""
    proj = project(sandbox.home)
    copy = sandbox.user_tmp / "x"
    subprocess.run(["cp", "-al", str(proj), str(copy)], check=True)
    own = copy / "notes.txt"
    own.write_bytes(os.urandom(64 * 1024))  # made in the copy: its only link
    folders, _ = tree_paths(copy)
    age_all(copy, 30 * DAY)
    add_record("s1", copy, "copy", cwd=str(sandbox.home), when=1.0)
    return proj, copy, blocks_of([*folders, own])


def test_gc_frees_nothing_of_a_hard_linked_copy_and_journals_it_so(sandbox: SandboxEnv) -> None:
    proj, copy, frees = hard_linked_output(sandbox)
    dry = run_cli("gc", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["freed"] == frees

    result = run_cli("gc", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    entry = {e["path"]: e for e in report["entries"]}[str(copy)]
    assert entry["status"] == "removed" and not copy.exists()
    assert report["freed"] == frees < MB
    assert all(f.stat().st_nlink == 1 for f in (proj / "src").iterdir())
    removed = [line for line in journal_lines(sandbox) if line["path"] == str(copy) and line["result"] == "removed"]
    assert [line["bytes"] for line in removed] == [frees]


@pytest.mark.xfail(strict=True, reason="a gc entry's size is its tree's disk: app/core/gc_rules.py "
                   "Item.size must give `self.tree.freed` (what the removal frees), as `freed` does")
def test_a_gc_entry_says_what_its_removal_frees(sandbox: SandboxEnv) -> None:
    _, copy, frees = hard_linked_output(sandbox)
    for args in (("--dry-run", "--json"), ("--json",)):
        result = run_cli("gc", *args)
        assert result.returncode == 0, result.stderr
        entry = {e["path"]: e for e in json.loads(result.stdout)["entries"]}[str(copy)]
        assert entry["size"] == frees


# --- the scanner: `shared`, whichever reader met the links -------------------------------------


def test_a_file_linked_elsewhere_is_shared_and_frees_nothing(tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes(os.urandom(MB))
    tree = tmp_path / "tree"
    tree.mkdir()
    os.link(outside, tree / "in.bin")
    size = scanner.scan(tree)
    file_disk = os.lstat(outside).st_blocks * 512
    assert size.disk == file_disk + os.lstat(tree).st_blocks * 512
    assert size.shared == file_disk and size.freed == size.disk - file_disk
    alone = scanner.scan(tree / "in.bin")  # the top itself a file with a link outside
    assert (alone.disk, alone.shared, alone.freed) == (file_disk, file_disk, 0)
    outside.unlink()  # now its one link is inside: all of it goes with the tree
    assert scanner.scan(tree).shared == 0


def big_tree(tmp_path: Path) -> tuple[Path, int]:
    """A tree past scanner.SPLIT_AFTER entries, wide enough that a forked reader takes half of
    it, its hard links spread over folders both readers take: 50 files linked from outside
    (one link each), 50 pairs linked across two folders inside, and 50 files with one link
    inside and two outside. The disk bytes shared with the outside."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    outside.mkdir()
    for d in range(200):
        for sub in range(8):
            (tree / f"d{d:03}" / f"s{sub}").mkdir(parents=True)
            for f in range(5):
                (tree / f"d{d:03}" / f"s{sub}" / f"f{f}").write_bytes(b"x" * 100)
    shared = 0
    for i in range(50):
        out = outside / f"o{i}"
        out.write_bytes(os.urandom(8192))
        os.link(out, tree / f"d{i * 4:03}" / f"out{i}")
        shared += os.lstat(out).st_blocks * 512
        pair = tree / f"d{i:03}" / f"pair{i}"
        pair.write_bytes(os.urandom(8192))
        os.link(pair, tree / f"d{199 - i:03}" / "s3" / f"pair{i}")
        two = outside / f"two{i}"
        two.write_bytes(os.urandom(4096))
        os.link(two, outside / f"two{i}.b")
        os.link(two, tree / f"d{(i * 7) % 200:03}" / "s5" / f"two{i}")
        shared += os.lstat(two).st_blocks * 512
    return tree, shared


@pytest.mark.skipif(not scanner.PARALLEL, reason="the forked reader needs fork and two cores")
def test_two_readers_find_the_same_shared_bytes_as_one(tmp_path: Path) -> None:
    tree, shared = big_tree(tmp_path)
    one = scanner.scan(tree, parallel=False)
    two = scanner.scan(tree, parallel=True)
    assert one.entries > scanner.SPLIT_AFTER
    assert one.shared == two.shared == shared
    assert (one.disk, one.apparent, one.files) == (two.disk, two.apparent, two.files)
    many = scanner.scan_many([tree, tmp_path / "outside"], parallel=True)
    assert many[0].shared == shared and many[0].disk == one.disk
    # every file of `outside` has a link in `tree` too: all of it is shared (a pair beside it once)
    out_files = [p for p in (tmp_path / "outside").iterdir() if not p.name.endswith(".b")]
    assert many[1].shared == many[1].disk - os.lstat(tmp_path / "outside").st_blocks * 512
    assert many[1].shared == sum(os.lstat(p).st_blocks * 512 for p in out_files)


# --- the dashboard: the size of a row is what its removal frees -------------------------------


async def dashboard_sizes(path: Path) -> list[int | None]:
    """The sizes the dashboard shows for the rows of `path`, once it has judged and measured."""
    import time

    from app.tui import ClaudettoApp

    app = ClaudettoApp(poll_s=0.2)
    async with app.run_test(size=(120, 36)) as pilot:
        deadline = time.monotonic() + 30
        store = app.store
        while not (store.judged and not store.progress.running and any(
                v.path == str(path) and store.size(v) is not None for v in store.rows.values())):
            assert time.monotonic() < deadline, "the dashboard did not measure the path in time"
            await pilot.pause(0.05)
        return [store.size(v) for v in store.rows.values() if v.path == str(path)]


async def test_the_dashboard_shows_what_the_removal_of_a_session_folder_frees(sandbox: SandboxEnv) -> None:
    proj = project(sandbox.home)
    folder = old_session_folder(sandbox)
    subprocess.run(["cp", "-al", str(proj), str(folder / "scratchpad" / "x")], check=True)
    folders, _ = tree_paths(folder)
    age_all(folder, 40 * DAY)
    assert await dashboard_sizes(folder) == [blocks_of(folders)]


@pytest.mark.xfail(strict=True, reason="a GC row's size is its tree's disk: app/core/gc_rules.py Item.size must "
                   "give `self.tree.freed`, as the GC's `freed` counts it")
async def test_the_dashboard_shows_what_the_removal_of_an_output_frees(sandbox: SandboxEnv) -> None:
    _, copy, frees = hard_linked_output(sandbox)
    assert await dashboard_sizes(copy) == [frees]
