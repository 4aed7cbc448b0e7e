"""Session hygiene and the edit ledger read literally, driven as a user and Claude drive them:
`claudetto clean`/`worktrees`/`ledger` in a subprocess, hooks as JSON piped into
`python -P -m hooks`, on real folders, real git and real processes in the sandbox."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.core import paths
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

MIN = 60.0
DAY = 86400.0
REGENERABLE = ["node_modules", ".venv", "__pycache__", "dist", "build", "target", ".next", "coverage"]


def clean(*args: str, cwd: Path) -> dict[str, Any]:
    done = run_cli("clean", "--json", *args, cwd=cwd)
    assert done.returncode == 0 and done.stderr == "", done
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def folder(path: Path, age_s: float, files: int = 2) -> Path:
    path.mkdir(parents=True)
    for i in range(files):
        (path / f"f{i}").write_text("x" * 100)
    set_mtime(path, age_s)
    return path


def worktree(repo: Path, name: str, *, old: bool = True) -> Path:
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(path))
    if old:
        set_mtime(path, 31 * DAY)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "hello\n"})


# --- the cleanup's temp-folder rules ---------------------------------------------------------


def test_probe_folders_older_than_60_minutes_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    old = folder(sandbox.claude_tmp / "fswatch-probe-abc", 61 * MIN)
    young = folder(sandbox.claude_tmp / "fswatch-probe-def", 59 * MIN)
    doc = clean(cwd=tmp_path)
    assert not old.exists() and young.exists()
    assert doc["cleaned"]["probes"] == 1 and doc["cleaned"]["folders"] == 1
    assert doc["cleaned"]["files"] == 2 and doc["cleaned"]["bytes"] > 0
    assert doc["unknown_kept"] == 0


def test_session_folders_and_gate_logs_older_than_30_days_and_not_live_go(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int) -> None:
    dead, live, young = (str(uuid.uuid4()) for _ in range(3))
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=live, cwd=str(tmp_path),
                          procStart=proc_start_time(live_pid))
    project = sandbox.claude_tmp / "-work-proj"
    folders = {s: folder(project / s, (31 if s != young else 29) * DAY) for s in (dead, live, young)}
    logs = paths.log_root() / "-work-proj"
    logs.mkdir(parents=True)
    for s in (dead, live, young):
        for suffix in (".log", ".err"):
            f = logs / f"{s}{suffix}"
            f.write_text("line\n")
            set_mtime(f, (31 if s != young else 29) * DAY)
    doc = clean(cwd=tmp_path)
    assert not folders[dead].exists() and folders[live].exists() and folders[young].exists()
    assert not (logs / f"{dead}.log").exists() and not (logs / f"{dead}.err").exists()
    assert all((logs / f"{s}{x}").exists() for s in (live, young) for x in (".log", ".err"))
    assert doc["cleaned"]["probes"] == 0 and doc["cleaned"]["worktrees"] == 0
    # one session folder (two files in it) and two gate logs: files are regular files in all
    assert (doc["cleaned"]["folders"], doc["cleaned"]["files"]) == (1, 4)
    assert doc["cleaned"]["bytes"] > 0


def test_the_current_session_is_live(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """SessionStart's own session has no sessions file yet at times: it is live all the same."""
    sid = str(uuid.uuid4())
    mine = folder(sandbox.claude_tmp / "-work-proj" / sid, 40 * DAY)
    done = run_hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(tmp_path),
                     "source": "startup", "transcript_path": "/none.jsonl"}, cwd=tmp_path)
    assert done.returncode == 0 and b"CLEANED" not in done.stdout
    log = paths.session_log(str(tmp_path), sid)
    _wait(log, "UNKNOWN_KEPT")
    assert mine.exists()


def test_cleanup_period_days_setting_moves_the_bound(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (sandbox.config / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 3}))
    old = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 3 * DAY + 60)
    young = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 3 * DAY - 60)
    clean(cwd=tmp_path)
    assert not old.exists() and young.exists()


def test_entries_no_rule_names_are_kept_and_counted(sandbox: SandboxEnv, tmp_path: Path) -> None:
    stray_file = sandbox.claude_tmp / "claude-prompt-abc.md"
    sandbox.claude_tmp.mkdir(parents=True, exist_ok=True)
    stray_file.write_text("x")
    set_mtime(stray_file, 40 * DAY)
    not_a_uuid = folder(sandbox.claude_tmp / "-p" / "not-a-session", 40 * DAY)
    done = run_cli("clean", cwd=tmp_path)
    assert done.returncode == 0, done
    assert done.stdout.splitlines()[-1] == "UNKNOWN_KEPT 2"
    assert stray_file.exists() and not_a_uuid.exists()


# --- worktrees -------------------------------------------------------------------------------


def test_each_keep_reason_is_named(sandbox: SandboxEnv, repo: Path, live_pid: int) -> None:
    live = worktree(repo, "live")
    (live / "src").mkdir()
    set_mtime(live, 31 * DAY)
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=str(uuid.uuid4()), cwd=str(live / "src"),
                          procStart=proc_start_time(live_pid))
    young = worktree(repo, "young", old=False)
    plain = folder(repo / ".claude" / "worktrees" / "plain", 31 * DAY)
    changed = worktree(repo, "changed")
    (changed / "README.md").write_text("changed\n")
    set_mtime(changed, 31 * DAY)
    untracked = worktree(repo, "untracked")
    (untracked / "new.txt").write_text("new\n")
    set_mtime(untracked, 31 * DAY)
    ignored = worktree(repo, "ignored")
    (ignored / ".gitignore").write_text(".env\n")
    git(ignored, "add", ".gitignore")
    git(ignored, "commit", "-q", "-m", "ignore")
    git(repo, "branch", "-q", "keep-ignored", "worktree-ignored")
    (ignored / ".env").write_text("SECRET=1\n")
    set_mtime(ignored, 31 * DAY)
    unmerged = worktree(repo, "unmerged")
    (unmerged / "a.txt").write_text("a\n")
    git(unmerged, "add", "a.txt")
    git(unmerged, "commit", "-q", "-m", "work")
    set_mtime(unmerged, 31 * DAY)
    doc = clean(str(repo), cwd=repo)
    kept = {Path(k["path"]).name: k["reason"] for k in doc["worktrees_kept"]}
    assert kept == {"live": "live", "young": "young", "plain": "not_a_worktree", "changed": "dirty",
                    "untracked": "dirty", "ignored": "dirty", "unmerged": "unmerged"}
    assert doc["cleaned"]["worktrees"] == 0
    assert (ignored / ".env").read_text() == "SECRET=1\n"
    text = run_cli("clean", "--dry-run", str(repo), cwd=repo).stdout.splitlines()
    assert f"WORKTREES_KEPT not_a_worktree {plain}" in text and f"WORKTREES_KEPT young {young}" in text


def test_ignored_files_in_regenerable_folders_do_not_count(repo: Path) -> None:
    (repo / ".gitignore").write_text("".join(f"{n}/\n" for n in REGENERABLE))
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignores")
    wt = worktree(repo, "tools", old=False)
    for name in REGENERABLE:
        (wt / name).mkdir()
        (wt / name / "made.bin").write_text("regenerated\n")
    set_mtime(wt, 31 * DAY)
    doc = clean(str(repo), cwd=repo)
    assert doc["worktrees_kept"] == [] and doc["cleaned"]["worktrees"] == 1
    assert not wt.exists()
    assert "worktree-tools" not in git(repo, "worktree", "list")


@pytest.mark.parametrize("where", ["another_branch", "a_remote"])
def test_commits_on_another_branch_or_a_remote_are_not_unmerged(repo: Path, tmp_path: Path, where: str) -> None:
    wt = worktree(repo, "done")
    (wt / "a.txt").write_text("a\n")
    git(wt, "add", "a.txt")
    git(wt, "commit", "-q", "-m", "work")
    if where == "another_branch":
        git(repo, "branch", "-q", "kept", "worktree-done")
    else:
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", str(remote))
        git(repo, "remote", "add", "origin", str(remote))
        git(wt, "push", "-q", "origin", "worktree-done")
    set_mtime(wt, 31 * DAY)
    doc = clean(str(repo), cwd=repo)
    assert doc["worktrees_kept"] == [] and not wt.exists()


def test_the_worktrees_command_gives_the_same_reasons(repo: Path) -> None:
    dirty = worktree(repo, "dirty")
    (dirty / "new.txt").write_text("new\n")
    set_mtime(dirty, 31 * DAY)
    done = run_cli("worktrees", "--json", str(repo), cwd=repo)
    assert done.returncode == 0, done
    rows = {Path(r["path"]).name: r for r in json.loads(done.stdout)["worktrees"]}
    assert rows["dirty"]["removable"] is False and rows["dirty"]["reason"] == "dirty"


# --- the messages ---------------------------------------------------------------------------


def _wait(log: Path, text: str) -> str:
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and text in (content := log.read_text()):
            return content
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never reached {log}")


def test_session_start_logs_the_three_messages_and_prints_none(sandbox: SandboxEnv, repo: Path) -> None:
    folder(sandbox.claude_tmp / "fswatch-probe-1", 2 * 3600)
    gone = worktree(repo, "gone")
    dirty = worktree(repo, "dirty")
    (dirty / "x.txt").write_text("x\n")
    set_mtime(dirty, 31 * DAY)
    (sandbox.claude_tmp / "stray").write_text("?")
    sid = str(uuid.uuid4())
    done = run_hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(repo),
                     "source": "startup", "transcript_path": "/none.jsonl"}, cwd=repo)
    assert done.returncode == 0 and done.stderr == b""
    assert b"CLEANED" not in done.stdout and b"WORKTREES_KEPT" not in done.stdout
    content = _wait(paths.session_log(str(repo), sid), "UNKNOWN_KEPT")
    lines = [line for line in content.splitlines()
             if line.startswith(("CLEANED ", "WORKTREES_KEPT ", "UNKNOWN_KEPT "))]
    assert lines[0].startswith("CLEANED folders=2 bytes=") and lines[0].endswith(" worktrees=1 probes=1")
    assert lines[1:] == [f"WORKTREES_KEPT dirty {dirty}", "UNKNOWN_KEPT 1"]
    assert not gone.exists()


# --- the edit ledger ------------------------------------------------------------------------

SID = "5d1c9a52-8a55-4b6e-9b1e-0c3f2a7d6e41"


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def edit_payload(path: Path, tool: str = "Edit", session: str = SID, **extra: Any) -> dict[str, Any]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(path.parent),
            "transcript_path": "/t.jsonl", "tool_name": tool, "tool_use_id": "toolu_1",
            "tool_input": {"file_path": str(path), "content": "x"},
            "tool_response": {"filePath": str(path)}, **extra}


def post(path: Path, tool: str = "Edit", session: str = SID, **extra: Any) -> None:
    done = run_hook(edit_payload(path, tool, session, **extra), cwd=path.parent)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done


def posted_here(files: list[Path], session: str = SID) -> None:
    """The same PostToolUse objects, handed to the hook's handler in this process: the
    ledger's 200-file bound needs 200 edits before the one that crosses it (~25 ms of CPU
    each as a process); the edits that cross it still go through `python -P -m hooks`."""
    from hooks.post_tool import handle

    for path in files:
        assert handle(edit_payload(path, session=session)) == 0


def prompt(cwd: Path) -> bytes:
    done = run_hook({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(cwd),
                     "transcript_path": "/t.jsonl", "prompt": "go"}, cwd=cwd)
    assert done.returncode == 0 and done.stderr == b"", done
    return done.stdout


def context(out: bytes) -> str:
    doc = json.loads(out)
    assert doc["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    text: str = doc["hookSpecificOutput"]["additionalContext"]
    return text


def test_ledger_stores_path_fnv_hash_and_agent(tmp_path: Path) -> None:
    main_file, agent_file = tmp_path / "a.py", tmp_path / "b.py"
    main_file.write_bytes(b"print(1)\n")
    agent_file.write_bytes(b"")
    post(main_file, "Write")
    post(agent_file, agent_id="a1b2", agent_type="Explore")
    done = run_cli("ledger", "--json", cwd=tmp_path)
    assert done.returncode == 0, done
    rows = {r["path"]: r for r in json.loads(done.stdout)["files"]}
    assert rows[str(main_file)]["hash"] == fnv1a64(b"print(1)\n")
    assert rows[str(agent_file)]["hash"] == "cbf29ce484222325"
    assert (rows[str(main_file)]["agent"], rows[str(agent_file)]["agent"]) == ("main", "Explore")
    assert all(r["changed"] is False and r["told"] is False for r in rows.values())


def test_a_change_is_told_once_in_the_exact_words_then_nothing(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("one\n")
    post(f, agent_id="a9", agent_type="code-reviewer")
    assert prompt(tmp_path) == b""  # nothing changed: nothing at all, 0 tokens
    f.write_text("two\n")
    assert context(prompt(tmp_path)) == f"The user or a tool changed `{f}` after the last edit of `code-reviewer`."
    assert prompt(tmp_path) == b""
    rows = json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]
    assert (rows[0]["changed"], rows[0]["told"]) == (True, True)
    f.write_text("three\n")  # a new change is a new line
    assert context(prompt(tmp_path)) == f"The user or a tool changed `{f}` after the last edit of `code-reviewer`."


def test_two_changed_files_one_line_each(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    for f in (a, b):
        f.write_text("v1\n")
        post(f)
    a.write_text("v2\n")
    b.write_text("v2\n")
    lines = context(prompt(tmp_path)).splitlines()
    assert sorted(lines) == sorted(f"The user or a tool changed `{f}` after the last edit of `main`." for f in (a, b))


def test_the_ledger_keeps_200_files_the_oldest_going_first(sandbox: SandboxEnv, tmp_path: Path) -> None:
    files = [tmp_path / f"f{i:03}.txt" for i in range(201)]
    for f in files:
        f.write_text("x")
    posted_here(files[:199])
    post(files[199])
    assert len(json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]) == 200
    post(files[200])
    paths_kept = {r["path"] for r in json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]}
    assert len(paths_kept) == 200 and str(files[0]) not in paths_kept and str(files[200]) in paths_kept


def test_an_edit_by_bash_shows_as_the_user_or_a_tool(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("one\n")
    post(f)
    bash = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path),
            "transcript_path": "/t.jsonl", "tool_name": "Bash", "tool_use_id": "toolu_2",
            "tool_input": {"command": f"echo two > {f}"}, "tool_response": {"stdout": "", "stderr": ""}}
    f.write_text("two\n")
    assert run_hook(bash, cwd=tmp_path).returncode == 0
    assert context(prompt(tmp_path)) == f"The user or a tool changed `{f}` after the last edit of `main`."


def test_the_ledger_lives_in_the_plugin_state(sandbox: SandboxEnv, tmp_path: Path) -> None:
    import os

    data = tmp_path / "plugin-data"
    env = {k: v for k, v in os.environ.items() if k != "CLAUDETTO_HOME"}
    env["CLAUDE_PLUGIN_DATA"] = str(data)
    f = tmp_path / "a.py"
    f.write_text("one\n")
    payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path),
               "transcript_path": "/t.jsonl", "tool_name": "Edit", "tool_use_id": "toolu_1",
               "tool_input": {"file_path": str(f), "old_string": "a", "new_string": "b"},
               "tool_response": {"filePath": str(f)}}
    assert run_hook(payload, cwd=tmp_path, env=env).returncode == 0
    stored = json.loads((data / "ledger.json").read_text())
    assert str(f) in json.dumps(stored)
    assert not (sandbox.state / "ledger.json").exists()


def test_a_locked_worktree_is_kept_as_not_removed(repo: Path) -> None:
    """git refuses to remove a locked worktree without -f -f; the cleanup never forces."""
    wt = worktree(repo, "locked")
    git(repo, "worktree", "lock", str(wt))
    set_mtime(wt, 31 * DAY)
    doc = clean(str(repo), cwd=repo)
    assert wt.exists() and (wt / "README.md").exists()
    assert doc["worktrees_kept"] == [{"path": str(wt), "reason": "not_removed"}]
    assert doc["cleaned"]["worktrees"] == 0


def test_eviction_goes_by_the_last_edit(tmp_path: Path) -> None:
    """The oldest entry is the one edited longest ago: a file edited again is new."""
    files = [tmp_path / f"f{i:03}.txt" for i in range(201)]
    for f in files:
        f.write_text("x")
    posted_here(files[:200])
    post(files[0])
    post(files[200])
    kept = {r["path"] for r in json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]}
    assert str(files[0]) in kept and str(files[1]) not in kept and len(kept) == 200


# --- more of the same rules, as a user's machine has them ------------------------------------


def test_older_session_files_and_files_without_a_pid_keep_their_session(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int) -> None:
    old_gen, no_pid = str(uuid.uuid4()), str(uuid.uuid4())
    sandbox.write_session(f"pid-{live_pid}", session_id=old_gen, cwd=str(tmp_path))
    sandbox.write_session("nopid", sessionId=no_pid, cwd=str(tmp_path))
    kept = [folder(sandbox.claude_tmp / "-p" / s, 40 * DAY) for s in (old_gen, no_pid)]
    gone = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 40 * DAY)
    clean(cwd=tmp_path)
    assert all(k.exists() for k in kept) and not gone.exists()


def test_a_dead_sessions_file_protects_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    sid = str(uuid.uuid4())
    sandbox.write_session(str(dead.pid), pid=dead.pid, sessionId=sid, cwd=str(tmp_path))
    old = folder(sandbox.claude_tmp / "-p" / sid, 40 * DAY)
    clean(cwd=tmp_path)
    assert not old.exists()


def test_worktree_age_follows_the_projects_cleanup_period(sandbox: SandboxEnv, repo: Path) -> None:
    (repo / ".claude" / "settings.json").parent.mkdir(parents=True, exist_ok=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 2}))
    (repo / ".gitignore").write_text(".claude/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore .claude")
    old = worktree(repo, "old", old=False)
    set_mtime(old, 2 * DAY + 600)
    young = worktree(repo, "young", old=False)
    set_mtime(young, 2 * DAY - 600)
    doc = clean(str(repo), cwd=repo)
    assert not old.exists() and young.exists()
    assert doc["worktrees_kept"] == [{"path": str(young), "reason": "young"}]


def test_a_sessions_cwd_exactly_the_worktree_keeps_it(sandbox: SandboxEnv, repo: Path, live_pid: int) -> None:
    wt = worktree(repo, "here")
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=str(uuid.uuid4()), cwd=str(wt))
    doc = clean(str(repo), cwd=repo)
    assert wt.exists() and doc["worktrees_kept"] == [{"path": str(wt), "reason": "live"}]


@pytest.mark.parametrize("commit", [False, True])
def test_a_detached_worktree_goes_unless_it_holds_new_commits(repo: Path, commit: bool) -> None:
    wt = repo / ".claude" / "worktrees" / "detached"
    git(repo, "worktree", "add", "-q", "--detach", str(wt))
    if commit:
        (wt / "n.txt").write_text("n\n")
        git(wt, "add", "n.txt")
        git(wt, "commit", "-q", "-m", "new")
    set_mtime(wt, 31 * DAY)
    doc = clean(str(repo), cwd=repo)
    if commit:
        assert wt.exists() and doc["worktrees_kept"] == [{"path": str(wt), "reason": "unmerged"}]
    else:
        assert not wt.exists() and doc["worktrees_kept"] == []


def test_nested_regenerable_folders_do_not_count_a_secret_beside_does(repo: Path) -> None:
    (repo / ".gitignore").write_text("node_modules/\n__pycache__/\n.env\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignores")
    nested = worktree(repo, "nested", old=False)
    (nested / "pkg" / "a" / "node_modules").mkdir(parents=True)
    (nested / "pkg" / "a" / "node_modules" / "m.js").write_text("m\n")
    (nested / "src" / "__pycache__").mkdir(parents=True)
    (nested / "src" / "__pycache__" / "m.pyc").write_bytes(b"\0")
    set_mtime(nested, 31 * DAY)
    secret = worktree(repo, "secret", old=False)
    (secret / "node_modules").mkdir()
    (secret / "node_modules" / "m.js").write_text("m\n")
    (secret / "pkg").mkdir()
    (secret / "pkg" / ".env").write_text("TOKEN=1\n")
    set_mtime(secret, 31 * DAY)
    doc = clean(str(repo), cwd=repo)
    assert not nested.exists() and secret.exists()
    assert doc["worktrees_kept"] == [{"path": str(secret), "reason": "dirty"}]


def test_the_line_names_the_agent_of_the_last_edit(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("one\n")
    post(f)
    f.write_text("two\n")
    post(f, agent_id="ab12", agent_type="general-purpose")
    assert prompt(tmp_path) == b""  # the agent's own edit is no outside change
    f.write_text("three\n")
    assert context(prompt(tmp_path)) == (
        f"The user or a tool changed `{f}` after the last edit of `general-purpose`.")


def test_an_edit_after_an_outside_change_settles_it_untold(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("one\n")
    post(f)
    f.write_text("user\n")
    f.write_text("model\n")
    post(f)
    assert prompt(tmp_path) == b""
    rows = json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]
    assert rows == [{**rows[0], "path": str(f), "agent": "main", "hash": fnv1a64(b"model\n"),
                     "changed": False, "told": False}]


def test_the_200_files_bound_holds_across_sessions(tmp_path: Path) -> None:
    files = [tmp_path / f"f{i:03}.txt" for i in range(201)]
    for f in files:
        f.write_text("x")
    other = "7e3a1f0c-2b4d-4e6f-8a9b-0c1d2e3f4a5b"
    posted_here(files[:150])
    posted_here(files[150:200], session=other)
    post(files[200], session=other)
    rows = json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]
    assert len(rows) == 200 and str(files[0]) not in {r["path"] for r in rows}


def test_claudes_staging_folder_is_one_unknown_entry_and_young_ones_are_named(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """plugin-tool-staging/ is Claude's, beside the project folders, not one of them: one
    entry no rule names, whatever it holds, and nothing in it is a session's."""
    staging = folder(sandbox.claude_tmp / "plugin-tool-staging", 40 * DAY)
    inside = folder(staging / str(uuid.uuid4()), 40 * DAY)
    set_mtime(staging, 40 * DAY)
    folder(sandbox.claude_tmp / "fswatch-probe-young", 1 * MIN)
    folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 1 * DAY)
    doc = clean(cwd=tmp_path)
    assert doc["unknown_kept"] == 1 and inside.exists()
    assert doc["cleaned"] == {"folders": 0, "bytes": 0, "files": 0, "worktrees": 0, "probes": 0}


def test_a_deleted_file_gets_exactly_the_ledger_line(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("one\n")
    post(f)
    f.unlink()
    assert context(prompt(tmp_path)) == f"The user or a tool changed `{f}` after the last edit of `main`."


def test_files_counts_regular_files_only(sandbox: SandboxEnv, tmp_path: Path) -> None:
    old = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 40 * DAY, files=1)
    (old / "link").symlink_to(tmp_path)
    (old / "sub").mkdir()
    set_mtime(old, 40 * DAY)
    doc = clean(cwd=tmp_path)
    assert not old.exists() and tmp_path.exists()
    assert (doc["cleaned"]["folders"], doc["cleaned"]["files"]) == (1, 1)


def test_a_write_that_loses_the_race_tries_5_times_by_default(tmp_path: Path) -> None:
    from app.core import state

    f = tmp_path / "a.py"
    f.write_text("x\n")
    with state.locked(paths.ledger_file_str()):
        post(f)
    logs = "".join(p.read_text() for p in paths.log_root().rglob("*.log"))
    assert "(try 5 of 5)" in logs and "(try 6 of" not in logs
    rows = json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]
    assert rows == []  # lost, logged, and nothing half written
    post(f)
    assert [r["path"] for r in json.loads(run_cli("ledger", "--json", cwd=tmp_path).stdout)["files"]] == [str(f)]
