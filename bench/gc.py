"""Benchmark: SessionEnd with 1,000 GC records, 100 of them removable trees of 200,000 files
in all. Measures the time until the hook returns (target < 0.5 s) and until everything is
purged (the detached sweep, its removals and the trash purge), against `rm -rf` of the same
trees and against a bare interpreter start, both run in this process; for both install
routes (bench/routes.py), each with the hook command as installed (`python -I -S -c ...`).

    .venv/bin/python bench/gc.py                       # the issue's size
    .venv/bin/python bench/gc.py --trees 10 --files 200 --records 100   # smaller
    CLAUDETTO_BENCH_SCALE=0.1 .venv/bin/python bench/gc.py             # or scale it

Everything is built under a temp folder that is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from routes import Route, routes  # noqa: E402

OLD_S = 8 * 86_400


def build_tree(top: Path, files: int, per_dir: int = 200) -> None:
    top.mkdir(parents=True)
    for i in range(files):
        sub = top / f"d{i // per_dir}"
        if i % per_dir == 0:
            sub.mkdir()
        fd = os.open(sub / f"f{i}", os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"x")
        os.close(fd)
    t = time.time() - OLD_S
    os.utime(top, (t, t))


def main() -> int:
    scale = float(os.environ.get("CLAUDETTO_BENCH_SCALE", "1"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=int, default=max(1, round(100 * scale)))
    parser.add_argument("--files", type=int, default=max(1, round(200_000 * scale)), help="files in all trees")
    parser.add_argument("--records", type=int, default=max(1, round(1_000 * scale)))
    args = parser.parse_args()
    per_tree = max(1, args.files // args.trees)
    base = Path(tempfile.mkdtemp(prefix="claudetto-bench-gc-"))
    try:
        code = 0
        for route in routes(str(base)):
            print(f"== {route.name} ({route.python})")
            code |= run(base / route.name, route, args.trees, per_tree, max(args.records, args.trees))
        return code
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(base: Path, route: Route, trees: int, per_tree: int, records: int) -> int:
    base.mkdir()
    env = dict(os.environ)
    for name, sub in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "home/.claude"), ("CLAUDE_CODE_TMPDIR", "ctmp"),
                      ("TMPDIR", "utmp"), ("CLAUDETTO_HOME", "state")):
        (base / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(base / sub)
    os.environ.update(env)  # so app.core.paths below sees the sandbox
    from app.core import paths
    from app.core.state import write_json_atomic

    utmp = Path(env["TMPDIR"])
    print(f"building {trees} trees of {per_tree} files ({trees * per_tree} files), twice ...", flush=True)
    # Both sets are built and flushed first, so neither pays the other's writeback.
    baseline = base / "baseline"
    for i in range(trees):
        build_tree(baseline / f"t{i}", per_tree)
    cwd = base / "proj"
    cwd.mkdir()
    rows = []
    for i in range(trees):
        path = utmp / f"tmp.tree{i:06d}"
        build_tree(path, per_tree)
        rows.append({"path": str(path), "kind": "temp", "session": "ending", "time": 1.0, "cwd": str(cwd)})
    for i in range(records - trees):  # the rest: young scratch files, kept
        path = utmp / f"scratch-{i}.md"
        path.write_text("notes\n")
        rows.append({"path": str(path), "kind": "scratch", "session": "ending", "time": 2.0, "cwd": str(cwd)})
    write_json_atomic(paths.gc_records_file("ending"), {"session": "ending", "records": rows})
    os.sync()

    t0 = time.perf_counter()
    subprocess.run(["rm", "-rf", str(baseline)], check=True)
    rm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    subprocess.run(route.bare(), check=True)
    bare_s = time.perf_counter() - t0

    payload = json.dumps({"hook_event_name": "SessionEnd", "session_id": "ending", "cwd": str(cwd),
                          "reason": "prompt_input_exit"}).encode()
    log = paths.session_log(str(cwd), "ending")
    t0 = time.perf_counter()
    subprocess.run(route.hook(), input=payload, cwd=str(cwd), env=env, check=True, capture_output=True)
    hook_s = time.perf_counter() - t0

    trashes = [paths.trash_dir(), paths.log_root() / "trash"]

    def purged() -> bool:
        if not log.exists() or "GC removed=" not in log.read_text():
            return False
        if any(utmp.glob("tmp.tree*")):
            return False
        return not any(t.exists() and any(t.iterdir()) for t in trashes)

    deadline = time.monotonic() + 1800
    while not purged():
        if time.monotonic() > deadline:
            print("timed out waiting for the purge", file=sys.stderr)
            return 1
        time.sleep(0.02)
    done_s = time.perf_counter() - t0
    summary = [line for line in log.read_text().splitlines() if "GC removed=" in line]
    print(summary[-1] if summary else "(no summary)")
    print(f"SessionEnd hook returned in   {hook_s * 1000:8.1f} ms  ({hook_s / bare_s:.1f}x a bare interpreter "
          f"start of {bare_s * 1000:.1f} ms; target < 500 ms: {'ok' if hook_s < 0.5 else 'MISSED'})")
    print(f"everything purged after       {done_s:8.2f} s   ({done_s / rm_s:.2f}x rm -rf of the same trees: "
          f"{rm_s:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
