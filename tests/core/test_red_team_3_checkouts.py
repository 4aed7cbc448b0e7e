"""Red team, round three: git states `git status` calls clean that still hold work found
nowhere else, worktrees in the middle of an operation, and odd settings and names, tried on
`claudetto clean`, WorktreeRemove and `claudetto release` as a user and Claude drive them
(real repositories and worktrees, the CLI and the hook in subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

DAY = 86_400


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})


def clean(*projects: Path) -> dict[str, object]:
    result = run_cli("clean", "--json", *map(str, projects))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def old_worktree(repo: Path, name: str, *, branch: str | None = None) -> Path:
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", branch or f"worktree-{name}", str(path))
    return path


def commit(where: Path, name: str, text: str, message: str = "work") -> str:
    (where / name).parent.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(text)
    git(where, "add", name)
    git(where, "commit", "-qm", message)
    return git(where, "rev-parse", "HEAD")


def age(path: Path) -> None:
    set_mtime(path, 40 * DAY)


def exists(repo: Path, sha: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo, check=False).returncode == 0


def reachable(repo: Path, sha: str) -> bool:
    """Whether any ref or reflog of the repository still leads to the commit (what `git gc`
    keeps): an object only a deleted reflog led to is gone at the next gc."""
    found = git(repo, "rev-list", "--all", "--reflog")
    return sha in found.split()


def worktree_remove(path: Path, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s-1", "cwd": str(cwd),
                     "worktree_path": str(path)}, cwd=cwd)


# --- per-worktree refs and states: what git worktree removal takes with the worktree ---------


def test_a_commit_only_a_per_worktree_ref_holds_keeps_the_worktree(repo: Path) -> None:
    """`git update-ref refs/worktree/keep HEAD` then a reset: refs/worktree/* live in the
    worktree's own git dir and go with it."""
    wt = old_worktree(repo, "wref")
    only = commit(wt, "idea.txt", "only here\n")
    git(wt, "update-ref", "refs/worktree/keep", only)
    git(wt, "reset", "-q", "--hard", "HEAD~1")
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, only), report


def test_a_commit_dropped_by_reset_hard_is_kept_with_its_orig_head(repo: Path) -> None:
    """`git reset --hard HEAD~1` in the worktree: the dropped commit is held by ORIG_HEAD and
    the reflogs, both of which the removal takes (the branch goes with `-d`: it is merged)."""
    wt = old_worktree(repo, "reset")
    only = commit(wt, "idea.txt", "only here\n")
    git(wt, "reset", "-q", "--hard", "HEAD~1")
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, only), report


def test_a_rebased_worktree_whose_old_commits_live_on_as_patches_goes(repo: Path) -> None:
    """The bound of the case above: after `git rebase`, ORIG_HEAD names the old commits, whose
    changes the branch holds again: nothing is lost, the worktree goes."""
    wt = old_worktree(repo, "rebased")
    commit(wt, "idea.txt", "idea\n")
    commit(repo, "other.txt", "main moved on\n")
    git(wt, "rebase", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "worktree-rebased")
    age(wt)
    report = clean(repo)
    assert not wt.exists(), report


@pytest.mark.parametrize("operation", ["rebase", "bisect", "cherry-pick"])
def test_a_worktree_in_the_middle_of_an_operation_is_kept(repo: Path, operation: str) -> None:
    """An interactive rebase stopped at `edit`, a bisect half done, a cherry-pick stopped on
    an empty commit: git status shows nothing, but the operation's plan is the user's work."""
    wt = old_worktree(repo, f"op-{operation}")
    first = commit(wt, "a.txt", "a\n")
    commit(wt, "b.txt", "b\n")
    git(repo, "merge", "-q", "--ff-only", f"worktree-op-{operation}")
    if operation == "rebase":
        env = {"GIT_SEQUENCE_EDITOR": "sed -i 's/^pick/edit/'"}
        subprocess.run(["git", "rebase", "-q", "-i", "HEAD~2"], cwd=wt, env={**os.environ, **env},
                       check=True, capture_output=True)
        state = Path(git(wt, "rev-parse", "--git-path", "rebase-merge"))
        assert (wt / state if not state.is_absolute() else state).is_dir()
    elif operation == "bisect":
        git(wt, "bisect", "start", "HEAD", f"{first}~1")
    else:
        subprocess.run(["git", "cherry-pick", first], cwd=wt, check=False, capture_output=True)
        assert git(wt, "status", "--porcelain") == ""
        assert subprocess.run(["git", "rev-parse", "-q", "--verify", "CHERRY_PICK_HEAD"], cwd=wt,
                              capture_output=True, check=False).returncode == 0
    age(wt)
    report = clean(repo)
    assert wt.is_dir(), report


def test_a_note_on_a_worktree_commit_survives(repo: Path) -> None:
    """`git notes` are shared by every worktree: the worktree goes, the note stays."""
    wt = old_worktree(repo, "noted")
    sha = commit(wt, "a.txt", "a\n")
    git(wt, "notes", "add", "-m", "why this was done", sha)
    git(repo, "merge", "-q", "--ff-only", "worktree-noted")
    age(wt)
    clean(repo)
    assert git(repo, "notes", "show", sha) == "why this was done"


# --- files git status does not show ------------------------------------------------------


def test_a_file_only_the_global_excludes_file_ignores_is_kept(sandbox: SandboxEnv, repo: Path) -> None:
    (sandbox.home / ".gitignore_global").write_text("*.notes\n")
    (sandbox.home / ".gitconfig").write_text(f"[core]\n\texcludesFile = {sandbox.home / '.gitignore_global'}\n")
    wt = old_worktree(repo, "excl")
    (wt / "plan.notes").write_text("my plan\n")
    age(wt)
    report = clean(repo)
    assert (wt / "plan.notes").exists(), report


def test_a_file_ignored_by_a_gitignore_inside_a_regenerable_folders_parent_is_kept(repo: Path) -> None:
    """`web/.gitignore` says `*` next to `web/node_modules`: `web/draft.md` is ignored but not
    inside a regenerable folder."""
    wt = old_worktree(repo, "star")
    (wt / "web" / "node_modules").mkdir(parents=True)
    (wt / "web" / ".gitignore").write_text("*\n")
    (wt / "web" / "draft.md").write_text("draft\n")
    age(wt)
    report = clean(repo)
    assert (wt / "web" / "draft.md").exists(), report


def test_a_modified_file_hidden_by_a_per_worktree_sparse_checkout_is_kept(repo: Path) -> None:
    commit(repo, "docs/guide.md", "v1\n")
    wt = old_worktree(repo, "sparse")
    git(wt, "sparse-checkout", "set", "--no-cone", "/README.md")
    (wt / "docs").mkdir(exist_ok=True)
    (wt / "docs" / "guide.md").write_text("v2, edited while sparse\n")
    age(wt)
    report = clean(repo)
    assert (wt / "docs" / "guide.md").exists(), report


def test_a_submodule_with_a_local_commit_keeps_the_worktree(repo: Path, tmp_path: Path) -> None:
    lib = make_repo(tmp_path / "lib", files={"lib.c": "int x;\n"})
    allow = ("-c", "protocol.file.allow=always")
    git(repo, *allow, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "vendor lib")
    wt = old_worktree(repo, "sub")
    git(wt, *allow, "submodule", "update", "-q", "--init")
    sub = wt / "vendor" / "lib"
    git(sub, "checkout", "-q", "-b", "fix")
    only = commit(sub, "lib.c", "int x = 1;\n")
    git(sub, "checkout", "-q", "--detach", "HEAD~1")
    age(wt)
    report = clean(repo)
    assert (sub / ".git").exists() and exists(sub, only), report


def test_a_nested_repository_inside_node_modules_with_unique_work_keeps_it(repo: Path) -> None:
    wt = old_worktree(repo, "nested")
    inner = make_repo(wt / "node_modules" / "my-fork")
    only = commit(inner, "patch.js", "fix\n")
    age(wt)
    report = clean(repo)
    assert (inner / "patch.js").exists() and exists(inner, only), report


# --- names and places ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["with space", "-dash", "tab\tname"])
def test_odd_worktree_names_are_judged_like_any_other(repo: Path, name: str) -> None:
    wt = old_worktree(repo, name, branch="worktree-odd")
    (wt / "work.txt").write_text("uncommitted\n")
    age(wt)
    report = clean(repo)
    assert (wt / "work.txt").exists(), report
    (wt / "work.txt").unlink()
    age(wt)
    report = clean(repo)
    assert not wt.exists(), report


def test_a_worktree_whose_git_file_points_at_another_worktrees_git_dir_is_kept(repo: Path) -> None:
    a = old_worktree(repo, "a")
    b = old_worktree(repo, "b")
    (b / "work.txt").write_text("b's uncommitted work\n")
    (a / ".git").write_text((b / ".git").read_text())
    age(a)
    age(b)
    report = clean(repo)
    assert (b / "work.txt").exists(), report


# --- cleanupPeriodDays of every shape ----------------------------------------------------


@pytest.mark.parametrize("value", [0, -5, "30", 1e308, True, None, [], "x"])
def test_an_odd_cleanup_period_never_takes_a_young_session_folder(sandbox: SandboxEnv, value: object) -> None:
    (sandbox.config / "settings.json").write_text(json.dumps({"cleanupPeriodDays": value}))
    folder = sandbox.claude_tmp / "-work-proj" / "0b0c3f4e-2a1d-4c5b-9e8f-1a2b3c4d5e6f"
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "scratchpad" / "plan.md").write_text("made an hour ago\n")
    set_mtime(folder, 3600)
    result = run_cli("clean", "--json")
    assert result.returncode == 0 and not result.stderr.strip().startswith("Traceback"), result.stderr
    assert (folder / "scratchpad" / "plan.md").exists(), result.stdout


def test_commits_left_behind_on_a_detached_head_keep_the_worktree(repo: Path) -> None:
    """An agent commits on a detached HEAD, then `git switch worktree-x` (git warns "you are
    leaving 1 commit behind"): only the worktree's own HEAD reflog still names the commit."""
    wt = old_worktree(repo, "detached")
    git(wt, "switch", "-q", "--detach")
    only = commit(wt, "idea.txt", "only here\n")
    git(wt, "switch", "-q", "worktree-detached")
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, only), report


def test_an_amended_commit_does_not_keep_the_worktree(repo: Path) -> None:
    """The bound of the case above: a commit amended on the branch was replaced on purpose
    (the branch's own reflog names the old one): the merged worktree goes."""
    wt = old_worktree(repo, "amended")
    commit(wt, "idea.txt", "first\n")
    (wt / "idea.txt").write_text("second\n")
    git(wt, "commit", "-q", "-a", "--amend", "-m", "work")
    git(repo, "merge", "-q", "--ff-only", "worktree-amended")
    age(wt)
    report = clean(repo)
    assert not wt.exists(), report


@pytest.mark.parametrize("kind", ["notes", "replace", "original"])
def test_a_nested_repository_whose_only_copy_of_work_is_a_note_or_a_backup_ref_is_kept(
        sandbox: SandboxEnv, repo: Path, tmp_path: Path, kind: str) -> None:
    """A clone in an old session folder: `git notes` written there, a `git replace`, or the
    `refs/original/*` backup of a `git filter-branch`: each the only copy."""
    origin = make_repo(tmp_path / "origin")
    folder = sandbox.claude_tmp / "-work-proj" / "1b0c3f4e-2a1d-4c5b-9e8f-1a2b3c4d5e6f"
    folder.mkdir(parents=True)
    clone = folder / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    head = git(clone, "rev-parse", "HEAD")
    if kind == "notes":
        git(clone, "notes", "add", "-m", "a review of an afternoon", head)
    elif kind == "replace":
        tree = git(clone, "rev-parse", "HEAD^{tree}")
        other = git(clone, "commit-tree", "-m", "the history rewritten by hand", tree)
        git(clone, "replace", head, other)
    else:
        other = git(clone, "commit-tree", "-m", "before the rewrite", git(clone, "rev-parse", "HEAD^{tree}"))
        git(clone, "update-ref", "refs/original/refs/heads/main", other)
    age(folder)
    report = clean()
    assert (clone / ".git").is_dir(), report


# --- session folders ---------------------------------------------------------------------


def old_session_folder(sandbox: SandboxEnv, session: str = "2b0c3f4e-2a1d-4c5b-9e8f-1a2b3c4d5e6f") -> Path:
    folder = sandbox.claude_tmp / "-work-proj" / session
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "scratchpad" / "build.log").write_text("a long job's log\n")
    age(folder)
    return folder


def test_a_session_folder_that_is_a_running_jobs_tmpdir_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """A background job Claude started with `TMPDIR=<the session's folder>` outlives its
    session: it works elsewhere and holds nothing open between its writes, but its next
    `mktemp` goes into the folder."""
    folder = old_session_folder(sandbox)
    started.append(subprocess.Popen(["sleep", "120"], cwd=tmp_path,
                                    env={**os.environ, "TMPDIR": str(folder / "scratchpad")}))
    report = clean()
    assert (folder / "scratchpad" / "build.log").exists(), report


def test_a_session_folder_a_shell_works_in_is_kept(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = old_session_folder(sandbox)
    started.append(subprocess.Popen(["sleep", "120"], cwd=folder / "scratchpad"))
    report = clean()
    assert (folder / "scratchpad" / "build.log").exists(), report


def test_a_dry_run_removes_nothing_and_writes_no_state(sandbox: SandboxEnv, repo: Path) -> None:
    folder = old_session_folder(sandbox)
    wt = old_worktree(repo, "dry")
    age(wt)
    result = run_cli("clean", "--dry-run", "--json", str(repo))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cleaned"]["worktrees"] == 1
    assert folder.is_dir() and wt.is_dir() and git(repo, "rev-parse", "worktree-dry")
    assert not (sandbox.state / "journal.jsonl").exists()


# --- WorktreeRemove of a folder that is gone -----------------------------------------------


def test_worktree_remove_of_a_checkout_moved_away_keeps_its_staged_work_and_head(
        sandbox: SandboxEnv, repo: Path, tmp_path: Path) -> None:
    """The user moved the checkout out of `.claude/worktrees` with `mv` to keep it (staged work,
    a commit on a detached HEAD). The old path is gone, so WorktreeRemove answers "gone"; git's
    entry for the worktree holds that index and HEAD, and must stay for `git worktree repair`."""
    from app.core import checkouts

    made = checkouts.create_checkout(str(repo), "moved", "s-1")
    wt = Path(made.path)
    git(wt, "switch", "-q", "--detach")
    only = commit(wt, "idea.txt", "only here\n")
    (wt / "staged.txt").write_text("staged, not committed\n")
    git(wt, "add", "staged.txt")
    kept = tmp_path / "kept-elsewhere"
    wt.rename(kept)
    done = worktree_remove(wt, repo)
    assert done.returncode == 0, done.stderr  # the folder is gone from where Claude made it
    git(kept, "worktree", "repair")
    assert git(kept, "rev-parse", "HEAD") == only
    assert git(kept, "diff", "--cached", "--name-only") == "staged.txt"


def test_worktree_remove_of_a_checkout_gone_without_work_lets_git_forget_it(repo: Path) -> None:
    """The bound: Claude's own sweep removed a clean, merged checkout: git forgets it."""
    from app.core import checkouts

    made = checkouts.create_checkout(str(repo), "swept", "s-1")
    import shutil

    shutil.rmtree(made.path)
    done = worktree_remove(Path(made.path), repo)
    assert done.returncode == 0, done.stderr
    assert made.path not in git(repo, "worktree", "list", "--porcelain")


def test_a_running_session_whose_file_names_no_id_keeps_the_session_folders(
        sandbox: SandboxEnv, live_pid: int) -> None:
    """A session that has run for weeks (its folder's own mtime is the day it began) and whose
    file names its process but no session id (a shape this version does not know): which
    folder is its own cannot be told, so none of them goes."""
    from app.core.sessions import proc_start_time

    folder = old_session_folder(sandbox)
    sandbox.write_session(str(live_pid), pid=live_pid, procStart=proc_start_time(live_pid), cwd="/work/proj",
                          session={"id": folder.name})
    report = clean()
    assert (folder / "scratchpad" / "build.log").exists(), report


def test_a_session_folder_of_a_session_that_ended_goes(sandbox: SandboxEnv) -> None:
    """The bound: the same folder, its session's process gone: removed."""
    folder = old_session_folder(sandbox)
    report = clean()
    assert not folder.exists() and report["cleaned"]["folders"] == 1, report  # type: ignore[index]


# --- the release of a session checkout ---------------------------------------------------------

SID = "3b0c3f4e-2a1d-4c5b-9e8f-1a2b3c4d5e6f"


def ended_checkout(repo: Path, name: str = "work") -> Path:
    from app.core import checkouts

    made = checkouts.create_checkout(str(repo), name, SID)
    checkouts.session_ended(SID, "prompt_input_exit")
    return Path(made.path)


def release(path: Path) -> dict[str, object]:
    result = run_cli("release", str(path), "--json")
    assert result.returncode in (0, 1), result.stderr
    assert not result.stderr.startswith("Traceback"), result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else {"stderr": result.stderr}


@pytest.mark.parametrize("declared", [".tmp/../build/..", "./.tmp", "build/../.tmp", ".TMP/..", "\u0000.tmp",
                                      "..", ".", "/", "~", "build/.git/..", "*"])
def test_no_declared_scratch_reaches_tmp_or_climbs_out(repo: Path, declared: str) -> None:
    checkout = ended_checkout(repo)
    (checkout / ".tmp").mkdir()
    (checkout / ".tmp" / "report.md").write_text("the session's report\n")
    (checkout / "notes.md").write_text("the user's notes, untracked\n")
    (checkout / ".claude").mkdir(exist_ok=True)
    (checkout / ".claude" / "claudetto.json").write_text(json.dumps({"scratch": [declared]}))
    done = release(checkout)
    assert (checkout / ".tmp" / "report.md").exists(), done
    assert (checkout / "notes.md").exists() and (checkout / "README.md").exists(), done
    assert (repo / "README.md").exists()


def test_a_release_keeps_a_nested_tmp_inside_a_regenerable_folder_of_a_subproject(repo: Path) -> None:
    """`.tmp/` survives every path: the default scratch walk never enters a `.tmp`, at any
    depth, and never deletes one inside another project folder of the checkout."""
    checkout = ended_checkout(repo)
    (checkout / "web" / ".tmp").mkdir(parents=True)
    (checkout / "web" / ".tmp" / "log.txt").write_text("keep\n")
    (checkout / "web" / "node_modules" / "dep").mkdir(parents=True)
    (checkout / "web" / "node_modules" / "dep" / "i.js").write_text("1\n")
    done = release(checkout)
    assert (checkout / "web" / ".tmp" / "log.txt").exists(), done
    assert not (checkout / "web" / "node_modules").exists(), done


def test_a_release_keeps_a_venvs_editable_clone_with_unpushed_work(repo: Path, tmp_path: Path) -> None:
    """`pip install -e git+...#egg=lib` clones into `.venv/src/lib`; the user fixed a bug there
    and committed it, never pushed: the only copy, inside a regenerable folder."""
    origin = make_repo(tmp_path / "lib-origin")
    checkout = ended_checkout(repo)
    clone = checkout / ".venv" / "src" / "lib"
    clone.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    only = commit(clone, "fix.py", "the fix\n")
    done = release(checkout)
    assert exists(clone, only), done


def test_a_deinited_submodules_unpushed_commit_in_the_worktrees_git_dir_keeps_it(repo: Path, tmp_path: Path) -> None:
    """A worktree's submodule keeps its git dir in the worktree's own git dir
    (`.git/worktrees/<id>/modules/<name>`), outside the folder. After `git submodule deinit`
    nothing inside the folder shows it, yet git forgetting the worktree deletes it."""
    lib = make_repo(tmp_path / "lib", files={"lib.c": "int x;\n"})
    allow = ("-c", "protocol.file.allow=always")
    git(repo, *allow, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "vendor lib")
    wt = old_worktree(repo, "deinit")
    git(wt, *allow, "submodule", "update", "-q", "--init")
    sub = wt / "vendor" / "lib"
    git(sub, "checkout", "-q", "-b", "fix")
    only = commit(sub, "lib.c", "int x = 1;\n")
    module = Path(git(sub, "rev-parse", "--absolute-git-dir"))
    assert not module.is_relative_to(wt)
    git(wt, "submodule", "deinit", "-q", "--force", "vendor/lib")
    assert git(wt, "status", "--porcelain") == ""
    age(wt)
    report = clean(repo)
    assert subprocess.run(["git", f"--git-dir={module}", "cat-file", "-e", only], check=False,
                          capture_output=True).returncode == 0, report


def test_a_deinited_submodule_with_nothing_unpushed_lets_the_worktree_go(repo: Path, tmp_path: Path) -> None:
    """The bound of the case above: the submodule's git dir holds only what its origin has."""
    lib = make_repo(tmp_path / "lib", files={"lib.c": "int x;\n"})
    allow = ("-c", "protocol.file.allow=always")
    git(repo, *allow, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "vendor lib")
    wt = old_worktree(repo, "deinit-clean")
    git(wt, *allow, "submodule", "update", "-q", "--init")
    git(wt, "submodule", "deinit", "-q", "--force", "vendor/lib")
    age(wt)
    report = clean(repo)
    assert not wt.exists(), report


def test_two_projects_with_one_slug_keep_their_folders_for_the_longer_period(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`/p/a-b` and `/p/a/b` share Claude's temp folder name `-p-a-b`. The first keeps its
    sessions a day, the other a year: a folder of that name may be the second's."""
    short, long_ = tmp_path / "p" / "a-b", tmp_path / "p" / "a" / "b"
    for project, days in ((short, 1), (long_, 365)):
        (project / ".claude").mkdir(parents=True)
        (project / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": days}))
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(short): {}, str(long_): {}}}))
    from app.core.paths import project_slug

    assert project_slug(short) == project_slug(long_)
    folder = sandbox.claude_tmp / project_slug(long_) / "4b0c3f4e-2a1d-4c5b-9e8f-1a2b3c4d5e6f"
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "scratchpad" / "plan.md").write_text("the plan\n")
    set_mtime(folder, 3 * DAY)
    report = clean()
    assert (folder / "scratchpad" / "plan.md").exists(), report


def test_a_session_folder_of_a_projects_checkout_keeps_the_projects_period(
        sandbox: SandboxEnv, repo: Path) -> None:
    """A session that ran in `<project>/.claude/worktrees/x` named its temp folder after the
    checkout; the project keeps its sessions a year (its own settings), the user's default is
    30 days."""
    (repo / ".claude").mkdir(exist_ok=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 365}))
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(repo): {}}}))
    wt = old_worktree(repo, "long")
    from app.core.paths import project_slug

    folder = sandbox.claude_tmp / project_slug(wt) / "5b0c3f4e-2a1d-4c5b-9e8f-1a2b3c4d5e6f"
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "scratchpad" / "plan.md").write_text("the plan\n")
    age(folder)
    report = clean()
    assert (folder / "scratchpad" / "plan.md").exists(), report


def test_a_worktree_whose_commits_were_squashed_by_a_soft_reset_goes(repo: Path) -> None:
    """`git reset --soft HEAD~2 && git commit`: ORIG_HEAD names the two old commits, HEAD holds
    the same tree in one: nothing is lost."""
    wt = old_worktree(repo, "squashed")
    commit(wt, "a.txt", "a\n")
    commit(wt, "b.txt", "b\n")
    git(wt, "reset", "-q", "--soft", "HEAD~2")
    git(wt, "commit", "-qm", "both")
    git(repo, "merge", "-q", "--ff-only", "worktree-squashed")
    age(wt)
    report = clean(repo)
    assert not wt.exists(), report


def test_a_sessions_folder_that_cannot_be_listed_keeps_the_session_folders(sandbox: SandboxEnv) -> None:
    """`sessions/` is there but cannot be listed (a link loop here; its permissions for a
    user): nobody knows which sessions run, so none of their folders goes."""
    folder = old_session_folder(sandbox)
    sandbox.sessions.symlink_to(sandbox.sessions)
    report = clean()
    assert (folder / "scratchpad" / "build.log").exists(), report


def test_a_locked_worktree_is_kept_by_worktree_remove(sandbox: SandboxEnv, repo: Path) -> None:
    from app.core import checkouts

    made = checkouts.create_checkout(str(repo), "locked-one", "s-1")
    git(repo, "worktree", "lock", "--reason", "on a trip", made.path)
    done = worktree_remove(Path(made.path), repo)
    assert done.returncode == 1 and done.stderr.decode().count("\n") == 1, done.stderr
    assert Path(made.path, "README.md").exists()


def test_a_stash_made_in_a_removed_worktree_survives(repo: Path) -> None:
    """`git stash` in the worktree: the stash is the repository's, not the worktree's."""
    wt = old_worktree(repo, "stashed")
    (wt / "README.md").write_text("an idea, stashed\n")
    git(wt, "stash", "-q")
    age(wt)
    clean(repo)
    assert "an idea, stashed" in git(repo, "stash", "show", "-p")


def test_a_worktree_whose_git_dir_is_gone_keeps_the_users_files(repo: Path) -> None:
    wt = old_worktree(repo, "orphan")
    (wt / "draft.md").write_text("a draft\n")
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    import shutil

    shutil.rmtree(admin)
    age(wt)
    report = clean(repo)
    assert (wt / "draft.md").exists(), report


def test_a_session_folder_holding_a_running_servers_socket_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """A server a session started listens on a unix socket in the session's folder (an ssh
    ControlMaster, a language server), bound from there by a relative name (a socket path is
    limited to 108 bytes), then works elsewhere: it holds no file there open, and the kernel's
    list of sockets (`/proc/net/unix`) names only `server.sock`."""
    import sys

    folder = old_session_folder(sandbox)
    sock = folder / "scratchpad" / "server.sock"
    server = subprocess.Popen([sys.executable, "-c", (
        "import os, socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind('server.sock'); s.listen();"
        "os.chdir(sys.argv[1]); print('ready', flush=True); time.sleep(120)"), str(tmp_path)],
        cwd=sock.parent, stdout=subprocess.PIPE)
    started.append(server)
    assert server.stdout is not None and server.stdout.readline() == b"ready\n"
    age(folder)
    report = clean()
    assert sock.exists(), report
