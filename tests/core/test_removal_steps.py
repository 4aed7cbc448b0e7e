"""The order of a removal: moved aside, checked once more, journaled, then deleted; and
what the next run says about one that was cut short."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import journal, paths, removal
from tests.support import SandboxEnv


def tree(path: Path, files: int = 5) -> Path:
    (path / "sub").mkdir(parents=True)
    for i in range(files):
        (path / "sub" / f"f{i}").write_text(str(i))
    return path


def test_a_guard_that_says_keep_puts_the_folder_back_whole(sandbox: SandboxEnv) -> None:
    root = sandbox.user_tmp
    target = tree(root / "t")
    seen: list[str] = []

    def guard(where: str) -> str | None:
        seen.append(where)
        assert not target.exists() and Path(where, "sub", "f0").read_text() == "0"  # moved aside
        return "dirty"

    result = removal.remove(target, root, "gc", guard=guard, trash=False)
    assert (result.status, result.reason) == ("kept", "dirty")
    assert sorted(p.name for p in (target / "sub").iterdir()) == [f"f{i}" for i in range(5)]
    assert [e["result"] for e in journal.read_entries()] == ["kept"]
    assert seen and not any(Path(paths.trash_dir()).iterdir())


def test_a_guard_that_fails_keeps(sandbox: SandboxEnv) -> None:
    target = tree(sandbox.user_tmp / "t")

    def broken(where: str) -> str | None:
        raise RuntimeError("git is gone")

    result = removal.remove(target, sandbox.user_tmp, "gc", guard=broken, trash=False)
    assert result.status == "kept" and (target / "sub" / "f4").exists()


def test_a_kept_folder_whose_name_was_taken_meanwhile_goes_beside_it(sandbox: SandboxEnv) -> None:
    target = tree(sandbox.user_tmp / "t")

    def someone_took_the_name(where: str) -> str | None:
        target.mkdir()
        (target / "new").write_text("theirs")
        return "live"

    result = removal.remove(target, sandbox.user_tmp, "gc", guard=someone_took_the_name, trash=False)
    assert result.status == "kept"
    assert (target / "new").read_text() == "theirs"
    (beside,) = [p for p in sandbox.user_tmp.iterdir() if p.name.startswith("t.claudetto-kept-")]
    assert (beside / "sub" / "f0").read_text() == "0"


def test_a_file_whose_journal_cannot_be_written_stays(sandbox: SandboxEnv) -> None:
    target = sandbox.user_tmp / "f.txt"
    target.write_text("x")
    paths.journal_file().parent.mkdir(parents=True, exist_ok=True)
    paths.journal_file().mkdir()
    result = removal.remove(target, sandbox.user_tmp, "gc")
    assert (result.status, result.reason) == ("kept", "journal")
    assert target.read_text() == "x"


def test_a_folder_whose_journal_cannot_be_written_is_put_back(sandbox: SandboxEnv) -> None:
    target = tree(sandbox.user_tmp / "t")
    paths.journal_file().parent.mkdir(parents=True, exist_ok=True)
    paths.journal_file().mkdir()
    result = removal.remove(target, sandbox.user_tmp, "gc", trash=True, spawn=False)
    assert (result.status, result.reason) == ("kept", "journal")
    assert (target / "sub" / "f3").read_text() == "3"
    assert not paths.trash_dir().exists() or not any(paths.trash_dir().iterdir())


def test_one_journal_line_per_removal_written_before_the_purge(sandbox: SandboxEnv) -> None:
    target = tree(sandbox.user_tmp / "t")
    result = removal.remove(target, sandbox.user_tmp, "gc", trash=True, spawn=False)
    assert result.status == "removed" and result.trashed and not target.exists()
    (line,) = journal.read_entries()
    assert line["result"] == "removed" and line["path"] == str(target) and line["trashed"] is True
    assert any(paths.trash_dir().iterdir())  # the purge has not run, the line is there already
    removal.purge_trash()
    assert not any(paths.trash_dir().iterdir())


def test_a_removal_cut_short_in_place_is_reported_once(sandbox: SandboxEnv) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    journal.append({"path": "/gone/half", "kind": "temp", "bytes": 10, "rule": "gc", "session": "s",
                    "result": "started", "id": "abc123", "pid": dead.pid, "proc_start": "1"})
    journal.append({"path": "/still/running", "kind": "temp", "bytes": 10, "rule": "gc", "session": "s",
                    "result": "started", "id": "def456", "pid": os.getpid(),
                    "proc_start": removal_start()})
    assert [e["path"] for e in removal.unfinished_removals()] == ["/gone/half"]
    assert removal.report_unfinished() == ["/gone/half"]
    assert removal.report_unfinished() == []
    assert [e["result"] for e in journal.read_entries()][-1] == "interrupted"


def removal_start() -> str | None:
    from app.core.sessions import proc_start_time

    return proc_start_time(os.getpid())


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_a_mount_made_after_the_first_check_is_never_emptied(sandbox: SandboxEnv, tmp_path: Path) -> None:
    data = tmp_path / "precious"
    data.mkdir()
    (data / "keep.txt").write_text("do not delete\n")
    target = tree(sandbox.user_tmp / "t")
    (target / "mnt").mkdir()
    mounted: list[Path] = []

    def mount_now(where: str) -> None:
        if subprocess.run(["mount", "--bind", str(data), str(Path(where) / "mnt")],
                          capture_output=True, check=False).returncode == 0:
            mounted.append(Path(where) / "mnt")

    try:
        result = removal.remove(target, sandbox.user_tmp, "gc", trash=False, _before_remove=mount_now)
        if not mounted:
            pytest.skip("mount --bind is not allowed here")
        assert (result.status, result.reason) == ("kept", "in_use")
        assert (data / "keep.txt").read_text() == "do not delete\n"
        assert (target / "mnt" / "keep.txt").exists()  # put back whole, mount and all
    finally:
        for point in (target / "mnt", *mounted):
            subprocess.run(["umount", str(point)], capture_output=True, check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")
def test_a_leftover_in_the_trash_with_a_mount_inside_is_never_emptied(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A purge killed halfway leaves its entry in the trash; a bind mount made inside it
    before the next purge has the trash's own device, so only the mount table shows it."""
    data = tmp_path / "precious"
    data.mkdir()
    (data / "keep.txt").write_text("do not delete\n")
    leftover = tree(paths.trash_dir() / "1700000000000000000-127-0e")
    (leftover / "mnt").mkdir()
    plain = tree(paths.trash_dir() / "1700000000000000000-128-0f")
    if subprocess.run(["mount", "--bind", str(data), str(leftover / "mnt")],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("mount --bind is not allowed here")
    try:
        removal.purge_trash()
        assert (data / "keep.txt").read_text() == "do not delete\n"
        assert (leftover / "mnt" / "keep.txt").exists()
        assert not plain.exists()  # the rest of the trash is purged as before
    finally:
        subprocess.run(["umount", str(leftover / "mnt")], capture_output=True, check=False)
    removal.purge_trash()  # once the mount is gone, the leftover goes too
    assert not leftover.exists()


def test_a_purge_running_during_the_last_check_never_takes_the_folder(sandbox: SandboxEnv) -> None:
    """Another removal's purge lists the trash while this removal's guard is still asking:
    the folder is pending, so the purge leaves it whole; the guard's keep puts it back whole."""
    target = tree(sandbox.user_tmp / "checked", files=50)
    seen: list[int] = []

    def guard(where: str) -> str | None:
        removal.purge_trash()  # the other purge, right now
        seen.append(sum(1 for _ in Path(where, "sub").iterdir()))
        return "dirty"

    result = removal.remove(target, sandbox.user_tmp, "gc", trash=True, guard=guard)
    assert (result.status, result.reason) == ("kept", "dirty")
    assert seen == [50] and len(list((target / "sub").iterdir())) == 50


KILLED_IN_GUARD = """
import os, sys, time
from app.core import removal
def guard(where):
    print(where, flush=True)
    time.sleep(60)
removal.remove(sys.argv[1], sys.argv[2], "gc", trash=True, guard=guard)
"""


def test_a_removal_killed_before_its_journal_line_is_put_back_by_the_next_purge(sandbox: SandboxEnv) -> None:
    target = tree(sandbox.user_tmp / "killed", files=20)
    proc = subprocess.Popen([sys.executable, "-P", "-c", KILLED_IN_GUARD, str(target), str(sandbox.user_tmp)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    where = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait()
    assert where.is_dir() and not target.exists()  # whole, in the trash, pending
    assert not [e for e in journal.read_entries() if e.get("result") == "removed"]
    removal.purge_trash()
    assert len(list((target / "sub").iterdir())) == 20  # back where it was, whole
    assert not where.exists() and not any(paths.trash_dir().iterdir())


def test_a_killed_removal_of_a_name_that_is_not_utf8_comes_back_under_the_same_bytes(sandbox: SandboxEnv) -> None:
    name = os.fsdecode(b"caf\xe9-\nbuild")  # not UTF-8, and a newline in it
    target = tree(sandbox.user_tmp / name, files=3)
    proc = subprocess.Popen([sys.executable, "-P", "-c", KILLED_IN_GUARD, os.fsencode(target), str(sandbox.user_tmp)],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline()
    proc.kill()
    proc.wait()
    assert not target.exists()
    removal.purge_trash()
    assert os.fsencode(name) in os.listdir(os.fsencode(sandbox.user_tmp))
    assert len(list((target / "sub").iterdir())) == 3
