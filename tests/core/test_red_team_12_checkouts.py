"""Red team, round twelve: session checkouts and the worktree rule, both ways.

The loss found: a folder under `.claude/worktrees/` whose `.git` names another worktree's
entry (the folder replaced by a copy of another checkout, a `.git` file copied over) was
judged through the entry its `.git` names, while the removal made git forget the entry that
names the folder: the commit only that entry's HEAD held went dangling. Now such a folder is
`not_a_worktree` (app/core/worktree_entry.py). The git states and files tried this round
that held are tested too (they document what held): a shallow project, an orphan branch, a
branch renamed in the checkout, a branch merged into an unpushed local main, a branch checked
out in two places, a `build` that is a file, a pip `-e git+` clone in `.venv`, an empty folder.

The second loss: an ignore pattern for build output (`target/`) that also names a folder of
the project's source (a Java package `acme/target`, its classes added with `git add -f`) hid a
new class from `git status`, and the class went with the checkout
(app/core/swallowed_source.py); output beside a placeholder still goes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from app.core import worktrees
from app.core.worktree_entry import names_its_entry
from tests.support import git, make_repo, pushed_repo, set_mtime

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


def commit(tree: Path, name: str, text: str) -> str:
    (tree / name).write_text(text)
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", name)
    return git(tree, "rev-parse", "HEAD")


# --- the loss: the entry judged is the entry deleted -------------------------------------


def test_a_folder_whose_git_file_names_another_entry_keeps_the_commit_its_own_entry_holds(project: Path) -> None:
    a = worktree(project, "a", "--detach")
    b = worktree(project, "b")
    git(a, "commit", "-q", "--allow-empty", "-m", "the only copy of my notes")
    only = git(a, "rev-parse", "HEAD")
    (a / ".git").write_text((b / ".git").read_text())  # a's folder now reads as b's checkout

    assert judge(a, project) == ("keep", "not_a_worktree")
    done = worktrees.remove_worktree(a, project, live_cwds=[], period_s=PERIOD)

    assert done.status == "kept" and a.is_dir()
    assert f"{a} {only[:7]}" in " ".join(git(project, "worktree", "list").split())  # git's entry holds it


def test_a_second_entry_naming_the_same_folder_is_never_forgotten_unjudged(project: Path) -> None:
    """Git's `worktree remove` forgets the first entry naming the folder (here a copy of its
    admin folder, detached on a commit nothing else holds), not the one its `.git` names."""
    a = worktree(project, "a")
    entry = Path(git(a, "rev-parse", "--absolute-git-dir"))
    shutil.copytree(entry, entry.parent / "0")
    only = git(project, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "only here")
    (entry.parent / "0" / "HEAD").write_text(only + "\n")

    assert judge(a, project) == ("keep", "not_a_worktree")
    worktrees.remove_worktree(a, project, live_cwds=[], period_s=PERIOD)

    assert a.is_dir() and (entry.parent / "0" / "HEAD").read_text().strip() == only


def test_pointers_written_relative_both_ways_still_name_the_entry(project: Path) -> None:
    """git 2.48's `worktree.useRelativePaths` writes both pointers relative: still the same
    entry (a check that only read absolute ones would keep every such checkout for ever)."""
    a = worktree(project, "a")
    entry = Path(git(a, "rev-parse", "--absolute-git-dir"))
    (a / ".git").write_text(f"gitdir: {os.path.relpath(entry, a)}\n")
    (entry / "gitdir").write_text(os.path.relpath(a / ".git", entry) + "\n")
    assert names_its_entry(str(a))
    (entry / "gitdir").write_text(str(project / ".claude" / "worktrees" / "elsewhere" / ".git") + "\n")
    assert not names_its_entry(str(a))


def test_an_old_merged_worktree_with_only_node_modules_still_goes(project: Path) -> None:
    a = worktree(project, "a")
    (a / "node_modules" / "pkg").mkdir(parents=True)
    (a / "node_modules" / "pkg" / "index.js").write_text("x\n")
    set_mtime(a, OLD)
    done = worktrees.remove_worktree(a, project, live_cwds=[], period_s=PERIOD)
    assert done.status == "removed" and not a.exists()
    assert done.branch_deleted and not git(project, "branch", "--list", "worktree-a")


# --- what held (each passed at once) --------------------------------------------------------


def test_a_commit_on_a_shallow_projects_checkout_is_unmerged_and_a_plain_one_goes(tmp_path: Path) -> None:
    source = make_repo(tmp_path / "src", files={"a.txt": "a\n"})
    commit(source, "b.txt", "b\n")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "-b", "main", f"file://{source}", str(shallow))
    plain = worktree(shallow, "plain")
    worked = worktree(shallow, "worked")
    commit(worked, "c.txt", "c\n")
    assert judge(plain, shallow) == ("remove", "age")
    assert judge(worked, shallow) == ("keep", "unmerged")


def test_an_orphan_branch_and_a_renamed_branch_keep_their_commits(project: Path) -> None:
    orphan = worktree(project, "orphan")
    git(orphan, "checkout", "-q", "--orphan", "fresh-start")
    git(orphan, "commit", "-q", "-m", "a history of its own")
    renamed = worktree(project, "renamed")
    commit(renamed, "renamed.txt", "work\n")
    git(renamed, "branch", "-m", "feature")
    assert judge(orphan, project) == ("keep", "unmerged")
    assert judge(renamed, project) == ("keep", "unmerged")


def test_commits_merged_into_the_local_main_it_tracks_are_on_another_branch(project: Path) -> None:
    tracking = project / ".claude" / "worktrees" / "tracking"
    git(project, "worktree", "add", "-q", "--track", "-b", "worktree-tracking", str(tracking), "main")
    commit(tracking, "t.txt", "t\n")
    git(project, "merge", "-q", "--ff-only", "worktree-tracking")  # main is not pushed
    assert judge(tracking, project) == ("remove", "age")


def test_a_branch_checked_out_in_two_places_keeps_its_commits_and_stays(project: Path, tmp_path: Path) -> None:
    a = worktree(project, "a")
    commit(a, "a.txt", "work\n")
    git(project, "worktree", "add", "-q", "-f", str(tmp_path / "second"), "worktree-a")  # the same branch
    assert judge(a, project) == ("keep", "unmerged")
    git(project, "merge", "-q", "--ff-only", "worktree-a")
    done = worktrees.remove_worktree(a, project, live_cwds=[], period_s=PERIOD)
    assert done.status == "removed" and not done.branch_deleted  # git keeps a branch checked out elsewhere
    assert git(tmp_path / "second", "symbolic-ref", "--short", "HEAD") == "worktree-a"


@pytest.mark.parametrize("ignored", [False, True])
def test_a_file_named_build_is_work_not_a_build_folder(project: Path, ignored: bool) -> None:
    a = worktree(project, "a")
    if ignored:
        with open(project / ".git" / "info" / "exclude", "a") as fh:
            fh.write("build\n")
    (a / "build").write_text("#!/bin/sh\nmake all\n")
    assert judge(a, project) == ("keep", "dirty")


def test_a_pip_editable_clone_in_the_venv_lets_the_checkout_go(tmp_path: Path, project: Path) -> None:
    (project / ".gitignore").write_text("node_modules/\n.venv/\n")
    git(project, "commit", "-q", "-am", "ignore the venv")
    git(project, "push", "-q")
    lib = make_repo(tmp_path / "lib", files={"m.py": "1\n"})
    commit(lib, "n.py", "2\n")
    a = worktree(project, "a")
    git(tmp_path, "clone", "-q", "-b", "main", f"file://{lib}", str(a / ".venv" / "src" / "lib"))
    git(a / ".venv" / "src" / "lib", "checkout", "-q", "HEAD~1")  # pip checks out the pinned commit
    assert judge(a, project) == ("remove", "age")


def test_an_empty_folder_holds_no_file_and_keeps_nothing(project: Path) -> None:
    """Seed 000 counts files: git shows no empty folder, and there is nothing in it to lose."""
    a = worktree(project, "a")
    (a / "later" / "empty").mkdir(parents=True)
    assert judge(a, project) == ("remove", "age")


# --- the loss: source in a folder named like build output, swallowed by its ignore pattern ---


@pytest.fixture
def maven(tmp_path: Path) -> Path:
    """A Java project whose `target/` ignore pattern also names its package `acme/target`,
    whose classes were added with `git add -f`; `build/` keeps a tracked placeholder."""
    proj = make_repo(tmp_path / "maven", files={
        ".gitignore": "target/\nbuild/*\n!build/.gitkeep\n*.class\n", "build/.gitkeep": "",
        "src/acme/Main.java": "class Main {}\n", "tools/gen/Gen.java": "class Gen {}\n"})
    (proj / "src" / "acme" / "target").mkdir()
    (proj / "src" / "acme" / "target" / "Aim.java").write_text("class Aim {}\n")
    (proj / "tools" / "gen" / "dist").mkdir()
    (proj / "tools" / "gen" / "dist" / "README").write_text("generated here\n")
    git(proj, "add", "-f", "src/acme/target/Aim.java", "tools/gen/dist/README")
    git(proj, "commit", "-q", "-m", "the target package")
    return proj


def test_a_new_class_in_a_package_the_target_pattern_ignores_keeps_the_checkout(maven: Path) -> None:
    a = worktree(maven, "a")
    (a / "src" / "acme" / "target" / "Tracker.java").write_text("class Tracker { /* a day of work */ }\n")
    assert git(a, "status", "--porcelain") == ""  # the user's git status: clean
    assert judge(a, maven) == ("keep", "dirty")
    done = worktrees.remove_worktree(a, maven, live_cwds=[], period_s=PERIOD)
    assert done.status == "kept" and (a / "src" / "acme" / "target" / "Tracker.java").exists()


def test_build_output_beside_a_tracked_placeholder_or_in_a_target_folder_still_goes(maven: Path) -> None:
    a = worktree(maven, "a")
    (a / "build" / "app.jar").write_text("jar\n")  # build/* ignores it; build/ itself is not ignored
    (a / "target" / "classes").mkdir(parents=True)
    (a / "target" / "classes" / "Main.class").write_text("cafebabe\n")
    (a / "tools" / "gen" / "dist" / "out.class").write_text("cafebabe\n")
    assert judge(a, maven) == ("remove", "age")


def test_output_in_an_ignored_folder_whose_only_tracked_file_is_a_placeholder_goes(tmp_path: Path) -> None:
    proj = make_repo(tmp_path / "proj", files={".gitignore": "coverage/\n", "README.md": "x\n"})
    (proj / "coverage").mkdir()
    (proj / "coverage" / ".gitkeep").write_text("")
    git(proj, "add", "-f", "coverage/.gitkeep")
    git(proj, "commit", "-q", "-m", "keep the coverage folder")
    a = worktree(proj, "a")
    (a / "coverage" / "lcov.info").write_text("TN:\n")
    assert judge(a, proj) == ("remove", "age")


# --- the third loss: a new package named like an output folder, untracked or ignored -------


@pytest.fixture
def unignored(tmp_path: Path) -> Path:
    """A project that ignores nothing, with a Python package and a web package."""
    return make_repo(tmp_path / "unignored", files={
        "README.md": "x\n", "src/mypkg/__init__.py": "", "packages/web/package.json": "{}\n",
        "packages/web/index.js": "1\n"})


def test_a_new_subpackage_named_build_is_source_not_output(unignored: Path) -> None:
    a = worktree(unignored, "a")
    (a / "src" / "mypkg" / "build").mkdir()
    (a / "src" / "mypkg" / "build" / "__init__.py").write_text("def make(): ...  # a day of work\n")
    assert git(a, "status", "--porcelain") == "?? src/mypkg/build/"
    assert judge(a, unignored) == ("keep", "dirty")


def test_output_folders_at_the_top_beside_a_package_json_or_holding_bundles_still_go(unignored: Path) -> None:
    a = worktree(unignored, "a")
    for folder in ("build", "packages/web/dist", "packages/web/coverage", "node_modules", "src/mypkg/dist"):
        (a / folder).mkdir(parents=True)
        (a / folder / "out.js").write_text("1\n")
    (a / "build" / "__init__.py").write_text("")  # at the top: the build's own
    assert judge(a, unignored) == ("remove", "age")


@pytest.mark.parametrize("folder", ["src/mypkg/build", "src/mypkg/dist", "src/main/java/acme/target",
                                    "src/main/java/acme/target/impl", "src/mypkg/build/sub"])
def test_a_new_package_a_broad_ignore_pattern_hides_is_source(tmp_path: Path, folder: str) -> None:
    """Python's usual `.gitignore` names `build/` and `dist/` anywhere, Maven's `target/`; a
    package so named may hold only subpackages (`target/impl/Aim.java`)."""
    proj = make_repo(tmp_path / "proj", files={".gitignore": "build/\ndist/\ntarget/\n*.pyc\n",
                                               "src/mypkg/__init__.py": "", "static/app.js": "1\n"})
    a = worktree(proj, "a")
    (a / folder).mkdir(parents=True)
    (a / folder / ("Aim.java" if "java" in folder else "__init__.py")).write_text("# a day of work\n")
    (a / "static" / "dist").mkdir()
    (a / "static" / "dist" / "bundle.js").write_text("1\n")  # a bundler's output, nested: goes
    assert git(a, "status", "--porcelain") == ""
    assert judge(a, proj) == ("keep", "dirty")
    shutil.rmtree(a / folder)
    assert judge(a, proj) == ("remove", "age")


def test_a_release_leaves_a_new_package_named_build_and_takes_its_pycache(tmp_path: Path) -> None:
    """The release's default scratch (regenerable folders at any depth) never takes a package
    of source so named: it ran at every session end."""
    from app.core.scratch import scratch_plan

    proj = make_repo(tmp_path / "proj", files={".gitignore": "build/\n__pycache__/\nnode_modules/\n",
                                               "src/mypkg/__init__.py": ""})
    a = worktree(proj, "a")
    for rel in ("src/mypkg/build/__init__.py", "src/mypkg/build/__pycache__/x.pyc", "build/lib/mypkg/__init__.py",
                "node_modules/d/i.js"):
        (a / rel).parent.mkdir(parents=True, exist_ok=True)
        (a / rel).write_text("x\n")
    assert scratch_plan(str(a), str(proj)) == (["build", "node_modules", "src/mypkg/build/__pycache__"], [])


def test_installs_beside_a_force_added_patched_package_in_node_modules_go(tmp_path: Path) -> None:
    proj = make_repo(tmp_path / "proj", files={".gitignore": "node_modules/\n", "index.js": "1\n"})
    (proj / "node_modules" / "patched").mkdir(parents=True)
    (proj / "node_modules" / "patched" / "index.js").write_text("fixed\n")
    git(proj, "add", "-f", "node_modules/patched/index.js")
    git(proj, "commit", "-q", "-m", "vendor a patched package")
    a = worktree(proj, "a")
    (a / "node_modules" / "left-pad" / "dist").mkdir(parents=True)
    (a / "node_modules" / "left-pad" / "dist" / "index.js").write_text("1\n")
    assert judge(a, proj) == ("remove", "age")
