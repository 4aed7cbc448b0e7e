"""A working copy of another version control system inside a folder that is about to go: an
`hg clone`, a `jj` repository, an `svn checkout` with local edits, a Fossil checkout. Git's
rules see none of their commits or edits, and none of their tools need be installed here to
tell one is there: its marker (`.hg`, `.jj`, `.svn`, `.fslckout`, ...) keeps the folder
`dirty`, in an old output of the GC, an old session folder of the cleanup, and a worktree
the cleanup would remove. A marker inside an installed package (old packages shipped `.svn`
folders) is a published leftover and keeps nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.test_red_team_9_removal import OLD, clean_json, session_folder
from tests.support import SandboxEnv, add_record, gc_entries, git, make_repo, run_cli, set_mtime

MARKS = (".hg", ".jj", ".svn", ".bzr", "_darcs", ".pijul", ".sl", ".fslckout", "_FOSSIL_")  # .sl: Sapling


def working_copy(folder: Path, mark: str) -> Path:
    """A working copy with `mark` at `folder`, its history only there, one edited file."""
    folder.mkdir(parents=True, exist_ok=True)
    if mark in (".fslckout", "_FOSSIL_"):
        (folder / mark).write_bytes(b"SQLite format 3\0 the checkout's state")
    else:
        (folder / mark / "store").mkdir(parents=True)
        (folder / mark / "store" / "00changelog.i").write_bytes(b"\0\0\0\1 the only copy of the commits")
    (folder / "lib.c").write_text("int f(void) { return 2; }  /* edited, not committed */\n")
    return folder


@pytest.mark.parametrize("mark", MARKS)
def test_an_old_output_holding_another_systems_working_copy_is_kept(sandbox: SandboxEnv, mark: str) -> None:
    out = sandbox.user_tmp / "tmp.vcs0001"
    inner = working_copy(out / "deps" / "lib", mark)
    for path in (inner, inner.parent, out):
        set_mtime(path, OLD)
    add_record("s1", out)
    assert gc_entries()[str(out)] == ("kept", "dirty")
    done = run_cli("gc", "--json")
    assert done.returncode == 0, done.stderr
    assert (inner / "lib.c").exists() and (inner / mark).exists()


def test_a_marker_inside_an_installed_package_of_an_output_keeps_nothing(sandbox: SandboxEnv) -> None:
    out = sandbox.user_tmp / "tmp.vcs0002"
    (out / "node_modules" / "pkg" / ".svn").mkdir(parents=True)
    (out / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    (out / "venv" / "lib" / "site-packages" / "old" / ".svn").mkdir(parents=True)
    set_mtime(out, OLD)
    add_record("s1", out)
    done = run_cli("gc", "--json")
    assert done.returncode == 0, done.stderr
    [entry] = json.loads(done.stdout)["entries"]
    assert (entry["path"], entry["status"]) == (str(out), "removed"), entry
    assert not out.exists()


def test_an_old_session_folder_holding_a_jj_repository_is_kept(sandbox: SandboxEnv) -> None:
    folder = session_folder(sandbox)
    working_copy(folder / "scratchpad" / "exp", ".jj")
    set_mtime(folder / "scratchpad" / "exp", OLD)
    set_mtime(folder / "scratchpad", OLD)
    set_mtime(folder, OLD)
    report = clean_json()
    assert report["cleaned"]["folders"] == 0, report
    assert (folder / "scratchpad" / "exp" / ".jj" / "store").is_dir()


def test_a_worktree_holding_an_hg_clone_in_its_ignored_build_folder_is_kept(sandbox: SandboxEnv) -> None:
    repo = make_repo(sandbox.home / "proj", files={".gitignore": "build/\n", "a.txt": "a\n"})
    wt = repo / ".claude" / "worktrees" / "agent-a1234567"
    git(repo, "worktree", "add", "-q", "-b", "worktree-agent-a1234567", str(wt))
    git(wt, "push", "-q", ".", "HEAD:refs/remotes/origin/main")  # nothing unmerged
    working_copy(wt / "build" / "vendor" / "lib", ".hg")
    set_mtime(wt, OLD)
    done = run_cli("clean", "--json", str(repo))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["worktrees_kept"] == [{"path": str(wt), "reason": "dirty"}], report
    assert (wt / "build" / "vendor" / "lib" / ".hg" / "store").is_dir()
