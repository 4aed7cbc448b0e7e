"""Red team, round three: the removal core under the attacks the first two rounds did not try.

A bind mount on the way from the root down to the target (not inside it), a folder that
refuses to be renamed (immutable), a journal on a full disk that takes half a line, a unix
socket a live server listens on, the root's own parent swapped for a symlink, and a removal
that has no trash (in place) while a bind mount appears inside it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import gc, journal, paths, removal
from tests.support import SandboxEnv, add_record, run_cli, set_mtime

OLD = 20 * 86_400

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts and chattr need root")


def tree(path: Path, files: int = 5) -> Path:
    (path / "sub").mkdir(parents=True)
    for i in range(files):
        (path / "sub" / f"f{i}").write_text(str(i))
    return path


@contextlib.contextmanager
def bind(source: Path, point: Path) -> Iterator[None]:
    point.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "--bind", str(source), str(point)], capture_output=True,
                      check=False).returncode != 0:
        pytest.skip("mount --bind is not allowed here")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not supported here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)


def no_trash_anywhere(sandbox: SandboxEnv, root: Path) -> None:
    """Every trash place of `root`'s file system made unusable: claudetto's own is a file, the
    one beside the logs is reached through a symlink, the root's own is another user's."""
    paths.trash_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.trash_dir().write_text("not a folder\n")
    elsewhere = sandbox.root / "elsewhere"
    elsewhere.mkdir()
    paths.log_root().parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, paths.log_root())
    theirs = root / removal.ROOT_TRASH_NAME
    theirs.mkdir()
    os.chown(theirs, 4242, 4242)


# --- a bind mount on the way down -----------------------------------------------------------


@needs_root
def test_a_bind_mount_between_the_root_and_the_target_keeps_the_users_folder(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`mount --bind ~/proj $TMPDIR/work`: `$TMPDIR/work/build` is the user's `~/proj/build`.
    Nothing at or below the target is a mount point; the mount is ABOVE it, on the way down
    from the root, and it is the same file system, so no device changes anywhere."""
    project = tmp_path / "user" / "proj"
    (project / "build").mkdir(parents=True)
    (project / "build" / "app.bin").write_text("the user's build\n")
    root = sandbox.user_tmp
    with bind(project, root / "work"):
        result = removal.remove(root / "work" / "build", root, "gc", trash=False)
        assert (result.status, result.reason) == ("refused", "mount")
        assert (project / "build" / "app.bin").read_text() == "the user's build\n"


@needs_root
def test_the_gc_keeps_a_recorded_output_that_lies_inside_a_bind_mount(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The same through `claudetto gc`, as a user runs it: an old record of a folder under
    the temp root that is, by now, reached through a bind mount of the user's project."""
    project = tmp_path / "user" / "proj"
    (project / "out").mkdir(parents=True)
    (project / "out" / "report.txt").write_text("keep me\n")
    root = sandbox.user_tmp
    with bind(project, root / "tmp.mounted"):
        target = root / "tmp.mounted" / "out"
        set_mtime(target, OLD)
        add_record("dead-session", target)
        done = run_cli("gc", "--json")
        assert done.returncode in (0, 1), done.stderr
        entry = next(e for e in json.loads(done.stdout)["entries"] if e["path"].endswith("/out"))
        assert entry["status"] != "removed"
        assert (project / "out" / "report.txt").read_text() == "keep me\n"


# --- a folder that refuses to move ----------------------------------------------------------


@needs_root
def test_a_folder_that_cannot_be_renamed_is_not_half_deleted_in_place(sandbox: SandboxEnv) -> None:
    """An immutable folder (chattr +i; a read-only one for a user who is not root) cannot be
    renamed into the trash, nor can its own entries be unlinked: removing it in place would
    empty its subfolders and then fail, leaving a half-deleted folder. It stays whole."""
    root = sandbox.user_tmp
    target = tree(root / "frozen")
    with immutable(target):
        result = removal.remove(target, root, "gc", trash=False)
        assert result.status != "removed"
        assert sorted(p.name for p in (target / "sub").iterdir()) == [f"f{i}" for i in range(5)]
    lines = journal.read_entries()
    assert [e["result"] for e in lines] == ["failed"]  # said, with nothing removed
    assert lines[0]["files"] == 0 and lines[0]["bytes"] == 0


# --- the journal on a full disk -------------------------------------------------------------


@needs_root
def test_a_journal_line_the_full_disk_cuts_in_half_keeps_the_folder(sandbox: SandboxEnv) -> None:
    """CLAUDETTO_HOME on a file system with no block left: the journal line crosses into a
    block that cannot be had, so `write()` takes half of it and says so by its count, not by
    an error. The removal must not go on with half a line; nor may the journal keep it."""
    state = sandbox.state
    state.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(state)],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("mount -t tmpfs is not allowed here")
    try:
        pad = json.dumps({"time": "2026-01-01T00:00:00Z", "path": "/old", "result": "removed",
                          "bytes": 0, "note": ""})
        first = pad[:-2] + "x" * (4096 - 60 - len(pad)) + '"}\n'
        (state / "journal.jsonl").write_text(first)  # 60 bytes left in its block
        (state / "journal.jsonl.lock").touch()
        with contextlib.suppress(OSError), open(state / "fill", "wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        target = tree(sandbox.user_tmp / "t")
        result = removal.remove(target, sandbox.user_tmp, "gc", trash=False)
        assert (result.status, result.reason) == ("kept", "journal")
        assert sorted(p.name for p in (target / "sub").iterdir()) == [f"f{i}" for i in range(5)]
        raw = (state / "journal.jsonl").read_bytes()
        assert raw == first.encode()  # no half line left to glue the next one to
    finally:
        subprocess.run(["umount", "-l", str(state)], capture_output=True, check=False)


# --- a unix socket a live server listens on ------------------------------------------------

SERVER = """
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(os.environ["SOCKET_PATH"])
s.listen()
os.chdir("/")
sys.stdout.write("ready\\n"); sys.stdout.flush()
time.sleep(60)
"""


def test_a_unix_socket_a_live_server_listens_on_keeps_its_folder(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """A dev server bound `$TMPDIR/tmp.X/dev.sock` and works from elsewhere: its cwd, its
    command line and its open files (`socket:[...]`) name nothing in the folder; only the
    kernel's list of bound sockets does. Removing the folder would cut every new client off."""
    folder = sandbox.user_tmp / "tmp.devserver"
    folder.mkdir()
    (folder / "config.toml").write_text("port = 0\n")
    add_record("dead-session", folder)
    env = {**os.environ, "SOCKET_PATH": str(folder / "dev.sock")}
    server = subprocess.Popen([sys.executable, "-c", SERVER], env=env, stdout=subprocess.PIPE, cwd="/")
    started.append(server)
    assert server.stdout is not None and server.stdout.readline() == b"ready\n"
    set_mtime(folder, OLD)  # the bind made it young again: a week-old server
    key = os.path.realpath(folder)
    report = gc.sweep(trash=False)
    assert {e.path: (e.status, e.reason) for e in report.entries}[key] == ("kept", "in_use")
    client = socket.socket(socket.AF_UNIX)
    try:
        client.connect(str(folder / "dev.sock"))  # still reachable
    finally:
        client.close()


# --- the root's own parent swapped ----------------------------------------------------------


def test_a_parent_of_the_root_swapped_for_a_symlink_after_the_check_removes_nothing(sandbox: SandboxEnv) -> None:
    """The project folder renamed and a symlink to another one put in its place between the
    check and the removal (`mv proj proj.old && ln -s ~/other proj`): the root now resolves
    elsewhere, and the same relative path there is somebody else's folder."""
    base = sandbox.root / "projects"
    root = base / "proj" / ".claude" / "worktrees"
    tree(root / "feature")
    other = base / "other"
    (other / ".claude" / "worktrees" / "feature").mkdir(parents=True)
    (other / ".claude" / "worktrees" / "feature" / "precious.txt").write_text("mine\n")

    def swap(_: str) -> None:
        os.rename(base / "proj", base / "proj.old")
        os.symlink(other, base / "proj")

    result = removal.remove(root / "feature", root, "worktree", trash=False, _before_remove=swap)
    assert result.status != "removed"
    assert (other / ".claude" / "worktrees" / "feature" / "precious.txt").read_text() == "mine\n"
    assert (base / "proj.old" / ".claude" / "worktrees" / "feature" / "sub" / "f0").exists()


# --- no trash: the removal in place --------------------------------------------------------


@needs_root
def test_a_mount_made_inside_a_folder_removed_in_place_is_never_emptied(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """With no trash on its file system a folder is removed in place; a bind mount of the
    user's data made inside it after the first check has the folder's own device, so only
    the mount table shows it, and it must be read again right before the walk."""
    data = tmp_path / "precious"
    data.mkdir()
    (data / "keep.txt").write_text("do not delete\n")
    root = sandbox.user_tmp
    no_trash_anywhere(sandbox, root)
    target = tree(root / "t")
    (target / "mnt").mkdir()
    mounted: list[Path] = []

    def mount_now(where: str) -> None:
        if subprocess.run(["mount", "--bind", str(data), str(Path(where) / "mnt")],
                          capture_output=True, check=False).returncode == 0:
            mounted.append(Path(where) / "mnt")

    try:
        result = removal.remove(target, root, "gc", trash=False, _before_remove=mount_now)
        if not mounted:
            pytest.skip("mount --bind is not allowed here")
        assert result.status != "removed"
        assert (data / "keep.txt").read_text() == "do not delete\n"
    finally:
        for point in mounted:
            subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


# --- nested records: a live session's file inside an old output ---------------------------


def test_a_live_sessions_new_file_inside_an_old_dead_output_keeps_the_folder(
        sandbox: SandboxEnv, live_pid: int) -> None:
    """A new session picks up the work in an old session's `mktemp -d` folder (`continue in
    /tmp/tmp.X`) and writes `out/notes.md` there. The folder's own mtime does not move for a
    file written in a subfolder, its recording session is gone, and the live session's
    process works elsewhere: judged alone, the old folder goes, and the new file with it."""
    from app.core.sessions import proc_start_time

    folder = sandbox.user_tmp / "tmp.shared"
    (folder / "out").mkdir(parents=True)
    (folder / "out" / "old.txt").write_text("old\n")
    add_record("dead-session", folder)
    live = "live-session-writing-now"
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=live, cwd=str(sandbox.home),
                          procStart=proc_start_time(live_pid))
    (folder / "out" / "notes.md").write_text("written a minute ago by a live session\n")
    add_record(live, folder / "out" / "notes.md", kind="scratch", when=1e9)
    set_mtime(folder, OLD)
    report = gc.sweep(trash=False)
    by_path = {e.path: (e.status, e.reason) for e in report.entries}
    assert by_path[os.path.realpath(folder / "out" / "notes.md")][0] == "kept"
    assert by_path[os.path.realpath(folder)][0] == "kept"
    assert (folder / "out" / "notes.md").exists()


# --- the trash itself --------------------------------------------------------------------


@needs_root
def test_a_trash_folder_that_is_a_bind_mount_of_the_users_folder_is_never_purged(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`~/.claudetto/trash` with the user's own folder bind-mounted over it: same device,
    same owner, a real folder reached through no symlink. Every check of "a trash of ours"
    passes, and the purge empties whatever is in it: the user's folder."""
    data = tmp_path / "user" / "photos"
    (data / "2019").mkdir(parents=True)
    (data / "2019" / "beach.jpg").write_bytes(b"\xff\xd8 not really a jpeg\n")
    with bind(data, paths.trash_dir()):
        removal.purge_trash()
        assert (data / "2019" / "beach.jpg").exists()
        target = tree(sandbox.user_tmp / "t")
        result = removal.remove(target, sandbox.user_tmp, "gc", trash=False)
        assert result.status == "removed"  # through another trash: the one beside the logs
        assert sorted(p.name for p in data.iterdir()) == ["2019"]
    assert (data / "2019" / "beach.jpg").exists()


def test_a_hard_link_inside_a_removed_folder_only_loses_that_link(sandbox: SandboxEnv) -> None:
    """`ln ~/thesis.tex $TMPDIR/tmp.X/thesis.tex`: the removal takes the link in the folder;
    the user's name of the same file keeps every byte (nothing is truncated or written)."""
    mine = sandbox.home / "thesis.tex"
    mine.write_text("years of work\n")
    folder = sandbox.user_tmp / "tmp.links"
    folder.mkdir()
    os.link(mine, folder / "thesis.tex")
    for trash in (False, True):
        if not folder.exists():
            folder.mkdir()
            os.link(mine, folder / "thesis.tex")
        result = removal.remove(folder, sandbox.user_tmp, "gc", trash=trash)
        assert result.status == "removed"
        removal.purge_trash()
        assert mine.read_text() == "years of work\n" and os.stat(mine).st_nlink == 1


def test_a_fifo_a_live_writer_holds_open_keeps_its_folder(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """A process writing into a named pipe in an old output folder (a log pipe of a long
    job): its open file names the pipe, so the folder is in use."""
    folder = sandbox.user_tmp / "tmp.pipe"
    folder.mkdir()
    os.mkfifo(folder / "log.pipe")
    reader = os.open(folder / "log.pipe", os.O_RDONLY | os.O_NONBLOCK)
    try:
        writer = subprocess.Popen(["sh", "-c", 'exec 3>"$0"; sleep 60', str(folder / "log.pipe")], cwd="/")
        started.append(writer)
        add_record("dead-session", folder)
        for _ in range(100):
            if any(os.path.realpath(f"/proc/{writer.pid}/fd/{fd}") == str(folder / "log.pipe")
                   for fd in os.listdir(f"/proc/{writer.pid}/fd")):
                break
            import time

            time.sleep(0.05)
        set_mtime(folder, OLD)
        report = gc.sweep(trash=False)
        assert {e.path: (e.status, e.reason) for e in report.entries}[os.path.realpath(folder)] == ("kept", "in_use")
        assert (folder / "log.pipe").exists()
    finally:
        os.close(reader)


KILLED_IN_GUARD = """
import sys, time
from app.core import removal
def guard(where):
    print(where, flush=True)
    time.sleep(60)
removal.remove(sys.argv[1], sys.argv[2], "gc", trash=True, guard=guard)
"""


def test_a_killed_removal_whose_pid_was_taken_by_a_new_process_is_put_back_at_once(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """A removal killed (OOM, a reboot of the terminal) before its journal line leaves its
    folder pending in the trash, named with its pid. When another process gets that pid, the
    purge took the pending folder for one still being checked and left it in the trash, out
    of the user's sight, for a day. A process that started after the folder was moved there
    cannot be the one moving it."""
    target = tree(sandbox.user_tmp / "killed", files=7)
    proc = subprocess.Popen([sys.executable, "-P", "-c", KILLED_IN_GUARD, str(target), str(sandbox.user_tmp)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    where = Path(proc.stdout.readline().strip())
    proc.kill()
    proc.wait()
    import time

    time.sleep(2.5)  # the new process starts well after the folder was moved
    newcomer = subprocess.Popen(["sleep", "60"])
    started.append(newcomer)
    born, _pid, token = where.name.removeprefix(".pending-").split("-", 2)
    reused = where.with_name(f".pending-{born}-{newcomer.pid}-{token}")  # the pid, handed on
    os.rename(where, reused)
    os.rename(f"{where}.origin", f"{reused}.origin")
    removal.purge_trash()
    assert sorted(p.name for p in (target / "sub").iterdir()) == [f"f{i}" for i in range(7)]
    assert not reused.exists()


# --- claudetto's own state inside the target --------------------------------------------------


def test_a_folder_holding_claudettos_own_state_is_not_removed(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDETTO_HOME under the temp folder, and an old output around it (`mkdir -p
    $TMPDIR/work` recorded, then `CLAUDETTO_HOME=$TMPDIR/work/state`). The folder cannot be
    renamed into a trash inside itself; removed in place, it took the journal being written
    and every other removal's folder still pending in the trash."""
    work = sandbox.user_tmp / "work"
    state = work / "state"
    monkeypatch.setenv("CLAUDETTO_HOME", str(state))
    tree(work / "job")
    other = tree(sandbox.user_tmp / "other")
    inner: list[removal.Removal] = []

    def meanwhile(where: str) -> None:
        """Another removal, of `work`, while this one's folder is pending in the trash."""
        assert Path(where).parent == state / "trash"
        inner.append(removal.remove(work, sandbox.user_tmp, "gc", trash=False))

    result = removal.remove(other, sandbox.user_tmp, "gc", trash=False, guard=meanwhile)
    assert inner[0].status == "failed"
    assert result.status == "removed"  # its folder was still there to purge
    assert (work / "job" / "sub" / "f0").exists()
    assert [e["result"] for e in journal.read_entries()] == ["failed", "removed"]


def test_a_read_only_claudetto_home_keeps_every_folder_and_says_so(sandbox: SandboxEnv) -> None:
    """The journal cannot be written (CLAUDETTO_HOME on a read-only mount): `claudetto gc`
    removes nothing, keeps each with reason `journal`, and exits 1 with one line."""
    if os.geteuid() != 0:
        pytest.skip("mounts need root")
    folder = tree(sandbox.user_tmp / "tmp.old")
    set_mtime(folder, OLD)
    add_record("dead-session", folder)
    state = sandbox.state
    if subprocess.run(["mount", "--bind", "-o", "ro", str(state), str(state)], capture_output=True,
                      check=False).returncode != 0:
        pytest.skip("mount --bind -o ro is not allowed here")
    try:
        done = run_cli("gc", "--json")
    finally:
        subprocess.run(["umount", "-l", str(state)], capture_output=True, check=False)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    if done.stdout.strip():  # the sweep ran: each folder kept for the journal
        (entry,) = json.loads(done.stdout)["entries"]
        assert (entry["status"], entry["reason"]) == ("kept", "journal")
    assert sorted(p.name for p in (folder / "sub").iterdir()) == [f"f{i}" for i in range(5)]


# --- the root itself ------------------------------------------------------------------------


def test_the_root_swapped_for_a_symlink_after_the_check_removes_nothing(sandbox: SandboxEnv) -> None:
    base = sandbox.root / "projects"
    root = base / "proj" / ".claude" / "worktrees"
    tree(root / "feature")
    theirs = base / "theirs"
    (theirs / "feature").mkdir(parents=True)
    (theirs / "feature" / "precious.txt").write_text("mine\n")

    def swap(_: str) -> None:
        os.rename(root, root.with_name("worktrees.old"))
        os.symlink(theirs, root)

    result = removal.remove(root / "feature", root, "worktree", trash=False, _before_remove=swap)
    assert result.status != "removed"
    assert (theirs / "feature" / "precious.txt").read_text() == "mine\n"


@needs_root
def test_a_bind_mount_over_the_root_after_the_check_removes_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user mounts a folder of theirs over the worktrees folder between the check and the
    removal: same device, and the path leads to their `feature`, not the checked one."""
    root = sandbox.root / "proj" / ".claude" / "worktrees"
    tree(root / "feature")
    theirs = tmp_path / "theirs"
    (theirs / "feature").mkdir(parents=True)
    (theirs / "feature" / "precious.txt").write_text("mine\n")
    mounted: list[Path] = []

    def mount_over(_: str) -> None:
        if subprocess.run(["mount", "--bind", str(theirs), str(root)], capture_output=True,
                          check=False).returncode == 0:
            mounted.append(root)

    try:
        result = removal.remove(root / "feature", root, "worktree", trash=False, _before_remove=mount_over)
        if not mounted:
            pytest.skip("mount --bind is not allowed here")
        assert result.status != "removed"
        assert (theirs / "feature" / "precious.txt").read_text() == "mine\n"
    finally:
        for point in mounted:
            subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


# --- bind mounts at every depth, through the CLI ----------------------------------------


@needs_root
@pytest.mark.parametrize("depth", [0, 1, 3])
def test_gc_never_empties_a_bind_mount_at_any_depth_of_an_old_output(
        sandbox: SandboxEnv, tmp_path: Path, depth: int) -> None:
    """`mount --bind ~/data` over the output itself (depth 0) or a folder inside it."""
    data = tmp_path / "user" / "data"
    data.mkdir(parents=True)
    (data / "keep.txt").write_text("do not delete\n")
    folder = tree(sandbox.user_tmp / "tmp.old")
    point = folder.joinpath(*[f"d{i}" for i in range(depth)])
    point.mkdir(parents=True, exist_ok=True)
    add_record("dead-session", folder)
    with bind(data, point):
        set_mtime(folder, OLD)
        done = run_cli("gc", "--json")
        assert done.returncode == 0, done.stderr
        (entry,) = json.loads(done.stdout)["entries"]
        assert (entry["status"], entry["reason"]) == ("kept", "in_use")
        assert (data / "keep.txt").read_text() == "do not delete\n"
    assert (folder / "sub" / "f0").exists()


@needs_root
def test_a_bind_mount_over_the_target_after_the_check_is_never_walked(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Mounted over the checked folder itself between the check and the removal: a mount
    point cannot be renamed into the trash (EBUSY), and that is no reason to go in place."""
    data = tmp_path / "precious"
    data.mkdir()
    (data / "keep.txt").write_text("do not delete\n")
    target = tree(sandbox.user_tmp / "t")
    mounted: list[Path] = []

    def mount_over(_: str) -> None:
        if subprocess.run(["mount", "--bind", str(data), str(target)], capture_output=True,
                          check=False).returncode == 0:
            mounted.append(target)

    try:
        result = removal.remove(target, sandbox.user_tmp, "gc", trash=False, _before_remove=mount_over)
        if not mounted:
            pytest.skip("mount --bind is not allowed here")
        assert result.status != "removed"
        assert (data / "keep.txt").read_text() == "do not delete\n"
    finally:
        for point in mounted:
            subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def test_two_gc_runs_at_once_remove_each_output_once(sandbox: SandboxEnv) -> None:
    """Two `claudetto gc` started together (two sessions ending at once): each old output is
    journaled removed exactly once, neither run fails with a traceback."""
    folders = [tree(sandbox.user_tmp / f"tmp.old{i}", files=3) for i in range(6)]
    for folder in folders:
        set_mtime(folder, OLD)
        add_record("dead-session", folder)
    env = dict(os.environ)
    runs = [subprocess.Popen([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                              "gc", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(2)]
    outs = [run.communicate(timeout=120) for run in runs]
    for run, (_out, err) in zip(runs, outs, strict=True):
        assert run.returncode in (0, 1) and "Traceback" not in err, err
    assert not any(folder.exists() for folder in folders)
    removed = [e["path"] for e in journal.read_entries() if e.get("result") == "removed"]
    assert sorted(removed) == sorted(os.path.realpath(f) for f in folders)


# --- a trash on a full file system -------------------------------------------------------


@needs_root
def test_a_removal_killed_while_its_trash_had_no_room_for_the_note_leaves_the_folder_in_place(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temp file system is out of inodes: the folder could be renamed into the trash, but
    the note of where it came from could not be written. Killed before its journal line, the
    folder was then in the trash with no way back, kept there, out of sight, for ever."""
    full = sandbox.root / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,nr_inodes=64", "tmpfs", str(full)],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("mount -t tmpfs is not allowed here")
    try:
        for name in ("TMPDIR", "CLAUDE_CODE_TMPDIR"):
            monkeypatch.setenv(name, str(full))
        (full / "claudetto" / "trash").mkdir(parents=True)
        target = tree(full / "work", files=3)
        with contextlib.suppress(OSError):
            for i in range(1000):
                (full / f"inode{i}").touch()
        proc = subprocess.Popen([sys.executable, "-P", "-c", KILLED_IN_GUARD, str(target), str(full)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.kill()
        proc.wait()
        removal.purge_trash()
        assert sorted(p.name for p in (target / "sub").iterdir()) == ["f0", "f1", "f2"]
    finally:
        subprocess.run(["umount", "-l", str(full)], capture_output=True, check=False)


@needs_root
def test_an_entry_the_purge_cannot_finish_is_tried_once_per_purge_not_a_hundred_times(sandbox: SandboxEnv) -> None:
    """A trashed folder holding a file that cannot be unlinked (immutable): each purge walks
    it once, logs it once and goes on; it does not walk and log it a hundred times, on every
    session start, while the rest of the trash waits."""
    from app.core.log import current_log

    target = tree(sandbox.user_tmp / "stuck", files=2)
    with immutable(target / "sub" / "f0"):
        result = removal.remove(target, sandbox.user_tmp, "gc", trash=True, spawn=False)
    (stuck,) = paths.trash_dir().glob("*/sub/f0")  # moved with its folder: the flag too
    try:
        assert result.status == "removed"
        removal.purge_trash()
        lines = [line for line in current_log().read_text().splitlines() if "purge of" in line]
        assert 1 <= len(lines) <= 2, len(lines)
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], capture_output=True, check=False)
    removal.purge_trash()
    assert not any(paths.trash_dir().iterdir())


def test_a_server_that_binds_a_socket_in_the_folder_right_before_its_removal_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """Judged unused, then a server binds `dev.sock` in the folder before the removal: the
    last check, made with the folder moved aside, still finds it under its first name."""
    folder = sandbox.user_tmp / "tmp.late-server"
    folder.mkdir()
    (folder / "config.toml").write_text("port = 0\n")
    set_mtime(folder, OLD)
    add_record("dead-session", folder)

    def binds(_: str) -> None:
        env = {**os.environ, "SOCKET_PATH": str(folder / "dev.sock")}
        server = subprocess.Popen([sys.executable, "-c", SERVER], env=env, stdout=subprocess.PIPE, cwd="/")
        started.append(server)
        assert server.stdout is not None and server.stdout.readline() == b"ready\n"

    report = gc.sweep(trash=False, _before_remove=binds)
    assert {e.path: (e.status, e.reason) for e in report.entries}[os.path.realpath(folder)] == ("kept", "in_use")
    assert (folder / "config.toml").exists() and (folder / "dev.sock").exists()


def test_an_empty_or_relative_root_is_no_root(sandbox: SandboxEnv, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A verdict "in no root" carries root "": realpath("") is the working folder, the
    user's project when the dashboard was started there, so any folder in it would do."""
    project = tmp_path / "project"
    tree(project / "src")
    monkeypatch.chdir(project)
    for root in ("", ".", "src/.."):
        result = removal.remove(project / "src", root, "gc", trash=False)
        assert (result.status, result.reason) == ("refused", "outside_root")
    assert (project / "src" / "sub" / "f0").exists()
