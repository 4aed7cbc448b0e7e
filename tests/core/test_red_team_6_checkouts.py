"""Red team, round six: session checkouts and their release, driven as Claude and a user
drive them: hooks piped into `python -P -m hooks` from a stand-in Claude process, `claudetto
release` in a subprocess, real git worktrees, real processes and real symlinks.

Two sessions of one checkout ending at the same instant, a checkout swapped for a link, a
clone with unpushed commits inside the scratch, a process writing into `build/`, the
registry file broken in every way a disk or an older version breaks it, checkouts of
projects with odd names, a moved checkout and a deleted main checkout.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hooks import test_checkouts
from tests.hooks.test_checkouts import (
    Claude,
    fill_scratch,
    logs,
    registry,
    released,
    scratch_gone,
    tmp_intact,
    wait_for,
)
from tests.support import SandboxEnv, run_cli

claudes, repo = test_checkouts.claudes, test_checkouts.repo  # the stand-in Claude and its repository


def session_checkout(claudes: Callable[..., Claude], repo: Path, name: str) -> tuple[Claude, Path]:
    """A checkout WorktreeCreate made for a session that then started in it, with scratch."""
    claude = claudes(repo)
    checkout = claude.create(name)
    claude.cwd = checkout
    claude.write_file()
    assert claude.start() == ""
    fill_scratch(checkout)
    return claude, checkout


def release_outcomes(sandbox: SandboxEnv, checkout: Path) -> list[str]:
    """What each release of `checkout` logged it did: held, released, busy or nothing to do."""
    found = []
    for line in logs(sandbox).splitlines():
        if f"release: {checkout}" not in line:
            continue
        for word, outcome in (("kept: held by", "held"), (": released; deleted", "released"),
                              ("another release of it still runs", "busy"), ("already released", "done")):
            if word in line:
                found.append(outcome)
    return found


def journal() -> list[dict[str, object]]:
    from app.core import paths

    file = Path(paths.claudetto_home_str()) / "journal.jsonl"
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


def released_paths() -> list[object]:
    return [e["path"] for e in journal() if e.get("rule") == "release" and e.get("result") == "removed"]


# --- two sessions of one checkout ending at the same instant --------------------------------


def test_two_sessions_ending_at_once_each_let_go_and_one_release_runs(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    # Each Claude exits right after its SessionEnd hook: while both detached releases judge,
    # both processes may still run. The session that ended must not hold the checkout for
    # the other's release, or neither lets go and it stays held until some later release.
    first, checkout = session_checkout(claudes, repo, "both-end")
    second = claudes(checkout)
    assert second.start() == ""
    ends = [threading.Thread(target=claude.end) for claude in (first, second)]
    for thread in ends:
        thread.start()
    for thread in ends:
        thread.join(30)
    assert wait_for(lambda: len(release_outcomes(sandbox, checkout)) >= 2), logs(sandbox)
    outcomes = release_outcomes(sandbox, checkout)
    first.exit()
    second.exit()
    assert outcomes.count("released") == 1 and "busy" not in outcomes, outcomes
    assert released(sandbox, checkout), registry(sandbox)
    assert scratch_gone(checkout) and tmp_intact(checkout)
    entry = registry(sandbox)[str(checkout)]
    assert entry["sessions"] == {first.session_id: False, second.session_id: False}
    assert sorted(entry["last_release"]["deleted"]) == ["node_modules", "src/__pycache__", "web/node_modules"]
    removed = released_paths()
    assert sorted(removed) == sorted(set(removed)) and len(removed) == 3


def test_a_second_release_of_a_released_checkout_keeps_the_note_of_the_first(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    # `claudetto release` after the SessionEnd release (nothing left to delete) must not wipe
    # what the next session is told to reinstall.
    claude, checkout = session_checkout(claudes, repo, "twice")
    claude.end()
    claude.exit()
    assert wait_for(lambda: released(sandbox, checkout))
    done = run_cli("release", str(checkout), "--json")
    assert done.returncode == 0, done.stderr
    later = claudes(checkout)
    note = later.start()
    assert "node_modules" in note and "npm ci" in note, note


# --- a checkout swapped for a symlink ---------------------------------------------------------


@pytest.mark.parametrize("target", ["main", "elsewhere"])
def test_release_of_a_checkout_swapped_for_a_symlink_is_refused(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude], tmp_path: Path, target: str) -> None:
    claude, checkout = session_checkout(claudes, repo, "swapped")
    claude.exit()
    (repo / "node_modules" / "dep").mkdir(parents=True)
    (repo / "node_modules" / "dep" / "index.js").write_text("the main checkout's install\n")
    moved = tmp_path / "moved-away"
    shutil.move(str(checkout), moved)
    checkout.symlink_to(repo if target == "main" else moved, target_is_directory=True)
    done = run_cli("release", str(checkout), "--json")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["status"] == "not_managed"
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    text = run_cli("release", str(checkout))
    assert text.returncode == 1 and "RELEASED" not in text.stdout and "freed=" not in text.stdout
    assert (repo / "node_modules" / "dep" / "index.js").exists()
    assert (moved / "node_modules" / "pkg" / "f0").exists()
    assert str(checkout) in registry(sandbox)  # the record stays: the link may be undone
