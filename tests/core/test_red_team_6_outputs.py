"""The output GC attacked a sixth time, with the ordinary commands a Claude session runs: real
commands run, the PostToolUse hook records them (`python -P -m hooks`), the sweep runs through
`claudetto gc`. Each test is a way unique work could be lost; a test marked xfail is a loss
still open (its reason says what goes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import (
    SandboxEnv,
    gc_entries,
    git,
    make_repo,
    recorded,
    run_hook,
    set_mtime,
)

OLD = 8 * 86_400


def bash(command: str, cwd: Path, check: bool = True) -> str:
    """Run the command as Claude's Bash tool would, for real; its stdout."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=check, capture_output=True, text=True).stdout


def run_and_record(command: str, cwd: Path, session: str = "s1", check: bool = True, duration_ms: int = 2000) -> str:
    """The Bash call, then the PostToolUse hook Claude runs after it; the call's stdout."""
    out = bash(command, cwd, check)
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
               "tool_input": {"command": command},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": duration_ms}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    return out


def home_project(sandbox: SandboxEnv) -> Path:
    project = sandbox.home / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("years of notes, kept nowhere else\n")
    return project


# --- a copy and a removal spelled inside `bash -c` ------------------------------------------------


@pytest.mark.parametrize("shell", ["bash -c", "sh -c", "bash -lc", "timeout 60 bash -e -o pipefail -c"])
def test_a_copy_made_inside_a_nested_shell_then_removed_keeps_the_temp_folder(
        sandbox: SandboxEnv, tmp_path: Path, shell: str) -> None:
    """`d=$(mktemp -d) && bash -c "cp -r $HOME/proj $d/" && rm -rf ~/proj` is a move: the only
    copy of the project lies in `$d`. The script of `bash -c` was not read, so the copy was not
    seen, `$d` was recorded as a plain temp folder, and a week later it went with the project."""
    project = home_project(sandbox)
    command = f'd=$(mktemp -d) && {shell} "cp -r $HOME/proj $d/" && rm -rf "$HOME/proj" && echo "$d"'
    folder = Path(run_and_record(command, tmp_path).strip())
    assert not project.exists()
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "proj" / "notes.txt").exists(), entries


def test_a_move_spelled_wholly_inside_a_nested_shell_keeps_the_temp_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The copy and the removal both inside the script: `bash -c "cp -r ~/proj $d/ && rm -rf ~/proj"`."""
    project = home_project(sandbox)
    command = 'd=$(mktemp -d) && bash -c "cp -r ~/proj $d/ && rm -rf ~/proj" && echo "$d"'
    folder = Path(run_and_record(command, tmp_path).strip())
    assert not project.exists()
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "proj" / "notes.txt").exists(), entries


def test_a_temp_folder_made_inside_a_nested_shell_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """What held: a script read like the command around it records what it makes, and an old
    temp folder holding only the session's own files still goes."""
    folder = Path(run_and_record("bash -c 'd=$(mktemp -d) && echo x > \"$d/out\" && echo \"$d\"'", tmp_path).strip())
    assert recorded() == [str(folder)]
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("removed", "age"), entries


# --- a folder a second, live session works in ---------------------------------------------------


@pytest.mark.parametrize("where", ["settings.local.json", "settings.json", "user"])
def test_an_output_a_live_session_has_as_an_additional_directory_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int, where: str) -> None:
    """A dead session made `$d`; the user then gave a second, live session that folder with
    `/add-dir` (remembered in its project's `.claude/settings.local.json`, the project's
    settings or the user's as `permissions.additionalDirectories`). The live session edits
    there as in its own project; a week after `$d` was made, the sweep removed it under it."""
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    (folder / "plan.md").write_text("the plan the live session is editing\n")
    other = sandbox.home / "other"
    (other / ".claude").mkdir(parents=True)
    settings = sandbox.config / "settings.json" if where == "user" else other / ".claude" / where
    settings.write_text(json.dumps({"permissions": {"additionalDirectories": [str(folder)]}}))
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="s2", cwd=str(other))
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "plan.md").exists(), entries
    assert entries[str(folder)] == ("kept", "live"), entries


def test_an_additional_directory_of_a_session_that_ended_protects_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """What held: the settings name the folder, but no session that reads them runs."""
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    other = sandbox.home / "other"
    (other / ".claude").mkdir(parents=True)
    (other / ".claude" / "settings.local.json").write_text(
        json.dumps({"permissions": {"additionalDirectories": [str(folder)]}}))
    sandbox.write_session("999999", pid=999_999, sessionId="s2", cwd=str(other))
    set_mtime(folder, OLD)
    assert gc_entries()[str(folder)] == ("removed", "age")


def write_payload(file_path: Path, cwd: Path, content: str, session: str = "s1") -> dict[str, object]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Write",
            "tool_input": {"file_path": str(file_path), "content": content},
            "tool_response": {"type": "create", "filePath": str(file_path), "content": content},
            "duration_ms": 20}


def test_a_file_a_dead_session_wrote_where_a_live_session_works_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, live_pid: int) -> None:
    """TMPDIR is the user's scratch disk. A session working elsewhere wrote `findings.md` into
    `$TMPDIR/analysis`; a second session now runs in that folder (its cwd). The file is that
    live session's project file: a week later it went while the session worked there."""
    project = sandbox.user_tmp / "analysis"
    project.mkdir()
    notes = project / "findings.md"
    notes.write_text("what the data showed\n")
    assert run_hook(write_payload(notes, tmp_path, "what the data showed\n"), cwd=tmp_path).returncode == 0
    assert recorded() == [str(notes)]
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="s2", cwd=str(project))
    set_mtime(notes, OLD)
    entries = gc_entries()
    assert notes.exists(), entries
    assert entries[str(notes)] == ("kept", "in_use"), entries


# --- what the user's repository took in --------------------------------------------------------------


def test_a_file_a_write_created_in_a_users_repository_then_committed_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user's repository lives on the scratch disk (TMPDIR), Claude never started in it. A
    session working elsewhere created `solver.py` there with Write (a `scratch` record); the
    user committed it. A week later the sweep deleted a tracked file from their work tree."""
    project = make_repo(sandbox.user_tmp / "repo")
    module = project / "solver.py"
    module.write_text("def solve(): return 42\n")
    assert run_hook(write_payload(module, tmp_path, "def solve(): return 42\n"), cwd=tmp_path).returncode == 0
    assert recorded() == [str(module)]
    git(project, "add", "solver.py")
    git(project, "commit", "-q", "-m", "solver")
    set_mtime(module, OLD)
    entries = gc_entries()
    assert module.exists() and git(project, "status", "--porcelain") == "", entries
    assert entries[str(module)] == ("kept", "in_use"), entries


def test_a_copy_into_a_users_repository_it_then_tracks_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -r lib "$TMPDIR/repo/vendor"` (a `copy` record), then the user adds and commits it."""
    project = make_repo(sandbox.user_tmp / "repo")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.py").write_text("a = 1\n")
    run_and_record(f'cp -r lib "{project}/vendor"', tmp_path)
    assert recorded() == [str(project / "vendor")]
    git(project, "add", "vendor")
    git(project, "commit", "-q", "-m", "vendor")
    set_mtime(project / "vendor", OLD)
    entries = gc_entries()
    assert (project / "vendor" / "a.py").exists(), entries
    assert entries[str(project / "vendor")] == ("kept", "in_use"), entries


def test_a_scratch_file_in_the_sessions_own_clone_still_goes_with_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """What held: a repository that is itself an output does not make its files the user's.
    The session cloned a repository into the temp folder and wrote a file there; both go."""
    origin = make_repo(sandbox.home / "origin")
    clone = sandbox.user_tmp / "c"
    run_and_record(f'git clone -q "{origin}" "{clone}"', tmp_path)
    out = clone / "README.md"
    assert run_hook(write_payload(clone / "new.txt", tmp_path, "x"), cwd=tmp_path).returncode == 0
    set_mtime(clone, OLD)
    entries = gc_entries()
    assert entries[str(clone)] == ("removed", "age"), entries
    assert not out.exists()


# --- what held ----------------------------------------------------------------------------------------


def test_a_detached_worktree_of_a_home_repository_with_a_commit_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git worktree add --detach "$TMPDIR/wt"` of the user's repository; the user commits there
    on the detached HEAD: the commit is on no branch, and the worktree keeps it."""
    repo = make_repo(sandbox.home / "repo")
    wt = sandbox.user_tmp / "wt"
    run_and_record(f'git worktree add -q --detach "{wt}"', repo)
    assert recorded() == [str(wt)]
    (wt / "f.txt").write_text("work\n")
    git(wt, "add", "f.txt")
    git(wt, "commit", "-q", "-m", "work")
    set_mtime(wt, OLD)
    entries = gc_entries()
    assert (wt / "f.txt").exists(), entries
    assert entries[str(wt)] == ("kept", "unmerged"), entries


def test_a_repository_the_session_started_in_a_temp_folder_with_commits_is_kept(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d) && cd "$d" && git init`, then the user commits real work there."""
    folder = Path(run_and_record('d=$(mktemp -d) && cd "$d" && git init -q && echo "$d"', tmp_path).strip())
    (folder / "f.txt").write_text("work\n")
    git(folder, "add", "f.txt")
    git(folder, "commit", "-q", "-m", "work")
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("kept", "unmerged"), entries


def test_tar_into_a_folder_the_user_had_records_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`tar -xzf a.tgz -C "$TMPDIR/x"` names no output: the folder the user had is never one."""
    target = sandbox.user_tmp / "x"
    target.mkdir()
    (target / "mine.txt").write_text("mine\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("f\n")
    bash("tar -czf a.tgz a", tmp_path)
    run_and_record(f'tar -xzf a.tgz -C "{target}"', tmp_path)
    assert recorded() == []


@pytest.mark.parametrize("command", ['mktemp -d -p "$HOME"', 'TMPDIR="$HOME" mktemp -d', "mktemp -d ~/tmp.XXXXXX"])
def test_a_temp_folder_made_in_the_home_is_never_removed(sandbox: SandboxEnv, tmp_path: Path, command: str) -> None:
    """`mktemp -d -p ~/`, `TMPDIR=~/ mktemp -d`: outside every GC root, whatever it holds."""
    out = Path(run_and_record(command, tmp_path).strip())
    (out / "work.txt").write_text("w\n")
    set_mtime(out, OLD)
    entries = gc_entries()
    assert out.exists(), entries
    assert entries.get(str(out), ("skip", "outside_root")) == ("skip", "outside_root"), entries


def test_mktemp_u_records_nothing_so_a_later_folder_of_that_name_stays(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`mktemp -u` prints a name and makes nothing; the user's folder made there later is theirs."""
    name = Path(run_and_record("mktemp -u", tmp_path).strip())
    assert recorded() == []
    name.mkdir()
    (name / "mine.txt").write_text("mine\n")
    set_mtime(name, OLD)
    assert str(name) not in gc_entries() and (name / "mine.txt").exists()


def test_an_output_replaced_by_a_symlink_to_the_home_is_skipped(sandbox: SandboxEnv, tmp_path: Path) -> None:
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    folder.rmdir()
    folder.symlink_to(sandbox.home)
    (sandbox.home / "f").write_text("x")
    entries = gc_entries()
    assert (sandbox.home / "f").exists() and folder.is_symlink(), entries


def test_an_output_moved_away_and_a_user_folder_made_at_its_name_stays(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`mv "$d" ~/kept`, then the user makes a folder of their own at the old name."""
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    run_and_record(f'mv "{folder}" ~/kept', tmp_path)
    folder.mkdir()
    (folder / "mine").write_text("x")
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "mine").exists() and (sandbox.home / "kept").is_dir(), entries


# --- a move by rsync itself -----------------------------------------------------------------------


def test_rsync_remove_source_files_into_a_temp_folder_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`rsync -a --remove-source-files ~/proj/ "$d"/` is a move with no `rm`: the files are born
    anew in `$d` (no older birth time shows they came from elsewhere) and gone at home, whose
    folder stays (so no source looks gone). A week later `$d` went with the only copy."""
    if subprocess.run(["which", "rsync"], capture_output=True).returncode != 0:
        pytest.skip("rsync is not installed")
    project = home_project(sandbox)
    command = 'd=$(mktemp -d) && rsync -a --remove-source-files ~/proj/ "$d"/ && echo "$d"'
    folder = Path(run_and_record(command, tmp_path).strip())
    assert not (project / "notes.txt").exists()
    assert recorded() == []
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "notes.txt").exists(), entries


@pytest.mark.parametrize("later", ['rsync -a --remove-source-files ~/proj/ "{d}"/',
                                   'cp ~/proj/notes.txt "{d}"/ && rm ~/proj/notes.txt'])
def test_a_move_into_an_older_temp_output_a_call_later_keeps_it(
        sandbox: SandboxEnv, tmp_path: Path, later: str) -> None:
    """`d=$(mktemp -d)` in one call, the move into it in a later one: nothing tied the move's
    source to `$d` (only the copies of the call that made an output were stored with it), the
    files were born anew in it, and `$d` went with the only copy a week later."""
    if subprocess.run(["which", "rsync"], capture_output=True).returncode != 0:
        pytest.skip("rsync is not installed")
    project = home_project(sandbox)
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    run_and_record(later.format(d=folder), tmp_path)
    assert recorded() == [str(folder)]  # the later call makes no output, so it records nothing
    assert not (project / "notes.txt").exists()
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "notes.txt").exists(), entries


# --- a project on the scratch disk, copied, then removed -----------------------------------------


@pytest.mark.parametrize("copy", ['git clone -q "{src}" "{dst}"', 'cp -r "{src}" "{dst}"'])
def test_a_copy_of_a_scratch_disk_project_whose_original_the_user_removed_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, copy: str) -> None:
    """TMPDIR is the scratch disk (`/scratch/$USER`) where the user's project lives. A session
    clones it beside it (`$TMPDIR/proj-copy`); later the user removes the original. A source in
    the temp folder was taken for an output that went ("no loss"), and the clone, whose
    commits all sit on `origin/main`, looked pushed: a week later the only copy went."""
    import time

    project = sandbox.user_tmp / "proj"
    if copy.startswith("git"):
        make_repo(project, files={"thesis.tex": "the only copy\n"})
    else:  # a folder without git (a copy of a repository would keep its own commits: `unmerged`)
        project.mkdir()
        (project / "thesis.tex").write_text("the only copy\n")
    time.sleep(3.5)  # the project was there long before the call (its birth outside the window)
    target = sandbox.user_tmp / "proj-copy"
    run_and_record(copy.format(src=project, dst=target), tmp_path, duration_ms=100)
    assert recorded() == [str(target)]
    run_and_record(f'rm -rf "{project}"', tmp_path)
    set_mtime(target, OLD)
    entries = gc_entries()
    assert (target / "thesis.tex").exists(), entries
    # a clone's commits are on the remote-tracking branch of a remote that is gone: unmerged
    assert entries[str(target)] == ("kept", "unmerged" if "clone" in copy else "dirty"), entries


def test_a_copy_of_a_folder_the_same_call_made_in_the_temp_folder_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """What held: `mkdir a && cp -r a b`, `a` removed later: `a` was the call's own, no loss."""
    first, second = sandbox.user_tmp / "a", sandbox.user_tmp / "b"
    run_and_record(f'mkdir "{first}" && echo x > "{first}/f" && cp -r "{first}" "{second}"', tmp_path)
    assert recorded() == [str(second)]
    run_and_record(f'rm -rf "{first}"', tmp_path)
    set_mtime(second, OLD)
    assert gc_entries()[str(second)] == ("removed", "age")


def test_a_copy_into_an_older_temp_output_whose_source_stays_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """What held: a later `cp ~/proj/notes.txt "$d"/` while `~/proj/notes.txt` stays, and a
    rename inside the temp folder, leave `$d` an output: it goes at its age."""
    home_project(sandbox)
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    run_and_record(f'cp ~/proj/notes.txt "{folder}"/ && mv "{folder}/notes.txt" "{folder}/n.txt"', tmp_path)
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("removed", "age"), entries
