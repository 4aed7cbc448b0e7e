"""Red team, round nine: git state that lives in a worktree's own admin folder
(`.git/worktrees/<name>/`) or in its working tree, where `git status` says clean and every
branch is merged, yet the removal of the worktree would take it. Driven as Claude and a user
drive it: WorktreeCreate and WorktreeRemove piped into `python -P -m hooks`, `claudetto
worktrees` in a subprocess, real git, real submodules and nested repositories.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

OLD = 90 * 86_400  # older than any cleanup period


def create(cwd: Path, name: str, session_id: str = "s-1") -> Path:
    """WorktreeCreate as Claude runs it; the checkout it made."""
    made = run_hook({"hook_event_name": "WorktreeCreate", "cwd": str(cwd), "name": name,
                     "session_id": session_id, "transcript_path": "/t"}, cwd=cwd)
    assert made.returncode == 0, made.stderr
    path = Path(made.stdout.decode().strip().splitlines()[-1])
    assert path.is_dir()
    return path


def remove(cwd: Path, path: Path, session_id: str = "s-1") -> subprocess.CompletedProcess[bytes]:
    return run_hook({"hook_event_name": "WorktreeRemove", "cwd": str(cwd), "session_id": session_id,
                     "worktree_path": str(path)}, cwd=cwd)


def listed(project: Path, checkout: Path) -> dict[str, object]:
    """The row `claudetto worktrees --json` gives the (old) checkout."""
    set_mtime(checkout, OLD)
    done = run_cli("worktrees", "--json", str(project))
    assert done.returncode == 0, done.stderr
    rows = [w for w in json.loads(done.stdout)["worktrees"] if w["path"] == str(checkout)]
    assert len(rows) == 1, done.stdout
    return rows[0]


def kept(cwd: Path, checkout: Path, reason: str) -> None:
    """The checkout is kept for `reason` by WorktreeRemove (exit 1, the reason on stderr) and
    `claudetto worktrees` says the same."""
    assert listed(cwd, checkout)["reason"] == reason
    result = remove(cwd, checkout)
    assert result.returncode == 1 and reason.encode() in result.stderr, result.stderr
    assert checkout.is_dir()


def logged(sandbox: SandboxEnv) -> str:
    """What claudetto's hooks logged (the user's `git status` is clean: the log says why)."""
    root = sandbox.claude_tmp_root / "claudetto"
    return "".join(p.read_text() for p in sorted(root.glob("*/*.log"))) if root.exists() else ""


def gone(cwd: Path, checkout: Path) -> None:
    result = remove(cwd, checkout)
    assert result.returncode == 0, result.stderr
    assert not checkout.exists()


def with_submodule(tmp_path: Path) -> Path:
    """A project with a submodule `lib` (its remote is a folder beside it)."""
    lib = make_repo(tmp_path / "lib-remote", files={"lib.c": "int x;\n"})
    repo = make_repo(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(repo, "commit", "-q", "-m", "lib")
    return repo


# --- the working tree: files git status never looks at --------------------------------------


def test_files_written_into_a_submodule_folder_the_worktree_never_checked_out_are_kept(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A new worktree gets its submodules as empty folders (git does not check them out). A
    session that fills `lib/` by hand (copied sources, a patch in progress) writes files git
    status never looks at: it sees a submodule not checked out, and nothing else."""
    repo = with_submodule(tmp_path)
    checkout = create(repo, "agent-a0000001")
    assert list((checkout / "lib").iterdir()) == []
    (checkout / "lib" / "lib.c").write_text("int x = 42; /* the fix, only here */\n")
    assert git(checkout, "status", "--porcelain", "--ignored") == ""  # git sees nothing
    kept(repo, checkout, "dirty")
    assert "lib: files in the folder of a submodule that is not checked out" in logged(sandbox)
    assert (checkout / "lib" / "lib.c").read_text().startswith("int x = 42;")


def test_an_empty_submodule_folder_lets_the_worktree_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = with_submodule(tmp_path)
    checkout = create(repo, "agent-a0000002")
    assert listed(repo, checkout)["removable"] is True
    gone(repo, checkout)


def test_a_checked_out_submodule_with_nothing_new_lets_the_worktree_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = with_submodule(tmp_path)
    checkout = create(repo, "agent-a0000003")
    git(checkout, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
    assert (checkout / "lib" / "lib.c").exists()
    assert listed(repo, checkout)["removable"] is True
    gone(repo, checkout)


def test_a_nested_git_init_with_its_own_commits_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git init` inside the worktree, ignored by the project, with commits of its own."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "scratchpad/\n"})
    checkout = create(repo, "agent-a0000004")
    nested = checkout / "scratchpad"
    nested.mkdir()
    git(nested, "init", "-q", "-b", "main")
    (nested / "plan.md").write_text("only here\n")
    git(nested, "add", "plan.md")
    git(nested, "commit", "-q", "-m", "plan")
    kept(repo, checkout, "dirty")  # the project's status already names the ignored folder


def test_a_bisect_just_started_keeps_the_worktree(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git bisect start` with nothing marked yet: its start point lives in the worktree's
    admin folder alone."""
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a0000005")
    git(checkout, "bisect", "start")
    kept(repo, checkout, "dirty")


def test_settings_of_the_worktree_alone_never_hide_an_untracked_file(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`config.worktree` says show no untracked files and names an excludes file that ignores
    everything: the judgement asks git its own way and still sees the note."""
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a0000006")
    git(checkout, "config", "extensions.worktreeConfig", "true")
    everything = tmp_path / "ignore-all"
    everything.write_text("*\n")
    git(checkout, "config", "--worktree", "status.showUntrackedFiles", "no")
    git(checkout, "config", "--worktree", "core.excludesFile", str(everything))
    (checkout / "notes.local").write_text("mine\n")
    assert git(checkout, "status", "--porcelain") == ""
    kept(repo, checkout, "dirty")


def test_a_file_only_info_exclude_hides_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a0000007")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.local\n")
    (checkout / "settings.local").write_text("mine\n")
    assert git(checkout, "status", "--porcelain") == ""
    kept(repo, checkout, "dirty")


def test_a_token_a_clean_filter_keeps_out_of_git_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A tracked `app.conf` whose clean filter blanks the token (so it is never committed):
    the session writes the real token in the checkout and runs `git add -A`. Git status is
    clean (the cleaned file is the staged one); the token exists only in the file."""
    repo = make_repo(tmp_path / "repo", files={"app.conf": "token=\n", ".gitattributes": "app.conf filter=blank\n"})
    git(repo, "config", "filter.blank.clean", "sed 's/^token=.*/token=/'")
    checkout = create(repo, "agent-a000000e")
    (checkout / "app.conf").write_text("token=s3cr3t-only-here\n")
    git(checkout, "add", "-A")
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    kept(repo, checkout, "dirty")
    assert "app.conf: content a clean filter keeps out of git" in logged(sandbox)
    assert (checkout / "app.conf").read_text() == "token=s3cr3t-only-here\n"


def test_notebook_outputs_nbstripout_keeps_out_of_git_are_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`nbstripout --install --global`: a global clean filter strips a notebook's outputs
    before git sees it (smudge `cat`), the attribute set in the user's global attributes. A
    committed, pushed notebook whose hour-long run's outputs live only in the file."""
    attributes = Path(os.environ["HOME"]) / ".config" / "git" / "attributes"
    attributes.parent.mkdir(parents=True, exist_ok=True)
    attributes.write_text("*.ipynb filter=nbstripout\n")
    git(tmp_path, "config", "--global", "core.attributesFile", str(attributes))
    git(tmp_path, "config", "--global", "filter.nbstripout.clean", "sed '/\"outputs\"/d'")
    git(tmp_path, "config", "--global", "filter.nbstripout.smudge", "cat")
    repo = make_repo(tmp_path / "repo", files={"run.ipynb": '{"cells": []}\n'})
    checkout = create(repo, "agent-a000000f")
    (checkout / "run.ipynb").write_text('{"cells": []}\n"outputs": ["an hour of compute"]\n')
    git(checkout, "add", "-A")
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    kept(repo, checkout, "dirty")


def test_a_file_a_filter_changes_on_the_way_back_lets_the_worktree_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A round-trip filter (a smudge other than `cat`: git-crypt, keyword expansion) and a
    dropping filter whose file is as checked out: nothing only there."""
    repo = make_repo(tmp_path / "repo", files={"a.txt": "$Id$\n", "app.conf": "token=\n",
                                               ".gitattributes": "a.txt filter=kw\napp.conf filter=blank\n"})
    git(repo, "config", "filter.kw.clean", "sed 's/[$]Id:[^$]*[$]/$Id$/'")
    git(repo, "config", "filter.kw.smudge", "sed 's/[$]Id[$]/$Id: expanded $/'")
    git(repo, "config", "filter.blank.clean", "sed 's/^token=.*/token=/'")
    checkout = create(repo, "agent-a0000010")
    assert (checkout / "a.txt").read_text() == "$Id: expanded $\n"
    assert listed(repo, checkout)["removable"] is True
    gone(repo, checkout)


def test_a_filtered_file_checked_out_with_other_line_ends_lets_the_worktree_go(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`eol=crlf` writes the notebook with CRLF while git holds LF: the bytes differ from the
    blob, yet they are what any checkout writes (`git cat-file --filters`). Then the outputs
    of a run make the same file the only copy."""
    repo = make_repo(tmp_path / "repo", files={"run.ipynb": '{"cells": []}\n',
                                               ".gitattributes": "*.ipynb filter=nbstripout eol=crlf\n"})
    git(repo, "config", "filter.nbstripout.clean", "sed '/outputs/d'")
    git(repo, "config", "filter.nbstripout.smudge", "cat")
    checkout = create(repo, "agent-a0000016")
    assert (checkout / "run.ipynb").read_bytes() == b'{"cells": []}\r\n'
    assert listed(repo, checkout)["removable"] is True
    (checkout / "run.ipynb").write_bytes(b'{"cells": []}\r\n"outputs": [42]\r\n')
    git(checkout, "add", "-A")
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    kept(repo, checkout, "dirty")


def test_a_file_differing_only_in_case_from_a_tracked_one_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The repository was made on a disk that ignores case (its config says
    `core.ignoreCase`), this one does not: git status takes `Notes.txt` for the tracked
    `notes.txt` and shows nothing."""
    repo = make_repo(tmp_path / "repo", files={"notes.txt": "tracked\n"})
    git(repo, "config", "core.ignoreCase", "true")
    checkout = create(repo, "agent-a0000011")
    (checkout / "Notes.txt").write_text("a different file, only here\n")
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    kept(repo, checkout, "dirty")
    assert "Notes.txt: a name git takes for a tracked one (core.ignoreCase)" in logged(sandbox)


def test_a_repository_that_ignores_case_with_nothing_new_lets_the_worktree_go(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A regenerable folder, and one its ignore pattern names in another case (`Build/`, which
    git with the setting ignores as `build/`): nothing hidden as a tracked file."""
    repo = make_repo(tmp_path / "repo", files={"notes.txt": "tracked\n", ".gitignore": "node_modules/\nBuild/\n"})
    git(repo, "config", "core.ignoreCase", "true")
    checkout = create(repo, "agent-a0000012")
    for folder in ("node_modules/x", "build/out"):
        (checkout / folder).mkdir(parents=True)
        (checkout / folder / "i.js").write_text("1\n")
    assert git(checkout, "status", "--porcelain") == ""
    assert listed(repo, checkout)["removable"] is True
    gone(repo, checkout)


# --- per-worktree refs and branches ---------------------------------------------------------


def test_a_checked_out_branch_deleted_behind_the_worktrees_back_keeps_its_last_commit(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The branch was merged and deleted (`update-ref -d`: git's `branch -d` would refuse a
    checked-out one), but the worktree had made one commit more: only its HEAD reflog and
    the admin folder lead to it."""
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a0000008")
    (checkout / "a.txt").write_text("merged\n")
    git(checkout, "add", "a.txt")
    git(checkout, "commit", "-q", "-m", "agent-a0000008")
    git(repo, "merge", "-q", "--ff-only", "worktree-agent-a0000008")
    (checkout / "b.txt").write_text("one more\n")
    git(checkout, "add", "b.txt")
    git(checkout, "commit", "-q", "-m", "one more")
    git(checkout, "switch", "-q", "--detach", "main")
    git(repo, "update-ref", "-d", "refs/heads/worktree-agent-a0000008")
    assert git(checkout, "status", "--porcelain") == ""
    kept(repo, checkout, "unmerged")


def test_the_same_branch_name_in_two_projects_is_deleted_only_in_the_removed_ones(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo_a = make_repo(tmp_path / "a")
    repo_b = make_repo(tmp_path / "b")
    checkout_a = create(repo_a, "agent-a0000009")
    checkout_b = create(repo_b, "agent-a0000009")
    (checkout_b / "b.txt").write_text("only in b\n")
    git(checkout_b, "add", "b.txt")
    git(checkout_b, "commit", "-q", "-m", "b's work")
    gone(repo_a, checkout_a)
    assert git(repo_a, "branch", "--list", "worktree-agent-a0000009") == ""
    assert git(repo_b, "show", "worktree-agent-a0000009:b.txt") == "only in b"
    kept(repo_b, checkout_b, "unmerged")


def test_a_worktree_of_a_bare_repositorys_checkout_is_judged_like_any_other(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The bare-repository layout: `project.git` bare, the project a linked worktree of it,
    Claude's checkouts linked worktrees of the same bare repository."""
    origin = make_repo(tmp_path / "origin")
    bare = tmp_path / "project.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))
    project = tmp_path / "project"
    git(bare, "worktree", "add", "-q", str(project), "main")
    clean = create(project, "agent-a000000a")
    busy = create(project, "agent-a000000b")
    (busy / "work.txt").write_text("only here\n")
    git(busy, "add", "work.txt")
    git(busy, "commit", "-q", "-m", "work")
    kept(project, busy, "unmerged")
    gone(project, clean)
    assert git(busy, "log", "-1", "--format=%s") == "work"


# --- what WorktreeRemove forgets of a checkout moved away -------------------------------------


def test_a_checkout_moved_away_in_the_middle_of_a_rebase_keeps_gits_entry(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user moved the checkout away (to keep it) while a rebase waited at an `edit` stop:
    the plan lives in git's entry for it. WorktreeRemove on the old path reports it gone but
    leaves the entry, so `git worktree repair` gets the rebase back."""
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a000000c")
    for name in ("one", "two"):
        (checkout / name).write_text(name + "\n")
        git(checkout, "add", name)
        git(checkout, "commit", "-q", "-m", name)
    git(repo, "merge", "-q", "--ff-only", "worktree-agent-a000000c")
    env = {**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i 's/^pick/edit/'"}
    subprocess.run(["git", "rebase", "-q", "-i", "main~2"], cwd=checkout, env=env, check=True,
                   capture_output=True)
    assert git(checkout, "status", "--porcelain") == ""
    away = tmp_path / "kept-here"
    shutil.move(str(checkout), str(away))
    result = remove(repo, checkout)
    assert result.returncode == 0
    git(away, "worktree", "repair")
    assert "rebase" in subprocess.run(["git", "status"], cwd=away, capture_output=True, text=True).stdout


def test_files_in_the_folder_of_a_submodule_git_add_embedded_are_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """No `.gitmodules`: a repository added inside the project by mistake (`git add inner`,
    git only warns) is a bare gitlink, an empty folder in every new worktree."""
    repo = make_repo(tmp_path / "repo")
    inner = make_repo(repo / "inner", files={"core.py": "x = 1\n"})
    git(repo, "add", "inner")
    git(repo, "commit", "-q", "-m", "embedded")
    assert not (repo / ".gitmodules").exists() and inner.is_dir()
    checkout = create(repo, "agent-a000000d")
    (checkout / "inner" / "core.py").write_text("x = 2  # rewritten here\n")
    assert git(checkout, "status", "--porcelain", "--ignored") == ""
    kept(repo, checkout, "dirty")


def test_the_gc_keeps_a_recorded_clone_whose_submodule_folder_was_filled_by_hand(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A clone without `--recursive` in the temp folder, recorded by a session that ended:
    its `lib/` filled by hand is no regenerable output."""
    from tests.support import add_record

    origin = with_submodule(tmp_path)
    clone = sandbox.user_tmp / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    (clone / "lib" / "lib.c").write_text("int x = 7; /* only here */\n")
    add_record("s-gone", clone, kind="copy")
    set_mtime(clone, OLD)
    done = run_cli("gc", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    entries = [e for e in json.loads(done.stdout)["entries"] if e["path"] == str(clone)]
    assert [(e["status"], e["reason"]) for e in entries] == [("kept", "dirty")], done.stdout
    assert (clone / "lib" / "lib.c").read_text().startswith("int x = 7;")


def test_a_commit_dropped_from_the_checkouts_branch_by_branch_f_elsewhere_is_kept(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The checkout's branch was reset from the main checkout (`git branch -f`, while the
    checkout sat on a detached HEAD), then the checkout went back to it. Only the branch's
    reflog still names the dropped commit, and the removal deletes the branch, reflog and all."""
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a0000013")
    (checkout / "idea.txt").write_text("only here\n")
    git(checkout, "add", "idea.txt")
    git(checkout, "commit", "-q", "-m", "an idea")
    idea = git(checkout, "rev-parse", "HEAD")
    git(checkout, "switch", "-q", "--detach", "main")
    git(repo, "branch", "-f", "worktree-agent-a0000013", "main")
    git(checkout, "switch", "-q", "worktree-agent-a0000013")
    assert git(checkout, "status", "--porcelain") == ""
    kept(repo, checkout, "unmerged")
    assert git(repo, "cat-file", "-t", idea) == "commit"
    assert idea in git(repo, "reflog", "show", "--format=%H", "worktree-agent-a0000013")


# --- what held: shown safe, or kept already ---------------------------------------------------


def test_a_submodule_with_a_linked_worktree_elsewhere_keeps_the_checkout(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The submodule's repository lives in the checkout's admin folder (`modules/lib`) and a
    worktree of it was added outside: that worktree needs its objects."""
    repo = with_submodule(tmp_path)
    checkout = create(repo, "agent-a0000014")
    git(checkout, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q")
    outside = tmp_path / "lib-work"
    git(checkout / "lib", "worktree", "add", "-q", "--detach", str(outside))
    kept(repo, checkout, "unmerged")
    assert (outside / "lib.c").exists() and git(outside, "status", "--porcelain") == ""


def test_worktree_create_over_git_entry_kept_for_a_moved_checkout_fails_loud_and_keeps_it(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user moved a checkout away holding staged work; WorktreeRemove left git's entry
    (its index). Asked for the same name again, WorktreeCreate fails loud and git's entry,
    with the staged work, is still there for `git worktree repair`."""
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a0000015")
    (checkout / "staged.txt").write_text("staged only\n")
    git(checkout, "add", "staged.txt")
    away = tmp_path / "moved"
    shutil.move(str(checkout), str(away))
    assert remove(repo, checkout).returncode == 0
    again = run_hook({"hook_event_name": "WorktreeCreate", "cwd": str(repo), "name": "agent-a0000015",
                      "session_id": "s-1", "transcript_path": "/t"}, cwd=repo)
    assert again.returncode != 0 and again.stderr.strip().count(b"\n") == 0
    git(away, "worktree", "repair")
    assert git(away, "diff", "--cached", "--name-only") == "staged.txt"


def test_an_untouched_env_that_worktreeinclude_copied_lets_the_worktree_go(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`.worktreeinclude` names `.env` (its common use): every checkout gets a copy. One the
    session never changed is the main checkout's file again; one it changed stays."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": ".env\n", ".worktreeinclude": ".env\n"})
    (repo / ".env").write_text("TOKEN=1\n")
    untouched = create(repo, "agent-a0000017")
    changed = create(repo, "agent-a0000018")
    (changed / ".env").write_text("TOKEN=2\n")
    assert (untouched / ".env").read_text() == "TOKEN=1\n"
    kept(repo, changed, "dirty")
    assert listed(repo, untouched)["removable"] is True


def test_a_checkout_of_a_project_moved_with_its_checkouts_is_kept_and_repairable(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The whole project moved (`mv repo elsewhere`): the checkout's `.git` file and git's
    entry name the old place. Nothing goes; `git worktree repair` reconnects both."""
    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a0000019")
    (checkout / "work.txt").write_text("only here\n")
    git(checkout, "add", "work.txt")
    git(checkout, "commit", "-q", "-m", "work")
    moved = tmp_path / "moved"
    shutil.move(str(repo), str(moved))
    checkout = moved / ".claude" / "worktrees" / "agent-a0000019"
    set_mtime(checkout, OLD)
    done = run_cli("worktrees", "--json", str(moved))
    assert done.returncode == 0, done.stderr
    rows = {w["path"]: w for w in json.loads(done.stdout)["worktrees"]}
    assert rows[str(checkout)]["removable"] is False and rows[str(checkout)]["reason"] == "not_a_worktree"
    assert remove(moved, checkout).returncode == 1
    clean = run_cli("clean", "--json", str(moved))
    assert clean.returncode == 0, clean.stderr
    git(moved, "worktree", "repair", str(checkout))
    assert git(checkout, "log", "-1", "--format=%s") == "work"


def test_a_checkout_moved_away_from_a_project_reached_through_a_link_keeps_gits_entry(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The project is reached through a symlink (macOS's `/tmp`, a home on another disk):
    git's entry spells the checkout through the link, the registry by its real path. The
    checkout moved away with staged work: its entry must still be found, and kept."""
    real = tmp_path / "disk" / "repo"
    make_repo(real)
    (tmp_path / "home").symlink_to(tmp_path / "disk")
    repo = tmp_path / "home" / "repo"
    checkout = create(repo, "agent-a000001a")
    (checkout / "staged.txt").write_text("staged only\n")
    git(checkout, "add", "staged.txt")
    away = tmp_path / "kept"
    shutil.move(str(checkout), str(away))
    assert remove(repo, checkout).returncode == 0
    git(away, "worktree", "repair")
    assert git(away, "diff", "--cached", "--name-only") == "staged.txt"


def test_gits_entry_naming_its_checkout_by_a_relative_path_is_found(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """git 2.48's `worktree.useRelativePaths` writes the entry's `gitdir` relative to the
    entry: WorktreeRemove of a checkout moved away must still find it, and ask whether it
    holds work before git forgets it (git itself reads the relative form)."""
    from app.core.worktree_remove import _admin_entry

    repo = make_repo(tmp_path / "repo")
    checkout = create(repo, "agent-a000001b")
    entry = repo / ".git" / "worktrees" / "agent-a000001b"
    (entry / "gitdir").write_text(os.path.relpath(checkout / ".git", entry) + "\n")
    shutil.move(str(checkout), str(tmp_path / "away"))
    assert _admin_entry(str(repo), str(checkout)) == str(entry)


def test_a_copy_of_the_main_checkouts_file_keeps_nothing_but_anything_else_beside_it_does(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Only a byte-for-byte copy of the main checkout's own file is no work: a link to it, a
    second ignored file beside it, or the same name where the main checkout has none, each
    keeps the checkout."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": ".env\nnotes.local\n",
                                               ".worktreeinclude": ".env\n"})
    (repo / ".env").write_text("TOKEN=1\n")
    linked = create(repo, "agent-a0000031")
    (linked / ".env").unlink()
    (linked / ".env").symlink_to(repo / ".env")
    beside = create(repo, "agent-a0000032")
    (beside / "notes.local").write_text("only here\n")
    orphan = create(repo, "agent-a0000033")
    assert (orphan / ".env").read_text() == "TOKEN=1\n"
    os.remove(repo / ".env")  # the main checkout no longer has it: the orphan's is the only one
    for checkout in (linked, beside, orphan):
        kept(repo, checkout, "dirty")
