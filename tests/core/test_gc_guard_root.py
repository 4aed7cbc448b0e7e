"""The GC's last check for a removal the dashboard starts (`gc.removal_guard`) judges a
recorded path inside the root a sweep finds for it. Built without one, it took `/` as the
root: a worktree a session made with `git worktree add` lies in its own project, and every
such path read as the project's own file (`in_use`), so the dashboard could never remove
what `claudetto gc` removes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from app.core import gc
from tests.support import SandboxEnv, git, make_repo

DAY = 86400


def _record(sandbox: SandboxEnv, path: Path, kind: str, cwd: Path) -> None:
    folder = sandbox.state / "gc"
    folder.mkdir(parents=True, exist_ok=True)
    record = {"path": str(path), "kind": kind, "session": "s1", "time": 1.0, "cwd": str(cwd)}
    (folder / "s1.json").write_text(json.dumps({"session": "s1", "records": [record]}))


def _old(path: Path) -> None:
    then = time.time() - 9 * DAY
    os.utime(path, (then, then), follow_symlinks=False)


def test_the_dashboards_last_check_of_a_recorded_worktree_agrees_with_the_sweep(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    tree = repo / ".claude" / "worktrees" / "fix"
    git(repo, "worktree", "add", "-q", "--detach", str(tree))
    _record(sandbox, tree, "worktree", repo)
    _old(tree)
    (entry,) = [e for e in gc.sweep(dry_run=True).entries if e.path == str(tree)]
    assert (entry.action, entry.reason) == ("remove", "age")
    assert gc.removal_guard(str(tree))(str(tree)) is None
    (tree / "notes.txt").write_text("work of the session\n")
    assert gc.removal_guard(str(tree))(str(tree)) == "dirty"


def test_the_last_check_of_a_path_outside_every_root_refuses_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _record(sandbox, elsewhere, "temp", tmp_path)
    _old(elsewhere)
    assert gc.removal_guard(str(elsewhere))(str(elsewhere)) == "outside_root"
