"""remove() on a node_modules-like tree against `rm -rf` of the same tree.

    .venv/bin/python bench/remove.py                              # 200,000 files, 20,000 folders
    CLAUDETTO_BENCH_FILES=20000 .venv/bin/python bench/remove.py  # smaller

Two equal trees are built under a temp folder (removed at the end); claudetto's state (and
so its trash) is pointed at that temp folder too. Prints two ratios against `rm -rf`:
until remove() returns (the tree renamed into the trash and the purge spawned; the size is
passed in, as a sweep that has measured it does) and until the detached purge has ended.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scan import FILES, build_tree  # noqa: E402


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="claudetto-bench-")
    os.environ["CLAUDETTO_HOME"] = os.path.join(tmp, "state")
    os.environ["CLAUDE_CODE_TMPDIR"] = os.path.join(tmp, "ctmp")
    from app.core.removal import remove, spawn_purge, trash_places
    from app.core.scanner import scan

    try:
        root = os.path.join(tmp, "root")
        a, b = os.path.join(root, "a"), os.path.join(root, "b")
        start = time.perf_counter()
        build_tree(a, FILES)
        files, folders = build_tree(b, FILES)
        print(f"trees: 2 x {files:,} files in {folders:,} folders, built in "
              f"{time.perf_counter() - start:.1f} s")
        subprocess.run(["sync"], check=False)

        start = time.perf_counter()
        subprocess.run(["rm", "-rf", a], check=True)
        rm_s = time.perf_counter() - start
        subprocess.run(["sync"], check=False)

        size = scan(b)  # measured beforehand, as the sweeps do
        start = time.perf_counter()
        result = remove(b, root, "bench", size=size, spawn=False)
        pid = spawn_purge()
        returned_s = time.perf_counter() - start
        if pid is not None:
            os.waitpid(pid, 0)
        purged_s = time.perf_counter() - start
        left = sum(len(os.listdir(p)) for p in trash_places() if os.path.isdir(p))
        print(f"remove(): {result.status}, trashed={result.trashed}, {result.bytes:,} bytes; "
              f"trash entries left after the purge: {left}")
        print(f"rm -rf:                  {rm_s * 1000:8.0f} ms")
        print(f"remove() returned after: {returned_s * 1000:8.0f} ms   "
              f"ratio {returned_s / rm_s:.3f}x (target 0.05x or less)")
        print(f"purge ended after:       {purged_s * 1000:8.0f} ms   "
              f"ratio {purged_s / rm_s:.2f}x (target 1.1x or less)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
