"""The output recorder attacked a tenth time: what proves a session MADE an output. A record is
a licence to remove: a wrong "this call made it" lets a later sweep delete what the user had.
Each test runs ordinary commands for real (the same cwd and environment a Bash call has), then
the PostToolUse hook as Claude runs it (`python -P -m hooks`), then the sweep through
`claudetto gc`. A test marked xfail is a loss still open (its reason says what goes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import (
    NEEDS_RSYNC,
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
    """Run the command for real, as Claude's Bash tool or the user's shell would; its stdout."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, text=True,
                          env=dict(os.environ)).stdout


def run_and_record(command: str, cwd: Path, session: str = "s1") -> str:
    """The Bash call, then the PostToolUse hook Claude runs after it, with the call's real run
    time as `duration_ms`; the call's stdout."""
    start = time.monotonic()
    out = bash(command, cwd)
    record(command, out, cwd, session, int((time.monotonic() - start) * 1000) + 1)
    return out


def record(command: str, out: str, cwd: Path, session: str = "s1", duration_ms: int = 3000) -> None:
    """The PostToolUse hook of a Bash call that printed `out`."""
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
               "tool_input": {"command": command},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": duration_ms}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr


def a_week_later(sandbox: SandboxEnv, *paths: Path) -> None:
    """The session ended a week ago: its records and the outputs' own mtimes are that old."""
    import json

    for file in (sandbox.state / "gc").glob("*.json"):
        data = json.loads(file.read_text())
        for entry in data.get("records", []):
            entry["time"] -= OLD
        file.write_text(json.dumps(data))
    for path in paths:
        set_mtime(path, OLD)


@pytest.fixture
def other_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on another file system than the temp folder (a home on its own disk, /tmp a
    tmpfs): a `mv` from there copies, and what it moved is born anew."""
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system")
    place = Path(tempfile.mkdtemp(dir="/dev/shm"))
    yield place
    shutil.rmtree(place, ignore_errors=True)


#: How long before a call its window starts: what was born earlier is no output of the call.
BEFORE_WINDOW_S = 3.5
#: The folders the tests below take, by the one file each holds: made when the module starts.
EARLIER = {"thesis.tex": 7, "draft.md": 1}


@pytest.fixture(scope="module")
def made_earlier(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path, str], Path]:
    """The user's folder holding one (empty) file, made before the call's window:
    `take(path, name)` puts one at `path`. The folders are made together when the module
    starts and moved in by a rename, which keeps their birth time and their file's (the
    call's window is judged by them): one wait of BEFORE_WINDOW_S for the whole module, not
    one a test. Where the file system reports no birth time the ctime decides, and a rename
    moves it: each folder is then made in place and waited for, as the tests did before."""
    from app.core.created import birth_time

    pool = tmp_path_factory.mktemp("made-earlier")
    made = time.time()
    ready: dict[str, list[Path]] = {}
    for name, count in EARLIER.items():
        for i in range(count):
            folder = pool / f"{name}-{i}"
            folder.mkdir()
            (folder / name).touch()
            ready.setdefault(name, []).append(folder)
    births = birth_time(str(pool)) is not None

    def take(path: Path, name: str) -> Path:
        if births and ready.get(name):
            os.rename(ready[name].pop(), path)
            until = made + BEFORE_WINDOW_S
        else:
            path.mkdir()
            (path / name).touch()
            until = time.time() + BEFORE_WINDOW_S
        time.sleep(max(0.0, until - time.time()))
        return path

    return take


# --- an unprinted mktemp folder whose own folder the command removed in another spelling --------


@pytest.mark.parametrize("cleanup", [
    'rm -rf "$d"/',
    'rm -rf -- "$d/"',
    'rm -f "$d"/out.txt && rmdir "$d/"',
    'w="$d"; rm -rf "$w"',
    'find "$d" -delete',
    'python3 -c "import shutil, sys; shutil.rmtree(sys.argv[1])" "$d"',
    'tar --remove-files -czf "$HOME/out.tgz" "$d"',
    'zip -rmq "$HOME/out.zip" "$d"',
    'cd "$(dirname "$d")" && rm -rf "$(basename "$d")"',
    'cd "$d" && cd .. && rm -rf "$OLDPWD"',
])
def test_a_mktemp_folder_removed_in_another_spelling_does_not_take_another_programs(
        sandbox: SandboxEnv, tmp_path: Path, cleanup: str) -> None:
    """`d=$(mktemp -d) && ... && rm -rf "$d"/` cleans up after itself as surely as `rm -rf "$d"`.
    The template-and-time search must not then take the one `tmp.*` folder someone else made in
    the same seconds (the user's script, another tool on mktemp's default template)."""
    theirs = Path(bash("mktemp -d", tmp_path).strip())
    (theirs / "results.csv").write_text("a night of measurements\n")
    command = f'd=$(mktemp -d) && cd "$d" && echo built > out.txt && cd / && {cleanup}'
    run_and_record(command, tmp_path)
    assert str(theirs) not in recorded()
    a_week_later(sandbox, theirs)
    entries = gc_entries()
    assert (theirs / "results.csv").exists(), entries


def test_a_mktemp_folder_given_to_a_worktree_then_removed_does_not_take_another_programs(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d) && git worktree add "$d" && ... && git worktree remove "$d"`: git removes
    the folder mktemp made; what fits the template now is someone else's."""
    repo = make_repo(tmp_path / "repo")
    theirs = Path(bash("mktemp -d", tmp_path).strip())
    (theirs / "results.csv").write_text("a night of measurements\n")
    run_and_record('d=$(mktemp -d) && git worktree add -q --detach "$d" && git -C "$d" log --oneline '
                   '&& git worktree remove "$d"', repo)
    assert str(theirs) not in recorded()
    a_week_later(sandbox, theirs)
    entries = gc_entries()
    assert (theirs / "results.csv").exists(), entries


# --- an archive unpacked into a temp folder, and the archive removed ------------------------------


def _archive(tmp_path: Path, how: str) -> tuple[Path, str]:
    """The user's only copy of a project, as an archive in their home, and the command that
    unpacks it into "$d"."""
    project = tmp_path / "work" / "thesis"
    project.mkdir(parents=True)
    (project / "chapter1.tex").write_text("the only copy of chapter one\n")
    if how == "zip":
        archive = tmp_path / "thesis.zip"
        subprocess.run(["zip", "-qr", str(archive), "thesis"], cwd=project.parent, check=True)
        shutil.rmtree(project)
        return archive, f'unzip -q {archive} -d "$d"'
    archive = tmp_path / "thesis.tar.gz"
    subprocess.run(["tar", "-czf", str(archive), "thesis"], cwd=project.parent, check=True)
    shutil.rmtree(project)
    return archive, {"tar": f'tar -xzf {archive} -C "$d"', "tar-old": f'tar xzf {archive} -C "$d"',
                     "tar-cd": f'cd "$d" && tar --extract --gzip --file={archive}'}[how]


@pytest.mark.parametrize("how", ["tar", "tar-old", "tar-cd", "zip"])
def test_an_archive_unpacked_into_a_temp_folder_then_removed_keeps_the_folder(
        sandbox: SandboxEnv, tmp_path: Path, how: str) -> None:
    """`d=$(mktemp -d) && tar -xzf ~/thesis.tar.gz -C "$d" && rm ~/thesis.tar.gz`: unpacking and
    removing the archive is a move; the temp folder holds the only copy left."""
    archive, unpack = _archive(tmp_path, how)
    folder = Path(run_and_record(f'd=$(mktemp -d) && {unpack} && rm {archive} && echo "$d"', tmp_path)
                  .strip().splitlines()[-1])
    assert (folder / "thesis" / "chapter1.tex").exists() and not archive.exists()
    a_week_later(sandbox, folder)
    entries = gc_entries()
    assert (folder / "thesis" / "chapter1.tex").exists(), entries


def test_an_archive_unpacked_into_a_temp_folder_whose_archive_stays_still_goes(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The control: the archive is still there, so the unpacked folder is a copy like any other."""
    archive, unpack = _archive(tmp_path, "tar")
    folder = Path(run_and_record(f'd=$(mktemp -d) && {unpack} && echo "$d"', tmp_path).strip())
    assert recorded() == [str(folder)]
    a_week_later(sandbox, folder)
    entries = gc_entries()
    assert entries[str(folder)] == ("removed", "age") and archive.exists(), entries


@pytest.mark.parametrize("unpack", [
    'cd "$d" && cp {archive} . && tar -xzf thesis.tar.gz && rm thesis.tar.gz',
    'cp {archive} "$d"/ && tar -xzf "$d"/thesis.tar.gz -C "$d" && rm "$d"/thesis.tar.gz',
])
def test_an_archive_fetched_into_the_temp_folder_unpacked_and_removed_still_goes(
        sandbox: SandboxEnv, tmp_path: Path, unpack: str) -> None:
    """`d=$(mktemp -d) && cd "$d" && curl -LO URL/x.tgz && tar -xzf x.tgz && rm x.tgz`, the way a
    release is fetched (a copy stands in for the download): the archive lay in the call's own
    folder, so removing it moved nothing of the user's, and the folder is an output like any."""
    archive, _ = _archive(tmp_path, "tar")
    folder = Path(run_and_record(f'd=$(mktemp -d) && {unpack.format(archive=archive)} && echo "$d"', tmp_path)
                  .strip().splitlines()[-1])
    assert recorded() == [str(folder)]
    a_week_later(sandbox, folder)
    assert gc_entries()[str(folder)] == ("removed", "age")


# --- files moved in from another disk by a command that names no source ---------------------------


@pytest.mark.parametrize("move", [
    'find {src} -name "*.csv" -exec mv {{}} "$d"/ \\;',
    'find {src} -name "*.csv" -print0 | xargs -0 mv -t "$d"',
    'ls {src}/*.csv | xargs -I{{}} mv {{}} "$d"/',
])
def test_files_moved_in_from_another_disk_without_a_named_source_keep_the_temp_folder(
        sandbox: SandboxEnv, tmp_path: Path, other_disk: Path, move: str) -> None:
    """`d=$(mktemp -d) && find ~/data -name '*.csv' -exec mv {} "$d"/ \\;`: across file systems
    the moved files are born anew, and the command names no source the sweep could look for.
    The data now lies only in the temp folder."""
    data = other_disk / "data"
    data.mkdir()
    (data / "run1.csv").write_text("a month of measurements\n")
    command = 'd=$(mktemp -d) && ' + move.format(src=data) + ' && echo "$d"'
    folder = Path(run_and_record(command, tmp_path).strip())
    assert (folder / "run1.csv").exists() and not (data / "run1.csv").exists()
    a_week_later(sandbox, folder)
    entries = gc_entries()
    assert (folder / "run1.csv").exists(), entries


def test_an_archive_unpacked_into_an_older_temp_output_then_removed_keeps_it(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d)` in one call; `tar -xzf ~/thesis.tar.gz -C /tmp/tmp.X` in a later one,
    and `rm ~/thesis.tar.gz` in a third: the output holds the only copy of what was packed."""
    archive, _ = _archive(tmp_path, "tar")
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    run_and_record(f"tar -xzf {archive} -C {folder}", tmp_path)
    bash(f"rm {archive}", tmp_path)
    a_week_later(sandbox, folder)
    entries = gc_entries()
    assert (folder / "thesis" / "chapter1.tex").exists(), entries


def test_a_move_inside_the_sessions_own_temp_folder_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The control of the moves above: `mv "$d"/a "$d"/b` only renames inside the call's own
    folder; nothing came from elsewhere, and the folder goes a week later."""
    folder = Path(run_and_record('d=$(mktemp -d) && echo x > "$d"/a && mv "$d"/a "$d"/b && echo "$d"',
                                 tmp_path).strip())
    assert recorded() == [str(folder)]
    a_week_later(sandbox, folder)
    assert gc_entries()[str(folder)] == ("removed", "age")


# --- the shell's folder after `popd` --------------------------------------------------------------


def test_a_clone_after_popd_never_records_a_fresh_user_folder_in_the_pushd_folder(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`pushd "$TMPDIR/data" && ls && popd && git clone URL lib`: the clone lands in the cwd,
    not in the folder pushd visited. Reading `popd` as nothing took `$TMPDIR/data/lib`, a
    folder the user's own script made in the same seconds, for the clone."""
    origin = make_repo(tmp_path / "origin")
    data = sandbox.user_tmp / "data"
    (data / "lib").mkdir(parents=True)
    (data / "lib" / "measurements.csv").write_text("tonight's run\n")
    project = tmp_path / "proj"
    project.mkdir()
    run_and_record(f"pushd {data} >/dev/null && ls && popd >/dev/null && git clone -q {origin} lib", project)
    assert (project / "lib" / ".git").exists()
    assert str(data / "lib") not in recorded()
    a_week_later(sandbox, data / "lib")
    entries = gc_entries()
    assert (data / "lib" / "measurements.csv").exists(), entries


# --- what held: the same path made earlier by the user, then touched by the session ---------------


def test_a_write_into_a_user_folder_in_the_temp_folder_records_only_the_file(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A Write of `$TMPDIR/experiments/notes.md`, `experiments` the user's: the file is the
    session's, the folder and what else it holds are not. (Held when written.)"""
    folder = sandbox.user_tmp / "experiments"
    folder.mkdir()
    (folder / "run.log").write_text("the user's\n")
    note = folder / "notes.md"
    note.write_text("scratch\n")
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": str(note), "content": "scratch\n"},
               "tool_response": {"type": "create", "filePath": str(note)}, "duration_ms": 5}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    assert recorded() == [str(note)]
    a_week_later(sandbox, note, folder, folder / "run.log")
    entries = gc_entries()
    assert entries == {str(note): ("removed", "age")}, entries
    assert (folder / "run.log").exists()


@pytest.mark.parametrize("command", [
    "mkdir -p {x} && cp -r {src} {x}/",
    pytest.param("mkdir -p -m 700 {x} && rsync -a {src}/ {x}/", marks=NEEDS_RSYNC),
    "mkdir -p {x} && tar -xzf {archive} -C {x}",
    "mkdir -p {x} && unzip -q -o {zip} -d {x}",
    "ln -sfn {src} {x}/link && cp -r {src} {x}",
    "touch {x} && cp -rt {x} {src}",
    "install -d {x} && cp -r -- {src} {x}",
])
def test_a_user_folder_the_session_fills_is_never_its_output(sandbox: SandboxEnv, tmp_path: Path, command: str,
                                                             made_earlier: Callable[[Path, str], Path]) -> None:
    """`mkdir -p` of a folder the user made, then a copy, an rsync, an unpack into it: the
    folder was the user's before and stays so; at most what the call made inside is an
    output. (Held when written.)"""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    subprocess.run(["tar", "-czf", str(tmp_path / "a.tgz"), "src"], cwd=tmp_path, check=True)
    subprocess.run(["zip", "-qr", str(tmp_path / "a.zip"), "src"], cwd=tmp_path, check=True)
    # the user made it before the call: its birth lies before the call's window
    x = made_earlier(sandbox.user_tmp / "mine", "thesis.tex")
    (x / "thesis.tex").write_text("the user's only copy\n")
    set_mtime(x / "thesis.tex", OLD)
    set_mtime(x, OLD)
    run_and_record(command.format(x=x, src=src, archive=tmp_path / "a.tgz", zip=tmp_path / "a.zip"), tmp_path)
    assert str(x) not in recorded()
    a_week_later(sandbox, x)
    entries = gc_entries()
    assert (x / "thesis.tex").exists() and str(x) not in entries, entries


def test_mv_of_a_project_into_the_temp_folder_is_no_output(sandbox: SandboxEnv, tmp_path: Path,
                                                           other_disk: Path) -> None:
    """`mv ~/proj "$TMPDIR/proj-old" && git clone URL ~/proj`: the move is no creation (across
    disks the moved folder is even born anew); only the clone the call made is recorded, and
    it lies outside every root. (Held when written.)"""
    origin = make_repo(tmp_path / "origin")
    proj = other_disk / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("years of notes\n")
    old = sandbox.user_tmp / "proj-old"
    time.sleep(3.5)
    run_and_record(f"mv {proj} {old} && git clone -q {origin} {proj}", tmp_path)
    assert str(old) not in recorded()
    a_week_later(sandbox, old)
    entries = gc_entries()
    assert (old / "notes.txt").exists() and str(old) not in entries, entries


def test_a_worktree_of_the_users_repository_keeps_its_only_commit(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git worktree add "$TMPDIR/wt" -b fix` from the user's repository, a commit there, the
    branch then deleted by the user's `git branch -D` after a merge that was undone: the
    worktree's HEAD is the commit's only holder. (Held when written.)"""
    repo = make_repo(tmp_path / "repo")
    wt = sandbox.user_tmp / "wt"
    run_and_record(f"git worktree add -q --detach {wt}", repo)
    assert recorded() == [str(wt)]
    (wt / "fix.txt").write_text("the fix\n")
    git(wt, "add", "fix.txt")
    git(wt, "commit", "-qm", "fix")
    head = git(wt, "rev-parse", "HEAD")
    a_week_later(sandbox, wt)
    entries = gc_entries()
    assert wt.exists() and entries[str(wt)][0] == "kept", entries
    assert git(repo, "cat-file", "-t", head) == "commit"


# --- a source removed and made again at the same path ---------------------------------------------


@pytest.mark.parametrize("again", ["rm -rf {src} && mkdir {src}", "rm -rf {src}/* && echo fresh > {src}/index.md"])
def test_a_copy_whose_source_was_emptied_or_made_anew_is_kept(sandbox: SandboxEnv, tmp_path: Path,
                                                               again: str) -> None:
    """`cp -r ~/notes "$TMPDIR/notes-bak"` before a reorganisation, then (a call later) the old
    notes removed and a fresh folder made at the same path: the source "exists", yet the backup
    holds the only copy of what was there."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "2019.md").write_text("five years of notes\n")
    backup = sandbox.user_tmp / "notes-bak"
    run_and_record(f"cp -r {notes} {backup}", tmp_path)
    assert recorded() == [str(backup)]
    bash(again.format(src=notes), tmp_path)
    a_week_later(sandbox, backup)
    entries = gc_entries()
    assert (backup / "2019.md").exists(), entries


# --- a nested shell started with its own TMPDIR ---------------------------------------------------


@pytest.mark.parametrize("start", ["TMPDIR={scratch} bash -c", "env TMPDIR={scratch} sh -c"])
def test_a_mktemp_in_a_shell_given_its_own_tmpdir_never_takes_a_folder_of_the_users_temp(
        sandbox: SandboxEnv, tmp_path: Path, start: str) -> None:
    """`TMPDIR=/scratch/me bash -c 'd=$(mktemp -d) && ...'`: mktemp makes its folder in
    /scratch/me. Looking for it in the user's own temp folder finds only what someone else made
    there in the same seconds."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    theirs = Path(bash("mktemp -d", tmp_path).strip())
    (theirs / "results.csv").write_text("a night of measurements\n")
    command = start.format(scratch=scratch) + " 'd=$(mktemp -d) && echo built > \"$d\"/out.txt'"
    run_and_record(command, tmp_path)
    (made,) = list(scratch.iterdir())
    assert str(theirs) not in recorded()
    assert recorded() == [str(made)]
    a_week_later(sandbox, theirs)
    entries = gc_entries()
    assert (theirs / "results.csv").exists(), entries


def test_a_clone_that_failed_on_a_user_folder_records_nothing(sandbox: SandboxEnv, tmp_path: Path,
                                                              made_earlier: Callable[[Path, str], Path]) -> None:
    """`git clone URL "$TMPDIR/x" || git -C "$TMPDIR/x" pull` fails on the user's own folder of
    that name (its response an error string, as Claude gives a failed call): the call made
    nothing, and the folder is never an output. (Held when written.)"""
    origin = make_repo(tmp_path / "origin")
    mine = made_earlier(sandbox.user_tmp / "x", "draft.md")  # made before the call's window
    (mine / "draft.md").write_text("the user's\n")
    command = f"git clone -q {origin} {mine}"
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode != 0
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_input": {"command": command}, "tool_response": f"Error: Exit code 128\n{done.stderr}",
               "duration_ms": 50}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    assert recorded() == []
    a_week_later(sandbox, mine)
    assert (mine / "draft.md").exists() and str(mine) not in gc_entries()


def test_a_copy_the_session_added_to_still_goes_while_its_source_holds_what_was_copied(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The other side of the rule above: `cp -r ~/proj "$TMPDIR/proj-build"`, then a build in
    the copy adds `build/` and a log at its top. Those names were born after the copy's record:
    no loss, so the copy still goes by age while the source holds every name it copied."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "main.c").write_text("int main(void) { return 0; }\n")
    copy = sandbox.user_tmp / "proj-build"
    run_and_record(f"cp -r {project} {copy}", tmp_path)
    assert recorded() == [str(copy)]
    time.sleep(2.5)  # past the slack the file systems' rounding needs
    bash(f"mkdir {copy}/build && echo ok > {copy}/build.log", tmp_path)
    a_week_later(sandbox, copy)
    entries = gc_entries()
    assert entries[str(copy)][0] == "removed", entries
    assert not copy.exists()


def test_a_copy_keeps_a_file_its_source_dropped_while_they_share_the_rest(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -r ~/site "$TMPDIR/site-bak"`, then `rm ~/site/drafts.md`: the source keeps its other
    names, but the backup holds the only copy of the drafts (born with the copy's other names)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.md").write_text("home\n")
    (site / "drafts.md").write_text("three unpublished posts\n")
    backup = sandbox.user_tmp / "site-bak"
    run_and_record(f"cp -r {site} {backup}", tmp_path)
    bash(f"rm {site}/drafts.md", tmp_path)
    a_week_later(sandbox, backup)
    entries = gc_entries()
    assert entries[str(backup)] == ("kept", "dirty"), entries
    assert (backup / "drafts.md").read_text() == "three unpublished posts\n"
