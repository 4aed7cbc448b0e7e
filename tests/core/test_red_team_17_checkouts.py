"""Red team, round seventeen: session checkouts (seed 002), their release and WorktreeCreate.

Driven with ordinary git and shell steps in the checkout or the main one, then the release,
WorktreeCreate or WorktreeRemove as Claude or `claudetto release` runs them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.core.test_red_team_16_cleanup import NOBODY, PYTHON, as_nobody
from tests.support import (
    ROOT,
    SandboxEnv,
    hung_fuse_mounts,
    make_repo,
    make_sandbox,
    pushed_repo,
    run_cli,
    session_checkout,
)

# --- a user who is not root: a folder of another user's inside the scratch ----------------------


@pytest.fixture
def nobody_project() -> Iterator[tuple[Path, dict[str, str]]]:
    """A project and a sandbox that a user who is not root owns (tmp_path lies in a folder
    only root may enter)."""
    base = Path(tempfile.mkdtemp(prefix="claudetto-rt17-"))
    os.chmod(base, 0o755)
    _env, variables = make_sandbox(base / "sb")
    project = make_repo(base / "proj", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    for path in [base / "sb", *(base / "sb").rglob("*"), project, *project.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    try:
        yield project, variables
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(variables: dict[str, str], code: str) -> object:
    """`code` (which prints one JSON document) run by that user through the core."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **variables}
    done = subprocess.run([str(PYTHON), "-P", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
                          capture_output=True, text=True, env=env, cwd="/", user=NOBODY, group=NOBODY,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@as_nobody
def test_a_release_keeps_whole_a_scratch_folder_holding_another_users_folder(
        nobody_project: tuple[Path, dict[str, str]]) -> None:
    """LOSS. `docker run -v "$PWD":/app node npx vite build` in a session's checkout leaves
    root's `node_modules/.vite/` in the user's `node_modules/`. The release (run by the user,
    not root) moved `node_modules` into the trash and journaled it; the purge deleted the
    user's packages and stopped at root's folder, left in the trash for good, and the release
    said `node_modules` was deleted. As the cleanup does, a folder this user cannot empty
    whole stays whole where it was."""
    project, variables = nobody_project
    made = _as_nobody(variables, "import json; from app.core.checkouts import create_checkout; "
                                 f"print(json.dumps(create_checkout({str(project)!r}, 'work', 's1', None).path))")
    tree = Path(str(made))
    package = tree / "node_modules" / "left-pad"
    package.mkdir(parents=True)
    (package / "index.js").write_text("module.exports = 1\n")
    for path in (tree / "node_modules", package, package / "index.js"):
        os.chown(path, NOBODY, NOBODY)
    cache = tree / "node_modules" / ".vite"  # root's, as the container made it
    cache.mkdir()
    (cache / "deps.json").write_text("{}\n")

    done = _as_nobody(variables, "import json; from app.core.release import release_checkout, release_json; "
                                 f"print(json.dumps(release_json(release_checkout({str(tree)!r}, session='s1'))))")
    assert isinstance(done, dict)
    assert (package / "index.js").exists() and (cache / "deps.json").exists(), done
    entries = {Path(e["path"]).name: (e["status"], e["reason"]) for e in done["entries"]}
    assert entries["node_modules"][0] == "kept", done


# --- a remote mount that stopped answering, inside the checkout ---------------------------------


@pytest.fixture
def hung_fuse() -> Iterator[Callable[[Path], None]]:
    with hung_fuse_mounts() as mount:
        yield mount


@pytest.mark.parametrize("where", ["remote", "node_modules/remote"])
def test_a_release_of_a_checkout_holding_a_dead_remote_mount_ends(
        sandbox: SandboxEnv, tmp_path: Path, hung_fuse: Callable[[Path], None], where: str) -> None:
    """HANG. `sshfs host:/data remote` in a session's checkout (or in its `node_modules`), the
    host gone since: every look at the mount point waits for ever. The release listed every
    folder of the checkout with a stat of each, and hung at the mount point: `claudetto
    release` never returned, and the SessionEnd's detached release held the checkout's release
    lock for good (every later release `busy`, WorktreeRemove kept it). A mount is never
    scratch: it is told from the mount table, never looked at; a scratch folder holding one is
    kept `in_use` unwalked."""
    project = pushed_repo(tmp_path, {"README.md": "x\n", ".gitignore": "node_modules/\nremote/\n"})
    tree = session_checkout(project, "work")
    sandbox.sessions.mkdir(parents=True, exist_ok=True)  # Claude keeps sessions files: s1 runs no more
    (tree / "node_modules" / "left-pad").mkdir(parents=True)
    (tree / "build").mkdir()
    hung_fuse(tree / where)
    try:
        done = run_cli("release", str(tree), "--json", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("claudetto release hung on the dead mount")
    assert done.returncode == 0, done.stderr
    entries = {Path(e["path"]).name: (e["status"], e["reason"]) for e in json.loads(done.stdout)["entries"]}
    assert entries["build"] == ("removed", "scratch"), entries
    if where == "remote":
        assert entries["node_modules"] == ("removed", "scratch") and "remote" not in entries, entries
    else:
        assert entries["node_modules"] == ("kept", "in_use"), entries


def test_a_checkout_recorded_on_a_dead_remote_mount_holds_no_release_elsewhere(
        sandbox: SandboxEnv, tmp_path: Path, hung_fuse: Callable[[Path], None]) -> None:
    """HANG. A project on an `sshfs` share had a session checkout; the host is gone. Every
    registry lookup made each recorded checkout a real path, a look that waits for ever on
    that share: `claudetto release` of a checkout of another project, on the local disk,
    never returned. A path on a remote mount that does not answer is compared as written
    (hung_mounts.real_paths, as a session's cwd there is)."""
    share = tmp_path / "share"
    share.mkdir()
    away = pushed_repo(share, {"README.md": "x\n"})
    session_checkout(away, "there")
    here = make_repo(tmp_path / "here", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    tree = session_checkout(here, "work")
    (tree / "node_modules" / "left-pad").mkdir(parents=True)
    sandbox.sessions.mkdir(parents=True, exist_ok=True)  # Claude keeps sessions files: s1 runs no more
    hung_fuse(share)
    try:
        done = run_cli("release", str(tree), "--json", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("claudetto release hung on another project's dead mount")
    assert done.returncode == 0, done.stderr
    assert not (tree / "node_modules").exists(), done.stdout


def test_claudetto_release_of_a_checkout_on_a_dead_remote_mount_answers(
        sandbox: SandboxEnv, tmp_path: Path, hung_fuse: Callable[[Path], None]) -> None:
    """HANG. `claudetto release` of a checkout whose project lies on an `sshfs` share whose host
    is gone looked at the checkout (is it a symlink now?) and waited for ever, as did the
    detached release of its session's end. It answers that the checkout does not answer, and
    the record stays for when the share is back."""
    share = tmp_path / "share"
    share.mkdir()
    away = pushed_repo(share, {"README.md": "x\n"})
    there = session_checkout(away, "there")
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    hung_fuse(share)
    try:
        done = run_cli("release", str(there), timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("claudetto release hung on the dead mount")
    assert done.returncode == 1 and "not answer" in done.stderr, done.stderr
    from app.core import checkouts

    assert str(there) in checkouts.registry()


def test_a_live_session_working_on_a_dead_remote_mount_holds_no_release_elsewhere(
        sandbox: SandboxEnv, tmp_path: Path, hung_fuse: Callable[[Path], None], live_pid: int) -> None:
    """HANG. Another Claude runs with its cwd on an `sshfs` share whose host is gone. Who holds
    a checkout was asked of every live session by making its cwd a real path, a look that
    waits for ever there: the release of a local checkout nobody holds never returned. Its cwd
    is compared as written (as every other rule of who is live does)."""
    share = tmp_path / "share"
    (share / "proj").mkdir(parents=True)
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="s7", cwd=str(share / "proj"))
    here = make_repo(tmp_path / "here", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    tree = session_checkout(here, "work")
    (tree / "node_modules" / "left-pad").mkdir(parents=True)
    hung_fuse(share)
    try:
        done = run_cli("release", str(tree), "--json", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("claudetto release hung on another session's cwd on a dead mount")
    assert done.returncode == 0, done.stderr
    assert not (tree / "node_modules").exists(), done.stdout


# --- the note SessionStart gives after a release ------------------------------------------------


@pytest.mark.parametrize("name", ["requirements dev.txt", "requirements-$(touch pwned).txt"])
def test_the_notes_pip_command_names_a_requirements_file_with_spaces_or_shell_signs_as_one_word(
        tmp_path: Path, name: str) -> None:
    """The note tells the model to run `pip install -r <file>` for each `requirements*.txt`
    beside a deleted venv, the name pasted in as it is: `requirements dev.txt` became two
    words (pip looked for `requirements`, then installed a package named `dev.txt`), and a
    name holding `$(...)` (a cloned repository's) ran that command in the model's shell. The
    name is quoted for the shell."""
    import shlex

    from app.core import checkouts
    from app.core.release import release_checkout
    from app.core.release_notes import reinstall_note

    project = make_repo(tmp_path / "proj", files={"README.md": "x\n", ".gitignore": ".venv/\n"})
    tree = session_checkout(project, "py")
    (tree / name).write_text("pytest\n")
    (tree / ".venv" / "bin").mkdir(parents=True)
    done = release_checkout(str(tree), session="s1")
    assert done.status == "released" and not (tree / ".venv").exists(), done
    note = reinstall_note(str(tree), checkouts.registry()[str(tree)]["last_release"])
    line = next(line for line in note.splitlines() if "pip install" in line)
    command = line.split("`")[1]
    words = shlex.split(command.split("&&")[-1])
    assert words[-3:] == ["install", "-r", name], note


@as_nobody
def test_a_release_dry_run_says_a_scratch_folder_holding_another_users_folder_stays(
        nobody_project: tuple[Path, dict[str, str]]) -> None:
    """`claudetto release --dry-run` said WOULD_DELETE for the `node_modules` holding root's
    `.vite/` that the release itself then keeps whole: the dry run asks what the removal's
    last look asks."""
    project, variables = nobody_project
    made = _as_nobody(variables, "import json; from app.core.checkouts import create_checkout; "
                                 f"print(json.dumps(create_checkout({str(project)!r}, 'work', 's1', None).path))")
    tree = Path(str(made))
    (tree / "node_modules").mkdir()
    os.chown(tree / "node_modules", NOBODY, NOBODY)
    cache = tree / "node_modules" / ".vite"  # root's, as the container made it
    cache.mkdir()
    (cache / "deps.json").write_text("{}\n")
    done = _as_nobody(variables, "import json; from app.core.release import release_checkout, release_json; "
                                 f"print(json.dumps(release_json(release_checkout({str(tree)!r}, session='s1', "
                                 "dry_run=True))))")
    assert isinstance(done, dict)
    entries = {Path(e["path"]).name: (e["status"], e["reason"]) for e in done["entries"]}
    assert entries["node_modules"] == ("kept", "not_removed"), done


@as_nobody
def test_a_release_keeps_whole_a_scratch_folder_holding_another_users_sticky_folder(
        nobody_project: tuple[Path, dict[str, str]]) -> None:
    """LOSS. The same with the container's folder made world-writable and sticky (mode 1777,
    as a `/tmp` is): this user may write in it, yet not remove root's files there, and the
    purge stopped half-way as before. A sticky folder of another user's holding an entry that
    is not this user's is closed to it too."""
    project, variables = nobody_project
    made = _as_nobody(variables, "import json; from app.core.checkouts import create_checkout; "
                                 f"print(json.dumps(create_checkout({str(project)!r}, 'work', 's1', None).path))")
    tree = Path(str(made))
    package = tree / "node_modules" / "left-pad"
    package.mkdir(parents=True)
    (package / "index.js").write_text("module.exports = 1\n")
    for path in (tree / "node_modules", package, package / "index.js"):
        os.chown(path, NOBODY, NOBODY)
    shared = tree / "node_modules" / ".tmp-shared"  # root's, sticky and open to all
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "lock").write_text("root's\n")
    done = _as_nobody(variables, "import json; from app.core.release import release_checkout, release_json; "
                                 f"print(json.dumps(release_json(release_checkout({str(tree)!r}, session='s1'))))")
    assert isinstance(done, dict)
    assert (package / "index.js").exists() and (shared / "lock").exists(), done
