"""Seed 000 read line by line against the program, where tests/test_seed_000.py and the rest
of the suite checked a statement only in-process, only in its common case, or not at all:
through the contract (`claudetto clean`/`ledger` and `python -P -m hooks` in a subprocess),
on real folders, real git and real processes in the sandbox."""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.core import paths
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

MIN = 60.0
DAY = 86400.0
SID = "3c1d9e2a-5b7f-4a60-8c2d-9e1f0a3b4c5d"


def clean(*args: str, cwd: Path) -> dict[str, Any]:
    done = run_cli("clean", "--json", *args, cwd=cwd)
    assert done.returncode == 0 and done.stderr == "", done
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def slug(path: Path) -> str:
    """Claude's project folder name, as CLAUDE_CODE_FACTS spells it (paths under 200 characters)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def folder(path: Path, age_s: float, files: int = 1) -> Path:
    path.mkdir(parents=True)
    for i in range(files):
        (path / f"f{i}").write_text("x" * 100)
    set_mtime(path, age_s)
    return path


# --- "It finds the age of a folder from its modification time" --------------------------------


def test_age_is_the_folders_own_mtime_not_the_newest_file_inside(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A folder is as old as its own mtime: a file written inside it a minute ago (which
    leaves the folder's mtime alone when it rewrites an existing file) does not make it young,
    and an old file in a young folder does not make it old."""
    old_session = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 40 * DAY)
    old_probe = folder(sandbox.claude_tmp / "fswatch-probe-old", 2 * 3600)
    young_session = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 1 * DAY)
    for inside in (old_session / "f0", old_probe / "f0"):
        set_mtime(inside, 60)
    set_mtime(young_session / "f0", 400 * DAY)
    doc = clean(cwd=tmp_path)
    assert not old_session.exists() and not old_probe.exists() and young_session.exists()
    assert (doc["cleaned"]["folders"], doc["cleaned"]["probes"]) == (2, 1)


# --- "a file in ~/.claude/sessions (or $CLAUDE_CONFIG_DIR/sessions) names its id" --------------


def test_without_claude_config_dir_the_sessions_of_home_dot_claude_keep_theirs(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    sessions = sandbox.home / ".claude" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    live = str(uuid.uuid4())
    (sessions / f"{live_pid}.json").write_text(json.dumps(
        {"pid": live_pid, "sessionId": live, "cwd": str(tmp_path), "procStart": proc_start_time(live_pid)}))
    kept = folder(sandbox.claude_tmp / "-p" / live, 40 * DAY)
    gone = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 40 * DAY)
    doc = clean(cwd=tmp_path)
    assert kept.exists() and not gone.exists()
    assert doc["cleaned"]["folders"] == 1


# --- "<CLAUDE_CODE_TMPDIR or /tmp>/claude-<uid>": CONTRACT puts TMPDIR before /tmp on Linux ---


def test_without_claude_code_tmpdir_the_cleanup_looks_where_claude_does(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CONTRACT (corrected against Claude Code): on Linux Claude's root is $TMPDIR when
    CLAUDE_CODE_TMPDIR is unset, and its folder is realpath(root)/claude-<uid>."""
    monkeypatch.delenv("CLAUDE_CODE_TMPDIR")
    real = tmp_path / "real-tmp"
    real.mkdir()
    (tmp_path / "tmp-link").symlink_to(real)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp-link"))
    claude_tmp = real / f"claude-{os.getuid()}"
    probe = folder(claude_tmp / "fswatch-probe-1", 2 * 3600)
    session = folder(claude_tmp / "-p" / str(uuid.uuid4()), 40 * DAY)
    doc = clean(cwd=tmp_path)
    assert not probe.exists() and not session.exists()
    assert (doc["cleaned"]["folders"], doc["cleaned"]["probes"]) == (2, 1)


# --- "The session.start hook starts the cleanup and does not wait for it" ---------------------


def test_session_start_returns_before_the_cleanup_has_reported(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The cleanup is held up: the user's and the managed settings read as half saved (a
    save under way: dated now or later), so each is read again for a second before it
    counts as broken. The hook has returned long before the cleanup's report reaches the
    log, which it would not have if it waited for it."""
    sid = str(uuid.uuid4())
    probe = folder(sandbox.claude_tmp / "fswatch-probe-1", 2 * 3600)
    for settings in (sandbox.config / "settings.json", Path(os.environ["CLAUDETTO_MANAGED_SETTINGS"])):
        settings.write_text('{"cleanupPeriodDays": ')
        set_mtime(settings, -3600)
    log = paths.session_log(str(tmp_path), sid)
    done = run_hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(tmp_path),
                     "source": "startup", "transcript_path": "/none.jsonl"}, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert not (log.exists() and "UNKNOWN_KEPT" in log.read_text())
    deadline = time.monotonic() + 30
    while not (log.exists() and "UNKNOWN_KEPT" in log.read_text()):
        assert time.monotonic() < deadline, "the cleanup never reported"
        time.sleep(0.05)
    assert not probe.exists()


# --- worktrees: "It is older than the age", by its own mtime ---------------------------------


def test_a_clean_old_worktree_with_a_file_touched_today_goes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", files={"README.md": "hello\n"})
    wt = repo / ".claude" / "worktrees" / "touched"
    git(repo, "worktree", "add", "-q", "-b", "worktree-touched", str(wt))
    set_mtime(wt / "README.md", 60)  # same content, new time: clean, and no younger folder
    set_mtime(wt, 31 * DAY)
    doc = clean(str(repo), cwd=repo)
    assert not wt.exists() and doc["worktrees_kept"] == [] and doc["cleaned"]["worktrees"] == 1


# --- the edit ledger ---------------------------------------------------------------------------


def edit(path: Path, tool: str = "Edit", **extra: Any) -> None:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(path.parent),
               "transcript_path": "/t.jsonl", "tool_name": tool, "tool_use_id": "toolu_1",
               "tool_input": {key: str(path), "old_string": "a", "new_string": "b"},
               "tool_response": {"filePath": str(path)}, **extra}
    done = run_hook(payload, cwd=path.parent)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done


def prompt(cwd: Path, **extra: Any) -> str:
    done = run_hook({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(cwd),
                     "transcript_path": "/t.jsonl", "prompt": "go", **extra}, cwd=cwd)
    assert done.returncode == 0 and done.stderr == b"", done
    if not done.stdout:
        return ""
    doc = json.loads(done.stdout)
    assert doc["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    text: str = doc["hookSpecificOutput"]["additionalContext"]
    return text


def ledger_rows(cwd: Path) -> dict[str, dict[str, Any]]:
    done = run_cli("ledger", "--json", cwd=cwd)
    assert done.returncode == 0, done
    return {r["path"]: r for r in json.loads(done.stdout)["files"]}


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def test_a_subagent_gets_no_line_at_its_own_turn_the_main_thread_gets_it_once(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("one\n")
    edit(f, agent_id="a1b2c3d", agent_type="Explore")
    f.write_text("two\n")
    assert prompt(tmp_path, agent_id="a1b2c3d", agent_type="Explore") == ""
    assert ledger_rows(tmp_path)[str(f)]["told"] is False  # its turn marked nothing
    assert prompt(tmp_path) == f"The user or a tool changed `{f}` after the last edit of `Explore`."
    assert prompt(tmp_path) == ""


def test_every_byte_value_and_a_long_file_hash_as_fnv1a_64(tmp_path: Path) -> None:
    """Bytes 0x80 and up, and a file long enough for the C function (over 8 KiB)."""
    short, long_ = tmp_path / "short.bin", tmp_path / "long.bin"
    short.write_bytes(bytes(range(256)))
    long_.write_bytes(bytes(range(256)) * 160 + b"tail")
    edit(short, "Write")
    edit(long_, "MultiEdit")
    rows = ledger_rows(tmp_path)
    assert rows[str(short)]["hash"] == fnv1a64(short.read_bytes())
    assert rows[str(long_)]["hash"] == fnv1a64(long_.read_bytes())


# --- "Otherwise the cleanup keeps it and names the reason": the first condition that fails ------


def test_a_worktree_failing_several_conditions_is_named_by_the_first_in_the_seeds_order(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int) -> None:
    """The seed lists the conditions (no session's cwd, age, a worktree, clean, merged) and
    the reasons in the same order: a worktree that fails several is kept for the first."""
    repo = make_repo(tmp_path / "proj", files={"README.md": "hello\n"})

    def worktree(name: str, *, dirty: bool = False, commit: bool = False, age: float = 31 * DAY) -> Path:
        path = repo / ".claude" / "worktrees" / name
        git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(path))
        if commit:
            (path / "c.txt").write_text("c\n")
            git(path, "add", "c.txt")
            git(path, "commit", "-q", "-m", "work")
        if dirty:
            (path / "new.txt").write_text("new\n")
        set_mtime(path, age)
        return path

    live = worktree("live", dirty=True, commit=True, age=1 * DAY)
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=str(uuid.uuid4()), cwd=str(live),
                          procStart=proc_start_time(live_pid))
    young_dirty = worktree("young-dirty", dirty=True, commit=True, age=1 * DAY)
    young_plain = folder(repo / ".claude" / "worktrees" / "young-plain", 1 * DAY)
    dirty_unmerged = worktree("dirty-unmerged", dirty=True, commit=True)
    doc = clean(str(repo), cwd=repo)
    kept = {Path(k["path"]).name: k["reason"] for k in doc["worktrees_kept"]}
    assert kept == {"live": "live", "young-dirty": "young", "young-plain": "young",
                    "dirty-unmerged": "dirty"}
    assert all(p.exists() for p in (live, young_dirty, young_plain, dirty_unmerged))


# --- "Older than cleanupPeriodDays": Claude's layered settings, each project its own -------------


def test_session_folders_follow_their_projects_layered_cleanup_period(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user's settings say 3 days, one project's settings.local.json 50 (the last layer
    Claude reads wins): that project's session folders keep 50 days, the others 3."""
    (sandbox.config / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 3}))
    project = make_repo(tmp_path / "long", files={"README.md": "hello\n"})
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 1}))
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"cleanupPeriodDays": 50}))
    mine = folder(sandbox.claude_tmp / slug(project) / str(uuid.uuid4()), 10 * DAY)
    mine_older = folder(sandbox.claude_tmp / slug(project) / str(uuid.uuid4()), 51 * DAY)
    other = folder(sandbox.claude_tmp / "-elsewhere" / str(uuid.uuid4()), 4 * DAY)
    doc = clean(cwd=project)
    assert mine.exists() and not mine_older.exists() and not other.exists()
    assert doc["cleaned"]["folders"] == 2


def test_session_start_writes_its_report_to_the_contracts_log_path(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`<realpath(Claude's temp root)>/claudetto/<project slug>/<session id>.log`, spelled out
    here rather than asked of the program, for a project whose path holds a space and dots."""
    project = make_repo(tmp_path / "my proj.v2", files={"README.md": "hello\n"})
    sid = str(uuid.uuid4())
    done = run_hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(project),
                     "source": "startup", "transcript_path": "/none.jsonl"}, cwd=project)
    assert done.returncode == 0 and done.stdout == b""
    log = Path(os.path.realpath(sandbox.claude_tmp_root)) / "claudetto" / slug(project) / f"{sid}.log"
    deadline = time.monotonic() + 30
    while not (log.exists() and "UNKNOWN_KEPT" in log.read_text()):
        assert time.monotonic() < deadline, sorted(str(p) for p in log.parent.parent.rglob("*"))
        time.sleep(0.05)
    assert "CLEANED folders=0 bytes=0 files=0 worktrees=0 probes=0" in log.read_text()


# --- "UNKNOWN_KEPT counts the entries of the claude-<uid> folder that no rule names" ----------


def test_a_folder_that_is_no_projects_counts_as_one_unknown_entry(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude names a project's folder after its absolute path (`-home-me-proj`). A folder of
    another name holding no session folder is one entry of `claude-<uid>` that no rule names,
    empty or not; one that holds a session folder is still searched (its old one goes)."""
    mystery = folder(sandbox.claude_tmp / "mystery", 40 * DAY, files=0)
    notes = folder(sandbox.claude_tmp / "notes", 40 * DAY, files=3)
    session = folder(sandbox.claude_tmp / "proj" / str(uuid.uuid4()), 40 * DAY)
    (sandbox.claude_tmp / "proj" / "readme.txt").write_text("?")
    doc = clean(cwd=tmp_path)
    assert mystery.exists() and len(list(notes.iterdir())) == 3 and not session.exists()
    assert doc["unknown_kept"] == 3  # mystery/, notes/ and proj/readme.txt
    assert (doc["cleaned"]["folders"], doc["cleaned"]["files"]) == (1, 1)


# --- "gate logs <tmp>/claudetto/*/<uuid>.*" --------------------------------------------------


def test_an_old_gate_log_in_a_folder_of_any_name_goes_and_only_a_log_there(sandbox: SandboxEnv,
                                                                            tmp_path: Path) -> None:
    """The seed's `*`: a `<uuid>.log` 40 days old goes from a folder that is no project slug
    too; there a `<uuid>.json` (a fixture of the user's) and anything in the trash beside the
    logs stay. In a slug's folder every `<uuid>.*` is a gate log."""
    logs = Path(os.path.realpath(sandbox.claude_tmp_root)) / "claudetto"
    made: dict[str, Path] = {}
    for name, where in (("log", "proj"), ("json", "proj"), ("err", "-home-me-proj"), ("log", "trash")):
        file = logs / where / f"{uuid.uuid4()}.{name}"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text("old\n")
        set_mtime(file, 40 * DAY)
        made[f"{where}/{name}"] = file
    report = clean(cwd=tmp_path)
    assert not made["proj/log"].exists() and not made["-home-me-proj/err"].exists()
    assert made["proj/json"].exists() and made["trash/log"].exists()
    assert report["cleaned"]["files"] == 2
