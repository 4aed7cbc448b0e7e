"""WorktreeCreate makes what Claude's own creation would make (CLAUDE_CODE_FACTS "Hook
output"): the base of `worktree.baseRef`, the git-ignored files `.worktreeinclude` lists,
`worktree.sparsePaths`; and Claude's throwaway names are made but held by no session."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import SandboxEnv, git, make_repo, run_hook

SID = "5d0c7a52-3f7e-4a7e-9d1b-2c3d4e5f6a7b"
GITIGNORE = ".env\nsecret/\n*.log\nnode_modules/\n"


def create(cwd: Path, name: str, session_id: str | None = SID) -> subprocess.CompletedProcess[bytes]:
    payload = {"hook_event_name": "WorktreeCreate", "cwd": str(cwd), "name": name, "transcript_path": "/t"}
    if session_id is not None:
        payload["session_id"] = session_id
    return run_hook(payload, cwd=cwd)


def made(cwd: Path, name: str, session_id: str | None = SID) -> Path:
    result = create(cwd, name, session_id)
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.decode().strip().splitlines()[-1])


def files(top: Path) -> dict[str, bytes]:
    """Every file under `top` but `.git`, with its content (symlinks by their target)."""
    found = {}
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(folder) / name
            rel = str(path.relative_to(top))
            if rel == ".git":
                continue
            found[rel] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return found


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A clone of a bare origin, with one local commit on main that was never pushed, and
    git-ignored files: some that `.worktreeinclude` lists, some it does not."""
    seed = make_repo(tmp_path / "seed", files={"README.md": "v1\n", ".gitignore": GITIGNORE,
                                               ".worktreeinclude": ".env\nsecret/\nnotes.txt\n",
                                               "src/app.py": "print(1)\n"})
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(tmp_path / "origin.git"))
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(tmp_path / "work"))
    work = tmp_path / "work"
    (work / "README.md").write_text("v2, not pushed\n")
    git(work, "commit", "-q", "-am", "local only")
    (work / ".env").write_text("TOKEN=1\n")
    (work / "secret" / "deep").mkdir(parents=True)
    (work / "secret" / "key").write_text("k\n")
    (work / "secret" / "deep" / "more").write_text("m\n")
    os.symlink("key", work / "secret" / "link")
    (work / "debug.log").write_text("ignored, not listed\n")
    (work / "notes.txt").write_text("listed, but untracked and not ignored\n")
    (work / "node_modules").mkdir()
    (work / "node_modules" / "m.js").write_text("x\n")
    return work


INCLUDED = {".env", "secret/key", "secret/deep/more", "secret/link"}


def test_fresh_base_and_worktreeinclude_match_git_worktree_add_from_origin_main(
        sandbox: SandboxEnv, clone: Path, tmp_path: Path) -> None:
    ours = made(clone, "feature/login")
    assert ours == clone / ".claude" / "worktrees" / "feature+login"
    by_hand = tmp_path / "by-hand"
    git(clone, "worktree", "add", "-q", "-b", "by-hand", str(by_hand), "origin/main")
    assert git(ours, "rev-parse", "HEAD") == git(clone, "rev-parse", "origin/main") != git(clone, "rev-parse", "main")
    assert git(ours, "rev-parse", "--abbrev-ref", "HEAD") == "worktree-feature+login"
    expected = files(by_hand)
    expected.update({rel: (clone / rel).read_bytes() for rel in INCLUDED if rel != "secret/link"})
    expected["secret/link"] = b"key"
    assert files(ours) == expected
    assert os.path.islink(ours / "secret" / "link")
    assert git(ours, "status", "--porcelain") == ""  # what was copied is ignored there too
    # no upstream: a push of worktree-* can never land on main by accident
    upstream = subprocess.run(["git", "-C", str(ours), "rev-parse", "--abbrev-ref", "@{upstream}"],
                              capture_output=True, text=True, check=False)
    assert upstream.returncode != 0


def test_head_base_from_the_settings_layers(sandbox: SandboxEnv, clone: Path) -> None:
    (sandbox.config / "settings.json").write_text(json.dumps({"worktree": {"baseRef": "head"}}))
    ours = made(clone, "from-head")
    assert git(ours, "rev-parse", "HEAD") == git(clone, "rev-parse", "main")
    # a later layer wins: the project's local settings say fresh again
    (clone / ".claude" / "settings.local.json").write_text(json.dumps({"worktree": {"baseRef": "fresh"}}))
    again = made(clone, "fresh-again")
    assert git(again, "rev-parse", "HEAD") == git(clone, "rev-parse", "origin/main")


def test_an_invalid_base_ref_is_logged_and_the_default_holds(sandbox: SandboxEnv, clone: Path) -> None:
    (sandbox.config / "settings.json").write_text(json.dumps({"worktree": {"baseRef": "origin/dev"}}))
    ours = made(clone, "odd-setting")
    assert git(ours, "rev-parse", "HEAD") == git(clone, "rev-parse", "origin/main")


def test_fresh_without_origin_head_takes_origin_main_and_without_a_remote_head(
        sandbox: SandboxEnv, clone: Path, tmp_path: Path) -> None:
    git(clone, "remote", "set-head", "origin", "--delete")
    ours = made(clone, "no-origin-head")
    assert git(ours, "rev-parse", "HEAD") == git(clone, "rev-parse", "origin/main")
    local = make_repo(tmp_path / "local")
    (local / "f").write_text("2\n")
    git(local, "add", "f")
    git(local, "commit", "-q", "-m", "two")
    alone = made(local, "no-remote")
    assert git(alone, "rev-parse", "HEAD") == git(local, "rev-parse", "HEAD")


def test_head_is_the_head_of_the_checkout_claude_runs_in(sandbox: SandboxEnv, clone: Path) -> None:
    (sandbox.config / "settings.json").write_text(json.dumps({"worktree": {"baseRef": "head"}}))
    first = made(clone, "first")
    (first / "extra.txt").write_text("only in first\n")
    git(first, "add", "extra.txt")
    git(first, "commit", "-q", "-m", "first's work")
    nested = made(first, "second")  # EnterWorktree from inside a checkout
    assert nested == clone / ".claude" / "worktrees" / "second"
    assert git(nested, "rev-parse", "HEAD") == git(first, "rev-parse", "HEAD")


def test_sparse_paths_are_applied(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mono", files={"README.md": "r\n", "packages/app/a.js": "a\n",
                                               "packages/lib/l.js": "l\n", "docs/d.md": "d\n"})
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps({"worktree": {"sparsePaths": ["packages/app"]}}))
    ours = made(repo, "sparse")
    assert set(files(ours)) == {"README.md", "packages/app/a.js"}
    assert git(ours, "sparse-checkout", "list") == "packages/app"
    assert git(ours, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")


def test_sparse_paths_git_refuses_leave_nothing_behind(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "mono", files={"README.md": "r\n", "a/x": "x\n"})
    (sandbox.config / "settings.json").write_text(json.dumps({"worktree": {"sparsePaths": ["/abs/*[path"]}}))
    result = create(repo, "bad-sparse")
    assert result.returncode != 0 and b"sparsePaths" in result.stderr and result.stdout == b""
    assert not (repo / ".claude" / "worktrees" / "bad-sparse").exists()
    assert "worktree-bad-sparse" not in git(repo, "branch")


@pytest.mark.parametrize("name", ["agent-a1b2c3d4", "wf_1a2b3c4d-abc-3", "wf-12"])
def test_claudes_throwaway_names_are_made_but_held_by_no_session(
        name: str, sandbox: SandboxEnv, clone: Path) -> None:
    ours = made(clone, name, session_id=None)
    assert (ours / ".env").exists()  # made as Claude would make it
    entry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"][str(ours)]
    assert entry["kind"] in ("agent", "workflow") and entry["sessions"] == {}
    made(clone, name)  # asked again with a session: still nobody's
    entry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"][str(ours)]
    assert entry["sessions"] == {}


@pytest.mark.parametrize("name", ["bridge-7f3a", "job-nightly-1a2b3c4d", "bg-fix-tests-1a2b3c4d"])
def test_remote_control_and_background_checkouts_are_a_sessions_when_one_asks(
        name: str, sandbox: SandboxEnv, clone: Path) -> None:
    """Seed 002: any WorktreeCreate name but a subagent's `agent-*` or a workflow's `wf_*` is a
    session checkout (`--bg --worktree` is released at its stop, remote control's `bridge-*`
    when SessionEnd fires there); made for no session, such a name is nobody's (Claude's own
    creation of them must not fail)."""
    ours = made(clone, name)
    entry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"][str(ours)]
    assert (entry["kind"], entry["sessions"]) == ("session", {SID: True})
    other = made(clone, name + "-x" if name.startswith("bridge") else name[:-8] + "ffffffff", session_id=None)
    entry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"][str(other)]
    assert (entry["kind"], entry["sessions"]) == ("workflow", {})


@pytest.mark.parametrize("name", ["job-nightly-1a2b3c4", "bg-x-NOTHEX12", "bridge"])
def test_near_misses_are_session_checkouts(name: str, sandbox: SandboxEnv, clone: Path) -> None:
    assert create(clone, name, session_id=None).returncode != 0
    ours = made(clone, name)
    entry = json.loads((sandbox.state / "checkouts.json").read_text())["checkouts"][str(ours)]
    assert (entry["kind"], entry["sessions"]) == ("session", {SID: True})
