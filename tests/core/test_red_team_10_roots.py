"""The output GC attacked a tenth time: the environments real users have, in which the GC root
itself is too broad or moves (TMPDIR as the home, the project, a symlink, a file, changed since
the records were made; claudetto's own state, Claude's temp folder inside it), records edited by
hand or by another program, folders replaced since they were recorded, and odd bounds. Real
folders, real git, real processes; records made by the PostToolUse hook (`python -P -m hooks`) or
written as another program would write them; the sweep through `claudetto gc --json`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import (
    SandboxEnv,
    add_record,
    git,
    make_repo,
    recorded,
    run_cli,
    run_hook,
    set_mtime,
)

OLD = 8 * 86_400
DAY = 86_400


def old_folder(path: Path, age: float = OLD) -> Path:
    path.mkdir(parents=True)
    (path / "out.bin").write_bytes(b"x" * 100)
    set_mtime(path, age)
    return path


def gc_json(*args: str) -> dict[str, tuple[str, str]]:
    """`claudetto gc --json`'s verdicts, {path: (status, reason)}; the command never fails."""
    done = run_cli("gc", "--json", *args)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return {e["path"]: (e["status"], e["reason"]) for e in json.loads(done.stdout)["entries"]}


def hook_write(file: Path, cwd: Path, session: str = "s1") -> None:
    """A Write of a new file, then the PostToolUse hook Claude runs after it."""
    file.write_text("written by the session\n")
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Write",
               "tool_input": {"file_path": str(file), "content": "written by the session\n"},
               "tool_response": {"filePath": str(file), "type": "create"}, "duration_ms": 5}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr


def hook_bash(command: str, cwd: Path, session: str = "s1") -> str:
    """A Bash call run for real, then the PostToolUse hook; the call's stdout."""
    out = subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, text=True).stdout
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
               "tool_input": {"command": command},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": 2000}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    return out


def age_records(state: Path, seconds: float, session: str = "s1") -> None:
    """Move every record of `session` back in time by `seconds` (a week passed since)."""
    file = state / "gc" / f"{session}.json"
    data = json.loads(file.read_text())
    for record in data["records"]:
        record["time"] -= seconds
    file.write_text(json.dumps(data))


def write_records(state: Path, name: str, records: list[dict[str, object]], session: object = None) -> Path:
    """A records file written by hand or by another program: `gc/<name>.json`."""
    folder = state / "gc"
    folder.mkdir(parents=True, exist_ok=True)
    file = folder / f"{name}.json"
    file.write_text(json.dumps({"session": session or name, "records": records}))
    return file


def record(path: Path | str, kind: str = "temp", session: str = "s1", cwd: Path | str = "/nowhere",
           when: float = 1.0) -> dict[str, object]:
    return {"path": str(path), "kind": kind, "session": session, "time": when, "cwd": str(cwd)}


# --- the root is too broad, or moves ----------------------------------------------------------------


def test_tmpdir_set_to_the_project_never_makes_the_projects_new_files_outputs(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user runs Claude with TMPDIR pointing at the project they work in (a wrapper script
    set `TMPDIR=$PWD`). Every Write there is a "scratch output" to the recorder; a week later
    the sweep must not take the new, not yet committed module Claude wrote for them."""
    project = make_repo(tmp_path / "proj")
    monkeypatch.setenv("TMPDIR", str(project))
    module = project / "feature.py"
    hook_write(module, project)
    set_mtime(module, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_json()
    assert module.exists(), entries
    assert entries.get(str(module), ("skip", "outside_root"))[0] in ("skip", "kept"), entries


def test_tmpdir_set_to_a_project_root_skips_even_a_record_made_from_elsewhere(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same, with the record made by a session that ran in another folder: the project's
    folder of build results is the user's, whatever session made it."""
    project = make_repo(tmp_path / "proj")
    monkeypatch.setenv("TMPDIR", str(project))
    results = old_folder(project / "results")
    add_record("s1", results, cwd=tmp_path)
    assert gc_json() == {str(results): ("skip", "outside_root")} and results.is_dir()


def test_session_end_with_tmpdir_set_to_the_project_takes_none_of_its_files(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through SessionEnd, as Claude runs it: the detached sweep's report is in the
    session's log, and the session's new, uncommitted module is still there."""
    from app.core import paths

    project = make_repo(tmp_path / "proj")
    monkeypatch.setenv("TMPDIR", str(project))
    module = project / "feature.py"
    hook_write(module, project, session="ending")
    set_mtime(module, OLD)
    age_records(sandbox.state, OLD, session="ending")
    payload = {"hook_event_name": "SessionEnd", "session_id": "ending", "cwd": str(project), "reason": "other"}
    assert run_hook(payload, cwd=project).returncode == 0
    log = paths.session_log(str(project), "ending")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (log.exists() and "GC removed=" in log.read_text()):
        time.sleep(0.05)
    assert "GC removed=0 " in log.read_text(), log.read_text()
    assert module.exists()


def test_a_tmpdir_that_is_a_symlink_to_the_home_is_no_root(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    link = tmp_path / "tmp-link"
    link.symlink_to(sandbox.home)
    monkeypatch.setenv("TMPDIR", str(link))
    work = old_folder(sandbox.home / "thesis")
    add_record("s1", link / "thesis")
    add_record("s1", work)
    entries = gc_json()
    assert all(status == "skip" for status, _ in entries.values()), entries
    assert (work / "out.bin").exists()


@pytest.mark.parametrize("spelling", ["{}/", "{}//", "{}/."])
def test_a_tmpdir_with_a_trailing_slash_is_the_same_root(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch, spelling: str) -> None:
    """Held: the root is compared real; an old output under it still goes."""
    monkeypatch.setenv("TMPDIR", spelling.format(sandbox.user_tmp))
    out = old_folder(sandbox.user_tmp / "tmp.Ab12")
    add_record("s1", out)
    assert gc_json() == {str(out): ("removed", "age")} and not out.exists()


@pytest.mark.parametrize("value", ["", "relative/tmp"])
def test_an_empty_or_relative_tmpdir_takes_nothing_of_the_home(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """An empty TMPDIR is /tmp, which holds this sandbox and its home: an old output in it
    goes, the home and what it holds never; a relative one is no root at all."""
    monkeypatch.setenv("TMPDIR", value)
    out = old_folder(sandbox.user_tmp / "tmp.Ab12")
    mine = old_folder(sandbox.home / "tmp.Cd34")
    add_record("s1", out)
    add_record("s1", mine)
    got = gc_json()
    if value:
        assert got == {str(out): ("skip", "outside_root"), str(mine): ("skip", "outside_root")}
        assert out.is_dir()
    else:
        assert got[str(out)] == ("removed", "age") and not out.exists(), got
        assert got[str(mine)][0] != "removed", got
    assert mine.is_dir()


def test_a_tmpdir_naming_a_file_is_no_root_and_no_traceback(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    file = sandbox.user_tmp / "not-a-folder"
    file.write_text("x")
    monkeypatch.setenv("TMPDIR", str(file))
    out = old_folder(sandbox.user_tmp / "tmp.Ab12")
    add_record("s1", out)
    add_record("s1", file)
    entries = gc_json()
    assert all(status == "skip" for status, _ in entries.values()), entries
    assert out.is_dir() and file.is_file()


def test_records_made_under_another_tmpdir_are_outside_the_root_of_this_sweep(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held: the session ran with TMPDIR=A; the sweep runs with TMPDIR=B (another terminal,
    a cron job). What lies in A is in no root of this sweep: left alone."""
    out = Path(hook_bash(f"mktemp -d -p {sandbox.user_tmp}", tmp_path).strip())
    assert recorded() == [str(out)]
    set_mtime(out, OLD)
    age_records(sandbox.state, OLD)
    other = tmp_path / "other-tmp"
    other.mkdir()
    monkeypatch.setenv("TMPDIR", str(other))
    entries = gc_json()
    assert entries.get(str(out), ("skip", ""))[0] == "skip" and out.is_dir(), entries


def test_a_file_written_into_the_users_own_clone_in_the_temp_folder_is_kept(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user cloned a repository into the temp folder themselves (no session recorded it, and
    Claude was never started in it); a session working elsewhere writes a new module into it.
    A week later that module is the clone's untracked work, not an output: removing it leaves
    the user's checkout without the file they were about to commit."""
    origin = make_repo(tmp_path / "origin")
    theirs = sandbox.user_tmp / "theirs"
    git(tmp_path, "clone", "-q", str(origin), str(theirs))
    module = theirs / "new_module.py"
    hook_write(module, tmp_path)
    assert recorded() == [str(module)]
    set_mtime(module, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_json()
    assert module.exists(), entries
    assert entries[str(module)] == ("kept", "in_use")


def test_a_scratch_file_in_a_clone_the_session_made_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Held: the same Write into a clone the session itself made (recorded) is its output."""
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "mine"
    hook_bash(f"git clone -q {origin} {clone}", tmp_path)
    module = clone / "scratch.py"
    hook_write(module, tmp_path)
    assert recorded() == sorted([str(clone), str(module)])
    set_mtime(module, OLD)
    age_records(sandbox.state, OLD)
    assert gc_json()[str(module)] == ("removed", "age") and not module.exists()


# --- what claudetto and Claude keep in the root ------------------------------------------------------


def test_claudettos_own_state_inside_tmpdir_is_never_an_output(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDETTO_HOME (or CLAUDE_PLUGIN_DATA) inside TMPDIR: a record naming the state, its
    trash, its records folder or a folder around it never takes claudetto's records, journal
    and trash with it."""
    work = sandbox.user_tmp / "work"
    state = work / "claudetto"
    monkeypatch.setenv("CLAUDETTO_HOME", str(state))
    (state / "trash").mkdir(parents=True)
    (state / "trash" / "big").write_text("being purged\n")
    (state / "journal.jsonl").write_text("")
    set_mtime(state / "trash", OLD)
    set_mtime(state, OLD)
    set_mtime(work, OLD)
    add_record("s1", work)
    add_record("s1", state / "trash")
    add_record("s1", state)
    root_trash = sandbox.user_tmp / ".claudetto-trash"
    (root_trash / "pending-1-ab12").mkdir(parents=True)  # a removal not yet decided: it may go back
    set_mtime(root_trash, OLD)
    add_record("s1", root_trash)
    add_record("s1", root_trash / "pending-1-ab12")
    keep = old_folder(sandbox.user_tmp / "other")
    add_record("s2", keep)
    entries = gc_json()
    assert (root_trash / "pending-1-ab12").is_dir(), entries
    assert (state / "journal.jsonl").exists() and (state / "trash" / "big").exists(), entries
    assert all(entries[str(p)][0] != "removed" for p in (work, state, state / "trash")), entries
    assert entries[str(keep)] == ("removed", "age")
    assert recorded("s1") == sorted([str(work), str(state), str(state / "trash"), str(root_trash),
                                     str(root_trash / "pending-1-ab12")])


@pytest.mark.parametrize("below", ["", "claude-root"])
def test_claudes_temp_folder_inside_tmpdir_is_never_an_output(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch, below: str) -> None:
    """CLAUDE_CODE_TMPDIR equal to TMPDIR (Claude's default on Linux) or inside it: `claude-<uid>`
    (every session's scratchpad and task outputs) and claudetto's logs beside it lie in the GC
    root. A record naming them, or a folder around them, is no output of any session: the
    hygiene cleanup has its own rules for them."""
    top = sandbox.user_tmp / below if below else sandbox.user_tmp
    monkeypatch.setenv("CLAUDE_CODE_TMPDIR", str(top))
    claude = top / f"claude-{os.getuid()}"
    task = claude / "-proj" / "sess" / "tasks"
    task.mkdir(parents=True)
    (task / "a.output").write_text("output\n")
    logs = top / "claudetto"
    (logs / "proj").mkdir(parents=True)
    for folder in (task, task.parent, task.parent.parent, claude, logs, top):
        set_mtime(folder, OLD)
    add_record("s1", claude)
    add_record("s1", logs)
    add_record("s1", task.parent)
    if below:
        add_record("s1", top)
    entries = gc_json()
    assert (task / "a.output").exists() and logs.is_dir(), entries


# --- records edited by hand or by another program ----------------------------------------------------


def test_hand_edited_records_naming_wide_places_take_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A records file another program wrote: `/`, the home, the project, a `..` path out of the
    temp folder, a relative path, the temp folder itself. None of them goes; the one real old
    output beside them still does; the relative record is neither read nor lost."""
    project = make_repo(tmp_path / "proj")
    old_folder(sandbox.home / "thesis")
    real = old_folder(sandbox.user_tmp / "tmp.Real")
    file = write_records(sandbox.state, "s1", [
        record("/", cwd=project), record(sandbox.home, cwd=project), record(project, cwd=project),
        record(f"{sandbox.user_tmp}/../home/thesis", cwd=project), record("thesis", cwd=project),
        record(sandbox.user_tmp, cwd=project), record(real, cwd=project)])
    entries = gc_json()
    assert entries.pop(str(real)) == ("removed", "age")
    assert all(status == "skip" for status, _ in entries.values()), entries
    assert (sandbox.home / "thesis" / "out.bin").exists() and (project / "README.md").exists()
    assert sandbox.user_tmp.is_dir()
    assert [r["path"] for r in json.loads(file.read_text())["records"]] == ["thesis"]


def test_a_worktree_record_naming_a_main_checkout_in_the_temp_folder_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TMPDIR is the scratch disk the user keeps projects on (`/scratch/$USER`). A record of kind
    `worktree` names a project's main checkout there (a record edited by hand, or a tool that
    wrote it wrong): a linked worktree's `.git` is a file, a main checkout's a folder. Even
    clean and pushed, the main checkout holds the user's set-up, ignored files and the
    repository itself: never an output of `git worktree add`."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    origin = make_repo(tmp_path / "origin")
    project = scratch / "proj"
    git(tmp_path, "clone", "-q", str(origin), str(project))
    set_mtime(project, OLD)
    add_record("s1", project, kind="worktree", cwd=project)
    entries = gc_json()
    assert (project / ".git").is_dir() and (project / "README.md").exists(), entries


def test_a_scratch_record_naming_a_folder_now_is_not_the_file_the_write_made(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A record without evidence (an older version, another program) of kind `scratch` names a
    file a Write made; the user since put a folder of their own at that name."""
    notes = sandbox.user_tmp / "notes"
    add_record("s1", notes, kind="scratch", cwd=tmp_path, when=time.time() - OLD)
    old_folder(notes)
    (notes / "draft.md").write_text("the user's own draft\n")
    set_mtime(notes, OLD)
    entries = gc_json()
    assert (notes / "draft.md").exists(), entries


def test_a_record_in_a_live_sessions_file_that_names_another_session_stays_live(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int) -> None:
    """The records file is the live session's (`gc/LIVE.json`), but its record names another
    session id (an older version that sanitised ids, another program): the file's session is
    live, so what it recorded is in use."""
    from app.core.sessions import proc_start_time

    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="LIVE", cwd=str(tmp_path),
                          procStart=proc_start_time(live_pid))
    out = old_folder(sandbox.user_tmp / "tmp.Live")
    write_records(sandbox.state, "LIVE", [record(out, session="other", cwd=tmp_path)])
    assert gc_json() == {str(out): ("kept", "live")} and out.is_dir()


def test_a_record_whose_session_differs_from_its_file_is_dropped_from_that_file(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A record in `gc/A.json` that says session B: once its path is gone, the sweep drops it
    from A.json (where it is), not from a B.json that does not exist; else it would be
    reported missing at every sweep for ever, and would take a new folder of that name."""
    gone = sandbox.user_tmp / "tmp.Gone"
    file = write_records(sandbox.state, "A", [record(gone, session="B", cwd=tmp_path)])
    assert gc_json() == {str(gone): ("missing", "missing")}
    assert not file.exists() or json.loads(file.read_text())["records"] == []
    assert gc_json() == {}


def test_duplicate_records_are_one_entry_and_all_dropped(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Held: the same path three times in one file (a program that appends without looking)."""
    out = old_folder(sandbox.user_tmp / "tmp.Dup")
    file = write_records(sandbox.state, "s1", [record(out, cwd=tmp_path)] * 3)
    assert gc_json() == {str(out): ("removed", "age")} and not out.exists()
    assert not file.exists()


def test_a_hundred_thousand_records_are_swept_in_bounded_time(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A records file another program filled with 100,000 records of paths long gone, and one
    real old output: one sweep, well within a minute, drops them all and takes the output."""
    out = old_folder(sandbox.user_tmp / "tmp.Real")
    many = [record(sandbox.user_tmp / f"tmp.{i:06d}", cwd=tmp_path) for i in range(100_000)]
    write_records(sandbox.state, "s1", [*many, record(out, cwd=tmp_path)])
    started = time.monotonic()
    done = run_cli("gc", "--json", timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["removed"] == 1 and not out.exists()
    assert len(report["entries"]) == 100_001
    assert not (sandbox.state / "gc" / "s1.json").exists()
    assert took < 60, took


def test_many_young_outputs_are_judged_in_bounded_time(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """5,000 young scratch files of one session (a generator that wrote one file a call) and an
    old one: the size bound and the age marks compare each output with the others."""
    folder = sandbox.user_tmp / "many"
    folder.mkdir()
    records = []
    for i in range(5_000):
        (folder / f"f{i}").write_bytes(b"x")
        records.append(record(folder / f"f{i}", kind="scratch", cwd=tmp_path, when=time.time()))
    out = old_folder(sandbox.user_tmp / "tmp.Real")
    write_records(sandbox.state, "s1", [*records, record(out, cwd=tmp_path)])
    started = time.monotonic()
    entries = gc_json()
    took = time.monotonic() - started
    assert entries[str(out)] == ("removed", "age") and len(entries) == 5_001
    assert took < 30, took


@pytest.mark.parametrize("kind", ["symlink", "fifo", "huge", "corrupt", "list", "nested"])
def test_a_hostile_records_file_loses_no_record_of_the_others(
        sandbox: SandboxEnv, tmp_path: Path, kind: str) -> None:
    """A records file that is a symlink, a FIFO, past the read limit, not JSON, or nested past
    the parser's depth: no traceback, nothing of it removed, it is left as it was, and the
    other session's old output still goes. A bare list (an older shape) is read as records."""
    bait = old_folder(sandbox.user_tmp / "tmp.Bait")
    out = old_folder(sandbox.user_tmp / "tmp.Real")
    write_records(sandbox.state, "good", [record(out, cwd=tmp_path)])
    bad = sandbox.state / "gc" / "bad.json"
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"session": "bad", "records": [record(bait, session="bad")]}))
    if kind == "symlink":
        bad.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(bad)
    elif kind == "huge":
        with open(bad, "wb") as f:
            f.write(b'{"records": [')
            f.truncate(65 * 1024 * 1024)
    elif kind == "corrupt":
        bad.write_text(json.dumps({"records": [record(bait)]})[:-7])
    elif kind == "list":
        bad.write_text(json.dumps([record(bait, session="bad"), "junk", 7]))
    else:
        bad.write_text("[" * 100_000 + "]" * 100_000)
    before = os.lstat(bad)
    entries = gc_json()
    assert entries[str(out)] == ("removed", "age")
    assert target.read_text().count("tmp.Bait") == 1
    if kind == "list":  # an older shape, read as such: its one good record counts, and goes
        assert entries[str(bait)] == ("removed", "age") and not bad.exists()
        return
    assert bait.is_dir() and str(bait) not in entries, entries
    after = os.lstat(bad)
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)


# --- what was recorded is not what is there now ------------------------------------------------------


def test_a_recorded_folder_the_user_made_again_after_the_record_is_not_the_output(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A record without evidence (an older version wrote it) of `/tmp/build`; the user removed
    that folder and made their own at the same name afterwards (a new inode, born after the
    record), then left it for a week."""
    build = sandbox.user_tmp / "build"
    add_record("s1", build, cwd=tmp_path, when=time.time() - 60)  # the session's folder, long removed
    old_folder(build)
    (build / "results.csv").write_text("the user's own results\n")
    set_mtime(build, OLD)
    entries = gc_json()
    assert (build / "results.csv").exists(), entries


def test_a_recorded_mktemp_folder_replaced_by_the_user_is_not_the_output(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Held: the same for a record the hook made with evidence (device, inode, birth)."""
    out = Path(hook_bash(f"mktemp -d -p {sandbox.user_tmp}", tmp_path).strip())
    assert recorded() == [str(out)]
    subprocess.run(["rm", "-rf", str(out)], check=True)
    time.sleep(1.1)
    old_folder(out)
    (out / "mine.txt").write_text("the user's\n")
    set_mtime(out, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_json()
    assert (out / "mine.txt").exists(), entries


def test_a_recorded_scratch_file_replaced_by_a_folder_is_not_the_output(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Held: a Write's record (window and file) of a file the user replaced by a folder."""
    notes = sandbox.user_tmp / "notes.md"
    hook_write(notes, tmp_path)
    notes.unlink()
    old_folder(notes)
    (notes / "draft.md").write_text("mine\n")
    set_mtime(notes, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_json()
    assert (notes / "draft.md").exists(), entries


def test_a_recorded_folder_the_users_shell_works_in_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """Held: an old output a user's shell has as its cwd, with TMPDIR inside the home."""
    out = old_folder(sandbox.user_tmp / "tmp.Shell")
    add_record("s1", out, cwd=tmp_path)
    started.append(subprocess.Popen(["sleep", "60"], cwd=out))
    set_mtime(out, OLD)
    assert gc_json() == {str(out): ("kept", "in_use")} and out.is_dir()


# --- bounds with odd values --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "-1", "", "7d", "1.5", "1e3", " ", "0x10", "nan"])
def test_an_odd_age_bound_keeps_the_default_and_says_so(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """`CLAUDETTO_GC_MAX_AGE_DAYS=abc` (or negative, or a unit): never "no age at all"; the
    default (7 days) holds, and the log says which value was passed over."""
    monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", value)
    young = old_folder(sandbox.user_tmp / "tmp.Young", age=3 * DAY)
    old = old_folder(sandbox.user_tmp / "tmp.Old")
    add_record("s1", young, cwd=tmp_path)
    add_record("s1", old, cwd=tmp_path)
    assert gc_json() == {str(young): ("kept", "young"), str(old): ("removed", "age")}
    logs = "".join(p.read_text() for p in sandbox.claude_tmp_root.rglob("*.log"))
    if value.strip():
        assert "CLAUDETTO_GC_MAX_AGE_DAYS" in logs, logs


@pytest.mark.parametrize("value", ["99999999999999999999999999", str(2**63)])
def test_a_huge_age_bound_keeps_everything_young(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", value)
    out = old_folder(sandbox.user_tmp / "tmp.Old", age=3650 * DAY)
    add_record("s1", out, cwd=tmp_path)
    assert gc_json() == {str(out): ("kept", "young")}


@pytest.mark.parametrize("value", ["abc", "-5", "5GiB"])
def test_an_odd_size_bound_keeps_the_default(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """`CLAUDETTO_GC_MAX_BYTES=5GiB` is no number: the default 5 GiB holds, never 0 bytes."""
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", value)
    young = old_folder(sandbox.user_tmp / "tmp.Young", age=DAY)
    add_record("s1", young, cwd=tmp_path)
    assert gc_json() == {str(young): ("kept", "young")}
    logs = "".join(p.read_text() for p in sandbox.claude_tmp_root.rglob("*.log"))
    assert "CLAUDETTO_GC_MAX_BYTES" in logs, logs


def test_the_size_bound_takes_the_oldest_first_and_never_a_live_one(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held: three young outputs of a dead session over a bound of two of them, and a bigger
    live one: the oldest of the dead session's goes, the live one is not even counted."""
    from app.core.sessions import proc_start_time

    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(3 * 64 * 1024))
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="LIVE", cwd=str(tmp_path),
                          procStart=proc_start_time(live_pid))
    outs = []
    for i, age in enumerate((3 * DAY, 2 * DAY, 1 * DAY)):
        folder = sandbox.user_tmp / f"tmp.{i}"
        folder.mkdir()
        (folder / "data").write_bytes(os.urandom(80 * 1024))
        set_mtime(folder, age)
        add_record("dead", folder, cwd=tmp_path)
        outs.append(folder)
    live = sandbox.user_tmp / "tmp.Live"
    live.mkdir()
    (live / "data").write_bytes(os.urandom(400 * 1024))
    set_mtime(live, 6 * DAY)
    add_record("LIVE", live, cwd=tmp_path, session="LIVE")
    entries = gc_json()
    assert entries[str(outs[0])] == ("removed", "size")
    assert entries[str(outs[1])] == ("kept", "young") and entries[str(outs[2])] == ("kept", "young")
    assert entries[str(live)] == ("kept", "live") and live.is_dir()


def test_an_age_bound_of_zero_takes_only_unused_outputs_and_says_so(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`CLAUDETTO_GC_MAX_AGE_DAYS=0` is taken as written (every unused output goes at the next
    sweep), never as "everything": a live session's output, and one holding a repository with
    uncommitted work, stay; the log says the 0 is in force."""
    from app.core.sessions import proc_start_time

    monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", "0")
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="LIVE", cwd=str(tmp_path),
                          procStart=proc_start_time(live_pid))
    live = old_folder(sandbox.user_tmp / "tmp.Live", age=60)
    add_record("LIVE", live, cwd=tmp_path)
    work = make_repo(sandbox.user_tmp / "tmp.Work")
    (work / "draft.py").write_text("uncommitted\n")
    set_mtime(work, 60)
    add_record("dead", work, cwd=tmp_path)
    unused = old_folder(sandbox.user_tmp / "tmp.Unused", age=60)
    add_record("dead", unused, cwd=tmp_path)
    assert gc_json() == {str(live): ("kept", "live"), str(work): ("kept", "dirty"),
                         str(unused): ("removed", "age")}
    logs = "".join(p.read_text() for p in sandbox.claude_tmp_root.rglob("*.log"))
    assert "CLAUDETTO_GC_MAX_AGE_DAYS='0' is in force" in logs, logs


def test_tmpdir_set_to_a_project_without_git_keeps_what_its_sessions_wrote(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`TMPDIR=$PWD` in a folder of notes with no git: a Write there is a "scratch output" to the
    recorder, but the session worked in that folder: its files are the project's."""
    notes = tmp_path / "notes"
    notes.mkdir()
    monkeypatch.setenv("TMPDIR", str(notes))
    idea = notes / "idea.md"
    hook_write(idea, notes)
    set_mtime(idea, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_json()
    assert idea.exists(), entries
    assert entries[str(idea)] == ("kept", "in_use")


def test_a_session_started_in_a_shared_temp_folder_still_has_its_outputs_swept(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held: `cd /tmp && claude` for a throwaway chat; /tmp (sticky, writable by all) is no
    project, and the `mktemp -d` folder that session made still goes at its age."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(shared))
    out = Path(hook_bash("mktemp -d", shared).strip())
    assert out.parent == shared and recorded() == [str(out)]
    set_mtime(out, OLD)
    age_records(sandbox.state, OLD)
    assert gc_json() == {str(out): ("removed", "age")} and not out.exists()


@pytest.mark.parametrize("tmpdir_is_the_project", [False, True])
def test_a_file_written_from_elsewhere_into_a_known_project_without_git_in_the_root_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmpdir_is_the_project: bool) -> None:
    """A folder of notes without git that Claude was started in (`.claude.json` lists it) lies in
    the temp folder (the scratch disk), or is it (`TMPDIR=$PWD` there once); a session working
    elsewhere writes a new file into it: the project's file, not an output."""
    from app.core import paths

    scratch = tmp_path / "scratch"
    notes = scratch if tmpdir_is_the_project else scratch / "notes"
    notes.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(scratch))
    paths.claude_json().write_text(json.dumps({"projects": {str(notes): {}}}))
    idea = notes / "idea.md"
    hook_write(idea, tmp_path)
    assert recorded() == [str(idea)]
    set_mtime(idea, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_json()
    assert idea.exists(), entries


def test_a_session_started_in_a_private_temp_folder_still_has_its_command_outputs_swept(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held: `cd $TMPDIR && claude` in a private temp folder (`/tmp/user/1000`, mode 700; Claude
    lists it as a project): the `mktemp -d` folder, and a file written into it, still go; only
    a file a Write made directly in that folder stays (it may be the project's)."""
    from app.core import paths

    private = tmp_path / "user-tmp"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(private))
    paths.claude_json().write_text(json.dumps({"projects": {str(private): {}}}))
    out = Path(hook_bash("mktemp -d", private).strip())
    inner = out / "notes.md"
    hook_write(inner, private)
    assert recorded() == sorted([str(out), str(inner)])
    set_mtime(inner, OLD)
    set_mtime(out, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_json()
    assert entries[str(out)] == ("removed", "age") and not out.exists(), entries


def test_a_record_naming_its_own_sessions_project_on_the_scratch_disk_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held: a hand-edited record of kind `temp` names the project its session ran in, a clean,
    pushed clone on the scratch disk (TMPDIR) that Claude lists as a project, as it lists every
    folder it was started in."""
    from app.core import paths

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    origin = make_repo(tmp_path / "origin")
    project = scratch / "proj"
    git(tmp_path, "clone", "-q", str(origin), str(project))
    paths.claude_json().write_text(json.dumps({"projects": {str(project): {}}}))
    set_mtime(project, OLD)
    add_record("s1", project, cwd=project)
    assert gc_json() == {str(project): ("kept", "in_use")} and (project / "README.md").exists()
