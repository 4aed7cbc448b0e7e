"""Median whole-process time of `python -P -m hooks` with a typical UserPromptSubmit payload,
against `python -c pass` of the same interpreter, as a ratio (target: 1.5x or less).

Usage: .venv/bin/python bench/hook_latency.py [runs]
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


def median_time(cmd: list[str], stdin: bytes, env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    base = tempfile.mkdtemp(prefix="claudetto-bench-")
    try:
        env = dict(os.environ)
        # as installed: bytecode cached (where PYTHONDONTWRITEBYTECODE is set, every run would
        # compile every module again, ~10 ms)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "app"),
                        os.path.join(root, "hooks")], check=False, stdout=subprocess.DEVNULL)
        for name, sub in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "home/.claude"), ("CLAUDE_CODE_TMPDIR", "ctmp"),
                          ("TMPDIR", "utmp"), ("CLAUDETTO_HOME", "state")):
            os.makedirs(os.path.join(base, sub), exist_ok=True)
            env[name] = os.path.join(base, sub)
        project = os.path.join(base, "project")
        os.makedirs(project)
        payload = json.dumps({
            "session_id": "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00",
            "transcript_path": os.path.join(base, "t.jsonl"),
            "cwd": project,
            "hook_event_name": "UserPromptSubmit",
            "permission_mode": "default",
            "prompt": "Please refactor the parser and run the tests.",
        }).encode()
        py = sys.executable
        # warm the page cache for both
        median_time([py, "-c", "pass"], b"", env, 3)
        median_time([py, "-P", "-m", "hooks"], payload, env, 3)
        bare = median_time([py, "-c", "pass"], b"", env, runs)
        hook = median_time([py, "-P", "-m", "hooks"], payload, env, runs)
        print(f"hook_latency: python -c pass {bare * 1000:.1f} ms, UserPromptSubmit hook {hook * 1000:.1f} ms, "
              f"ratio {hook / bare:.2f}x (target <= 1.5x), median of {runs}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
