"""The session-start cleanup on a temp tree of 200,000 files plus 20 worktrees, against
`rm -rf` of the same paths, as a ratio (target: 1.2x or less), for both install routes
(bench/routes.py).

Each round builds identical trees (80% of the files in old session folders of
`claude-<uid>/`, 20% checked out in old, clean, merged worktrees), each in its own sandbox
under one temp folder: one for `rm -rf` of every path the cleanup removes, one for each
route's cleanup (`hygiene.run_cleanup`, in the foreground as `claudetto clean` runs it:
sizes measured, sessions read, git asked about every worktree, journal written; timed inside
a process of the route's interpreter, its start not counted). The order rotates between
rounds; the medians are compared.

Usage: .venv/bin/python bench/clean.py [FILES] [WORKTREES] [ROUNDS]
       (or CLAUDETTO_BENCH_FILES / _WORKTREES / _ROUNDS; defaults 200000, 20, 3).
       CLAUDETTO_BENCH_DIR picks the file system (default: the temp folder).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from routes import Route, routes  # noqa: E402

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


_CLEANUP = """
import json, sys, time
from app.core import hygiene
start = time.perf_counter()
report = hygiene.run_cleanup([sys.argv[1]], current_cwd=sys.argv[2])
print(json.dumps({"s": time.perf_counter() - start, "worktrees": report.worktrees,
                  "timed_out": report.timed_out}))
"""


def timed_cleanup(route: Route, repo: Path) -> tuple[float, dict[str, Any]]:
    out = subprocess.run([route.python, "-I", "-c", _CLEANUP, str(repo), str(repo.parent)], env=dict(os.environ),
                         capture_output=True, text=True, check=True, cwd="/")
    report = json.loads(out.stdout)
    return report["s"], report


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
    saved = dict(os.environ)
    times: dict[str, list[float]] = {}
    paths_count = 0
    try:
        found = routes(str(top))
        sides = ["rm", *(r.name for r in found)]
        for r in range(rounds):
            targets: list[str] = []
            for side in sides:
                made = build(top / f"{side}{r}", files, worktrees)
                targets = made if side == "rm" else targets
                os.environ.clear()
                os.environ.update(saved)
            paths_count = len(targets)
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            for side in order:
                subprocess.run(["sync"], check=False)  # no run pays another's writeback
                if side == "rm":
                    times.setdefault("rm", []).append(timed_rm(targets))
                    continue
                route = next(x for x in found if x.name == side)
                os.environ.update(sandbox(top / f"{side}{r}"))
                took, report = timed_cleanup(route, top / f"{side}{r}" / "project")
                os.environ.clear()
                os.environ.update(saved)
                if report["worktrees"] != worktrees or report["timed_out"]:
                    raise SystemExit(f"clean: unexpected report {report}")
                times.setdefault(side, []).append(took)
            for side in sides:
                shutil.rmtree(top / f"{side}{r}", ignore_errors=True)
        rm_med = statistics.median(times["rm"])
        print(f"clean: {files} files + {worktrees} worktrees ({paths_count} paths), {rounds} round(s): "
              f"rm -rf {rm_med:.2f} s (median)")
        for route in found:
            ratios = [c / x for c, x in zip(times[route.name], times["rm"], strict=True)]
            print(f"  {route.name:8s} cleanup {statistics.median(times[route.name]):.2f} s (median); ratio "
                  f"{statistics.median(ratios):.2f}x rm -rf, the median of each round's ratio "
                  f"{[round(x, 2) for x in ratios]} (target <= 1.2x)")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
