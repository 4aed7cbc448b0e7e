"""Red team, round eleven: session checkouts and the worktree rule both ways.

The miss: a project that never listed its build output in `.gitignore` (a `python3.12 -m venv
.venv` writes no `.gitignore` into it; an `npm install` in a repository without one) has
node_modules, .venv or build untracked rather than ignored, and seed 000 says the files in
those folders do not count: such an old, merged worktree goes, through the session-start
cleanup as through `claudetto clean`. The losses the relaxed rule must not open (a new file
inside a folder named `build` that holds tracked files, a secret, a repository of its own or
another system's working copy inside an untracked node_modules, a node_modules that is a link
to the user's data), and the git states tried this round: a worktree whose own config points
`core.worktree` elsewhere (its `git status` says clean: held), a branch whose remote was
removed (held), and a branch whose server copy is deleted after the worktree went (its local
branch was deleted as "merged into its upstream", and `git fetch --prune` then dropped the
last ref: now the branch stays). The plain `--worktree` route end to end, released then
cleaned, with its registry record gone once the cleanup removed the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from app.core import paths, worktrees
from tests.hooks import test_checkouts
from tests.hooks.test_checkouts import Claude, registry, released, wait_for
from tests.support import SandboxEnv, git, make_repo, pushed_repo, run_cli, run_hook, set_mtime

claudes = test_checkouts.claudes  # a real process standing in for Claude, its sessions file naming it

OLD = 40 * 86_400
PERIOD = 30 * 86_400


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project pushed to its remote, with no `.gitignore` at all."""
    return pushed_repo(tmp_path, {"README.md": "x\n"})


def worktree(proj: Path, name: str, *, detach: bool = False) -> Path:
    path = proj / ".claude" / "worktrees" / name
    git(proj, "worktree", "add", "-q", *(["--detach"] if detach else ["-b", f"worktree-{name}"]), str(path))
    return path


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def build_output(tree: Path) -> None:
    """What `npm install`, `python3.12 -m venv .venv` and a build leave, none of it ignored."""
    write(tree / "node_modules" / "pkg" / "index.js")
    os.symlink("../pkg/index.js", tree / "node_modules" / "pkg" / "link.js")
    write(tree / ".venv" / "pyvenv.cfg", "home = /usr/bin\n")
    write(tree / ".venv" / "lib" / "python3.12" / "site-packages" / "m.py")
    write(tree / "build" / "out.o")
    write(tree / "web" / "dist" / "bundle.js")


def judge(tree: Path, proj: Path) -> tuple[str, str]:
    verdict = worktrees.judge_worktree(tree, proj, live_cwds=[], period_s=PERIOD)
    return verdict.action, verdict.reason


def kept_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("WORKTREES_KEPT ")]


# --- the miss: untracked build output is build output --------------------------------------


def test_the_session_start_cleanup_removes_an_old_merged_worktree_holding_untracked_build_output(
        project: Path, sandbox: SandboxEnv) -> None:
    plain = worktree(project, "plain")
    build_output(plain)
    agent = worktree(project, "agent-a1b2c3d", detach=True)  # a subagent's, on main's commit
    write(agent / "node_modules" / "dep" / "i.js")
    for tree in (plain, agent):
        set_mtime(tree, OLD)
    assert judge(plain, project) == ("remove", "age")
    sid = str(uuid.uuid4())
    done = run_hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(project), "source": "startup",
                     "transcript_path": str(sandbox.config / "projects" / "x.jsonl")}, cwd=project)
    assert (done.returncode, done.stderr) == (0, b"")
    log = paths.session_log(str(project), sid)
    end = time.monotonic() + 30
    while time.monotonic() < end and not (log.exists() and "UNKNOWN_KEPT" in log.read_text()):
        time.sleep(0.05)
    text = log.read_text()
    assert "worktrees=2" in text and "WORKTREES_KEPT" not in text, text
    assert not plain.exists() and not agent.exists()
    assert "worktree-plain" not in git(project, "branch", "--list")


def test_untracked_output_keeps_nothing_but_what_it_may_hide_still_keeps_each_named(
        project: Path, sandbox: SandboxEnv) -> None:
    """One `claudetto clean`: the plain ones go (node_modules a link to the user's data takes
    the link only); a new file in a folder named `build` that holds tracked files, a secret,
    a repository with its own commit and a Mercurial working copy inside untracked output,
    and an untracked folder holding notes beside its node_modules each keep theirs."""
    data = write(sandbox.home / "data" / "thesis.tex", "the only copy\n").parent
    trees = {name: worktree(project, name) for name in ("plain", "linked", "source", "secret", "nested", "hg", "notes")}
    build_output(trees["plain"])
    os.symlink(data, trees["linked"] / "node_modules")
    write(trees["source"] / "build" / "Makefile", "all:\n")
    git(trees["source"], "add", "build/Makefile")
    git(trees["source"], "commit", "-qm", "build script")
    git(trees["source"], "push", "-q", "origin", "worktree-source")
    write(trees["source"] / "build" / "gen.sh", "echo generated\n")  # new source beside it
    write(trees["secret"] / "node_modules" / ".env", "TOKEN=abc\n")
    inner = make_repo(trees["nested"] / "node_modules" / "lib", files={"lib.js": "1\n"})
    write(inner / "fix.js", "patched\n")
    git(inner, "add", "fix.js")
    git(inner, "commit", "-qm", "my fix, nowhere else")
    write(trees["hg"] / "build" / "vendored" / ".hg" / "requires", "store\n")
    write(trees["notes"] / "pkg" / "node_modules" / "x" / "i.js")
    write(trees["notes"] / "pkg" / "notes.md", "mine\n")
    for tree in trees.values():
        set_mtime(tree, OLD)
    listed = json.loads(run_cli("worktrees", "--json", str(project)).stdout)["worktrees"]
    assert {row["name"]: row["removable"] for row in listed}["plain"] is True
    result = run_cli("clean", str(project))
    assert result.returncode == 0, result.stderr
    assert "worktrees=2 " in result.stdout, result.stdout
    kept = {line.split(" ", 2)[2]: line.split(" ", 2)[1] for line in kept_lines(result.stdout)}
    assert kept == {str(trees[name]): "unmerged" if name == "nested" else "dirty"
                    for name in ("source", "secret", "nested", "hg", "notes")}, result.stdout
    assert not trees["plain"].exists() and not trees["linked"].exists()
    assert (data / "thesis.tex").read_text() == "the only copy\n"
    assert (trees["source"] / "build" / "gen.sh").exists() and (trees["secret"] / "node_modules" / ".env").exists()
    assert (inner / "fix.js").exists() and (trees["notes"] / "pkg" / "notes.md").exists()


# --- git states that held ------------------------------------------------------------------


def test_a_worktree_whose_own_config_points_core_worktree_elsewhere_is_judged_in_its_folder(
        project: Path, sandbox: SandboxEnv) -> None:
    """`git config --worktree core.worktree <a clean copy>`: `git status` run in the checkout
    looks at the copy and says clean; the new file in the checkout itself keeps it, and once
    the file is committed and merged the checkout goes and the copy is not touched."""
    tree = worktree(project, "moved-config")
    git(project, "config", "extensions.worktreeConfig", "true")
    elsewhere = sandbox.home / "elsewhere"
    subprocess.run(["cp", "-r", f"{tree}/.", str(elsewhere)], check=True)
    (elsewhere / ".git").unlink()
    write(tree / "mine.txt", "only here\n")
    git(tree, "config", "--worktree", "core.worktree", str(elsewhere))
    assert git(tree, "status", "--porcelain") == ""
    set_mtime(tree, OLD)
    assert judge(tree, project) == ("keep", "dirty")
    (tree / "mine.txt").unlink()
    set_mtime(tree, OLD)
    result = run_cli("clean", "--json", str(project))
    assert json.loads(result.stdout)["cleaned"]["worktrees"] == 1, result.stdout
    assert not tree.exists() and (elsewhere / "README.md").read_text() == "x\n"


def commit(tree: Path, name: str) -> str:
    write(tree / name, f"{name}\n")
    git(tree, "add", name)
    git(tree, "commit", "-qm", name)
    return git(tree, "rev-parse", "HEAD")


def test_commits_pushed_only_to_a_remote_since_removed_keep_the_worktree(project: Path, tmp_path: Path) -> None:
    """`git remote remove fork` deletes its remote-tracking refs: the commits are on no
    remote git knows of any more."""
    tree = worktree(project, "forked")
    sha = commit(tree, "f.txt")
    fork = tmp_path / "fork.git"
    git(tmp_path, "init", "-q", "--bare", str(fork))
    git(project, "remote", "add", "fork", str(fork))
    git(tree, "push", "-q", "-u", "fork", "worktree-forked")
    set_mtime(tree, OLD)
    assert judge(tree, project) == ("remove", "age")
    git(project, "remote", "remove", "fork")
    set_mtime(tree, OLD)
    assert judge(tree, project) == ("keep", "unmerged")
    assert sha in git(project, "rev-list", "--all")


def test_a_pushed_branch_whose_server_copy_is_deleted_later_keeps_its_commits(project: Path, tmp_path: Path) -> None:
    """The pull request closed and its branch deleted on the server, no `git fetch --prune`
    since: `origin/worktree-closed` still names the commits (claudetto asks no server), so the
    worktree goes. `git branch -d` would delete the local branch too ("merged into its
    upstream"), and the next `git fetch --prune` would drop the last ref to the commits: the
    branch stays. A branch merged on the server (its commits on `origin/main`) goes."""
    closed = worktree(project, "closed")
    sha = commit(closed, "c.txt")
    git(closed, "push", "-q", "-u", "origin", "worktree-closed")
    merged = worktree(project, "merged")
    commit(merged, "m.txt")
    git(merged, "push", "-q", "origin", "worktree-merged", "worktree-merged:main")
    git(project, "fetch", "-q", "origin")
    for tree in (closed, merged):
        set_mtime(tree, OLD)
    result = run_cli("clean", "--json", str(project))
    assert json.loads(result.stdout)["cleaned"]["worktrees"] == 2, result.stdout
    assert not closed.exists() and not merged.exists()
    git(tmp_path / "origin.git", "branch", "-D", "worktree-closed")
    git(project, "fetch", "-q", "--prune", "origin")
    assert git(project, "rev-parse", "worktree-closed") == sha
    assert git(project, "branch", "--list", "worktree-merged") == ""


# --- the plain route, end to end -------------------------------------------------------------


def test_a_worktree_session_in_a_project_that_ignores_nothing_is_released_then_cleaned(
        sandbox: SandboxEnv, project: Path, claudes: Callable[..., Claude]) -> None:
    """`claude --worktree`: WorktreeCreate, SessionStart in the checkout, an `npm install` and
    a `.venv` nobody ignored, notes in `.tmp/`, SessionEnd other. The release deletes the
    build output and keeps `.tmp/`; once the checkout is old, a later session's start removes
    it, counted in CLEANED, and its record goes with it."""
    claude = claudes(project)
    checkout = claude.create("bold-oak-a3f2")
    claude.cwd = checkout
    claude.write_file()
    assert claude.start() == ""
    build_output(checkout)
    write(checkout / ".tmp" / "report.md", "the session's notes\n")
    claude.end("other")
    claude.exit()
    assert wait_for(lambda: released(sandbox, checkout) and not (checkout / "node_modules").exists())
    assert not (checkout / ".venv").exists() and not (checkout / "build").exists()
    assert (checkout / ".tmp" / "report.md").read_text() == "the session's notes\n"
    (checkout / ".tmp" / "report.md").unlink()  # read and done with
    (checkout / ".tmp").rmdir()
    write(checkout / "node_modules" / "pkg" / "index.js")  # installed again by hand, never ignored
    set_mtime(checkout, OLD)
    later = claudes(project)
    assert later.start() == ""
    log = paths.session_log(str(project), later.session_id)
    assert wait_for(lambda: log.exists() and "UNKNOWN_KEPT" in log.read_text())
    assert "worktrees=1" in log.read_text() and not checkout.exists(), log.read_text()
    assert str(checkout) not in registry(sandbox)


def test_worktree_remove_takes_a_checkout_holding_untracked_output_and_keeps_one_with_a_secret_in_it(
        sandbox: SandboxEnv, project: Path) -> None:
    """ExitWorktree's remove: the npm install nobody ignored goes with the checkout (exit 0);
    a signing key generated into a `build/` nobody ignored keeps the checkout, exit 1 naming
    `dirty` (a test key inside an installed package, `node_modules/pkg/.env.local`, is none)."""
    made = {}
    for name in ("installed", "with-secret"):
        done = run_hook({"hook_event_name": "WorktreeCreate", "session_id": "s-11", "cwd": str(project),
                         "name": name}, cwd=project)
        assert done.returncode == 0, done.stderr
        made[name] = Path(done.stdout.decode().strip().splitlines()[-1])
        write(made[name] / "node_modules" / "pkg" / "index.js")
        write(made[name] / "node_modules" / "pkg" / ".env.local", "KEY=test\n")
    write(made["with-secret"] / "build" / "release.keystore", "the only copy of the key\n")
    answers = {name: run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s-11", "cwd": str(project),
                               "worktree_path": str(path)}, cwd=project) for name, path in made.items()}
    assert (answers["installed"].returncode, answers["installed"].stderr) == (0, b"")
    assert not made["installed"].exists() and str(made["installed"]) not in registry(sandbox)
    assert answers["with-secret"].returncode == 1
    assert answers["with-secret"].stderr.decode().startswith(f"claudetto: kept {made['with-secret']}: dirty")
    assert (made["with-secret"] / "build" / "release.keystore").exists()


@pytest.mark.parametrize("setting", [("core.trustctime", "false"), ("core.checkStat", "minimal"),
                                     ("--global", "core.trustctime", "no")])
def test_an_edit_that_kept_its_size_and_mtime_is_seen_whatever_the_users_stat_settings(
        project: Path, setting: tuple[str, ...]) -> None:
    """A user who set `core.trustctime=false` (a common advice where backup or indexing tools
    touch ctime) or `core.checkStat=minimal`, and a tool that rewrote a tracked file keeping its
    size and putting its mtime back: `git status` says clean; the edit is the only copy."""
    tree = worktree(project, "same-size")
    config = write(tree / "config.yml", "mode: safe\n")
    os.utime(config, ns=(1_700_000_000_000_000_000,) * 2)  # older than the index: not racy
    git(tree, "add", "config.yml")
    git(tree, "commit", "-qm", "config")
    git(tree, "push", "-q", "origin", "worktree-same-size")
    git(project, "config", *setting)
    before = os.stat(config)
    config.write_text("mode: FAST\n")
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert git(tree, "status", "--porcelain") == ""  # what the user's own git says
    set_mtime(tree, OLD)
    assert judge(tree, project) == ("keep", "dirty")
