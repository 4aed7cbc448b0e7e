"""The GC's roots and holders: a temp root that is the home (or `/`, or relative) is no root,
one above the home keeps the home out; a recorded path a session checkout's holder needs, or that is or holds a known
project, is kept. Real folders, real sessions, real git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.core import checkouts, gc
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, add_record, git, make_repo, set_mtime

OLD = 8 * 86_400


def old_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "out.bin").write_bytes(b"x" * 100)
    set_mtime(path, OLD)
    return path


def entries() -> dict[str, tuple[str, str]]:
    return {e.path: (e.status, e.reason) for e in gc.sweep().entries}



def refusals_logged(sandbox: SandboxEnv, root: Path | str) -> int:
    return sum(log.read_text().count(f"gc: {root} is no GC root")
               for log in Path(sandbox.claude_tmp_root).rglob("*.log"))


def test_a_temp_root_above_the_home_is_a_root_and_the_home_is_never_an_output(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """TMPDIR holding HOME (a sandbox laid out so, TMPDIR=/home): its outputs go as anywhere;
    the home, what it holds, and a folder holding it are never outputs, whatever a record says."""
    monkeypatch.setenv("TMPDIR", str(sandbox.root))  # the home and everything beside it below it
    one, two = old_folder(sandbox.root / "one"), old_folder(sandbox.home / "code" / "two")
    add_record("s1", one)
    add_record("s1", two)
    add_record("s1", sandbox.home)
    got = entries()
    assert got[str(one)] == ("removed", "age") and not one.exists(), got
    assert got[str(two)][0] != "removed" and got[str(sandbox.home)][0] != "removed", got
    assert two.is_dir() and sandbox.home.is_dir()
    assert refusals_logged(sandbox, sandbox.root) == 0


def test_the_home_as_temp_root_is_refused_and_logged_once(sandbox: SandboxEnv,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(sandbox.home))
    out = old_folder(sandbox.home / "out")
    add_record("s1", out)
    assert entries() == {str(out): ("skip", "outside_root")} and out.is_dir()
    entries()
    assert refusals_logged(sandbox, sandbox.home) == 1


def test_the_file_system_root_as_temp_root_is_refused(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", "/")
    out = old_folder(sandbox.user_tmp / "out")
    add_record("s1", out)
    assert entries() == {str(out): ("skip", "outside_root")} and out.is_dir()


def test_a_temp_root_above_claudes_config_folder_is_a_root_and_the_config_folder_never_an_output(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    config = sandbox.user_tmp / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    out, held = old_folder(sandbox.user_tmp / "out"), old_folder(config / "projects" / "old")
    add_record("s1", out)
    add_record("s1", held)
    got = entries()
    assert got[str(out)] == ("removed", "age") and not out.exists(), got
    assert got[str(held)][0] != "removed" and held.is_dir(), got


def test_claudes_config_folder_as_temp_root_is_refused(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    config = sandbox.user_tmp / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.setenv("TMPDIR", str(config))
    out = old_folder(config / "out")
    add_record("s1", out)
    assert entries() == {str(out): ("skip", "outside_root")} and out.is_dir()


def test_a_relative_temp_root_is_refused(sandbox: SandboxEnv, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", "rel")
    out = old_folder(tmp_path / "rel" / "out")
    add_record("s1", out)
    assert entries() == {str(out): ("skip", "outside_root")} and out.is_dir()
    assert refusals_logged(sandbox, "rel") == 1


def test_a_temp_root_inside_the_home_is_a_root(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(sandbox.home / "tmp"))
    out = old_folder(sandbox.home / "tmp" / "out")
    add_record("s1", out)
    assert entries() == {str(out): ("removed", "age")} and not out.exists()


def registered_checkout(sandbox: SandboxEnv, tmp_path: Path, pid: int) -> tuple[Path, Path]:
    """A session checkout `x` of a project, registered for session B, whose Claude (`pid`)
    runs from the launch folder, the project: no cwd lies inside the checkout."""
    project = make_repo(tmp_path / "proj")
    checkout = Path(checkouts.create_checkout(str(project), "x", "B").path)
    sandbox.write_session(str(pid), pid=pid, sessionId="B", cwd=str(project), procStart=proc_start_time(pid))
    return project, checkout


def test_a_recorded_path_inside_a_held_checkout_is_live(sandbox: SandboxEnv, tmp_path: Path, live_pid: int) -> None:
    project, checkout = registered_checkout(sandbox, tmp_path, live_pid)
    build = old_folder(checkout / "build")
    add_record("s0", build, cwd=project)
    assert entries() == {str(build): ("kept", "live")} and build.is_dir()


def test_a_checkout_whose_holders_ended_holds_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    project, checkout = registered_checkout(sandbox, tmp_path, child.pid)
    build = old_folder(checkout / "build")
    add_record("s0", build, cwd=project)
    assert entries() == {str(build): ("removed", "age")} and not build.exists()


def test_a_dead_sessions_folder_protects_nothing(sandbox: SandboxEnv) -> None:
    """Rule 4 as the seed says it: only a live session's folder keeps a path."""
    clone = old_folder(sandbox.user_tmp / "clone")
    child = subprocess.Popen(["true"])
    child.wait()  # a crashed Claude: its file stays, its process is gone
    sandbox.write_session(str(child.pid), pid=child.pid, sessionId="C", cwd=str(clone / "src"))
    (clone / "src").mkdir()
    set_mtime(clone, OLD)
    add_record("s1", clone)
    assert entries() == {str(clone): ("removed", "age")} and not clone.exists()


def test_a_recorded_folder_that_holds_a_known_project_is_in_use_one_inside_is_not(sandbox: SandboxEnv) -> None:
    work = sandbox.user_tmp / "work"
    project = old_folder(work / "proj")
    build = old_folder(project / "build")
    git(project, "init", "-q")
    set_mtime(work, OLD)
    set_mtime(project, OLD)
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(project): {}}}))
    add_record("s1", work)
    add_record("s1", build)
    assert entries() == {str(work): ("kept", "in_use"), str(build): ("removed", "age")}
    assert project.is_dir() and not build.exists()


def test_a_worktree_claude_was_started_in_is_no_project_of_the_users(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude lists every folder it was started in, an agent's worktree too: that keeps
    nothing, or no worktree a session ever ran in would go."""
    repo = make_repo(tmp_path / "repo")
    tree = repo / ".claude" / "worktrees" / "agent-1"
    git(repo, "worktree", "add", "-q", "-b", "worktree-agent-1", str(tree))
    set_mtime(tree, OLD)
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(repo): {}, str(tree): {}}}))
    add_record("s1", tree, kind="worktree", cwd=repo)
    assert entries() == {str(tree): ("removed", "age")}


def test_the_removal_core_refuses_the_home_and_all_in_it_under_a_root_above_it(sandbox: SandboxEnv) -> None:
    """Whatever a caller passes: under a root above the home, the home, a folder in it, one
    reached through a link into it and a folder holding it are no removal's; beside it, a
    folder is. `/` and the home themselves are no root."""
    from app.core import removal

    work = sandbox.home / "work"
    work.mkdir()
    (sandbox.root / "link").symlink_to(sandbox.home)
    beside = sandbox.root / "out"
    beside.mkdir()
    for path in (sandbox.home, work, sandbox.root / "link" / "work"):
        assert removal.containment(path, sandbox.root) == "outside_root", path
    assert removal.containment(sandbox.home, sandbox.root.parent) == "outside_root"
    assert removal.containment(beside, sandbox.root) is None
    assert removal.containment(work, sandbox.home) == "outside_root"
    assert removal.containment(beside, "/") == "outside_root"
