"""THE unique-work rule on real clones, worktrees, bare repositories and submodules: a folder
that holds git work found nowhere else is kept, and one that holds none may go."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from app.core import scanner, unique_work
from app.core.unique_work import looks_secret
from tests.support import SandboxEnv, git, make_repo

GITIGNORE = ".env\nbuild/\nnode_modules/\n.venv/\nsecrets/\n"
SUB = ("-c", "protocol.file.allow=always")


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """The upstream every clone comes from: two commits on main, a .gitignore."""
    repo = make_repo(tmp_path / "origin", files={"README.md": "hello\n", ".gitignore": GITIGNORE})
    (repo / "lib.py").write_text("x = 1\n")
    git(repo, "add", "lib.py")
    git(repo, "commit", "-q", "-m", "lib")
    return repo


def clone(origin: Path, where: Path) -> Path:
    where.parent.mkdir(parents=True, exist_ok=True)
    git(where.parent, "clone", "-q", str(origin), str(where))
    return where


def commit(repo: Path, name: str, text: str = "work\n") -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


def judge(path: Path, **kwargs: object) -> str | None:
    """The answer with a walk of its own and with the scanner's list: both must agree."""
    walked = unique_work.unique_work(path, **kwargs)  # type: ignore[arg-type]
    listed = unique_work.unique_work(path, scanner.scan(path).repos, **kwargs)  # type: ignore[arg-type]
    assert walked == listed
    return walked


# --- a clone in a temp folder ----------------------------------------------------------------

def test_a_plain_clone_with_nothing_new_may_go(origin: Path, sandbox: SandboxEnv) -> None:
    tmp = sandbox.user_tmp / "tmp.Clone1"
    clone(origin, tmp / "proj")
    assert judge(tmp) is None
    assert judge(tmp / "proj") is None


def test_a_clone_with_a_changed_or_untracked_file_is_dirty(origin: Path, sandbox: SandboxEnv) -> None:
    changed = clone(origin, sandbox.user_tmp / "a" / "proj")
    (changed / "README.md").write_text("edited\n")
    untracked = clone(origin, sandbox.user_tmp / "b" / "proj")
    (untracked / "notes.txt").write_text("mine\n")
    staged = clone(origin, sandbox.user_tmp / "c" / "proj")
    (staged / "lib.py").write_text("x = 2\n")
    git(staged, "add", "lib.py")
    assert judge(sandbox.user_tmp / "a") == "dirty"
    assert judge(sandbox.user_tmp / "b") == "dirty"
    assert judge(sandbox.user_tmp / "c") == "dirty"


def test_an_ignored_env_anywhere_is_dirty_even_in_a_regenerable_folder(origin: Path, sandbox: SandboxEnv) -> None:
    top = clone(origin, sandbox.user_tmp / "env" / "proj")
    (top / ".env").write_text("TOKEN=1\n")
    assert git(top, "status", "--porcelain") == ""  # ignored: invisible to a plain status
    assert judge(top) == "dirty"

    build = clone(origin, sandbox.user_tmp / "build" / "proj")
    (build / "build" / "out").mkdir(parents=True)
    (build / "build" / "out" / "app.bin").write_bytes(b"\0" * 100)
    assert judge(build) is None  # generated content only
    (build / "build" / ".env").write_text("TOKEN=1\n")
    assert judge(build) == "dirty"


@pytest.mark.parametrize("name", ["server.pem", "tls.key", "id_ed25519", "credentials.json",
                                  "settings.local.json", ".env.production", ".ENV"])
def test_each_secret_pattern_in_a_regenerable_folder_is_dirty(origin: Path, sandbox: SandboxEnv, name: str) -> None:
    repo = clone(origin, sandbox.user_tmp / "s" / "proj")
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / name).write_text("secret\n")
    assert judge(repo) == "dirty"


def test_regenerable_content_is_clean_and_installed_packages_hold_no_secrets(
        origin: Path, sandbox: SandboxEnv) -> None:
    repo = clone(origin, sandbox.user_tmp / "r" / "proj")
    pkg = repo / "node_modules" / "tls-lib" / "test"
    pkg.mkdir(parents=True)
    (pkg / "server.key").write_text("a test key shipped by the package\n")
    (repo / "node_modules" / "tls-lib" / "index.js").write_text("x\n")
    certifi = repo / ".venv" / "lib" / "python3.11" / "site-packages" / "certifi"
    certifi.mkdir(parents=True)
    (certifi / "cacert.pem").write_text("public CA bundle\n")
    (repo / "src" / "__pycache__").mkdir(parents=True)
    (repo / "src" / "__pycache__" / "m.pyc").write_bytes(b"\0")
    git(repo, "add", "-f", "src/__pycache__/m.pyc")  # tracked files are in git: nothing to lose
    git(repo, "commit", "-q", "-m", "pyc")
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/pyc")
    git(repo, "fetch", "-q")
    assert judge(repo) is None
    (repo / "node_modules" / ".env").write_text("TOKEN=1\n")  # the project's own, not a package's
    assert judge(repo) == "dirty"


def test_an_ignored_file_outside_the_regenerable_folders_is_dirty(origin: Path, sandbox: SandboxEnv) -> None:
    repo = clone(origin, sandbox.user_tmp / "i" / "proj")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "notes.txt").write_text("ignored but mine\n")
    assert judge(repo) == "dirty"


def test_an_edit_hidden_by_skip_worktree_is_dirty(origin: Path, sandbox: SandboxEnv) -> None:
    repo = clone(origin, sandbox.user_tmp / "h" / "proj")
    assert judge(repo) is None
    git(repo, "update-index", "--skip-worktree", "lib.py")
    (repo / "lib.py").write_text("x = 3\n")
    assert git(repo, "status", "--porcelain") == ""
    assert judge(repo) == "dirty"  # present and flagged: an edit there cannot be seen, so keep


def test_a_sparse_checkout_is_not_dirty(origin: Path, sandbox: SandboxEnv) -> None:
    repo = clone(origin, sandbox.user_tmp / "sp" / "proj")
    git(repo, "sparse-checkout", "set", "--no-cone", "/README.md", "/.gitignore")
    assert not (repo / "lib.py").exists()
    assert judge(repo) is None


def test_a_local_commit_or_a_stash_is_unmerged(origin: Path, sandbox: SandboxEnv) -> None:
    ahead = clone(origin, sandbox.user_tmp / "ahead" / "proj")
    commit(ahead, "new.txt")
    assert judge(ahead) == "unmerged"
    git(ahead, "push", "-q", "origin", "main:refs/heads/saved")
    git(ahead, "fetch", "-q")
    assert judge(ahead) is None  # the commit is on origin/saved now

    stashed = clone(origin, sandbox.user_tmp / "stash" / "proj")
    (stashed / "README.md").write_text("half done\n")
    git(stashed, "stash", "-q")
    assert git(stashed, "status", "--porcelain") == ""
    assert judge(stashed) == "unmerged"

    branch = clone(origin, sandbox.user_tmp / "branch" / "proj")
    git(branch, "checkout", "-q", "-b", "side")
    commit(branch, "side.txt")
    git(branch, "checkout", "-q", "main")
    assert judge(branch) == "unmerged"  # the commit is on a local branch only

    detached = clone(origin, sandbox.user_tmp / "detached" / "proj")
    git(detached, "checkout", "-q", "--detach")
    commit(detached, "d.txt")
    assert judge(detached) == "unmerged"  # on no branch at all: HEAD holds it


def test_a_fetched_tag_on_no_remote_branch_keeps_nothing(origin: Path, sandbox: SandboxEnv,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A tag the clone fetched names a commit made before the clone (here a day before)."""
    git(origin, "checkout", "-q", "-b", "release")
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{int(time.time()) - 86_400} +0000")
    commit(origin, "release.txt")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    git(origin, "tag", "v1")
    git(origin, "checkout", "-q", "main")
    git(origin, "branch", "-q", "-D", "release")  # only the tag holds that commit upstream
    repo = clone(origin, sandbox.user_tmp / "t" / "proj")
    assert "v1" in git(repo, "tag")
    assert judge(repo) is None


def test_git_init_with_one_commit_and_no_remote_is_unmerged(sandbox: SandboxEnv) -> None:
    repo = make_repo(sandbox.user_tmp / "scratch" / "proj")
    assert judge(sandbox.user_tmp / "scratch") == "unmerged"
    empty = sandbox.user_tmp / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert judge(empty) is None  # no commit, no file: nothing to lose
    (empty / "draft.md").write_text("draft\n")
    assert judge(empty) == "dirty"
    assert repo.exists()


def test_a_folder_without_a_repository_holds_no_git_work(origin: Path, sandbox: SandboxEnv) -> None:
    plain = sandbox.user_tmp / "plain"
    (plain / "sub").mkdir(parents=True)
    (plain / "sub" / "a.txt").write_text("a\n")
    assert judge(plain) is None
    # inside a dirty repository, a folder with no `.git` of its own never makes git climb up
    parent = clone(origin, sandbox.user_tmp / "parent" / "proj")
    (parent / "dirty.txt").write_text("the parent's work\n")
    (parent / "out").mkdir()
    (parent / "out" / "x.txt").write_text("x\n")
    assert judge(parent / "out") is None
    assert judge(sandbox.user_tmp / "nope") is None
    assert judge(plain / "sub" / "a.txt") is None


def test_a_symlink_to_a_repository_is_not_followed(origin: Path, sandbox: SandboxEnv, tmp_path: Path) -> None:
    elsewhere = make_repo(tmp_path / "elsewhere")
    (elsewhere / "wip.txt").write_text("wip\n")  # dirty and unmerged: it must not matter here
    holder = sandbox.user_tmp / "holder"
    holder.mkdir()
    (holder / "link").symlink_to(elsewhere)
    assert judge(holder) is None
    assert judge(holder / "link") is None
    assert unique_work.unique_work(holder, [str(holder / "link")]) is None


def test_a_git_symlink_or_a_broken_git_file_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    real = make_repo(tmp_path / "real")
    linked = sandbox.user_tmp / "linked"
    linked.mkdir()
    (linked / ".git").symlink_to(real / ".git")
    broken = sandbox.user_tmp / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /nonexistent/.git/worktrees/x\n")
    garbage = sandbox.user_tmp / "garbage"
    garbage.mkdir()
    (garbage / ".git").write_text("not a pointer\n")
    assert judge(linked) == "dirty"
    assert judge(broken) == "dirty"
    assert judge(garbage) == "dirty"


# --- worktrees and the repositories they belong to ---------------------------------------------

def test_a_clone_whose_linked_worktree_lives_elsewhere_is_unmerged(origin: Path, sandbox: SandboxEnv) -> None:
    tmp = sandbox.user_tmp / "tmp.Wt1"
    repo = clone(origin, tmp / "proj")
    outside = sandbox.user_tmp / "beside"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(outside))
    assert judge(tmp) == "unmerged"  # clean, but the worktree beside it needs its objects
    commit(outside, "f.txt")
    assert judge(tmp) == "unmerged"
    shutil.rmtree(outside)
    assert judge(tmp) == "unmerged"  # its branch still holds that commit
    git(repo, "worktree", "prune")
    git(repo, "branch", "-q", "-D", "feature")
    assert judge(tmp) is None  # the worktree is gone: nobody needs the objects any more


def test_a_locked_worktree_elsewhere_counts_even_when_its_folder_is_missing(
        origin: Path, sandbox: SandboxEnv) -> None:
    tmp = sandbox.user_tmp / "tmp.Wt2"
    repo = clone(origin, tmp / "proj")
    usb = sandbox.root / "usb" / "wt"
    git(repo, "worktree", "add", "-q", "--detach", str(usb))
    git(repo, "worktree", "lock", str(usb))
    shutil.rmtree(usb)  # as if on a drive not mounted now
    assert judge(tmp) == "unmerged"


def test_a_clean_worktree_inside_the_clone_folder_may_go(origin: Path, sandbox: SandboxEnv) -> None:
    tmp = sandbox.user_tmp / "tmp.Wt3"
    repo = clone(origin, tmp / "proj")
    inside = tmp / "wt"
    git(repo, "worktree", "add", "-q", "-b", "inside", str(inside))
    assert judge(tmp) is None
    (inside / "todo.txt").write_text("todo\n")
    assert judge(tmp) == "dirty"
    git(inside, "add", "todo.txt")
    git(inside, "commit", "-q", "-m", "todo")
    assert judge(tmp) == "unmerged"


def test_a_worktree_of_another_repository_inside_a_temp_folder(origin: Path, sandbox: SandboxEnv,
                                                               tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project")
    tmp = sandbox.user_tmp / "tmp.Other"
    tmp.mkdir()
    wt = tmp / "deep" / "wt"
    git(project, "worktree", "add", "-q", "-b", "w", str(wt))
    assert judge(tmp) is None  # clean, its commit is on main too
    (wt / "README.md").write_text("changed\n")
    assert judge(tmp) == "dirty"
    git(wt, "commit", "-q", "-am", "w")
    assert judge(tmp) == "unmerged"  # a commit only its own branch holds


def test_a_locked_worktree_inside_is_not_removed(sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project")
    tmp = sandbox.user_tmp / "tmp.Lock"
    tmp.mkdir()
    wt = tmp / "wt"
    git(project, "worktree", "add", "-q", "-b", "held", str(wt))
    git(project, "worktree", "lock", str(wt))
    assert judge(tmp) == "not_removed"


def test_a_bare_clone_with_a_worktree_elsewhere_is_unmerged(origin: Path, sandbox: SandboxEnv) -> None:
    tmp = sandbox.user_tmp / "tmp.Bare"
    tmp.mkdir()
    bare = tmp / "proj.git"
    git(tmp, "clone", "-q", "--bare", str(origin), str(bare))
    wt = sandbox.user_tmp / "bare-wt"
    git(bare, "worktree", "add", "-q", "-b", "work", str(wt))
    assert scanner.scan(tmp).repos == (str(bare.resolve()),)
    assert judge(tmp) == "unmerged"
    assert judge(bare) == "unmerged"
    empty = sandbox.user_tmp / "empty.git"
    git(sandbox.user_tmp, "init", "-q", "--bare", str(empty))
    assert judge(empty) is None  # no commit at all


def test_a_bare_repository_is_the_only_copy_of_what_was_pushed_into_it(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    bare = sandbox.user_tmp / "shared.git"
    git(sandbox.user_tmp, "init", "-q", "--bare", str(bare))
    work = make_repo(tmp_path / "work")
    git(work, "push", "-q", str(bare), "main")
    assert judge(bare) == "unmerged"


def test_submodules_are_judged_as_repositories(origin: Path, sandbox: SandboxEnv, tmp_path: Path) -> None:
    lib = make_repo(tmp_path / "lib")
    git(origin, *SUB, "submodule", "add", "-q", str(lib), "lib")
    git(origin, "commit", "-q", "-m", "submodule")
    tmp = sandbox.user_tmp / "tmp.Sub"
    repo = clone(origin, tmp / "proj")
    git(repo, *SUB, "submodule", "update", "--init", "-q")
    assert (repo / "lib" / ".git").is_file()
    assert judge(tmp) is None
    git(repo / "lib", "checkout", "-q", "-b", "local")
    commit(repo / "lib", "patch.txt")
    git(repo, "add", "lib")
    git(repo, "commit", "-q", "-m", "bump")
    git(repo, "push", "-q", "origin", "main:refs/heads/bump")
    git(repo, "fetch", "-q")
    assert git(repo, "status", "--porcelain") == ""
    assert judge(tmp) == "unmerged"  # the submodule's commit is in no remote of its own


def test_a_worktree_moved_aside_is_judged_where_it_now_is(sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project", files={"README.md": "x\n", ".gitignore": ".env\n"})
    wt = project / ".claude" / "worktrees" / "w"
    git(project, "worktree", "add", "-q", "-b", "worktree-w", str(wt))
    relative = project / ".claude" / "worktrees" / "rel"
    git(project, "worktree", "add", "-q", "-b", "worktree-rel", str(relative))
    (relative / ".git").write_text("gitdir: ../../../.git/worktrees/rel\n")  # worktree.useRelativePaths
    assert git(relative, "status", "--porcelain") == ""
    trash = sandbox.state / "trash"
    trash.mkdir(parents=True)
    for folder in (wt, relative):
        repos = scanner.scan(folder).repos  # as measured before the move
        assert repos == (str(folder.resolve()),)
        moved = trash / f"slot-{folder.name}"
        os.rename(folder, moved)
        assert unique_work.unique_work(moved, original=folder) is None
        (moved / ".env").write_text("written after the judgement\n")
        assert unique_work.unique_work(moved, original=folder) == "dirty"
        assert unique_work.unique_work(moved, repos, original=folder) == "dirty"
    # without the original spelling a relative pointer names nothing: when unsure, keep
    (trash / "slot-rel" / ".env").unlink()
    assert unique_work.unique_work(trash / "slot-rel") == "dirty"
    assert unique_work.unique_work(trash / "slot-rel", original=relative) is None


def test_a_moved_clone_whose_worktree_was_inside_it(origin: Path, sandbox: SandboxEnv) -> None:
    tmp = sandbox.user_tmp / "tmp.Move"
    repo = clone(origin, tmp / "proj")
    git(repo, "worktree", "add", "-q", "-b", "in", str(tmp / "wt"))
    moved = sandbox.state / "slot"
    sandbox.state.mkdir(parents=True, exist_ok=True)
    os.rename(tmp, moved)
    assert unique_work.unique_work(moved, original=tmp) is None
    (moved / "wt" / "x.txt").write_text("x\n")
    assert unique_work.unique_work(moved, original=tmp) == "dirty"


# --- git is asked safely -------------------------------------------------------------------------

def test_no_fsmonitor_hook_runs_and_the_environment_cannot_redirect_git(
        origin: Path, sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = clone(origin, sandbox.user_tmp / "f" / "proj")
    marker = tmp_path / "hook-ran"
    script = tmp_path / "fsmonitor.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    git(repo, "config", "core.fsmonitor", str(script))
    hooks = repo / ".git" / "hooks"
    for name in ("post-index-change", "reference-transaction", "post-checkout"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / name).chmod(0o755)
    other = make_repo(tmp_path / "other")
    (other / "dirt.txt").write_text("dirt\n")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    assert unique_work.unique_work(repo) is None
    (repo / "README.md").write_text("edited\n")
    assert unique_work.unique_work(repo) == "dirty"
    assert not marker.exists()


def test_looks_secret() -> None:
    for name in (".env", ".env.local", ".ENV.prod", "server.pem", "tls.KEY", "id_rsa", "id_ed25519.pub",
                 "my_id_rsa", "work_rsa", "old_dsa", "credentials", "credentials.json", "settings.local.json", "app.local.yaml"):
        assert looks_secret(name), name
    for name in ("env", "readme.md", "keys.txt", "pem", "rsa.txt", "my_id", "local.json", "x.local",
                 "mycredentials", "main.py", "environment.yml"):
        assert not looks_secret(name), name


def test_repositories_listed_for_another_place_are_found_by_a_walk(origin: Path, sandbox: SandboxEnv) -> None:
    tmp = sandbox.user_tmp / "tmp.Spelled"
    repo = clone(origin, tmp / "proj")
    commit(repo, "only-here.txt")
    listed = scanner.scan(tmp).repos
    moved = sandbox.state / "slot"
    sandbox.state.mkdir(parents=True, exist_ok=True)
    os.rename(tmp, moved)
    # the list names the folder where it was; without `original` it cannot be mapped
    assert unique_work.unique_work(moved, listed) == "unmerged"
    assert unique_work.unique_work(moved, listed, original=tmp) == "unmerged"
    assert unique_work.unique_work(moved, ()) is None  # an empty list is taken at its word


@pytest.mark.parametrize("branch", ["worktree-agent-a1b2c3d", "feature/login", "v1.0"])
def test_a_worktree_is_judged_against_every_branch_but_its_own(tmp_path: Path, branch: str) -> None:
    # Its own branch is read from its HEAD file (no git process): a commit only there is
    # unmerged, also when a tag has the branch's name (git's short name would be
    # `heads/<name>` then, which excludes nothing); detached, git is asked as before.
    repo = make_repo(tmp_path / "repo")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", branch, str(wt))
    git(repo, "tag", branch)
    located = unique_work.locate(str(wt))
    assert located is not None and located.kind == "worktree"
    assert unique_work.worktree_unmerged(located) is False  # its commit is main's too
    commit(wt, "only-here.txt")
    assert unique_work.worktree_unmerged(located) is True
    assert unique_work.unique_work(str(wt)) == "unmerged"
    git(wt, "checkout", "-q", "--detach")
    assert unique_work.worktree_unmerged(located) is False  # detached: its old branch holds it
    git(repo, "branch", "-q", "-D", branch)
    assert unique_work.worktree_unmerged(located) is True  # on no branch at all now
    git(repo, "branch", "-q", "keep-it", git(wt, "rev-parse", "HEAD"))
    assert unique_work.worktree_unmerged(located) is False  # another branch holds it
