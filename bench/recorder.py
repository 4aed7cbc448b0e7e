"""Benchmark: PostToolUse on Bash, the output recorder, whole hook processes as installed
(`python -I -S -c <entry>`), for both install routes (bench/routes.py).

Three payloads, each a median over RUNS processes, as ratios against `python -c pass` of
the same interpreter run in this process:
- a plain command (`ls -la && pytest -q`): no trigger word, nothing parsed;
- a recorded clone (`git clone … /tmp/x`): parsed, one record written;
- `d=$(mktemp -d) && cd "$d"`: the path is not printed, so the user temp folder is listed
  and the fresh entry that fits the template is recorded. The folder holds ENTRIES other
  entries, like a busy /tmp (names close to the template, `tmp-0000000001`, and `build-N`:
  every name is matched, none fits, since a fresh one that fitted would be a candidate).

    .venv/bin/python bench/recorder.py                 # 40 runs, 10,000 entries
    .venv/bin/python bench/recorder.py 10 1000         # RUNS ENTRIES, smaller

Everything is built under a temp folder that is removed at the end. On this machine the
environment sets PYTHONDONTWRITEBYTECODE; the bench unsets it so that modules load from
bytecode, as they do in an install.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OLD_S = 3 * 86_400
sys.path.insert(0, str(ROOT / "bench"))

from routes import routes  # noqa: E402


def median_time(cmd: list[str], stdin: bytes, env: dict[str, str], cwd: str, runs: int,
                before: object = None) -> float:
    times = []
    for _ in range(runs):
        if callable(before):
            before()
        start = time.perf_counter()
        subprocess.run(cmd, input=stdin, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    base = tempfile.mkdtemp(prefix="claudetto-bench-")
    try:
        utmp = os.path.join(base, "utmp")
        for sub in ("home/.claude", "ctmp", "utmp", "state", "proj"):
            os.makedirs(os.path.join(base, sub))
        old = time.time() - OLD_S
        for i in range(count):
            other = os.path.join(utmp, f"tmp-{i:010d}" if i % 2 else f"build-{i}")
            os.mkdir(other)
            os.utime(other, (old, old))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(HOME=os.path.join(base, "home"), CLAUDE_CONFIG_DIR=os.path.join(base, "home/.claude"),
                   CLAUDE_CODE_TMPDIR=os.path.join(base, "ctmp"), TMPDIR=utmp,
                   CLAUDETTO_HOME=os.path.join(base, "state"), PYTHONPATH=str(ROOT))
        cwd = os.path.join(base, "proj")

        def payload(command: str) -> bytes:
            return json.dumps({"hook_event_name": "PostToolUse", "session_id": "bench", "cwd": cwd,
                               "tool_name": "Bash", "tool_input": {"command": command},
                               "tool_response": {"stdout": "", "stderr": "", "interrupted": False}}).encode()

        def one_fresh_mktemp() -> None:
            subprocess.run(["mktemp", "-d"], env=env, stdout=subprocess.DEVNULL, check=True)

        first = set(os.listdir(utmp))
        for route in routes():
            for name in set(os.listdir(utmp)) - first:  # the previous route's fresh folders
                shutil.rmtree(os.path.join(utmp, name), ignore_errors=True)
            hook, bare_cmd = route.hook(), route.bare()
            for cmd in (hook, bare_cmd):  # warm caches and bytecode
                subprocess.run(cmd, input=payload("mktemp -d"), env=env, cwd=cwd, capture_output=True, check=False)
            gc_file = Path(base, "state", "gc", "bench.json")
            gc_file.unlink(missing_ok=True)
            bare = median_time(bare_cmd, b"", env, cwd, runs)
            plain = median_time(hook, payload("ls -la && pytest -q"), env, cwd, runs)
            clone = median_time(hook, payload(f"git clone https://x/y/tool.git {utmp}/copy"), env, cwd, runs)
            unprinted = median_time(hook, payload('d=$(mktemp -d) && cd "$d"'), env, cwd, runs,
                                    before=one_fresh_mktemp)
            records = json.loads(gc_file.read_text())["records"]
            temps = sum(1 for r in records if r["kind"] == "temp")
            print(f"{route.name} ({route.python}):")
            print(f"  bare interpreter (python -c pass):    {bare * 1000:.1f} ms")
            print(f"  PostToolUse Bash, plain command:      {plain * 1000:.1f} ms = {plain / bare:.2f}x bare")
            print(f"  PostToolUse Bash, git clone recorded: {clone * 1000:.1f} ms = {clone / bare:.2f}x bare")
            print(f"  PostToolUse Bash, unprinted mktemp, {count} entries in TMPDIR: {unprinted * 1000:.1f} ms = "
                  f"{unprinted / bare:.2f}x bare, {unprinted / clone:.2f}x the clone ({temps} of {runs} found)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
