"""What a background Bash call (`run_in_background: true`) makes. Its PostToolUse hook fires
when the call STARTS, so what it names does not exist yet then: the hook stores a pending
claim, and a later look (any read of the records, and the sweep, which makes it a record)
takes the path only with evidence: it was not there at the hook, it is this user's, no
symlink, born after the call started and within `PENDING_MAX_S` of it.

Each command really runs in bash (`subprocess.Popen`), held at a gate file until the hook
has run, so what it makes comes after the hook as in Claude; the hook is piped into
`python -P -m hooks`; the sweep runs in-process. A claim "made two hours ago" is a claim
whose start time the test moves back in the records file: time passing, not a forged call.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from app.core import gc, paths
from app.core.pending_outputs import PENDING_MAX_S
from tests.support import SandboxEnv, add_record, hook_modules, make_repo, recorded, run_hook

OLD = 8 * 86_400


#: A call's window looks back this far (the hook's slack and the clock's): a folder born
#: longer ago predates every call of the module.
_BEFORE_ANY_CALL_S = 3.2
#: The user's folder, made when the module is collected (a birth time cannot be set back), so
#: that by the test that needs it, long after in a whole run, it predates that test's call
#: with no wait; gone at exit whether that test ran or not.
_BORN_EARLY = Path(tempfile.mkdtemp(prefix="bg-outputs-born-early-"))
_BORN_AT = time.time()
atexit.register(shutil.rmtree, _BORN_EARLY, True)
(_BORN_EARLY / "theirs").mkdir()
(_BORN_EARLY / "theirs" / "notes.txt").write_text("the user's\n")


@pytest.fixture
def old_folder() -> Path:
    while time.time() - _BORN_AT < _BEFORE_ANY_CALL_S:  # only in a run of this test alone
        time.sleep(0.2)
    return _BORN_EARLY / "theirs"


def background(command: str, cwd: Path) -> dict[str, Any]:
    """The PostToolUse payload of a Bash call started in the background, as Claude sends it."""
    return {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(cwd), "tool_name": "Bash",
            "tool_input": {"command": command, "run_in_background": True},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": False, "isImage": False,
                              "backgroundTaskId": "b1"},
            "duration_ms": 4}


def start_held(command: str, cwd: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """The command running in bash, held until its gate file exists (then the hook has run)."""
    gate = cwd / "go"
    proc = subprocess.Popen(["bash", "-c", f"while [ ! -e {gate} ]; do sleep 0.01; done; {command}"], cwd=cwd)
    return proc, gate


def run_in_background(command: str, cwd: Path) -> None:
    """The call from start to end: the hook while the command waits, then the command runs."""
    proc, gate = start_held(command, cwd)
    try:
        done = run_hook(background(command, cwd), cwd=cwd)
        assert done.returncode == 0 and done.stdout == b"", done.stderr
    finally:
        gate.touch()
        proc.wait(timeout=30)


def records_file() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(paths.gc_records_file("s1").read_text())
    return data


def claims() -> list[str]:
    file = paths.gc_records_file("s1")
    return [c.get("path") for c in json.loads(file.read_text()).get("pending", [])] if file.exists() else []


def stored_records() -> list[str]:
    file = paths.gc_records_file("s1")
    return sorted(r["path"] for r in json.loads(file.read_text())["records"]) if file.exists() else []


def move_start_back(seconds: float) -> None:
    """Time passes: every claim's call started `seconds` earlier than the hook said."""
    file = paths.gc_records_file("s1")
    data = json.loads(file.read_text())
    for claim in data["pending"]:
        claim["since"] -= seconds
        claim["time"] -= seconds
    file.write_text(json.dumps(data))


def by_path(report: gc.GcReport) -> dict[str, tuple[str, str]]:
    return {e.path: (e.status, e.reason) for e in report.entries}


def log_text(sandbox: SandboxEnv) -> str:
    return "".join(p.read_text() for p in sandbox.claude_tmp_root.rglob("*.log"))


# --- the miss: what a background call makes is recorded, and goes like any output ---------------


def test_a_background_clone_is_claimed_at_the_hook_and_recorded_at_the_sweep(sandbox: SandboxEnv,
                                                                             tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "c"
    command = f"git clone -q {origin} {clone}"
    proc, gate = start_held(command, tmp_path)
    try:
        assert run_hook(background(command, tmp_path), cwd=tmp_path).returncode == 0
        assert claims() == [str(clone)] and stored_records() == []  # nothing there yet: a claim
        assert recorded() == []  # a claim is no record while its path is missing
    finally:
        gate.touch()
        proc.wait(timeout=30)
    assert recorded() == [str(clone)]  # every reader sees it once it is there, with evidence
    report = gc.sweep()
    assert by_path(report)[str(clone)] == ("kept", "young")
    assert stored_records() == [str(clone)] and claims() == []  # the sweep made it a record
    assert "born" in records_file()["records"][0]["evidence"]  # its identity is fixed now


def test_a_background_output_goes_by_age_once_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The seed's miss: the output stayed for ever. Now it goes as any other at its age."""
    (tmp_path / "src").mkdir()
    build = sandbox.user_tmp / "build-1"
    run_in_background(f"cp -r {tmp_path / 'src'} {build}", tmp_path)
    assert recorded() == [str(build)]
    os.utime(build, (time.time() - OLD, time.time() - OLD))
    assert by_path(gc.sweep())[str(build)] == ("removed", "age")
    assert not build.exists() and not paths.gc_records_file("s1").exists()


def test_a_background_copy_keeping_old_times_is_young_by_its_record(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -a` gives the copy its source's old mtime: its age counts from its record, as a
    foreground copy's does, not from the eight-day-old mtime."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.txt").write_text("a\n")
    os.utime(source, (time.time() - OLD, time.time() - OLD))
    copy = sandbox.user_tmp / "b"
    run_in_background(f"cp -a {source} {copy}", tmp_path)
    assert copy.stat().st_mtime < time.time() - OLD + 60
    assert by_path(gc.sweep())[str(copy)] == ("kept", "young")
    assert by_path(gc.sweep())[str(copy)] == ("kept", "young")  # and again, from the stored record


def test_an_unprinted_mktemp_of_a_background_call_waits_for_its_window(sandbox: SandboxEnv,
                                                                      tmp_path: Path) -> None:
    """Within its window the count of what fits may still grow: no record yet, the claim waits.
    A folder born two minutes after the call's start is not its mktemp's: the claim goes."""
    run_in_background('d=$(mktemp -d) && echo built > "$d/log"', tmp_path)
    made = [p for p in sandbox.user_tmp.iterdir() if p.name.startswith("tmp.")]
    assert len(made) == 1 and (made[0] / "log").exists()
    assert recorded() == []
    gc.sweep()
    assert stored_records() == [] and len(claims()) == 1
    move_start_back(120)
    assert recorded() == []
    gc.sweep()
    assert claims() == [] and made[0].exists()


def test_a_background_mktemp_is_stored_once_its_window_is_over(sandbox: SandboxEnv, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core import pending_outputs
    from app.core.created import birth_time

    run_in_background('d=$(mktemp -d) && echo built > "$d/log"', tmp_path)
    made = [p for p in sandbox.user_tmp.iterdir() if p.name.startswith("tmp.")]
    born = birth_time(str(made[0]))
    assert born is not None
    data = records_file()
    data["pending"][0]["since"] = born - 1.0  # the call started a second before its mktemp ran
    paths.gc_records_file("s1").write_text(json.dumps(data))
    monkeypatch.setattr(pending_outputs, "MKTEMP_WINDOW_S", 1.05)  # ... and the window is over now
    time.sleep(0.1)
    assert recorded() == [str(made[0])]  # the count is final: one call, one folder
    gc.sweep()
    assert stored_records() == [str(made[0])] and claims() == []


def test_what_a_background_call_made_before_its_hook_is_recorded_at_once(sandbox: SandboxEnv,
                                                                        tmp_path: Path) -> None:
    """The command's first step ran before the hook: born in the call's window, a record (no claim)."""
    (tmp_path / "src").mkdir()
    out = sandbox.user_tmp / "out"
    command = f"cp -r {tmp_path / 'src'} {out} && sleep 0.1"
    proc = subprocess.Popen(["bash", "-c", command], cwd=tmp_path)
    try:
        while not out.exists():
            time.sleep(0.01)
        assert run_hook(background(command, tmp_path), cwd=tmp_path).returncode == 0
    finally:
        proc.wait(timeout=30)
    assert stored_records() == [str(out)] and claims() == []


# --- the attacks: never the user's folder ----------------------------------------------------------


def test_a_path_there_at_the_hook_is_never_the_background_calls(sandbox: SandboxEnv, tmp_path: Path,
                                                                old_folder: Path) -> None:
    """The user's folder at the name, born before the call: judged as any call's output (born
    before the call's window: not recorded), and no claim (it was there)."""
    origin = make_repo(tmp_path / "origin")
    theirs = sandbox.user_tmp / "c"
    old_folder.rename(theirs)
    os.utime(theirs, (time.time() - OLD, time.time() - OLD))
    command = f"git clone -q {origin} {theirs} || true"
    run_in_background(command, tmp_path)
    assert recorded() == [] and claims() == []
    gc.sweep()
    assert (theirs / "notes.txt").read_text() == "the user's\n"


def test_another_programs_mktemp_beside_the_calls_takes_neither(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """At the hook the call's own mktemp has not run, another program's fits the template: a
    search then would take the other's. The count over the window is two for one call: none."""
    proc, gate = start_held('d=$(mktemp -d) && echo built > "$d/log"', tmp_path)
    try:
        assert run_hook(background('d=$(mktemp -d) && echo built > "$d/log"', tmp_path), cwd=tmp_path).returncode == 0
        theirs = Path(subprocess.run(["mktemp", "-d"], check=True, capture_output=True, text=True).stdout.strip())
        (theirs / "work.txt").write_text("another program's\n")
        assert recorded() == []  # not the other's while the call's own is missing ...
    finally:
        gate.touch()
        proc.wait(timeout=30)
    assert recorded() == []  # ... nor either, once both fit
    move_start_back(120)
    gc.sweep()
    assert claims() == [] and (theirs / "work.txt").exists()


def test_a_users_folder_made_after_the_bound_is_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The background clone failed; two hours later the user makes a folder at that name."""
    clone = sandbox.user_tmp / "c"
    command = f"git clone -q {tmp_path / 'no-such-origin'} {clone}"
    run_in_background(command, tmp_path)
    assert claims() == [str(clone)] and not clone.exists()
    move_start_back(2 * 3600)
    clone.mkdir()
    (clone / "mine.txt").write_text("the user's\n")
    os.utime(clone, (time.time() - OLD, time.time() - OLD))
    assert recorded() == []
    assert str(clone) not in by_path(gc.sweep())
    assert claims() == [] and (clone / "mine.txt").exists()  # the claim dropped, the folder kept
    assert "born outside" in log_text(sandbox)


def test_a_folder_moved_in_after_the_hook_is_not_the_calls(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A rename keeps the birth time: the user's old folder put at the name is born before the call."""
    old = tmp_path / "old"
    old.mkdir()
    (old / "draft.txt").write_text("the user's\n")
    target = sandbox.user_tmp / "out"
    run_in_background(f"git clone -q {tmp_path / 'no-such-origin'} {target}", tmp_path)
    data = records_file()
    data["pending"][0]["since"] = os.stat(old).st_mtime + 5  # the call started after the folder was born
    paths.gc_records_file("s1").write_text(json.dumps(data))
    old.rename(target)
    os.utime(target, (time.time() - OLD, time.time() - OLD))
    assert recorded() == []
    gc.sweep()
    assert claims() == [] and (target / "draft.txt").exists()


def test_a_symlink_at_the_claimed_path_is_never_followed_nor_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = sandbox.home / "proj"
    project.mkdir()
    (project / "work.txt").write_text("the user's\n")
    link = sandbox.user_tmp / "c"
    run_in_background(f"git clone -q {tmp_path / 'no-such-origin'} {link}", tmp_path)
    link.symlink_to(project)
    assert recorded() == []
    gc.sweep()
    assert claims() == [] and link.is_symlink() and (project / "work.txt").exists()


def test_a_claim_that_never_appears_is_dropped_after_the_bound(sandbox: SandboxEnv, tmp_path: Path) -> None:
    clone = sandbox.user_tmp / "c"
    run_in_background(f"git clone -q {tmp_path / 'no-such-origin'} {clone}", tmp_path)
    gc.sweep()
    assert claims() == [str(clone)]  # within the bound: the command may still make it
    move_start_back(PENDING_MAX_S + 60)
    gc.sweep()
    assert not paths.gc_records_file("s1").exists()  # nothing left in it: the file goes
    assert "never appeared" in log_text(sandbox)


def test_a_pending_claim_keeps_its_file_when_the_records_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    clone = sandbox.user_tmp / "c"
    run_in_background(f"git clone -q {tmp_path / 'no-such-origin'} {clone}", tmp_path)
    add_record("s1", sandbox.user_tmp / "gone", when=time.time())
    assert by_path(gc.sweep())[str(sandbox.user_tmp / "gone")][0] == "missing"
    assert claims() == [str(clone)] and stored_records() == []


def test_a_dry_run_shows_a_claim_that_appeared_and_writes_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    build = sandbox.user_tmp / "b"
    (tmp_path / "src").mkdir()
    run_in_background(f"cp -r {tmp_path / 'src'} {build}", tmp_path)
    before = records_file()
    assert str(build) in by_path(gc.plan())
    assert records_file() == before and claims() == [str(build)]


def test_bad_claims_are_passed_over(sandbox: SandboxEnv, tmp_path: Path) -> None:
    file = paths.gc_records_file("s1")
    file.parent.mkdir(parents=True, exist_ok=True)
    kept = sandbox.user_tmp / "kept"
    kept.mkdir()
    for junk in ("junk", [1, None, {"path": 3}, {"path": "/x", "kind": "temp", "since": "soon"},
                          {"kind": "temp", "mktemp": {"folder": 7}}]):
        file.write_text(json.dumps({"session": "s1", "records": [], "pending": junk}))
        assert recorded() == []
        gc.sweep()
        assert kept.exists()


# --- the hot path ----------------------------------------------------------------------------------


def test_only_a_background_call_with_a_trigger_word_loads_the_claims(tmp_path: Path) -> None:
    def loaded(command: str, **extra: object) -> bool:
        payload = background(command, tmp_path)
        payload["tool_input"] = {"command": command, **extra}
        return "app.core.pending_outputs" in hook_modules(payload, tmp_path)

    assert not loaded("sleep 5; make test", run_in_background=True)
    assert not loaded(f"git clone -q x {tmp_path}/nowhere-yet")
    assert loaded(f"git clone -q x {tmp_path}/nowhere-yet", run_in_background=True)
