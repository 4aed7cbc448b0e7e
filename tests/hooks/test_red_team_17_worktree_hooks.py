"""Red team, round seventeen: WorktreeCreate and WorktreeRemove as Claude runs them
(`python -P -m hooks`), driven with ordinary git in the project or a checkout."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.support import (
    SandboxEnv,
    commit_file,
    git,
    hung_fuse_mounts,
    make_repo,
    pushed_repo,
    run_hook,
    session_checkout,
    session_hook,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project pushed to its remote, ignoring build output."""
    return pushed_repo(tmp_path, {"README.md": "x\n", ".gitignore": "node_modules/\n"})


def _separate_git_dir_project(tmp_path: Path) -> Path:
    """`git clone --separate-git-dir ~/gd/proj.git`: the project's `.git` is a file."""
    origin = tmp_path / "sep-origin.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(origin))
    seed = tmp_path / "sep-seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    commit_file(seed, "README.md", "x\n")
    git(seed, "push", "-q", str(origin), "main")
    proj = tmp_path / "sep-proj"
    (tmp_path / "gd").mkdir()
    git(tmp_path, "clone", "-q", "--separate-git-dir", str(tmp_path / "gd" / "proj.git"), str(origin), str(proj))
    return proj


def _submodule_project(tmp_path: Path, project: Path) -> Path:
    """`super/lib`, a submodule checked out in a superproject (its `.git` a file naming
    `super/.git/modules/lib`)."""
    sup = tmp_path / "super"
    git(tmp_path, "init", "-q", "-b", "main", str(sup))
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(project), "lib")
    git(sup, "commit", "-qm", "lib")
    return sup / "lib"


@pytest.mark.parametrize("shape", ["separate_git_dir", "submodule"])
def test_worktree_create_from_inside_a_checkout_of_a_project_whose_git_is_a_file_does_not_nest(
        tmp_path: Path, project: Path, shape: str) -> None:
    """A session working in its checkout asks for another (EnterWorktree, a subagent's
    worktree) with its cwd in the checkout. Its project's `.git` is a file (a clone made with
    `--separate-git-dir`, a submodule): the checkout's git dir is `<git dir>/worktrees/<id>`,
    not `.git/worktrees/<id>`, and the checkout was taken for the project itself. The new
    checkout was made inside the old one (`<checkout>/.claude/worktrees/<name>`), its record
    naming the checkout as its project, and the outer one could never be released whole."""
    proj = _separate_git_dir_project(tmp_path) if shape == "separate_git_dir" else _submodule_project(tmp_path, project)
    first = session_checkout(proj, "first")
    made = session_hook("WorktreeCreate", first, name="second")
    assert made.returncode == 0, made.stderr
    second = Path(made.stdout.decode().strip().splitlines()[-1])
    assert second == proj / ".claude" / "worktrees" / "second", second
    assert not (first / ".claude").exists()


def test_session_start_is_not_held_by_a_checkout_recorded_on_a_dead_remote_mount(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """HANG. A project on an `sshfs` share had a session checkout; the host is gone. Every
    SessionStart, in any project, made each recorded checkout a real path to see whether it
    holds the session's cwd, and waited for ever on that share: Claude's start waited out
    the hook's timeout each time. The checkout `--resume` names by id is still claimed."""
    share = tmp_path / "share"
    share.mkdir()
    away = pushed_repo(share, {"README.md": "x\n"})
    there = session_checkout(away, "there")
    here = make_repo(tmp_path / "here")
    with hung_fuse_mounts() as mount:
        mount(share)
        try:
            started = run_hook({"hook_event_name": "SessionStart", "session_id": "s9", "cwd": str(here),
                                "source": "startup"}, cwd=here, timeout=30)
            resumed = run_hook({"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(here),
                                "source": "resume"}, cwd=here, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("SessionStart hung on a checkout recorded on a dead mount")
    assert started.returncode == 0 and resumed.returncode == 0, (started.stderr, resumed.stderr)
    from app.core import checkouts

    assert checkouts.registry()[str(there)]["sessions"]["s1"] is True


def test_the_end_of_a_session_whose_checkout_is_on_a_dead_remote_mount_holds_no_registry(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """HANG. A session worked in its checkout of a project on an `sshfs` share; the host went
    away and the session ended. Its detached release marked the ending under the registry's
    lock and wrote a line to the session's log, whose name is made from the project of the
    session's cwd: found by a look on that share, which waited for ever. The registry stayed
    locked: WorktreeCreate in every other project failed (`state file busy`, so `claude
    --worktree` and every subagent's worktree broke) and each SessionStart waited 10 s. A cwd on
    a remote mount that does not answer names its log as written."""
    share = tmp_path / "share"
    share.mkdir()
    away = pushed_repo(share, {"README.md": "x\n"})
    there = session_checkout(away, "there")
    here = make_repo(tmp_path / "here")
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    with hung_fuse_mounts() as mount:
        mount(share)
        ended = run_hook({"hook_event_name": "SessionEnd", "session_id": "s1", "cwd": str(there),
                          "reason": "prompt_input_exit"}, cwd=here)
        assert ended.returncode == 0
        time.sleep(3)  # the detached release has marked the ending by now, or hangs doing it
        made = run_hook({"hook_event_name": "WorktreeCreate", "session_id": "s9", "cwd": str(here), "name": "w2"},
                        cwd=here, timeout=60)
    assert made.returncode == 0, made.stderr


def test_worktree_create_of_a_name_whose_checkout_was_deleted_by_hand_makes_it_again(project: Path) -> None:
    """`rm -rf .claude/worktrees/work` (not `git worktree remove`): git keeps its entry for the
    folder, marked prunable. `claude --worktree work` (or `--resume` of the session that worked
    there: its branch holds its commits) then failed for good with git's last words, "use 'add
    -f' to override, or 'prune' or 'remove' to clear". An entry that holds nothing but what its
    branch holds is forgotten, as WorktreeRemove forgets a checkout gone without work, and the
    checkout is made again on its branch; one holding staged work still fails loud (its
    `git worktree repair` stays possible)."""
    import shutil

    first = session_checkout(project, "work")
    sha = commit_file(first, "work.py", "the session's work\n")
    shutil.rmtree(first)
    made = session_hook("WorktreeCreate", project, name="work")
    assert made.returncode == 0, made.stderr
    again = Path(made.stdout.decode().strip().splitlines()[-1])
    assert again == first and git(again, "rev-parse", "HEAD") == sha
    assert git(again, "symbolic-ref", "--short", "HEAD") == "worktree-work"


def test_worktree_remove_of_a_checkout_on_a_dead_remote_mount_answers_and_says_why(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """HANG. WorktreeRemove of a checkout whose project lies on an `sshfs` share whose host is
    gone made the path a real one first and waited for ever (Claude waited out the hook's
    timeout). It keeps the checkout at once, saying the folder does not answer, and its
    record stays."""
    share = tmp_path / "share"
    share.mkdir()
    away = pushed_repo(share, {"README.md": "x\n"})
    there = session_checkout(away, "there")
    here = make_repo(tmp_path / "here")
    with hung_fuse_mounts() as mount:
        mount(share)
        try:
            removed = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s1", "cwd": str(here),
                                "worktree_path": str(there)}, cwd=here, timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("WorktreeRemove hung on the dead mount")
    assert removed.returncode == 1 and b"does not answer" in removed.stderr, removed.stderr
    from app.core import checkouts

    assert str(there) in checkouts.registry()


@pytest.mark.parametrize("step", ["worktree_add", "sparse_read_tree"])
def test_worktree_create_never_hands_over_a_checkout_whose_creation_was_cut_short(project: Path, step: str) -> None:
    """A big repository's checkout outlasts the hook's timeout: Claude kills WorktreeCreate in
    the middle of `git worktree add`, which had written the worktree's HEAD and its `locked`
    ("initializing") but not yet its files or index. Asked again, WorktreeCreate found git
    listing the worktree and handed it over: a checkout where `git status` shows every
    tracked file deleted, and a model's `git add -A && git commit` deletes the project on
    that branch (so too one cut short in the sparse `read-tree` after `git worktree add
    --no-checkout`). It fails loud instead, saying how to clear it; nothing is removed."""
    target = project / ".claude" / "worktrees" / "half"
    git(project, "worktree", "add", "-q", "--no-checkout", "-b", "worktree-half", str(target), "HEAD")
    admin = Path(git(target, "rev-parse", "--absolute-git-dir"))
    if step == "worktree_add":
        (admin / "locked").write_text("initializing")
    if (admin / "index").exists():
        (admin / "index").unlink()
    made = session_hook("WorktreeCreate", project, name="half")
    assert made.returncode != 0 and made.stdout.strip() == b"", made.stdout
    assert made.stderr.strip().count(b"\n") == 0 and b"worktree remove" in made.stderr, made.stderr
    assert target.is_dir() and (admin / "HEAD").exists()
