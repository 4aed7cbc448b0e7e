"""Red team, round sixteen: session checkouts (seed 002) and the worktree rule.

Driven with ordinary git in the checkout or the main one, a real process, then WorktreeRemove
through `python -P -m hooks` or the judgement itself.

Found: a checkout a running process works in (a shell `cd`-ed there, a dev server) was kept,
but WorktreeRemove told the user only `in_use (in_use)`; now the line says what keeps it. The
note SessionStart gives the model after a release listed the command of every lock file
present, whatever went: with `node_modules` kept (a dev server runs from it) and only `dist/`
deleted, it told the model to run `npm ci`, which deletes `node_modules` first; and a `.venv`
deleted beside a `requirements.txt` was to be refilled by `pip install -r`, into whatever
Python comes first. Now a lock file's command is given only when what it refills went, and a
venv is made again before `pip` installs into it (app/core/release_notes.py).

A merged, clean checkout the project's venv imported from (`pip install -e .` run in it) or
a command of the user's was linked into (`ln -s`, `npm link`) went with the cleanup; now it is
kept `in_use` (app/core/checkout_links.py). `claudetto release` of a checkout whose project is
on a drive not mounted said another release was running; and WorktreeRemove of a checkout a
session holds from elsewhere said that session was working inside it.

Held (no test pinned them): a checkout of a project whose `.git` is a file (a clone made with
`--separate-git-dir`, a submodule checked out in a superproject) keeps its commit; a linked
worktree of the same repository made inside a checkout, with a commit on its detached HEAD,
keeps the checkout.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import (
    SandboxEnv,
    claude_worktree,
    commit_file,
    git,
    judge_old_worktree,
    pushed_repo,
    run_cli,
    session_checkout,
    session_hook,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project pushed to its remote, ignoring build output."""
    return pushed_repo(tmp_path, {"README.md": "x\n", ".gitignore": "build/\ndist/\nnode_modules/\n"})


# --- what the user reads when a running process keeps the checkout -------------------------------


def test_worktree_remove_of_a_checkout_a_process_works_in_says_so(project: Path) -> None:
    """A shell (here `sleep`) started in the checkout: WorktreeRemove keeps it, and its one
    line says a running process works there, not only the reason's code."""
    tree = session_checkout(project, "busy")
    proc = subprocess.Popen(["sleep", "60"], cwd=tree)
    try:
        removed = session_hook("WorktreeRemove", project, worktree_path=str(tree))
    finally:
        proc.kill()
        proc.wait()
    line = removed.stderr.decode()
    assert removed.returncode == 1 and tree.is_dir()
    assert ": in_use (" in line and "in_use (in_use)" not in line and "running process" in line, line


# --- projects whose .git is a file ---------------------------------------------------------------


def test_a_checkout_of_a_project_cloned_with_a_separate_git_dir_keeps_its_commit(tmp_path: Path) -> None:
    """`git clone --separate-git-dir ~/gd/proj.git`: the project's `.git` is a file, its
    checkouts' entries live under that git dir."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    commit_file(seed, "README.md", "x\n")
    git(seed, "push", "-q", str(origin), "main")
    proj = tmp_path / "proj"
    (tmp_path / "gd").mkdir()
    git(tmp_path, "clone", "-q", "--separate-git-dir", str(tmp_path / "gd" / "proj.git"), str(origin), str(proj))
    assert (proj / ".git").is_file()
    tree = session_checkout(proj, "sep")
    sha = commit_file(tree, "only.py", "the only copy\n")

    removed = session_hook("WorktreeRemove", proj, worktree_path=str(tree))
    assert removed.returncode == 1 and b"unmerged" in removed.stderr, removed.stderr
    assert git(tree, "rev-parse", "HEAD") == sha


def test_a_checkout_of_a_submodule_checked_out_in_a_superproject_keeps_its_commit(
        tmp_path: Path, project: Path) -> None:
    """Claude started in `super/lib`, a submodule (its `.git` a file naming
    `super/.git/modules/lib`): its checkout is a worktree of the submodule's repository."""
    sup = tmp_path / "super"
    git(tmp_path, "init", "-q", "-b", "main", str(sup))
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(project), "lib")
    git(sup, "commit", "-qm", "lib")
    lib = sup / "lib"
    tree = session_checkout(lib, "sub")
    assert tree.parent.parent.parent == lib
    sha = commit_file(tree, "only.py", "the only copy\n")

    removed = session_hook("WorktreeRemove", lib, worktree_path=str(tree))
    assert removed.returncode == 1 and b"unmerged" in removed.stderr, removed.stderr
    assert git(tree, "rev-parse", "HEAD") == sha


# --- a worktree of the same repository inside a checkout -----------------------------------------


def test_a_worktree_of_the_same_repository_made_in_a_checkouts_node_modules_keeps_its_detached_commit(
        project: Path) -> None:
    """`git worktree add --detach node_modules/review HEAD` (an ignored folder: `git status`
    of the checkout is clean), a commit there: only the inner worktree's HEAD holds it, and
    the outer folder's removal, or its release, would take it."""
    tree = session_checkout(project, "outer")
    inner = tree / "node_modules" / "review"
    git(project, "worktree", "add", "-q", "--detach", str(inner), "HEAD")
    sha = commit_file(inner, "review.py", "the only copy\n")

    from app.core.release import release_checkout
    from app.core.unique_work import unique_work

    done = release_checkout(str(tree), session="s1")
    assert done.status == "released" and git(inner, "rev-parse", "HEAD") == sha, done
    assert unique_work(tree) == "unmerged"


# --- the note SessionStart gives after a release ------------------------------------------------


def _last_note(tree: Path) -> str:
    from app.core import checkouts
    from app.core.release_notes import reinstall_note

    return reinstall_note(str(tree), checkouts.registry()[str(tree)]["last_release"])


def test_the_note_never_tells_to_reinstall_node_modules_the_release_kept(project: Path) -> None:
    """A dev server runs from `node_modules` (kept `in_use`), `dist/` goes: `npm ci` would
    delete `node_modules` under that server, and nothing of it needs reinstalling."""
    from app.core.release import release_checkout

    tree = session_checkout(project, "web")
    (tree / "package-lock.json").write_text("{}\n")
    for folder in ("node_modules/vite", "dist"):
        (tree / folder).mkdir(parents=True)
        (tree / folder / "index.js").write_text("x\n")
    server = subprocess.Popen(["sleep", "60"], cwd=tree / "node_modules" / "vite")
    try:
        done = release_checkout(str(tree), session="s1")
    finally:
        server.kill()
        server.wait()
    assert done.status == "released" and (tree / "node_modules" / "vite").is_dir() and not (tree / "dist").exists()

    note = _last_note(tree)
    assert "dist" in note and "npm ci" not in note, note


def test_the_note_makes_a_deleted_venv_again_before_pip_installs_into_it(project: Path) -> None:
    """`.venv` went beside `requirements.txt` and `package-lock.json` (node_modules stayed
    absent): the venv is made again first, and npm is not named."""
    from app.core.release import release_checkout

    tree = session_checkout(project, "py")
    (tree / "requirements.txt").write_text("pytest\n")
    (tree / "package-lock.json").write_text("{}\n")
    (tree / ".venv" / "bin").mkdir(parents=True)
    (tree / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert release_checkout(str(tree), session="s1").status == "released"

    note = _last_note(tree)
    assert "- `python3 -m venv .venv && .venv/bin/pip install -r requirements.txt` (requirements.txt)" in note, note
    assert "npm ci" not in note, note



def test_the_note_never_tells_to_reinstall_node_modules_when_only_its_cache_was_declared(project: Path) -> None:
    """`"scratch": ["node_modules/.cache"]` (the project keeps its installs, drops the
    bundler's cache): `npm ci` would delete the `node_modules` the list kept."""
    from app.core.release import release_checkout

    tree = session_checkout(project, "cache")
    (project / ".claude" / "claudetto.json").write_text('{"scratch": ["node_modules/.cache"]}\n')
    (tree / "package-lock.json").write_text("{}\n")
    (tree / "node_modules" / ".cache" / "vite").mkdir(parents=True)
    (tree / "node_modules" / ".cache" / "vite" / "deps.json").write_text("{}\n")
    (tree / "node_modules" / "vite").mkdir()
    assert release_checkout(str(tree), session="s1").status == "released"
    assert (tree / "node_modules" / "vite").is_dir() and not (tree / "node_modules" / ".cache").exists()

    note = _last_note(tree)
    assert "node_modules/.cache" in note and "npm ci" not in note, note

# --- what outside a checkout still runs from it --------------------------------------------------


def test_an_editable_install_of_a_checkout_into_the_projects_venv_keeps_it(project: Path) -> None:
    """`pip install -e .` run in the checkout with the main checkout's venv active (Claude was
    started there): the project's `.venv` imports the package from the checkout's `src/`, and
    removing the merged, clean checkout breaks every import of it in the project."""
    tree = claude_worktree(project, "lib")
    (tree / "src" / "mypkg").mkdir(parents=True)
    site = project / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable__.mypkg-0.1.pth").write_text(f"{tree}/src\n")
    assert judge_old_worktree(tree, project) == ("keep", "in_use")


def test_a_command_of_the_users_linked_into_a_checkout_keeps_it(
        sandbox: SandboxEnv, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ln -s "$PWD/bin/deploy" ~/.local/bin/deploy` (or `npm link`) run in the checkout: the
    user's command runs from it. The link gone, the checkout goes."""
    from app.core import checkout_links

    monkeypatch.setattr(checkout_links, "READING_S", 0.0)  # each judgement reads the places anew
    tree = claude_worktree(project, "tool")
    (tree / "bin").mkdir()
    commit_file(tree, "bin/deploy", "#!/bin/sh\n")
    git(project, "merge", "-q", "--ff-only", "worktree-tool")
    bin_dir = sandbox.home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "deploy").symlink_to(tree / "bin" / "deploy")
    assert judge_old_worktree(tree, project) == ("keep", "in_use")
    (bin_dir / "deploy").unlink()
    assert judge_old_worktree(tree, project) == ("remove", "age")


# --- claudetto release of a checkout whose drive is not mounted ---------------------------------


def test_claudetto_release_of_a_checkout_whose_project_is_away_says_so_and_keeps_its_record(
        project: Path, tmp_path: Path) -> None:
    """The project lives on a drive not mounted now (here: moved away): `claudetto release`
    said "another release of it is running; try again when it ends", which no release was,
    and the user waited for nothing. The record stays for when the drive is back."""
    from app.core import checkouts

    tree = session_checkout(project, "away")
    project.rename(tmp_path / "unmounted")

    done = run_cli("release", str(tree))
    assert done.returncode == 1
    assert "another release" not in done.stderr and "not there" in done.stderr, done.stderr
    assert str(tree) in checkouts.registry()



def test_worktree_remove_of_a_checkout_a_session_holds_from_elsewhere_never_says_it_works_inside(
        project: Path, sandbox: SandboxEnv) -> None:
    """Session s1 made the checkout and runs on with its cwd in the main checkout (it may
    resume into the checkout): s2's WorktreeRemove keeps it `live`, and its line said
    "another live session is working inside it", which no session was."""
    from tests.support import run_hook

    tree = session_checkout(project, "held")
    claude = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session("s1", pid=claude.pid, sessionId="s1", cwd=str(project))
        removed = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s2", "cwd": str(project),
                            "worktree_path": str(tree)}, cwd=project)
    finally:
        claude.kill()
        claude.wait()
    line = removed.stderr.decode()
    assert removed.returncode == 1 and tree.is_dir() and ": live (" in line, line
    assert "working inside it" not in line and "holds it" in line, line
