"""Red team, round six: the session-start cleanup and the worktree sweep, driven by the
ordinary commands a Claude session and its user run: pushes, amends, pruned upstreams, tags,
nested repositories, sparse checkouts, per-worktree config, editors holding files, odd
settings, session folders under another project's name. `claudetto clean` runs as a user
runs it and SessionStart goes through `python -P -m hooks` as Claude runs it; the
repositories, worktrees, processes and symlinks are real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from app.core import paths
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

DAY = 86_400


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})


@pytest.fixture
def origin(tmp_path: Path, repo: Path) -> Path:
    """A remote the project pushes to (`git remote add origin ...; git push -u origin main`)."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "-u", "origin", "main")
    return bare


def clean(*projects: Path) -> dict[str, object]:
    result = run_cli("clean", "--json", *map(str, projects))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def old_worktree(repo: Path, name: str) -> Path:
    path = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(path))
    return path


def commit(where: Path, name: str, text: str, message: str = "work") -> str:
    (where / name).parent.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(text)
    git(where, "add", name)
    git(where, "commit", "-qm", message)
    return git(where, "rev-parse", "HEAD")


def age(path: Path, days: float = 40) -> None:
    set_mtime(path, days * DAY)


def reachable(repo: Path, sha: str) -> bool:
    return sha in git(repo, "rev-list", "--all", "--reflog").split()


def kept(report: dict[str, object], path: Path) -> str | None:
    rows = report["worktrees_kept"]
    assert isinstance(rows, list)
    return next((row["reason"] for row in rows if row["path"] == str(path)), None)


# --- worktrees: git states ------------------------------------------------------------------


def test_a_branch_pushed_then_amended_locally_keeps_the_worktree(repo: Path, origin: Path) -> None:
    """`git push -u origin HEAD`, then `git commit --amend`: the remote has the old commit,
    the amended one is only here."""
    wt = old_worktree(repo, "amend")
    commit(wt, "idea.txt", "first\n")
    git(wt, "push", "-q", "-u", "origin", "HEAD")
    (wt / "idea.txt").write_text("second, amended after the push\n")
    git(wt, "commit", "-qa", "--amend", "-m", "work, amended")
    amended = git(wt, "rev-parse", "HEAD")
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, amended), report
    assert kept(report, wt) == "unmerged", report


def test_a_branch_whose_upstream_was_deleted_keeps_the_worktree(repo: Path, origin: Path) -> None:
    """Pushed, the remote branch deleted (a PR closed), `git fetch --prune`: the branch shows
    `[gone]` and its commits are on no remote any more."""
    wt = old_worktree(repo, "gone")
    only = commit(wt, "idea.txt", "only here\n")
    git(wt, "push", "-q", "-u", "origin", "HEAD")
    git(repo, "push", "-q", "origin", "--delete", "worktree-gone")
    git(repo, "fetch", "-q", "--prune")
    assert "gone" in git(wt, "branch", "-vv")
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, only), report


def test_a_commit_only_a_tag_made_in_the_worktree_holds_survives(repo: Path) -> None:
    """A release tagged on a detached HEAD in the worktree, then back to its branch: the tag
    lives in the shared refs, so whatever the sweep does the commit stays reachable."""
    wt = old_worktree(repo, "tagged")
    git(wt, "switch", "-q", "--detach")
    only = commit(wt, "release.txt", "v1\n")
    git(wt, "tag", "v1.0")
    git(wt, "switch", "-q", "worktree-tagged")
    age(wt)
    report = clean(repo)
    assert reachable(repo, only), report


def test_a_per_worktree_config_hiding_untracked_files_keeps_the_worktree(repo: Path) -> None:
    """`extensions.worktreeConfig` with `status.showUntrackedFiles no` set for the worktree
    only (`git config --worktree`): git status there shows nothing of the new file."""
    git(repo, "config", "extensions.worktreeConfig", "true")
    wt = old_worktree(repo, "wtconfig")
    git(wt, "config", "--worktree", "status.showUntrackedFiles", "no")
    (wt / "notes.md").write_text("a day of notes\n")
    assert git(wt, "status", "--porcelain") == ""
    age(wt)
    report = clean(repo)
    assert (wt / "notes.md").exists(), report


def test_a_main_repository_with_core_worktree_keeps_the_worktrees_changes(tmp_path: Path) -> None:
    """The project's git dir lives apart (`git init --separate-git-dir`), so its config names
    `core.worktree`; a worktree of it with an uncommitted edit."""
    proj = tmp_path / "sep"
    proj.mkdir()
    git(proj, "init", "-q", "-b", "main", "--separate-git-dir", str(tmp_path / "sep.git"))
    (proj / "README.md").write_text("x\n")
    git(proj, "add", "README.md")
    git(proj, "commit", "-qm", "initial")
    git(proj, "config", "core.worktree", str(proj))
    wt = old_worktree(proj, "sep")
    (wt / "README.md").write_text("edited in the worktree\n")
    age(wt)
    report = clean(proj)
    assert (wt / "README.md").read_text() == "edited in the worktree\n", report


def test_a_nested_repository_the_worktree_ignores_keeps_it(repo: Path) -> None:
    """`git init scratch` inside the worktree, listed in `.git/info/exclude`, commits made
    there and no remote: the walk finds it whatever git status says of the worktree."""
    wt = old_worktree(repo, "nested")
    sub = make_repo(wt / "scratch", files={"exp.py": "print(1)\n"})
    only = commit(sub, "exp.py", "print(2)\n")
    (Path(git(wt, "rev-parse", "--git-common-dir")) / "info").mkdir(exist_ok=True)
    with open(Path(git(wt, "rev-parse", "--git-common-dir")) / "info" / "exclude", "a") as fh:
        fh.write("scratch/\n")
    assert git(wt, "status", "--porcelain") == ""
    age(wt)
    report = clean(repo)
    assert (sub / ".git").is_dir() and only in git(sub, "rev-list", "--all").split(), report


def test_a_private_clone_with_local_commits_inside_the_worktree_keeps_it(repo: Path, tmp_path: Path) -> None:
    """`git clone` of another repository into an ignored `vendor/` of the worktree, a fix
    committed there and never pushed."""
    lib = make_repo(tmp_path / "private-lib", files={"lib.c": "int x;\n"})
    wt = old_worktree(repo, "clone")
    with open(wt / ".gitignore", "a") as fh:
        fh.write("vendor/\n")
    git(wt, "commit", "-qam", "ignore vendor")
    git(wt, "clone", "-q", str(lib), "vendor/lib")
    only = commit(wt / "vendor" / "lib", "lib.c", "int x = 1;\n")
    git(repo, "merge", "-q", "--ff-only", "worktree-clone")
    age(wt)
    report = clean(repo)
    assert only in git(wt / "vendor" / "lib", "rev-list", "--all").split(), report


def test_a_file_recreated_outside_the_sparse_cone_keeps_the_worktree(repo: Path) -> None:
    """Cone mode, `docs/` left out; the user writes `docs/guide.md` again by hand (a tracked
    path outside the cone) and a new `docs/new.md`."""
    commit(repo, "docs/guide.md", "v1\n")
    commit(repo, "src/main.py", "print()\n")
    wt = old_worktree(repo, "cone")
    git(wt, "sparse-checkout", "set", "--cone", "src")
    assert not (wt / "docs").exists()
    (wt / "docs").mkdir()
    (wt / "docs" / "guide.md").write_text("v2, rewritten by hand\n")
    (wt / "docs" / "new.md").write_text("new\n")
    age(wt)
    report = clean(repo)
    assert (wt / "docs" / "guide.md").exists() and (wt / "docs" / "new.md").exists(), report


def test_a_worktrees_folder_linked_to_another_disk_keeps_a_dirty_worktree(repo: Path, tmp_path: Path) -> None:
    """`.claude/worktrees` is a symlink to a bigger disk; a worktree there holds a new file."""
    disk = tmp_path / "bigdisk" / "worktrees"
    disk.mkdir(parents=True)
    (repo / ".claude").mkdir()
    (repo / ".claude" / "worktrees").symlink_to(disk)
    wt = old_worktree(repo, "far")
    (wt / "draft.md").write_text("draft\n")
    age(disk / "far")
    report = clean(repo)
    assert (disk / "far" / "draft.md").exists(), report


def test_a_worktrees_folder_linked_to_another_disk_lets_a_clean_one_go(repo: Path, tmp_path: Path) -> None:
    """The bound of the case above: clean and merged, it goes, and nothing beside it."""
    disk = tmp_path / "bigdisk" / "worktrees"
    disk.mkdir(parents=True)
    (disk / "keep.txt").write_text("the user's\n")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "worktrees").symlink_to(disk)
    old_worktree(repo, "far")
    age(disk / "far")
    report = clean(repo)
    assert (disk / "keep.txt").exists(), report


def test_an_editor_holding_a_file_open_keeps_the_worktree(
        repo: Path, started: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """A process working elsewhere (its cwd the home) holds a file of the old, clean
    worktree open."""
    wt = old_worktree(repo, "open")
    held = wt / "README.md"
    code = f"f = open({str(held)!r}); import time; time.sleep(60)"
    started.append(subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path))
    time.sleep(0.3)
    age(wt)
    report = clean(repo)
    assert wt.is_dir(), report
    assert kept(report, wt) == "in_use", report


@pytest.mark.parametrize("value", [0, -5, "365", 1.5, None, True])
def test_an_odd_cleanup_period_in_the_project_layer_keeps_a_young_worktree(repo: Path, value: object) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.local.json").write_text(json.dumps({"cleanupPeriodDays": value}))
    wt = old_worktree(repo, "odd")
    age(wt, 10)
    report = clean(repo)
    assert wt.is_dir(), report


# --- temp folders ---------------------------------------------------------------------------


def live_session(sandbox: SandboxEnv, pid: int, session: str, cwd: Path) -> None:
    sandbox.write_session(str(pid), pid=pid, sessionId=session, cwd=str(cwd),
                          procStart=proc_start_time(pid))


def old_session_folder(sandbox: SandboxEnv, slug: str, session: str) -> Path:
    folder = sandbox.claude_tmp / slug / session
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "scratchpad" / "plan.md").write_text("the plan\n")
    age(folder)
    return folder


def test_a_session_folder_under_another_projects_name_is_kept_while_live(
        sandbox: SandboxEnv, live_pid: int, tmp_path: Path) -> None:
    """The user moved the project (`mv ~/old ~/new`) and resumed: the running session's
    folder still sits under the old project's name."""
    session = str(uuid.uuid4())
    new = tmp_path / "new"
    new.mkdir()
    live_session(sandbox, live_pid, session, new)
    folder = old_session_folder(sandbox, "-home-old", session)
    report = clean()
    assert (folder / "scratchpad" / "plan.md").exists(), report


def test_a_session_folder_whose_id_differs_only_in_case_is_kept_while_live(
        sandbox: SandboxEnv, live_pid: int, tmp_path: Path) -> None:
    """A UUID is the same whatever the case of its hex digits (`--session-id` takes one as
    the user typed it)."""
    session = str(uuid.uuid4())
    live_session(sandbox, live_pid, session.upper(), tmp_path)
    folder = old_session_folder(sandbox, "-work", session)
    report = clean()
    assert (folder / "scratchpad" / "plan.md").exists(), report


def test_session_start_keeps_its_own_folder_named_in_another_case(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`claude --resume ABCD...` with the id typed in capitals: the hook's session id and the
    old folder of the same session differ only in case; the detached cleanup keeps it."""
    from tests.hooks.test_session_start import payload, wait_for

    session = str(uuid.uuid4())
    folder = old_session_folder(sandbox, "-work", session)
    result = run_hook(payload(tmp_path, session.upper()), cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == b""
    wait_for(paths.session_log(str(tmp_path), session.upper()), "UNKNOWN_KEPT")
    assert (folder / "scratchpad" / "plan.md").exists()


def test_a_dead_session_folder_linking_into_a_live_one_takes_nothing_of_it(
        sandbox: SandboxEnv, live_pid: int, tmp_path: Path) -> None:
    live = str(uuid.uuid4())
    live_session(sandbox, live_pid, live, tmp_path)
    alive = old_session_folder(sandbox, "-work", live)
    dead = sandbox.claude_tmp / "-work" / str(uuid.uuid4())
    dead.mkdir()
    (dead / "scratchpad").symlink_to(alive / "scratchpad")
    linked = sandbox.claude_tmp / "-work" / str(uuid.uuid4())
    linked.symlink_to(alive)
    age(dead)
    set_mtime(linked, 40 * DAY)
    report = clean()
    assert not dead.exists(), report
    assert (alive / "scratchpad" / "plan.md").exists() and linked.is_symlink(), report


def test_a_probe_folder_that_is_a_users_repository_keeps_its_commits(sandbox: SandboxEnv) -> None:
    probe = make_repo(sandbox.claude_tmp / "fswatch-probe-x", files={"a.txt": "1\n"})
    only = commit(probe, "a.txt", "2\n")
    set_mtime(probe, 2 * 3600)
    report = clean()
    assert (probe / ".git").is_dir() and only in git(probe, "rev-list", "--all").split(), report


def test_a_probe_folder_holding_a_live_socket_is_kept(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """A probe-named folder a server binds its socket in (by a relative name, a socket path
    is limited to 108 bytes), then works elsewhere: only the socket says it is in use."""
    probe = sandbox.claude_tmp / "fswatch-probe-sock"
    probe.mkdir(parents=True)
    server = subprocess.Popen([sys.executable, "-c", (
        "import os, socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind('srv.sock'); s.listen();"
        "os.chdir(sys.argv[1]); print('ready', flush=True); time.sleep(60)"), str(tmp_path)],
        cwd=probe, stdout=subprocess.PIPE)
    started.append(server)
    assert server.stdout is not None and server.stdout.readline() == b"ready\n"
    set_mtime(probe, 2 * 3600)
    report = clean()
    assert (probe / "srv.sock").exists(), report


def test_a_cleared_sessions_background_output_its_claude_still_writes_is_kept(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], tmp_path: Path) -> None:
    """`run_in_background` started a dev server, then `/clear`: the sessions file names the
    new id, the old id's folder holds `tasks/<id>.output`, which Claude writes from the
    server's pipe (the server itself holds nothing there)."""
    old = str(uuid.uuid4())
    folder = old_session_folder(sandbox, "-work", old)
    output = folder / "tasks" / "b1x2y3.output"
    output.parent.mkdir()
    output.write_text("listening on :3000\n")
    set_mtime(folder, 40 * DAY)
    claude = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time; out = open(sys.argv[1], 'ab');"
        "server = subprocess.Popen(['sleep', '60'], stdout=subprocess.PIPE);"
        "print('ready', flush=True); time.sleep(60)"), str(output)], cwd=tmp_path, stdout=subprocess.PIPE)
    started.append(claude)
    assert claude.stdout is not None and claude.stdout.readline() == b"ready\n"
    live_session(sandbox, claude.pid, str(uuid.uuid4()), tmp_path)
    report = clean()
    assert output.exists(), report


# --- worktrees: work only the worktree's own reflog leads to ----------------------------------


def test_work_a_reset_dropped_before_many_undone_commits_keeps_the_worktree(repo: Path) -> None:
    """`git reset --hard HEAD~1` dropped a commit of work; then the usual "undo the last
    commit" (`git commit`, `git reset --soft HEAD~1`) forty times while shaping the next one.
    Only the worktree's HEAD reflog still leads to the dropped work."""
    wt = old_worktree(repo, "undo")
    work = commit(wt, "work.txt", "a day of work\n")
    git(wt, "reset", "-q", "--hard", "HEAD~1")
    (wt / "next.txt").write_text("next\n")
    git(wt, "add", "next.txt")
    for i in range(40):
        git(wt, "commit", "-qm", f"wip {i}")
        git(wt, "reset", "-q", "--soft", "HEAD~1")
    git(wt, "commit", "-qm", "next")
    git(repo, "merge", "-q", "--ff-only", "worktree-undo")
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, work), report


def test_a_reset_older_than_the_users_reflog_expiry_keeps_the_worktree(repo: Path) -> None:
    """`git config gc.reflogExpireUnreachable never`: the user keeps every reflog entry.
    Work a reset dropped 35 days ago is still there for git; only the worktree's reflog
    leads to it (ORIG_HEAD moved on with a later reset)."""
    git(repo, "config", "gc.reflogExpireUnreachable", "never")
    wt = old_worktree(repo, "expiry")
    work = commit(wt, "work.txt", "old work\n")
    then = time.time() - 35 * DAY
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=wt, check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": f"@{int(then)} +0000"})
    git(wt, "reset", "-q", "--hard")  # ORIG_HEAD moves on: the reflog alone names the work
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, work), report


def test_a_reset_older_than_a_shorter_reflog_expiry_lets_the_worktree_go(repo: Path) -> None:
    """The bound of the case above: with `gc.reflogExpireUnreachable 60.days` git itself
    drops the entry of a reset made 90 days ago, so the merged worktree goes."""
    git(repo, "config", "gc.reflogExpireUnreachable", "60.days.ago")
    wt = old_worktree(repo, "expired")
    commit(wt, "work.txt", "old work\n")
    then = time.time() - 90 * DAY
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=wt, check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": f"@{int(then)} +0000"})
    git(wt, "reset", "-q", "--hard")
    age(wt)
    report = clean(repo)
    assert not wt.exists(), report


def test_a_patch_applied_with_git_am_on_a_detached_head_and_left_keeps_the_worktree(
        repo: Path, tmp_path: Path) -> None:
    """`git switch --detach` to try a patch from a mail or a PR (`git am`), then back to the
    branch (git warns "you are leaving 1 commit behind"): only the worktree's HEAD reflog
    leads to the applied commit."""
    wt = old_worktree(repo, "patch")
    mail = tmp_path / "mail"
    sender = make_repo(tmp_path / "sender", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    git(sender, "fetch", "-q", str(repo), "main")
    git(sender, "reset", "-q", "--hard", "FETCH_HEAD")
    commit(sender, "fix.txt", "the fix\n", "a fix from the list")
    git(sender, "format-patch", "-q", "-1", "-o", str(mail))
    git(wt, "switch", "-q", "--detach")
    git(wt, "am", "-q", *map(str, sorted(mail.iterdir())))
    applied = git(wt, "rev-parse", "HEAD")
    git(wt, "switch", "-q", "worktree-patch")
    age(wt)
    report = clean(repo)
    assert wt.is_dir() and reachable(repo, applied), report


# --- two accounts: the cleanup runs in the second one, a session of the first one runs --------


def test_a_live_session_of_the_default_config_keeps_its_folder_when_the_cleanup_runs_in_another(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`claude` (the personal account, `~/.claude`) resumed an old session; a session of the
    work account (`CLAUDE_CONFIG_DIR=~/.claude-work claude`) starts and its cleanup runs. Both
    share Claude's temp folder (it depends on the uid only)."""
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    personal = subprocess.Popen(["sleep", "120"], env=env)
    try:
        session = str(uuid.uuid4())
        default = sandbox.home / ".claude" / "sessions"
        default.mkdir(parents=True, exist_ok=True)
        (default / f"{personal.pid}.json").write_text(json.dumps({
            "pid": personal.pid, "sessionId": session, "cwd": str(tmp_path),
            "procStart": proc_start_time(personal.pid)}))
        folder = old_session_folder(sandbox, "-work", session)
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(sandbox.home / ".claude-work"))
        report = clean()
        assert (folder / "scratchpad" / "plan.md").exists(), report
    finally:
        personal.kill()
        personal.wait()
