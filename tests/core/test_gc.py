"""The output GC sweep: each rule, each status, the size bound, the dry run, the records."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from app.core import gc, journal, paths
from app.core.gc_records import read_records
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, set_mtime
from tests.support import add_record as record

DAY = 86_400
OLD = 8 * DAY  # past GC_MAX_AGE_DAYS (7)




def folder(path: Path, age: float, files: int = 2, size: int = 10) -> Path:
    """A real folder with `files` real files, itself `age` seconds old."""
    path.mkdir(parents=True)
    for i in range(files):
        (path / f"f{i}.bin").write_bytes(os.urandom(size))
    set_mtime(path, age)
    return path


def by_path(report: gc.GcReport) -> dict[str, tuple[str, str]]:
    return {e.path: (e.status, e.reason) for e in report.entries}



def live_session(sandbox: SandboxEnv, sid: str, pid: int, cwd: Path | str) -> None:
    sandbox.write_session(str(pid), pid=pid, sessionId=sid, cwd=str(cwd), procStart=proc_start_time(pid))


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


# --- rule 1: only recorded paths ------------------------------------------------------------


def test_rule1_an_unrecorded_old_folder_stays_a_recorded_one_goes(sandbox: SandboxEnv) -> None:
    stray = folder(sandbox.user_tmp / "tmp.stray00001", OLD)
    recorded = folder(sandbox.user_tmp / "tmp.recorded01", OLD)
    record("s1", recorded)
    report = gc.sweep()
    assert by_path(report) == {str(recorded): ("removed", "age")}
    assert stray.exists() and not recorded.exists()
    assert report.removed == 1 and report.freed > 0


# --- rules 2 and 3: roots, symlinks, escapes: skip, record dropped ----------------------------


def test_rule2_outside_every_root_is_skipped_and_its_record_dropped(sandbox: SandboxEnv) -> None:
    outside = folder(sandbox.home / "copy", OLD)
    record("s1", outside, "copy")
    record("s1", sandbox.user_tmp, "copy")  # the root itself is not strictly inside it
    report = gc.sweep()
    assert by_path(report) == {str(outside): ("skip", "outside_root"), str(sandbox.user_tmp): ("skip", "outside_root")}
    assert outside.exists() and sandbox.user_tmp.exists()
    assert read_records() == []
    assert not paths.gc_records_file("s1").exists()


def test_rule3_a_symlink_is_skipped_and_its_target_kept(sandbox: SandboxEnv) -> None:
    target = folder(sandbox.home / "precious", OLD)
    link = sandbox.user_tmp / "link"
    link.symlink_to(target)
    set_mtime(link, OLD)
    record("s1", link)
    report = gc.sweep()
    assert by_path(report) == {str(link): ("skip", "symlink")}
    assert link.is_symlink() and (target / "f0.bin").exists()
    assert read_records() == []


def test_rule3_a_real_path_that_leaves_the_root_is_skipped(sandbox: SandboxEnv) -> None:
    elsewhere = sandbox.home / "elsewhere"
    inner = folder(elsewhere / "inner", OLD)
    (sandbox.user_tmp / "jump").symlink_to(elsewhere)
    via = sandbox.user_tmp / "jump" / "inner"
    record("s1", via)
    report = gc.sweep()
    assert by_path(report) == {str(inner): ("skip", "escapes_root")}  # reported where it really is
    assert inner.exists()


def test_rule2_a_worktree_in_the_project_root_is_removed_and_pruned(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt = repo / ".claude" / "worktrees" / "side"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    set_mtime(wt, OLD)
    record("s1", wt, "worktree", cwd=repo)
    report = gc.sweep()
    assert by_path(report) == {str(wt): ("removed", "age")}
    assert report.entries[0].root == str(repo / ".claude" / "worktrees")
    assert not wt.exists()
    assert "side" not in git(repo, "worktree", "list")  # pruned


def test_worktree_made_from_inside_a_worktree_has_the_main_repo_root(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = repo / ".claude" / "worktrees" / "a"
    git(repo, "worktree", "add", "-q", str(first), "-b", "a")
    second = repo / ".claude" / "worktrees" / "b"
    git(first, "worktree", "add", "-q", "../b", "-b", "b")  # made by a session working in `a`
    set_mtime(second, OLD)
    record("s1", second, "worktree", cwd=first / "src")
    report = gc.sweep()
    assert by_path(report) == {str(second): ("removed", "age")}
    assert first.exists() and not second.exists()
    listed = git(repo, "worktree", "list")
    assert str(first) in listed and str(second) not in listed


def test_a_worktree_outside_the_project_root_and_tmp_is_skipped(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt = tmp_path / "beside"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "beside")
    set_mtime(wt, OLD)
    record("s1", wt, "worktree", cwd=repo)
    assert by_path(gc.sweep()) == {str(wt): ("skip", "outside_root")}
    assert wt.exists()


# --- rule 4: nothing live needs it ------------------------------------------------------------


def test_rule4_a_live_sessions_output_is_kept(sandbox: SandboxEnv, live_pid: int) -> None:
    live_session(sandbox, "alive", live_pid, sandbox.home)
    mine = folder(sandbox.user_tmp / "mine", OLD)
    record("alive", mine)
    assert by_path(gc.sweep()) == {str(mine): ("kept", "live")}
    assert mine.exists() and [r.path for r in read_records()] == [str(mine)]


def test_rule4_a_live_session_whose_id_is_typed_in_another_case_keeps_its_output(
        sandbox: SandboxEnv, live_pid: int) -> None:
    """`claude --session-id 4E8B...` keeps the id as typed; a record may carry it in lower case.
    A UUID is one id whatever its case: the output stays live (the cleanup compares the same way)."""
    sid = "4e8b0c2a-1c9d-4c1e-9f3a-6f7e2d1a9b00"
    live_session(sandbox, sid.upper(), live_pid, sandbox.home)
    mine = folder(sandbox.user_tmp / "mine", OLD)
    record(sid, mine)
    assert by_path(gc.sweep()) == {str(mine): ("kept", "live")}


def test_rule4_a_dead_sessions_file_protects_nothing(sandbox: SandboxEnv) -> None:
    sandbox.write_session("gone", pid=dead_pid(), sessionId="gone", cwd=str(sandbox.home))
    theirs = folder(sandbox.user_tmp / "theirs", OLD)
    record("gone", theirs)
    assert by_path(gc.sweep()) == {str(theirs): ("removed", "age")}


def test_rule4_a_live_sessions_folder_inside_the_path_keeps_it(sandbox: SandboxEnv, live_pid: int) -> None:
    work = folder(sandbox.user_tmp / "work", OLD)
    cwd = work / "checkout"
    cwd.mkdir()
    set_mtime(work, OLD)
    live_session(sandbox, "other", live_pid, cwd)
    record("dead", work)
    assert by_path(gc.sweep()) == {str(work): ("kept", "live")}
    assert cwd.exists()


def test_rule4_a_live_sessions_claude_temp_folder_inside_the_path_keeps_it(
    sandbox: SandboxEnv, live_pid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude's temp root inside the user's temp folder (both default to /tmp)
    monkeypatch.setenv("CLAUDE_CODE_TMPDIR", str(sandbox.user_tmp))
    cwd = sandbox.home / "proj"
    cwd.mkdir()
    live_session(sandbox, "other", live_pid, cwd)
    session_tmp = paths.claude_tmp_dir() / paths.project_slug(cwd) / "other"
    session_tmp.mkdir(parents=True)
    recorded = paths.claude_tmp_dir()
    set_mtime(recorded, OLD)
    record("dead", recorded)
    assert by_path(gc.sweep()) == {str(recorded): ("kept", "live")}
    assert session_tmp.exists()


def test_rule4_a_path_holding_a_live_output_is_kept(sandbox: SandboxEnv, live_pid: int) -> None:
    live_session(sandbox, "alive", live_pid, sandbox.home)
    outer = folder(sandbox.user_tmp / "outer", OLD)
    inner = folder(outer / "inner", OLD)
    set_mtime(outer, OLD)
    record("dead", outer)
    record("alive", inner)
    assert by_path(gc.sweep()) == {str(outer): ("kept", "live"), str(inner): ("kept", "live")}
    assert inner.exists()


def test_a_session_file_without_pid_counts_as_live(sandbox: SandboxEnv) -> None:
    sandbox.write_session("nopid", sessionId="unsure", cwd=str(sandbox.home))
    mine = folder(sandbox.user_tmp / "mine", OLD)
    record("unsure", mine)
    assert by_path(gc.sweep()) == {str(mine): ("kept", "live")}


def test_the_current_session_is_live_and_the_ending_one_is_not(sandbox: SandboxEnv, live_pid: int) -> None:
    live_session(sandbox, "ending", live_pid, sandbox.home)  # its process still runs at SessionEnd
    mine = folder(sandbox.user_tmp / "mine", OLD)
    record("ending", mine)
    record("current", folder(sandbox.user_tmp / "cur", OLD))
    start = gc.plan(current_session="current")
    assert by_path(start) == {str(mine): ("kept", "live"), str(sandbox.user_tmp / "cur"): ("kept", "live")}
    end = gc.sweep(ending_session="ending")
    assert by_path(end)[str(mine)] == ("removed", "age")
    assert not mine.exists()


# --- rule 5: age, then the size bound ----------------------------------------------------------


def test_rule5_young_is_kept_old_is_removed(sandbox: SandboxEnv) -> None:
    young = folder(sandbox.user_tmp / "young", 6 * DAY)
    old = folder(sandbox.user_tmp / "old", OLD)
    scratch = sandbox.user_tmp / "plan.md"
    scratch.write_text("x")
    set_mtime(scratch, OLD)
    record("s1", young)
    record("s1", old)
    record("s1", scratch, "scratch")
    report = gc.sweep()
    assert by_path(report) == {
        str(young): ("kept", "young"),
        str(old): ("removed", "age"),
        str(scratch): ("removed", "age"),
    }
    assert young.exists() and not old.exists() and not scratch.exists()
    assert [r.path for r in read_records()] == [str(young)]


def test_age_bound_override(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", "1")
    two_days = folder(sandbox.user_tmp / "two", 2 * DAY)
    record("s1", two_days)
    assert by_path(gc.sweep()) == {str(two_days): ("removed", "age")}


def test_size_bound_removes_oldest_unused_first_never_live(
    sandbox: SandboxEnv, live_pid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    live_session(sandbox, "alive", live_pid, sandbox.home)
    big = 256 * 1024  # real (not sparse) bytes: 64 blocks of 4 KiB
    ages = {"a": 5 * DAY, "b": 4 * DAY, "c": 3 * DAY, "d": 2 * DAY}
    made = {name: folder(sandbox.user_tmp / name, age, files=1, size=big) for name, age in ages.items()}
    live_big = folder(sandbox.user_tmp / "live", 6 * DAY, files=1, size=big)  # oldest, but live
    for name in ages:
        record("dead", made[name])
    record("alive", live_big)
    one = gc.plan().entries[0].size
    assert one is not None and one >= big
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(2 * one))  # room for two of the four unused
    report = gc.sweep()
    assert by_path(report) == {
        str(made["a"]): ("removed", "size"),
        str(made["b"]): ("removed", "size"),
        str(made["c"]): ("kept", "young"),
        str(made["d"]): ("kept", "young"),
        str(live_big): ("kept", "live"),
    }
    assert live_big.exists() and made["c"].exists() and not made["a"].exists()
    assert report.freed >= 2 * big


def test_size_bound_counts_disk_blocks_not_apparent_size(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    sparse = sandbox.user_tmp / "sparse"
    sparse.mkdir()
    with open(sparse / "hole.bin", "wb") as fh:
        fh.truncate(64 * 1024 * 1024)  # 64 MiB apparent, ~0 on disk
    set_mtime(sparse, DAY)
    record("s1", sparse)
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(1024 * 1024))
    assert by_path(gc.sweep()) == {str(sparse): ("kept", "young")}


# --- statuses: missing; nested; journal -------------------------------------------------------


def test_missing_path_has_status_missing_and_its_record_is_dropped(sandbox: SandboxEnv) -> None:
    record("s1", sandbox.user_tmp / "gone")
    keep = folder(sandbox.user_tmp / "young", DAY)
    record("s1", keep)
    assert by_path(gc.sweep()) == {str(sandbox.user_tmp / "gone"): ("missing", "missing"), str(keep): ("kept", "young")}
    assert [r.path for r in read_records("s1")] == [str(keep)]


def test_every_removal_is_journaled_nested_paths_each_once(sandbox: SandboxEnv) -> None:
    outer = folder(sandbox.user_tmp / "outer", OLD)
    inner = folder(outer / "inner", DAY)  # young, but it goes with its old parent
    set_mtime(outer, OLD)
    record("s1", outer, "copy")
    record("s2", inner, "temp")
    report = gc.sweep()
    assert by_path(report) == {str(outer): ("removed", "age"), str(inner): ("removed", "age")}
    lines = journal.read_entries()
    assert sorted((e["path"], e["kind"], e["rule"], e["session"]) for e in lines) == [
        (str(outer), "copy", "gc", "s1"),
        (str(inner), "temp", "gc", "s2"),
    ]
    assert sum(e["bytes"] for e in lines) == report.freed > 0


def test_the_same_path_recorded_by_two_sessions_is_one_entry(sandbox: SandboxEnv, live_pid: int) -> None:
    live_session(sandbox, "alive", live_pid, sandbox.home)
    shared = folder(sandbox.user_tmp / "shared", OLD)
    record("dead", shared)
    record("alive", shared)
    report = gc.sweep()
    assert by_path(report) == {str(shared): ("kept", "live")}
    assert set(report.entries[0].sessions) == {"dead", "alive"}


# --- the dry run --------------------------------------------------------------------------------


def _state_digest(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        found[rel] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_dry_run_same_statuses_removes_nothing_state_byte_identical(
    sandbox: SandboxEnv, live_pid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    live_session(sandbox, "alive", live_pid, sandbox.home)
    made = {
        "old": folder(sandbox.user_tmp / "old", OLD),
        "young": folder(sandbox.user_tmp / "young", DAY, size=64 * 1024),
        "younger": folder(sandbox.user_tmp / "younger", DAY // 2, size=64 * 1024),
        "live": folder(sandbox.user_tmp / "live", OLD),
        "outside": folder(sandbox.home / "outside", OLD),
    }
    link = sandbox.user_tmp / "link"
    link.symlink_to(made["outside"])
    for name, path in made.items():
        record("alive" if name == "live" else "dead", path)
    record("dead", link)
    record("dead", sandbox.user_tmp / "missing")
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(150 * 1024))  # room for one of the two
    journal.append({"path": "/earlier", "kind": "temp", "bytes": 1, "rule": "gc", "session": "x"})
    before = _state_digest(sandbox.state)
    dry = gc.sweep(dry_run=True)
    assert _state_digest(sandbox.state) == before
    assert all(p.exists() for p in made.values()) and link.is_symlink()
    real = gc.sweep()
    expected = {e.path: (e.status.replace("would_remove", "removed"), e.reason) for e in dry.entries}
    assert by_path(real) == expected
    assert set(by_path(real).values()) == {
        ("removed", "age"), ("removed", "size"), ("kept", "young"), ("kept", "live"),
        ("skip", "outside_root"), ("skip", "symlink"), ("missing", "missing"),
    }
    assert dry.removed == real.removed == 2 and dry.dry_run and not real.dry_run
    assert dry.freed == real.freed > 0


# --- reports ------------------------------------------------------------------------------------


def test_report_json_has_the_contract_shape(sandbox: SandboxEnv) -> None:
    old = folder(sandbox.user_tmp / "old", OLD)
    record("s1", old, "copy")
    doc = gc.report_json(gc.plan())
    assert doc["dry_run"] is True and doc["removed"] == 1 and doc["freed"] > 0
    (entry,) = doc["entries"]
    assert {k: entry[k] for k in ("path", "kind", "session", "status", "reason")} == {
        "path": str(old), "kind": "copy", "session": "s1", "status": "would_remove", "reason": "age",
    }
    assert isinstance(entry["size"], int) and entry["size"] > 0
    json.dumps(doc)


def test_report_lines_name_each_path_size_and_totals(sandbox: SandboxEnv) -> None:
    old = folder(sandbox.user_tmp / "old", OLD)
    record("s1", old)
    report = gc.sweep()
    lines = gc.report_lines(report)
    assert lines[0].split() == ["STATUS", "REASON", "SIZE", "KIND", "SESSION", "PATH"]
    assert lines[1].split() == ["removed", "age", str(report.freed), "temp", "s1", str(old)]
    assert lines[-1] == f"GC removed=1 freed={report.freed} dry_run=false"
    assert gc.report_lines(gc.sweep()) == ["GC removed=0 freed=0 dry_run=false"]


def test_a_records_file_that_is_not_json_is_left_for_the_next_write(sandbox: SandboxEnv) -> None:
    bad = paths.gc_records_file("bad")
    bad.parent.mkdir(parents=True)
    bad.write_text("{oops")
    assert gc.sweep().entries == []
    assert bad.read_text() == "{oops"


def test_a_second_sweep_waits_for_the_lock_then_reports_busy(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.state import locked

    monkeypatch.setattr(gc, "LOCK_WAIT_S", 0.2)
    with locked(paths.gc_dir() / "sweep"), pytest.raises(gc.GcBusy):
        gc.sweep()
    assert gc.plan().entries == []  # a dry run takes no lock


# --- a worktree with work in it is never removed by the GC -----------------------------------

def test_an_old_recorded_worktree_with_work_in_it_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": ".env\n"})
    base = repo / ".claude" / "worktrees"
    dirty, secret, unmerged = base / "dirty", base / "secret", base / "unmerged"
    for wt in (dirty, secret, unmerged):
        git(repo, "worktree", "add", "-q", str(wt), "-b", wt.name)
    (dirty / "README.md").write_text("changed\n")
    (secret / ".env").write_text("TOKEN=1\n")  # git-ignored: `git worktree remove` would drop it
    (unmerged / "new.txt").write_text("work\n")
    git(unmerged, "add", "new.txt")
    git(unmerged, "commit", "-q", "-m", "work on no other branch")
    for wt in (dirty, secret, unmerged):
        set_mtime(wt, OLD)
        record("s1", wt, "worktree", cwd=repo)
    assert by_path(gc.plan()) == {str(dirty): ("kept", "dirty"), str(secret): ("kept", "dirty"),
                                  str(unmerged): ("kept", "unmerged")}
    report = gc.sweep()
    assert report.removed == 0 and report.freed == 0
    assert (secret / ".env").read_text() == "TOKEN=1\n" and (dirty / "README.md").read_text() == "changed\n"
    assert len(read_records()) == 3  # kept: judged again next time


def test_a_recorded_temp_folder_holding_a_dirty_worktree_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    outer = sandbox.user_tmp / "tmp.Holder1234"
    outer.mkdir()
    wt = outer / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "inside")
    (wt / "README.md").write_text("unsaved\n")
    set_mtime(outer, OLD)
    record("s1", outer, "temp", cwd=repo)
    assert by_path(gc.sweep()) == {str(outer): ("kept", "dirty")}
    assert (wt / "README.md").read_text() == "unsaved\n"


def test_a_worktree_dirtied_between_plan_and_removal_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt = repo / ".claude" / "worktrees" / "late"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "late")
    set_mtime(wt, OLD)
    record("s1", wt, "worktree", cwd=repo)
    assert by_path(gc.plan()) == {str(wt): ("would_remove", "age")}
    (wt / "late.txt").write_text("new work\n")
    set_mtime(wt, OLD)
    assert by_path(gc.sweep()) == {str(wt): ("kept", "dirty")}
    assert (wt / "late.txt").exists()


# --- one spelling per path (review: data loss through two spellings and `sym/..`) -------------

def test_a_folder_recorded_through_a_symlink_and_its_real_path_is_one_live_entry(
        sandbox: SandboxEnv, live_pid: int) -> None:
    (sandbox.home / "tmplink").symlink_to(sandbox.user_tmp)
    shared = folder(sandbox.user_tmp / "tmp.Abc1234567", OLD)
    live_session(sandbox, "LIVE1", live_pid, "/nowhere")
    record("DEAD2", shared)
    record("LIVE1", sandbox.home / "tmplink" / "tmp.Abc1234567" / "notes.md", "scratch")
    (shared / "notes.md").write_text("live work\n")
    set_mtime(shared, OLD)
    report = gc.sweep()
    assert by_path(report)[str(shared)] == ("kept", "live")
    assert (shared / "notes.md").read_text() == "live work\n"


def test_dotdot_through_a_symlink_is_judged_where_it_really_is(sandbox: SandboxEnv) -> None:
    outside = sandbox.root / "outside" / "deep"
    outside.mkdir(parents=True)
    (sandbox.user_tmp / "sym").symlink_to(outside)
    victim = folder(sandbox.user_tmp / "victim", OLD)  # old, unrelated, never recorded
    spelled = f"{sandbox.user_tmp}/sym/../victim"  # really <outside>/victim: outside the root
    record("s1", spelled)
    report = gc.sweep()
    assert victim.exists()
    assert [e.status for e in report.entries] in (["skip"], ["missing"])
    assert journal.read_entries() == []


def test_a_locked_recorded_worktree_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt = repo / ".claude" / "worktrees" / "held"
    git(repo, "worktree", "add", "-q", "--lock", str(wt), "-b", "held")
    set_mtime(wt, OLD)
    record("s1", wt, "worktree", cwd=repo)
    assert by_path(gc.sweep()) == {str(wt): ("kept", "not_removed")}
    assert wt.exists()
