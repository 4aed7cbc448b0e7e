"""Red team, round four: session checkouts. Declared scratch that reaches `.tmp/`, tracked
work or the user's new folders through a link or a name, tried as a user and Claude drive
them: real checkouts made by WorktreeCreate, `claudetto release` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hooks.test_checkouts import Claude
from tests.support import SandboxEnv, ended_session_checkout, git, make_repo, run_cli, run_hook

SID = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "x\n", "src/core/mod.py": "A = 1\n",
                                               ".gitignore": "node_modules/\n.tmp/\ncache/\n"})


def session_checkout(repo: Path, name: str = "work") -> Path:
    """A checkout WorktreeCreate made for a session that then ended for good."""
    return ended_session_checkout(repo, name, SID)


def wait_released(path: Path) -> None:
    """SessionEnd hands the release to a detached process: wait until it has run."""
    from app.core import checkouts

    deadline = time.monotonic() + 30
    while (checkouts.registry().get(str(path)) or {}).get("state") != "released":
        assert time.monotonic() < deadline, checkouts.registry()
        time.sleep(0.05)


def declare(checkout: Path, *scratch: str) -> None:
    (checkout / ".claude").mkdir(exist_ok=True)
    (checkout / ".claude" / "claudetto.json").write_text(json.dumps({"scratch": list(scratch)}))


def release(path: Path) -> dict[str, object]:
    result = run_cli("release", str(path), "--json")
    assert not result.stderr.startswith("Traceback"), result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else {"stderr": result.stderr}


def test_declared_scratch_through_a_link_to_tmp_never_reaches_tmp(repo: Path) -> None:
    checkout = session_checkout(repo)
    (checkout / ".tmp" / "logs").mkdir(parents=True)
    (checkout / ".tmp" / "logs" / "report.md").write_text("the session's report\n")
    (checkout / "out").symlink_to(".tmp")
    declare(checkout, "out/logs")
    done = release(checkout)
    assert (checkout / ".tmp" / "logs" / "report.md").exists(), done


def test_declared_scratch_through_a_link_never_takes_tracked_work(repo: Path) -> None:
    checkout = session_checkout(repo)
    (checkout / "src" / "core" / "mod.py").write_text("A = 2  # uncommitted work\n")
    (checkout / "gen").symlink_to("src")
    declare(checkout, "gen/core")
    done = release(checkout)
    assert (checkout / "src" / "core" / "mod.py").read_text() == "A = 2  # uncommitted work\n", done


def test_a_regenerable_folder_git_does_not_ignore_holds_new_work_and_stays(repo: Path) -> None:
    """A new package named `build` (or `dist`, `target`) the session wrote and did not commit
    yet: git shows it as untracked, so it is work, not output."""
    checkout = session_checkout(repo)
    (checkout / "src" / "build").mkdir()
    (checkout / "src" / "build" / "__init__.py").write_text("def make(): ...\n")
    (checkout / "node_modules" / "dep").mkdir(parents=True)
    (checkout / "node_modules" / "dep" / "i.js").write_text("1\n")
    done = release(checkout)
    assert (checkout / "src" / "build" / "__init__.py").exists(), done
    assert not (checkout / "node_modules").exists(), done


def test_a_scratch_list_the_session_wrote_never_takes_untracked_work(repo: Path) -> None:
    """A confused model declares its own drafts (and a file) as scratch in the checkout's
    own config: git shows them as untracked, so they are work and stay."""
    checkout = session_checkout(repo)
    (checkout / "drafts").mkdir()
    (checkout / "drafts" / "plan.md").write_text("the plan\n")
    (checkout / "notes.md").write_text("notes\n")
    (checkout / "cache").mkdir()
    (checkout / "cache" / "blob").write_text("x" * 100)
    declare(checkout, "drafts", "notes.md", "cache")
    done = release(checkout)
    assert (checkout / "drafts" / "plan.md").exists() and (checkout / "notes.md").exists(), done
    assert not (checkout / "cache").exists(), done


def test_a_dev_server_started_by_a_relative_path_into_node_modules_keeps_it(
        repo: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """`node node_modules/.bin/vite` typed in the checkout: the server reads its modules as it
    goes and holds none open, so only its command line says it runs from there."""
    checkout = session_checkout(repo)
    server = checkout / "node_modules" / ".bin" / "serve.py"
    server.parent.mkdir(parents=True)
    server.write_text("import time\ntime.sleep(60)\n")
    started.append(subprocess.Popen([sys.executable, "node_modules/.bin/serve.py"], cwd=checkout))
    time.sleep(0.3)
    done = release(checkout)
    assert server.exists(), done


def test_a_fifo_in_place_of_the_config_never_hangs_the_release(repo: Path) -> None:
    """A FIFO named `.claude/claudetto.json` (a session's mistake): the release, the
    dashboard and `claudetto worktrees` read the config; none may wait for a writer."""
    checkout = session_checkout(repo)
    (checkout / ".claude").mkdir(exist_ok=True)
    os.mkfifo(checkout / ".claude" / "claudetto.json")
    (checkout / "node_modules").mkdir()
    result = run_cli("release", str(checkout), "--json", timeout=20)
    assert result.returncode in (0, 1) and not result.stderr.startswith("Traceback"), result.stderr
    assert (checkout / "node_modules").exists() and (checkout / "README.md").exists()


def project_declares(repo: Path, *scratch: str) -> None:
    (repo / ".claude").mkdir(exist_ok=True)
    (repo / ".claude" / "claudetto.json").write_text(json.dumps({"scratch": list(scratch)}))


@pytest.mark.parametrize("where", ["out/.tmp", "out/sub/.tmp"])
def test_a_tmp_inside_declared_scratch_survives(repo: Path, where: str) -> None:
    """`.tmp/` is never inside scratch, at any depth: a declared `out` holding the session's
    `.tmp` reports keeps them."""
    project_declares(repo, "out")
    checkout = session_checkout(repo)
    (checkout / where).mkdir(parents=True)
    (checkout / where / "report.md").write_text("the session's report\n")
    (checkout / "out" / "gen.bin").write_text("x" * 100)
    done = release(checkout)
    assert (checkout / where / "report.md").exists(), done


def test_worktree_create_never_adopts_a_users_own_checkout_for_release(repo: Path) -> None:
    """`--worktree mine` where the user made `.claude/worktrees/mine` by hand: Claude enters
    it, but claudetto did not make it for a session, so no release takes its folders."""
    mine = repo / ".claude" / "worktrees" / "mine"
    git(repo, "worktree", "add", "-q", "-b", "my-branch", str(mine))
    (mine / "node_modules" / "dep").mkdir(parents=True)
    (mine / "node_modules" / "dep" / "i.js").write_text("1\n")
    made = run_hook({"hook_event_name": "WorktreeCreate", "session_id": SID, "cwd": str(repo), "name": "mine"},
                    cwd=repo)
    assert made.returncode == 0, made.stderr
    ended = run_hook({"hook_event_name": "SessionEnd", "session_id": SID, "cwd": str(mine),
                      "reason": "prompt_input_exit"}, cwd=mine)
    assert ended.returncode == 0
    done = release(mine)
    time.sleep(1)
    assert (mine / "node_modules" / "dep" / "i.js").exists(), done


@pytest.mark.parametrize("declared", [".env", "conf/.env.local", "conf"])
def test_a_secret_file_declared_as_scratch_is_kept(tmp_path: Path, declared: str) -> None:
    """A secret-looking file is the only copy of its token, named directly or inside."""
    repo = make_repo(tmp_path / "proj", files={"README.md": "x\n", ".gitignore": ".env*\nconf/\n"})
    project_declares(repo, declared)
    checkout = session_checkout(repo)
    (checkout / "conf").mkdir()
    (checkout / ".env").write_text("TOKEN=only-copy\n")
    (checkout / "conf" / ".env.local").write_text("TOKEN=only-copy\n")
    done = release(checkout)
    assert (checkout / ".env").exists() and (checkout / "conf" / ".env.local").exists(), done


def test_a_linked_worktree_inside_node_modules_with_uncommitted_work_is_kept(repo: Path) -> None:
    """`git worktree add node_modules/patched` (a package patched in place): the folder is a
    checkout of the same repository, its uncommitted edits exist nowhere else."""
    checkout = session_checkout(repo)
    inner = checkout / "node_modules" / "patched"
    git(checkout, "worktree", "add", "-q", "-b", "patch", str(inner))
    (inner / "README.md").write_text("patched by hand\n")
    (inner / "new.txt").write_text("new\n")
    done = release(checkout)
    assert (inner / "README.md").read_text() == "patched by hand\n", done


@pytest.mark.parametrize("ignored", [True, False])
def test_a_checkout_whose_git_file_went_is_judged_by_no_other_repository(tmp_path: Path, ignored: bool) -> None:
    """The model ran `rm .git` in its checkout: git, asked there, answers for the project
    around it, which tracks none of the checkout's files. A `build/` the branch tracks
    (edited since) must not pass for output."""
    files = {"README.md": "x\n", "build/rules.py": "RULES = 1\n",
             ".gitignore": ".claude/worktrees/\n" if ignored else "node_modules/\n"}
    repo = make_repo(tmp_path / "proj", files=files)
    checkout = session_checkout(repo)
    (checkout / "build" / "rules.py").write_text("RULES = 2  # uncommitted\n")
    (checkout / ".git").unlink()
    done = release(checkout)
    assert (checkout / "build" / "rules.py").read_text() == "RULES = 2  # uncommitted\n", done


@pytest.mark.parametrize("ignored", [True, False])
def test_worktree_remove_of_a_checkout_whose_git_file_went_keeps_it(tmp_path: Path, ignored: bool) -> None:
    files = {"README.md": "x\n", "src/rules.py": "RULES = 1\n",
             ".gitignore": ".claude/worktrees/\n" if ignored else "node_modules/\n"}
    repo = make_repo(tmp_path / "proj", files=files)
    checkout = session_checkout(repo)
    (checkout / "src" / "rules.py").write_text("RULES = 2  # uncommitted\n")
    (checkout / ".git").unlink()
    gone = run_hook({"hook_event_name": "WorktreeRemove", "session_id": SID, "cwd": str(repo),
                     "worktree_path": str(checkout)}, cwd=repo)
    assert (checkout / "src" / "rules.py").read_text() == "RULES = 2  # uncommitted\n", gone.stderr
    assert gone.returncode == 1


@pytest.mark.parametrize("declared", [".TMP", ".Tmp/logs", ".GIT"])
def test_a_declared_tmp_or_git_in_another_case_is_refused(repo: Path, declared: str) -> None:
    """On a case-insensitive file system (macOS) `.TMP` is `.tmp`: refused everywhere, so a
    list written on Linux never takes the reports of the same checkout on a Mac."""
    project_declares(repo, declared)
    checkout = session_checkout(repo)
    (checkout / declared).mkdir(parents=True)
    (checkout / declared / "report.md").write_text("the session's report\n")
    done = release(checkout)
    assert (checkout / declared / "report.md").exists(), done


def test_one_session_resumed_in_a_second_claude_leaves_the_first_its_checkout(
        sandbox: SandboxEnv, repo: Path) -> None:
    """`claude --resume ID` in a second terminal while the first Claude still runs that
    session in its checkout: the second one ending must not release it under the first."""
    from app.core import checkouts

    first = Claude(sandbox, SID, repo)
    second = Claude(sandbox, SID, repo)
    try:
        checkout = first.create("shared")
        first.cwd = checkout
        first.write_file()
        first.start()
        (checkout / "node_modules" / "dep").mkdir(parents=True)
        (checkout / "node_modules" / "dep" / "i.js").write_text("1\n")
        assert second.start("resume") == ""
        second.end()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and checkouts.registry()[str(checkout)].get("state") != "released":
            time.sleep(0.1)
        assert (checkout / "node_modules" / "dep" / "i.js").exists(), checkouts.registry()
    finally:
        first.exit()
        second.exit()


def test_worktree_remove_from_a_second_claude_on_the_same_session_leaves_the_first_its_checkout(
        sandbox: SandboxEnv, repo: Path) -> None:
    """The second terminal's Claude (same session resumed) exits and asks to remove the
    checkout: the first still works in it, so it stays."""
    first = Claude(sandbox, SID, repo)
    second = Claude(sandbox, SID, repo)
    try:
        checkout = first.create("shared")
        first.cwd = checkout
        first.write_file()
        answer = second.hook("WorktreeRemove", worktree_path=str(checkout))
        assert checkout.is_dir() and answer["rc"] == 1, answer
    finally:
        first.exit()
        second.exit()


def test_a_checkout_reinitialised_with_git_init_is_judged_by_no_other_repository(tmp_path: Path) -> None:
    """`rm .git && git init` in the checkout: git now answers for a new, empty repository
    there, which tracks none of the branch's files."""
    files = {"README.md": "x\n", "build/rules.py": "RULES = 1\n", ".gitignore": "node_modules/\n"}
    repo = make_repo(tmp_path / "proj", files=files)
    checkout = session_checkout(repo)
    (checkout / "build" / "rules.py").write_text("RULES = 2  # uncommitted\n")
    (checkout / ".git").unlink()
    git(checkout, "init", "-q")
    done = release(checkout)
    assert (checkout / "build" / "rules.py").read_text() == "RULES = 2  # uncommitted\n", done


def test_a_checkout_left_unrecorded_on_its_own_branch_is_recorded_when_entered_again(repo: Path) -> None:
    """A WorktreeCreate killed between `git worktree add` and its record (or Claude's own
    creation before the hook): on `worktree-<name>`, it is a session's checkout."""
    from app.core import checkouts

    left = repo / ".claude" / "worktrees" / "again"
    git(repo, "worktree", "add", "-q", "-b", "worktree-again", str(left))
    made = run_hook({"hook_event_name": "WorktreeCreate", "session_id": SID, "cwd": str(repo), "name": "again"},
                    cwd=repo)
    assert made.returncode == 0, made.stderr
    assert checkouts.registry()[str(left)]["kind"] == "session"


@pytest.mark.parametrize("option", ["--directory=dist", "--directory={checkout}/dist"])
def test_a_server_serving_dist_named_in_an_option_keeps_it(
        repo: Path, started: list[subprocess.Popen[bytes]], option: str) -> None:
    """`python -m http.server --directory=dist` run in the checkout serves files it opens
    per request: only its command line says it uses `dist/`."""
    project_declares(repo, "dist")
    checkout = session_checkout(repo)
    (checkout / "dist").mkdir()
    (checkout / "dist" / "index.html").write_text("<p>built</p>\n")
    started.append(subprocess.Popen([sys.executable, "-m", "http.server", "0", option.format(checkout=checkout)],
                                    cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(0.5)
    done = release(checkout)
    assert (checkout / "dist" / "index.html").exists(), done


def test_a_clone_inside_node_modules_with_uncommitted_edits_keeps_it(repo: Path, tmp_path: Path) -> None:
    """`git clone` of a dependency into node_modules to patch it: the edits are only there."""
    upstream = make_repo(tmp_path / "dep", files={"index.js": "module.exports = 1\n"})
    checkout = session_checkout(repo)
    (checkout / "node_modules").mkdir()
    git(checkout / "node_modules", "clone", "-q", str(upstream), "dep")
    (checkout / "node_modules" / "dep" / "index.js").write_text("module.exports = 2 // patched\n")
    (checkout / "node_modules" / "dep" / "NOTES.md").write_text("why\n")
    done = release(checkout)
    assert (checkout / "node_modules" / "dep" / "index.js").read_text() == "module.exports = 2 // patched\n", done
    assert (checkout / "node_modules" / "dep" / "NOTES.md").exists(), done


@pytest.mark.parametrize("keep", ["stash", "branch", "tag"])
def test_a_clone_inside_node_modules_whose_work_hides_in_a_ref_keeps_it(
        repo: Path, tmp_path: Path, keep: str) -> None:
    """The patch stashed, or committed on a side branch or a tag and checked out away from:
    `git status` is clean, the work exists only in that clone."""
    upstream = make_repo(tmp_path / "dep", files={"index.js": "module.exports = 1\n"})
    checkout = session_checkout(repo)
    (checkout / "node_modules").mkdir()
    dep = checkout / "node_modules" / "dep"
    git(checkout / "node_modules", "clone", "-q", str(upstream), "dep")
    (dep / "index.js").write_text("module.exports = 2 // patched\n")
    if keep == "stash":
        git(dep, "stash", "-q")
    else:
        git(dep, "commit", "-qam", "patch")
        if keep == "branch":
            git(dep, "branch", "patched")
        else:
            git(dep, "tag", "patched")
        git(dep, "reset", "-q", "--hard", "HEAD~1")
    done = release(checkout)
    assert (dep / ".git").exists(), done


def test_a_program_run_from_the_venv_by_a_relative_path_keeps_the_venv(
        repo: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """`.venv/bin/python manage.py runserver` in the checkout: the interpreter is a link
    out of the venv (its exe says /usr/bin/python3) and pure-Python modules are read and
    closed, so only its relative argv[0] says it runs from `.venv`."""
    checkout = session_checkout(repo)
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    started.append(subprocess.Popen([".venv/bin/python", "-c", "import time; time.sleep(60)"],
                                    cwd=checkout, executable=str(checkout / ".venv" / "bin" / "python")))
    time.sleep(0.3)
    done = release(checkout)
    assert (checkout / ".venv" / "bin" / "python").is_symlink(), done


def test_workspace_and_npm_link_symlinks_in_node_modules_take_nothing_they_point_at(
        repo: Path, tmp_path: Path) -> None:
    """pnpm/yarn workspaces link `node_modules/@org/web` -> `packages/web`; `npm link` links
    to a project elsewhere. Deleting node_modules deletes the links, never their targets."""
    checkout = session_checkout(repo)
    (checkout / "packages" / "web").mkdir(parents=True)
    (checkout / "packages" / "web" / "index.js").write_text("new work\n")
    elsewhere = tmp_path / "linked-project"
    elsewhere.mkdir()
    (elsewhere / "lib.js").write_text("the user's other project\n")
    (checkout / "node_modules" / "@org").mkdir(parents=True)
    (checkout / "node_modules" / "@org" / "web").symlink_to("../../packages/web")
    (checkout / "node_modules" / "linked").symlink_to(elsewhere)
    done = release(checkout)
    assert (checkout / "packages" / "web" / "index.js").exists(), done
    assert (elsewhere / "lib.js").exists(), done


def test_a_tmp_that_links_into_scratch_survives(repo: Path) -> None:
    """`.tmp` -> `node_modules/.cache/reports` (a tool's default, linked for the session):
    the reports live inside the scratch, and `.tmp/` survives every release."""
    checkout = session_checkout(repo)
    reports = checkout / "node_modules" / ".cache" / "reports"
    reports.mkdir(parents=True)
    (reports / "report.md").write_text("the session's report\n")
    (checkout / ".tmp").symlink_to("node_modules/.cache/reports")
    done = release(checkout)
    assert (checkout / ".tmp" / "report.md").exists(), done
