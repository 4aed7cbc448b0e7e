"""The session-start cleanup on real folders: each rule on both sides of its bound, live
sessions kept, unknown entries kept and counted, worktrees in every state, the timeout."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from app.core import hygiene, paths
from app.core.sessions import proc_start_time
from tests.core.test_worktrees import GITIGNORE, add_worktree, age
from tests.support import SandboxEnv, git, make_repo, set_mtime

DAY = 86400.0
MIN = 60.0
SLUG = "-work-proj"


def sid() -> str:
    return str(uuid.uuid4())


def tree(path: Path, files: int = 3, size: int = 100) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (path / f"f{i}.txt").write_bytes(b"x" * size)
    return path


def probe(sandbox: SandboxEnv, name: str, age_s: float) -> Path:
    path = tree(sandbox.claude_tmp / f"fswatch-probe-{name}", files=2)
    set_mtime(path, age_s)
    return path


def session_folder(sandbox: SandboxEnv, session: str, age_s: float, slug: str = SLUG) -> Path:
    path = sandbox.claude_tmp / slug / session
    tree(path / "scratchpad", files=2)
    tree(path / "tasks", files=1)
    set_mtime(path, age_s)
    return path


def gate_log(session: str, age_s: float, suffix: str = ".log", slug: str = SLUG) -> Path:
    path = paths.log_root() / slug / f"{session}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("line\n")
    set_mtime(path, age_s)
    return path


def journal(sandbox: SandboxEnv) -> list[dict[str, object]]:
    file = sandbox.state / "journal.jsonl"
    if not file.exists():
        return []
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def snapshot(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# --- probes ---------------------------------------------------------------------------------


def test_probe_folders_on_both_sides_of_the_bound(sandbox: SandboxEnv) -> None:
    old = probe(sandbox, "old", 61 * MIN)
    young = probe(sandbox, "young", 59 * MIN)
    report = hygiene.run_cleanup([])
    assert not old.exists() and young.exists()
    assert (report.probes, report.folders, report.files) == (1, 1, 2)
    assert report.bytes > 0
    assert report.unknown_kept == 0  # a young probe is named by a rule
    by_path = {v.path: v for v in report.verdicts}
    assert by_path[str(young)].reason == "young" and by_path[str(young)].action == "keep"
    assert by_path[str(old)].rule == "probe"


def test_probe_bound_comes_from_the_environment(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDETTO_PROBE_MAX_AGE_MIN", "5")
    gone = probe(sandbox, "a", 6 * MIN)
    kept = probe(sandbox, "b", 4 * MIN)
    hygiene.run_cleanup([])
    assert not gone.exists() and kept.exists()


# --- session folders and gate logs ----------------------------------------------------------


def test_session_folders_on_both_sides_of_the_period(sandbox: SandboxEnv) -> None:
    old = session_folder(sandbox, sid(), 30 * DAY + 60)
    young = session_folder(sandbox, sid(), 30 * DAY - 60)
    report = hygiene.run_cleanup([])
    assert not old.exists() and young.exists()
    assert (report.folders, report.files, report.probes) == (1, 3, 0)
    assert old.parent.exists()  # the project folder itself stays


def test_cleanup_period_days_from_settings(sandbox: SandboxEnv) -> None:
    (sandbox.config / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 2}))
    old = session_folder(sandbox, sid(), 2 * DAY + 60)
    young = session_folder(sandbox, sid(), 2 * DAY - 60)
    log_old = gate_log(sid(), 2 * DAY + 60)
    hygiene.run_cleanup([])
    assert not old.exists() and young.exists() and not log_old.exists()


def test_live_sessions_keep_their_folders_and_logs(sandbox: SandboxEnv) -> None:
    live, current, dead = sid(), sid(), sid()
    proc = subprocess.Popen(["sleep", "60"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId=live, cwd="/nowhere",
                              procStart=proc_start_time(proc.pid))
        sandbox.write_session(str(gone.pid), pid=gone.pid, sessionId=dead, cwd="/nowhere")
        folders = {s: session_folder(sandbox, s, 40 * DAY) for s in (live, current, dead)}
        logs = {s: gate_log(s, 40 * DAY) for s in (live, current, dead)}
        report = hygiene.run_cleanup([], current_session=current)
    finally:
        proc.kill()
        proc.wait()
    assert folders[live].exists() and folders[current].exists() and not folders[dead].exists()
    assert logs[live].exists() and logs[current].exists() and not logs[dead].exists()
    reasons = {(v.rule, v.session): v.reason for v in report.verdicts}
    assert reasons[("session_folder", live)] == "live"
    assert reasons[("gate_log", current)] == "live"
    assert reasons[("session_folder", dead)] == "age"
    assert report.unknown_kept == 0


def test_gate_logs_by_the_session_rule(sandbox: SandboxEnv) -> None:
    s = sid()
    old = gate_log(s, 31 * DAY)
    old_other = gate_log(s, 31 * DAY, suffix=".err")
    young = gate_log(sid(), 29 * DAY)
    not_named = gate_log("hooks", 400 * DAY)  # not <uuid>.*: no rule names it
    report = hygiene.run_cleanup([])
    assert not old.exists() and not old_other.exists()
    assert young.exists() and not_named.exists()
    assert (report.files, report.folders) == (2, 0)
    assert report.bytes > 0


def test_entries_no_rule_names_are_kept_and_counted(sandbox: SandboxEnv) -> None:
    top_file = sandbox.claude_tmp / "stray.txt"
    sandbox.claude_tmp.mkdir(parents=True, exist_ok=True)
    top_file.write_text("x")
    not_uuid = tree(sandbox.claude_tmp / SLUG / "not-a-session")
    uuid_file = sandbox.claude_tmp / SLUG / sid()
    uuid_file.write_text("a file, not a folder")
    link = sandbox.claude_tmp / SLUG / sid()
    link.symlink_to(not_uuid)
    for p in (top_file, not_uuid, uuid_file, link):
        set_mtime(p, 400 * DAY)
    session_folder(sandbox, sid(), 1 * DAY)  # named by a rule (young): not counted
    report = hygiene.run_cleanup([])
    assert report.unknown_kept == 4
    assert top_file.exists() and not_uuid.exists() and uuid_file.exists() and os.path.lexists(link)
    assert report.folders == 0


def test_dry_run_removes_nothing_and_writes_no_state(sandbox: SandboxEnv) -> None:
    probe(sandbox, "old", 2 * 60 * MIN)
    session_folder(sandbox, sid(), 40 * DAY)
    gate_log(sid(), 40 * DAY)
    before = snapshot(sandbox.root)
    planned = hygiene.plan([])
    assert snapshot(sandbox.root) == before
    assert planned.dry_run and journal(sandbox) == []
    done = hygiene.run_cleanup([])
    assert not done.dry_run
    assert (planned.folders, planned.files, planned.probes, planned.bytes) == (
        done.folders, done.files, done.probes, done.bytes)
    assert (done.folders, done.probes) == (2, 1)


def test_every_removal_has_one_journal_line(sandbox: SandboxEnv) -> None:
    a = probe(sandbox, "old", 2 * 60 * MIN)
    b = session_folder(sandbox, sid(), 40 * DAY)
    c = gate_log(sid(), 40 * DAY)
    hygiene.run_cleanup([])
    lines = journal(sandbox)
    assert sorted(str(line["path"]) for line in lines) == sorted(map(str, (a, b, c)))
    assert {line["rule"] for line in lines} == {"probe", "session_folder", "gate_log"}


# --- worktrees ------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "hello\n", ".gitignore": GITIGNORE})


def test_worktrees_in_every_state(repo: Path, sandbox: SandboxEnv) -> None:
    clean = age(add_worktree(repo, "clean"))
    young = add_worktree(repo, "young")
    live = add_worktree(repo, "live")
    (live / "src").mkdir()
    age(live)
    plain = repo / ".claude" / "worktrees" / "plain"
    tree(plain)
    age(plain)
    modified = add_worktree(repo, "modified")
    (modified / "README.md").write_text("changed\n")
    age(modified)
    untracked = add_worktree(repo, "untracked")
    (untracked / "new.txt").write_text("new\n")
    age(untracked)
    env = add_worktree(repo, "env")
    (env / ".env").write_text("SECRET=1\n")
    age(env)
    regen = add_worktree(repo, "regen")
    tree(regen / "node_modules" / "pkg", files=5)
    tree(regen / "src" / "__pycache__", files=2)
    age(regen)
    unmerged = add_worktree(repo, "unmerged")
    (unmerged / "w.txt").write_text("w\n")
    git(unmerged, "add", "w.txt")
    git(unmerged, "commit", "-q", "-m", "only here")
    age(unmerged)
    locked = add_worktree(repo, "locked")
    git(repo, "worktree", "lock", str(locked))
    age(locked)

    proc = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId=sid(), cwd=str(live / "src"),
                              procStart=proc_start_time(proc.pid))
        planned = hygiene.plan([repo])
        assert clean.exists() and regen.exists() and journal(sandbox) == []
        report = hygiene.run_cleanup([repo])
    finally:
        proc.kill()
        proc.wait()

    assert not clean.exists() and not regen.exists()
    branch_list = git(repo, "branch", "--format=%(refname:short)").split()
    assert "worktree-clean" not in branch_list and "worktree-regen" not in branch_list
    assert "worktree-unmerged" in branch_list and "worktree-locked" in branch_list
    kept = dict((Path(p).name, r) for p, r in report.worktrees_kept)
    assert kept == {
        "young": "young", "live": "live", "plain": "not_a_worktree", "modified": "dirty",
        "untracked": "dirty", "env": "dirty", "unmerged": "unmerged", "locked": "not_removed",
    }
    assert report.worktrees == 2 and report.folders == 2
    assert report.files >= 2 * 3 + 7
    assert planned.worktrees_kept == report.worktrees_kept
    assert (planned.worktrees, planned.files, planned.bytes) == (report.worktrees, report.files, report.bytes)
    for path in (young, live, plain, modified, untracked, env, unmerged, locked):
        assert path.exists()
    assert (env / ".env").read_text() == "SECRET=1\n"
    lines = [line for line in journal(sandbox) if line["kind"] == "worktree"]
    assert sorted(Path(str(line["path"])).name for line in lines) == ["clean", "regen"]

    text = hygiene.report_lines(report)
    assert text[0] == (f"CLEANED folders=2 bytes={report.bytes} files={report.files} "
                       "worktrees=2 probes=0")
    assert f"WORKTREES_KEPT dirty {env}" in text
    assert f"WORKTREES_KEPT not_removed {locked}" in text
    assert text[-1] == "UNKNOWN_KEPT 0"
    assert len(text) == 2 + 8


def test_report_json_shape(repo: Path, sandbox: SandboxEnv) -> None:
    add_worktree(repo, "young")
    probe(sandbox, "old", 2 * 60 * MIN)
    doc = hygiene.report_json(hygiene.plan([repo]))
    assert doc["dry_run"] is True
    assert set(doc["cleaned"]) == {"folders", "bytes", "files", "worktrees", "probes"}
    assert doc["cleaned"]["probes"] == 1
    assert doc["worktrees_kept"] == [{"path": str(repo / ".claude/worktrees/young"), "reason": "young"}]
    assert doc["unknown_kept"] == 0
    json.dumps(doc)


def test_projects_default_to_the_git_root_of_the_cwd(repo: Path) -> None:
    wt = age(add_worktree(repo, "x"))
    inside = add_worktree(repo, "y")
    (inside / "deep").mkdir()
    # run from inside another worktree: the project is still the main repository
    report = hygiene.run_cleanup(None, dry_run=True, current_cwd=str(inside / "deep"))
    assert report.worktrees == 1
    assert (str(inside), "live") in report.worktrees_kept
    assert wt.exists()


# --- the timeout ----------------------------------------------------------------------------


def test_tiny_timeout_stops_cleanly(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    probes = [probe(sandbox, f"p{i:03d}", 2 * 60 * MIN) for i in range(40)]
    for p in probes:
        tree(p / "inner", files=40)
        set_mtime(p, 2 * 60 * MIN)
    monkeypatch.setenv("CLAUDETTO_SWEEP_TIMEOUT_MS", "1")
    report = hygiene.run_cleanup([])
    assert report.timed_out
    gone = [p for p in probes if not p.exists()]
    left = [p for p in probes if p.exists()]
    assert left, "a 1 ms budget cannot reach 40 folders"
    for p in left:  # untouched: every file still there
        assert len(list(p.rglob("*"))) == 1 + 2 + 40
    assert len(journal(sandbox)) == len(gone) == report.probes
    assert hygiene.report_json(report)["timed_out"] is True


def test_zero_timeout_touches_nothing(sandbox: SandboxEnv, repo: Path) -> None:
    p = probe(sandbox, "old", 2 * 60 * MIN)
    wt = age(add_worktree(repo, "clean"))
    report = hygiene.run_cleanup([repo], timeout_ms=0)
    assert report.timed_out and p.exists() and wt.exists()
    assert (report.folders, report.probes, report.worktrees) == (0, 0, 0)
    assert journal(sandbox) == []


def test_a_symlinked_claude_tmp_or_log_root_is_not_judged(sandbox, tmp_path) -> None:
    import os

    from app.core import hygiene, paths
    from tests.support import set_mtime

    elsewhere = tmp_path / "elsewhere"
    old_session = elsewhere / "-proj" / "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00"
    old_session.mkdir(parents=True)
    (old_session / "keep.txt").write_text("x")
    old_log = elsewhere / "-proj" / "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b01.log"
    old_log.write_text("x")
    for p in (old_session, old_log):
        set_mtime(p, 90 * 86400)
    os.makedirs(paths.claude_tmp_root(), exist_ok=True)
    paths.claude_tmp_dir().symlink_to(elsewhere)
    paths.log_root().symlink_to(elsewhere)
    report = hygiene.run_cleanup([])
    assert report.folders == 0 and report.files == 0
    assert (old_session / "keep.txt").exists() and old_log.exists()
