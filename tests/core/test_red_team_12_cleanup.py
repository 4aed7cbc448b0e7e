"""Red team, round twelve: the session-start cleanup, liveness and the removal core.

Found and fixed: one old session folder too slow to measure within the sweep's budget (a
tree hundreds of folders deep past PATH_MAX, which the measuring walk reopens from the top
at every folder) took all of SWEEP_TIMEOUT_MS at every cleanup, and every folder and gate
log judged after it stayed for ever (and `clean --dry-run` said none of them would go). A
measure now leaves the items after it their share. The
same held for worktrees: one such worktree kept every worktree listed after it, in every project.

The removal's last check (app/core/cleanup_guard.py `repositories_in`) could not open such a
folder by its path and walked the whole tree again the measuring way, as slowly, with no
budget at all: it now opens each folder past PATH_MAX from its parent, still open.

And such a folder itself was never removed: the measuring walk (app/core/scan_walk.py)
reopened every folder past PATH_MAX from the top (quadratic in the depth). It keeps the folder
read last open now and opens its child from it, and looks at the clock after each long open.

What held, tried by hand this round and already covered by earlier rounds' tests: a
thread's own cwd, a chroot, a closed mapping and a bind mount (its name holding a space and a
newline) inside an old folder keep it; 200,000 entries and names that are not UTF-8 go whole
and counted; a journal on a full 64 KB tmpfs still takes its lines; a sessions file
rewritten in place or by rename during thirty cleanups never lets its folder go.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import hygiene, paths
from app.core.cleanup_guard import repositories_in
from tests.core.test_worktrees import GITIGNORE, add_worktree, age
from tests.support import SandboxEnv, make_repo, set_mtime

DAY = 86_400
#: sorted first among the project folder's sessions, so it is measured before the others
DEEP_ID = "00000000-0000-4000-8000-000000000000"
LATER_ID = "ffffffff-0000-4000-8000-000000000000"
LOG_ID = "11111111-0000-4000-8000-000000000000"
LEVELS = 1200  # of 255-byte names: ~300 KB of path, seventy times PATH_MAX
LINKS = 5  # per level: entries that make the measuring walk look at the clock often enough


def _deep_tree(top: Path, source: Path | None = None, levels: int = LEVELS) -> Path:
    """`top` holding a chain of `levels` folders of 255-byte names (what a recursive copy into
    itself leaves), each with LINKS hard links to `source` when given (cheap to make where a
    new file is not; the links count of `source` then tells whether any of them went), and a
    `.git` folder in the deepest one when not. Returns `top`."""
    top.mkdir(parents=True)
    src = -1
    if source is not None:
        source.write_bytes(b"s")
        src = os.open(source.parent, os.O_RDONLY | os.O_DIRECTORY)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(levels):
            name = f"{i:05d}" + "x" * 250
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            for k in range(LINKS if source is not None else 0):
                os.link(source.name if source is not None else "", f"f{k}", src_dir_fd=src, dst_dir_fd=fd)
        if source is None:
            os.mkdir(".git", dir_fd=fd)
    finally:
        os.close(fd)
        if src >= 0:
            os.close(src)
    return top


class Scene:
    """An ended session's deep folder (sorted first), another ended session's plain folder
    and an old gate log: all 31 days old."""

    def __init__(self, sandbox: SandboxEnv) -> None:
        project = sandbox.claude_tmp / "-home-me-proj"
        self.source = sandbox.root / "source"
        self.deep = _deep_tree(project / DEEP_ID, self.source)
        self.later = project / LATER_ID
        (self.later / "tasks").mkdir(parents=True)
        (self.later / "tasks" / "b1.output").write_bytes(b"o" * 5000)
        logs = paths.log_root() / "-home-me-proj"
        logs.mkdir(parents=True)
        self.log = logs / f"{LOG_ID}.log"
        self.log.write_text("CLEANED folders=0 bytes=0 files=0 worktrees=0 probes=0\n")
        for path in (self.later / "tasks" / "b1.output", self.later / "tasks", self.later, self.log, self.deep):
            set_mtime(path, 31 * DAY)


@pytest.fixture
def scene(sandbox: SandboxEnv) -> Iterator[Scene]:
    made = Scene(sandbox)
    yield made
    _drop(made.deep)


def _drop(tree: Path) -> None:
    """A deep tree left behind is removed here: pytest's own removal of old temp folders
    (shutil.rmtree) recurses once a level, past Python's recursion limit."""
    subprocess.run(["rm", "-rf", "--", str(tree)], check=True)


def test_a_folder_too_slow_to_measure_leaves_the_folders_and_logs_after_it_to_go(scene: Scene) -> None:
    """Before: the deep folder's measure took the whole budget (it came back cut short, and
    the cleanup stopped there), at every cleanup: the later folder and the log never went;
    and the dry run's one measure ran to the deadline: it said that nothing would go."""
    planned = hygiene.run_cleanup([], dry_run=True, timeout_ms=2000)
    assert scene.later.exists() and scene.log.exists()
    report = hygiene.run_cleanup([], timeout_ms=2000)
    assert not scene.later.exists() and not scene.log.exists()
    for run in (planned, report):
        if run is report and scene.deep.exists():  # not measured in its share: whole, and the report says so
            assert report.timed_out and scene.source.stat().st_nlink == 1 + LEVELS * LINKS
        if run.timed_out:  # the later folder (its output) and the log, not the deep one
            assert (run.folders, run.files) == (1, 2)
        else:  # a machine fast enough measured it in its share: it goes too, counted
            assert (run.folders, run.files) == (2, 2 + LEVELS * LINKS)


def test_a_deep_old_session_folder_goes_within_the_sweeps_budget(scene: Scene) -> None:
    hygiene.run_cleanup([], timeout_ms=1000)  # measured at once, it is removed whole, however long that takes
    assert not scene.deep.exists()


def test_the_last_check_finds_a_repository_at_the_bottom_of_a_deep_folder_without_a_second_walk(
        sandbox: SandboxEnv) -> None:
    """Before: None (a path too long to open), and the check fell back on a second quadratic walk."""
    top = _deep_tree(sandbox.root / "deep", levels=100)  # 25 KB of path: six times PATH_MAX
    found = repositories_in(str(top))
    assert found is not None and len(found) == 1
    assert found[0].count("/") == str(top).count("/") + 100 and found[0].endswith("00099" + "x" * 250)


def test_a_worktree_too_slow_to_measure_leaves_the_worktrees_after_it_to_go(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Before: the removals wait for the judgements in order; the deep one's measure took the
    whole budget, came back `timeout`, and the cleanup stopped there: `b-plain` never went."""
    repo = make_repo(tmp_path / "proj", files={"README.md": "hello\n", ".gitignore": GITIGNORE})
    deep, plain = add_worktree(repo, "a-deep"), add_worktree(repo, "b-plain")
    _deep_tree(deep / "node_modules" / "deep", tmp_path / "source")  # git-ignored, regenerable
    try:
        age(deep)
        age(plain)
        report = hygiene.run_cleanup([repo], current_cwd=str(tmp_path), timeout_ms=3000)
        assert not plain.exists() and report.worktrees >= 1
        assert not deep.exists() or report.timed_out  # measured in its share it goes too, else whole
    finally:
        _drop(deep)
