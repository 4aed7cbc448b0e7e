"""The release of a session checkout (app/core/release.py) and `claudetto release`: what is
scratch, what is kept and why, the two steps, and the command's output. Real git checkouts
made by the same code WorktreeCreate runs, real processes for live sessions."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.core import checkouts, release, scratch
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, run_cli

SID = "3e1f2a4b-5c6d-4e7f-8a9b-0c1d2e3f4a5b"
GITIGNORE = "node_modules/\n__pycache__/\n.tmp/\ncache/\n"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A session checkout whose session has ended: nobody holds it."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": GITIGNORE,
                                               "dist/keep.txt": "a committed dist folder\n"})
    made = checkouts.create_checkout(str(repo), "work", SID)
    checkouts.session_ended(SID, "prompt_input_exit")
    path = Path(made.path)
    for folder in ("node_modules/a", "pkg/node_modules/b", "pkg/src/__pycache__", "build", "dist/gen",
                   ".tmp/node_modules", ".tmp/build", "cache"):
        (path / folder).mkdir(parents=True, exist_ok=True)
        (path / folder / "f").write_text("x" * 1000)
    (path / ".tmp" / "report.md").write_text("notes\n")
    return path


def entry(path: Path) -> dict[str, Any]:
    return checkouts.registry()[str(path)]


def journal(sandbox: SandboxEnv) -> list[dict[str, Any]]:
    file = sandbox.state / "journal.jsonl"
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


@pytest.mark.parametrize(("given", "plain"), [
    ("node_modules", "node_modules"), ("a/./b/", "a/b"), ("web//dist", "web/dist"),
    ("/abs", None), ("../up", None), ("a/../b", None), (".", None), ("", None), ("./", None),
    (".tmp", None), (".tmp/x", None), ("x/.tmp", None), (".git", None), ("sub/.git/objects", None),
    (7, None), (None, None), ("nul\0", None),
])
def test_declared_paths_are_made_plain_or_refused(given: object, plain: str | None) -> None:
    assert scratch.plain_relative(given) == plain


def test_the_default_scratch_is_every_regenerable_folder_outside_git_and_tmp(checkout: Path) -> None:
    os.symlink(checkout / "node_modules", checkout / "linked")  # never followed
    (checkout / ".claude" / "worktrees" / "nested" / "node_modules").mkdir(parents=True)
    assert scratch.regenerable_folders(str(checkout)) == [
        "build", "dist", "node_modules", "pkg/node_modules", "pkg/src/__pycache__"]
    plan, kept = scratch.scratch_plan(str(checkout))
    # a folder that holds a tracked file is not scratch: deleting it would modify the checkout
    assert plan == ["build", "node_modules", "pkg/node_modules", "pkg/src/__pycache__"]
    assert kept == [("dist", "tracked")]


def test_a_release_deletes_the_scratch_and_keeps_tmp_and_everything_else(
        sandbox: SandboxEnv, checkout: Path) -> None:
    done = release.release_checkout(str(checkout))
    assert (done.status, done.state) == ("released", "released")
    for gone in ("node_modules", "pkg/node_modules", "pkg/src/__pycache__", "build"):
        assert not (checkout / gone).exists(), gone
    for kept in (".tmp/node_modules/f", ".tmp/build/f", ".tmp/report.md", "dist/keep.txt", "dist/gen/f",
                 "cache/f", "README.md"):
        assert (checkout / kept).exists(), kept
    record = entry(checkout)
    assert "cut_short" not in record
    assert record["last_release"]["deleted"] == ["build", "node_modules", "pkg/node_modules", "pkg/src/__pycache__"]
    assert record["last_release"]["kept"] == [{"path": "dist", "reason": "tracked"}]
    assert record["last_release"]["bytes"] == done.freed > 0
    lines = [e for e in journal(sandbox) if e.get("rule") == "release"]
    assert {e["path"] for e in lines if e["result"] == "removed"} == {
        str(checkout / p) for p in ("build", "node_modules", "pkg/node_modules", "pkg/src/__pycache__")}
    assert all(e["kind"] == "scratch" for e in lines)


def test_declared_scratch_replaces_the_default_and_never_takes_tmp(checkout: Path) -> None:
    (checkout / ".claude").mkdir(exist_ok=True)
    (checkout / ".claude" / "claudetto.json").write_text(json.dumps(
        {"scratch": ["cache", ".tmp", ".tmp/build", "missing", "../outside", "cache/inner"]}))
    done = release.release_checkout(str(checkout))
    assert done.status == "released"
    assert not (checkout / "cache").exists()
    assert (checkout / ".tmp" / "report.md").exists() and (checkout / ".tmp" / "build" / "f").exists()
    assert (checkout / "node_modules" / "a" / "f").exists()  # not declared: kept
    assert entry(checkout)["last_release"]["deleted"] == ["cache"]


def test_an_unusable_config_deletes_nothing(checkout: Path) -> None:
    (checkout / ".claude").mkdir(exist_ok=True)
    for text in ("{not json", json.dumps({"scratch": "node_modules"})):
        (checkout / ".claude" / "claudetto.json").write_text(text)
        done = release.release_checkout(str(checkout))
        assert done.status == "released"
        assert [(v.path, v.action, v.reason) for v in done.verdicts] == [
            (str(checkout / ".claude" / "claudetto.json"), "keep", "bad_config")]
        assert (checkout / "node_modules" / "a" / "f").exists()


def test_the_project_config_applies_when_the_checkout_has_none(checkout: Path) -> None:
    project = Path(entry(checkout)["project"])
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "claudetto.json").write_text(json.dumps({"scratch": ["build"]}))
    release.release_checkout(str(checkout))
    assert not (checkout / "build").exists() and (checkout / "node_modules").exists()


def test_unique_git_work_inside_scratch_is_kept(checkout: Path) -> None:
    dep = checkout / "node_modules" / "linked-dep"
    make_repo(dep)  # a repository with a commit that exists nowhere else
    done = release.release_checkout(str(checkout))
    assert done.status == "released"
    reasons = {os.path.relpath(v.path, checkout): v.reason for v in done.verdicts if v.action == "keep"}
    assert reasons["node_modules"] in ("dirty", "unmerged")
    assert (dep / "README.md").exists() and not (checkout / "build").exists()


def test_a_checkout_held_by_a_live_session_is_not_released(checkout: Path, sandbox: SandboxEnv) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        checkouts.claim("other", str(checkout), (sleeper.pid, proc_start_time(sleeper.pid)), "startup")
        done = release.release_checkout(str(checkout))
        assert (done.status, done.holders) == ("held", ("other",))
        assert entry(checkout)["state"] == "active"
    finally:
        sleeper.kill()
        sleeper.wait()
    # its process gone, the claim holds nothing any more
    assert release.release_checkout(str(checkout)).status == "released"


_CLAIMED_MIDWAY = """
import sys
from app.core import checkouts, release, removal
real = removal.remove
def remove(*args, **kwargs):
    done = real(*args, **kwargs)
    checkouts.claim("newcomer", sys.argv[1], None, "startup")  # a session starts there meanwhile
    return done
removal.remove = remove
done = release.release_checkout(sys.argv[1])
print(done.status, done.state, *sorted(v.reason for v in done.verdicts if v.action == "keep"))
"""


def test_a_session_claiming_it_midway_stops_the_rest(checkout: Path, sandbox: SandboxEnv) -> None:
    sandbox.sessions.mkdir(exist_ok=True)
    out = subprocess.run([sys.executable, "-P", "-c", _CLAIMED_MIDWAY, str(checkout)],
                         capture_output=True, text=True, check=True).stdout.split()
    # the first folder went; at each later one the guard saw the claim and put it back
    assert out[:2] == ["released", "active"] and out[2:].count("live") == 3, out
    assert not (checkout / "build").exists() and (checkout / "node_modules" / "a" / "f").exists()
    record = entry(checkout)
    assert record["state"] == "active" and record["sessions"]["newcomer"] is True
    assert record["last_release"]["deleted"] == ["build"]


# --- claudetto release and claudetto worktrees ------------------------------------------------


def test_cli_dry_run_changes_nothing(checkout: Path, sandbox: SandboxEnv) -> None:
    before = (sandbox.state / "checkouts.json").read_bytes()
    result = run_cli("release", str(checkout), "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["status"], doc["dry_run"], doc["state"]) == ("dry_run", True, "active")
    would = {os.path.relpath(e["path"], checkout): e for e in doc["entries"]}
    assert would["node_modules"]["status"] == "would_remove" and would["node_modules"]["size"] > 0
    assert would["dist"] == {**would["dist"], "status": "kept", "reason": "tracked"}
    assert doc["freed"] == sum(e["size"] for e in doc["entries"] if e["status"] == "would_remove")
    assert (sandbox.state / "checkouts.json").read_bytes() == before
    assert (checkout / "node_modules" / "a" / "f").exists() and journal(sandbox) == []


def test_cli_release_text_and_json(checkout: Path, sandbox: SandboxEnv) -> None:
    result = run_cli("release", str(checkout))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"RELEASED {checkout} state=released freed=")
    assert f"KEPT tracked {checkout / 'dist'}" in lines
    assert sum(line.startswith("DELETED ") for line in lines) == 4
    again = run_cli("release", str(checkout), "--json")  # nothing left: still released, nothing deleted
    doc = json.loads(again.stdout)
    assert (again.returncode, doc["status"], doc["state"], doc["freed"]) == (0, "released", "released", 0)


def test_cli_refusals_are_one_line_and_exit_1(checkout: Path, sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = Path(entry(checkout)["project"])
    manual = repo / ".claude" / "worktrees" / "by-hand"
    git(repo, "worktree", "add", "-q", "-b", "by-hand", str(manual))
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(sleeper.pid), pid=sleeper.pid, sessionId="busy-one", cwd=str(checkout),
                              procStart=proc_start_time(sleeper.pid))
        for target, words in ((manual, "not a session checkout claudetto made"),
                              (checkout, "held by running session(s) busy-one"),
                              (tmp_path / "nowhere", "not a session checkout")):
            result = run_cli("release", str(target))
            assert result.returncode == 1 and result.stdout == ""
            assert result.stderr.count("\n") == 1 and words in result.stderr, result.stderr
    finally:
        sleeper.kill()
        sleeper.wait()
    assert (checkout / "node_modules" / "a" / "f").exists()


def test_worktrees_shows_branch_sessions_state_and_verdict(checkout: Path, sandbox: SandboxEnv) -> None:
    repo = entry(checkout)["project"]
    killed = subprocess.run([sys.executable, "-P", "-c", _KILLED_AFTER_ONE, str(checkout)], check=False)
    assert killed.returncode == -signal.SIGKILL
    result = run_cli("worktrees", repo)
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "BRANCH", "KIND", "STATE", "SESSIONS", "SIZE", "REMOVABLE", "REASON", "PATH"]
    assert row.split()[:5] == ["work", "worktree-work", "session", "cut_short", f"{SID[:8]}:ended"]
    doc = json.loads(run_cli("worktrees", repo, "--json").stdout)["worktrees"][0]
    assert (doc["state"], doc["sessions"], doc["kind"]) == ("cut_short", {SID: False}, "session")
    # `claudetto release PATH` finishes it
    assert run_cli("release", str(checkout)).returncode == 0
    assert entry(checkout)["state"] == "released" and not (checkout / "pkg" / "node_modules").exists()
    assert (checkout / ".tmp" / "report.md").exists()


_KILLED_AFTER_ONE = """
import os, signal, sys
from app.core import release, removal
real = removal.remove
def remove(*args, **kwargs):
    real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
removal.remove = remove
release.release_checkout(sys.argv[1])
"""


def test_scratch_a_running_process_uses_is_kept(checkout: Path, sandbox: SandboxEnv) -> None:
    """A dev server started in the checkout runs a binary from node_modules after its session
    ended: that folder stays (`in_use`), the rest of the scratch goes."""
    server = checkout / "node_modules" / ".bin" / "server"
    server.parent.mkdir(parents=True)
    shutil.copy("/bin/sleep", server)
    proc = subprocess.Popen([str(server), "60"], cwd=checkout)
    try:
        dry = json.loads(run_cli("release", str(checkout), "--dry-run", "--json").stdout)
        would = {os.path.relpath(e["path"], checkout): e for e in dry["entries"]}
        assert (would["node_modules"]["status"], would["node_modules"]["reason"]) == ("kept", "in_use")
        done = release.release_checkout(str(checkout))
        assert done.status == "released"
        assert server.exists() and (checkout / "node_modules" / "a" / "f").exists()
        assert not (checkout / "build").exists() and not (checkout / "pkg" / "node_modules").exists()
        assert {"path": "node_modules", "reason": "in_use"} in entry(checkout)["last_release"]["kept"]
    finally:
        proc.kill()
        proc.wait()
    release.release_checkout(str(checkout))  # once it has stopped, the folder is scratch again
    assert not (checkout / "node_modules").exists()
