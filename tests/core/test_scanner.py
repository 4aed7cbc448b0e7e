"""The scanner on real trees: sizes as du counts them, hard links once, symlinks as
themselves, vanished entries counted, budgets and cancels, the per-child breakdown."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.core.scanner import ScanProgress, TreeSize, children, disk_bytes, scan, scan_iter


def _tree(base: Path, folders: int = 3, files: int = 4, size: int = 5000) -> Path:
    for f in range(folders):
        sub = base / f"d{f}" / "inner"
        sub.mkdir(parents=True)
        for i in range(files):
            (sub / f"f{i}.bin").write_bytes(b"x" * size)
    return base


def _du(flag: str, path: Path) -> int:
    out = subprocess.run(["du", "-s", flag, str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def test_sizes_match_du(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    (root / "d0" / "hard").hardlink_to(root / "d1" / "inner" / "f0.bin")
    (root / "d0" / "sym").symlink_to("/etc/passwd")
    size = scan(root)
    assert size.apparent == _du("-b", root)
    assert size.disk == _du("-B1", root)
    assert size.folders == 1 + 3 * 2
    assert size.files == 3 * 4 + 2
    assert size.errors == 0 and size.partial is False
    assert disk_bytes(root) == size.disk


def test_hard_links_count_once(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "a").write_bytes(b"y" * 100_000)
    alone = scan(root).disk
    for i in range(5):
        (root / f"link{i}").hardlink_to(root / "a")
    again = scan(root)
    assert again.disk == alone
    assert again.files == 6


def test_symlinks_never_followed(tmp_path: Path) -> None:
    outside = _tree(tmp_path / "outside", files=10, size=50_000)
    root = tmp_path / "t"
    root.mkdir()
    (root / "to_dir").symlink_to(outside)
    (root / "to_file").symlink_to(outside / "d0" / "inner" / "f0.bin")
    size = scan(root)
    assert size.files == 2 and size.folders == 1
    assert size.disk < scan(outside).disk / 10
    link = scan(root / "to_dir")
    assert (link.files, link.folders) == (1, 0)
    assert link.apparent == len(os.fsencode(str(outside)))


def test_a_file_and_a_missing_path(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"z" * 10_000)
    size = scan(f)
    assert (size.files, size.folders, size.apparent) == (1, 0, 10_000)
    assert size.disk == os.lstat(f).st_blocks * 512
    missing = scan(tmp_path / "nope")
    assert missing == TreeSize(str(tmp_path / "nope"), 0, 0, 0, 0, errors=1, partial=False)
    assert disk_bytes(tmp_path / "nope") == 0


def test_odd_names(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    raw = os.fsencode(str(root)) + b"/bad\xff\nname"
    os.mkdir(raw)
    with open(raw + b"/in\nside", "wb") as fh:
        fh.write(b"q" * 3000)
    size = scan(os.fsencode(str(root)))
    assert (size.files, size.folders, size.apparent - _dirs_apparent(root)) == (1, 2, 3000)
    assert size.path == str(root)


def _dirs_apparent(root: Path) -> int:
    return sum(os.lstat(os.path.join(d, "")).st_size for d, _, _ in os.walk(root))


def test_unreadable_folder_is_counted_not_fatal(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    root = _tree(tmp_path / "t")
    locked = root / "d1" / "inner"
    locked.chmod(0)
    try:
        size = scan(root)
    finally:
        locked.chmod(0o755)
    assert size.errors == 1
    assert size.files == 2 * 4 and size.folders == 7


def test_entries_vanishing_mid_scan_are_counted(tmp_path: Path) -> None:
    import shutil

    root = _tree(tmp_path / "t", folders=20, files=30, size=1)
    gen = scan_iter(root, every=5)
    next(gen)
    for sub in root.iterdir():
        shutil.rmtree(sub)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            result = stop.value
            break
    assert result.errors >= 1
    assert result.files < 20 * 30 and result.partial is False


def test_progress_and_return_value(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t", folders=5, files=40, size=10)
    gen = scan_iter(root, every=50)
    seen: list[ScanProgress] = []
    while True:
        try:
            seen.append(next(gen))
        except StopIteration as stop:
            result = stop.value
            break
    assert len(seen) >= 3
    assert all(p.path == str(root) for p in seen)
    assert [p.files + p.folders for p in seen] == sorted(p.files + p.folders for p in seen)
    assert result == scan(root)


def test_cancel_by_closing(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t", folders=5, files=40, size=10)
    gen = scan_iter(root, every=10)
    first = next(gen)
    gen.close()
    assert first.files + first.folders >= 10
    with pytest.raises(StopIteration):
        next(gen)


def test_budget_gives_partial(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t", folders=4, files=400, size=1)
    partial = scan(root, budget_s=0)
    assert partial.partial is True
    full = scan(root)
    assert full.partial is False and partial.files < full.files
    limited = scan(root, limit=100)
    assert limited.partial and 100 <= limited.entries < full.entries


def test_one_fs_skips_other_devices() -> None:
    # Read-only look at /dev, whose pts/shm are usually other file systems.
    base = "/dev"
    try:
        dev = os.lstat(base).st_dev
        mounts = [e.path for e in os.scandir(base)
                  if e.is_dir(follow_symlinks=False) and e.stat(follow_symlinks=False).st_dev != dev]
    except OSError:
        mounts = []
    if not mounts:
        pytest.skip("no mount point under /dev here")
    same = scan(base, one_fs=True)
    every = scan(base, one_fs=False)
    assert same.folders + len(mounts) <= every.folders


def test_children_largest_first(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "small").write_bytes(b"s" * 10)
    big = root / "big"
    big.mkdir()
    (big / "f").write_bytes(b"b" * 500_000)
    mid = root / "mid"
    mid.mkdir()
    (mid / "f").write_bytes(b"m" * 100_000)
    (root / "link").symlink_to(big)
    kids = children(root)
    assert [Path(k.path).name for k in kids][:2] == ["big", "mid"]
    assert [k.disk for k in kids] == sorted((k.disk for k in kids), reverse=True)
    assert {Path(k.path).name for k in kids} == {"big", "mid", "small", "link"}
    assert kids[0] == scan(big)
    assert children(root / "small") == [] and children(tmp_path / "none") == []


def test_children_budget_spent(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t", folders=3, files=5)
    kids = children(root, budget_s=0)
    assert len(kids) == 3
    assert all(k.partial and k.folders == 1 and k.files == 0 for k in kids)


def test_two_process_scan_equals_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core import scanner

    monkeypatch.setattr(scanner, "SPLIT_AFTER", 20)
    root = _tree(tmp_path / "t", folders=12, files=6, size=3000)
    shared = tmp_path / "shared"
    shared.write_bytes(b"h" * 70_000)
    for i in range(12):  # one inode linked from every half of the tree
        (root / f"d{i}" / "inner" / "hl").hardlink_to(shared)
    one = scan(root, parallel=False)
    two = scan(root, parallel=True)
    assert two == one
    assert two.apparent == _du("-b", root) and two.disk == _du("-B1", root)
    big = _tree(tmp_path / "big", folders=8, files=150, size=1)
    assert scan(big, parallel=True, budget_s=0).partial is True
    assert scan(big, parallel=True) == scan(big, parallel=False)


# --- repositories found by the same walk; mount points never crossed ---------------------------

def _repo_marks(base: Path, count: int) -> list[str]:
    """`count` folders under `base`, each marked one way (by name only: the scanner reads no
    file): a `.git` folder, a `.git` file, a bare layout, and a lone HEAD that is no repo."""
    wanted = []
    for i in range(count):
        folder = base / f"r{i:02d}"
        folder.mkdir(parents=True)
        kind = i % 4
        if kind == 0:
            for part in ("objects", "refs"):
                (folder / ".git" / part).mkdir(parents=True)
            (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")  # its holder's, not a bare one
        elif kind == 1:
            (folder / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
        elif kind == 2:
            (folder / "objects").mkdir()
            (folder / "refs").mkdir()
            (folder / "HEAD").write_text("ref: refs/heads/main\n")
        else:
            (folder / "HEAD").write_text("just a file named HEAD\n")
        if kind != 3:
            wanted.append(os.path.realpath(folder))
    return sorted(wanted)


def test_scan_lists_the_repositories_inside(tmp_path: Path) -> None:
    real = tmp_path / "real"
    wanted = _repo_marks(real / "deep", 8)
    (real / "HEAD").write_text("x\n")  # the top is no bare repository: no objects/, refs/
    (tmp_path / "via").symlink_to(real)
    (real / "deep" / "link").symlink_to(real / "deep" / "r00")  # never followed: listed once
    assert scan(real).repos == tuple(wanted)
    assert scan(tmp_path / "via" / "deep").repos == tuple(wanted)  # real paths, whatever the spelling
    assert scan(tmp_path / "via").repos == ()  # a symlink is itself, never walked
    assert scan(f"{real}/").repos == tuple(wanted)
    assert scan(real / "deep" / "r02").repos == (wanted[2],)  # the top itself is bare
    assert scan(real / "deep" / "r00" / ".git").repos == ()
    assert scan(real / "deep" / "link").repos == ()


def test_two_process_scan_finds_the_same_repositories(tmp_path: Path) -> None:
    from app.core import scanner

    if not scanner.PARALLEL:
        pytest.skip("one core: a scan never splits")
    top = tmp_path / "t"
    a = top / "a"
    a.mkdir(parents=True)
    for i in range(scanner.SPLIT_AFTER + 100):  # the split comes right after this folder
        os.close(os.open(a / f"f{i}", os.O_CREAT | os.O_WRONLY, 0o644))
    wanted = _repo_marks(a, 40)  # 40 folders pending at the split: half go to the helper
    one = scan(top, parallel=False)
    two = scan(top, parallel=True)
    assert one.repos == tuple(wanted)
    assert two == one


def test_a_bind_mount_inside_is_never_crossed(tmp_path: Path) -> None:
    import shutil
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    data = tmp_path / "data"
    (data / ".git").mkdir(parents=True)
    (data / "big").write_bytes(b"d" * 200_000)
    top = tmp_path / "top"
    (top / "bound").mkdir(parents=True)
    (top / "own").write_bytes(b"o" * 1000)
    probe = ("import json, sys; from app.core.scanner import scan, children; "
             "s = scan(sys.argv[1]); k = children(sys.argv[1]); "
             "print(json.dumps([s.files, s.folders, s.apparent, list(s.repos), sum(c.files for c in k)]))")
    script = f"mount --bind {data} {top / 'bound'} && exec {sys.executable} -P -c '{probe}' {top}"
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, check=False)
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"no bind mount here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    import json

    files, folders, apparent, repos, child_files = json.loads(done.stdout)
    assert os.lstat(data).st_dev == os.lstat(top).st_dev  # the same device: only the mount list tells
    assert (files, folders, repos, child_files) == (1, 1, [], 1)  # `own` and the top; not `bound`
    assert apparent < 200_000
    assert scan(top).files == 1 and scan(data).repos == (str(data.resolve()),)
