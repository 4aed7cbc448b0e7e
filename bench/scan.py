"""Scanner wall time against `du -sb` on a node_modules-like tree, and its peak memory, for
both install routes (bench/routes.py; the targets: 0.7x `du -sb` or less on 200,000 files,
warm cache; peak memory under 100 MB per million entries).

    .venv/bin/python bench/scan.py            # 200,000 files in 20,000 folders
    CLAUDETTO_BENCH_FILES=20000 .venv/bin/python bench/scan.py   # smaller
    .venv/bin/python bench/scan.py --memory 1000000   # peak RSS of scans of 1M entries

The tree is built under a temp folder (TMPDIR) and removed at the end. Each scan runs in a
process of the route's interpreter that times `scanner.scan` itself (the interpreter's start
is not the scanner's); `du -sb` is timed as a whole command (its start is ~1 ms). Warm cache;
the sides take turns; best and median of RUNS. The one-process scan is shown too: what the
second reader buys. The load average is printed before and after: two readers on two cores
need both cores, so other work on the machine shows in their wall time first.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from routes import Route, routes  # noqa: E402

FILES = int(os.environ.get("CLAUDETTO_BENCH_FILES", "200000"))
PER_FOLDER = 10  # 200,000 files in 20,000 folders

_TIMED = """
import json, resource, sys, time
from app.core.scanner import scan
def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start, mine, helper = time.perf_counter(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
size = scan(sys.argv[1], parallel=sys.argv[2] == "two")
took = time.perf_counter() - start
mine, helper = cpu(resource.RUSAGE_SELF) - mine, cpu(resource.RUSAGE_CHILDREN) - helper
print(json.dumps({"s": took, "cpu": max(mine, helper), "cpu_all": mine + helper,
                  "apparent": size.apparent, "entries": size.entries, "partial": size.partial,
                  "rss_before_kb": before, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "helper_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def build_tree(top: str, files: int = FILES) -> tuple[int, int]:
    """A node_modules-like tree: packages with nested lib/ folders, small files.
    Returns (files, folders) made (the top not counted)."""
    folders_wanted = max(1, files // PER_FOLDER)
    made_files = made_folders = 0
    payload = b"module.exports = function () { return 42; };\n" * 20
    pkg = 0
    nm = os.path.join(top, "node_modules")
    os.makedirs(nm)
    made_folders += 1
    for i in range(min(PER_FOLDER, files)):
        with open(f"{nm}/.f{i}.json", "wb") as fh:
            fh.write(payload[:200])
        made_files += 1
    while made_folders < folders_wanted:
        base = os.path.join(nm, f"pkg-{pkg}")
        pkg += 1
        layout = [base, base + "/lib", base + "/lib/core", base + "/lib/util", base + "/dist",
                  base + "/dist/esm", base + "/dist/cjs", base + "/types", base + "/src",
                  base + "/src/internal"]
        for folder in layout:
            if made_folders >= folders_wanted:
                break
            os.mkdir(folder)
            made_folders += 1
            for i in range(PER_FOLDER):
                if made_files >= files:
                    break
                fd = os.open(f"{folder}/f{i}.js", os.O_WRONLY | os.O_CREAT, 0o644)
                os.write(fd, payload[: 64 + (i * 397) % len(payload)])
                os.close(fd)
                made_files += 1
    return made_files, made_folders


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def du(top: str) -> tuple[float, int, float]:
    """Wall seconds, bytes and CPU seconds of `du -sb`."""
    start = time.perf_counter()
    proc = subprocess.Popen(["du", "-sb", top], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, _, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, int(out.split()[0]), usage.ru_utime + usage.ru_stime


def timed_scan(route: Route, top: str, how: str = "two") -> dict[str, float]:
    out = subprocess.run([route.python, "-I", "-c", _TIMED, top, how], capture_output=True, text=True,
                         check=True, cwd="/")
    result: dict[str, float] = json.loads(out.stdout)
    return result


def memory(found: list[Route], entries: int) -> None:
    """Peak RSS of a process that scans a tree of `entries` entries (and of its helper)."""
    with tempfile.TemporaryDirectory(prefix="claudetto-bench-") as tmp:
        print(f"building {entries:,} entries ...", flush=True)
        build_tree(tmp, files=entries * PER_FOLDER // (PER_FOLDER + 1))
        for route in found:
            r = timed_scan(route, tmp)
            print(f"  {route.name:8s} scan of {r['entries']:,.0f} entries: peak RSS {r['rss_kb'] / 1024:.1f} MB "
                  f"(interpreter + import: {r['rss_before_kb'] / 1024:.1f} MB; the helper: "
                  f"{r['helper_rss_kb'] / 1024:.1f} MB) = {r['rss_kb'] / 1024 / (r['entries'] / 1e6):.1f} MB per "
                  f"million entries (target < 100)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", type=int, metavar="ENTRIES")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="claudetto-bench-")
    try:
        found = routes(base)
        if args.memory:
            memory(found, args.memory)
            return
        tmp = os.path.join(base, "tree")
        os.makedirs(tmp)
        start = time.perf_counter()
        files, folders = build_tree(tmp)
        print(f"tree: {files:,} files in {folders:,} folders, built in {time.perf_counter() - start:.1f} s; "
              f"load average {_load()}")
        du(tmp)  # warm the cache
        times: dict[str, list[float]] = {"du": [], "du cpu": []}
        for _ in range(args.runs):
            t, du_bytes, du_cpu = du(tmp)
            times["du"].append(t)
            times["du cpu"].append(du_cpu)
            for route in found:
                for how in ("two", "one"):
                    r = timed_scan(route, tmp, how)
                    if r["apparent"] != du_bytes or r["partial"]:
                        print(f"MISMATCH: du -sb {du_bytes} vs {route.name} scanner {r['apparent']}")
                    times.setdefault(f"{route.name} {how}", []).append(r["s"])
                    times.setdefault(f"{route.name} {how} cpu", []).append(r["cpu"])
                    times.setdefault(f"{route.name} {how} cpu_all", []).append(r["cpu_all"])
        du_best, du_med = min(times["du"]), statistics.median(times["du"])
        du_cpu = min(times["du cpu"])
        print(f"du -sb: best {du_best * 1000:.0f} ms, median {du_med * 1000:.0f} ms, CPU {du_cpu * 1000:.0f} ms "
              f"({args.runs} runs, interleaved)")
        for route in found:
            for how, label in (("two", "scan (two readers)"), ("one", "scan, one process")):
                t = times[f"{route.name} {how}"]
                best, med = min(t), statistics.median(t)
                cpu, cpu_all = min(times[f"{route.name} {how} cpu"]), min(times[f"{route.name} {how} cpu_all"])
                target = " (target <= 0.7x)" if how == "two" else ""
                print(f"  {route.name:8s} {label:20s} best {best * 1000:4.0f} ms = {best / du_best:.2f}x du, "
                      f"median {med * 1000:4.0f} ms = {med / du_med:.2f}x du{target}; the busier reader's CPU "
                      f"{cpu * 1000:.0f} ms = {cpu / du_cpu:.2f}x du's CPU (both: {cpu_all * 1000:.0f} ms)")
        print("  (on a quiet machine the wall time is the busier reader's CPU; with other work on the "
              f"cores the two readers wait for each other's core); load average now {_load()}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
