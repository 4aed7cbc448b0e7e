"""One walk per tree per sweep, whole commands against `du` of the same
folders, for both install routes (bench/routes.py):

  gc     `claudetto gc --dry-run --json` with one recorded temp folder of 200,000 files (a
         node_modules-like tree, old enough to go), vs `du -sb` of that folder
                                                                (target 1.0x or less)
  clean  `claudetto clean --dry-run --json PROJECT` on 200,000 files in old session folders
         of claude-<uid>/ and old clean worktrees (bench/clean.py's tree), vs `du -sb` of
         every folder it judges                                 (target 1.0x or less)

Warm cache; the commands take turns with `du`; the median and the best of RUNS are shown,
with the median CPU (user + system of the command and the processes it waited for: git, the
scanner's helper) and the load average before and after: on a shared machine the wall time
says little, the CPU time says what the command costs.
Where `strace` is there, each command is also run once under it to count the stat calls per
entry of the trees: one walk reads each entry once (~1.0), a second walk shows as ~2.0.

Usage: .venv/bin/python bench/one_walk.py [--files N] [--runs N] [--only gc|clean]
       (CLAUDETTO_BENCH_FILES; CLAUDETTO_BENCH_PLAIN_VENV reuses a plain venv)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from routes import Route, routes, run_once, sandbox_env  # noqa: E402

OLD_S = 30 * 86_400
STAT_CALLS = "newfstatat,statx,lstat,stat,fstatat64"


def _gc_case(base: str, files: int) -> tuple[dict[str, str], str, list[str], list[str]]:
    """A sandbox with one recorded old temp folder; (env, cwd, the command's args, du's paths)."""
    from scan import build_tree

    env = sandbox_env(base)
    tree = os.path.join(env["TMPDIR"], "tmp.bench-tree")
    made = time.time()  # the record's time: a folder born after its record is not the output
    os.makedirs(tree)
    build_tree(tree, files)
    old = time.time() - OLD_S
    os.utime(tree, (old, old))  # old by its own mtime, the contract's age
    cwd = os.path.join(base, "project")
    os.makedirs(cwd)
    records = {"session": "bench", "records": [{"path": tree, "kind": "temp", "session": "bench",
                                                "time": made, "cwd": cwd}]}
    gc_dir = os.path.join(env["CLAUDETTO_HOME"], "gc")
    os.makedirs(gc_dir, exist_ok=True)
    with open(os.path.join(gc_dir, "bench.json"), "w") as fh:
        json.dump(records, fh)
    return env, cwd, ["gc", "--dry-run", "--json"], [tree]


def _clean_case(base: str, files: int) -> tuple[dict[str, str], str, list[str], list[str]]:
    """bench/clean.py's tree: old session folders and old clean worktrees of one project."""
    import clean

    saved = dict(os.environ)
    for name in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        os.environ.setdefault(name, "bench")
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        os.environ.setdefault(name, "bench@claudetto.invalid")
    try:
        targets = clean.build(__import__("pathlib").Path(base), files, 20)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    env = sandbox_env(base)
    repo = os.path.join(base, "project")
    return env, repo, ["clean", "--dry-run", "--json", repo], targets


def _check(route: Route, args: list[str], env: dict[str, str], cwd: str, which: str) -> None:
    done = subprocess.run([route.claudetto, *args], env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{route.name} {which}: exit {done.returncode}: {done.stderr.strip()}")
    out = json.loads(done.stdout)
    if which == "gc":
        statuses = [e["status"] for e in out["entries"]]
        assert statuses == ["would_remove"], out
    else:
        assert out["cleaned"]["folders"] > 0 and out["cleaned"]["worktrees"] == 20, out


def _stats_per_entry(argv: list[str], env: dict[str, str], cwd: str, entries: int) -> float | None:
    if shutil.which("strace") is None:
        return None
    done = subprocess.run(["strace", "-f", "-c", "-e", f"trace={STAT_CALLS}", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False)
    calls = 0
    for line in done.stderr.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1] in STAT_CALLS.split(",") and parts[3].isdigit():
            calls += int(parts[3])
    return calls / entries if entries else None


def _summary(runs: list[tuple[float, float]]) -> tuple[float, float, float]:
    """The median and best wall time, and the median CPU time, of (wall, CPU) runs."""
    walls = [wall for wall, _ in runs]
    return statistics.median(walls), min(walls), statistics.median(cpu for _, cpu in runs)


def _load() -> str:
    try:
        with open("/proc/loadavg") as fh:
            return fh.read().split()[0]
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=int(os.environ.get("CLAUDETTO_BENCH_FILES", "200000")))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", choices=["gc", "clean"])
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="claudetto-bench-walk-")
    try:
        found = routes(base)
        for which in ("gc", "clean"):
            if args.only not in (None, which):
                continue
            case_base = os.path.join(base, which)
            print(f"one_walk {which}: building {args.files:,} files ...", file=sys.stderr, flush=True)
            env, cwd, cli_args, du_paths = (_gc_case if which == "gc" else _clean_case)(case_base, args.files)
            du = ["du", "-sb", "--", *du_paths]
            out = subprocess.run(["du", "-s", "--inodes", "--", *du_paths], capture_output=True, text=True, check=True)
            entries = sum(int(line.split()[0]) for line in out.stdout.splitlines())
            for route in found:
                _check(route, cli_args, env, cwd, which)
            times: dict[str, list[tuple[float, float]]] = {"du": [], **{r.name: [] for r in found}}
            run_once(du)  # warm the cache
            load = _load()
            for _ in range(args.runs):
                times["du"].append(run_once(du))
                for route in found:
                    times[route.name].append(run_once([route.claudetto, *cli_args], env=env, cwd=cwd))
            du_med, du_best, du_cpu = _summary(times["du"])
            print(f"one_walk {which}: {len(du_paths)} folder(s), {entries:,} entries; `du -sb` median "
                  f"{du_med * 1000:.0f} ms, best {du_best * 1000:.0f} ms, CPU {du_cpu * 1000:.0f} ms "
                  f"({args.runs} runs, interleaved; load {load} -> {_load()})")
            for route in found:
                med, best, cpu = _summary(times[route.name])
                per = _stats_per_entry([route.claudetto, *cli_args], env, cwd, entries)
                walks = "" if per is None else f"; {per:.2f} stat calls per entry"
                print(f"  {route.name:8s} claudetto {' '.join(cli_args[:2])}: median {med * 1000:.0f} ms = "
                      f"{med / du_med:.2f}x du, best {best * 1000:.0f} ms = {best / du_best:.2f}x du "
                      f"(target <= 1.0x), CPU {cpu * 1000:.0f} ms = {cpu / du_cpu:.2f}x du's{walks}")
            shutil.rmtree(case_base, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
