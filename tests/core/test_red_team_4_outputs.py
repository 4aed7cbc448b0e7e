"""The output GC attacked a fourth time, as a session and a user would: real commands run, the
PostToolUse hook records them (`python -P -m hooks`), the sweep runs through `claudetto gc`.
Each test is a way unique work could be lost; a test marked xfail is a loss still open (its
reason says what goes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import SandboxEnv, gc_entries, recorded, run_cli, run_hook, set_mtime

OLD = 8 * 86_400
NEEDS_RSYNC = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed")


def bash(command: str, cwd: Path) -> str:
    """Run the command as Claude's Bash tool would, for real; its stdout."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, text=True).stdout


def run_and_record(command: str, cwd: Path, session: str = "s1") -> str:
    """The Bash call, then the PostToolUse hook Claude runs after it; the call's stdout. The
    call's duration is the one it took, as Claude reports it (a loaded machine may need more
    than a couple of seconds to split 12,000 files)."""
    started = time.monotonic()
    out = bash(command, cwd)
    took_ms = int((time.monotonic() - started) * 1000) + 200
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
               "tool_input": {"command": command},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": max(2000, took_ms)}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    return out


# --- an entry moved in, behind many entries the session made ----------------------------------


def test_a_draft_moved_in_behind_many_session_files_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The session split a dataset into 12,000 parts in `$d/parts/` and left `$d/notes/drafts/`.
    The user parked their own draft there later (`mv`: the draft keeps its older birth time).
    The look for an entry moved in stops after 10,000 entries, breadth first: every part is
    read before the draft's level is reached, and a look cut short must not pass for a look
    that found nothing."""
    draft = sandbox.home / "thesis.tex"
    draft.write_text("chapter one, kept nowhere else\n")
    command = ('d=$(mktemp -d) && mkdir -p "$d/parts" "$d/notes/drafts" && '
               'seq 12000 | split -l 1 -a 5 - "$d/parts/p_" && echo "$d"')
    folder = Path(run_and_record(command, tmp_path).strip())
    assert recorded() == [str(folder)]
    bash(f'mv "{draft}" "{folder}/notes/drafts/"', tmp_path)
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "notes" / "drafts" / "thesis.tex").exists(), entries
    assert entries[str(folder)] == ("kept", "dirty"), entries


def test_an_old_output_of_many_files_made_in_node_modules_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The same size of tree, all the session's own and inside a regenerable folder (an
    `npm install` in a temp folder): it is an output and goes at its age."""
    command = ('d=$(mktemp -d) && mkdir -p "$d/node_modules/dep" && '
               'seq 12000 | split -l 1 -a 5 - "$d/node_modules/dep/f_" && echo "$d"')
    folder = Path(run_and_record(command, tmp_path).strip())
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("removed", "age"), entries
    assert not folder.exists()


# --- a move spelled as a copy and a removal, into a temp folder the session made ----------------


@pytest.mark.parametrize("copy", ['cp -r "$HOME/proj" "$d"/', 'cp -r "$HOME/proj/." "$d"', 'cp -a "$HOME/proj" "$d/proj"',
                                  pytest.param('rsync -a --exclude .cache ~/proj "$d"/', marks=NEEDS_RSYNC)])
def test_a_folder_copied_into_a_temp_folder_and_removed_at_home_keeps_the_temp_folder(
        sandbox: SandboxEnv, tmp_path: Path, copy: str) -> None:
    """`d=$(mktemp -d) && cp -r ~/proj "$d"/ && rm -rf ~/proj` is a move: the only copy of the
    project now lies in the temp folder. The copy itself is not recorded (its source went), yet
    `$d` is, as a temp output: a week later it went, and the project with it."""
    project = sandbox.home / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("years of notes, kept nowhere else\n")
    command = f'd=$(mktemp -d) && {copy} && rm -rf "$HOME/proj" && echo "$d"'
    folder = Path(run_and_record(command, tmp_path).strip())
    assert not project.exists()
    copied = next(folder.rglob("notes.txt"))
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert copied.exists(), entries


@pytest.mark.parametrize("copy", ['cp -r "$HOME/proj" "$d"/', 'cp -r ~/proj/. "$d"', 'cp ~/proj/notes.txt "$d"/',
                                  pytest.param('rsync -a -e ssh ~/proj/ "$d"/', marks=NEEDS_RSYNC)])
def test_a_folder_copied_into_a_temp_folder_and_removed_a_call_later_keeps_the_temp_folder(
        sandbox: SandboxEnv, tmp_path: Path, copy: str) -> None:
    """The same move in two calls: `d=$(mktemp -d) && cp -r ~/proj "$d"/`, then `rm -rf ~/proj`.
    The copy's target cannot be expanded, so only `$d` is recorded, with nothing saying what was
    copied into it: a week later `$d` went with the only copy of the project."""
    project = sandbox.home / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("years of notes, kept nowhere else\n")
    folder = Path(run_and_record(f'd=$(mktemp -d) && {copy} && echo "$d"', tmp_path).strip())
    assert recorded() == [str(folder)]
    run_and_record('rm -rf "$HOME/proj"', tmp_path)
    copied = next(folder.rglob("notes.txt"))
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert copied.exists(), entries
    assert entries[str(folder)] == ("kept", "dirty"), entries


def test_a_temp_folder_a_file_was_copied_into_still_goes_while_the_file_is_there(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """What was copied in is still at home: the temp folder holds only a copy, and goes."""
    (sandbox.home / "notes.txt").write_text("notes\n")
    folder = Path(run_and_record('d=$(mktemp -d) && cp ~/notes.txt "$d"/ && echo "$d"', tmp_path).strip())
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("removed", "age"), entries


# --- a project that lives in the temp folder ---------------------------------------------------


def write_payload(file_path: Path, cwd: Path, content: str) -> dict[str, object]:
    return {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(cwd), "tool_name": "Write",
            "tool_input": {"file_path": str(file_path), "content": content},
            "tool_response": {"type": "create", "filePath": str(file_path), "content": content},
            "duration_ms": 20}


@pytest.mark.parametrize("known", [True, False])
def test_files_a_session_made_inside_a_project_in_the_temp_folder_are_the_projects(
        sandbox: SandboxEnv, tmp_path: Path, known: bool) -> None:
    """On a cluster TMPDIR is often the user's big scratch disk (`/scratch/$USER`), and the
    projects live there. A session started in one writes a new module (a Write inside the temp
    folder: a `scratch` record) and backs up a folder (`cp -r src src.bak`: a `copy`). Both
    are the project's files, not outputs outside it: a week later the module, committed or
    not, went from the work tree, and the backup with it."""
    from app.core import paths

    project = sandbox.user_tmp / "proj"
    from tests.support import git, make_repo

    make_repo(project, files={"src/main.py": "print('hi')\n"})
    if known:
        paths.claude_json().write_text(json.dumps({"projects": {str(project): {}}}))
    module = project / "src" / "solver.py"
    module.write_text("def solve(): return 42\n")
    done = run_hook(write_payload(module, project, "def solve(): return 42\n"), cwd=project)
    assert done.returncode == 0, done.stderr
    git(project, "add", "src/solver.py")
    git(project, "commit", "-q", "-m", "solver")
    run_and_record("cp -r src src.bak", project)
    (project / "draft.md").write_text("untracked notes\n")
    done = run_hook(write_payload(project / "draft.md", project, "untracked notes\n"), cwd=project)
    for path in (module, project / "src.bak", project / "draft.md"):
        set_mtime(path, OLD)
    entries = gc_entries()
    assert module.exists() and (project / "src.bak" / "main.py").exists(), entries
    assert (project / "draft.md").exists(), entries


def test_a_file_written_into_a_known_project_in_the_temp_folder_from_elsewhere_is_kept(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user's project lives on the scratch disk (TMPDIR) and Claude was started in it once
    (`.claude.json` lists it). A session working elsewhere (`--add-dir`) writes a new file into
    it: the project's file, not an output outside it."""
    from app.core import paths
    from tests.support import make_repo

    project = make_repo(sandbox.user_tmp / "proj")
    paths.claude_json().write_text(json.dumps({"projects": {str(project): {}}}))
    notes = project / "NOTES.md"
    notes.write_text("the user's plan\n")
    assert run_hook(write_payload(notes, tmp_path, "the user's plan\n"), cwd=tmp_path).returncode == 0
    assert recorded() == [str(notes)]
    set_mtime(notes, OLD)
    entries = gc_entries()
    assert notes.exists(), entries


# --- what held -----------------------------------------------------------------------------------


def test_removing_a_hard_linked_copy_never_touches_the_users_files(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -al ~/data "$TMPDIR/snap"`: every file of the copy is a hard link to the user's. The
    copy goes at its age; each of the user's files keeps its content, its mode and its times."""
    data = sandbox.home / "data"
    data.mkdir()
    (data / "survey.csv").write_text("the only copy\n")
    (data / "survey.csv").chmod(0o444)
    before = (data / "survey.csv").stat()
    run_and_record(f'cp -al "{data}" "{sandbox.user_tmp}/snap"', tmp_path)
    snap = sandbox.user_tmp / "snap"
    assert recorded() == [str(snap)]
    set_mtime(snap, OLD)
    entries = gc_entries()
    assert entries[str(snap)] == ("removed", "age"), entries
    after = (data / "survey.csv").stat()
    assert (data / "survey.csv").read_text() == "the only copy\n"
    assert (after.st_mode, after.st_mtime_ns, after.st_nlink) == (before.st_mode, before.st_mtime_ns, 1)


def test_a_sweep_killed_while_it_held_the_lock_does_not_stop_the_next(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A sweep killed (SIGKILL) while it held the GC lock leaves the lock file behind; the lock
    itself went with the process, so the next sweep runs and removes what it must."""
    import signal
    import sys

    from app.core import paths

    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    set_mtime(folder, OLD)
    holder = subprocess.Popen([sys.executable, "-P", "-c", (
        "import sys, time; from app.core import paths; from app.core.state import locked\n"
        "with locked(paths.gc_dir() / 'sweep'):\n    print('HELD', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[2])
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"HELD"
    busy = run_cli("gc")
    assert busy.returncode == 1 and "another GC sweep is running" in busy.stderr, busy
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (paths.gc_dir() / "sweep.lock").exists()
    entries = gc_entries()
    assert entries[str(folder)] == ("removed", "age"), entries


@pytest.mark.parametrize("source", ["~/proj", "$HOME/proj"])
def test_a_copy_of_a_home_folder_removed_a_call_later_is_kept(sandbox: SandboxEnv, tmp_path: Path, source: str) -> None:
    """`cp -r ~/proj /tmp/bak` (the target spelled out, so the copy is recorded), then `rm -rf
    ~/proj` a call later. The copy's source was stored only when the hook could expand it,
    and it expands no `~` nor `$HOME`: the backup, the only copy left, went a week later."""
    project = sandbox.home / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("years of notes, kept nowhere else\n")
    backup = sandbox.user_tmp / "bak"
    run_and_record(f'cp -r {source} "{backup}"', tmp_path)
    assert recorded() == [str(backup)]
    run_and_record("rm -rf ~/proj", tmp_path)
    set_mtime(backup, OLD)
    entries = gc_entries()
    assert (backup / "notes.txt").exists(), entries
    assert entries[str(backup)] == ("kept", "dirty"), entries


def test_a_clone_of_a_home_repository_removed_a_call_later_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git clone ~/repo /tmp/c`, then `rm -rf ~/repo`: the clone's commits are all on
    `origin/main`, yet origin is gone, so the clone is the only copy. The clone's source was
    stored only when the hook could expand it, and it expands no `~`."""
    from tests.support import make_repo

    make_repo(sandbox.home / "repo", files={"thesis.tex": "the only copy\n"})
    clone = sandbox.user_tmp / "c"
    run_and_record(f'git clone -q ~/repo "{clone}"', tmp_path)
    assert recorded() == [str(clone)]
    run_and_record("rm -rf ~/repo", tmp_path)
    set_mtime(clone, OLD)
    entries = gc_entries()
    assert (clone / "thesis.tex").exists(), entries


def test_a_file_a_session_wrote_into_its_own_folder_in_the_temp_folder_without_git_is_kept(
        sandbox: SandboxEnv) -> None:
    """Claude started in `/scratch/$USER/analysis` (TMPDIR is `/scratch/$USER`), a folder with
    no git: the notes a Write created there are the analysis's, not an output outside it."""
    folder = sandbox.user_tmp / "analysis"
    folder.mkdir()
    notes = folder / "findings.md"
    notes.write_text("what the data showed\n")
    assert run_hook(write_payload(notes, folder, "what the data showed\n"), cwd=folder).returncode == 0
    assert recorded() == [str(notes)]
    set_mtime(notes, OLD)
    entries = gc_entries()
    assert notes.exists(), entries


def test_a_file_written_into_a_temp_output_the_session_cd_ed_into_still_goes(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude's shell stays where a `cd` took it: a Write made from inside the session's own
    `mktemp -d` folder is an output, and goes with that folder."""
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    out = folder / "out.txt"
    out.write_text("scratch\n")
    assert run_hook(write_payload(out, folder, "scratch\n"), cwd=folder).returncode == 0
    assert recorded() == sorted([str(folder), str(out)])
    set_mtime(out, OLD)
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("removed", "age"), entries
    assert not folder.exists()


def test_an_output_a_subagent_made_stays_while_its_parent_session_runs(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A subagent's Bash call carries `agent_id` and its parent's `session_id`: what it made is
    the live session's, kept whatever its age."""
    from app.core.sessions import proc_start_time

    command = 'd=$(mktemp -d) && echo "$d"'
    out = bash(command, tmp_path)
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "agent_id": "a-7", "agent_type": "Explore",
               "cwd": str(tmp_path), "tool_name": "Bash", "tool_input": {"command": command},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": 100}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    folder = Path(out.strip())
    assert recorded() == [str(folder)]
    set_mtime(folder, OLD)
    child = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(child.pid), pid=child.pid, sessionId="s1", cwd=str(tmp_path),
                              procStart=proc_start_time(child.pid))
        assert gc_entries()[str(folder)] == ("kept", "live")
    finally:
        child.kill()
        child.wait()
    assert gc_entries()[str(folder)] == ("removed", "age")


@pytest.mark.parametrize("when", [float("nan"), float("inf"), 1e300, -1.0])
def test_a_record_whose_time_the_clock_spoiled_is_judged_by_the_path_itself(
        sandbox: SandboxEnv, tmp_path: Path, when: float) -> None:
    """A record written while the clock jumped (or a file spoiled by hand): its time plays no
    part; the path's own age decides, and the report stays one JSON document."""
    from tests.support import add_record

    young = Path(bash("mktemp -d", tmp_path).strip())
    old = Path(bash("mktemp -d", tmp_path).strip())
    add_record("s1", young, when=when)
    add_record("s1", old, when=when)
    set_mtime(old, OLD)
    entries = gc_entries()
    assert entries[str(young)] == ("kept", "young") and young.exists(), entries
    assert entries[str(old)] == ("removed", "age"), entries


@pytest.fixture
def other_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on another file system than the temp folder (tmpfs `/dev/shm`), as a home on
    another disk is: `mv` from there copies, and the copy is born anew."""
    import os
    import tempfile

    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system")
    place = Path(tempfile.mkdtemp(dir="/dev/shm"))
    yield place
    shutil.rmtree(place, ignore_errors=True)


def test_a_folder_moved_in_from_another_disk_keeps_the_temp_folder(
        sandbox: SandboxEnv, tmp_path: Path, other_disk: Path) -> None:
    """`d=$(mktemp -d) && mv /other/disk/proj "$d"/`: across file systems mv copies and then
    removes, so the moved files are born anew and no birth time shows they came from
    elsewhere; the command says it, and the source is gone."""
    project = other_disk / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("years of notes, kept nowhere else\n")
    folder = Path(run_and_record(f'd=$(mktemp -d) && mv "{project}" "$d"/ && echo "$d"', tmp_path).strip())
    assert recorded() == [str(folder)]
    assert not project.exists()
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "proj" / "notes.txt").exists(), entries


def test_a_folder_moved_in_from_another_disk_a_call_later_keeps_the_temp_folder(
        sandbox: SandboxEnv, tmp_path: Path, other_disk: Path) -> None:
    """A call later, `mv` alone: it is a trigger word, so the move is read and marks the older
    output `moved_in` (the moved files are born anew: no time shows where they came from)."""
    project = other_disk / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("years of notes, kept nowhere else\n")
    folder = Path(run_and_record('d=$(mktemp -d) && echo "$d"', tmp_path).strip())
    run_and_record(f'mv "{project}" "{folder}"/', tmp_path)
    set_mtime(folder, OLD)
    entries = gc_entries()
    assert (folder / "proj" / "notes.txt").exists(), entries
