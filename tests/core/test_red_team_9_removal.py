"""Red team, round nine: the removal core and the session-start cleanup.

A state folder (CLAUDETTO_HOME) that is a folder of the user's holding a `trash/` of their
own, a journal that ends in half a line or has grown past what is read, folder names that
only look like a session's, a file inside that refuses to go (`chattr +i`), hard links
shared with the user's own files, mtimes in the future, a folder that is a mount point or
has a tmpfs mounted on it. Each is driven as a user and Claude would: `claudetto clean`,
the purge job as the detached process runs it, `removal.remove` as the sweeps call it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core import journal, paths, removal
from tests.core.test_red_team_3_removal import no_trash_anywhere
from tests.support import ROOT, SandboxEnv, run_cli, run_hook, set_mtime

OLD = 40 * 86_400
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mount, chattr)")


def session_folder(sandbox: SandboxEnv, files: dict[str, bytes] | None = None, *,
                   project: str = "-p", name: str | None = None, age: float = OLD) -> Path:
    """An old session folder of a dead session, as Claude leaves it in claude-<uid>."""
    folder = sandbox.claude_tmp / project / (name or str(uuid.uuid4()))
    (folder / "tasks").mkdir(parents=True)
    for rel, data in (files or {"tasks/a.output": b"x" * 5000}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    set_mtime(folder, age)
    return folder


def clean_json() -> dict[str, Any]:
    done = run_cli("clean", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def purge_now() -> None:
    """The purge as the detached `purge-trash` job runs it."""
    done = subprocess.run([sys.executable, "-P", "-m", "app.core.purge"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def files_under(top: Path) -> dict[str, bytes]:
    return {str(p.relative_to(top)): p.read_bytes() for p in sorted(top.rglob("*")) if p.is_file()}


# --- the state folder is a folder of the user's ---------------------------------------------


def test_a_state_folder_of_the_users_own_keeps_the_trash_folder_it_already_held(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDETTO_HOME set to a folder of the user's (`~/notes`) that holds a `trash/` of
    their own: the purge took every entry of `<CLAUDETTO_HOME>/trash`, and every session
    start spawns one. Only what a removal put there (its slot names) is the purge's."""
    notes = sandbox.home / "notes"
    (notes / "trash" / "ideas").mkdir(parents=True)
    (notes / "trash" / "ideas" / "plan.md").write_text("the plan\n")
    (notes / "trash" / "draft.txt").write_text("draft\n")
    (notes / "trash" / "1-2-zz").write_text("not hex\n")
    monkeypatch.setenv("CLAUDETTO_HOME", str(notes))
    gone = session_folder(sandbox)
    before = files_under(notes / "trash")

    report = clean_json()
    purge_now()

    assert report["cleaned"]["folders"] == 1 and not gone.exists()
    assert files_under(notes / "trash") == before
    assert sorted(os.listdir(notes / "trash")) == ["1-2-zz", "draft.txt", "ideas"]


def test_a_leftover_of_a_killed_purge_beside_the_users_files_is_still_purged(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other side: what a removal moved there and journaled (a purge killed before it
    finished) goes with the next purge, whatever else the folder holds."""
    notes = sandbox.home / "notes"
    (notes / "trash").mkdir(parents=True)
    (notes / "trash" / "keep.txt").write_text("mine\n")
    monkeypatch.setenv("CLAUDETTO_HOME", str(notes))
    target = sandbox.user_tmp / "out"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "f").write_text("x")
    done = removal.remove(target, sandbox.user_tmp, "gc", trash=True, spawn=False)
    assert (done.status, done.trashed) == ("removed", True)
    assert len(os.listdir(notes / "trash")) == 2

    purge_now()

    assert os.listdir(notes / "trash") == ["keep.txt"]


def test_session_start_purging_a_leftover_keeps_the_users_own_trash_folder(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through SessionStart, as Claude runs it: a leftover of a killed purge makes
    the session start spawn a purge, which emptied the user's `~/notes/trash` with it."""
    notes = sandbox.home / "notes"
    (notes / "trash" / "ideas").mkdir(parents=True)
    (notes / "trash" / "ideas" / "plan.md").write_text("the plan\n")
    monkeypatch.setenv("CLAUDETTO_HOME", str(notes))
    target = sandbox.user_tmp / "out"
    (target / "sub").mkdir(parents=True)
    assert removal.remove(target, sandbox.user_tmp, "gc", trash=True, spawn=False).trashed
    project = sandbox.home / "proj"
    project.mkdir()
    sid = str(uuid.uuid4())

    done = run_hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(project),
                     "source": "startup", "transcript_path": "/none.jsonl"}, cwd=project)

    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and os.listdir(notes / "trash") != ["ideas"]:
        time.sleep(0.05)
    assert os.listdir(notes / "trash") == ["ideas"]
    assert (notes / "trash" / "ideas" / "plan.md").read_text() == "the plan\n"


# --- the journal ------------------------------------------------------------------------------


def test_a_journal_ending_in_half_a_line_loses_no_later_removal(sandbox: SandboxEnv) -> None:
    """A journal whose last line was cut short (a crash, a copy that ran out of room): the
    next removal's line was glued to that part, unreadable, its record lost to the
    dashboard and to the purge that settles by it."""
    state = sandbox.state
    state.mkdir(parents=True, exist_ok=True)
    earlier = {"time": "2026-01-02T00:00:00Z", "path": "/earlier", "kind": "temp", "bytes": 7,
               "rule": "gc", "session": None, "result": "removed", "id": "e1"}
    (state / "journal.jsonl").write_bytes(json.dumps(earlier).encode() + b'\n{"time": "2026-01-0')
    gone = session_folder(sandbox)

    report = clean_json()

    assert report["cleaned"]["folders"] == 1 and not gone.exists()
    entries = journal.read_entries()
    assert [e["path"] for e in entries] == ["/earlier", str(gone)]
    assert entries[1]["result"] == "removed" and entries[1]["bytes"] == report["cleaned"]["bytes"]
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert journal.freed_per_day() == {"2026-01-02": 7, today: report["cleaned"]["bytes"]}


def test_a_journal_past_the_read_limit_still_reads_its_newest_lines(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """A journal longer than what is read at once was read as nothing at all: the dashboard
    lost its history, a cut-short removal was never reported, a purge could not find the
    `removed` line of a pending entry. Its newest lines are read (the limit made small here:
    a real one is half a gigabyte)."""
    monkeypatch.setattr(journal, "READ_LIMIT", 64 * 1024)
    state = sandbox.state
    state.mkdir(parents=True, exist_ok=True)
    old = json.dumps({"time": "2020-01-01T00:00:00Z", "path": "/old", "result": "removed",
                      "bytes": 1}).encode() + b"\n"
    (state / "journal.jsonl").write_bytes(old * 4000)  # ~300 KB
    target = sandbox.user_tmp / "out"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "f").write_text("x")

    done = removal.remove(target, sandbox.user_tmp, "gc", trash=False)

    assert done.removed
    entries = journal.read_entries()
    assert entries[-1]["path"] == str(target) and entries[-1]["result"] == "removed"
    assert all(e["path"] == "/old" for e in entries[:-1]) and 500 < len(entries) < 4000
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert journal.freed_per_day()[today] == done.bytes


# --- names that only look like a session's ------------------------------------------------------


def test_a_folder_named_like_a_session_with_a_final_newline_is_no_session_folder(
        sandbox: SandboxEnv, live_pid: int) -> None:
    """`$` matches before a final newline: `<live id>\\n` was judged the folder of a session
    `<live id>\\n`, dead, and removed. It is no session's folder: unknown, kept; and a gate
    log of that shape is no gate log."""
    sid = str(uuid.uuid4())
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=sid, cwd=str(sandbox.home))
    odd = session_folder(sandbox, name=sid + "\n")
    real = session_folder(sandbox)
    logs = paths.log_root() / "-p"
    logs.mkdir(parents=True)
    odd_log = logs / f"{uuid.uuid4()}.log\n"
    odd_log.write_text("x")
    set_mtime(odd_log, OLD)

    report = clean_json()

    assert odd.is_dir() and (odd / "tasks" / "a.output").exists()
    assert odd_log.exists()
    assert not real.exists()
    assert report["cleaned"]["folders"] == 1 and report["unknown_kept"] == 1


# --- a file inside that refuses to go --------------------------------------------------------


@contextlib.contextmanager
def attribute(flag: str, *targets: Path) -> Iterator[None]:
    """`chattr +<flag>` on each target for the block (skipped where the file system has none);
    cleared again wherever the file went meanwhile (it may be in the trash by then)."""
    if subprocess.run(["chattr", f"+{flag}", *map(str, targets)], capture_output=True,
                      check=False).returncode != 0:
        pytest.skip(f"chattr +{flag} is not supported here")
    try:
        yield
    finally:
        found = subprocess.run(["find", str(paths.claudetto_home()), str(paths.log_root()), str(paths.claude_tmp_dir()),
                                *map(str, {t.parent for t in targets}), "-name", targets[0].name],
                               capture_output=True, text=True, check=False).stdout.split()
        subprocess.run(["chattr", "-R", f"-{flag}", *found, *map(str, targets)], capture_output=True,
                       check=False)


def disk(path: Path) -> int:
    return sum(p.lstat().st_blocks * 512 for p in [path, *path.rglob("*")])


@needs_root
@pytest.mark.parametrize("flag", ["i", "a"])
def test_a_file_that_refuses_to_go_is_not_reported_as_freed(sandbox: SandboxEnv, flag: str) -> None:
    """An old session folder holding a file made immutable (`chattr +i`) or append-only
    (`+a`, a log the user protects): everything else goes, that file stays in the trash,
    tried again by every purge. `clean` said the whole folder's bytes were freed, and the
    journal (the dashboard's freed space) the same."""
    folder = session_folder(sandbox, {"tasks/a.output": b"x" * 400_000, "keep/ledger.log": b"y" * 200_000})
    whole = disk(folder)
    protected = folder / "keep" / "ledger.log"
    stuck = protected.lstat().st_blocks * 512
    with attribute(flag, protected):
        report = clean_json()
        left = [p for p in paths.trash_dir().rglob("ledger.log")] if paths.trash_dir().exists() else []
        left += list(paths.log_root().rglob("ledger.log"))
        assert len(left) == 1 and left[0].read_bytes() == b"y" * 200_000
        assert not folder.exists()
        cleaned = report["cleaned"]
        assert cleaned["folders"] == 1 and cleaned["files"] == 1
        assert whole - stuck - 3 * 4096 <= cleaned["bytes"] <= whole - stuck
        lines = journal.read_entries()
        assert [e["result"] for e in lines] == ["removed", "left"]
        assert lines[0]["id"] == lines[1]["id"] and lines[1]["bytes"] >= stuck
        assert sum(journal.freed_per_day().values()) == cleaned["bytes"]
    purge_now()  # the flag cleared: the next purge takes what was left
    assert not left[0].exists()


@needs_root
def test_a_folder_half_emptied_in_place_keeps_its_age_and_its_freed_bytes_are_told(sandbox: SandboxEnv) -> None:
    """With no trash on its file system a folder is emptied in place; a file in it that
    refuses to go stops it half way. The half-emptied folder got a fresh mtime (its entries
    went), so it looked young and waited a whole cleanupPeriodDays before it was tried
    again; and `clean` said nothing was freed while the journal said 100 KB were."""
    folder = session_folder(sandbox, {"tasks/a.output": b"x" * 100_000, "keep/ledger.log": b"y" * 100_000})
    mtime = folder.stat().st_mtime
    no_trash_anywhere(sandbox, sandbox.claude_tmp)  # (a full temp file system, where no note fits, the same)
    with attribute("i", folder / "keep" / "ledger.log"):
        report = clean_json()
        assert sorted(p.name for p in folder.rglob("*")) == ["keep", "ledger.log"]
        assert abs(folder.stat().st_mtime - mtime) < 1  # as old as it was: judged again next time
        lines = journal.read_entries()
        assert [e["result"] for e in lines] == ["started", "failed"]
        assert lines[1]["bytes"] >= 100_000 and lines[1]["files"] == 1
        cleaned = report["cleaned"]
        assert (cleaned["folders"], cleaned["files"], cleaned["bytes"]) == (0, 1, lines[1]["bytes"])
    report = clean_json()  # the flag cleared: the next cleanup takes the rest
    assert not folder.exists() and report["cleaned"]["folders"] == 1


# --- two purges at once ------------------------------------------------------------------------

_PURGER = """
import sys, time
from app.core.purge import purge_trash
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    purge_trash(wait_s=0.0)
"""


def test_a_session_start_purge_running_meanwhile_takes_nothing_from_the_cleanups_count(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """The session start runs the cleanup and, when a trash is not empty, a purge, at the
    same time. The cleanup purges the folders it removes itself; handed over to the purge
    first, the other purge took part of each, and `clean` counted only what it took itself
    (files, folders), with an error logged for the part that vanished under it."""
    names = {f"d{i}/f{j}": b"x" for i in range(40) for j in range(100)}
    folder = session_folder(sandbox, names)
    paths.trash_dir().mkdir(parents=True)
    purger = subprocess.Popen([sys.executable, "-P", "-c", _PURGER, "20"], cwd=ROOT)
    started.append(purger)
    time.sleep(0.5)  # it is listing the trash over and over

    report = clean_json()

    assert not folder.exists()
    assert (report["cleaned"]["folders"], report["cleaned"]["files"]) == (1, len(names))
    assert [e["result"] for e in journal.read_entries()] == ["removed"]


_REMOVER = """
import sys
from app.core import removal
removal.remove(sys.argv[1], sys.argv[2], "session_folder", trash=False)
"""


def purging() -> list[str]:
    with contextlib.suppress(FileNotFoundError):
        return [n for n in os.listdir(paths.trash_dir()) if n.startswith(".purging-")]
    return []


def test_a_cleanup_killed_while_it_purges_is_finished_by_the_next_purge_never_put_back(
        sandbox: SandboxEnv) -> None:
    """Killed while it purges a folder it removed: what is left of it is journaled and goes
    with the next purge, even when the journal cannot be read by then (moved away): it is
    never put back half emptied where it was, looking young."""
    folder = session_folder(sandbox)
    for i in range(60):  # 12,000 entries to purge: in each folder a file and 199 hard links to
        # it, a fifth of the cost of as many new files
        (folder / f"d{i}").mkdir()
        (folder / f"d{i}" / "f0").write_bytes(b"x")
        for j in range(1, 200):
            os.link(folder / f"d{i}" / "f0", folder / f"d{i}" / f"f{j}")
    set_mtime(folder, OLD)
    remover = subprocess.Popen([sys.executable, "-P", "-c", _REMOVER, str(folder), str(sandbox.claude_tmp)],
                               cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not purging():
            time.sleep(0.001)
    finally:
        remover.kill()
        remover.wait()
    left = purging()
    assert len(left) == 1 and not folder.exists()
    assert sum(1 for _ in (paths.trash_dir() / left[0]).rglob("f*")) <= 12_000  # cut short
    (sandbox.state / "journal.jsonl").rename(sandbox.state / "journal.jsonl.moved")

    purge_now()

    assert not folder.exists() and os.listdir(paths.trash_dir()) == []


# --- a session folder that is a mount point ------------------------------------------------------


@contextlib.contextmanager
def mounted(*command: str) -> Iterator[None]:
    if subprocess.run(["mount", *command], capture_output=True, check=False).returncode != 0:
        pytest.skip("mount is not allowed here")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", command[-1]], capture_output=True, check=False)


@needs_root
@pytest.mark.parametrize("how", ["tmpfs", "bind", "overlay"])
def test_an_old_session_folder_that_is_a_mount_point_is_kept_whole(sandbox: SandboxEnv, how: str) -> None:
    """A tmpfs, a bind mount of the user's project or an overlay mounted on an old session
    folder of a dead session: the folder is the mount, and what is in it is not the
    session's to lose. It is kept, nothing in it touched, nothing journaled as removed."""
    project = sandbox.home / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('mine')\n")
    folder = session_folder(sandbox)
    options = {
        "tmpfs": ("-t", "tmpfs", "-o", "size=1m", "tmpfs"),
        "bind": ("--bind", str(project)),
        "overlay": ("-t", "overlay", "-o", f"lowerdir={project},upperdir={sandbox.root / 'up'},"
                    f"workdir={sandbox.root / 'work'}", "overlay"),
    }[how]
    (sandbox.root / "up").mkdir()
    (sandbox.root / "work").mkdir()
    with mounted(*options, str(folder)):
        (folder / "made-inside.txt").write_text("inside\n")
        set_mtime(folder, OLD)
        report = clean_json()
        assert report["cleaned"]["folders"] == 0
        assert (folder / "made-inside.txt").read_text() == "inside\n"
        if how != "tmpfs":
            assert (folder / "src" / "main.py").read_text() == "print('mine')\n"
    assert (project / "src" / "main.py").read_text() == "print('mine')\n"
    assert [e["result"] for e in journal.read_entries()] == ["refused"]


@needs_root
def test_a_state_folder_on_another_small_file_system_never_receives_a_copy(sandbox: SandboxEnv) -> None:
    """CLAUDETTO_HOME on a 256 KiB tmpfs, the session folder (2 MB) on the temp file system:
    its trash is there, so the folder goes through the trash beside the logs, by a rename on
    its own file system; nothing of it is ever copied across (it would not even fit), and
    the journal on the small one takes its line."""
    state = sandbox.state
    state.mkdir(parents=True, exist_ok=True)
    folder = session_folder(sandbox, {"tasks/big.output": os.urandom(2_000_000)})
    with mounted("-t", "tmpfs", "-o", "size=256k", "tmpfs", str(state)):
        report = clean_json()
        assert report["cleaned"]["folders"] == 1 and report["cleaned"]["bytes"] >= 2_000_000
        assert not folder.exists()
        used = subprocess.run(["du", "-sb", str(state)], capture_output=True, text=True, check=True)
        assert int(used.stdout.split()[0]) < 64 * 1024
        assert [e["result"] for e in journal.read_entries()] == ["removed"]
        assert os.listdir(paths.log_root() / "trash") == []


@needs_root
def test_claudettos_own_trash_in_a_claude_temp_folder_of_its_own_file_system_is_no_unknown_entry(
        sandbox: SandboxEnv) -> None:
    """`claude-<uid>` a tmpfs of its own: neither claudetto's trash nor the one beside its
    logs is on it, so a removal makes `.claudetto-trash` inside it. The cleanup took that
    for a project folder and counted what a purge had left in it as unknown entries."""
    sandbox.claude_tmp.mkdir(parents=True)
    with mounted("-t", "tmpfs", "-o", "size=4m,mode=700", "tmpfs", str(sandbox.claude_tmp)):
        folder = session_folder(sandbox, {"keep/ledger.log": b"y" * 1000, "tasks/a.output": b"x"})
        with attribute("i", folder / "keep" / "ledger.log"):
            assert clean_json()["cleaned"]["folders"] == 1
            trash = sandbox.claude_tmp / removal.ROOT_TRASH_NAME
            assert len(os.listdir(trash)) == 1  # what the flag kept, for a later purge
            done = run_cli("clean", "--dry-run", "--json")
            assert json.loads(done.stdout)["unknown_kept"] == 0


@needs_root
@pytest.mark.parametrize("how", ["overlay", "bind"])
def test_an_old_session_folder_a_mount_shows_elsewhere_is_kept_until_unmounted(
        sandbox: SandboxEnv, how: str) -> None:
    """Claude made an overlay in its scratchpad (`upperdir` and `workdir` there: the user's
    changes on top of their project, seen at /mnt/x), or bind-mounted a scratch folder
    elsewhere, and the mount outlived the session. No mount point lies in the session folder,
    so it went, and with it everything the mount showed. Kept while mounted; gone after."""
    project = sandbox.home / "proj"
    project.mkdir()
    (project / "base.txt").write_text("base\n")
    folder = session_folder(sandbox)
    scratch = folder / "scratchpad"
    (scratch / "up").mkdir(parents=True)
    (scratch / "work").mkdir()
    view = sandbox.root / "view"
    view.mkdir()
    options = {"overlay": ("-t", "overlay", "-o", f"lowerdir={project},upperdir={scratch / 'up'},"
                           f"workdir={scratch / 'work'}", "overlay"),
               "bind": ("--bind", str(scratch / "up"))}[how]
    with mounted(*options, str(view)):
        (view / "change.txt").write_text("my change\n")
        set_mtime(folder, OLD)
        report = clean_json()
        assert report["cleaned"]["folders"] == 0 and folder.exists()
        assert (view / "change.txt").read_text() == "my change\n"
        assert (scratch / "up" / "change.txt").exists()
    set_mtime(folder, OLD)
    assert clean_json()["cleaned"]["folders"] == 1 and not folder.exists()
    assert (project / "base.txt").read_text() == "base\n"


@needs_root
def test_an_old_session_folder_holding_an_attached_loop_image_is_kept_until_detached(sandbox: SandboxEnv) -> None:
    """A disk image in a scratchpad, attached as a loop device (`mount -o loop`): deleting
    the file leaves the device working only until it is detached, then the data is gone."""
    folder = session_folder(sandbox)
    image = folder / "scratchpad" / "disk.img"
    image.parent.mkdir()
    with open(image, "wb") as fh:
        fh.truncate(1 << 20)
    attached = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=False)
    if attached.returncode != 0:
        pytest.skip("losetup is not allowed here")
    try:
        set_mtime(folder, OLD)
        assert clean_json()["cleaned"]["folders"] == 0 and image.exists()
    finally:
        subprocess.run(["losetup", "-d", attached.stdout.strip()], capture_output=True, check=False)
    set_mtime(folder, OLD)
    assert clean_json()["cleaned"]["folders"] == 1 and not folder.exists()
