"""Seed 002 (session checkouts) read line by line against the program, for the statements the
other suites checked only in their common case or not through the contract: the seed's own
globs for the checkouts that are no session's (`agent-*`, `wf_*`), every SessionEnd reason
that is not a hand-over releasing (`logout` included), "any session starting inside it"
from a folder below the checkout's top, and "once no recorded session runs" when a recorded
session's Claude crashed without a SessionEnd. Each step runs through `python -P -m hooks`
from a real process standing in for Claude (tests/hooks/test_checkouts.py)."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hooks import test_checkouts
from tests.hooks.test_checkouts import Claude, logs, registry, released, wait_for
from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook

claudes = test_checkouts.claudes
repo = test_checkouts.repo


def _create(cwd: Path, name: str, session_id: str | None) -> tuple[int, str, str]:
    payload: dict[str, object] = {"hook_event_name": "WorktreeCreate", "cwd": str(cwd), "name": name,
                                  "transcript_path": "/t"}
    if session_id is not None:
        payload["session_id"] = session_id
    done = run_hook(payload, cwd=cwd)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _scratch(checkout: Path) -> None:
    (checkout / "node_modules" / "pkg").mkdir(parents=True)
    (checkout / "node_modules" / "pkg" / "index.js").write_text("x\n")
    (checkout / ".tmp").mkdir()
    (checkout / ".tmp" / "report.md").write_text("notes\n")


@pytest.mark.parametrize(("name", "kind"), [("agent-a1b2c3", "agent"), ("wf_build", "workflow")])
def test_the_seeds_agent_and_wf_globs_are_no_sessions_checkouts(
        name: str, kind: str, sandbox: SandboxEnv, repo: Path) -> None:
    """"any WorktreeCreate name other than a subagent's agent-* or a workflow agent's wf_*":
    such a checkout needs no session_id (WorktreeCreate must not fail: it would break Claude's
    creation) and, asked by a session, is held by none (its scratch is never released)."""
    rc, out, err = _create(repo, name, None)
    assert rc == 0, err
    target = repo / ".claude" / "worktrees" / name
    assert out == f"{target}\n"  # the path alone on stdout; git's words go to stderr
    entry = registry(sandbox)[str(target)]
    assert (entry["kind"], entry.get("sessions") or {}) == (kind, {})
    rc, out, err = _create(repo, name + "-2", "a-session")
    assert rc == 0, err
    entry = registry(sandbox)[out.splitlines()[-1]]
    assert (entry["kind"], entry.get("sessions") or {}) == (kind, {})


def test_logout_ends_the_session_for_good_and_releases(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """Only `clear` and `resume` hand a checkout over (CONTRACT); `/logout` ends the session."""
    claude = claudes(repo)
    checkout = claude.create("logged-out")
    _scratch(checkout)
    claude.end("logout", cwd=checkout)
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "node_modules").exists())
    assert (checkout / ".tmp" / "report.md").read_text() == "notes\n"
    assert registry(sandbox)[str(checkout)]["sessions"] == {claude.session_id: False}


def test_a_session_starting_below_the_checkouts_top_claims_it(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """"SessionStart claims the checkout ... for any session starting inside it": a folder
    inside it is inside it; that session then holds it until it ends."""
    first = claudes(repo)
    checkout = first.create("deeper")
    _scratch(checkout)
    first.end("other", cwd=checkout)
    first.exit()
    assert wait_for(lambda: released(sandbox, checkout))
    (checkout / "node_modules").mkdir()
    (checkout / "node_modules" / "rebuilt.js").write_text("x\n")
    (checkout / "src" / "lib").mkdir(parents=True)
    inside = claudes(checkout / "src" / "lib")
    said = inside.hook("SessionStart", source="startup")
    assert (said["rc"], said["err"]) == (0, ""), said
    out = json.loads(said["out"])  # one JSON object, the context of this event
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    note = out["hookSpecificOutput"]["additionalContext"]
    assert f"({checkout})" in note and "node_modules" in note, note  # what the release deleted
    entry = registry(sandbox)[str(checkout)]
    assert entry["state"] == "active" and entry["sessions"][inside.session_id] is True
    inside.end("prompt_input_exit")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "node_modules").exists())


@pytest.mark.parametrize("cleared_first", [False, True])
def test_a_recorded_session_whose_claude_crashed_holds_nothing(
        cleared_first: bool, sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """"Once no recorded session runs, it releases the checkout": a Claude that crashed fired
    no SessionEnd and left its sessions file (CLAUDE_CODE_FACTS), but it runs no more (also
    when it crashed between a `/clear`'s SessionEnd and the next SessionStart, the hand-over
    pending); the last running session's end releases the checkout."""
    crashed = claudes(repo)
    checkout = crashed.create("crashed")
    crashed.cwd = checkout
    crashed.write_file()
    crashed.start()
    _scratch(checkout)
    last = claudes(checkout)
    last.start()
    if cleared_first:
        crashed.end("clear")
        assert registry(sandbox)[str(checkout)]["handover"]["session"] == crashed.session_id
    crashed.proc.send_signal(signal.SIGKILL)
    crashed.proc.wait(10)
    assert (sandbox.sessions / f"{crashed.pid}.json").exists()  # a crash leaves it behind
    last.end("other")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "node_modules").exists())
    assert (checkout / ".tmp" / "report.md").exists()
    shown = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"][str(checkout)]
    assert shown["sessions"][last.session_id] is False


def test_a_record_from_before_the_sessions_map_is_listed_claimed_and_released(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    """"Registry records gain an optional sessions map ... nothing is migrated": a session
    checkout's record without it is listed, claimed by a session starting inside, and
    released when that session ends."""
    maker = claudes(repo)
    checkout = maker.create("older-record")
    maker.exit()
    file = sandbox.state / "checkouts.json"
    data = json.loads(file.read_text())
    for key in ("sessions", "processes", "exiting", "handover"):
        data["checkouts"][str(checkout)].pop(key, None)
    file.write_text(json.dumps(data))
    _scratch(checkout)
    shown = run_cli("worktrees", str(repo), "--json")
    assert shown.returncode == 0 and shown.stderr == "", shown
    row = next(w for w in json.loads(shown.stdout)["worktrees"] if w["path"] == str(checkout))
    assert (row["kind"], row["state"], row["sessions"]) == ("session", "active", {})
    inside = claudes(checkout)
    assert inside.start() == ""
    assert registry(sandbox)[str(checkout)]["sessions"] == {inside.session_id: True}
    inside.end("other")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "node_modules").exists())
    assert (checkout / ".tmp" / "report.md").exists()


def test_every_regenerable_folder_is_default_scratch_and_a_venvs_links_are_not_followed(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude], tmp_path: Path) -> None:
    """Declared scratch, by default: "node_modules, .venv, __pycache__, dist, build, target,
    .next, coverage" at any depth (CONTRACT). A `.venv`'s `bin/python` link goes with the
    folder; what it points at stays."""
    (repo / ".git" / "info" / "exclude").write_text("".join(f"{n}/\n" for n in REGENERABLE))
    outside = tmp_path / "python-elsewhere"
    outside.write_text("the interpreter\n")
    claude = claudes(repo)
    checkout = claude.create("all-eight")
    for name in REGENERABLE:
        folder = checkout / "pkg" / name if name == "coverage" else checkout / name
        (folder / "inner").mkdir(parents=True)
        (folder / "inner" / "f").write_text("x\n")
    (checkout / ".venv" / "bin").mkdir()
    (checkout / ".venv" / "bin" / "python").symlink_to(outside)
    (checkout / ".tmp").mkdir()
    (checkout / ".tmp" / "report.md").write_text("notes\n")
    claude.end("other", cwd=checkout)
    assert wait_for(lambda: released(sandbox, checkout))
    deleted = registry(sandbox)[str(checkout)]["last_release"]["deleted"]
    assert sorted(deleted) == sorted("pkg/coverage" if n == "coverage" else n for n in REGENERABLE)
    assert wait_for(lambda: not any((checkout / d).exists() for d in deleted))
    assert outside.read_text() == "the interpreter\n" and (checkout / ".tmp" / "report.md").exists()


REGENERABLE = ("node_modules", ".venv", "__pycache__", "dist", "build", "target", ".next", "coverage")


def test_a_session_in_a_submodule_of_the_checkout_holds_it_until_it_ends(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude], tmp_path: Path) -> None:
    """The seed's last commit, "... submodule sessions": a session working inside a submodule
    checked out in the checkout is inside the checkout; the release waits for it."""
    lib = make_repo(tmp_path / "lib", files={"lib.c": "int x;\n"})
    allow = ("-c", "protocol.file.allow=always")
    git(repo, *allow, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "vendor lib")
    first = claudes(repo)
    checkout = first.create("with-submodule")
    git(checkout, *allow, "submodule", "update", "-q", "--init")
    _scratch(checkout)
    inside = claudes(checkout / "vendor" / "lib")
    assert inside.start() == ""
    assert registry(sandbox)[str(checkout)]["sessions"] == {first.session_id: True, inside.session_id: True}
    first.end("other", cwd=repo)
    first.exit()
    assert wait_for(lambda: f"kept: held by {inside.session_id}" in logs(sandbox))
    assert (checkout / "node_modules" / "pkg" / "index.js").exists()
    inside.end("prompt_input_exit")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: not (checkout / "node_modules").exists())
    assert (checkout / "vendor" / "lib" / "lib.c").read_text() == "int x;\n"
