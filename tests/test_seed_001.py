"""The output GC page read literally, driven as a user and Claude drive it: PostToolUse JSON
piped into `python -P -m hooks`, the sweep through `claudetto gc` / `claudetto-gc`, real
folders, real git worktrees, real symlinks and real processes for live sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import SandboxEnv, add_record, git, make_repo, run_cli, run_hook, set_mtime

DAY = 86_400
OLD = 8 * DAY
QUIET = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}


def post(tool: str, tool_input: dict[str, object], cwd: Path, response: object = QUIET,
         session: str = "s1") -> dict[str, object]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd),
            "transcript_path": "/nowhere.jsonl", "tool_name": tool, "tool_input": tool_input,
            "tool_response": response, "tool_use_id": "toolu_1"}


def bash_call(command: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run the command as Claude's Bash tool would, then hand its call to the hook."""
    run_env = dict(os.environ if env is None else env)
    out = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60,
                         env=run_env, check=True).stdout
    done = run_hook(post("Bash", {"command": command}, cwd, {**QUIET, "stdout": out}), cwd=cwd, env=env)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    return out


def records_doc(state: Path, session: str = "s1") -> dict[str, object]:
    file = state / "gc" / f"{session}.json"
    return json.loads(file.read_text()) if file.exists() else {"records": []}


def records(state: Path, session: str = "s1") -> list[dict[str, object]]:
    got = records_doc(state, session)["records"]
    assert isinstance(got, list)
    return got


def old_folder(path: Path, age: float = OLD, size: int = 5000) -> Path:
    path.mkdir(parents=True)
    (path / "data.bin").write_bytes(b"x" * size)
    set_mtime(path, age)
    return path


def gc_json(*args: str) -> dict[str, Any]:
    done = run_cli("gc", "--json", *args)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def entry_of(doc: dict[str, Any], path: Path) -> tuple[str, str, str]:
    entries = doc["entries"]
    assert isinstance(entries, list)
    found = [(e["status"], e["reason"], e["kind"]) for e in entries if e["path"] == str(path)]
    assert len(found) == 1, entries
    return found[0]


# --- What Is Recorded -----------------------------------------------------------------------


def test_each_record_holds_path_kind_session_time_cwd_in_home_claudetto_gc(sandbox: SandboxEnv,
                                                                          tmp_path: Path) -> None:
    """Without CLAUDETTO_HOME the records of one session are in ~/.claudetto/gc/<session id>.json."""
    env = {k: v for k, v in os.environ.items() if k != "CLAUDETTO_HOME"}
    cwd = tmp_path / "proj"
    cwd.mkdir()
    before = time.time()
    printed = bash_call("mktemp -d", cwd, env).strip()
    state = sandbox.home / ".claudetto"
    got = records(state)
    assert [(r["path"], r["kind"], r["session"], r["cwd"]) for r in got] == [
        (os.path.realpath(printed), "temp", "s1", str(cwd))]
    assert isinstance(got[0]["time"], (int, float)) and before - 2 <= float(got[0]["time"]) <= time.time() + 2
    assert not (sandbox.state / "gc").exists()


def test_git_worktree_add_is_recorded_as_worktree(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    bash_call("git worktree add -q .claude/worktrees/w1 -b w1", repo)
    assert [(r["path"], r["kind"]) for r in records(sandbox.state)] == [
        (str(repo / ".claude" / "worktrees" / "w1"), "worktree")]


def test_git_clone_and_cp_r_targets_are_recorded_as_copy(sandbox: SandboxEnv, tmp_path: Path) -> None:
    source = make_repo(sandbox.root / "remote" / "tool")
    clone, copied = sandbox.user_tmp / "clone", sandbox.user_tmp / "copied"
    bash_call(f"git clone -q {source} {clone}", tmp_path)
    bash_call(f"cp -r {source} {copied}", tmp_path)
    assert sorted((r["path"], r["kind"]) for r in records(sandbox.state)) == [
        (str(clone), "copy"), (str(copied), "copy")]


def test_claude_config_dir_value_in_a_command_is_recorded_as_config(sandbox: SandboxEnv, tmp_path: Path) -> None:
    config = sandbox.user_tmp / "cfg"
    bash_call(f"CLAUDE_CONFIG_DIR={config} sh -c 'mkdir -p \"$CLAUDE_CONFIG_DIR\"'", tmp_path)
    assert [(r["path"], r["kind"]) for r in records(sandbox.state)] == [(str(config), "config")]


def test_a_write_inside_the_temp_folder_is_scratch_and_one_outside_is_not(sandbox: SandboxEnv,
                                                                           tmp_path: Path) -> None:
    inside, outside = sandbox.user_tmp / "notes.md", tmp_path / "notes.md"
    for target in (inside, outside):
        target.write_text("x")
        done = run_hook(post("Write", {"file_path": str(target), "content": "x"}, tmp_path,
                             {"type": "create", "filePath": str(target)}), cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == b""
    assert [(r["path"], r["kind"]) for r in records(sandbox.state)] == [(str(inside), "scratch")]


def test_a_path_starting_with_tilde_or_dollar_is_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The hook cannot expand it, so it records nothing (the folders are really made)."""
    repo = make_repo(tmp_path / "proj")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_text("f")
    env = dict(os.environ, WT=str(sandbox.user_tmp / "wt-dollar"))
    control = sandbox.user_tmp / "copy-plain"
    bash_call(f"cp -r ../src {control}", repo, env)  # the same call, spelled out, is recorded
    assert [r["path"] for r in records(sandbox.state)] == [str(control)]
    for command in ("git worktree add -q $WT -b d1", "git worktree add -q ~/wt-tilde -b t1",
                    "cp -r ../src $TMPDIR/copy-dollar", "cp -r ../src ~/copy-tilde",
                    "CLAUDE_CONFIG_DIR=$TMPDIR/cfg-dollar true", "CLAUDE_CONFIG_DIR=~/cfg-tilde true"):
        bash_call(command, repo, env)
    assert (sandbox.user_tmp / "wt-dollar").is_dir() and (sandbox.home / "copy-tilde").is_dir()
    assert [r["path"] for r in records(sandbox.state)] == [str(control)]


# --- What the Sweep Removes -----------------------------------------------------------------


def test_rule1_only_a_recorded_path_goes_never_one_matched_by_name(sandbox: SandboxEnv) -> None:
    """No name pattern: an old `tmp.XXXXXXXXXX` folder that nothing recorded stays."""
    named_like_mktemp = old_folder(sandbox.user_tmp / "tmp.AbCdEf1234")
    recorded = old_folder(sandbox.user_tmp / "plain")
    add_record("dead", recorded)
    doc = gc_json()
    assert entry_of(doc, recorded) == ("removed", "age", "temp")
    assert named_like_mktemp.is_dir() and not recorded.exists()
    assert [e["path"] for e in doc["entries"]] == [str(recorded)]


def test_rule2_outside_each_root_is_a_skip_and_its_record_is_dropped(sandbox: SandboxEnv, tmp_path: Path) -> None:
    outside = old_folder(tmp_path / "elsewhere")
    the_root_itself = sandbox.user_tmp
    add_record("dead", outside)
    add_record("dead", the_root_itself)
    doc = gc_json()
    assert entry_of(doc, outside) == ("skip", "outside_root", "temp")
    assert entry_of(doc, the_root_itself)[0] == "skip"  # strictly inside: the root is not
    assert outside.is_dir() and the_root_itself.is_dir()
    assert records(sandbox.state, "dead") == []


def test_rule2_the_projects_worktrees_folder_is_a_root_and_prune_follows(sandbox: SandboxEnv,
                                                                         tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    worktree = repo / ".claude" / "worktrees" / "w1"
    git(repo, "worktree", "add", "-q", str(worktree), "-b", "w1")
    set_mtime(worktree, OLD)
    add_record("dead", worktree, kind="worktree", cwd=repo)
    doc = gc_json()
    assert entry_of(doc, worktree) == ("removed", "age", "worktree")
    assert not worktree.exists()
    assert str(worktree) not in git(repo, "worktree", "list", "--porcelain")
    assert not (repo / ".git" / "worktrees" / "w1").exists()


def test_rule2_the_worktrees_root_is_the_projects_even_when_the_session_ran_in_a_subfolder(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    (repo / "sub").mkdir()
    bash_call("git worktree add -q ../.claude/worktrees/w2 -b w2", repo / "sub")
    worktree = repo / ".claude" / "worktrees" / "w2"
    assert [(r["path"], r["kind"], r["cwd"]) for r in records(sandbox.state)] == [
        (str(worktree), "worktree", str(repo / "sub"))]
    set_mtime(worktree, OLD)
    doc = gc_json()
    assert entry_of(doc, worktree) == ("removed", "age", "worktree")
    assert str(worktree) not in git(repo, "worktree", "list", "--porcelain")


def test_rule2_outside_git_the_project_is_the_folder_the_session_ran_in(sandbox: SandboxEnv,
                                                                       tmp_path: Path) -> None:
    """A session in a folder with no git: its `.claude/worktrees/` is still a root (a worktree
    of another repository made there, by `git -C`)."""
    project = tmp_path / "plain"
    project.mkdir()
    other = make_repo(tmp_path / "other")
    bash_call(f"git -C {other} worktree add -q {project}/.claude/worktrees/w3 -b w3", project)
    worktree = project / ".claude" / "worktrees" / "w3"
    assert [(r["path"], r["kind"]) for r in records(sandbox.state)] == [(str(worktree), "worktree")]
    beside = old_folder(project / ".claude" / "elsewhere")
    add_record("s1", beside, cwd=project)
    set_mtime(worktree, OLD)
    doc = gc_json()
    assert entry_of(doc, worktree) == ("removed", "age", "worktree")
    assert entry_of(doc, beside) == ("skip", "outside_root", "temp")
    assert not worktree.exists() and beside.is_dir()


def test_rule2_a_temp_folder_reached_through_a_symlinked_tmpdir_is_inside_its_root(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """As on macOS, where /tmp is a link to /private/tmp: the root is the real folder."""
    link = sandbox.root / "tmp-link"
    link.symlink_to(sandbox.user_tmp)
    monkeypatch.setenv("TMPDIR", str(link))
    out = old_folder(sandbox.user_tmp / "out")
    add_record("dead", link / "out")
    assert entry_of(gc_json(), out) == ("removed", "age", "temp")
    assert not out.exists() and link.is_symlink() and sandbox.user_tmp.is_dir()


def test_rule3_a_symlink_is_a_skip_and_what_it_points_at_stays(sandbox: SandboxEnv) -> None:
    target = old_folder(sandbox.user_tmp / "target")
    link = sandbox.user_tmp / "link"
    link.symlink_to(target)
    set_mtime(link, OLD)
    add_record("dead", link)
    doc = gc_json()
    assert entry_of(doc, link) == ("skip", "symlink", "temp")
    assert link.is_symlink() and (target / "data.bin").is_file()
    assert records(sandbox.state, "dead") == []


def test_rule3_a_real_path_that_leaves_the_root_stays(sandbox: SandboxEnv, tmp_path: Path) -> None:
    away = old_folder(tmp_path / "away")
    hop = sandbox.user_tmp / "hop"
    hop.symlink_to(tmp_path)
    add_record("dead", hop / "away")
    doc = gc_json()
    assert entry_of(doc, away) == ("skip", "escapes_root", "temp")  # named where it really is
    assert (away / "data.bin").is_file()
    assert records(sandbox.state, "dead") == []


def test_rule4_a_live_sessions_output_stays_a_dead_ones_goes(sandbox: SandboxEnv, live_pid: int) -> None:
    mine = old_folder(sandbox.user_tmp / "live-out")
    theirs = old_folder(sandbox.user_tmp / "dead-out")
    add_record("alive", mine)
    add_record("gone", theirs)
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="alive", cwd=str(sandbox.home))
    dead = subprocess.Popen(["true"])
    dead.wait()
    sandbox.write_session(str(dead.pid), pid=dead.pid, sessionId="gone", cwd=str(sandbox.home))
    doc = gc_json()
    assert entry_of(doc, mine) == ("kept", "live", "temp")
    assert entry_of(doc, theirs) == ("removed", "age", "temp")
    assert mine.is_dir() and not theirs.exists()


def test_rule4_an_older_generations_pid_file_names_a_live_session_too(sandbox: SandboxEnv, live_pid: int) -> None:
    mine = old_folder(sandbox.user_tmp / "live-out")
    add_record("alive", mine)
    sandbox.write_session(f"pid-{live_pid}", pid=live_pid, session_id="alive", cwd=str(sandbox.home))
    assert entry_of(gc_json(), mine) == ("kept", "live", "temp")
    os.kill(live_pid, 9)
    os.waitpid(live_pid, 0)
    assert entry_of(gc_json(), mine) == ("removed", "age", "temp")


def test_rule4_a_path_holding_a_live_sessions_folder_stays(sandbox: SandboxEnv, live_pid: int) -> None:
    holder = old_folder(sandbox.user_tmp / "holder")
    (holder / "work").mkdir()
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="alive", cwd=str(holder / "work"))
    set_mtime(holder, OLD)
    add_record("gone", holder)
    doc = gc_json()
    assert entry_of(doc, holder) == ("kept", "live", "temp")
    assert holder.is_dir()


def test_rule5_seven_days_is_the_age_bound(sandbox: SandboxEnv) -> None:
    young = old_folder(sandbox.user_tmp / "young", age=7 * DAY - 3600)
    old = old_folder(sandbox.user_tmp / "old", age=7 * DAY + 3600)
    add_record("dead", young)
    add_record("dead", old)
    doc = gc_json()
    assert entry_of(doc, young) == ("kept", "young", "temp")
    assert entry_of(doc, old) == ("removed", "age", "temp")


def test_rule5_then_the_oldest_unused_go_until_at_most_gc_max_bytes_remain(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """Young paths are removed oldest first while the unused ones take more than the bound."""
    sizes = {"a": 3 * DAY, "b": 2 * DAY, "c": 1 * DAY}
    made = {name: old_folder(sandbox.user_tmp / name, age=age, size=64 * 1024) for name, age in sizes.items()}
    for path in made.values():
        add_record("dead", path)
    one = sum(e["size"] for e in gc_json("--dry-run")["entries"] if e["path"] == str(made["c"]))
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(one))  # room for one folder: the youngest
    doc = gc_json()
    assert [entry_of(doc, made[n])[:2] for n in "abc"] == [("removed", "size"), ("removed", "size"),
                                                          ("kept", "young")]
    assert made["c"].is_dir() and not made["a"].exists() and not made["b"].exists()


def test_the_default_size_bound_is_five_gib(sandbox: SandboxEnv) -> None:
    from app.core.bounds import DEFAULTS

    assert DEFAULTS["GC_MAX_BYTES"] == 5 * 1024**3 and DEFAULTS["GC_MAX_AGE_DAYS"] == 7


# --- When the Sweep Runs --------------------------------------------------------------------


def test_session_end_returns_within_budget_and_the_report_names_path_size_count_freed(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    from app.core import paths

    cwd = tmp_path / "proj"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine", size=12_000)
    add_record("ending", mine, cwd=cwd)
    sandbox.write_session(str(os.getpid()), pid=os.getpid(), sessionId="ending", cwd=str(cwd))
    started = time.monotonic()
    done = run_hook({"hook_event_name": "SessionEnd", "session_id": "ending", "cwd": str(cwd),
                     "reason": "other"}, cwd=cwd)
    assert time.monotonic() - started < 1.5
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    log = paths.session_log(str(cwd), "ending")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (log.exists() and "GC removed=" in log.read_text()):
        time.sleep(0.05)
    text = log.read_text()
    line = [x for x in text.splitlines() if str(mine) in x][-1]
    assert "removed" in line and any(word.isdigit() and int(word) >= 12_000 for word in line.split())
    total = [x for x in text.splitlines() if "GC removed=" in x][-1]
    assert "GC removed=1 freed=" in total and int(total.split("freed=")[1].split()[0]) >= 12_000
    assert not mine.exists()


# --- The Dry Run ----------------------------------------------------------------------------


def test_claudetto_gc_dry_run_lists_each_path_with_size_and_total_and_changes_nothing(sandbox: SandboxEnv) -> None:
    old = old_folder(sandbox.user_tmp / "old", size=9000)
    outside = old_folder(sandbox.root / "outside")
    add_record("dead", old)
    add_record("dead", outside)  # a skip: its record is dropped by a real sweep, not by the dry run
    before = (sandbox.state / "gc" / "dead.json").read_bytes()
    done = subprocess.run([str(Path(sys.executable).parent / "claudetto-gc"), "--dry-run"], capture_output=True,
                          text=True, env=dict(os.environ), check=False)
    assert done.returncode == 0, done.stderr
    row = [x for x in done.stdout.splitlines() if x.endswith(str(old))]
    assert len(row) == 1 and row[0].split()[0] == "would_remove" and int(row[0].split()[2]) >= 9000
    assert [x.split()[:2] for x in done.stdout.splitlines() if x.endswith(str(outside))] == [["skip", "outside_root"]]
    assert done.stdout.splitlines()[-1].startswith("GC removed=1 freed=")
    assert old.is_dir() and (sandbox.state / "gc" / "dead.json").read_bytes() == before
    assert not (sandbox.state / "journal.jsonl").exists()


# --- Conflicts with earlier rounds, pinned ---------------------------------------------------


@pytest.mark.xfail(strict=True, reason=(
    "conflict: the seed says the sweep runs `git worktree prune` in the project after a removed "
    "worktree; claudetto forgets only the worktree it removed (`git worktree remove` on the gone "
    "folder), because a bare prune forgets at once every worktree whose folder is away (a drive "
    "not mounted today) with its staged work: tests/core/test_red_team_outputs.py::"
    "test_the_prune_after_a_removal_forgets_only_the_removed_worktree keeps that one"))
def test_conflict_after_a_removed_worktree_a_bare_prune_runs_in_the_project(sandbox: SandboxEnv,
                                                                            tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    away = tmp_path / "drive" / "side"
    git(repo, "worktree", "add", "-q", "--detach", str(away))
    worktree = repo / ".claude" / "worktrees" / "w1"
    bash_call(f"git worktree add -q {worktree} -b w1", repo)
    set_mtime(worktree, OLD)
    os.rename(tmp_path / "drive", tmp_path / "unmounted")
    doc = gc_json()
    assert entry_of(doc, worktree) == ("removed", "age", "worktree")
    assert str(away) not in git(repo, "worktree", "list", "--porcelain")  # what a bare prune does
