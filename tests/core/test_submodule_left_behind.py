"""A linked worktree's submodule left behind by a branch switch: `git switch` to a branch
whose tree has no submodule leaves the submodule's folder on disk (a `.git` FILE naming
`<the worktree's git dir>/modules/<name>`, a git dir with no `commondir`). That git dir lives
outside the worktree's folder, in the worktree's own git dir, and goes when git forgets the
worktree: what it alone holds must keep the worktree (real repositories, the CLI and the
hook in subprocesses)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import git, make_repo, run_cli, run_hook, set_mtime

DAY = 86_400
ALLOW = ("-c", "protocol.file.allow=always")


def project(tmp_path: Path, where: str) -> Path:
    """A project on `main` with a submodule (a real second repository) at `where`, and a
    branch `plain` whose tree has no submodule. Both ignore node_modules/."""
    lib = make_repo(tmp_path / "lib", files={"lib.c": "int x;\n"})
    proj = make_repo(tmp_path / "proj", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    git(proj, "branch", "plain")
    git(proj, *ALLOW, "submodule", "add", "-q", "--force", str(lib), where)
    git(proj, "commit", "-qm", "vendor lib")
    return proj


def switched_worktree(proj: Path, name: str | Path, where: str) -> tuple[Path, Path, Path]:
    """A linked worktree (`name`, or one made already; no commit of its own) with the
    submodule checked out: (worktree, submodule folder, submodule git dir)."""
    if isinstance(name, Path):
        wt = name
    else:
        wt = proj / ".claude" / "worktrees" / name
        git(proj, "worktree", "add", "-q", "-b", f"worktree-{name}", str(wt))
    git(wt, *ALLOW, "submodule", "update", "-q", "--init")
    sub = wt / where
    module = Path(git(sub, "rev-parse", "--absolute-git-dir"))
    assert not module.is_relative_to(wt) and not (module / "commondir").exists()
    return wt, sub, module


def leave_behind(wt: Path, sub: Path) -> None:
    """Switch the worktree to the branch without the submodule: git leaves its folder."""
    subprocess.run(["git", "switch", "-q", "plain"], cwd=wt, check=True, capture_output=True)
    assert (sub / ".git").is_file() and (sub / "lib.c").is_file()
    set_mtime(wt, 40 * DAY)


def unpushed_commit(sub: Path) -> str:
    git(sub, "switch", "-q", "-c", "fix")
    (sub / "lib.c").write_text("int x = 1;\n")
    git(sub, "commit", "-qam", "the fix, pushed nowhere")
    return git(sub, "rev-parse", "HEAD")


def has_commit(git_dir: Path, sha: str) -> bool:
    # --work-tree: the git dir's core.worktree may name a folder that is gone (git would fail)
    done = subprocess.run(["git", f"--git-dir={git_dir}", f"--work-tree={git_dir}", "cat-file", "-e",
                           f"{sha}^{{commit}}"],
                          check=False, capture_output=True)
    return done.returncode == 0


def clean(proj: Path) -> dict[str, object]:
    result = run_cli("clean", "--json", str(proj))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert isinstance(report, dict)
    return report


def kept_reason(report: dict[str, object], wt: Path) -> str | None:
    kept = report.get("worktrees_kept")
    assert isinstance(kept, list)
    return next((k["reason"] for k in kept if k["path"] == str(wt)), None)


# Where the submodule lives decides what `git status` shows of the folder left behind: an
# untracked `vendor/` (dirty), or nothing (inside the ignored, regenerable node_modules/):
# there only the submodule's own git dir, judged as a repository of its own, can keep it.
PLACES = [("vendor/lib", "dirty"), ("node_modules/lib", "unmerged")]


@pytest.mark.parametrize(("where", "reason"), PLACES)
def test_an_unpushed_submodule_commit_left_behind_by_a_branch_switch_keeps_the_worktree(
        tmp_path: Path, where: str, reason: str) -> None:
    proj = project(tmp_path, where)
    wt, sub, module = switched_worktree(proj, "switched", where)
    only = unpushed_commit(sub)
    leave_behind(wt, sub)
    report = clean(proj)
    assert wt.is_dir() and has_commit(module, only), report
    assert kept_reason(report, wt) == reason, report


def test_a_submodule_left_behind_with_nothing_new_lets_the_worktree_go(tmp_path: Path) -> None:
    """The bound: the folder left behind (ignored, in node_modules/) and its git dir hold only
    what the submodule's origin has."""
    proj = project(tmp_path, "node_modules/lib")
    wt, sub, _ = switched_worktree(proj, "nothing-new", "node_modules/lib")
    leave_behind(wt, sub)
    report = clean(proj)
    assert not wt.exists() and kept_reason(report, wt) is None, report


def test_a_stash_in_a_submodule_left_behind_keeps_the_worktree(tmp_path: Path) -> None:
    """No commit, only `git stash` in the submodule: the stash lives in its git dir."""
    proj = project(tmp_path, "node_modules/lib")
    wt, sub, module = switched_worktree(proj, "stashed", "node_modules/lib")
    (sub / "lib.c").write_text("int x = 2;\n")
    git(sub, "stash", "-q")
    leave_behind(wt, sub)
    report = clean(proj)
    assert wt.is_dir() and (module / "refs" / "stash").is_file(), report
    assert kept_reason(report, wt) == "unmerged", report


def test_a_changed_file_in_a_submodule_left_behind_keeps_the_worktree(tmp_path: Path) -> None:
    """An edit never committed in the submodule's folder: its work tree is judged too."""
    proj = project(tmp_path, "node_modules/lib")
    wt, sub, _ = switched_worktree(proj, "edited", "node_modules/lib")
    (sub / "lib.c").write_text("int x = 3; /* not committed */\n")
    leave_behind(wt, sub)
    report = clean(proj)
    assert (sub / "lib.c").read_text() == "int x = 3; /* not committed */\n", report
    assert kept_reason(report, wt) == "dirty", report


def test_worktree_remove_keeps_a_worktree_with_a_submodule_commit_left_behind(tmp_path: Path) -> None:
    """WorktreeRemove (Claude asks now, no age condition) judges the folder the same way."""
    from app.core import checkouts

    proj = project(tmp_path, "node_modules/lib")
    made = Path(checkouts.create_checkout(str(proj), "asked", "s-1").path)
    wt, sub, module = switched_worktree(proj, made, "node_modules/lib")
    only = unpushed_commit(sub)
    leave_behind(wt, sub)
    done = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s-1", "cwd": str(proj),
                     "worktree_path": str(wt)}, cwd=proj)
    assert wt.is_dir() and has_commit(module, only), done.stderr


def test_worktree_remove_of_a_gone_checkout_keeps_gits_entry_holding_a_submodule_commit(tmp_path: Path) -> None:
    """The checkout's folder went without us (the user's `rm -rf`): WorktreeRemove lets git
    forget the worktree unless git's entry for it holds work, and the entry holds the
    submodule's git dir (`<entry>/modules/<name>`) with its unpushed commit."""
    import shutil

    from app.core import checkouts

    proj = project(tmp_path, "vendor/lib")
    made = Path(checkouts.create_checkout(str(proj), "gone", "s-1").path)
    wt, sub, module = switched_worktree(proj, made, "vendor/lib")
    only = unpushed_commit(sub)
    shutil.rmtree(wt)
    done = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s-1", "cwd": str(proj),
                     "worktree_path": str(wt)}, cwd=proj)
    assert has_commit(module, only), done.stderr


def test_worktree_remove_of_a_gone_checkout_whose_submodule_holds_nothing_new_lets_git_forget_it(
        tmp_path: Path) -> None:
    """The bound of the case above: the submodule's git dir holds only what its origin has."""
    import shutil

    from app.core import checkouts

    proj = project(tmp_path, "vendor/lib")
    made = Path(checkouts.create_checkout(str(proj), "gone-clean", "s-1").path)
    wt, _, module = switched_worktree(proj, made, "vendor/lib")
    shutil.rmtree(wt)
    done = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s-1", "cwd": str(proj),
                     "worktree_path": str(wt)}, cwd=proj)
    assert not module.exists() and str(wt) not in git(proj, "worktree", "list"), done.stderr
