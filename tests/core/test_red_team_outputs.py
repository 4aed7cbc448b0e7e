"""The output GC attacked from outside, as a session and a user would: ordinary commands
recorded through the PostToolUse hook, the sweep run through `claudetto gc`. A test marked
xfail shows a loss the seed's rules, taken literally, still allow (docs/notes.md, "Known
limits"); the others are attacks the GC withstands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.gc_records import read_records
from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, run_cli, run_hook, set_mtime

OLD = 8 * 86_400


def bash(command: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run the command as Claude's Bash tool would, for real; its stdout."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env if env is not None else dict(os.environ)).stdout


def record_bash(command: str, stdout: str, cwd: Path, *, duration_ms: int = 3000,
                env: dict[str, str] | None = None) -> None:
    """The PostToolUse hook Claude runs after that Bash call."""
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(cwd), "tool_name": "Bash",
               "tool_input": {"command": command},
               "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": duration_ms}
    done = run_hook(payload, cwd=cwd, env=env)
    assert done.returncode == 0 and done.stdout == b"", done.stderr


def before_the_call() -> None:
    """Let the call's window (`duration_ms` 100 + 2 s + 1 s of clock slack) pass: what was
    made until now was there before the call, as a birth time shows."""
    time.sleep(3.5)


def gc_entries() -> dict[str, tuple[str, str]]:
    result = run_cli("gc", "--json")
    assert result.returncode == 0, result.stderr
    return {e["path"]: (e["status"], e["reason"]) for e in json.loads(result.stdout)["entries"]}


def test_a_mktemp_folder_the_command_removed_itself_does_not_take_another_programs(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d) ... rm -rf "$d"` is how Claude cleans up after itself: nothing of the call
    is left. The template-and-time search then finds only what someone else made meanwhile (the
    user's own script, an editor, another tool using mktemp's default template)."""
    theirs = Path(bash("mktemp -d", tmp_path).strip())
    (theirs / "thesis.tex").write_text("chapter one, not saved anywhere else\n")
    command = 'd=$(mktemp -d) && cd "$d" && echo built > out.txt && cd / && rm -rf "$d"'
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    set_mtime(theirs, OLD)  # the user's folder, idle for a week (they work in a subfolder, or on holiday)
    entries = gc_entries()
    assert (theirs / "thesis.tex").exists(), entries


def test_an_unprinted_mktemp_folder_the_command_kept_is_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The other side: the same command without the `rm` leaves the session's folder, and that
    one is an output."""
    command = 'd=$(mktemp -d) && cd "$d" && echo built > out.txt'
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    (made,) = [r.path for r in read_records("s1")]
    assert Path(made, "out.txt").read_text() == "built\n"


def test_a_commit_only_a_local_tag_holds_keeps_the_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A release made on a detached HEAD and tagged (`git tag v1.1`), then back to main: no
    branch, no remote, no HEAD holds the commit; only the tag does, and it was never pushed."""
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "tool"
    command = f"git clone -q {origin} {clone}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    git(clone, "checkout", "-q", "--detach")
    (clone / "VERSION").write_text("1.1\n")
    git(clone, "add", "VERSION")
    git(clone, "commit", "-qm", "release 1.1")
    release = git(clone, "rev-parse", "HEAD")
    git(clone, "tag", "v1.1")
    git(clone, "checkout", "-q", "main")
    set_mtime(clone, OLD)
    entries = gc_entries()
    assert entries[str(clone)][0] == "kept", entries
    assert git(clone, "cat-file", "-t", release) == "commit"


def test_an_annotated_tag_on_a_pushed_commit_does_not_keep_a_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The bound of the rule above: a tag whose commit a remote-tracking branch holds loses no
    commit (the clone's fetched tags are of that kind too), so the clone is an output."""
    origin = make_repo(tmp_path / "origin")
    git(origin, "tag", "v1.0")
    clone = sandbox.user_tmp / "tool"
    command = f"git clone -q {origin} {clone}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    set_mtime(clone, OLD)
    assert gc_entries()[str(clone)] == ("removed", "age")
    assert not clone.exists()


def test_a_clone_with_a_separate_git_dir_is_judged_by_its_work_tree(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git clone --separate-git-dir`: the temp folder holds a `.git` file naming a git dir in
    the home; an uncommitted edit in the work tree is unique work."""
    origin = make_repo(tmp_path / "origin", files={"a.txt": "a\n"})
    clone = sandbox.user_tmp / "tool"
    gitdir = sandbox.home / "gitdirs" / "tool"
    gitdir.parent.mkdir()
    command = f"git clone -q --separate-git-dir={gitdir} {origin} {clone}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    assert [r.path for r in read_records("s1")] == [str(clone)]
    (clone / "a.txt").write_text("edited, not committed\n")
    set_mtime(clone, OLD)
    assert gc_entries()[str(clone)] == ("kept", "dirty")
    assert (clone / "a.txt").read_text() == "edited, not committed\n"


def test_a_repository_whose_git_folder_is_a_symlink_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A `.git` that is a symlink to a git dir elsewhere: the walk never follows it, so it must
    not take the work tree for plain files either (its edits would be lost unseen)."""
    origin = make_repo(tmp_path / "origin", files={"a.txt": "a\n"})
    temp = Path(bash("mktemp -d", tmp_path).strip())
    record_bash("mktemp -d", f"{temp}\n", tmp_path)
    work = temp / "work"
    git(tmp_path, "clone", "-q", str(origin), str(work))
    os.rename(work / ".git", sandbox.home / "work.git")
    os.symlink(sandbox.home / "work.git", work / ".git")
    (work / "a.txt").write_text("edited\n")
    set_mtime(temp, OLD)
    assert gc_entries()[str(temp)][0] == "kept"
    assert (work / "a.txt").read_text() == "edited\n"


def test_a_temp_root_that_is_the_home_never_makes_the_home_a_gc_root(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Some set TMPDIR to their home (or to `/`) on machines with a small /tmp. Rule 2 then
    holds for every path in the home: a project Claude cloned there on the first day of a
    session is an "output" a week later."""
    monkeypatch.setenv("TMPDIR", str(sandbox.home))
    origin = make_repo(tmp_path / "origin", files={"a.txt": "a\n", ".gitignore": "node_modules/\n"})
    project = sandbox.home / "code" / "app"
    project.parent.mkdir()
    command = f"git clone -q {origin} {project}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    (project / "node_modules").mkdir()
    (project / "node_modules" / "dep.js").write_text("1\n")
    set_mtime(project, OLD)
    entries = gc_entries()
    assert project.exists(), entries


def test_claude_config_dir_naming_an_existing_config_records_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`CLAUDE_CONFIG_DIR=<the user's config> claude -p ...`: a folder that was there before the
    call is never an output, even inside the temp folder."""
    config = sandbox.user_tmp / "claude-alt"
    (config / "projects").mkdir(parents=True)
    (config / "settings.json").write_text("{}\n")
    before_the_call()
    command = f"CLAUDE_CONFIG_DIR={config} true"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path, duration_ms=100)
    assert read_records("s1") == []


def test_cp_into_an_existing_folder_with_the_same_name_inside_records_nothing(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -r src dest` where `dest/src` was already there: cp merges into the user's folder;
    neither `dest` nor `dest/src` is what the call made."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "new.txt").write_text("n\n")
    dest = sandbox.user_tmp / "dest"
    (dest / "src").mkdir(parents=True)
    (dest / "src" / "mine.txt").write_text("the user's\n")
    before_the_call()
    command = f"cp -r {src} {dest}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path, duration_ms=100)
    assert read_records("s1") == []


def test_a_copy_that_kept_its_sources_old_mtime_gets_its_seven_days(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -a docs "$TMPDIR/docs-try"` (or `cp -rp`) to try a rewrite on a copy: the copy's own
    mtime is the source's, ten days back. The session writes its results inside it, and the
    sweep of that session's end (or of the next start) finds an output "older than 7 days"."""
    docs = tmp_path / "docs"
    (docs / "chapters").mkdir(parents=True)
    (docs / "chapters" / "one.md").write_text("draft\n")
    set_mtime(docs, 10 * 86_400)
    copy = sandbox.user_tmp / "docs-try"
    command = f"cp -a {docs} {copy}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    assert [r.path for r in read_records("s1")] == [str(copy)]
    (copy / "chapters" / "one.md").write_text("an hour of rewriting, kept nowhere else\n")
    entries = gc_entries()  # the session has ended: nobody holds it
    assert (copy / "chapters" / "one.md").exists(), entries


def test_a_clone_whose_objects_another_repository_borrows_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin", files={"a.txt": "a\n"})
    cache = sandbox.user_tmp / "cache"
    command = f"git clone -q {origin} {cache}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    project = sandbox.home / "proj"
    git(tmp_path, "clone", "-q", "--shared", str(cache), str(project))  # objects/info/alternates -> cache
    (project / "b.txt").write_text("b\n")
    git(project, "add", "b.txt")
    git(project, "commit", "-qm", "the user's work")
    set_mtime(cache, OLD)
    entries = gc_entries()
    check = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=project, capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, (entries, check.stderr[-300:])


def test_a_hard_link_the_user_made_to_a_scratch_file_keeps_its_content(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A scratch file the Write made, then `ln "$TMPDIR/report.md" ~/report.md`: the sweep
    removes the temp name only, never the data the other name holds."""
    scratch = sandbox.user_tmp / "report.md"
    scratch.write_text("the report\n")
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": str(scratch), "content": "the report\n"},
               "tool_response": {"type": "create", "filePath": str(scratch)}, "duration_ms": 15}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    kept = sandbox.home / "report.md"
    os.link(scratch, kept)
    set_mtime(scratch, OLD)
    assert gc_entries()[str(scratch)] == ("removed", "age")
    assert kept.read_text() == "the report\n"


def test_a_write_through_a_dangling_symlink_in_the_temp_folder_records_nothing(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`$TMPDIR/notes.md -> ~/notes.md` (not there yet): the Write creates the user's file in the
    home and says `create`; the temp name is a symlink, never an output."""
    link = sandbox.user_tmp / "notes.md"
    target = sandbox.home / "notes.md"
    link.symlink_to(target)
    target.write_text("notes\n")  # what the Write did, through the link
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": str(link), "content": "notes\n"},
               "tool_response": {"type": "create", "filePath": str(link)}, "duration_ms": 15}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    assert read_records("s1") == []
    assert target.read_text() == "notes\n"


def test_an_unprinted_mktemp_folder_stays_with_the_session_that_made_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Two sessions each run `d=$(mktemp -d) && cd "$d" && ...` at the same time. The first
    hook to run finds both folders by template and time; the second hook then passes over its
    own folder ("already recorded"). Session B runs on (its cwd is the project, not the folder);
    session A has ended."""
    child = subprocess.Popen(["sleep", "120"])
    try:
        sandbox.write_session(str(child.pid), pid=child.pid, sessionId="B", cwd=str(tmp_path),
                              procStart=proc_start_time(child.pid))
        command = 'd=$(mktemp -d) && cd "$d" && echo work > notes.txt'
        bash(command, tmp_path)  # session B's call; its hook has not run yet
        (b_folder,) = [p for p in sandbox.user_tmp.iterdir() if p.name.startswith("tmp.")]
        bash(command, tmp_path)  # session A's call
        record_bash(command, "", tmp_path)  # A's hook (session s1)
        payload = {"hook_event_name": "PostToolUse", "session_id": "B", "cwd": str(tmp_path), "tool_name": "Bash",
                   "tool_input": {"command": command},
                   "tool_response": {"stdout": "", "stderr": "", "interrupted": False}, "duration_ms": 3000}
        assert run_hook(payload, cwd=tmp_path).returncode == 0  # B's hook
        set_mtime(b_folder, OLD)  # B has worked in it for a week (in subfolders: its own mtime stays)
        entries = gc_entries()
        assert (b_folder / "notes.txt").exists(), entries
    finally:
        child.kill()
        child.wait()


def test_a_key_generated_in_a_temp_folder_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    command = 'd=$(mktemp -d) && ssh-keygen -q -t ed25519 -N "" -C deploy -f "$d/id_ed25519" && echo "$d"'
    printed = bash(command, tmp_path)
    record_bash(command, printed, tmp_path)
    (folder,) = [Path(r.path) for r in read_records("s1")]
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "id_ed25519").exists(), entries


_SERVER = """
import ctypes, sys, time
if len(sys.argv) > 1:
    ctypes.CDLL(sys.argv[1])  # mapped, its file closed: only /proc/<pid>/maps names it
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("holds", ["script", "library"])
def test_a_process_running_a_script_or_library_from_an_old_temp_folder_keeps_it(
        sandbox: SandboxEnv, tmp_path: Path, holds: str) -> None:
    """`nohup python3 "$d/serve.py" &` from the project (Python reads the script and closes
    it), or a program that loaded `$d/libfast.so` (mapped, no open file): the process runs from
    the folder as much as one whose executable lies there."""
    command = 'd=$(mktemp -d) && echo "$d"'
    printed = bash(command, tmp_path)
    record_bash(command, printed, tmp_path)
    (folder,) = [Path(r.path) for r in read_records("s1")]
    script = folder / "serve.py"
    script.write_text(_SERVER)
    args = [str(script)]
    if holds == "library":
        import _json  # a C extension module: any shared object will do

        library = folder / "libfast.so"
        library.write_bytes(Path(_json.__file__).read_bytes())
        args = ["-c", _SERVER, str(library)]
    server = subprocess.Popen([sys.executable, *args], cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stdout.readline() == b"ready\n"
        set_mtime(folder, OLD)
        entries = gc_entries()
        assert folder.exists(), entries
    finally:
        server.kill()
        server.wait()


def test_a_recorded_name_taken_by_a_new_folder_is_not_the_output_any_more(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git clone ... /tmp/tool` on Monday (recorded); on Tuesday the user removes it and puts
    their own unversioned work at the same name before any sweep saw the name empty. A Write's
    record would pass over the new folder (device, inode, birth); a clone's record does not."""
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "tool"
    command = f"git clone -q {origin} {clone}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    subprocess.run(["rm", "-rf", str(clone)], check=True)
    clone.mkdir()
    (clone / "measurements.csv").write_text("the user's own data\n")
    set_mtime(clone, OLD)
    entries = gc_entries()
    assert (clone / "measurements.csv").exists(), entries


def test_the_prune_after_a_removal_forgets_only_the_removed_worktree(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user keeps a worktree of the project on a drive that is not mounted today (here:
    moved away for the sweep). `git worktree prune` with no expiry forgets it at once; git's own
    gc waits three months (`gc.worktreePruneExpire`) for exactly this."""
    project = make_repo(tmp_path / "proj")
    side = tmp_path / "drive" / "side"
    git(project, "worktree", "add", "-q", "--detach", str(side))
    (side / "exp.txt").write_text("e\n")
    git(side, "add", "exp.txt")
    git(side, "commit", "-qm", "only on the detached HEAD of the drive's worktree")
    only = git(side, "rev-parse", "HEAD")
    (side / "staged.txt").write_text("staged, not committed\n")
    git(side, "add", "staged.txt")
    wt = sandbox.user_tmp / "wt"
    command = f"git worktree add -q --detach {wt}"
    bash(command, project)
    record_bash(command, "", project)
    set_mtime(wt, OLD)
    os.rename(tmp_path / "drive", tmp_path / "unmounted")  # the drive is away during the sweep
    try:
        entries = gc_entries()
        assert entries[str(wt)] == ("removed", "age")
    finally:
        os.rename(tmp_path / "unmounted", tmp_path / "drive")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=side, capture_output=True, text=True, check=False)
    assert head.stdout.strip() == only, head.stderr
    assert "staged.txt" in git(side, "diff", "--cached", "--name-only")


def test_a_git_dir_kept_in_a_temp_folder_for_a_work_tree_in_the_home_is_kept(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d) && git clone --separate-git-dir="$d/proj.git" URL /home/me/proj && echo "$d"`:
    the temp folder holds the whole history (and the index) of a checkout in the home. It looks
    bare, yet it has remote-tracking branches (so "any commit counts" does not apply) and its
    `core.bare` is false: its work tree lives somewhere else."""
    origin = make_repo(tmp_path / "origin")
    project = sandbox.home / "proj"
    command = f'd=$(mktemp -d) && git clone -q --separate-git-dir="$d/proj.git" {origin} {project} && echo "$d"'
    printed = bash(command, tmp_path)
    record_bash(command, printed, tmp_path)
    recorded = sorted(r.path for r in read_records("s1"))
    folder = Path(printed.strip())
    assert str(folder) in recorded, recorded
    set_mtime(folder, OLD)
    entries = gc_entries()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, check=False)
    assert head.returncode == 0, (entries, head.stderr)


def test_a_local_clone_of_a_temp_clone_keeps_its_hard_linked_objects(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git clone /tmp/tool ~/proj` hard-links the object files: removing the temp clone drops
    its names only, never the data the home clone holds."""
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "tool"
    command = f"git clone -q {origin} {clone}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    project = sandbox.home / "proj"
    git(tmp_path, "clone", "-q", str(clone), str(project))
    set_mtime(clone, OLD)
    assert gc_entries()[str(clone)] == ("removed", "age")
    fsck = subprocess.run(["git", "fsck", "--full"], cwd=project, capture_output=True, text=True, check=False)
    assert fsck.returncode == 0, fsck.stderr


def test_a_recorded_worktree_a_live_session_holds_by_the_registry_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude made `.claude/worktrees/x` with a Bash `git worktree add` (recorded); later the user
    ran `claude --worktree x` (WorktreeCreate found it again and registered the session), and now
    resumes that session: `claude --resume` starts in the launch folder, the project, so no cwd
    lies inside. The cleanup keeps such a checkout (`live`, by the registry); the GC does not ask."""
    from app.core import checkouts

    project = make_repo(tmp_path / "proj")
    wt = project / ".claude" / "worktrees" / "x"
    command = f"git worktree add -q -b worktree-x {wt}"
    bash(command, project)
    record_bash(command, "", project)
    child = subprocess.Popen(["sleep", "120"])
    try:
        checkouts.create_checkout(str(project), "x", "B")
        sandbox.write_session(str(child.pid), pid=child.pid, sessionId="B", cwd=str(project),
                              procStart=proc_start_time(child.pid))
        (wt / "node_modules").mkdir()
        set_mtime(wt, OLD)
        entries = gc_entries()
        assert wt.exists(), entries
    finally:
        child.kill()
        child.wait()


def test_a_clone_that_became_a_known_project_is_not_an_output(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git clone URL /tmp/proj` on the first day, then every day `cd /tmp/proj && claude`: the
    clone is the user's project now. Overnight no session runs there; its work is pushed, its
    build output ignored; a sweep started by a session in another project finds an old clean
    output."""
    origin = make_repo(tmp_path / "origin", files={"a.txt": "a\n", ".gitignore": "node_modules/\n"})
    project = sandbox.user_tmp / "proj"
    command = f"git clone -q {origin} {project}"
    bash(command, tmp_path)
    record_bash(command, "", tmp_path)
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(project): {"allowedTools": []}}}))
    (project / "node_modules").mkdir()
    (project / "node_modules" / "dep.js").write_text("1\n")
    set_mtime(project, OLD)
    entries = gc_entries()
    assert project.exists(), entries


@pytest.mark.xfail(strict=True, reason="the size bound removes an output minutes old, at the end of the "
                                       "session that made it: the product of that session, never copied")
def test_the_size_bound_never_takes_an_output_made_minutes_ago(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long session turns a dataset into a result in `$(mktemp -d)` (bigger than GC_MAX_BYTES,
    5 GiB; here the bound is made small) and the user ends it to look at the result. The
    SessionEnd sweep finds an unused output over the size bound and removes it at once."""
    monkeypatch.setenv("CLAUDETTO_GC_MAX_BYTES", str(64 * 1024))
    command = 'd=$(mktemp -d) && head -c 1048576 /dev/urandom > "$d/result.parquet" && echo "$d"'
    printed = bash(command, tmp_path)
    record_bash(command, printed, tmp_path)
    folder = Path(printed.strip())
    entries = gc_entries()
    assert (folder / "result.parquet").exists(), entries
