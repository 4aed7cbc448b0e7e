"""The edit ledger's hooks against `python -c pass` of the same interpreter (issue 7).

  1. UserPromptSubmit, 200 unchanged files in the ledger          (target 1.5x or less)
  2. UserPromptSubmit, 10 of 200 changed, 1 MB each                (target 2x or less)
  3. PostToolUse (Edit) of a 10 MB file                            (target 1.5x or less)

Each figure is the median whole-process time of `python -P -m hooks` over RUNS runs, divided
by the median of `python -c pass`; the cases take turns with the baseline in the same run.
Each case also shows its floor: the same hook with nothing for the ledger to do (an empty
ledger; an Edit of a 6-byte file), i.e. what the hook pays before the ledger's own work.
The project's bytecode is cached (in the temp dir), as it is for an installed package.

Usage: .venv/bin/python bench/ledger.py [--runs N] [--scale F]
       (or LEDGER_BENCH_RUNS / LEDGER_BENCH_SCALE; a scale < 1 shrinks file counts and sizes)
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SID = "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00"


def medians(cases: dict[str, tuple[list[str], bytes, dict[str, str], object]], runs: int) -> dict[str, float]:
    """Median wall time of each case; the cases take turns, so load from elsewhere hits all."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (cmd, stdin, env, before) in cases.items():
            if callable(before):
                before()
            start = time.perf_counter()
            subprocess.run(cmd, input=stdin, env=env, cwd=env["BENCH_CWD"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def hook_out(payload: bytes, env: dict[str, str]) -> bytes:
    return subprocess.run([sys.executable, "-P", "-m", "hooks"], input=payload, env=env, cwd=env["BENCH_CWD"],
                          capture_output=True, check=True).stdout


def record(env: dict[str, str], paths: list[Path]) -> None:
    """Record edits in one helper process (fast set-up, same code as the hook)."""
    code = ("import sys; from app.core.ledger import record_file\n"
            f"for p in sys.argv[1:]: assert record_file(p, 'main', {SID!r})\n")
    subprocess.run([sys.executable, "-P", "-c", code, *map(str, paths)], env=env, cwd=str(ROOT), check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("LEDGER_BENCH_RUNS", "30")))
    parser.add_argument("--scale", type=float, default=float(os.environ.get("LEDGER_BENCH_SCALE", "1")))
    args = parser.parse_args()
    n_files = max(10, int(200 * args.scale))
    n_changed = max(1, int(10 * args.scale))
    changed_bytes = max(64 * 1024, int(1024 * 1024 * args.scale))
    big_bytes = max(256 * 1024, int(10 * 1024 * 1024 * args.scale))

    base = Path(tempfile.mkdtemp(prefix="claudetto-bench-ledger-"))
    try:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
        env["PYTHONPATH"] = str(ROOT)
        for name, sub in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "home/.claude"), ("CLAUDE_CODE_TMPDIR", "ctmp"),
                          ("TMPDIR", "utmp"), ("CLAUDETTO_HOME", "state")):
            (base / sub).mkdir(parents=True, exist_ok=True)
            env[name] = str(base / sub)
        project = base / "project"
        project.mkdir()
        env["BENCH_CWD"] = str(project)
        state = base / "state" / "ledger.json"
        py = sys.executable
        prompt = json.dumps({"session_id": SID, "transcript_path": str(base / "t.jsonl"), "cwd": str(project),
                             "hook_event_name": "UserPromptSubmit", "prompt": "Please go on."}).encode()

        # typical source files, ~4 KB each
        files = [project / "src" / f"module_{i:03}.py" for i in range(n_files)]
        files[0].parent.mkdir()
        for i, f in enumerate(files):
            f.write_text(f"# module {i}\n" + "def f(x):\n    return x * 2  # a line of code\n" * 90)
        empty_env = {**env, "CLAUDETTO_HOME": str(base / "empty-state")}
        bare = ([py, "-c", "pass"], b"", env, None)
        hook = [py, "-P", "-m", "hooks"]
        medians({"bare": bare, "floor": (hook, prompt, empty_env, None)}, 3)  # warm caches, write bytecode

        time.sleep(2.1)  # past the ledger's 2 s "racy stat" window, as files are in real use
        record(env, files)
        assert hook_out(prompt, env) == b"", "unchanged files printed something"
        m1 = medians({"bare": bare, "floor": (hook, prompt, empty_env, None), "case": (hook, prompt, env, None)},
                     args.runs)

        # 10 of them rewritten at 1 MB each by "the user"
        chunk = b"# changed outside Claude\n" + bytes(range(32, 127)) * (changed_bytes // 95)
        for i, f in enumerate(files[:n_changed]):
            f.write_bytes(chunk[: changed_bytes - 8] + b"%08d" % i)
        snapshot = state.read_bytes()

        def restore() -> None:  # each run sees the changes as news
            state.write_bytes(snapshot)

        restore()
        out = json.loads(hook_out(prompt, env))["hookSpecificOutput"]["additionalContext"]
        assert len(out.splitlines()) == n_changed, out
        m2 = medians({"bare": bare, "floor": (hook, prompt, empty_env, None), "case": (hook, prompt, env, restore)},
                     args.runs)

        # PostToolUse of an Edit of a 10 MB file (the ledger holds the 200 others)
        big = project / "data.json"
        big.write_bytes((b'{"k": "' + bytes(range(35, 127)) * 64 + b'"},\n') * (big_bytes // 6000 + 1))
        edit = json.dumps({"session_id": SID, "transcript_path": str(base / "t.jsonl"), "cwd": str(project),
                           "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "toolu_1",
                           "tool_input": {"file_path": str(big), "old_string": "a", "new_string": "b"},
                           "tool_response": {"filePath": str(big)}}).encode()
        small = project / "small.py"
        small.write_text("x = 1\n")
        edit_small = edit.replace(str(big).encode(), str(small).encode())
        hook_out(edit, env)
        assert str(big) in json.loads(state.read_text())["files"], "the big file was not recorded"
        m3 = medians({"bare": bare, "floor": (hook, edit_small, env, None), "case": (hook, edit, env, None)},
                     args.runs)

        ms = 1000
        print(f"ledger bench: median of {args.runs} interleaved runs; python -c pass "
              f"{m1['bare'] * ms:.1f} ms; hook floor {m1['floor'] * ms:.1f} ms = {m1['floor'] / m1['bare']:.2f}x")
        rows = [
            (f"UserPromptSubmit, {n_files} unchanged files", m1, 1.5, "empty ledger"),
            (f"UserPromptSubmit, {n_changed} of {n_files} changed, {changed_bytes // 1024} KiB each", m2, 2.0,
             "empty ledger"),
            (f"PostToolUse Edit of a {big.stat().st_size / 2**20:.1f} MiB file", m3, 1.5, "Edit of a 6-byte file"),
        ]
        for name, m, target, floor_name in rows:
            print(f"  {name}: {m['case'] * ms:.1f} ms = {m['case'] / m['bare']:.2f}x python -c pass "
                  f"(target <= {target}x); {m['case'] / m['floor']:.2f}x the same hook with {floor_name} "
                  f"({m['floor'] * ms:.1f} ms)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
