"""A scratch file (a Write into the user's temp folder) goes with the GC only when the Write
made it. The hook notes the call's window and the file it saw (device, inode); the birth
time is read at the sweep (app/core/created.py `why_unproven`). Real hooks in a subprocess,
real files, the real sweep: a file that was there before the call, or that another file
replaced after it, is never removed; the file the Write made is."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from app.core import gc
from app.core.created import CLOCK_SLACK_S, DURATION_SLACK_S, birth_time
from app.core.gc_records import read_records
from tests.support import SandboxEnv, run_hook, set_mtime

SESSION = "5f0c2a9e-4b1d-4e8a-9c3f-2d7e6a1b0c99"
OLD = 20 * 86_400  # older than GC_MAX_AGE_DAYS: the age rule would take it


def user_tmp(sandbox: SandboxEnv) -> Path:
    return Path(os.path.realpath(sandbox.user_tmp))


def write_hook(path: Path, cwd: Path, response: object, duration_ms: int | None = 20) -> None:
    """PostToolUse for a Write of `path`, as Claude runs it."""
    payload: dict[str, object] = {
        "hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": str(cwd), "tool_name": "Write",
        "tool_input": {"file_path": str(path), "content": "x"}, "tool_response": response}
    if duration_ms is not None:
        payload["duration_ms"] = duration_ms
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b"", done


def raw_records() -> list[dict[str, object]]:
    from app.core import paths

    return list(json.loads(Path(paths.gc_records_file_str(SESSION)).read_text())["records"])


def sweep_statuses() -> dict[str, str]:
    report = gc.sweep(trash=False)
    return {e.path: e.status for e in report.entries}


def outside_the_window() -> None:
    """Let what exists now fall out of a 20 ms call's window (the slack after the run, the
    clock's either side)."""
    time.sleep(DURATION_SLACK_S + CLOCK_SLACK_S + 0.4)


def has_birth_time(where: Path) -> bool:
    probe = where / ".birth-probe"
    probe.write_text("x")
    try:
        return birth_time(str(probe)) is not None
    finally:
        probe.unlink()


def test_the_hook_notes_the_window_and_the_file_it_saw(sandbox: SandboxEnv, tmp_path: Path) -> None:
    made = user_tmp(sandbox) / "plan.md"
    made.write_text("x")  # what the Write made
    before = time.time()
    write_hook(made, tmp_path, {"type": "create"})
    (record,) = raw_records()
    st = os.lstat(made)
    evidence = record["evidence"]
    assert isinstance(evidence, dict)
    assert (evidence["dev"], evidence["ino"], evidence["created"]) == (st.st_dev, st.st_ino, True)
    assert float(evidence["since"]) <= before <= float(evidence["until"]) <= time.time()
    assert [r.path for r in read_records(SESSION)] == [str(made)]


def test_the_file_the_write_made_goes_and_one_that_was_there_never(sandbox: SandboxEnv, tmp_path: Path) -> None:
    tmp = user_tmp(sandbox)
    if not has_birth_time(tmp):
        pytest.skip("this file system reports no birth time: the Write's own word decides (next test)")
    theirs = tmp / "their-notes.md"
    theirs.write_text("theirs")
    outside_the_window()
    # Overwritten in place: same inode, old birth, fresh ctime. A response that claims a
    # creation (a race, an older Claude) must not make it the GC's.
    theirs.write_text("overwritten")
    write_hook(theirs, tmp_path, {"type": "create"})
    write_hook(theirs, tmp_path, {})  # says nothing either way
    made = tmp / "made.md"
    made.write_text("x")
    write_hook(made, tmp_path, {"type": "create"})
    for path in (theirs, made):
        set_mtime(path, OLD)  # old enough for the age rule: only the evidence keeps one
    assert [r.path for r in read_records(SESSION)] == [str(made)]
    statuses = sweep_statuses()
    assert statuses == {str(made): "removed"}
    assert theirs.read_text() == "overwritten" and not made.exists()


def test_without_a_birth_time_only_the_writes_word_counts(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # Whatever the file system: a Write that says nothing about creating the file, over a
    # file that was there (fresh ctime), is never removed.
    theirs = user_tmp(sandbox) / "settings.ini"
    theirs.write_text("old")
    outside_the_window()
    theirs.write_text("new")
    write_hook(theirs, tmp_path, "plain text response")
    write_hook(theirs, tmp_path, {"type": "update"})
    set_mtime(theirs, OLD)
    assert read_records(SESSION) == []
    assert sweep_statuses() == {}
    assert theirs.read_text() == "new"


def test_a_file_that_was_there_with_an_old_ctime_is_not_even_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    theirs = user_tmp(sandbox) / "untouched.md"
    theirs.write_text("x")
    outside_the_window()
    write_hook(theirs, tmp_path, {"type": "create"})  # the call did not touch it at all
    assert not Path(sandbox.state / "gc" / f"{SESSION}.json").exists()


def test_a_file_replaced_after_the_write_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    tmp = user_tmp(sandbox)
    renamed = tmp / "renamed-over.md"
    renamed.write_text("made by the Write")
    write_hook(renamed, tmp_path, {"type": "create"})
    # An editor's save: a new file renamed over the path (another inode).
    other = tmp / ".renamed-over.md.swp"
    other.write_text("the user's own text")
    os.replace(other, renamed)
    recreated = tmp / "recreated.md"
    recreated.write_text("made by the Write")
    write_hook(recreated, tmp_path, {"type": "create"})
    outside_the_window()
    # Deleted and made again later: the inode number may come back, the birth time not.
    recreated.unlink()
    recreated.write_text("the user's own text")
    for path in (renamed, recreated):
        set_mtime(path, OLD)
    fresh_inode = os.lstat(recreated).st_ino != raw_records()[1]["evidence"]["ino"]  # type: ignore[index]
    if not fresh_inode and not has_birth_time(tmp):
        pytest.skip("the inode came back and this file system reports no birth time")
    assert read_records(SESSION) == []
    assert sweep_statuses() == {}
    assert renamed.read_text() == recreated.read_text() == "the user's own text"


def test_a_write_that_makes_the_file_anew_renews_its_evidence(sandbox: SandboxEnv, tmp_path: Path) -> None:
    made = user_tmp(sandbox) / "again.md"
    made.write_text("first")
    write_hook(made, tmp_path, {"type": "create"})
    first = raw_records()[0]["evidence"]
    # A second Write made it anew: a new file in its place (another inode: both exist at once).
    other = made.with_name("again.tmp")
    other.write_text("second")
    os.replace(other, made)
    write_hook(made, tmp_path, {"type": "create"})
    (record,) = raw_records()
    assert record["evidence"] != first and record["evidence"]["ino"] == os.lstat(made).st_ino  # type: ignore[index]
    set_mtime(made, OLD)
    assert sweep_statuses() == {str(made): "removed"}


def test_a_bad_evidence_keeps_the_file(sandbox: SandboxEnv, tmp_path: Path) -> None:
    from app.core import paths
    from app.core.state import write_json_atomic

    made = user_tmp(sandbox) / "hand-edited.md"
    made.write_text("x")
    write_hook(made, tmp_path, {"type": "create"})
    set_mtime(made, OLD)
    file = paths.gc_records_file_str(SESSION)
    data = json.loads(Path(file).read_text())
    for bad in ("yes", {"since": "0", "until": 1, "dev": 1, "ino": 1}, {}):
        data["records"][0]["evidence"] = bad
        write_json_atomic(file, data)
        assert read_records(SESSION) == []
        assert sweep_statuses() == {}
        assert made.exists()


def test_the_write_hook_loads_no_ctypes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    from tests.support import hook_modules

    made = user_tmp(sandbox) / "light.md"
    made.write_text("x")
    payload = {"hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": str(made), "content": "x"}, "tool_response": {"type": "create"},
               "duration_ms": 20}
    loaded = hook_modules(payload, tmp_path)
    assert "app.core.recorder" in loaded and len(raw_records()) == 1  # it did run and record
    assert {m for m in loaded if m.split(".")[0] in {"ctypes", "_ctypes"}} == set()


def test_the_write_hook_records_without_an_fsync(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # A lost record only keeps its output on disk (docs/gc.md): the hook does not pay for a
    # power cut's safety on every Write. The rename still replaces the file whole.
    import shutil
    import subprocess
    import sys

    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    made = user_tmp(sandbox) / "synced.md"
    made.write_text("x")
    payload = {"hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": str(made), "content": "x"}, "tool_response": {"type": "create"},
               "duration_ms": 20}
    trace = tmp_path / "trace.txt"
    done = subprocess.run(["strace", "-f", "-o", str(trace), "-e", "trace=fsync,fdatasync,rename,renameat,renameat2",
                           sys.executable, "-P", "-m", "hooks"], input=json.dumps(payload).encode(),
                          capture_output=True, cwd=tmp_path, check=False)
    if done.returncode != 0 and "ptrace" in done.stderr.decode(errors="replace").lower():
        pytest.skip("ptrace is not allowed here")
    assert done.returncode == 0
    assert [r["path"] for r in raw_records()] == [str(made)]
    calls = trace.read_text()
    assert f"{SESSION}.json" in calls  # the records file was renamed into place
    assert "fsync(" not in calls and "fdatasync(" not in calls
