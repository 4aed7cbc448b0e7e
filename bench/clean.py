"""The session-start cleanup on a temp tree of 200,000 files plus 20 worktrees, against
`rm -rf` of the same paths, as a ratio (target: 1.2x or less).

Three runs on three identical trees, each in its own sandbox under one temp folder:
- `rm -rf` of every path the cleanup removes (the baseline);
- the cleanup removing in place (`trash=False`): every byte gone when it returns;
- the cleanup as it runs by default (`trash=None`): big folders are renamed into the trash
  and purged by one detached process; both the wall time of the cleanup and the time
  until the purge has emptied the trash are shown.

Usage: .venv/bin/python bench/clean.py [FILES] [WORKTREES]
       (or CLAUDETTO_BENCH_FILES / CLAUDETTO_BENCH_WORKTREES; defaults 200000 and 20)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OLD = time.time() - 90 * 86400
FILES_PER_FOLDER = 2000
SUBFOLDER = 100
WORKTREE_SHARE = 0.2  # of the files: checked out in the worktrees


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _write_files(folder: Path, count: int) -> None:
    for start in range(0, count, SUBFOLDER):
        sub = folder / f"d{start // SUBFOLDER:04d}"
        sub.mkdir(parents=True, exist_ok=True)
        for i in range(start, min(count, start + SUBFOLDER)):
            fd = os.open(sub / f"f{i}.txt", os.O_WRONLY | os.O_CREAT, 0o644)
            os.write(fd, b"x" * 64)
            os.close(fd)


def _old(path: Path) -> None:
    os.utime(path, (OLD, OLD), follow_symlinks=False)


def sandbox(base: Path) -> dict[str, str]:
    env = {"HOME": "home", "CLAUDE_CONFIG_DIR": "home/.claude", "CLAUDE_CODE_TMPDIR": "ctmp",
           "TMPDIR": "utmp", "CLAUDETTO_HOME": "state"}
    out = {}
    for name, sub in env.items():
        (base / sub).mkdir(parents=True, exist_ok=True)
        out[name] = str(base / sub)
    return out


def build(base: Path, files: int, worktrees: int) -> list[str]:
    """The tree; returns every path the cleanup is to remove."""
    env = sandbox(base)
    os.environ.update(env)
    from app.core import paths

    targets: list[str] = []
    per_worktree = max(1, int(files * WORKTREE_SHARE) // max(1, worktrees)) if worktrees else 0
    repo = base / "project"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    if worktrees:
        _write_files(repo / "src", per_worktree - 1)
    (repo / "README.md").write_text("bench\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tree")
    for i in range(worktrees):
        wt = repo / ".claude" / "worktrees" / f"agent-a{i:07x}0"
        _git(repo, "worktree", "add", "-q", "-b", f"worktree-{wt.name}", str(wt))
        _old(wt)
        targets.append(str(wt))
    left = files - per_worktree * worktrees
    tmp = paths.claude_tmp_dir()
    tmp.mkdir(parents=True, exist_ok=True)
    slug = tmp / paths.project_slug(repo)
    while left > 0:
        count = min(FILES_PER_FOLDER, left)
        folder = slug / str(uuid.uuid4())
        _write_files(folder / "tasks", count)
        _old(folder)
        targets.append(str(folder))
        left -= count
    return targets


def timed_rm(targets: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(["rm", "-rf", "--", *targets], check=True)
    return time.perf_counter() - start


def timed_cleanup(repo: Path, trash: bool | None) -> tuple[float, float, object]:
    from app.core import hygiene, paths

    start = time.perf_counter()
    report = hygiene.run_cleanup([repo], trash=trash, current_cwd=str(repo.parent))
    wall = time.perf_counter() - start
    places = [paths.trash_dir(), paths.log_root() / "trash"]
    while any(p.exists() and any(p.iterdir()) for p in places):
        time.sleep(0.01)
    return wall, time.perf_counter() - start, report


def main() -> None:
    files = int(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("CLAUDETTO_BENCH_FILES", 200_000))
    worktrees = int(sys.argv[2] if len(sys.argv) > 2 else os.environ.get("CLAUDETTO_BENCH_WORKTREES", 20))
    os.environ["CLAUDETTO_SWEEP_TIMEOUT_MS"] = "3600000"
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        os.environ.setdefault(name, "bench")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        os.environ.setdefault(name, "bench@claudetto.invalid")
    top = Path(tempfile.mkdtemp(prefix="claudetto-bench-clean-", dir=os.environ.get("CLAUDETTO_BENCH_DIR")))
    try:
        targets = build(top / "rm", files, worktrees)
        subprocess.run(["sync"], check=False)
        rm = timed_rm(targets)

        build(top / "inplace", files, worktrees)
        subprocess.run(["sync"], check=False)
        inplace, _, report = timed_cleanup(top / "inplace" / "project", trash=False)

        build(top / "auto", files, worktrees)
        subprocess.run(["sync"], check=False)
        auto, purged, report_auto = timed_cleanup(top / "auto" / "project", trash=None)

        for r in (report, report_auto):
            assert getattr(r, "worktrees", None) == worktrees and not getattr(r, "timed_out", True), r
        print(f"clean: {files} files + {worktrees} worktrees ({len(targets)} paths); "
              f"rm -rf {rm:.2f} s; cleanup in place {inplace:.2f} s = {inplace / rm:.2f}x (target <= 1.2x); "
              f"default (trash) {auto:.2f} s = {auto / rm:.2f}x, purged after {purged:.2f} s = {purged / rm:.2f}x")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
