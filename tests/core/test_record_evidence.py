"""Only what the call made is recorded: every kind (temp, copy, worktree, config, scratch)
needs evidence that this call created the path (app/core/created.py). Real folders and files,
real mktemp and cp runs, then the recorder as the hook calls it. Time stamps cannot be set
back, so an entry "older than the call" is made first and the call's window is kept short."""

from __future__ import annotations

import math
import os
import subprocess
import time
from pathlib import Path

import pytest

from app.core import paths
from app.core.created import (
    CLOCK_SLACK_S,
    DURATION_SLACK_S,
    birth_time,
    why_not_made,
    why_not_written,
    window_s,
)
from app.core.gc_records import read_records
from app.core.recorder import record_outputs
from tests.support import SandboxEnv, set_mtime

SESSION = "s1"
OLD = 20 * 86_400


def tmp(sandbox: SandboxEnv) -> Path:
    return Path(os.path.realpath(sandbox.user_tmp))


def run_bash(command: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True,
                          env=dict(os.environ)).stdout


def bash_payload(command: str, cwd: Path, stdout: str = "", **extra: object) -> dict[str, object]:
    timeout = extra.pop("timeout", None)
    payload: dict[str, object] = {
        "hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": str(cwd), "tool_name": "Bash",
        "tool_input": {"command": command} if timeout is None else {"command": command, "timeout": timeout},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
    }
    payload.update(extra)
    return payload


def write_payload(path: Path, response: object) -> dict[str, object]:
    """A Write as PostToolUse reports it: a 20 ms run (its `duration_ms` is the window)."""
    return {"hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": "/work/proj", "tool_name": "Write",
            "tool_input": {"file_path": str(path), "content": "x"}, "tool_response": response, "duration_ms": 20}


def recorded() -> list[tuple[str, str]]:
    return [(r.kind, r.path) for r in read_records(SESSION)]


def log_text() -> str:
    return "".join(p.read_text() for p in Path(paths.log_root()).rglob("*.log"))


def before_the_call() -> None:
    """Let what exists now fall out of a short call's window (plus the clock slack)."""
    time.sleep(CLOCK_SLACK_S + 0.4)


def before_a_timed_call() -> None:
    """The same for a call whose `duration_ms` is known (the slack after the run, too)."""
    time.sleep(DURATION_SLACK_S + CLOCK_SLACK_S + 0.4)


# --- temp: what a mktemp printed, or a listing printed -------------------------------------


def test_a_listing_after_mktemp_records_only_the_folder_the_call_made(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # The repro: `mktemp -d && ls -d "$TMPDIR"/tmp.*` prints every tmp.* folder, and
    # another program's 20-day-old one fits the template. Only the fresh one is the call's.
    theirs = tmp(sandbox) / "tmp.OtherProg1"
    theirs.mkdir()
    (theirs / "their-data").write_text("keep me\n")
    before_the_call()
    command = 'mktemp -d && ls -d "$TMPDIR"/tmp.*'
    stdout = run_bash(command, tmp_path)
    assert str(theirs) in stdout
    set_mtime(theirs, OLD)
    record_outputs(bash_payload(command, tmp_path, stdout, timeout=300))
    (made,) = {p for p in tmp(sandbox).iterdir() if p != theirs}
    assert recorded() == [("temp", str(made))]
    assert f"temp {theirs} not recorded: it was there before the call" in log_text()
    from app.core import gc

    gc.sweep(trash=False)
    assert (theirs / "their-data").read_text() == "keep me\n"


def test_a_fresh_name_that_fits_in_another_folder_is_not_the_calls(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # Fresh, this user's, fitting the template: only the folder tells it is not mktemp's.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = f"mktemp -d >/dev/null && mkdir {elsewhere}/tmp.Fresh12345 && ls -d {elsewhere}/tmp.*"
    stdout = run_bash(command, tmp_path)
    record_outputs(bash_payload(command, tmp_path, stdout))
    (made,) = tmp(sandbox).iterdir()
    assert recorded() == [("temp", str(made))]  # found by template and time, where mktemp makes it


def test_a_printed_path_that_is_a_symlink_or_missing_is_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    link = tmp(sandbox) / "tmp.Symlink123"
    link.symlink_to(tmp_path)
    missing = tmp(sandbox) / "tmp.Missing123"
    record_outputs(bash_payload("mktemp -d", tmp_path, f"{link}\n{missing}\n"))
    assert recorded() == []
    text = log_text()
    assert f"temp {link} not recorded: it is a symlink" in text
    assert f"temp {missing} not recorded: it does not exist after the call" in text


def test_a_mktemp_file_printed_is_recorded_and_an_old_one_is_not(sandbox: SandboxEnv, tmp_path: Path) -> None:
    old = tmp(sandbox) / "tmp.OldFile123"
    old.write_text("theirs")
    before_the_call()
    stdout = run_bash("mktemp", tmp_path)
    record_outputs(bash_payload("mktemp", tmp_path, f"{stdout}{old}\n", timeout=300))
    assert recorded() == [("temp", stdout.strip())]


# --- config: CLAUDE_CONFIG_DIR= ------------------------------------------------------------


def test_claude_config_dir_naming_a_folder_that_was_there_is_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    existing = tmp(sandbox) / "my-claude-config"
    (existing / "settings.json").parent.mkdir()
    (existing / "settings.json").write_text("{}")
    before_the_call()
    command = f"CLAUDE_CONFIG_DIR={existing} true"
    record_outputs(bash_payload(command, tmp_path, timeout=300))
    assert recorded() == []
    assert f"config {existing} not recorded: it was there before the call" in log_text()
    # One the call made (as `claude` makes its config folder on first run) is recorded.
    fresh = tmp(sandbox) / "sandbox-config"
    command = f"mkdir {fresh} && CLAUDE_CONFIG_DIR={fresh} true"
    run_bash(command, tmp_path)
    record_outputs(bash_payload(command, tmp_path, timeout=300))
    assert recorded() == [("config", str(fresh))]


# --- the call's window ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_input", "duration", "seconds"),
    [
        ({}, 1500, 1.5 + DURATION_SLACK_S),
        ({"timeout": 600_000}, 0, DURATION_SLACK_S),  # the real run time wins over the timeout
        ({"timeout": 5000}, 10**12, 600 + DURATION_SLACK_S),  # at most the Bash tool's limit
        ({"timeout": 5000}, None, 5.0),
        ({"timeout": 5000}, True, 5.0),
        ({"timeout": 5000}, -3, 5.0),
        ({"timeout": 5000}, "900", 5.0),
        ({"timeout": 5000}, math.nan, 5.0),
        ({}, None, 120.0),
    ],
)
def test_the_window_is_the_run_time_when_known_else_the_timeout(tool_input: dict[str, object], duration: object,
                                                                 seconds: float) -> None:
    assert window_s(tool_input, duration) == seconds


def test_duration_ms_bounds_both_the_search_and_the_evidence(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # Made 1 s too early for a 10 ms call: neither found by template and time nor taken from
    # stdout. Without duration_ms the 120 s default timeout holds both.
    unprinted = tmp(sandbox) / "tmp.Unprinted1"
    printed = tmp(sandbox) / "tmp.Printed123"
    unprinted.mkdir()
    printed.mkdir()
    time.sleep(DURATION_SLACK_S + CLOCK_SLACK_S + 0.3)
    record_outputs(bash_payload("d=$(mktemp -d)", tmp_path, duration_ms=10))
    record_outputs(bash_payload("mktemp -d", tmp_path, f"{printed}\n", duration_ms=10))
    assert recorded() == []
    text = log_text()
    assert "nothing in" in text and f"temp {printed} not recorded: it was there before the call" in text
    record_outputs(bash_payload("mktemp -d", tmp_path, f"{printed}\n"))  # this session's: no candidate then
    record_outputs(bash_payload("d=$(mktemp -d)", tmp_path))
    assert sorted(recorded()) == [("temp", str(printed)), ("temp", str(unprinted))]


# --- scratch: a Write into the temp folder -------------------------------------------------


def test_a_write_that_created_its_file_is_scratch(sandbox: SandboxEnv) -> None:
    target = tmp(sandbox) / "notes" / "plan.md"
    target.parent.mkdir()
    target.write_text("x")
    record_outputs(write_payload(target, {"type": "create", "filePath": str(target)}))
    assert recorded() == [("scratch", str(target))]


def test_a_write_over_a_file_that_was_there_is_never_scratch(sandbox: SandboxEnv) -> None:
    theirs = tmp(sandbox) / "their-settings.ini"
    theirs.write_text("old")
    set_mtime(theirs, OLD)
    before_a_timed_call()
    # An in-place overwrite: the inode, so its birth time, stays; the ctime moves to now.
    theirs.write_text("new")
    record_outputs(write_payload(theirs, {"type": "update", "filePath": str(theirs)}))
    # Says nothing: the birth time decides, read when the records are (the sweep), so the
    # record is passed over there; without a birth time, an unsure Write is never the GC's.
    record_outputs(write_payload(theirs, "plain text response"))
    assert recorded() == []
    assert f"scratch {theirs} not recorded: the Write replaced a file that was there" in log_text()
    now = time.time()
    why = str(why_not_written(str(theirs), now - 1, now, created=None))
    assert ("it was there before the call" in why if birth_time(str(theirs)) is not None
            else "does not say it created the file" in why)
    # Replaced by a rename (a fresh inode): Claude's "update" still says it was there.
    fresh = tmp(sandbox) / "replacement"
    fresh.write_text("new")
    fresh.rename(theirs)
    record_outputs(write_payload(theirs, {"type": "update"}))
    assert recorded() == []


def test_scratch_symlink_folder_and_foreign_files_are_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    now = time.time()
    link = tmp(sandbox) / "link.md"
    link.symlink_to(tmp_path / "anywhere.md")
    assert why_not_written(str(link), now - 60, now, created=True) == "it is a symlink"
    folder = tmp(sandbox) / "a-folder"
    folder.mkdir()
    assert why_not_written(str(folder), now - 60, now, created=True) == "it is not a regular file"
    assert why_not_written(str(tmp(sandbox) / "none"), now - 60, now, created=True) == \
        "it does not exist after the call"
    if os.getuid() != 0:
        pytest.skip("making a file another user owns needs root")
    foreign = tmp(sandbox) / "foreign.md"
    foreign.write_text("x")
    os.chown(foreign, 4242, 4242)
    assert why_not_written(str(foreign), now - 60, now, created=True) == "it is not this user's"
    assert why_not_made(str(foreign), now - 60, now, merged=False) == "it is not this user's"


def test_scratch_without_a_birth_time_needs_the_writes_word_and_a_fresh_ctime(tmp_path: Path) -> None:
    # As on a file system that reports no birth time: an overwrite moves the ctime like a
    # creation, so only `type: "create"` with a fresh ctime counts; unsure means not recorded.
    old = tmp_path / "old.txt"
    old.write_text("x")
    before_the_call()
    fresh = tmp_path / "fresh.txt"
    fresh.write_text("x")
    now = time.time()
    since = now - 0.2
    assert why_not_written(str(fresh), since, now, created=True, use_birth=False) is None
    assert "does not say it created the file" in str(why_not_written(str(fresh), since, now, created=None,
                                                                      use_birth=False))
    assert why_not_written(str(fresh), since, now, created=False, use_birth=False) == \
        "the Write replaced a file that was there"
    assert "ctime is older than the call" in str(why_not_written(str(old), since, now, created=True,
                                                                 use_birth=False))
    old.write_text("overwritten")  # its ctime is fresh now: only the Write's word tells
    assert why_not_written(str(old), since, time.time(), created=None, use_birth=False) is not None


def test_scratch_with_a_birth_time_an_overwritten_file_keeps_its_old_birth(tmp_path: Path) -> None:
    old = tmp_path / "old.txt"
    old.write_text("x")
    if birth_time(str(old)) is None:
        pytest.skip("this file system reports no birth time (statx STATX_BTIME)")
    before_the_call()
    old.write_text("overwritten")
    now = time.time()
    assert "there before the call (created" in str(why_not_written(str(old), now - 0.2, now, created=None))
    assert "there before the call (created" in str(why_not_written(str(old), now - 0.2, now, created=True))
    new = tmp_path / "new.txt"
    new.write_text("x")
    assert why_not_written(str(new), now - 0.2, time.time(), created=None) is None


# --- no birth time: folders (temp, config, copy, worktree) ---------------------------------


def test_without_a_birth_time_a_folder_is_judged_by_ctimes_not_mtimes(tmp_path: Path) -> None:
    # As on a file system that reports no birth time, for a temp, config, copy or worktree folder.
    old = tmp_path / "old-entry"
    old.mkdir()
    (old / "f").write_text("x")
    set_mtime(old, OLD)
    there = tmp_path / "was-there"
    there.mkdir()
    (there / "theirs").write_text("x")
    before_the_call()
    since = time.time() - 0.2
    made = tmp_path / "tmp.Made012345"
    made.mkdir()
    # What the call put in with old times (cp -a keeps the mtime) is still fresh by its ctime.
    subprocess.run(["cp", "-a", str(old), str(made / "kept-times")], check=True)
    assert why_not_made(str(made), since, time.time(), merged=False, use_birth=False) is None
    # A folder that was there, into which the call added an entry: its ctime moved, the old
    # entry gives it away.
    (there / "added").mkdir()
    assert "'theirs' in it is older" in str(why_not_made(str(there), since, time.time(), merged=False,
                                                         use_birth=False))
    assert "ctime is older" in str(why_not_made(str(old), since, time.time(), merged=False, use_birth=False))


def test_which_file_systems_here_report_a_birth_time(tmp_path: Path) -> None:
    # ext4, overlay and tmpfs (Linux 5.x and later) report one; where statx or the file system
    # has none, birth_time says None and the recorder falls back to the ctime rules above.
    places = [tmp_path] + [Path(p) for p in ("/dev/shm",) if os.access(p, os.W_OK)]
    for place in places:
        before = time.time()
        probe = place / f"claudetto-birth-probe-{os.getpid()}"
        probe.write_text("x")
        try:
            born = birth_time(str(probe))
        finally:
            probe.unlink()
        assert born is None or before - CLOCK_SLACK_S <= born <= time.time() + CLOCK_SLACK_S, (place, born)
