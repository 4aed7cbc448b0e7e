"""Red team, round two: the pending trash entry a killed removal leaves, and where the next
purge puts it back. Real removals in a subprocess, killed with SIGKILL inside their last
check; real symlinks swapped in before the purge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import journal, paths, removal
from tests.support import SandboxEnv

KILLED_IN_GUARD = """
import sys, time
from app.core import removal
def guard(where):
    print(where, flush=True)
    time.sleep(60)
removal.remove(sys.argv[1], sys.argv[2], "gc", trash=True, guard=guard)
"""


def _tree(path: Path, files: int = 5) -> Path:
    (path / "sub").mkdir(parents=True)
    for i in range(files):
        (path / "sub" / f"f{i}").write_text(str(i))
    return path


def _linked_tree(path: Path, files: int, template: Path) -> Path:
    """`_tree`'s shape, each entry a hard link to `template`: as many entries to move and
    unlink (what a kill can cut), made ~4 times cheaper than as many new files (and creating
    files costs ~0.5 ms each on a busy disk). A removal never follows nor treats a link apart
    (fd_removal unlinks it like any file); the test counts entries, never their contents."""
    sub = os.path.join(path, "sub")
    os.makedirs(sub)
    source = os.fspath(template)
    for i in range(files):
        os.link(source, os.path.join(sub, f"f{i}"))
    return path


def _killed_in_guard(target: Path, root: Path) -> Path:
    """Start a removal of `target`, SIGKILL it while its folder is pending in the trash."""
    proc = subprocess.Popen([sys.executable, "-P", "-c", KILLED_IN_GUARD, str(target), str(root)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    where = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert where.is_dir() and not target.exists()
    assert not [e for e in journal.read_entries() if e.get("result") == "removed"]
    return where


def test_a_put_back_never_follows_a_symlink_swapped_into_the_noted_path(sandbox: SandboxEnv,
                                                                        tmp_path: Path) -> None:
    root = sandbox.user_tmp
    target = _tree(root / "current" / "app" / "build", files=20)
    _killed_in_guard(target, root)
    # meanwhile `current` is switched, as a release tool does: a symlink to another tree
    (root / "current" / "app").rmdir()
    (root / "current").rmdir()
    other = tmp_path / "releases" / "v2"
    (other / "app").mkdir(parents=True)
    (root / "current").symlink_to(other)
    removal.purge_trash()
    assert not (other / "app" / "build").exists()  # nothing of ours put into the other tree
    assert not [p for p in (other / "app").iterdir()]


def test_a_put_back_whose_name_is_now_a_symlink_goes_beside_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The noted name is taken by a symlink to a folder elsewhere: the folder comes back
    beside it, whole, and nothing is written through the link."""
    root = sandbox.user_tmp
    target = _tree(root / "proj" / "build", files=20)
    where = _killed_in_guard(target, root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target.symlink_to(elsewhere)
    removal.purge_trash()
    assert list(elsewhere.iterdir()) == []
    (beside,) = [p for p in (root / "proj").iterdir() if p.name.startswith("build.claudetto-kept-")]
    assert len(list((beside / "sub").iterdir())) == 20
    assert not where.exists() and not any(paths.trash_dir().iterdir())


def test_two_purges_at_once_put_a_killed_removal_back_once_and_whole(sandbox: SandboxEnv) -> None:
    """Two purges race for the same pending leftover: it comes back once, whole, at its name."""
    root = sandbox.user_tmp
    target = _tree(root / "proj" / "out", files=200)
    _killed_in_guard(target, root)
    code = "from app.core import purge; purge.purge_trash()"
    procs = [subprocess.Popen([sys.executable, "-P", "-c", code]) for _ in range(2)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    removal.purge_trash()
    assert sorted(p.name for p in (root / "proj").iterdir()) == ["out"]
    assert len(list((target / "sub").iterdir())) == 200
    assert not any(paths.trash_dir().iterdir())


def test_a_note_naming_a_folder_now_gone_keeps_the_leftover_whole(sandbox: SandboxEnv) -> None:
    """The noted parent is gone (removed meanwhile): the leftover stays in the trash, whole,
    and no purge takes it."""
    root = sandbox.user_tmp
    target = _tree(root / "proj" / "out", files=20)
    where = _killed_in_guard(target, root)
    (root / "proj").rmdir()
    removal.purge_trash()
    removal.purge_trash()
    assert len(list((where / "sub").iterdir())) == 20


REMOVE_NOW = """
import sys
from app.core import removal
print("go", flush=True)
removal.remove(sys.argv[1], sys.argv[2], "gc", trash=sys.argv[3] == "1", spawn=False)
print("done", flush=True)
"""


def test_a_removal_killed_at_any_moment_leaves_the_folder_whole_or_journaled_gone(sandbox: SandboxEnv) -> None:
    """SIGKILL at spread moments of a real removal (moved aside, journaled, handed over,
    emptied in place): after the next purge the folder is whole where it was, or gone with
    its `removed` line; never half there, never left in a trash."""
    import random
    import time

    rng = random.Random(7)
    root = sandbox.user_tmp
    template = sandbox.root / "template.txt"  # outside the root: only its links go
    template.write_text("x")
    whole: Path | None = None  # the last folder that came through whole: the next one, renamed
    for i in range(16):
        # Making 3,000 files costs ~40 times the removal: a folder that came through whole is
        # the same tree (the same names, contents and count), so it serves the next kill.
        target = whole.rename(root / f"k{i}") if whole else _linked_tree(root / f"k{i}", 3000, template)
        proc = subprocess.Popen([sys.executable, "-P", "-c", REMOVE_NOW, str(target), str(root), str(i % 2)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "go"
        time.sleep(rng.uniform(0.0, 0.06))
        proc.kill()
        proc.wait()
        proc.stdout.close()
        removal.purge_trash()
        removed = {e.get("path") for e in journal.read_entries() if e.get("result") == "removed"}
        whole = None
        if target.exists():
            assert len(list((target / "sub").iterdir())) == 3000, f"k{i} is half there"
            assert str(target) not in removed
            whole = target
        else:
            assert str(target) in removed, f"k{i} went without its journal line"
        for place in (paths.trash_dir(), paths.log_root() / "trash"):
            assert not place.exists() or not any(place.iterdir()), f"k{i}: left in {place}"
    assert template.read_text() == "x"


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_killed_removal_on_a_third_file_system_comes_back_beside_a_new_folder_of_its_name(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The root is its own file system, so the trash is `<root>/.claudetto-trash`; the removal
    is killed while pending and a new folder takes the name: the next purge puts the old one
    back beside it, both whole, and the root's trash ends empty."""
    third = tmp_path / "third"
    third.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(third)],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("mount -t tmpfs is not allowed here")
    try:
        target = _tree(third / "job", files=30)
        where = _killed_in_guard(target, third)
        assert where.parent == third / ".claudetto-trash"
        target.mkdir()
        (target / "new.txt").write_text("the new one\n")
        removal.purge_trash()
        assert (target / "new.txt").read_text() == "the new one\n"
        (beside,) = [p for p in third.iterdir() if p.name.startswith("job.claudetto-kept-")]
        assert len(list((beside / "sub").iterdir())) == 30
        assert not any((third / ".claudetto-trash").iterdir())
    finally:
        subprocess.run(["umount", "-l", str(third)], capture_output=True, check=False)


TWO_AT_ONCE = """
import sys, time
from app.core import removal
def guard(where):
    time.sleep(0.3)
    return None
done = removal.remove(sys.argv[1], sys.argv[2], "gc", trash=True, spawn=False, guard=guard)
print(done.status, flush=True)
"""


def test_two_removals_of_one_folder_at_once_journal_one_removal(sandbox: SandboxEnv) -> None:
    """The dashboard and a SessionEnd sweep remove the same output at the same moment: one
    removes it, the other finds it missing; one `removed` line, nothing left pending."""
    root = sandbox.user_tmp
    target = _tree(root / "shared-out", files=50)
    procs = [subprocess.Popen([sys.executable, "-P", "-c", TWO_AT_ONCE, str(target), str(root)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    answers = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert answers == ["missing", "removed"], answers
    removal.purge_trash()
    assert not target.exists()
    removed = [e for e in journal.read_entries() if e.get("result") == "removed"]
    assert [e["path"] for e in removed] == [str(target)]
    assert not any(paths.trash_dir().iterdir())
