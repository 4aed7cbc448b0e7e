"""Seed 001 (the output GC) read for exactness: each bound at its edge, each count and total
the report gives, each rule's order, checked through the contract (`claudetto gc`, the hooks)
where tests/test_seed_001.py checks only the common case. Real folders, files, git
repositories and processes; the few in-process calls are the age edge, where a subprocess
cannot hold the clock still."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import SandboxEnv, add_record, make_repo, run_cli, run_hook, set_mtime

DAY = 86_400
OLD = 8 * DAY


def folder(path: Path, age: float, size: int = 16 * 1024) -> Path:
    path.mkdir(parents=True)
    (path / "data.bin").write_bytes(os.urandom(size))
    set_mtime(path, age)
    return path


def gc_json(*args: str) -> dict[str, Any]:
    done = run_cli("gc", "--json", *args)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def by_path(doc: dict[str, Any]) -> dict[str, tuple[str, str, int]]:
    return {e["path"]: (e["status"], e["reason"], e["size"]) for e in doc["entries"]}


# --- Rule 5: "the oldest unused paths until the unused paths take at most 5 GiB" -------------


@pytest.fixture
def three_young(sandbox: SandboxEnv) -> dict[str, Path]:
    """Three young unused outputs of a dead session, `a` the oldest."""
    made = {name: folder(sandbox.user_tmp / name, age) for name, age in (("a", 3 * DAY), ("b", 2 * DAY),
                                                                         ("c", DAY // 2))}
    for path in made.values():
        add_record("dead", path)
    return made


def test_rule5_at_most_the_bound_exactly_at_it_nothing_goes_one_byte_over_only_the_oldest(
        three_young: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = {p: s for p, (_, _, s) in by_path(gc_json("--dry-run")).items()}
    total = sum(sizes.values())
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(total))  # "at most": the total itself is within
    assert {s[:2] for s in by_path(gc_json("--dry-run")).values()} == {("kept", "young")}
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(total - 1))  # one byte over: the oldest goes, only it
    got = by_path(gc_json())
    assert [got[str(three_young[n])][:2] for n in "abc"] == [("removed", "size"), ("kept", "young"),
                                                            ("kept", "young")]
    assert not three_young["a"].exists() and three_young["b"].is_dir() and three_young["c"].is_dir()


def test_rule5_a_live_sessions_output_is_not_unused_and_does_not_count_toward_the_bound(
        sandbox: SandboxEnv, live_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    big = folder(sandbox.user_tmp / "big-live", DAY * 5, size=256 * 1024)
    small = folder(sandbox.user_tmp / "small-dead", DAY)
    add_record("alive", big)
    add_record("dead", small)
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="alive", cwd=str(sandbox.home))
    small_size = by_path(gc_json("--dry-run"))[str(small)][2]
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(small_size))
    got = by_path(gc_json())
    assert got[str(big)][:2] == ("kept", "live") and got[str(small)][:2] == ("kept", "young")
    assert big.is_dir() and small.is_dir()


# --- Rule 5: "older than 7 days" --------------------------------------------------------------


def test_rule5_exactly_seven_days_old_is_not_older_than_seven_days(sandbox: SandboxEnv) -> None:
    """In process: only a fixed `now` puts a path at exactly the bound."""
    from app.core.gc_rules import Facts, judge

    out = folder(sandbox.user_tmp / "edge", DAY)
    add_record("dead", out)
    mtime = os.lstat(out).st_mtime
    at_bound = judge(Facts(None, None, None, None), now=mtime + 7 * DAY)
    assert [(i.action, i.reason) for i in at_bound] == [("keep", "young")]
    past = judge(Facts(None, None, None, None), now=mtime + 7 * DAY + 1)
    assert [(i.action, i.reason) for i in past] == [("remove", "age")]


def test_rule5_the_age_bound_is_gc_max_age_days_from_the_environment(sandbox: SandboxEnv,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    day_and_hour = folder(sandbox.user_tmp / "older", DAY + 3600)
    less_than_a_day = folder(sandbox.user_tmp / "younger", DAY - 3600)
    add_record("dead", day_and_hour)
    add_record("dead", less_than_a_day)
    monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", "1")
    got = by_path(gc_json())
    assert got[str(day_and_hour)][:2] == ("removed", "age") and got[str(less_than_a_day)][:2] == ("kept", "young")


# --- Rules 2 and 3 come before 4 and 5; the roots are those of the recording session -----------


def test_rule2_the_worktrees_folder_itself_and_another_projects_are_no_root(sandbox: SandboxEnv,
                                                                              tmp_path: Path) -> None:
    mine, other = make_repo(tmp_path / "mine"), make_repo(tmp_path / "other")
    own_root = folder(mine / ".claude" / "worktrees", OLD)
    theirs = folder(other / ".claude" / "worktrees" / "w", OLD)
    add_record("dead", own_root, kind="worktree", cwd=mine)
    add_record("dead", theirs, kind="worktree", cwd=mine)  # recorded by a session that ran in `mine`
    got = by_path(gc_json())
    assert got[str(own_root)][:2] == ("skip", "outside_root")
    assert got[str(theirs)][:2] == ("skip", "outside_root")
    assert (own_root / "data.bin").is_file() and (theirs / "data.bin").is_file()


def test_rules_2_and_3_come_first_a_young_or_live_path_outside_or_a_symlink_is_a_skip(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int) -> None:
    outside_young = folder(tmp_path / "outside-young", DAY)
    outside_live = folder(tmp_path / "outside-live", OLD)
    target = folder(sandbox.user_tmp / "target", DAY)
    link = sandbox.user_tmp / "link-live"
    link.symlink_to(target)
    add_record("dead", outside_young)
    add_record("alive", outside_live)
    add_record("alive", link)
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="alive", cwd=str(sandbox.home))
    got = by_path(gc_json())
    assert got[str(outside_young)][:2] == ("skip", "outside_root")
    assert got[str(outside_live)][:2] == ("skip", "outside_root")
    assert got[str(link)][:2] == ("skip", "symlink")
    assert outside_young.is_dir() and outside_live.is_dir() and link.is_symlink() and target.is_dir()


# --- Rule 4: "its file in sessions/ ... names a running process" -------------------------------


def _proc_start(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2:].split()[19]  # field 22 (fields 3.. follow the name)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux procStart")
def test_rule4_a_reused_pid_with_another_proc_start_names_no_running_session(sandbox: SandboxEnv,
                                                                            live_pid: int) -> None:
    out = folder(sandbox.user_tmp / "out", OLD)
    add_record("sid", out)
    file = sandbox.write_session(str(live_pid), pid=live_pid, sessionId="sid", cwd=str(sandbox.home),
                                 procStart=_proc_start(live_pid))
    assert by_path(gc_json("--dry-run"))[str(out)][:2] == ("kept", "live")
    file.write_text(json.dumps({"pid": live_pid, "sessionId": "sid", "cwd": str(sandbox.home),
                                "procStart": str(int(_proc_start(live_pid)) + 1)}))
    assert by_path(gc_json())[str(out)][:2] == ("removed", "age")
    assert not out.exists()


# --- The report: "each path with its size, the count of removed paths, the space freed" --------


def test_the_freed_total_is_the_sum_of_the_sizes_listed_in_the_dry_run_and_in_the_sweep(
        three_young: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", "1")  # a and b are old, c young
    dry = gc_json("--dry-run")
    going = [e for e in dry["entries"] if e["status"] == "would_remove"]
    assert sorted(e["path"] for e in going) == [str(three_young["a"]), str(three_young["b"])]
    assert dry["removed"] == 2 and dry["freed"] == sum(e["size"] for e in going) > 0
    text = run_cli("gc", "--dry-run")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[-1] == f"GC removed=2 freed={dry['freed']} dry_run=true"
    real = gc_json()
    gone = [e for e in real["entries"] if e["status"] == "removed"]
    assert real["removed"] == len(gone) == 2 and real["freed"] == sum(e["size"] for e in gone) == dry["freed"]


def test_a_recorded_path_that_is_gone_is_missing_and_only_a_real_sweep_drops_its_record(
        sandbox: SandboxEnv) -> None:
    from app.core.gc_records import read_records

    gone = sandbox.user_tmp / "gone"
    add_record("dead", gone)
    assert [(e["status"], e["size"]) for e in gc_json("--dry-run")["entries"]] == [("missing", 0)]
    assert [r.path for r in read_records()] == [str(gone)]
    doc = gc_json()
    assert [e["status"] for e in doc["entries"]] == ["missing"] and doc["removed"] == 0
    assert read_records() == []


def test_an_old_scratch_file_a_write_made_goes_by_age_with_its_size(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The scratch kind end to end: Claude's Write into the temp folder, then the sweep."""
    note = sandbox.user_tmp / "plan.md"
    content = "x" * 20_000
    note.write_text(content)
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path),
               "transcript_path": "/nowhere.jsonl", "tool_name": "Write",
               "tool_input": {"file_path": str(note), "content": content},
               "tool_response": {"type": "create", "filePath": str(note)}, "tool_use_id": "toolu_1"}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    set_mtime(note, OLD)
    doc = gc_json()
    assert [(e["path"], e["kind"], e["status"], e["reason"]) for e in doc["entries"]] == [
        (str(note), "scratch", "removed", "age")]
    assert doc["entries"][0]["size"] >= 20_000 and doc["freed"] == doc["entries"][0]["size"]
    assert not note.exists()


def test_a_session_file_with_no_pid_counts_as_live(sandbox: SandboxEnv) -> None:
    out = folder(sandbox.user_tmp / "out", OLD)
    add_record("nopid", out)
    sandbox.write_session("nopid", sessionId="nopid", cwd=str(sandbox.home))
    assert by_path(gc_json())[str(out)][:2] == ("kept", "live")
    assert out.is_dir()


def test_a_dead_process_in_the_sessions_file_protects_nothing(sandbox: SandboxEnv) -> None:
    out = folder(sandbox.user_tmp / "out", OLD)
    add_record("sid", out)
    dead = subprocess.Popen(["true"])
    dead.wait()
    sandbox.write_session(str(dead.pid), pid=dead.pid, sessionId="sid", cwd=str(out))  # its cwd inside, too
    assert by_path(gc_json())[str(out)][:2] == ("removed", "age")


# --- Definitions the seed leans on: Age (own mtime) and Size (disk blocks, hard links once) ----


def test_age_is_the_paths_own_mtime_not_a_file_written_inside_nor_the_records_time(sandbox: SandboxEnv) -> None:
    import time

    out = folder(sandbox.user_tmp / "out", OLD)
    (out / "data.bin").write_bytes(b"fresh")  # rewritten now: the folder's own mtime stays old
    set_mtime(out, OLD)
    add_record("dead", out, when=time.time())  # and recorded just now
    assert by_path(gc_json())[str(out)][:2] == ("removed", "age")


def test_size_is_disk_blocks_with_hard_links_once(sandbox: SandboxEnv) -> None:
    out = sandbox.user_tmp / "out"
    out.mkdir()
    with open(out / "hole.bin", "wb") as fh:  # 64 MiB apparent, almost nothing on disk
        fh.truncate(64 * 1024 * 1024)
    (out / "real.bin").write_bytes(os.urandom(256 * 1024))
    os.link(out / "real.bin", out / "again.bin")
    set_mtime(out, OLD)
    add_record("dead", out)
    blocks = sum(os.lstat(out / n).st_blocks for n in ("hole.bin", "real.bin")) + os.lstat(out).st_blocks
    doc = gc_json("--dry-run")
    assert doc["entries"][0]["size"] == blocks * 512 < 1024 * 1024 and doc["freed"] == blocks * 512


# --- The dry run: "It removes nothing and changes no record" ------------------------------------


def test_the_dry_run_writes_no_state_at_all(sandbox: SandboxEnv, tmp_path: Path) -> None:
    old = folder(sandbox.user_tmp / "old", OLD)
    outside = folder(tmp_path / "outside", OLD)
    add_record("dead", old)
    add_record("dead", outside)

    def state() -> dict[str, tuple[int, float]]:
        return {str(p): (p.stat().st_size, p.stat().st_mtime) for p in sandbox.state.rglob("*")}

    before = state()
    assert {(e["status"], e["reason"]) for e in gc_json("--dry-run")["entries"]} == {
        ("would_remove", "age"), ("skip", "outside_root")}
    assert state() == before and old.is_dir()


# --- "the ones that nothing uses": a temp folder a glob was copied into is plain garbage -------


QUIET = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}


def bash_call(command: str, cwd: Path) -> str:
    """The command as Claude's Bash tool runs it, then its PostToolUse hook."""
    out = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True,
                         env=dict(os.environ)).stdout
    done = run_hook({"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(cwd),
                     "transcript_path": "/nowhere.jsonl", "tool_name": "Bash", "tool_input": {"command": command},
                     "tool_response": {**QUIET, "stdout": out}, "tool_use_id": "toolu_1"}, cwd=cwd)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    return out


@pytest.mark.parametrize("later", ["", "rm NOTES.md", "mv"])
def test_an_old_temp_folder_that_files_were_copied_into_by_a_glob_goes(sandbox: SandboxEnv, tmp_path: Path,
                                                                        later: str) -> None:
    """The glob's names are stored as they match while the call's sources are all there (a
    source stored as typed, `<repo>/*.md`, was never found: the folder was kept for ever). A
    matched file removed from its source since keeps the folder; a `mv` by a glob too."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "# r\n", "NOTES.md": "n\n"})
    made = Path(bash_call("mktemp -d", repo).strip())
    bash_call(f"{'mv' if later == 'mv' else 'cp'} {repo}/*.md {made}/", repo)
    assert sorted(p.name for p in made.iterdir()) == ["NOTES.md", "README.md"]
    if later.startswith("rm"):
        (repo / "NOTES.md").unlink()
    set_mtime(made, OLD)
    got = by_path(gc_json())[str(made)][:2]
    if later:
        assert got == ("kept", "dirty") and (made / "NOTES.md").is_file(), got
    else:
        assert got == ("removed", "age") and not made.exists()


# --- Rule 4 with the defaults; rule 2 with a sandbox's layout ----------------------------------


def test_rule4_without_claude_config_dir_the_sessions_are_in_home_dot_claude(
        sandbox: SandboxEnv, live_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    mine, theirs = folder(sandbox.user_tmp / "mine", OLD), folder(sandbox.user_tmp / "theirs", OLD)
    add_record("alive", mine)
    add_record("gone", theirs)
    sessions = sandbox.home / ".claude" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{live_pid}.json").write_text(json.dumps({"pid": live_pid, "sessionId": "alive",
                                                           "cwd": str(sandbox.home)}))
    got = by_path(gc_json())
    assert got[str(mine)][:2] == ("kept", "live") and got[str(theirs)][:2] == ("removed", "age")


def test_rule2_a_temp_folder_that_holds_the_home_is_still_the_users_temp_folder(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(sandbox.root))  # sb/: the home, the config folder beside it
    out = folder(sandbox.root / "tmp.AbCdEf1234", OLD)
    add_record("dead", out)
    assert by_path(gc_json())[str(out)][:2] == ("removed", "age")


@pytest.mark.xfail(strict=True, reason=(
    "MISS risk: a record as the seed describes it (path, kind, session id, time, working folder), "
    "written by hand with the time it says the output was made (8 days ago) for a folder aged the "
    "same: output_shape.born_after passes over every record without evidence whose path was born "
    "(statx) after the record's time, so the old output is neither listed nor removed"))
def test_a_record_without_evidence_dated_eight_days_ago_names_an_old_output_that_goes(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    import time

    out = folder(sandbox.user_tmp / "tmp.AbCdEf1234", OLD)
    add_record("dead", out, cwd=tmp_path, when=time.time() - OLD)
    assert by_path(gc_json()).get(str(out), ("absent", ""))[:2] == ("removed", "age")
