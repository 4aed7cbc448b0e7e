"""Scanner wall time against `du -sb` on a node_modules-like tree, and its peak memory.

    .venv/bin/python bench/scan.py            # 200,000 files in 20,000 folders
    CLAUDETTO_BENCH_FILES=20000 .venv/bin/python bench/scan.py   # smaller
    .venv/bin/python bench/scan.py --memory 1000000   # peak RSS of a scan of 1M entries

The tree is built under a temp folder (TMPDIR) and removed at the end. Both sides run on a
warm cache, best of three, alternating. Prints the ratio scanner / du (lower is better).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core.scanner import scan  # noqa: E402

FILES = int(os.environ.get("CLAUDETTO_BENCH_FILES", "200000"))
PER_FOLDER = 10  # 200,000 files in 20,000 folders


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


def _du(top: str) -> tuple[float, int]:
    start = time.perf_counter()
    out = subprocess.run(["du", "-sb", top], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, int(out.stdout.split()[0])


def _ours(top: str) -> tuple[float, int]:
    start = time.perf_counter()
    size = scan(top)
    return time.perf_counter() - start, size.apparent


def memory(entries: int) -> None:
    """Peak RSS of a process that scans a tree of `entries` entries, minus a bare one."""
    with tempfile.TemporaryDirectory(prefix="claudetto-bench-") as tmp:
        print(f"building {entries:,} entries ...", flush=True)
        build_tree(tmp, files=entries * PER_FOLDER // (PER_FOLDER + 1))
        code = ("import resource,sys; sys.path.insert(0, %r); from app.core.scanner import scan; "
                "before=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; s=scan(%r); "
                "print(before, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, s.files+s.folders)")
        root = str(Path(__file__).resolve().parent.parent)
        out = subprocess.run([sys.executable, "-c", code % (root, tmp)], capture_output=True,
                             text=True, check=True).stdout.split()
        before, after, counted = (int(x) for x in out)
        print(f"scan of {counted:,} entries: peak RSS {after / 1024:.1f} MB "
              f"(interpreter + import: {before / 1024:.1f} MB; target <= 100 MB)")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--memory":
        memory(int(sys.argv[2]))
        return
    tmp = tempfile.mkdtemp(prefix="claudetto-bench-")
    try:
        start = time.perf_counter()
        files, folders = build_tree(tmp)
        print(f"tree: {files:,} files in {folders:,} folders, built in {time.perf_counter() - start:.1f} s")
        _du(tmp)  # warm the cache
        du_times, our_times = [], []
        for _ in range(3):
            t, du_bytes = _du(tmp)
            du_times.append(t)
            t, our_bytes = _ours(tmp)
            our_times.append(t)
        if our_bytes != du_bytes:
            print(f"MISMATCH: du -sb {du_bytes} vs scanner {our_bytes}")
        du_best, our_best = min(du_times), min(our_times)
        print(f"du -sb:  {du_best * 1000:7.0f} ms")
        print(f"scanner: {our_best * 1000:7.0f} ms")
        print(f"ratio scanner / du -sb: {our_best / du_best:.2f}x (target 1.0x or better)")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of this process (tree building included): {peak:.1f} MB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
