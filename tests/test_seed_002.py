"""Seed 002 read literally (session checkouts), the rules the other suites left untested: the
review's reverse ordering (the last session ends while something else still holds the checkout,
and the release that follows later keeps `.tmp/` though it is declared scratch), the `claude -p
--worktree` route with its example `cache/`, EnterWorktree's order (SessionStart before
WorktreeCreate), a session ending twice, and the cut-short failure as `claudetto worktrees`
shows it. Every step runs through `python -P -m hooks` from a real process standing in for
Claude (tests/hooks/test_checkouts.py), or through the whole command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from app.core.sessions import proc_start_time
from tests.hooks import test_checkouts
from tests.hooks.test_checkouts import Claude, cut_short, logs, registry, released, wait_for
from tests.support import SandboxEnv, git, run_cli

# the stand-in Claude and its repository, as the hook suite makes them
claudes = test_checkouts.claudes
repo = test_checkouts.repo

NOTES = "the session's reports\n"


def declare(checkout: Path, scratch: list[str]) -> None:
    """The review's example: the project's `.claude/claudetto.json` declares `cache` and `.tmp`
    as scratch (the user's own list: a list only the checkout holds may be the session's)."""
    project = checkout.parents[2]
    (project / ".claude" / "claudetto.json").write_text(json.dumps({"scratch": scratch}))


def fill(checkout: Path) -> None:
    (checkout / "cache" / "deep").mkdir(parents=True, exist_ok=True)
    (checkout / "cache" / "deep" / "blob").write_bytes(b"x" * 4096)
    (checkout / ".tmp" / "logs").mkdir(parents=True, exist_ok=True)
    (checkout / ".tmp" / "report.md").write_text(NOTES)
    (checkout / ".tmp" / "logs" / "run.log").write_text("log\n")


def tmp_kept(checkout: Path) -> bool:
    return ((checkout / ".tmp" / "report.md").read_text() == NOTES
            and (checkout / ".tmp" / "logs" / "run.log").exists())


def enter(claude: Claude, checkout: Path) -> None:
    """Claude moves into the checkout (its sessions file says so)."""
    claude.cwd = checkout
    claude.write_file()


def test_the_print_route_releases_the_declared_cache_and_keeps_tmp(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    # claude -p --worktree: WorktreeCreate, SessionStart (cwd = worktree), SessionEnd other, one id
    claude = claudes(repo)
    checkout = claude.create("print-route")
    assert checkout == repo / ".claude" / "worktrees" / "print-route"
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD").strip() == "worktree-print-route"
    enter(claude, checkout)
    assert claude.start() == ""
    declare(checkout, ["cache"])
    fill(checkout)
    assert registry(sandbox)[str(checkout)]["sessions"] == {claude.session_id: True}
    claude.end("other")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "cache").exists())
    assert tmp_kept(checkout) and (checkout / "README.md").exists()
    entry = registry(sandbox)[str(checkout)]
    assert entry["sessions"] == {claude.session_id: False}
    assert entry["last_release"]["deleted"] == ["cache"]


def test_enter_worktree_fires_session_start_before_create_and_is_released(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    # EnterWorktree from a -p session: SessionStart, WorktreeCreate (same id), SessionEnd in the worktree
    claude = claudes(repo)
    assert claude.start() == ""
    checkout = claude.create("entered-late")
    assert registry(sandbox)[str(checkout)]["sessions"] == {claude.session_id: True}
    declare(checkout, ["cache"])
    fill(checkout)
    enter(claude, checkout)
    claude.end("other")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "cache").exists()) and tmp_kept(checkout)


def test_the_last_session_ending_before_another_holder_leaves_tmp_to_the_later_release(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """The review's [P2], reverse order: `.tmp` declared as scratch, the recorded session ends
    while another session still works inside; when that one ends last, its release deletes the
    cache and keeps `.tmp/` with its reports."""
    first = claudes(repo)
    checkout = first.create("reverse")
    enter(first, checkout)
    first.start()
    declare(checkout, ["cache", ".tmp"])
    fill(checkout)
    run = claudes(checkout)  # a second session working inside, started later
    assert run.start() == ""
    first.end("other")
    first.exit()
    assert wait_for(lambda: f"kept: held by {run.session_id}" in logs(sandbox))
    assert (checkout / "cache" / "deep" / "blob").exists() and tmp_kept(checkout)
    assert registry(sandbox)[str(checkout)]["state"] == "active"

    run.end("prompt_input_exit")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "cache").exists())
    assert tmp_kept(checkout)
    assert registry(sandbox)[str(checkout)]["last_release"]["deleted"] == ["cache"]


def test_a_holder_that_never_started_there_leaves_tmp_to_claudetto_release(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """Reverse order with a holder that has no record (a session started before the hooks):
    the release waits for it, and `claudetto release PATH` after it ended keeps `.tmp/`."""
    claude = claudes(repo)
    checkout = claude.create("unrecorded-holder")
    declare(checkout, ["cache", ".tmp"])
    fill(checkout)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(sleeper.pid), pid=sleeper.pid, sessionId="older", cwd=str(checkout),
                              procStart=proc_start_time(sleeper.pid))
        claude.end("other", cwd=checkout)
        assert wait_for(lambda: "kept: held by older" in logs(sandbox))
        held = run_cli("release", str(checkout), "--json")
        assert json.loads(held.stdout)["status"] == "held", held
        assert (checkout / "cache" / "deep" / "blob").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    (sandbox.sessions / f"{sleeper.pid}.json").unlink()
    done = run_cli("release", str(checkout), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "released"
    assert not (checkout / "cache").exists() and tmp_kept(checkout)


def test_claudetto_clean_leaves_a_released_checkouts_tmp_alone(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """The cleanup that finds checkouts nobody holds (the review's reconciliation) never takes
    the `.tmp/` a release kept for a resumed session."""
    claude = claudes(repo)
    checkout = claude.create("left-over")
    declare(checkout, ["cache", ".tmp"])
    fill(checkout)
    claude.end("other", cwd=checkout)
    claude.exit()
    assert wait_for(lambda: released(sandbox, checkout))
    done = run_cli("clean", str(repo), "--json")
    assert done.returncode == 0, done.stderr
    assert checkout.is_dir() and tmp_kept(checkout)


def test_a_session_ending_twice_releases_once_and_keeps_tmp(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("twice")
    declare(checkout, ["cache", ".tmp"])
    fill(checkout)
    claude.end("other", cwd=checkout)
    assert wait_for(lambda: released(sandbox, checkout))
    first = registry(sandbox)[str(checkout)]["last_release"]
    (checkout / "cache").mkdir()
    (checkout / "cache" / "new").write_text("made after the release\n")
    claude.end("other", cwd=checkout)
    time.sleep(1.0)
    assert (checkout / "cache" / "new").exists()  # released already: nothing more is taken
    assert registry(sandbox)[str(checkout)]["last_release"] == first
    assert tmp_kept(checkout)


def test_a_cut_short_release_shows_its_failure_in_worktrees_until_claudetto_release_finishes_it(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("killed")
    declare(checkout, ["cache", "more", ".tmp"])
    fill(checkout)
    (checkout / "more").mkdir()
    (checkout / "more" / "f").write_text("x")
    claude.exit()
    cut_short(checkout)
    shown = run_cli("worktrees", str(repo), "--json")
    assert shown.returncode == 0, shown.stderr
    row = next(w for w in json.loads(shown.stdout)["worktrees"] if w["path"] == str(checkout))
    assert row["state"] == "cut_short" and row["kind"] == "session"
    assert registry(sandbox)[str(checkout)]["cut_short"]["failure"].startswith("release was cut short")
    assert tmp_kept(checkout)
    done = run_cli("release", str(checkout), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "released", done
    assert not (checkout / "cache").exists() and not (checkout / "more").exists() and tmp_kept(checkout)
    entry = registry(sandbox)[str(checkout)]
    assert entry["state"] == "released" and "cut_short" not in entry


def test_worktrees_names_the_cut_short_failure(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("killed-shown")
    declare(checkout, ["cache", "more"])
    fill(checkout)
    (checkout / "more").mkdir()
    (checkout / "more" / "f").write_text("x")
    claude.exit()
    cut_short(checkout)
    rows = json.loads(run_cli("worktrees", str(repo), "--json").stdout)["worktrees"]
    row = next(w for w in rows if w["path"] == str(checkout))
    assert str(row.get("failure", "")).startswith("release was cut short")
    assert "release was cut short" in run_cli("worktrees", str(repo)).stdout


def test_a_killed_release_is_reclaimed_by_a_resume_from_the_launch_folder_and_released_again(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """The seed's killed release: a SessionStart resume from the launch directory reclaims the
    checkout, clears the failure and prints the note; its SessionEnd in the worktree releases."""
    claude = claudes(repo)
    checkout = claude.create("killed-resumed")
    declare(checkout, ["cache", "more", ".tmp"])
    fill(checkout)
    (checkout / "more").mkdir()
    (checkout / "more" / "f").write_text("x")
    claude.exit()
    cut_short(checkout)
    assert registry(sandbox)[str(checkout)]["state"] == "cut_short"
    resumed = claudes(repo, claude.session_id)
    note = resumed.start("resume")
    assert f"({checkout})" in note and "cache" in note and "more" in note, note
    assert "`.tmp/` and everything else were kept." in note
    entry = registry(sandbox)[str(checkout)]
    assert entry["state"] == "active" and "cut_short" not in entry
    assert entry["sessions"] == {claude.session_id: True}
    assert not (checkout / "cache").exists() and not (checkout / "more").exists() and tmp_kept(checkout)
    (checkout / "cache").mkdir()
    (checkout / "cache" / "rebuilt").write_text("x")
    enter(resumed, checkout)
    resumed.end("other")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "cache").exists()) and tmp_kept(checkout)


_HOLD_THE_REGISTRY = """
import sys, time
from app.core import paths
from app.core.state import locked
with locked(paths.checkouts_file()):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_release_killed_holding_the_registry_lock_leaves_it_to_the_next(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """The seed's killed release: the registry lock a killed process held is had again."""
    claude = claudes(repo)
    checkout = claude.create("lock-killed")
    declare(checkout, ["cache"])
    fill(checkout)
    holder = subprocess.Popen([sys.executable, "-P", "-c", _HOLD_THE_REGISTRY], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        holder.send_signal(signal.SIGKILL)
    finally:
        holder.wait(10)
    claude.end("other", cwd=checkout)
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "cache").exists()) and tmp_kept(checkout)


def test_the_record_of_ended_sessions_goes_away_when_the_checkout_is_removed(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    first = claudes(repo)
    checkout = first.create("removed-later")
    (checkout / "node_modules").mkdir()
    (checkout / "node_modules" / "m.js").write_text("x")
    second = claudes(checkout)
    second.start()
    first.end("other", cwd=repo)
    first.exit()
    second.end("other")
    assert wait_for(lambda: released(sandbox, checkout))
    second.exit()
    assert registry(sandbox)[str(checkout)]["sessions"] == {first.session_id: False, second.session_id: False}
    gone = claudes(repo).hook("WorktreeRemove", worktree_path=str(checkout))
    assert (gone["rc"], gone["out"], gone["err"]) == (0, "", ""), gone
    assert not checkout.exists() and str(checkout) not in registry(sandbox)


def test_a_release_that_deleted_nothing_tells_the_resumed_session_nothing(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("nothing-to-delete")
    fill(checkout)
    (checkout / "cache").rename(checkout / ".tmp" / "cache")  # no scratch at all: only .tmp
    claude.end("other", cwd=checkout)
    claude.exit()
    assert wait_for(lambda: released(sandbox, checkout))
    assert registry(sandbox)[str(checkout)]["last_release"]["deleted"] == []
    assert claudes(repo, claude.session_id).start("resume") == ""
    assert registry(sandbox)[str(checkout)]["state"] == "active" and tmp_kept(checkout)


@pytest.mark.parametrize("name", ["bridge-7f3a", "bg-fix-tests-1a2b3c4d", "job-nightly-1a2b3c4d"])
def test_a_remote_control_bridge_checkout_is_released_at_session_end(
        name: str, sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """Only `agent-*` and `wf_*` are no session's: remote control's `bridge-*`, and the names
    `--bg` and jobs get, are released when their session ends."""
    claude = claudes(repo)
    checkout = claude.create(name)
    enter(claude, checkout)
    claude.start()
    declare(checkout, ["cache"])
    fill(checkout)
    assert registry(sandbox)[str(checkout)]["sessions"] == {claude.session_id: True}
    claude.end("other")
    assert wait_for(lambda: released(sandbox, checkout), 10)
    assert not (checkout / "cache").exists() and tmp_kept(checkout)
