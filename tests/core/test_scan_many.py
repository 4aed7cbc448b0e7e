"""Many trees measured at once (`scanner.scan_many`): this process and one forked helper take
whole trees from one queue. Whatever reader took a tree, the helper's fate, a tree found big
on the way or the deadline, each answer is the one a scan of that tree alone gives: the
cleanup removes by it (its size, and the repositories inside that unique_work checks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core import hygiene, scan_two, scanner
from app.core.scanner import scan, scan_many
from tests.support import SandboxEnv, git, make_repo, set_mtime

pytestmark = pytest.mark.skipif(not scanner.PARALLEL, reason="one core: trees are read one by one")

ROOT = Path(__file__).resolve().parents[2]


def _du(flag: str, path: Path) -> int:
    out = subprocess.run(["du", "-s", flag, str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def _small(base: Path, n: int, files: int = 40, repos: bool = True) -> Path:
    """A session-folder-like tree: a few folders of files, a symlink out and one in, hard links
    within it, and (for some, with `repos`) a repository of each kind."""
    for d in range(3):
        sub = base / f"d{d}"
        sub.mkdir(parents=True)
        for i in range(files // 3):
            (sub / f"f{i}.txt").write_bytes(b"x" * (37 * i + n))
    os.link(base / "d0" / "f1.txt", base / "d2" / "same-inode")
    (base / "out").symlink_to("/")
    (base / "in").symlink_to(base / "d1")
    if repos and n % 4 == 1:
        (base / "nested" / ".git" / "objects").mkdir(parents=True)
    if repos and n % 4 == 2:
        (base / "linked").mkdir()
        (base / "linked" / ".git").write_text("gitdir: /elsewhere\n")
    if repos and n % 4 == 3:
        for part in ("objects", "refs"):
            (base / "bare.git" / part).mkdir(parents=True)
        (base / "bare.git" / "HEAD").write_text("ref: refs/heads/main\n")
    return base


def _big(base: Path, folders: int = 80, files: int = 4) -> Path:
    """Past the (lowered) SPLIT_AFTER: hard links to one file from every folder, so that a
    tree paused in the helper and finished here must carry the links it met."""
    shared = base / "shared"
    base.mkdir(parents=True)
    shared.write_bytes(b"s" * 30_000)
    for f in range(folders):
        sub = base / f"p{f:03d}" / "lib"
        sub.mkdir(parents=True)
        for i in range(files):
            (sub / f"f{i}.js").write_bytes(b"y" * (50 * i + f))
        os.link(shared, sub / "linked")
    (base / "p013" / ".git").mkdir()
    return base


def _trees(tmp_path: Path) -> list[Path]:
    """Small trees, two big ones among them, a file, a symlink, a missing path, and two trees
    sharing a hard link (counted in each, as two scans count it)."""
    found = [_small(tmp_path / f"s{n:02d}", n) for n in range(14)]
    found.insert(3, _big(tmp_path / "big-a"))
    found.insert(9, _big(tmp_path / "big-b", folders=50))
    (tmp_path / "a-file").write_bytes(b"f" * 5000)
    (tmp_path / "a-link").symlink_to(tmp_path / "s00")
    os.link(tmp_path / "s05" / "d0" / "f2.txt", tmp_path / "s06" / "d1" / "from-s05")
    return [*found, tmp_path / "a-file", tmp_path / "a-link", tmp_path / "missing"]


@pytest.fixture
def small_split(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "SPLIT_AFTER", 30)


@pytest.fixture
def slow_here(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """This process reads each tree it takes slowly, so the helper surely takes most of them
    (big ones included); which trees each reader took is noted."""
    parent = os.getpid()
    real_read, real_take = scan_two._read_root, scan_two._take_answers
    taken: dict[str, list[int]] = {"here": [], "helper": []}

    def read_slowly(root: scan_two.Root, deadline: float | None, pause_at: int | None) -> str:
        if os.getpid() == parent:
            taken["here"].append(1)
            time.sleep(0.05)
        return real_read(root, deadline, pause_at)

    def noted(roots: list[scan_two.Root], statuses: list[str], payload: bytes) -> set[int]:
        theirs = real_take(roots, statuses, payload)
        taken["helper"].extend(theirs)
        return theirs

    monkeypatch.setattr(scan_two, "_read_root", read_slowly)
    monkeypatch.setattr(scan_two, "_take_answers", noted)
    return taken


def test_each_answer_is_the_one_of_a_scan_alone(tmp_path: Path, small_split: None,
                                                slow_here: dict[str, list[int]]) -> None:
    paths = _trees(tmp_path)
    alone = [scan(p, parallel=False) for p in paths]
    assert scan_many(paths, parallel=True) == alone
    # the helper took trees (this process may have taken none, when the machine is busy), a
    # big one among them: paused there, finished here
    assert {3, 9} & set(slow_here["helper"])
    assert scan_many(paths, parallel=False) == alone
    assert [scan(p) for p in paths] == alone  # and so does the two-reader scan of each
    by_path = dict(zip(paths, alone, strict=True))
    for path in (tmp_path / "big-a", tmp_path / "s01", tmp_path / "s06"):
        assert by_path[path].apparent == _du("-b", path) and by_path[path].disk == _du("-B1", path)
    assert by_path[tmp_path / "s01"].repos == (str(tmp_path / "s01" / "nested"),)
    assert by_path[tmp_path / "s02"].repos == (str(tmp_path / "s02" / "linked"),)
    assert by_path[tmp_path / "s03"].repos == (str(tmp_path / "s03" / "bare.git"),)
    assert by_path[tmp_path / "big-b"].repos == (str(tmp_path / "big-b" / "p013"),)
    assert by_path[tmp_path / "a-link"].entries == 1 and by_path[tmp_path / "a-file"].files == 1
    assert by_path[tmp_path / "missing"].errors == 1 and by_path[tmp_path / "missing"].entries == 0


def test_a_helper_that_dies_has_its_trees_read_here(tmp_path: Path, small_split: None,
                                                    slow_here: dict[str, list[int]],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _trees(tmp_path)
    alone = [scan(p, parallel=False) for p in paths]
    parent = os.getpid()
    real_write_all = scan_two.write_all

    def die_in_the_helper(fd: int, data: bytes) -> None:
        if os.getpid() != parent:
            real_write_all(fd, data[: len(data) // 2])  # half an answer, then killed
            os._exit(3)
        real_write_all(fd, data)

    monkeypatch.setattr(scan_two, "write_all", die_in_the_helper)
    assert scan_many(paths, parallel=True) == alone
    assert slow_here["helper"] == []  # nothing of the half answer was taken


def test_no_helper_at_all_reads_every_tree_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [_small(tmp_path / f"s{n}", n) for n in range(6)]
    alone = [scan(p, parallel=False) for p in paths]

    def no_fork() -> int:
        raise OSError("EAGAIN")

    monkeypatch.setattr(os, "fork", no_fork)
    assert scan_many(paths, parallel=True) == alone


def test_more_trees_than_the_queue_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_two, "MAX_PIECES", 4)
    paths = [_small(tmp_path / f"s{n:02d}", n, files=6) for n in range(11)]
    assert scan_many(paths, parallel=True) == [scan(p, parallel=False) for p in paths]


def test_a_mount_point_the_sweep_knows_is_never_crossed(tmp_path: Path) -> None:
    """The mount table handed in (the sweep's) keeps a folder out, in whichever reader."""
    paths = [_small(tmp_path / f"s{n}", n) for n in range(8)]
    table = frozenset({os.path.realpath(tmp_path / "s2" / "d1"), os.path.realpath(tmp_path / "s5" / "d0")})
    many = scan_many(paths, parallel=True, mounts=table)
    assert many == [scan(p, parallel=False, mounts=table) for p in paths]
    assert many[2].entries < scan(paths[2], parallel=False, mounts=frozenset()).entries


def test_a_bind_mount_inside_a_tree_is_not_counted(tmp_path: Path) -> None:
    """A bind mount keeps its parent's device: only the kernel's table, read once for all the
    trees, tells it apart."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    data = tmp_path / "precious"
    data.mkdir()
    (data / "big").write_bytes(b"d" * 400_000)
    paths = [_small(tmp_path / f"s{n}", n) for n in range(6)]
    (paths[4] / "mnt").mkdir()
    probe = ("import json, sys; from app.core.scanner import scan, scan_many; p = sys.argv[1:]; "
             "print(json.dumps([scan_many(p, parallel=True) == [scan(x, parallel=False) for x in p], "
             "scan_many(p)[4].disk]))")
    script = f'mount --bind {data} {paths[4] / "mnt"} && exec {sys.executable} -P -c "$0" "$@"'
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script, probe, *map(str, paths)], capture_output=True,
                          text=True, check=False, cwd=ROOT)
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"no bind mount here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    same, disk = json.loads(done.stdout)
    assert same is True
    assert 0 < disk < 400_000  # the tree and the mount point's own entry, not what is bound there


def test_the_deadline_cuts_each_big_tree_as_a_scan_alone(tmp_path: Path) -> None:
    """The clock is read every 512 entries: a past deadline leaves a small tree whole and cuts
    a bigger one short (partial), as `scan` with a spent budget does."""
    paths = [_small(tmp_path / f"s{n}", n, files=12) for n in range(4)]
    for n in (1, 3):
        for i in range(900):
            (paths[n] / "d0" / f"more{i}").write_bytes(b"")
    many = scan_many(paths, budget_s=0, parallel=True)
    alone = [scan(p, budget_s=0, parallel=False) for p in paths]
    assert [t.partial for t in many] == [t.partial for t in alone] == [False, True, False, True]
    assert [many[0], many[2]] == [alone[0], alone[2]]
    assert all(t.entries < scan(p).entries for t, p in zip(many, paths, strict=True) if t.partial)


def _session(sandbox: SandboxEnv, n: int) -> Path:
    return _small(sandbox.claude_tmp / "-work-proj" / f"0000{n:04d}-0000-4000-8000-000000000000", n, files=9,
                  repos=False)


@pytest.mark.parametrize("dry_run", [True, False])
def test_the_cleanup_keeps_the_folder_whose_repository_the_batch_scan_found(sandbox: SandboxEnv,
                                                                           dry_run: bool) -> None:
    """Sessions measured by two readers in a dry run (all at once), one ahead of its removal
    otherwise: the one holding uncommitted work in a repository deep inside is
    kept whichever reader found it; the others go, counted as du counted them (files: the
    regular ones, the contract's count; each tree has two links)."""
    folders = [_session(sandbox, n) for n in range(22)]
    work = make_repo(folders[8] / "scratchpad" / "deep" / "proj")
    (work / "notes.txt").write_text("not committed\n")
    for folder in folders:
        set_mtime(folder, 40 * 86_400)
    sizes = {f: (_du("-B1", f), (s := scan(f, parallel=False)).files - s.others) for f in folders}
    report = hygiene.run_cleanup([], dry_run=dry_run)
    kept = {v.path: v.reason for v in report.verdicts if v.action == "keep"}
    assert kept == {str(folders[8]): "dirty"}
    gone = [f for f in folders if f != folders[8]]
    assert report.folders == len(gone)
    assert report.bytes == sum(sizes[f][0] for f in gone)
    assert report.files == sum(sizes[f][1] for f in gone)
    assert git(work, "status", "--porcelain") == "?? notes.txt"
    assert [f.exists() for f in gone] == [dry_run] * len(gone)
