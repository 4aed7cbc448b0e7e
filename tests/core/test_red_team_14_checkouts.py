"""Red team, round fourteen: session checkouts (seed 002) and the worktree rule.

Driven with ordinary git, in the checkout or in the main one, then WorktreeRemove through
`python -P -m hooks`, `claudetto clean`, or the judgement itself.

The losses found: a commit left behind on a detached HEAD early in a long session was named
only in the first lines of the checkout's HEAD reflog, and only its newest MiB was read
(commits with long one-line messages, a rebase's picks: the checkout went with the commit);
now a reflog that goes with the checkout is read whole (app/core/reflog_lines.py). A pull
request's branch checked out detached and rebased, its conflicts resolved, then left (`git
switch` away: git warns "leaving 2 commits behind") was made of `rebase (pick)` and `rebase
(continue)` entries, read as no commit made there: the resolution went with the checkout. A
rebase that ends on the detached HEAD now counts; one of a branch (its `finish` entry) or
given up does not. And only the newest 100 commits made on a detached HEAD were asked about:
a spike left behind before a 101-commit backport cherry-picked on a detached HEAD (then put on
a pushed branch) went; now every one is (`git rev-list --stdin`). WorktreeRemove of
`<checkout>/missing/..` (nothing at that spelling, the checkout at what it resolves to) said
"gone" and dropped the checkout's record; now it is kept, record and all. A `git notes merge`
stopped on a conflict (its resolution written in the checkout's own git dir, `git status`
clean) went with the checkout; now it is an operation waiting half done (`dirty`). A merge
whose conflict was resolved by hand, then undone by `git reset --hard HEAD~1`, was read as
bringing no change of its own: the resolution went; now a dropped merge whose tree is not
what git merges its parents into counts (`git merge-tree`), and a clean one still does not. A
tag made in an old clone inside the checkout (`.venv/src/lib`) was taken for one the clone
fetched once `git gc` had expired the reflog entries older than 90 days (the clone's birth was
read from the first entry left); now the files the clone wrote once tell its birth too. An
untracked file deeper than git can open (`git status` warns "could not open directory", lists
nothing and exits 0) went with the checkout; now such a warning makes the judgement unsure.
The record of a checkout on a drive not mounted at a session's start elsewhere was dropped as
removed; now a record whose project is gone too stays (app/core/checkout_identity.py).

Held: a commit whose branch was deleted, one on a branch checked out nowhere, a detached
rebase kept on a branch or given up, a branch rebased twice, a clean merge
undone, a stat check weakened only for the project's folder by an `includeIf` of the user's,
WorktreeRemove of the user's own worktree outside `.claude/worktrees`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from app.core import worktrees
from tests.support import (
    CHECKOUT_OLD_S,
    CHECKOUT_PERIOD_S,
    SandboxEnv,
    claude_worktree,
    commit_file,
    deep_folders,
    git,
    judge_old_worktree,
    make_repo,
    pushed_repo,
    run_cli,
    session_checkout,
    session_hook,
    set_mtime,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project pushed to its remote, ignoring node_modules."""
    return pushed_repo(tmp_path, {"README.md": "x\n", ".gitignore": "node_modules/\n"})


# --- the HEAD reflog read whole ----------------------------------------------------------------


def test_a_commit_left_behind_early_in_a_long_session_keeps_the_checkout(project: Path) -> None:
    """Early on, the session commits on a detached HEAD and switches back (git warns "you are
    leaving 1 commit behind"); then it makes 70 commits whose messages are one long line (a
    test log pasted into `-m`) and pushes them. Only the first lines of the checkout's HEAD
    reflog, over a MiB back, name the early commit: WorktreeRemove removed the checkout."""
    tree = session_checkout(project, "long")
    git(tree, "switch", "-q", "--detach")
    early = commit_file(tree, "spike.py", "the only copy of the spike\n", "spike")
    git(tree, "switch", "-q", "worktree-long")
    line = "step passed: " + "test_parser_handles_nested_brackets ok; " * 400
    for i in range(70):
        git(tree, "commit", "-q", "--allow-empty", "-m", f"{i} {line}")
    git(tree, "push", "-q", "origin", "HEAD:main")
    git(project, "fetch", "-q", "origin")
    assert os.path.getsize(git(tree, "rev-parse", "--git-dir") + "/logs/HEAD") > 1 << 20

    removed = session_hook("WorktreeRemove", project, worktree_path=str(tree))

    assert removed.returncode == 1 and "unmerged" in removed.stderr.decode(), removed.stderr
    assert tree.is_dir() and git(tree, "show", f"{early}:spike.py") == "the only copy of the spike"


def vendor_series(project: Path, count: int) -> None:
    """`origin/series`: `count` small commits on top of main, the remote's (one fast-import)."""
    import subprocess

    stream = []
    for i in range(count):
        message = f"vendor fix {i}\n".encode()
        stream += [b"commit refs/heads/series\n", f"committer T <t@example.invalid> {1_700_000_000 + i} +0000\n".encode(),
                   f"data {len(message)}\n".encode() + message, *([b"from refs/heads/main\n"] if i == 0 else []),
                   f"M 100644 inline vendor/f{i}.txt\ndata 2\n{i % 10}\n".encode()]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=project, input=b"".join(stream), check=True)
    git(project, "push", "-q", "origin", "series")
    git(project, "branch", "-q", "-D", "series")


def test_a_commit_left_behind_before_a_long_detached_series_keeps_the_checkout(project: Path) -> None:
    """A spike committed on a detached HEAD and left; later the session backports a vendor
    series of 101 commits with `git cherry-pick` on a detached HEAD, puts the result on a
    branch and pushes it. Only the newest 100 commits made there were asked about, all of them
    pushed: the sweep removed the checkout with the spike."""
    vendor_series(project, 101)
    tree = claude_worktree(project, "backport")
    git(tree, "switch", "-q", "--detach")
    spike = commit_file(tree, "spike.py", "the only copy of the spike\n", "spike")
    git(tree, "switch", "-q", "--detach", "origin/main")
    git(tree, "cherry-pick", "origin/main..origin/series")
    git(tree, "switch", "-q", "-c", "backport")
    git(tree, "push", "-q", "origin", "backport")
    git(tree, "switch", "-q", "worktree-backport")

    assert judge_old_worktree(tree, project) == ("keep", "unmerged")
    set_mtime(tree, CHECKOUT_OLD_S)
    report = clean(project)
    assert tree.is_dir() and git(tree, "show", f"{spike}:spike.py") == "the only copy of the spike", report


def test_a_commit_whose_branch_was_deleted_keeps_the_checkout_one_on_a_branch_left_elsewhere_lets_it_go(
        project: Path) -> None:
    """(Held.) In one checkout: a commit made on `side`, `git switch worktree-deleted`, then
    `git branch -D side`: only the checkout's HEAD reflog leads to it, kept `unmerged`. In
    another: the commit is on `keep-me`, a branch checked out nowhere: the branch outlives the
    checkout, which goes, and the commit with the branch."""
    deleted = claude_worktree(project, "deleted")
    git(deleted, "switch", "-q", "-c", "side")
    lost = commit_file(deleted, "side.py", "S = 1\n", "side work")
    git(deleted, "switch", "-q", "worktree-deleted")
    git(deleted, "branch", "-q", "-D", "side")
    elsewhere = claude_worktree(project, "elsewhere")
    git(elsewhere, "switch", "-q", "-c", "keep-me")
    kept = commit_file(elsewhere, "keep.py", "K = 1\n", "kept work")
    git(elsewhere, "switch", "-q", "worktree-elsewhere")

    assert judge_old_worktree(deleted, project) == ("keep", "unmerged")
    set_mtime(elsewhere, CHECKOUT_OLD_S)
    assert worktrees.remove_worktree(elsewhere, project, live_cwds=[], period_s=CHECKOUT_PERIOD_S).status == "removed"
    assert git(project, "rev-parse", "keep-me") == kept and git(project, "cat-file", "-t", lost) == "commit"


# --- a rebase on a detached HEAD ----------------------------------------------------------------


def pull_request_rebased_detached(project: Path, tree: Path) -> str:
    """A colleague's pushed branch checked out detached in the checkout, rebased onto a main
    that moved, the conflict resolved by hand; the session then switches back."""
    git(project, "switch", "-q", "-c", "pr-42")
    commit_file(project, "README.md", "pr version\n", "pr change")
    commit_file(project, "feature.py", "F = 1\n", "pr feature")
    git(project, "push", "-q", "origin", "pr-42")
    git(project, "switch", "-q", "main")
    git(project, "branch", "-q", "-D", "pr-42")
    commit_file(project, "README.md", "main version\n", "main change")
    git(project, "push", "-q", "origin", "main")
    git(tree, "fetch", "-q", "origin")
    git(tree, "switch", "-q", "--detach", "origin/pr-42")
    conflicted = run_git(tree, "rebase", "origin/main")
    assert conflicted.returncode != 0
    (tree / "README.md").write_text("main and pr versions, merged by hand\n")
    git(tree, "add", "README.md")
    done = run_git(tree, "-c", "core.editor=true", "rebase", "--continue")
    assert done.returncode == 0, done.stderr
    resolved = git(tree, "rev-parse", "HEAD")
    git(tree, "switch", "-q", "worktree-pr")
    return resolved


def run_git(where: Path, *args: str) -> Any:
    import subprocess

    return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, check=False)


def test_a_pull_request_rebased_on_a_detached_head_keeps_its_conflict_resolution(project: Path) -> None:
    """`git switch --detach origin/pr-42`, `git rebase origin/main`, the conflict resolved,
    `git rebase --continue`, then `git switch worktree-pr`: the rebased commits are on no
    branch, and the HEAD reflog names them only as `rebase (continue)` and `rebase (pick)`.
    WorktreeRemove removed the checkout, and the resolution with it."""
    tree = session_checkout(project, "pr")
    resolved = pull_request_rebased_detached(project, tree)

    removed = session_hook("WorktreeRemove", project, worktree_path=str(tree))

    assert removed.returncode == 1 and "unmerged" in removed.stderr.decode(), removed.stderr
    assert git(tree, "show", f"{resolved}:README.md") == "main and pr versions, merged by hand"


def test_a_detached_rebase_kept_on_a_branch_or_given_up_and_a_branch_rebased_twice_let_the_checkout_go(
        project: Path) -> None:
    """(Held.) The same rebase with its result then put on a branch (`git switch -c`), one
    given up (`git rebase --abort`), and the checkout's own branch rebased twice (its first
    picks replaced on purpose): nothing is left behind, each checkout goes."""
    kept_on_branch = claude_worktree(project, "pr")
    pull_request_rebased_detached(project, kept_on_branch)
    git(kept_on_branch, "switch", "-q", "--detach", "HEAD@{1}")
    git(kept_on_branch, "switch", "-q", "-c", "pr-42-rebased")
    git(kept_on_branch, "push", "-q", "origin", "pr-42-rebased")
    git(kept_on_branch, "switch", "-q", "worktree-pr")

    given_up = claude_worktree(project, "abort")
    git(given_up, "switch", "-q", "--detach", "origin/pr-42")
    assert run_git(given_up, "rebase", "origin/main").returncode != 0
    git(given_up, "rebase", "--abort")
    git(given_up, "switch", "-q", "worktree-abort")

    twice = claude_worktree(project, "twice", "origin/main~1")
    commit_file(twice, "mine.py", "M = 1\n", "mine")
    git(twice, "rebase", "-q", "origin/main")
    git(twice, "commit", "-q", "--amend", "-m", "mine, reworded")
    git(twice, "rebase", "-q", "--force-rebase", "origin/main")
    git(twice, "push", "-q", "origin", "HEAD:main")
    git(project, "fetch", "-q", "origin")

    for tree in (kept_on_branch, given_up, twice):
        assert judge_old_worktree(tree, project) == ("remove", "age"), tree


def clean(*projects: Path) -> dict[str, Any]:
    result = run_cli("clean", "--json", *map(str, projects))
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


# --- a merge a reset dropped ------------------------------------------------------------------


def merge_then_undo(project: Path, tree: Path, *, conflict: bool) -> str:
    """main moves on the server; the checkout's pushed commit is merged with it (a conflict
    resolved by hand, or none), then the merge undone with `git reset --hard HEAD~1`."""
    commit_file(project, "README.md" if conflict else "other.md", "main version\n", "main")
    git(project, "push", "-q", "origin", "main")
    commit_file(tree, "README.md", "mine\n", "mine")
    git(tree, "push", "-q", "origin", "HEAD:wip")
    git(tree, "fetch", "-q", "origin")
    merged = run_git(tree, "merge", "--no-edit", "origin/main")
    assert (merged.returncode != 0) == conflict, merged.stdout
    if conflict:
        (tree / "README.md").write_text("mine and main, merged by hand\n")
        git(tree, "add", "README.md")
        git(tree, "commit", "-q", "--no-edit")
    merge = git(tree, "rev-parse", "HEAD")
    git(tree, "reset", "-q", "--hard", "HEAD~1")
    return merge


def test_a_merge_resolved_by_hand_then_undone_by_a_reset_keeps_the_checkout(project: Path) -> None:
    """`git merge origin/main`, the conflict resolved, committed; then `git reset --hard
    HEAD~1` (meant: drop the commit before it). The merge was read as bringing no change of its
    own, and every other commit is on the server: the sweep removed the checkout, and the
    resolution that only the reflog and ORIG_HEAD still led to."""
    tree = claude_worktree(project, "merge")
    merge = merge_then_undo(project, tree, conflict=True)

    assert judge_old_worktree(tree, project) == ("keep", "unmerged")
    assert git(tree, "show", f"{merge}:README.md") == "mine and main, merged by hand"


def test_a_clean_merge_undone_by_a_reset_lets_the_checkout_go(project: Path) -> None:
    """(Held.) The same merge without a conflict: merging again gives it back, the checkout
    goes."""
    tree = claude_worktree(project, "clean-merge")
    merge_then_undo(project, tree, conflict=False)

    assert judge_old_worktree(tree, project) == ("remove", "age")


# --- a tag in a clone whose reflog git expired ------------------------------------------------


def git_at(where: Path, days_ago: int, *args: str) -> None:
    """git as run `days_ago` days ago (its commits and reflog entries dated then)."""
    import subprocess
    import time

    when = f"@{int(time.time()) - days_ago * 86_400} +0000"
    env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when}
    subprocess.run(["git", *args], cwd=where, env=env, check=True, capture_output=True)


def test_a_tag_in_an_old_editable_clone_whose_reflog_git_expired_keeps_the_checkout(
        project: Path, tmp_path: Path) -> None:
    """`pip install -e git+...` cloned lib into the checkout's `.venv/src/lib` 200 days ago; 150
    days ago the user fixed it there, tagged the fix `v1-local` and went back to origin/main;
    `git gc` has since expired the reflog entries older than 90 days. A tag counts only when
    its commit is no older than the clone, and the clone's birth was read from its first
    reflog entry left: the pull of last week. The release of `.venv` and the removal of the
    checkout took the fix only the tag held."""
    lib = make_repo(tmp_path / "lib", files={"lib.py": "V = 1\n"})
    (project / ".git" / "info" / "exclude").write_text(".venv/\n")
    tree = claude_worktree(project, "venv")
    clone = tree / ".venv" / "src" / "lib"
    git_at(tree, 200, "clone", "-q", str(lib), str(clone))
    for top, dirs, files in os.walk(clone):  # the clone's files, written then
        for name in dirs + files:
            set_mtime(Path(top) / name, 200 * 86_400)
    (clone / "lib.py").write_text("V = 2  # the local fix\n")
    git_at(clone, 150, "commit", "-q", "-am", "local fix")
    git_at(clone, 150, "tag", "v1-local")
    git_at(clone, 150, "reset", "-q", "--hard", "origin/main")
    commit_file(lib, "more.py", "M = 1\n", "upstream moves on")
    git_at(clone, 7, "pull", "-q")
    git(clone, "reflog", "expire", "--expire=90.days.ago", "--expire-unreachable=30.days.ago", "--all")

    assert judge_old_worktree(tree, project) == ("keep", "unmerged")
    assert git(clone, "show", "v1-local:lib.py") == "V = 2  # the local fix"


# --- a folder git status cannot open ----------------------------------------------------------


def test_an_untracked_file_deeper_than_git_can_open_keeps_the_checkout(project: Path) -> None:
    """A session's tool nested folders past the system's path limit (a recursive copy into
    itself, a fixture for a path-length bug) and left a file at the bottom. `git status`
    warns "could not open directory", lists nothing and exits 0: the checkout was judged
    clean and removed with the file. Now a folder git could not open makes it unsure."""
    tree = claude_worktree(project, "deep")
    # 22 x 201 bytes: past PATH_MAX (4096) below the checkout
    deep_folders(tree, 22, "d" * 200, bottom=("notes.txt", b"the only copy\n"))
    assert git(tree, "status", "--porcelain") == ""  # what the user's own git says

    assert judge_old_worktree(tree, project) == ("keep", "dirty")


# --- a weakened stat check set only for some folders -------------------------------------------


def test_a_stat_check_weakened_by_an_include_for_the_projects_folder_still_sees_the_edit(
        project: Path, sandbox: SandboxEnv) -> None:
    """(Held.) The user's `~/.gitconfig` includes a work config for repositories under the
    project's folder (`[includeIf "gitdir:..."]`), and that one sets `core.trustctime=false`;
    a tool rewrites a tracked file in place, its size kept and its mtime put back: `git status`
    says clean. Asked without a repository, git reads no such include, so the question "does
    the user's config weaken the stat check?" must not be answered there alone."""
    work = sandbox.home / ".gitconfig-work"
    work.write_text("[core]\n\ttrustctime = false\n")
    (sandbox.home / ".gitconfig").write_text(f'[includeIf "gitdir:{project}/"]\n\tpath = {work}\n')
    tree = claude_worktree(project, "include")
    assert git(tree, "config", "core.trustctime") == "false"
    config = tree / "config.ini"
    config.write_text("token = aaaa\n")
    os.utime(config, ns=(1_700_000_000_000_000_000,) * 2)  # older than the index: not racy
    git(tree, "add", "config.ini")
    git(tree, "commit", "-qm", "config")
    git(tree, "push", "-q", "origin", "HEAD:main")
    git(project, "fetch", "-q", "origin")
    before = os.stat(config)
    with open(config, "r+") as fh:  # in place: the same inode
        fh.write("token = bbbb\n")
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert git(tree, "status", "--porcelain") == ""

    assert judge_old_worktree(tree, project) == ("keep", "dirty")


# --- an operation waiting half done in the checkout's git dir ---------------------------------


def test_a_notes_merge_waiting_for_its_conflicts_keeps_the_checkout(project: Path) -> None:
    """`git notes merge -s manual review` in the checkout stops on a conflict; git puts the
    conflicting notes in the checkout's own git dir (NOTES_MERGE_WORKTREE), where the user
    writes the resolution before `git notes merge --commit`. `git status` says clean:
    WorktreeRemove removed the checkout, the half-done merge and the resolution with it."""
    tree = session_checkout(project, "notes")
    head = git(tree, "rev-parse", "HEAD")
    git(tree, "notes", "add", "-m", "base", head)
    git(tree, "update-ref", "refs/notes/review", "refs/notes/commits")
    git(tree, "notes", "add", "-f", "-m", "mine", head)
    git(tree, "notes", "--ref=review", "add", "-f", "-m", "theirs", head)
    assert run_git(tree, "notes", "merge", "-s", "manual", "review").returncode != 0
    resolution = Path(git(tree, "rev-parse", "--absolute-git-dir")) / "NOTES_MERGE_WORKTREE" / head
    resolution.write_text("mine and theirs, reconciled by hand\n")
    assert git(tree, "status", "--porcelain") == ""

    removed = session_hook("WorktreeRemove", project, worktree_path=str(tree))

    assert removed.returncode == 1 and "dirty" in removed.stderr.decode(), removed.stderr
    assert resolution.read_text() == "mine and theirs, reconciled by hand\n"


# --- a project on a drive not mounted now ------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0 and not Path("/proc/self/ns/user").exists(), reason="no user namespace")
def test_the_record_of_a_checkout_on_a_drive_not_mounted_outlives_a_session_start_elsewhere(
        tmp_path: Path) -> None:
    """The project lives on a drive (`/media/usb/proj`, here a bind mount); `claude --worktree
    x` made a checkout there. The drive is unmounted, and a session starts in another project:
    every record whose folder was gone was dropped as removed, so once the drive was back the
    checkout was unrecorded (its session's end released nothing, WorktreeRemove called it
    `unknown`); WorktreeRemove asked meanwhile answered "gone" and dropped it too. Now a record
    whose project is gone too stays, and WorktreeRemove keeps it; one whose checkout the user
    removed while the project is there still goes."""
    import subprocess
    import sys

    from app.core import checkouts

    disk, usb = tmp_path / "disk", tmp_path / "usb"
    make_repo(disk / "proj", files={"README.md": "x\n"})
    other = make_repo(tmp_path / "other", files={"o.txt": "o\n"})
    usb.mkdir()
    proj = usb / "proj"
    steps = []
    for n, (cwd, payload) in enumerate([
            (proj, {"hook_event_name": "WorktreeCreate", "name": "x", "session_id": "s1"}),
            (proj, {"hook_event_name": "WorktreeCreate", "name": "y", "session_id": "s1"}),
            (other, {"hook_event_name": "SessionStart", "source": "startup", "session_id": "s2"}),
            (other, {"hook_event_name": "SessionStart", "source": "startup", "session_id": "s3"}),
            (proj, {"hook_event_name": "WorktreeRemove", "session_id": "s1",
                    "worktree_path": str(proj / ".claude" / "worktrees" / "x")})]):
        (tmp_path / f"in{n}.json").write_text(json.dumps({**payload, "cwd": str(cwd), "transcript_path": "/t"}))
        steps.append(f"{sys.executable} -P -m hooks < {tmp_path}/in{n}.json > {tmp_path}/out{n} 2>&1")
    script = " && ".join([
        f"mount --bind {disk} {usb}", steps[0], steps[1],
        f"git -C {proj} worktree remove {proj}/.claude/worktrees/y",  # the user's own removal
        f"umount {usb}", steps[2],  # the drive away: a session starts elsewhere, x's asks it gone
        f"{steps[4]}; echo $? > {tmp_path}/removed",
        f"mount --bind {disk} {usb}", steps[3]])  # back, and another session starts
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         check=False, env=dict(os.environ))
    if run.returncode != 0 and "mount" in run.stderr:
        pytest.skip(f"no bind mount here: {run.stderr.strip()}")
    assert run.returncode == 0, (run.stderr, [(tmp_path / f"out{n}").read_text() for n in range(5)])

    assert (tmp_path / "removed").read_text().strip() == "1"  # not "gone": it comes back with the drive
    assert set(checkouts.registry()) == {str(proj / ".claude" / "worktrees" / "x")}
    assert (disk / "proj" / ".claude" / "worktrees" / "x" / "README.md").exists()


# --- WorktreeRemove of a path that resolves to a checkout ---------------------------------------


def test_worktree_remove_of_a_missing_path_that_resolves_to_a_checkout_keeps_it_and_its_record(
        project: Path) -> None:
    """`worktree_path` spelled `<checkout>/missing/..`: nothing is at that spelling, yet it
    resolves to the checkout. WorktreeRemove answered "gone" (Claude then skips its own
    removal and says so) and dropped the checkout's record: its session's end released
    nothing and a later WorktreeRemove called it `unknown`. Now it is kept, record and all."""
    from app.core import checkouts

    tree = session_checkout(project, "odd")
    (tree / "draft.md").write_text("the only copy\n")

    removed = session_hook("WorktreeRemove", project, worktree_path=f"{tree}/missing/..")

    assert removed.returncode == 1, removed.stderr
    assert (tree / "draft.md").exists() and str(tree) in checkouts.registry()
    again = session_hook("WorktreeRemove", project, worktree_path=str(tree))
    assert again.returncode == 1 and "dirty" in again.stderr.decode(), again.stderr


def test_worktree_remove_of_a_users_worktree_outside_claude_worktrees_leaves_it(project: Path, tmp_path: Path) -> None:
    """(Held.) WorktreeRemove naming the user's own clean, merged worktree beside the project
    (`git worktree add ../proj-feature`), also spelled through the project
    (`<project>/../proj-feature`): not a checkout claudetto made, `unknown`, untouched, and git
    still knows it."""
    feature = tmp_path / "proj-feature"
    git(project, "worktree", "add", "-q", "--detach", str(feature))
    set_mtime(feature, CHECKOUT_OLD_S)

    for spelled in (str(feature), f"{project}/../proj-feature"):
        removed = session_hook("WorktreeRemove", project, worktree_path=spelled)
        assert removed.returncode == 1 and "unknown" in removed.stderr.decode(), removed.stderr
    assert (feature / "README.md").exists() and str(feature) in git(project, "worktree", "list")
