"""Red team, round six: the removal core and the scanner on odd trees.

A tree deeper than PATH_MAX (and than the descriptors a process may hold), a folder of
100,000 entries, sparse files and hard links against `du`, FIFOs, sockets and device nodes
inside a tree, names of 255 bytes that are not UTF-8, roots that are `/` or the home, paths
with a trailing slash or `//`, a folder another user owns in a shared temp folder, a journal
swapped for a symlink, a root renamed under a removal, and purges killed at random moments.
Each drives `removal.remove` (or the CLI) as the sweeps do, on real trees in the sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import journal, paths, removal
from app.core.scanner import scan
from tests.support import ROOT, SandboxEnv, add_record, deep_folders, run_cli, set_mtime

OLD = 20 * 86_400
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown, mknod, chattr)")


def deep_tree(top: Path, depth: int) -> None:
    """`top/d/d/.../d` `depth` folders deep, a one-byte file `f` in each, made fd-relative:
    its deep end lies past PATH_MAX, where no path names it."""
    top.mkdir(parents=True)
    deep_folders(top, depth, each=("f", b"x"))


def folders_of_files(top: Path, folders: int, files: int) -> Path:
    for j in range(folders):
        (top / f"d{j}").mkdir(parents=True)
        for k in range(files):
            (top / f"d{j}" / f"f{k}").write_text("x")
    return top


@contextlib.contextmanager
def cleaned(*places: Path) -> Iterator[None]:
    """Deep trees left by a failing test go with `rm -rf` (shutil.rmtree recurses, and the
    tmp_path cleanup would stop at Python's recursion limit)."""
    try:
        yield
    finally:
        for place in places:
            subprocess.run(["rm", "-rf", str(place)], check=False)


def du(flag: str, path: Path) -> int:
    out = subprocess.run(["du", "-s", flag, str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def trash_entries() -> list[str]:
    found: list[str] = []
    for place in removal.trash_places():
        with contextlib.suppress(OSError):
            found.extend(os.listdir(place))
    return found


_CHILD = """
import json, os, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
from app.core import removal, scanner
from app.core.purge import purge_trash
action, path, root = sys.argv[2], sys.argv[3], sys.argv[4]
if action == "scan":
    size = scanner.scan(path)
    print(json.dumps([size.files, size.folders, size.errors]))
elif action == "purge":
    purge_trash(wait_s=5)
    print("[]")
else:
    done = removal.remove(path, root, "gc", trash=action == "trash", spawn=False)
    print(json.dumps([done.status, done.reason, done.files, done.folders]))
"""


def in_child(limit: int, action: str, path: Path, root: Path, wrap: tuple[str, ...] = ()) -> list[object]:
    """One scan, removal or purge in a process allowed only `limit` open descriptors (run
    through `wrap`, a command that takes root's powers away, when given)."""
    done = subprocess.run([*wrap, sys.executable, "-P", "-c", _CHILD, str(limit), action, str(path), str(root)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


# --- a tree deeper than PATH_MAX --------------------------------------------------------------


def test_a_tree_deeper_than_path_max_is_measured_whole(sandbox: SandboxEnv) -> None:
    """3,000 folders deep: its lower half lies past PATH_MAX (4,096 bytes), where the walk's
    paths can no longer be opened. The scan stopped there with one error and a size a third
    short of du's, so a sweep judged and journaled a tree it had not seen whole."""
    top = sandbox.user_tmp / "deep"
    with cleaned(top):
        deep_tree(top, 3000)
        size = scan(top)
        assert (size.files, size.folders, size.errors) == (3000, 3001, 0)
        assert size.apparent == du("-b", top)
        assert size.disk == du("-B1", top)
        alone = scan(top, parallel=False)
        assert (alone.files, alone.disk, alone.errors) == (size.files, size.disk, 0)


@pytest.mark.parametrize("trash", [False, True], ids=["purged_here", "detached_purge"])
def test_a_tree_deeper_than_the_descriptors_allowed_is_purged_whole(sandbox: SandboxEnv, trash: bool) -> None:
    """2,000 folders deep, purged by a process allowed 64 descriptors (a default soft limit
    is 1,024): the purge held one descriptor a level, ran out at the 60th, journaled the
    whole tree as removed and left the rest of it in the trash, where every later purge
    ran out at the same depth again: the space was never freed."""
    root = sandbox.user_tmp
    top = root / "deep"
    with cleaned(top, paths.trash_dir()):
        deep_tree(top, 2000)
        status = in_child(64, "trash" if trash else "here", top, root)
        assert status[:2] == ["removed", None]
        if trash:
            in_child(64, "purge", top, root)
        assert not top.exists()
        assert trash_entries() == []
        [line] = [e for e in journal.read_entries() if e["result"] == "removed"]
        assert (line["files"], line["folders"]) == (2000, 2001)
        if not trash:
            assert status[2:] == [2000, 2001]


def test_a_deep_tree_is_measured_with_few_descriptors(sandbox: SandboxEnv) -> None:
    """The scan holds one folder open at a time, whatever the depth: 64 descriptors do."""
    top = sandbox.user_tmp / "deep"
    with cleaned(top):
        deep_tree(top, 1500)
        assert in_child(64, "scan", top, sandbox.user_tmp) == [1500, 1501, 0]


def test_clean_reports_a_deep_old_session_folder_whole(sandbox: SandboxEnv) -> None:
    """`claudetto clean` on a session folder whose scratchpad is 3,000 folders deep: gone,
    and the report counts every file in it (the scan stopped at PATH_MAX: 2,035 of them)."""
    session = sandbox.claude_tmp / "-proj" / "0b6f2f4e-1111-2222-3333-444455556666"
    (session / "tasks").mkdir(parents=True)
    with cleaned(session):
        deep_tree(session / "scratchpad", 3000)
        for path in (session / "scratchpad", session / "tasks", session):
            set_mtime(path, 60 * 86_400)
        done = run_cli("clean", "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        cleaned_counts = json.loads(done.stdout)["cleaned"]
        assert (cleaned_counts["folders"], cleaned_counts["files"]) == (1, 3000)
        assert not session.exists()


def test_a_bare_repository_past_path_max_keeps_its_old_session_folder(sandbox: SandboxEnv) -> None:
    """A bare repository (HEAD beside objects/ and refs/) 2,500 folders down an old session
    folder: the scan looked for objects/ and refs/ by path, found neither past PATH_MAX, noted
    no repository, and `clean` removed the folder with whatever commits it held. Looked at
    beside the open folder, it is noted, git cannot judge it there, and the folder stays."""
    session = sandbox.claude_tmp / "-proj" / "0b6f2f4e-1111-2222-3333-444455556666"
    (session / "tasks").mkdir(parents=True)
    with cleaned(session):
        deep_tree(session / "scratchpad", 2500)
        fd = os.open(session / "scratchpad", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(2500):
                child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = child
            for name in ("objects", "refs"):
                os.mkdir(name, dir_fd=fd)
            os.close(os.open("HEAD", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        finally:
            os.close(fd)
        assert len(scan(session).repos) == 1
        for path in (session / "scratchpad", session / "tasks", session):
            set_mtime(path, 60 * 86_400)
        done = run_cli("clean", "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["cleaned"]["folders"] == 0
        assert session.is_dir() and scan(session).files == 2501


# --- wide, sparse, linked -------------------------------------------------------------------


def test_a_folder_of_100000_entries_goes_whole_through_the_trash(sandbox: SandboxEnv) -> None:
    root = sandbox.user_tmp
    top = root / "wide"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        # empty files, each with 49,999 hard links (ext4 allows 65,000): 100,000 entries to
        # list, move and unlink (what the test is about), ~4 times cheaper than new inodes
        for i in range(100_000):
            if i % 50_000 == 0:
                os.close(os.open(f"e{i}", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
            else:
                os.link(f"e{i - i % 50_000}", f"e{i}", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
    size = scan(top)
    assert (size.files, size.folders, size.errors) == (100_000, 1, 0)
    done = removal.remove(top, root, "gc", spawn=False)
    assert (done.status, done.trashed, done.files) == ("removed", True, 100_000)
    removal.purge_trash(wait_s=5)
    assert not top.exists() and trash_entries() == []


@pytest.mark.parametrize("stuck", [False, True], ids=["all_go", "one_file_refuses"])
def test_a_folder_bigger_than_one_listing_is_emptied_a_chunk_at_a_time(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch, stuck: bool) -> None:
    """A folder of millions of entries listed whole costs ~150 bytes an entry in the purge
    (1.5 GB for ten million). Listed a chunk at a time (a chunk of 100 here), it still goes
    whole; with a file that refuses to go (listed again with every chunk), the purge stops
    once a chunk takes nothing more, and leaves only that file."""
    from app.core import fd_removal

    monkeypatch.setattr(fd_removal, "LIST_CHUNK", 100)
    root = sandbox.user_tmp
    top = root / "wide"
    (top / "sub").mkdir(parents=True)
    for i in range(1050):
        (top / f"e{i}").write_text("x")
    for i in range(250):
        (top / "sub" / f"e{i}").write_text("x")
    refusing = top / "sub" / "e7"
    if stuck and subprocess.run(["chattr", "+i", str(refusing)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not supported here")
    try:
        done = removal.remove(top, root, "gc", trash=False)
        left = [str(p.relative_to(paths.trash_dir())) for p in paths.trash_dir().rglob("*")]
    finally:
        for place in paths.trash_dir().rglob("e7"):
            subprocess.run(["chattr", "-i", str(place)], capture_output=True, check=False)
    assert done.status == "removed" and not top.exists()
    if stuck:
        assert [name.split("/", 1)[1] for name in left if "/" in name] == ["sub", "sub/e7"]
        assert done.files == 1299
    else:
        assert left == [] and (done.files, done.folders) == (1300, 2)


def test_sparse_files_and_hard_links_count_as_du_counts_them(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A 1 GiB sparse file takes a few blocks; a file linked five times inside and once
    outside counts once; the removal reports what du reports, and the link outside stays."""
    root = sandbox.user_tmp
    top = root / "out"
    (top / "a" / "b").mkdir(parents=True)
    with open(top / "sparse.img", "wb") as fh:
        fh.seek(1 << 30)
        fh.write(b"end")
    (top / "data").write_bytes(os.urandom(300_000))
    for i in range(5):
        os.link(top / "data", top / "a" / "b" / f"link{i}")
    outside = tmp_path / "kept-link"
    os.link(top / "data", outside)
    size = scan(top)
    assert size.disk == du("-B1", top)
    assert size.apparent == du("-b", top)
    assert size.disk < 1 << 20
    done = removal.remove(top, root, "gc", trash=False)
    assert (done.status, done.bytes, done.files) == ("removed", size.disk, 7)
    assert outside.read_bytes()[:1] and os.stat(outside).st_nlink == 1


# --- what is never opened ---------------------------------------------------------------------


@needs_root
@pytest.mark.parametrize("trash", [False, True], ids=["purged_here", "detached_purge"])
def test_fifos_sockets_and_device_nodes_inside_are_unlinked_never_opened(sandbox: SandboxEnv,
                                                                          trash: bool) -> None:
    """A FIFO nobody writes to (an open would wait forever), a bound socket, a character and
    a block device node: counted, unlinked, never opened, in place and through the trash."""
    root = sandbox.user_tmp
    top = root / "odd"
    (top / "in").mkdir(parents=True)
    os.mkfifo(top / "in" / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(top / "in" / "sock"))
    server.close()
    os.mknod(top / "in" / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(top / "in" / "loop", 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    os.mkfifo(top / "fifo-top")
    assert scan(top).files == 5
    status = in_child(256, "trash" if trash else "here", top, root)
    if trash:
        in_child(256, "purge", top, root)
    assert status[:2] == ["removed", None]
    assert not top.exists() and trash_entries() == []


def test_a_fifo_as_the_removed_path_itself_is_unlinked(sandbox: SandboxEnv) -> None:
    root = sandbox.user_tmp
    os.mkfifo(root / "fifo")
    status = in_child(256, "trash", root / "fifo", root)
    assert status[0] == "removed" and not os.path.lexists(root / "fifo")


# --- names ------------------------------------------------------------------------------------


def long_name(stem: bytes) -> str:
    """A name of exactly 255 bytes that is not UTF-8 and holds a newline."""
    raw = (stem + b"\n\xff\xfe" + b"n" * 255)[:255]
    return os.fsdecode(raw)


def test_a_kept_folder_of_a_255_byte_name_taken_meanwhile_goes_back_beside_it(sandbox: SandboxEnv) -> None:
    """The guard keeps it, and a new folder took its name meanwhile: it goes back beside it
    as `<name>.claudetto-kept-<id>`. With a 255-byte name that suffix made a name too long,
    so it went to `$CLAUDETTO_HOME/kept`, far from where its user would look."""
    root = sandbox.user_tmp
    name = long_name(b"out")
    top = root / name
    (top / "sub").mkdir(parents=True)
    (top / "sub" / "work.txt").write_text("keep me\n")

    def guard(where: str) -> str | None:
        (root / name).mkdir()  # a new one, made while the old one is in the trash
        return "live"

    done = removal.remove(top, root, "gc", guard=guard, trash=True, spawn=False)
    assert (done.status, done.reason) == ("kept", "live")
    beside = [p for p in os.listdir(root) if p != name]
    assert len(beside) == 1 and len(os.fsencode(beside[0])) <= 255
    assert ".claudetto-kept-" in beside[0]
    assert os.fsencode(beside[0]).startswith(os.fsencode(name)[:100])
    assert (root / beside[0] / "sub" / "work.txt").read_text() == "keep me\n"
    assert trash_entries() == [] and not (paths.claudetto_home() / "kept").exists()


def test_names_that_look_like_dot_dot_are_only_names(sandbox: SandboxEnv) -> None:
    """Fullwidth full stops, a two-dot leader, `..` with a zero-width space: plain names.
    Removing one removes it alone, never its parent."""
    root = sandbox.user_tmp
    parent = root / "p"
    names = ["\uff0e\uff0e", "\u2025", "..\u200b", ". .", "...", "\u2024\u2024"]
    for name in names:
        (parent / name / "x").mkdir(parents=True)
    (parent / "sibling").mkdir()
    for name in names:
        done = removal.remove(parent / name, root, "gc", trash=False)
        assert done.status == "removed", name
    assert sorted(os.listdir(parent)) == ["sibling"]


# --- roots and spellings ------------------------------------------------------------------------


def test_a_root_that_is_slash_or_the_home_is_no_root(sandbox: SandboxEnv) -> None:
    """`/` holds everything and the home every project: neither is a root anything may be
    removed under, whatever a caller passes (the GC refuses them as roots on its own; the
    core did not)."""
    target = sandbox.home / "project"
    target.mkdir()
    for root in ("/", "//", str(sandbox.home), str(sandbox.home) + "/", str(sandbox.root)):
        done = removal.remove(target, root, "gc", trash=False)
        assert (done.status, done.reason) == ("refused", "outside_root"), root
    assert target.is_dir()


def test_a_trailing_slash_or_doubled_slashes_name_the_same_folder(sandbox: SandboxEnv) -> None:
    root = sandbox.user_tmp
    for spelling in ("a/", "b//", "c/."):
        (root / spelling.rstrip("/.")).mkdir()
        (root / spelling.rstrip("/.") / "f").write_text("x")
    (root / "keep").mkdir()
    assert removal.remove(f"{root}/a/", root, "gc", trash=False).status == "removed"
    assert removal.remove(f"{root}//b//", f"{root}/", "gc", trash=False).status == "removed"
    assert removal.remove(f"/{root}/c/.", f"{root}//", "gc", trash=False).status == "removed"
    assert removal.remove(f"{root}/", root, "gc").reason == "outside_root"
    assert removal.remove(f"{root}/keep/..", root, "gc").reason == "outside_root"
    assert sorted(os.listdir(root)) == ["keep"]


def test_a_relative_path_is_never_resolved_against_the_working_folder(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hook runs in the user's project, and a project may lie in the temp folder: `src`
    (or `./src`, `sub/../src`) named the project's own `src/`, strictly inside the root."""
    root = sandbox.user_tmp
    project = root / "scratch-project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('mine')\n")
    monkeypatch.chdir(project)
    for spelling in ("src", "./src", "src/", "../scratch-project/src"):
        done = removal.remove(spelling, root, "gc", trash=False)
        assert (done.status, done.reason) == ("refused", "outside_root"), spelling
    assert (project / "src" / "main.py").read_text() == "print('mine')\n"


def test_the_root_renamed_while_its_child_is_removed_removes_nothing(sandbox: SandboxEnv) -> None:
    root = sandbox.user_tmp / "root"
    (root / "child" / "sub").mkdir(parents=True)
    (root / "child" / "sub" / "f").write_text("x")

    def rename_root(_: str) -> None:
        os.rename(root, root.with_name("root.old"))
        (root / "child").mkdir(parents=True)  # a new root, and a new child of the same name

    done = removal.remove(root / "child", root, "gc", trash=False, _before_remove=rename_root)
    assert done.status == "refused"
    assert (root.with_name("root.old") / "child" / "sub" / "f").read_text() == "x"
    assert (root / "child").is_dir()


# --- another user's folder in a shared temp folder ------------------------------------------


@needs_root
def test_root_never_removes_a_folder_another_user_owns(sandbox: SandboxEnv) -> None:
    """root's session made `/tmp/out` and removed it; alice made her own `/tmp/out` since.
    A sticky /tmp stops any other user from removing it, never root: the removal itself
    must refuse a path that is not the remover's."""
    root = sandbox.user_tmp
    theirs = root / "out"
    (theirs / "sub").mkdir(parents=True)
    (theirs / "sub" / "thesis.tex").write_text("alice's\n")
    for path in (theirs, theirs / "sub", theirs / "sub" / "thesis.tex"):
        os.chown(path, 4242, 4242)
    for trash in (False, True):
        done = removal.remove(theirs, root, "gc", trash=trash, spawn=False)
        assert (done.status, done.reason) == ("refused", "owner")
    assert (theirs / "sub" / "thesis.tex").read_text() == "alice's\n"
    assert trash_entries() == []


@needs_root
def test_gc_run_by_root_keeps_an_old_recorded_output_another_user_owns_now(sandbox: SandboxEnv) -> None:
    root = sandbox.user_tmp
    theirs = root / "build-out"
    made = time.time()  # the record's time: the call made it then (a later birth is not its output)
    theirs.mkdir()
    (theirs / "notes.md").write_text("alice's\n")
    os.chown(theirs / "notes.md", 4242, 4242)
    os.chown(theirs, 4242, 4242)
    set_mtime(theirs, OLD)
    add_record("dead-session", theirs, when=made)
    done = run_cli("gc", "--json")
    assert done.returncode in (0, 1), done.stderr
    entries = [e for e in json.loads(done.stdout)["entries"] if e["path"] == str(theirs)]
    assert entries and all((e["status"], e["reason"]) == ("skip", "outside_root") for e in entries), entries
    assert (theirs / "notes.md").read_text() == "alice's\n"


# --- the journal ---------------------------------------------------------------------------


def test_a_journal_swapped_for_a_symlink_between_lines_keeps_the_folder(sandbox: SandboxEnv,
                                                                        tmp_path: Path) -> None:
    root = sandbox.user_tmp
    (root / "first").mkdir()
    (root / "second" / "sub").mkdir(parents=True)
    assert removal.remove(root / "first", root, "gc", trash=False).status == "removed"
    victim = tmp_path / "victim.txt"
    victim.write_text("not a journal\n")
    journal_file = paths.journal_file()
    journal_file.unlink()
    journal_file.symlink_to(victim)
    done = removal.remove(root / "second", root, "gc", trash=False)
    assert (done.status, done.reason) == ("kept", "journal")
    assert (root / "second" / "sub").is_dir()
    assert victim.read_text() == "not a journal\n"


@needs_root
@pytest.mark.parametrize("flag", ["+i", "+a"])
def test_an_immutable_journal_keeps_the_folder_and_an_append_only_one_takes_its_line(
        sandbox: SandboxEnv, flag: str) -> None:
    """`chattr +i` on the journal between two removals: no line can be written, the second
    folder comes back out of the trash. `chattr +a`: lines are only ever appended, it goes."""
    root = sandbox.user_tmp
    (root / "first").mkdir()
    (root / "second" / "sub").mkdir(parents=True)
    removal.remove(root / "first", root, "gc", trash=False)
    journal_file = paths.journal_file()
    if subprocess.run(["chattr", flag, str(journal_file)], capture_output=True, check=False).returncode:
        pytest.skip(f"chattr {flag} is not supported here")
    try:
        done = removal.remove(root / "second", root, "gc", trash=True, spawn=False)
    finally:
        subprocess.run(["chattr", "-" + flag[1:], str(journal_file)], capture_output=True, check=False)
    if flag == "+i":
        assert (done.status, done.reason) == ("kept", "journal")
        assert (root / "second" / "sub").is_dir() and trash_entries() == []
        assert [e["result"] for e in journal.read_entries()] == ["removed"]
    else:
        assert done.status == "removed" and not (root / "second").exists()
        assert [e["result"] for e in journal.read_entries()] == ["removed", "removed"]


@needs_root
def test_what_another_user_put_inside_the_removers_own_folder_goes_with_it(sandbox: SandboxEnv) -> None:
    """The decision written down: the owner check is on the removed path itself. root's own
    output goes whole, another user's file inside it too, as `rm -r` by its owner would."""
    root = sandbox.user_tmp
    top = root / "mine"
    (top / "shared").mkdir(parents=True)
    (top / "shared").chmod(0o1777)
    (top / "shared" / "theirs.txt").write_text("x")
    os.chown(top / "shared" / "theirs.txt", 4242, 4242)
    done = removal.remove(top, root, "gc", trash=False)
    assert (done.status, done.files) == ("removed", 1) and not top.exists()


# --- a purge killed at random moments --------------------------------------------------------


_PURGE = "from app.core.purge import purge_trash; purge_trash(wait_s=5)"


def test_purges_killed_at_random_moments_touch_nothing_outside_the_trash(sandbox: SandboxEnv) -> None:
    """Ten journaled folders handed to the purge and a keeper folder beside them; purges
    killed with SIGKILL at random moments, then one that runs to its end: the journaled
    ones are gone, each with its one line, and the keeper is whole."""
    root = sandbox.user_tmp
    for i in range(10):
        deep = folders_of_files(root / f"out{i}", 30, 20)
        assert removal.remove(deep, root, "gc", trash=True, spawn=False).trashed
    keeper = root / "keeper"
    (keeper / "sub").mkdir(parents=True)
    (keeper / "sub" / "f").write_text("keep\n")
    rng = random.Random(6)
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-P", "-c", _PURGE], cwd=ROOT)
        time.sleep(rng.uniform(0.05, 0.4))
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    subprocess.run([sys.executable, "-P", "-c", _PURGE], cwd=ROOT, check=True, timeout=120)
    assert trash_entries() == []
    assert sorted(os.listdir(root)) == ["keeper"]
    assert (keeper / "sub" / "f").read_text() == "keep\n"
    assert sum(e["result"] == "removed" for e in journal.read_entries()) == 10


# --- folders the remover may not read or write ---------------------------------------------

#: root without its power over permissions: what a user who is not root meets
AS_A_USER = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner")


def as_a_user_works() -> bool:
    if os.geteuid() != 0:
        return False
    try:
        return subprocess.run([*AS_A_USER, "true"], capture_output=True, check=False).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(not as_a_user_works(), reason="needs root and setpriv to act as a plain user")
@pytest.mark.parametrize("trash", [False, True], ids=["purged_here", "detached_purge"])
def test_read_only_and_closed_folders_of_the_users_own_are_purged_whole(sandbox: SandboxEnv,
                                                                         tmp_path: Path, trash: bool) -> None:
    """A Go module cache makes its folders 0555, and a test suite may leave one at 000: a user
    who is not root can rename the top into the trash, but could neither unlink what the
    read-only folders hold nor list the closed one. The removal was journaled, the tree
    stayed in the trash, and every later purge failed on it again. Folders of the user's own
    get u+rwx in the trash (they go anyway); a file is never chmod-ed: a hard link to one
    outside keeps its mode."""
    root = sandbox.user_tmp
    top = root / "gomod"
    (top / "pkg" / "mod" / "x@v1" / "sub").mkdir(parents=True)
    (top / "pkg" / "mod" / "x@v1" / "go.mod").write_text("module x\n")
    (top / "pkg" / "mod" / "x@v1" / "sub" / "a.go").write_text("package sub\n")
    outside = tmp_path / "linked.go"
    outside.write_text("package linked\n")
    outside.chmod(0o444)
    os.link(outside, top / "pkg" / "mod" / "x@v1" / "linked.go")
    (top / "closed" / "inner").mkdir(parents=True)
    (top / "closed" / "inner" / "c").write_text("x")
    for folder in ("pkg/mod/x@v1/sub", "pkg/mod/x@v1", "pkg/mod"):
        (top / folder).chmod(0o555)
    (top / "closed").chmod(0)
    with cleaned(top, paths.trash_dir()):
        status = in_child(256, "trash" if trash else "here", top, root, AS_A_USER)
        if trash:
            in_child(256, "purge", top, root, AS_A_USER)
        assert status[:2] == ["removed", None]
        assert not os.path.lexists(top) and trash_entries() == []
        assert stat.S_IMODE(outside.stat().st_mode) == 0o444 and outside.stat().st_nlink == 1


@needs_root
@pytest.mark.parametrize(("flag", "on"), [("+i", "a/b/stuck"), ("+a", "a/b/stuck"), ("+a", "a/b")])
def test_an_immutable_file_in_a_purged_tree_stays_alone_and_is_tried_once_a_purge(
        sandbox: SandboxEnv, flag: str, on: str) -> None:
    """`chattr +i` or `+a` on one file, or `+a` on a folder (nothing in it can be unlinked):
    the folder was journaled and moved, the purge takes all the rest and leaves that file
    (and the folders down to it) in the trash, tried once by each later purge; once the flag
    is cleared, the next purge finishes it."""
    root = sandbox.user_tmp
    top = root / "out"
    (top / "a" / "b").mkdir(parents=True)
    for i in range(20):
        (top / "a" / f"f{i}").write_text("x")
    stuck = top / "a" / "b" / "stuck"
    stuck.write_text("x")
    flagged = top / on
    if subprocess.run(["chattr", flag, str(flagged)], capture_output=True, check=False).returncode:
        pytest.skip(f"chattr {flag} is not supported here")
    try:
        done = removal.remove(top, root, "gc", trash=True, spawn=False)
        assert done.status == "removed" and not top.exists()
        for _ in range(2):
            removal.purge_trash(wait_s=5)
            [entry] = trash_entries()
            left = [str(p.relative_to(paths.trash_dir() / entry)) for p in (paths.trash_dir() / entry).rglob("*")]
            assert sorted(left) == ["a", "a/b", "a/b/stuck"]
    finally:
        for place in [*paths.trash_dir().rglob(os.path.basename(on)), flagged]:
            subprocess.run(["chattr", "-" + flag[1:], str(place)], capture_output=True, check=False)
    removal.purge_trash(wait_s=5)
    assert trash_entries() == []
    assert [e["result"] for e in journal.read_entries()] == ["removed"]


# --- at the same time ------------------------------------------------------------------------


def test_a_scan_and_a_removal_of_one_tree_at_once_both_finish(sandbox: SandboxEnv) -> None:
    """The dashboard measures a tree while a sweep removes it: the scan counts what vanished
    as errors and ends, the removal takes the whole tree; neither raises."""
    import threading

    root = sandbox.user_tmp
    for attempt in range(3):
        top = folders_of_files(root / f"busy{attempt}", 100, 60)
        sizes: list[object] = []
        reader = threading.Thread(target=lambda top=top, sizes=sizes: sizes.append(scan(top, parallel=True)))
        reader.start()
        time.sleep(0.01 * attempt)
        done = removal.remove(top, root, "gc", trash=attempt == 1, spawn=False)
        reader.join(60)
        assert not reader.is_alive() and len(sizes) == 1
        assert done.status == "removed" and not top.exists()
    removal.purge_trash(wait_s=5)
    assert trash_entries() == []


def test_a_folder_that_fills_while_the_purge_empties_it_is_finished_by_the_next_purge(
        sandbox: SandboxEnv) -> None:
    """A writer still adding files to a folder the purge is emptying (its entries listed
    already): the folder cannot go this time; the next purge takes what is left."""
    import threading

    root = sandbox.user_tmp
    top = root / "filling"
    (top / "sub").mkdir(parents=True)
    for k in range(3000):
        (top / "sub" / f"f{k}").write_text("x")
    done = removal.remove(top, root, "gc", trash=True, spawn=False)
    [entry] = trash_entries()
    moved = paths.trash_dir() / entry / "sub"
    stop = threading.Event()

    def writer() -> None:
        n = 0
        while not stop.is_set():
            with contextlib.suppress(OSError):
                (moved / f"new{n}").write_text("x")
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        removal.purge_trash(wait_s=5)
    finally:
        stop.set()
        thread.join()
    removal.purge_trash(wait_s=5)
    assert done.status == "removed" and trash_entries() == []


# --- a gap in another module, kept visible ------------------------------------------------


def test_an_old_output_deeper_than_path_max_is_collected(sandbox: SandboxEnv) -> None:
    top = sandbox.user_tmp / "deep-out"
    with cleaned(top):
        made = time.time()  # the record's time: a later birth would not be its output
        deep_tree(top, 2500)
        set_mtime(top, OLD)
        add_record("dead-session", top, when=made)
        done = run_cli("gc", "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        [entry] = [e for e in json.loads(done.stdout)["entries"] if e["path"] == str(top)]
        assert (entry["status"], entry["reason"]) == ("removed", "age")
        assert not top.exists()


@pytest.mark.skipif(not as_a_user_works(), reason="needs root and setpriv to act as a plain user")
def test_a_journal_made_read_only_between_two_removals_keeps_the_second_folder(sandbox: SandboxEnv) -> None:
    root = sandbox.user_tmp
    (root / "first").mkdir()
    (root / "second" / "sub").mkdir(parents=True)
    assert in_child(256, "here", root / "first", root, AS_A_USER)[0] == "removed"
    paths.journal_file().chmod(0o444)
    assert in_child(256, "trash", root / "second", root, AS_A_USER)[:2] == ["kept", "journal"]
    assert (root / "second" / "sub").is_dir() and trash_entries() == []
    assert [e["result"] for e in journal.read_entries()] == ["removed"]


@needs_root
def test_a_trash_in_a_folder_another_user_owns_is_neither_used_nor_purged(sandbox: SandboxEnv) -> None:
    """On a shared machine the first user to run claudetto makes `<tmp>/claudetto`; made
    0777, its owner can rename whatever lies in it: swap our trash for another folder of ours
    between the move and the last check, or have the purge empty it. A trash there is passed
    over (the next place is used) and never purged."""
    root = sandbox.user_tmp
    paths.trash_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.trash_dir().write_text("not a folder\n")  # claudetto's own trash cannot be had
    theirs = paths.log_root()
    theirs.mkdir(parents=True)
    os.chown(theirs, 4242, 4242)
    theirs.chmod(0o777)
    (theirs / "trash" / "ours-already" / "sub").mkdir(parents=True)  # ours, as if made before
    (theirs / "trash" / "ours-already" / "sub" / "f").write_text("x")
    (root / "out" / "sub").mkdir(parents=True)
    done = removal.remove(root / "out", root, "gc", trash=True, spawn=False)
    assert (done.status, done.trashed) == ("removed", True)
    assert os.listdir(root / removal.ROOT_TRASH_NAME)  # the root's own trash took it
    assert os.listdir(theirs / "trash") == ["ours-already"]
    removal.purge_trash(wait_s=5)
    assert (theirs / "trash" / "ours-already" / "sub" / "f").read_text() == "x"
    assert os.listdir(root / removal.ROOT_TRASH_NAME) == []


def test_a_deep_purge_killed_while_it_moves_folders_up_is_finished_by_the_next(sandbox: SandboxEnv) -> None:
    """3,000 folders deep, so the purge moves folders up into the top as it goes; killed with
    SIGKILL at random moments, the next purge finds a tree of another shape and finishes it,
    and nothing beside the trash is touched."""
    root = sandbox.user_tmp
    top = root / "deep"
    keeper = folders_of_files(root / "keeper", 3, 3)
    with cleaned(top, paths.trash_dir()):
        deep_tree(top, 3000)
        assert removal.remove(top, root, "gc", trash=True, spawn=False).trashed
        rng = random.Random(66)
        for _ in range(5):
            proc = subprocess.Popen([sys.executable, "-P", "-c", _PURGE], cwd=ROOT)
            time.sleep(rng.uniform(0.05, 0.3))
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        subprocess.run([sys.executable, "-P", "-c", _PURGE], cwd=ROOT, check=True, timeout=300)
        assert trash_entries() == []
        assert sorted(os.listdir(root)) == ["keeper"] and scan(keeper).files == 9
