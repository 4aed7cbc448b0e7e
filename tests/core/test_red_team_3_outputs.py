"""The output GC attacked a third time, as a session and a user would: real commands run, the
PostToolUse hook records them (`python -P -m hooks`), the sweep runs through `claudetto gc`
or the SessionEnd hook. Each test is a way unique work could be lost; a test marked xfail is
a loss still open (its reason says what goes)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from app.core import paths
from app.core.gc_records import read_records
from tests.hooks.test_gc_hooks import wait_for
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


def bash(command: str, cwd: Path) -> str:
    """Run the command as Claude's Bash tool would, for real; its stdout."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, text=True).stdout


def post_bash(command: str, stdout: str, cwd: Path, session: str = "s1") -> dict[str, object]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
            "duration_ms": 100}


def run_and_record(command: str, cwd: Path, session: str = "s1") -> str:
    """The Bash call, then the PostToolUse hook Claude runs after it; the call's stdout."""
    out = bash(command, cwd)
    done = run_hook(post_bash(command, out, cwd, session), cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    return out


def temp_output(tmp_path: Path) -> Path:
    """`d=$(mktemp -d) && echo "$d"`, recorded: a temp folder the session made."""
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    assert recorded() == [str(folder)]
    return folder


# --- what the user put into an output afterwards -------------------------------------------


@pytest.mark.parametrize("where", ["top", "nested"])
def test_a_file_the_user_moved_into_an_old_output_is_kept(sandbox: SandboxEnv, tmp_path: Path, where: str) -> None:
    """The session made `$d` and worked in it; later the user parked their own draft there
    (`mv ~/thesis.tex "$d"/`, or into a subfolder). A rename keeps the file's inode and its
    birth time: born before the folder itself, it is no product of the call that made it."""
    draft = sandbox.home / "thesis.tex"
    draft.write_text("chapter one, kept nowhere else\n")
    time.sleep(0.05)
    folder = temp_output(tmp_path)
    inner = folder / "build" if where == "nested" else folder
    inner.mkdir(exist_ok=True)
    (folder / "out.log").write_text("the session's own log\n")
    bash(f'mv "{draft}" "{inner}/"', tmp_path)
    set_mtime(inner, OLD)
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (inner / "thesis.tex").read_text() == "chapter one, kept nowhere else\n", entries
    assert entries[str(folder)][0] == "kept", entries


def test_an_output_with_only_what_its_session_made_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The bound of the rule above: files made in the folder after it (written, extracted,
    copied with `cp -a`, whose mtime is old but whose birth is new) are the output's own."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.txt").write_text("a\n")
    set_mtime(source / "a.txt", 30 * 86_400)
    folder = temp_output(tmp_path)
    bash(f'cp -a "{source}/a.txt" "{folder}/" && mkdir "{folder}/sub" && echo x > "{folder}/sub/b.txt"', tmp_path)
    set_mtime(folder, OLD)
    assert gc_entries()[str(folder)] == ("removed", "age")
    assert not folder.exists()


def test_a_repository_the_user_started_inside_an_output_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git init` in the session's temp folder and a few files, never committed."""
    folder = temp_output(tmp_path)
    (folder / "notes.md").write_text("ideas\n")
    git(folder, "init", "-q", "-b", "main")
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "notes.md").exists(), entries


def test_a_temp_output_a_later_session_ran_claude_in_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The session made `$d`; then the user did `cd $d && claude` and worked there for days
    without git: Claude lists `$d` in `.claude.json` `projects`. That session has ended; a week
    later a sweep started elsewhere finds an old output."""
    folder = temp_output(tmp_path)
    (folder / "plan.md").write_text("the user's plan, written over three sessions\n")
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(folder): {"allowedTools": []}}}))
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "plan.md").exists(), entries
    assert entries[str(folder)] == ("kept", "in_use"), entries


# --- what the recorder could take for "made here" -------------------------------------------


def test_git_clone_into_a_folder_that_was_there_and_empty_records_nothing(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """git clones into an existing empty folder: the folder is the user's (they made it to
    hold a checkout, with its permissions, maybe a mount point later)."""
    origin = make_repo(tmp_path / "origin")
    target = sandbox.user_tmp / "checkout"
    target.mkdir()
    time.sleep(3.5)
    run_and_record(f"git clone -q {origin} {target}", tmp_path)
    assert recorded() == []


def test_git_worktree_add_into_a_folder_that_was_there_records_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj")
    target = sandbox.user_tmp / "wt"
    target.mkdir()
    time.sleep(3.5)
    run_and_record(f"git worktree add -q --detach {target}", project)
    assert recorded() == []


def test_cp_into_a_folder_the_user_had_records_only_the_copy(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -r src /tmp/stash/` into the user's folder of other things: only `stash/src` is the
    call's; the sweep never takes the folder nor its other entries."""
    stash = sandbox.user_tmp / "stash"
    stash.mkdir()
    (stash / "mine.txt").write_text("the user's\n")
    source = tmp_path / "src"
    source.mkdir()
    (source / "f").write_text("f\n")
    time.sleep(3.5)
    for command in (f"cp -r {source} {stash}/", f"cp -r {source} {stash}"):
        subprocess.run(["rm", "-rf", str(stash / "src")], check=True)
        run_and_record(command, tmp_path)
        assert recorded() == [str(stash / "src")], command
    set_mtime(stash / "src", OLD)
    set_mtime(stash, OLD)
    entries = gc_entries()
    assert (stash / "mine.txt").exists() and not (stash / "src").exists(), entries


@pytest.mark.parametrize("spelling", ["{tmp}/../{tmpname}/x", "/{tmp}/x", "{tmp}/./x"])
def test_odd_spellings_of_the_temp_folder_are_one_output(sandbox: SandboxEnv, tmp_path: Path, spelling: str) -> None:
    source = tmp_path / "src"
    source.mkdir()
    tmp = str(sandbox.user_tmp)
    target = spelling.format(tmp=tmp, tmpname=sandbox.user_tmp.name)
    run_and_record(f"cp -r {source} {target}", tmp_path)
    assert recorded() == [str(sandbox.user_tmp / "x")]


@pytest.mark.parametrize("command", [
    "cp -r data {target} && rm -rf data",
    "cp -r data {target}; rm -r ./dat*",
    "cp -r data {target} && rm -f data/*.csv",
    'src=data; cp -r "$src" {target} && rm -rf "$src"',
    "git clone -q data {target} && rm -rf data",
    "git clone -q file://{cwd}/data {target} && rm -rf {cwd}/data",
])
def test_a_copy_whose_source_the_command_then_removed_is_a_move(sandbox: SandboxEnv, tmp_path: Path,
                                                                command: str) -> None:
    """`cp -r data "$TMPDIR/data-old" && rm -rf data`: the session moved the user's data out
    of the project (as `mv` would, which records nothing). The copy is the only one left; a
    clone of a local repository the command then removed even looks pushed (its commits are on
    `origin/main`, and origin is gone)."""
    data = tmp_path / "data"
    if "clone" in command:
        make_repo(data, files={"survey.csv": "the only copy\n"})
    else:
        data.mkdir()
        (data / "survey.csv").write_text("the only copy\n")
    target = sandbox.user_tmp / "data-old"
    run_and_record(command.format(target=target, cwd=tmp_path), tmp_path)
    assert recorded() == []
    set_mtime(target, OLD)
    entries = gc_entries()
    assert (target / "survey.csv").exists(), entries


@pytest.mark.parametrize("command", ["rm -rf {target} && cp -r data {target}",
                                     "cp -r data {target} && rm -rf {target}/junk data2"])
def test_removing_the_target_or_something_else_still_records_the_copy(sandbox: SandboxEnv, tmp_path: Path,
                                                                       command: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "junk").write_text("j\n")
    target = sandbox.user_tmp / "data-old"
    run_and_record(command.format(target=target), tmp_path)
    assert recorded() == [str(target)]


def test_a_relative_or_dotdot_write_never_records_a_file_outside(sandbox: SandboxEnv, tmp_path: Path) -> None:
    notes = sandbox.home / "notes.md"
    notes.write_text("notes\n")
    for file_path in ("notes.md", f"{sandbox.user_tmp}/../home/notes.md"):
        payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(sandbox.user_tmp),
                   "tool_name": "Write", "tool_input": {"file_path": file_path, "content": "notes\n"},
                   "tool_response": {"type": "create", "filePath": file_path}, "duration_ms": 10}
        assert run_hook(payload, cwd=sandbox.user_tmp).returncode == 0
    assert recorded() == []


# --- who else uses it ------------------------------------------------------------------------


def test_another_claude_resumed_into_the_same_session_keeps_what_it_made(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`claude --resume <id>` in a second terminal while the first still runs: two Claude
    processes, one session id. The first one exits (SessionEnd for that id); the second goes
    on working in the folder its own call made a week ago."""
    from tests.hooks.test_record_process import FakeClaude

    folder = sandbox.user_tmp / "work"
    command = f"mkdir -p {sandbox.user_tmp}/src && cp -r {sandbox.user_tmp}/src {folder}"
    bash(command, tmp_path)
    second = FakeClaude(tmp_path, post_bash(command, "", tmp_path, session="first-id"))
    first = FakeClaude(tmp_path, {"hook_event_name": "UserPromptSubmit", "session_id": "first-id",
                                  "cwd": str(tmp_path), "prompt": "hi"})
    try:
        (made,) = read_records("first-id")
        assert made.path == str(folder) and made.claude_pid == second.pid
        (folder / "results.csv").write_text("a week of runs\n")
        set_mtime(folder, OLD)
        payload = {"hook_event_name": "SessionEnd", "session_id": "first-id", "cwd": str(tmp_path),
                   "reason": "prompt_input_exit"}
        assert run_hook(payload, cwd=tmp_path).returncode == 0
        log = paths.session_log(str(tmp_path), "first-id")
        assert wait_for(lambda: log.exists() and "GC removed=" in log.read_text())
        assert (folder / "results.csv").exists(), log.read_text()
    finally:
        first.stop()
        second.stop()


@pytest.mark.parametrize("kept", [".credentials.json", "projects/-home-me-app/memory/MEMORY.md"])
def test_a_config_folder_someone_logged_in_to_or_keeps_memory_in_is_kept(
        sandbox: SandboxEnv, tmp_path: Path, kept: str) -> None:
    """`CLAUDE_CONFIG_DIR="$TMPDIR/claude-work" claude` made a config folder (recorded). The
    user then logged in there and used it for a week: its `.credentials.json` (a login, not
    matched by `credentials*`) or its auto memory (notes Claude and the user wrote, nowhere
    else) is no regenerable output, even once no Claude runs on it."""
    config = sandbox.user_tmp / "claude-work"
    run_and_record(f'CLAUDE_CONFIG_DIR={config} bash -c \'mkdir -p "$CLAUDE_CONFIG_DIR"\'', tmp_path)
    assert recorded() == [str(config)]
    (config / kept).parent.mkdir(parents=True, exist_ok=True)
    (config / kept).write_text("{}\n" if kept.endswith(".json") else "- [Deploy](deploy.md) — how we ship\n")
    set_mtime(config, OLD)
    entries = gc_entries()
    assert (config / kept).exists(), entries
    assert entries[str(config)] == ("kept", "dirty"), entries


@pytest.mark.parametrize("made", ["projects/-x", "."])
def test_a_config_folder_of_a_finished_sandbox_run_goes(sandbox: SandboxEnv, tmp_path: Path, made: str) -> None:
    """The other side: `claude -p` run by the session in a sandbox config folder leaves a
    transcript and `.claude.json` (or only `.claude.json`): an output."""
    config = sandbox.user_tmp / "claude-sandbox"
    run_and_record(f'CLAUDE_CONFIG_DIR={config} bash -c \'mkdir -p "$CLAUDE_CONFIG_DIR/{made}"\'', tmp_path)
    (config / ".claude.json").write_text("{}\n")
    if made != ".":
        (config / made / "s.jsonl").write_text("{}\n")
    set_mtime(config, OLD)
    assert gc_entries()[str(config)] == ("removed", "age")


def test_a_commit_only_the_reflog_holds_keeps_the_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A day of work committed in the session's clone, then a `git reset --hard origin/main` (the
    session's, or the user's, by mistake). `git reflog` still brings it back, for 90 days: as long
    as the clone is there."""
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "tool"
    run_and_record(f"git clone -q {origin} {clone}", tmp_path)
    (clone / "feature.py").write_text("a day of work\n")
    git(clone, "add", "feature.py")
    git(clone, "commit", "-qm", "the feature")
    work = git(clone, "rev-parse", "HEAD")
    git(clone, "reset", "-q", "--hard", "origin/main")
    git(clone, "reset", "-q", "--hard")  # ORIG_HEAD moves on too: only the reflog names the work
    set_mtime(clone, OLD)
    entries = gc_entries()
    assert clone.exists() and git(clone, "cat-file", "-t", work) == "commit", entries


@pytest.mark.parametrize("removals", ["rm -f {words}", "{rms}", "rm -f {globs}"])
def test_many_removals_after_many_copies_are_read_in_bounded_time(removals: str) -> None:
    """256 copies, then an `rm` of tens of thousands of words (or as many `rm`s, or globs),
    to the size limit: each source is checked against each removal once, so bounded, never
    256 x 40,000 path resolutions (half a minute of a hook). Past the bound, a copy may be a
    move: nothing is recorded."""
    from app.core.bash_outputs import read_bash
    from app.core.command_line import MAX_COMMAND_CHARS

    head = "cp -r " + " ".join(f"s{i}" for i in range(256)) + " /tmp/dest/; "
    room = MAX_COMMAND_CHARS - len(head) - 64
    command = head + removals.format(words=" ".join(f"x{i}" for i in range(room // 7))[:room],
                                     rms="; ".join(f"rm x{i}" for i in range(room // 10))[:room],
                                     globs=" ".join(f"x{i}*" for i in range(room // 8))[:room])
    assert len(command) <= MAX_COMMAND_CHARS
    started = time.process_time()
    found, notes, _, _ = read_bash(command, "/w", "")
    assert time.process_time() - started < 1.0
    assert found == [], found
    assert any("is a move" in note for note in notes), notes


@pytest.mark.parametrize("copy", ["cp -r data {target}", "git clone -q data {target}"])
def test_a_copy_whose_source_a_later_call_removed_is_kept(sandbox: SandboxEnv, tmp_path: Path, copy: str) -> None:
    """The move in two calls: `cp -r data "$TMPDIR/data-old"` (recorded: the source was there),
    then, a call later, `rm -rf data`. The copy is the only one left; a clone of the removed
    repository even looks pushed (its commits are on `origin/main`, and origin is gone)."""
    data = tmp_path / "data"
    if "clone" in copy:
        make_repo(data, files={"survey.csv": "the only copy\n"})
    else:
        data.mkdir()
        (data / "survey.csv").write_text("the only copy\n")
    target = sandbox.user_tmp / "data-old"
    run_and_record(copy.format(target=target), tmp_path)
    assert recorded() == [str(target)]
    run_and_record("rm -rf data", tmp_path)
    set_mtime(target, OLD)
    entries = gc_entries()
    assert (target / "survey.csv").exists(), entries
    # a clone's commits are on the remote-tracking branch of a remote that is gone: unmerged
    assert entries[str(target)] == ("kept", "unmerged" if "clone" in copy else "dirty"), entries


def test_a_copy_of_an_output_the_gc_removed_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The bound: a copy of another temp output (`cp -r "$TMPDIR/a" "$TMPDIR/b"`) loses nothing
    when `a` goes, by the GC or by the session."""
    first = sandbox.user_tmp / "a"
    run_and_record(f"mkdir {first} && cp -r {first} {sandbox.user_tmp}/b && rmdir {first}", tmp_path)
    run_and_record(f"mkdir {first} && cp -r {first} {sandbox.user_tmp}/c", tmp_path)
    subprocess.run(["rmdir", str(first)], check=True)
    set_mtime(sandbox.user_tmp / "c", OLD)
    assert gc_entries()[str(sandbox.user_tmp / "c")] == ("removed", "age")


# --- what held --------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    "tar -xf {tmp}/a.tgz -C {stash}",
    "mkdir -p {stash}/b",
    "env X=1 nohup cp {tmp}/a.tgz {stash}/",
    "find {tmp} -maxdepth 1 -name a.tgz -exec cp -r {{}} {stash} \\;",
    "echo {tmp}/a.tgz | xargs -I{{}} cp -r {{}} {stash}",
])
def test_commands_into_a_folder_the_user_had_never_make_it_an_output(
        sandbox: SandboxEnv, tmp_path: Path, command: str) -> None:
    stash = sandbox.user_tmp / "stash"
    stash.mkdir()
    (stash / "mine.txt").write_text("the user's\n")
    src = tmp_path / "payload"
    src.mkdir()
    (src / "f").write_text("f\n")
    subprocess.run(["tar", "-czf", str(sandbox.user_tmp / "a.tgz"), "-C", str(tmp_path), "payload"], check=True)
    time.sleep(3.5)
    line = command.format(tmp=sandbox.user_tmp, stash=stash)
    out = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, check=False).stdout
    done = run_hook(post_bash(line, out, tmp_path), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    assert str(stash) not in recorded(), recorded()
    set_mtime(stash, OLD)
    entries = gc_entries()
    assert (stash / "mine.txt").exists(), entries


def test_an_output_with_a_future_mtime_is_young(sandbox: SandboxEnv, tmp_path: Path) -> None:
    folder = temp_output(tmp_path)
    set_mtime(folder, -400 * 86_400)  # a year ahead: a wrong clock, an archive's time stamps
    assert gc_entries()[str(folder)] == ("kept", "young")


def test_a_records_file_that_is_a_symlink_is_never_written_through(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`gc/s1.json` is a link to a file of the user's: the recorder replaces the link, never
    writes into what it points at; the sweep reads no records through it."""
    theirs = sandbox.home / "notes.json"
    theirs.write_text(json.dumps({"records": [{"path": str(sandbox.home), "kind": "temp", "session": "s1"}]}))
    records = paths.gc_records_file("s1")
    records.parent.mkdir(parents=True, exist_ok=True)
    records.symlink_to(theirs)
    folder = temp_output_unchecked(tmp_path)
    assert json.loads(theirs.read_text())["records"][0]["path"] == str(sandbox.home)
    assert str(folder) not in theirs.read_text()
    entries = gc_entries()
    assert str(sandbox.home) not in entries and sandbox.home.exists()


def temp_output_unchecked(tmp_path: Path) -> Path:
    return Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())


def test_a_local_clone_whose_origin_repacked_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git clone ~/proj "$TMPDIR/tool"` hard-links the origin's pack, born long before the
    clone; once the origin repacks (`git gc`), the clone holds the only link. That is git's
    object store, judged by git's rules (all pushed): no file moved in."""
    origin = make_repo(tmp_path / "origin")
    git(origin, "gc", "-q")
    clone = sandbox.user_tmp / "tool"
    run_and_record(f"git clone -q {origin} {clone}", tmp_path)
    (origin / "b.txt").write_text("b\n")
    git(origin, "add", "b.txt")
    git(origin, "commit", "-qm", "more")
    git(origin, "gc", "-q", "--prune=now")
    set_mtime(clone, OLD)
    assert gc_entries()[str(clone)] == ("removed", "age")


def test_the_ending_claude_names_itself_so_a_resumed_twin_keeps_its_outputs(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The SessionEnd hook runs under the ending Claude, which removes its sessions file as it
    exits, most often before the detached sweep reads the sessions: the hook hands the sweep
    the ending Claude's pid, so the twin still running the same session id counts as live."""
    from tests.hooks.test_record_process import FakeClaude

    folder = sandbox.user_tmp / "work"
    command = f"mkdir -p {sandbox.user_tmp}/src && cp -r {sandbox.user_tmp}/src {folder}"
    bash(command, tmp_path)
    second = FakeClaude(tmp_path, post_bash(command, "", tmp_path, session="first-id"))
    try:
        (folder / "results.csv").write_text("a week of runs\n")
        set_mtime(folder, OLD)
        payload: dict[str, object] = {"hook_event_name": "SessionEnd", "session_id": "first-id",
                                      "cwd": str(tmp_path), "reason": "prompt_input_exit"}
        first = FakeClaude(tmp_path, payload)  # runs SessionEnd as its own hook
        (paths.config_dir() / "sessions" / f"{first.pid}.json").unlink()  # and exits
        first.stop()
        log = paths.session_log(str(tmp_path), "first-id")
        assert wait_for(lambda: log.exists() and "GC removed=" in log.read_text())
        assert (folder / "results.csv").exists(), log.read_text()
    finally:
        second.stop()


def test_an_old_output_holding_a_claude_login_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`.credentials.json` is where Claude keeps a login: a secret wherever it lies, not only in
    a recorded config folder (a session's `HOME=$d claude` run, a copy of a config)."""
    folder = temp_output(tmp_path)
    (folder / "home" / ".claude").mkdir(parents=True)
    login = folder / "home" / ".claude" / ".credentials.json"
    login.write_text('{"claudeAiOauth": {}}\n')
    set_mtime(folder, OLD)
    assert gc_entries()[str(folder)] == ("kept", "dirty")
    login.unlink()
    set_mtime(folder, OLD)
    assert gc_entries()[str(folder)] == ("removed", "age")
