"""The session-start cleanup on a temp tree of 200,000 files plus 20 worktrees, against
`rm -rf` of the same paths, as a ratio (target: 1.2x or less).

Each round builds two identical trees (80% of the files in old session folders of
`claude-<uid>/`, 20% checked out in old, clean, merged worktrees), each in its own sandbox
under one temp folder, then times `rm -rf` of every path the cleanup removes on one and
the cleanup (`hygiene.run_cleanup`, in the foreground as `claudetto clean` runs it: sizes
measured, sessions read, git asked about every worktree, journal written) on the other.
The order alternates between rounds; the medians are compared.

Usage: .venv/bin/python bench/clean.py [FILES] [WORKTREES] [ROUNDS]
       (or CLAUDETTO_BENCH_FILES / _WORKTREES / _ROUNDS; defaults 200000, 20, 3).
       CLAUDETTO_BENCH_DIR picks the file system (default: the temp folder).
"""

from __future__ import annotations

import os
import shutil
import statistics
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


def timed_cleanup(repo: Path) -> tuple[float, object]:
    from app.core import hygiene

    start = time.perf_counter()
    report = hygiene.run_cleanup([repo], current_cwd=str(repo.parent))
    return time.perf_counter() - start, report


def _arg(index: int, name: str, default: int) -> int:
    return int(sys.argv[index] if len(sys.argv) > index else os.environ.get(name, default))


def main() -> None:
    files = _arg(1, "CLAUDETTO_BENCH_FILES", 200_000)
    worktrees = _arg(2, "CLAUDETTO_BENCH_WORKTREES", 20)
    rounds = max(1, _arg(3, "CLAUDETTO_BENCH_ROUNDS", 3))
    os.environ["CLAUDETTO_SWEEP_TIMEOUT_MS"] = "3600000"
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        os.environ.setdefault(name, "bench")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        os.environ.setdefault(name, "bench@claudetto.invalid")
    top = Path(tempfile.mkdtemp(prefix="claudetto-bench-clean-", dir=os.environ.get("CLAUDETTO_BENCH_DIR")))
    rm_times: list[float] = []
    clean_times: list[float] = []
    paths_count = 0
    try:
        for r in range(rounds):
            targets = build(top / f"rm{r}", files, worktrees)
            paths_count = len(targets)
            build(top / f"clean{r}", files, worktrees)
            for which in (("rm", "clean") if r % 2 == 0 else ("clean", "rm")):
                subprocess.run(["sync"], check=False)  # neither run pays the other's writeback
                if which == "rm":
                    rm_times.append(timed_rm(targets))
                else:
                    os.environ.update(sandbox(top / f"clean{r}"))
                    took, report = timed_cleanup(top / f"clean{r}" / "project")
                    if getattr(report, "worktrees", None) != worktrees or getattr(report, "timed_out", True):
                        raise SystemExit(f"clean: unexpected report {report}")
                    clean_times.append(took)
            shutil.rmtree(top / f"rm{r}", ignore_errors=True)
            shutil.rmtree(top / f"clean{r}", ignore_errors=True)
        ratios = [c / r for c, r in zip(clean_times, rm_times, strict=True)]
        print(f"clean: {files} files + {worktrees} worktrees ({paths_count} paths), {rounds} round(s): "
              f"rm -rf {statistics.median(rm_times):.2f} s, cleanup {statistics.median(clean_times):.2f} s "
              f"(medians); ratio {statistics.median(ratios):.2f}x, the median of each round's ratio "
              f"{[round(x, 2) for x in ratios]} (target <= 1.2x)")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
