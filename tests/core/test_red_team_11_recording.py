"""What a Bash command records, attacked an eleventh time: spellings people and Claude really
write that ten rounds had not tried. Both directions count: a record of something the session
did not make is a future loss, a missing record of what it made is garbage kept for ever.

Each end-to-end test runs the command for real in bash (the cwd and environment a Bash call
has), then pipes the PostToolUse payload into `python -P -m hooks` as Claude does. What only
depends on how a command is read is checked in-process (`read_command`, `read_bash`). A folder
"of the user's" must predate the call's window (its birth time, which no utime can set back):
such folders are made once per module, aged once, and renamed into each test's sandbox (a
rename keeps the birth time). A test marked xfail is a miss still open (its reason says what
is kept for ever)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.bash_outputs import read_bash, read_command
from tests.core.test_red_team_10_recording import a_week_later
from tests.support import SandboxEnv, gc_entries, make_repo, recorded, run_hook

OLD = 8 * 86_400
#: The call's window looks this far back (duration + the hook's slack + the clock's slack):
#: a folder born longer ago than this predates any call of the test.
_BEFORE_ANY_CALL_S = 3.2


class OldThings:
    """Folders and files born before any call of the module: the user's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.taken = 0

    def take(self, kind: str, target: Path) -> Path:
        """Rename one of them to `target` (birth time and inode kept)."""
        self.taken += 1
        source = self.root / f"{kind}{self.taken}"
        source.rename(target)
        return target


@pytest.fixture(scope="module")
def old_things(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OldThings]:
    root = tmp_path_factory.mktemp("old-things")
    made = time.time()
    for k in range(1, 40):
        (root / f"empty{k}").mkdir()
        (root / f"full{k}").mkdir()
        (root / f"full{k}" / "keep.txt").write_text("the user's\n")
        (root / f"file{k}").write_text("the user's\n")
    while time.time() - made < _BEFORE_ANY_CALL_S:  # once for the module: birth times cannot be set back
        time.sleep(0.2)
    yield OldThings(root)


def bash(command: str, cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> str:
    """Run the command for real, as Claude's Bash tool would; its stdout."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=check, capture_output=True, text=True,
                          env=env or dict(os.environ)).stdout


def hook(command: str, out: str, cwd: Path, duration_ms: int = 200, session: str = "s1",
         **tool_input: object) -> None:
    """The PostToolUse hook of a Bash call that printed `out`, as Claude sends it."""
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
               "tool_input": {"command": command, **tool_input},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": duration_ms}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr


def run_and_record(command: str, cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> str:
    start = time.monotonic()
    out = bash(command, cwd, env, check)
    hook(command, out, cwd, int((time.monotonic() - start) * 1000) + 1)
    return out


# --- gh repo clone: git clone under another name ------------------------------------------------


def gh_stand_in(tmp_path: Path, origins: Path) -> dict[str, str]:
    """An environment whose `gh` clones `origins/<repo>` as `gh repo clone OWNER/REPO [DIR] [-- FLAGS]`
    does (gh hands git the folder and the flags after `--`): no network, no login."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "gh"
    script.write_text('#!/bin/sh\n[ "$1 $2" = "repo clone" ] || exit 1\nshift 2; repo=$1; shift\n'
                      '[ "$1" = "--" ] && shift\nexec git clone -q "$GH_ORIGINS/${repo##*/}" "$@"\n')
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "GH_ORIGINS": str(origins)}


def test_a_gh_repo_clone_in_the_temp_folder_is_recorded_and_goes_a_week_later(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cd "$TMPDIR" && gh repo clone owner/tool` makes `$TMPDIR/tool`, a throwaway clone like any
    `git clone`: it was never recorded (gh was not read at all), so it stayed for ever."""
    make_repo(tmp_path / "origins" / "tool")
    env = gh_stand_in(tmp_path, tmp_path / "origins")
    run_and_record(f"cd {sandbox.user_tmp} && gh repo clone owner/tool", tmp_path, env)
    clone = sandbox.user_tmp / "tool"
    assert recorded() == [str(clone)]
    a_week_later(sandbox, clone)
    assert gc_entries()[str(clone)] == ("removed", "age")
    assert not clone.exists()


@pytest.mark.parametrize(("command", "named"), [
    ("gh repo clone owner/tool", "tool"),
    ("gh repo clone owner/tool work", "work"),
    ("gh repo clone https://github.com/owner/tool.git", "tool"),
    ("gh repo clone -u up owner/tool", "tool"),
    ("gh repo clone owner/tool -- --depth 1", "tool"),
    ("gh repo clone owner/tool -- --depth 1 work", "work"),
    ("gh repo clone owner/tool -- --bare", "tool.git"),
])
def test_gh_repo_clone_names_the_folder_git_makes(command: str, named: str, tmp_path: Path) -> None:
    assert read_command(command, str(tmp_path), "")[0] == [("copy", str(tmp_path / named))]


@pytest.mark.parametrize("command", ["gh repo view owner/tool", "gh repo clone", 'gh repo clone "$repo"',
                                     "gh pr checkout 12"])
def test_other_gh_commands_name_no_output(command: str, tmp_path: Path) -> None:
    assert read_command(command, str(tmp_path), "")[0] == []


# --- a mktemp in a loop, its paths never printed ---------------------------------------------------


def test_five_unprinted_temp_folders_of_a_loop_are_all_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`for i in 1 2 3 4 5; do d=$(mktemp -d); ...; done` runs one written call five times: five
    fresh folders never fit the one call the reader counted, so none was recorded."""
    run_and_record('for i in 1 2 3 4 5; do d=$(mktemp -d); echo "$i" > "$d/n"; done; echo ok', tmp_path)
    made = sorted(str(p) for p in sandbox.user_tmp.glob("tmp.*"))
    assert len(made) == 5 and recorded() == made


def test_a_loop_whose_count_is_unknown_records_nothing_when_several_fit(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Over a glob the count is unknown: two fresh folders for a call counted once are a guess,
    and a guess is not recorded (another program's folder may be one of them). (Held.)"""
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    run_and_record('for f in *.txt; do d=$(mktemp -d); cp "$f" "$d"/; done; echo ok', tmp_path)
    assert len(list(sandbox.user_tmp.glob("tmp.*"))) == 2
    assert recorded() == []


@pytest.mark.parametrize(("command", "count"), [
    ("for i in 1 2 3 4 5; do d=$(mktemp -d); done", 5),
    ("for i in a b\ndo\n  mktemp -d >/dev/null\ndone", 2),
    ("for i in 1 2; do for j in a b c; do d=$(mktemp -d); done; done", 6),
    ("for i in 1 2; do d=$(mktemp -d); done; e=$(mktemp -d)", 3),
    ("for i in $(seq 5); do d=$(mktemp -d); done", 1),
    ("for i in {1..5}; do d=$(mktemp -d); done", 1),
    ('for i in "$@"; do d=$(mktemp -d); done', 1),
    ("while read x; do d=$(mktemp -d); done < list", 1),
    ("for ((i=0; i<5; i++)); do d=$(mktemp -d); done", 1),
])
def test_a_mktemp_call_counts_once_for_each_word_of_its_loops(command: str, count: int, tmp_path: Path) -> None:
    calls = read_bash(command, str(tmp_path), "")[2]
    assert [call.count for call in calls] == [count]


# --- the folder the call ran in was there before it ----------------------------------------------


def test_a_clone_into_the_users_empty_folder_it_ran_in_is_never_recorded(
        sandbox: SandboxEnv, tmp_path: Path, old_things: OldThings) -> None:
    """`git clone URL .` in the user's empty folder of the temp folder fills it; the folder is the
    user's (the call ran in it). (Held end to end where birth times exist; see the next test.)"""
    origin = make_repo(tmp_path / "origin")
    work = old_things.take("empty", sandbox.user_tmp / "work")
    run_and_record(f"git clone -q {origin} .", work)
    assert (work / "README.md").exists() and recorded() == []


@pytest.mark.parametrize("command", ["git clone -q /r/origin .", "CLAUDE_CONFIG_DIR=. claude -p hi",
                                     "cp -rT /r/src .", "cp -r /r/src/. .", "git clone /r/origin ..",
                                     "cd sub && cd .. && git clone /r/origin ."])
def test_the_folder_the_call_ran_in_is_never_named_as_its_output(command: str, tmp_path: Path) -> None:
    """Without birth times (NFS, some overlays) a folder whose every entry the call made looks
    made by it; the call ran in it, so it was there before: never an output."""
    assert read_command(command, str(tmp_path), "")[0] == []


def test_a_folder_the_call_made_and_went_into_is_still_its_output(tmp_path: Path) -> None:
    assert read_command("mkdir x && cd x && git clone /r/origin .", str(tmp_path), "")[0] == [
        ("copy", str(tmp_path / "x"))]


# --- what held: copies into the user's folders, dry runs, the user's configs, failed calls -------


def test_a_copy_into_the_users_folder_records_only_the_copy(
        sandbox: SandboxEnv, tmp_path: Path, old_things: OldThings) -> None:
    """`cp -r src existing_dir` copies INTO it: only `existing_dir/src` is the session's, and a
    week later it goes while the user's file beside it stays. (Held.)"""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a")
    mine = old_things.take("full", sandbox.user_tmp / "mine")
    run_and_record(f"cp -r {src} {mine}", tmp_path)
    assert recorded() == [str(mine / "src")]
    a_week_later(sandbox, mine / "src")
    assert gc_entries()[str(mine / "src")][0] == "removed"
    assert (mine / "keep.txt").exists() and not (mine / "src").exists()


@pytest.mark.parametrize("spelling", ["cp -r {src} {new}/", "cp -r {src}/ {new}/", "cp -a {src} {new}/"])
def test_a_copy_to_a_new_folder_named_with_a_trailing_slash_is_recorded(
        spelling: str, sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -r src "$TMPDIR"/new/` makes `new`, a copy of src: it was recorded as the missing
    `new/src`, dropped, and the copy stayed for ever."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a")
    new = sandbox.user_tmp / "new"
    run_and_record(spelling.format(src=src, new=new), tmp_path)
    assert (new / "a.txt").exists() and recorded() == [str(new)]


def test_a_copy_into_the_users_folder_with_a_trailing_slash_records_only_the_copy(
        sandbox: SandboxEnv, tmp_path: Path, old_things: OldThings) -> None:
    """(Held, and holds with the fix above.)"""
    src = tmp_path / "src"
    src.mkdir()
    mine = old_things.take("full", sandbox.user_tmp / "mine")
    run_and_record(f"cp -r {src} {mine}/", tmp_path)
    assert recorded() == [str(mine / "src")]


@pytest.mark.parametrize("spelling", ["cp -rT {src} {mine}", "cp -r {src}/. {mine}", "cp -a {src}/. {mine}/",
                                      "cp -t {mine} -r {src}/.", "cp --recursive --no-target-directory {src} {mine}"])
def test_a_copy_merged_into_the_users_folder_records_nothing(
        spelling: str, sandbox: SandboxEnv, tmp_path: Path, old_things: OldThings) -> None:
    """The user's folder with the source's entries added is still the user's. (Held.)"""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("a")
    mine = old_things.take("full", sandbox.user_tmp / "mine")
    run_and_record(spelling.format(src=src, mine=mine), tmp_path)
    assert (mine / "a.txt").exists() and recorded() == []


def test_a_dry_run_mktemp_records_nothing_and_a_later_folder_of_its_name_is_not_taken(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`mktemp -u` prints a name and makes nothing; a folder made later under it is someone
    else's. (Held.)"""
    out = run_and_record("mktemp -u -d; mktemp --dry-run", tmp_path)
    names = out.split()
    assert len(names) == 2 and recorded() == []
    os.mkdir(names[0])
    run_and_record("echo mktemp", tmp_path)
    assert recorded() == []


@pytest.mark.parametrize("spelling", ["export CLAUDE_CONFIG_DIR=$HOME/.claude; echo ok",
                                      "CLAUDE_CONFIG_DIR=~/.claude true", "env CLAUDE_CONFIG_DIR={mine} true",
                                      "CLAUDE_CONFIG_DIR={mine} bash -c 'touch $CLAUDE_CONFIG_DIR/.credentials.json'"])
def test_a_config_folder_that_was_there_is_never_recorded(
        spelling: str, sandbox: SandboxEnv, tmp_path: Path, old_things: OldThings) -> None:
    """The user's own config (spelled with `$HOME`/`~`, or a folder that was there) is never the
    session's, even when the call writes into it. (Held.)"""
    (sandbox.home / ".claude").mkdir(exist_ok=True)
    mine = old_things.take("full", sandbox.user_tmp / "cfg")
    run_and_record(spelling.format(mine=mine), tmp_path)
    assert recorded() == []


def test_a_worktree_add_that_failed_on_the_users_folder_records_nothing(
        sandbox: SandboxEnv, tmp_path: Path, old_things: OldThings) -> None:
    """`git worktree add PATH` exits 128 on a folder that is there and not empty. (Held.)"""
    repo = make_repo(tmp_path / "repo")
    mine = old_things.take("full", sandbox.user_tmp / "wt")
    run_and_record(f"git worktree add -q -b w {mine} || true", repo)
    assert recorded() == [] and (mine / "keep.txt").exists()


@pytest.mark.parametrize("spelling", ["cd {repo} && git worktree add -q -b w {path}",
                                      "cd {repo} && git worktree add -q --detach {path}",
                                      "git -C {repo} worktree add -q {rel}", "cd {repo} && git worktree add -q {path} -b w"])
def test_a_worktree_in_the_temp_folder_is_recorded_in_each_spelling(
        spelling: str, sandbox: SandboxEnv, tmp_path: Path) -> None:
    """(Held.)"""
    repo = make_repo(tmp_path / "repo")
    path = sandbox.user_tmp / "wt"
    run_and_record(spelling.format(path=path, repo=repo, rel=os.path.relpath(path, repo)), tmp_path)
    assert recorded() == [str(path)]


def test_a_write_over_the_users_file_or_through_a_symlink_records_nothing(
        sandbox: SandboxEnv, tmp_path: Path, old_things: OldThings) -> None:
    """A Write that replaced the user's file in the temp folder (`type: update`), or one whose
    folder in the temp folder is a symlink to the home, is no scratch output. (Held.)"""
    mine = old_things.take("file", sandbox.user_tmp / "notes.md")
    docs = sandbox.home / "docs"
    docs.mkdir()
    (sandbox.user_tmp / "docs").symlink_to(docs)
    for path, kind in ((mine, "update"), (sandbox.user_tmp / "docs" / "new.md", "create")):
        path.write_text("Claude's\n")
        payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
                   "tool_input": {"file_path": str(path), "content": "Claude's\n"},
                   "tool_response": {"type": kind, "filePath": str(path), "content": "Claude's\n"},
                   "duration_ms": 20}
        assert run_hook(payload, cwd=tmp_path).returncode == 0
    assert recorded() == []


# --- calls cut short or left running ----------------------------------------------------------------


def test_an_interrupted_clone_records_what_it_made(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user pressed Esc: Claude killed the call after the clone was made (`interrupted: true`).
    What the call made is the session's and goes like any output. (Held.)"""
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "c"
    command = f"git clone -q {origin} {clone} && sleep 30"
    start = time.monotonic()
    proc = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, start_new_session=True)
    try:
        while not (clone / "README.md").exists() and time.monotonic() - start < 10:
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_input": {"command": command},
               "tool_response": {"stdout": "", "stderr": "", "interrupted": True, "isImage": False},
               "duration_ms": int((time.monotonic() - start) * 1000)}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    assert recorded() == [str(clone)]


def test_a_clone_made_by_a_background_call_is_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    origin = make_repo(tmp_path / "origin")
    clone = sandbox.user_tmp / "c"
    command = f"sleep 0.3; git clone -q {origin} {clone}"
    proc = subprocess.Popen(["bash", "-c", command], cwd=tmp_path)
    try:
        payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path),
                   "tool_name": "Bash", "tool_input": {"command": command, "run_in_background": True},
                   "tool_response": {"stdout": "", "stderr": "", "interrupted": False, "isImage": False,
                                     "backgroundTaskId": "b1"},
                   "duration_ms": 5}
        assert run_hook(payload, cwd=tmp_path).returncode == 0
    finally:
        proc.wait()
    assert clone.exists()
    assert recorded() == [str(clone)]
