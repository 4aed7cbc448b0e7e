"""Red team, round thirteen: session checkouts (seed 002) and the worktree rule.

Driven with ordinary git, in the checkout or in the main one, then the release or a removal.

The losses found: a removal dropped "the record of the path" after the folder went, also the
record of a checkout made there again meanwhile, and SessionStart and `claudetto release` took
a checkout another removal held in its trash for its last check for gone and dropped its record
(app/core/checkout_identity.py: the record dropped is the one read, and only once gone for
good); a user's own worktree moved where a released one was passed for it (its creation time is
older than the record: the admin folder tells it now); a killed removal's leftover was put back
after its record was dropped; `git update-ref` moving the checkout's branch away from its
commit, or `commit-tree` and `update-ref HEAD` making one on a detached HEAD, write reflog
entries with no message, read neither as a reset nor as a commit made there
(app/core/unique_refs.py); two `worktree-*` branches holding one commit, deleted at once, both
went (app/core/worktree_branch.py). What held is tested too: commits only a tag, a stash, notes
or a replace ref hold; a worktree of another repository placed here; a symlink named like a
checkout; a name with a newline; the porcelain ways of moving a branch away; the main
checkout's `gc --prune=now`; a nested repository's commits on two of its own branches.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from app.core import checkouts, worktrees
from tests.support import (
    ended_session_checkout,
    git,
    make_repo,
    pushed_repo,
    run_cli,
    run_hook,
    set_mtime,
)

OLD = 40 * 86_400
PERIOD = 30 * 86_400


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project pushed to its remote, ignoring node_modules."""
    return pushed_repo(tmp_path, {"README.md": "x\n", ".gitignore": "node_modules/\n"})


def worktree(proj: Path, name: str, *extra: str) -> Path:
    path = proj / ".claude" / "worktrees" / name
    git(proj, "worktree", "add", "-q", *(extra or ("-b", f"worktree-{name}")), str(path))
    return path


def judge(tree: Path, proj: Path) -> tuple[str, str]:
    set_mtime(tree, OLD)
    verdict = worktrees.judge_worktree(tree, proj, live_cwds=[], period_s=PERIOD)
    return verdict.action, verdict.reason


# --- the record of a checkout made again where a removed one was ---------------------------


def test_a_checkout_made_again_while_the_old_one_is_removed_keeps_its_record(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep removes an old released `work`; right after its folder went, and before its
    record was dropped, `claude --worktree work` made the checkout again and recorded its
    session. Dropping "the record of `work`" then took the new one: its session's end released
    nothing, and WorktreeRemove called it `unknown`."""
    old = ended_session_checkout(project, "work", "s-old")
    set_mtime(old, OLD)
    real_delete = worktrees.delete_branch
    made: list[str] = []

    def delete_then_create(proj: str, branch: str | None) -> bool:
        deleted = real_delete(proj, branch)
        done = run_hook({"hook_event_name": "WorktreeCreate", "session_id": "s-new", "cwd": str(project),
                         "name": "work"}, cwd=project)
        made.append(done.stdout.decode().strip().splitlines()[-1] if done.returncode == 0 else done.stderr.decode())
        return deleted

    monkeypatch.setattr(worktrees, "delete_branch", delete_then_create)
    done = worktrees.remove_worktree(old, project, live_cwds=[], period_s=PERIOD)

    assert done.status == "removed" and made == [str(old)] and old.is_dir()
    record = checkouts.registry().get(str(old))
    assert record is not None and record["sessions"].get("s-new") is True, checkouts.registry()


def release(path: Path) -> dict[str, Any]:
    """`claudetto release PATH --json`: its report (a refusal's stderr when it printed none)."""
    result = run_cli("release", str(path), "--json")
    assert "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else {"stderr": result.stderr}


def test_a_users_own_worktree_moved_where_a_released_one_was_is_never_released(
        project: Path, tmp_path: Path) -> None:
    """The user's own worktree (made before, on a branch of their own, its `build/` and
    `node_modules/` theirs) is moved with `git worktree move` to where a released checkout was,
    removed since with git; the old record is still there. Git's creation time of that worktree
    is older than the record: it passed for the checkout claudetto made, and went released."""
    mine = tmp_path / "mine"
    git(project, "worktree", "add", "-q", "-b", "my-branch", str(mine))
    (mine / "node_modules" / "dep").mkdir(parents=True)
    (mine / "node_modules" / "dep" / "i.js").write_text("the user's install\n")
    (mine / "build").mkdir()
    (mine / "build" / "app").write_text("the user's build\n")
    old = ended_session_checkout(project, "work", "s-old")
    git(project, "worktree", "remove", str(old))
    git(project, "worktree", "move", str(mine), str(old))

    done = release(old)

    assert (old / "node_modules" / "dep" / "i.js").exists(), done
    assert (old / "build" / "app").exists(), done


# --- a commit only a repository-wide ref holds -----------------------------------------------


def clean(*projects: Path) -> dict[str, Any]:
    result = run_cli("clean", "--json", *map(str, projects))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def kept_reasons(report: dict[str, Any]) -> dict[str, str]:
    return {str(k["path"]): str(k["reason"]) for k in report["worktrees_kept"]}


HOLDERS = {
    "tag": ["tag", "v-local"],
    "replace": ["replace", "--graft", "HEAD"],
    "notes": ["notes", "add", "-m", "the only copy of my review"],
    "stash": None,
}


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_a_commit_only_a_shared_ref_holds_outlives_the_checkout_and_a_gc(project: Path, holder: str) -> None:
    """(Held.) A commit made on a detached HEAD in the checkout, then held only by a ref every
    worktree shares (a tag made in the checkout, `git replace`, `git notes`, a `git stash`
    whose base is that commit), then the checkout switched back to its branch: the commit
    (and the stash, the note) survive the sweep and the main checkout's `git gc --prune=now`
    after."""
    tree = worktree(project, "shared")
    git(tree, "switch", "-q", "--detach")
    (tree / "mine.txt").write_text("work\n")
    git(tree, "add", "mine.txt")
    git(tree, "commit", "-q", "-m", "the only copy")
    only = git(tree, "rev-parse", "HEAD")
    if holder == "stash":
        (tree / "mine.txt").write_text("more work\n")
        git(tree, "stash", "-q")
    else:
        git(tree, *(HOLDERS[holder] or []))
    if holder == "replace":  # the grafted copy (made a root): only refs/replace holds it
        only = git(tree, "rev-parse", f"refs/replace/{only}")
    git(tree, "switch", "-q", "worktree-shared")
    set_mtime(tree, OLD)

    report = clean(project)
    git(project, "gc", "-q", "--prune=now")

    # a tag or a stash holds the commit itself: the checkout goes; a note or a replacement does
    # not (the commit noted, or replaced, is still only in the checkout's reflog): kept
    assert tree.exists() == (holder in ("notes", "replace")), report

    assert git(project, "cat-file", "-t", only) == "commit"
    if holder == "stash":
        assert "more work" in git(project, "stash", "show", "-p", "stash@{0}")
    if holder == "notes":
        assert git(project, "notes", "show", only) == "the only copy of my review"


def test_a_worktree_of_another_repository_placed_here_is_never_judged_as_this_ones(
        project: Path, tmp_path: Path) -> None:
    """(Held.) `git -C ../other worktree add <project>/.claude/worktrees/x`: git of this
    project does not list it. Kept `not_a_worktree` by the sweep, `unknown` by WorktreeRemove;
    WorktreeCreate of that name fails loud; its files and its commits stay."""
    other = make_repo(tmp_path / "other", files={"o.txt": "o\n"})
    x = project / ".claude" / "worktrees" / "x"
    git(other, "worktree", "add", "-q", "-b", "worktree-x", str(x))
    git(x, "commit", "-q", "--allow-empty", "-m", "other's")
    (x / "node_modules").mkdir()
    (x / "node_modules" / "dep.js").write_text("dep\n")
    set_mtime(x, OLD)

    assert kept_reasons(clean(project)).get(str(x)) == "not_a_worktree"
    made = run_hook({"hook_event_name": "WorktreeCreate", "session_id": "s1", "cwd": str(project), "name": "x"},
                    cwd=project)
    removed = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s1", "cwd": str(project),
                        "worktree_path": str(x)}, cwd=project)

    assert made.returncode != 0 and removed.returncode == 1, (made.stderr, removed.stderr)
    assert (x / "node_modules" / "dep.js").exists() and str(x) in git(other, "worktree", "list")
    assert checkouts.registry() == {}


def test_a_worktree_named_with_a_newline_is_judged_as_itself(project: Path) -> None:
    """(Held.) `git worktree add $'.claude/worktrees/a\\nworktree b'` beside `b`: git's listing
    is read NUL-separated, so the name cannot pass for another entry. The one holding a draft
    is kept `dirty`, the clean merged one beside it goes."""
    b = worktree(project, "b", "--detach")
    odd = project / ".claude" / "worktrees" / "a\nworktree b"
    git(project, "worktree", "add", "-q", "--detach", str(odd))
    (odd / "draft.md").write_text("the only copy\n")
    for tree in (b, odd):
        set_mtime(tree, OLD)

    report = clean(project)

    assert (odd / "draft.md").exists(), report
    assert kept_reasons(report).get(str(odd)) == "dirty", report
    assert not b.exists(), report


# --- a commit the checkout's branch was moved away from ------------------------------------

DROPS = {
    "update-ref in the checkout": ("tree", [["update-ref", "refs/heads/worktree-d", "origin/main"],
                                            ["reset", "-q", "--hard"]]),
    "update-ref in the main checkout": ("project", [["update-ref", "refs/heads/worktree-d", "origin/main"]]),
    # (held) the ways that write git's own words for it
    "switch -C": ("tree", [["switch", "-q", "-C", "worktree-d", "origin/main"]]),
    "checkout -B": ("tree", [["checkout", "-q", "-B", "worktree-d", "origin/main"]]),
    "reset --keep": ("tree", [["reset", "-q", "--keep", "origin/main"]]),
    "rebase --onto": ("tree", [["rebase", "-q", "--onto", "origin/main", "HEAD"]]),
    "reflogs expired": ("tree", [["reset", "-q", "--hard", "origin/main"],
                                 ["reflog", "expire", "--expire=now", "--all"]]),
}


@pytest.mark.parametrize("way", sorted(DROPS))
def test_a_commit_the_checkouts_branch_was_moved_away_from_keeps_it(project: Path, way: str) -> None:
    """`git update-ref refs/heads/worktree-d origin/main` (a model "resetting" its branch with
    plumbing, in the checkout or from the main one) writes a reflog entry with no message: it
    was not read as a reset, the checkout went, its `worktree-d` branch was deleted as merged
    (its tip now on origin/main), and with the branch its reflog, the last thing leading to the
    commit. The porcelain ways (`switch -C`, `checkout -B`, `reset --keep`, `rebase --onto`,
    every reflog expired but ORIG_HEAD) held."""
    tree = worktree(project, "d")
    (tree / "w.txt").write_text("work\n")
    git(tree, "add", "w.txt")
    git(tree, "commit", "-q", "-m", "the only copy")
    only = git(tree, "rev-parse", "HEAD")
    where, commands = DROPS[way]
    for command in commands:
        git(tree if where == "tree" else project, *command)
    if where == "project":
        git(tree, "reset", "-q", "--hard")  # then the checkout made clean again
    assert git(tree, "rev-parse", "HEAD") != only

    assert judge(tree, project) == ("keep", "unmerged")
    done = worktrees.remove_worktree(tree, project, live_cwds=[], period_s=PERIOD)
    assert done.status == "kept" and git(project, "rev-parse", "--verify", "-q", "refs/heads/worktree-d")


# --- two removals at once ------------------------------------------------------------------


def test_two_branches_holding_one_commit_deleted_at_once_never_both_go(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`x` and `y` hold the same unpushed commit (`y` made from `x`'s branch, or merged it),
    each on its `worktree-*` branch; both checkouts are removed at once (two Claudes exiting
    their worktrees, or one's WorktreeRemove while the session-start cleanup sweeps). Each
    deletion asked "is every commit on another branch?", both said yes (the other branch),
    and both branches went: the commit was on none. Here both ask before either deletes."""
    from app.core import git as git_module
    from app.core import worktree_branch

    only = git(project, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "the only copy")
    for branch in ("worktree-x", "worktree-y"):  # their checkouts gone, git forgot them
        git(project, "branch", branch, only)
    both_asked = threading.Barrier(2)
    real_output = git_module.output

    def output(args: list[str], **kwargs: Any) -> str:
        answer = real_output(args, **kwargs)
        if args[:1] == ["rev-list"] and any(a.startswith("--exclude=") for a in args):
            with contextlib.suppress(threading.BrokenBarrierError):
                both_asked.wait(timeout=3)  # a lock that makes the other wait breaks this
        return answer

    monkeypatch.setattr(git_module, "output", output)
    threads = [threading.Thread(target=worktree_branch.delete_branch, args=(str(project), b))
               for b in ("worktree-x", "worktree-y")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert git(project, "branch", "--contains", only), "the commit is on no branch"


# --- a checkout another removal holds in its trash while it checks it -----------------------


@pytest.mark.parametrize("who", ["session start", "release"])
def test_a_checkout_another_removal_is_checking_keeps_its_record(project: Path, who: str) -> None:
    """A removal (the session-start cleanup of one Claude, the dashboard) moves the checkout
    into its trash for its last check, finds it must stay, and puts it back. Meanwhile a second
    Claude starts (SessionStart claims: records whose folder is gone are dropped), or
    `claudetto release` of it runs: both took "not there" for "gone" and dropped its record.
    Back in its place, the checkout was nobody's: its session's end released nothing, and
    WorktreeRemove called it `unknown`."""
    from app.core import removal
    from app.core.release import release_checkout

    checkout = ended_session_checkout(project, "busy", "s-old")
    before = checkouts.registry()[str(checkout)]

    def meanwhile(moved: str) -> str:
        assert not checkout.exists() and os.path.isdir(moved)
        if who == "session start":
            checkouts.claim("s-new", str(project), None, "startup")
        else:
            release_checkout(str(checkout))
        return "dirty"  # its last check keeps it: put back

    done = removal.remove(str(checkout), str(checkout.parent), "worktree", kind="worktree", guard=meanwhile)

    assert done.status == "kept" and checkout.is_dir(), done
    assert checkouts.registry().get(str(checkout), {}).get("created") == before["created"], checkouts.registry()


def test_the_main_checkouts_gc_meanwhile_takes_nothing_the_checkout_alone_leads_to(project: Path) -> None:
    """(Held.) A commit the checkout reset away (only its reflogs and ORIG_HEAD lead to it),
    another left behind on a detached HEAD, staged work: the user's `git gc --prune=now` in
    the main checkout counts every worktree's HEAD, index and reflogs, so they are all still
    there, and the checkout is kept for them."""
    tree = worktree(project, "gc")
    git(tree, "commit", "-q", "--allow-empty", "-m", "reset away")
    reset = git(tree, "rev-parse", "HEAD")
    git(tree, "reset", "-q", "--hard", "HEAD~1")
    git(tree, "switch", "-q", "--detach")
    git(tree, "commit", "-q", "--allow-empty", "-m", "left behind")
    behind = git(tree, "rev-parse", "HEAD")
    git(tree, "switch", "-q", "worktree-gc")
    (tree / "staged.txt").write_text("staged only\n")
    git(tree, "add", "staged.txt")
    blob = git(tree, "rev-parse", ":staged.txt")

    git(project, "gc", "-q", "--prune=now")

    assert judge(tree, project) == ("keep", "dirty")
    git(tree, "reset", "-q", "--hard")  # the staged work given up: the commits still keep it
    assert judge(tree, project) == ("keep", "unmerged")
    for sha in (reset, behind):
        assert git(project, "cat-file", "-t", sha) == "commit"
    assert git(project, "cat-file", "-t", blob) == "blob"


@pytest.mark.parametrize("who", ["session start", "release"])
def test_a_checkout_a_killed_removal_left_in_its_trash_comes_back_with_its_record(
        project: Path, who: str) -> None:
    """The session-start cleanup was killed (the machine slept, a `kill`) while its last check
    of the checkout ran: the folder is in its trash, pending, never journaled; the next one
    to look puts it back. A SessionStart or a `claudetto release` finding the folder missing
    dropped its record first, and the checkout came back nobody's."""
    from app.core.release import release_checkout
    from tests.core.test_red_team_12_concurrency import killed

    checkout = ended_session_checkout(project, "killed", "s-old")
    (checkout / "draft.md").write_text("the only copy\n")
    killed(checkout, checkout.parent, "after_rename")
    assert not checkout.exists()

    if who == "session start":
        checkouts.claim("s-new", str(project), None, "startup")
    else:
        release_checkout(str(checkout))

    assert (checkout / "draft.md").exists()
    assert str(checkout) in checkouts.registry(), checkouts.registry()


def test_a_symlink_named_like_a_checkout_takes_nothing_it_points_at(project: Path, tmp_path: Path) -> None:
    """(Held.) `ln -s ~/work/feature .claude/worktrees/feature`: a link to the user's own
    worktree of the project, clean and merged, kept `not_a_worktree` by the sweep and by
    WorktreeRemove (`symlink`); the worktree it points at and git's entry for it stay."""
    feature = tmp_path / "feature"
    git(project, "worktree", "add", "-q", "--detach", str(feature))
    link = project / ".claude" / "worktrees" / "feature"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(feature)
    set_mtime(feature, OLD)
    os.utime(link, (os.stat(feature).st_atime, os.stat(feature).st_mtime), follow_symlinks=False)

    assert kept_reasons(clean(project)).get(str(link)) == "not_a_worktree"
    removed = run_hook({"hook_event_name": "WorktreeRemove", "session_id": "s1", "cwd": str(project),
                        "worktree_path": str(link)}, cwd=project)

    assert removed.returncode == 1 and link.is_symlink(), removed.stderr
    assert (feature / "README.md").exists() and str(feature) in git(project, "worktree", "list")


def test_a_nested_repositorys_commits_on_two_of_its_own_branches_keep_the_checkout(project: Path) -> None:
    """(Held.) `git init node_modules/scraper` in the checkout (a regenerable folder: the
    project ignores it), its work committed on `main` and on `feature`: "on another branch" is
    no copy when both branches live in the folder that goes. Kept `unmerged`."""
    tree = worktree(project, "nested")
    inner = make_repo(tree / "node_modules" / "scraper", files={"s.py": "print(1)\n"})
    git(inner, "branch", "feature")
    assert judge(tree, project) == ("keep", "unmerged")
    done = worktrees.remove_worktree(tree, project, live_cwds=[], period_s=PERIOD)
    assert done.status == "kept" and (inner / "s.py").exists()


def test_a_commit_made_with_plumbing_and_left_on_a_detached_head_keeps_the_checkout(project: Path) -> None:
    """`git commit-tree` then `git update-ref HEAD` on a detached HEAD (a model committing
    without hooks), then `git switch` back to the branch: only the HEAD reflog, whose entry
    has no message, leads to the commit. It was not read as made there: the checkout went and
    its reflog with it."""
    tree = worktree(project, "plumbing")
    git(tree, "switch", "-q", "--detach")
    (tree / "w.txt").write_text("work\n")
    git(tree, "add", "w.txt")
    made = git(tree, "commit-tree", git(tree, "write-tree"), "-p", "HEAD", "-m", "the only copy")
    git(tree, "update-ref", "HEAD", made)
    git(tree, "switch", "-q", "worktree-plumbing")

    assert judge(tree, project) == ("keep", "unmerged")
