"""The edit ledger's hooks, whole process, against `python -c pass` of the same interpreter,
for both install routes (bench/routes.py: the editable `make run` venv and a plain
`pip install .`), each run as Claude runs it (`python -I -S -c <entry>`):

  1. UserPromptSubmit, 200 unchanged 1.4 KB files in the ledger   (issue 17: 1.3x or less)
  2. UserPromptSubmit, 10 of 200 changed, 1 MiB each               (issue 7: 2x or less)
  3. PostToolUse (Edit) of a 10 MB file                            (issue 17: 2x or less)

Each figure is the median over RUNS runs, the cases taking turns with the baseline in the
same run; wall time and CPU time (user + system, from wait4: steadier on a busy machine).
Each case also shows its floor: the same hook with nothing for the ledger to do (an empty
ledger; an Edit of a 6-byte file), i.e. what the hook pays before the ledger's own work, and
case 3 the time the C hash alone takes for the file (FNV-1a is a serial multiply chain).

Usage: .venv/bin/python bench/ledger.py [--runs N] [--scale F]
       (or LEDGER_BENCH_RUNS / LEDGER_BENCH_SCALE; a scale < 1 shrinks file counts and sizes;
       CLAUDETTO_BENCH_PLAIN_VENV reuses a plain venv, see bench/routes.py)
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from routes import medians, routes, sandbox_env  # noqa: E402

SID = "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00"


def hook_out(argv: list[str], payload: bytes, env: dict[str, str], cwd: str) -> bytes:
    return subprocess.run(argv, input=payload, env=env, cwd=cwd, capture_output=True, check=True).stdout


def record(python: str, env: dict[str, str], paths: list[Path]) -> None:
    """Record edits in one helper process (fast set-up, the same code as the hook)."""
    code = ("import sys; from app.core.ledger import record_file\n"
            f"for p in sys.argv[1:]: assert record_file(p, 'main', {SID!r})\n")
    subprocess.run([python, "-I", "-c", code, *map(str, paths)], env=env, check=True)


def c_hash_ms(python: str, path: Path) -> float:
    """The C hash alone over the file's bytes, in that interpreter (best of 5)."""
    code = ("import sys,time; from app.core.fnv import fnv1a_64\n"
            "data=open(sys.argv[1],'rb').read(); best=9.0\n"
            "for _ in range(5):\n t=time.perf_counter(); fnv1a_64(data); best=min(best,time.perf_counter()-t)\n"
            "print(best)")
    out = subprocess.run([python, "-I", "-c", code, str(path)], capture_output=True, text=True, check=True)
    return float(out.stdout) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("LEDGER_BENCH_RUNS", "30")))
    parser.add_argument("--scale", type=float, default=float(os.environ.get("LEDGER_BENCH_SCALE", "1")))
    args = parser.parse_args()
    n_files = max(10, int(200 * args.scale))
    n_changed = max(1, int(10 * args.scale))
    changed_bytes = max(64 * 1024, int(1024 * 1024 * args.scale))
    big_bytes = max(256 * 1024, int(10 * 1000 * 1000 * args.scale))

    base = Path(tempfile.mkdtemp(prefix="claudetto-bench-ledger-"))
    try:
        found = routes(str(base))
        env = sandbox_env(str(base / "sb"))
        empty_env = {**env, "CLAUDETTO_HOME": str(base / "empty-state")}
        project = base / "project"
        project.mkdir()
        cwd = str(project)
        state = Path(env["CLAUDETTO_HOME"]) / "ledger.json"
        prompt = json.dumps({"session_id": SID, "transcript_path": str(base / "t.jsonl"), "cwd": cwd,
                             "hook_event_name": "UserPromptSubmit", "prompt": "Please go on."}).encode()

        # typical small source files, ~1.4 KB each
        files = [project / "src" / f"module_{i:03}.py" for i in range(n_files)]
        files[0].parent.mkdir()
        for i, f in enumerate(files):
            f.write_text(f"# module {i}\n" + "def f(x):\n    return x * 2  # a line of code\n" * 30)
        for route in found:  # warm caches, write bytecode
            medians({"bare": (route.bare(), b"", env, cwd, None),
                     "floor": (route.hook(), prompt, empty_env, cwd, None)}, 3)

        time.sleep(2.1)  # past the ledger's 2 s "racy stat" window, as files are in real use
        record(found[0].python, env, files)
        for route in found:
            assert hook_out(route.hook(), prompt, env, cwd) == b"", "unchanged files printed something"
        results: dict[str, dict[str, dict[str, tuple[float, float]]]] = {r.name: {} for r in found}

        def measure(key: str, case_payload: bytes, floor_payload: bytes, floor_env: dict[str, str],
                    before: object = None) -> None:
            cases: dict[str, tuple] = {}
            for route in found:
                cases[f"{route.name}|bare"] = (route.bare(), b"", env, cwd, None)
                cases[f"{route.name}|floor"] = (route.hook(), floor_payload, floor_env, cwd, None)
                cases[f"{route.name}|case"] = (route.hook(), case_payload, env, cwd, before)
            m = medians(cases, args.runs)
            for route in found:
                results[route.name][key] = {k: m[f"{route.name}|{k}"] for k in ("bare", "floor", "case")}

        measure("unchanged", prompt, prompt, empty_env)

        # n_changed of them rewritten at 1 MiB each by "the user"
        chunk = b"# changed outside Claude\n" + bytes(range(32, 127)) * (changed_bytes // 95)
        for i, f in enumerate(files[:n_changed]):
            f.write_bytes(chunk[: changed_bytes - 8] + b"%08d" % i)
        snapshot = state.read_bytes()

        def restore() -> None:  # each run sees the changes as news
            state.write_bytes(snapshot)

        for route in found:
            restore()
            out = json.loads(hook_out(route.hook(), prompt, env, cwd))["hookSpecificOutput"]["additionalContext"]
            assert len(out.splitlines()) == n_changed, out
        measure("changed", prompt, prompt, empty_env, restore)

        # PostToolUse of an Edit of a 10 MB file (the ledger holds the 200 others)
        big = project / "data.json"
        big.write_bytes(((b'{"k": "' + bytes(range(35, 127)) * 64 + b'"},\n') * (big_bytes // 5900 + 1))[:big_bytes])
        edit = json.dumps({"session_id": SID, "transcript_path": str(base / "t.jsonl"), "cwd": cwd,
                           "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "toolu_1",
                           "tool_input": {"file_path": str(big), "old_string": "a", "new_string": "b"},
                           "tool_response": {"filePath": str(big)}}).encode()
        small = project / "small.py"
        small.write_text("x = 1\n")
        edit_small = edit.replace(str(big).encode(), str(small).encode())
        for route in found:
            state.unlink()
            hook_out(route.hook(), edit, env, cwd)
            assert str(big) in json.loads(state.read_text())["files"], f"{route.name}: the big file was not recorded"
        measure("edit", edit, edit_small, env)
        # the edit's floor as a whole process: a bare script that reads the file and hashes it
        # in C, nothing else (no payload, no ledger)
        floor_code = ("import sys;from fnv_c.ext._fnv import ffi,lib;d=open(sys.argv[1],'rb').read();"
                      "lib.fnv1a_64(ffi.from_buffer(d),len(d))")
        script = medians({f"{r.name}|{k}": v for r in found for k, v in (
            ("bare", (r.bare(), b"", env, cwd, None)),
            ("script", ([r.python, "-I", "-c", floor_code, str(big)], b"", env, cwd, None)))}, args.runs)

        ms = 1000
        rows = [
            ("unchanged", f"UserPromptSubmit, {n_files} unchanged files", 1.3, "an empty ledger"),
            ("changed", f"UserPromptSubmit, {n_changed} of {n_files} changed, {changed_bytes // 1024} KiB each",
             2.0, "an empty ledger"),
            ("edit", f"PostToolUse Edit of a {big_bytes / 1e6:.0f} MB file", 2.0, "an Edit of a 6-byte file"),
        ]
        print(f"ledger bench: median of {args.runs} interleaved runs per case, wall (CPU in brackets)")
        for route in found:
            r = results[route.name]
            bare = r["unchanged"]["bare"]
            print(f"  {route.name} ({route.python}; C hash: {'yes' if route.has_c_hash() else 'NO'}): "
                  f"python -c pass {bare[0] * ms:.1f} ms ({bare[1] * ms:.1f} ms)")
            for key, name, target, floor_name in rows:
                m = r[key]
                print(f"    {name}: {m['case'][0] * ms:.1f} ms = {m['case'][0] / m['bare'][0]:.2f}x "
                      f"(CPU {m['case'][1] / m['bare'][1]:.2f}x) python -c pass, target <= {target}x; "
                      f"{m['case'][0] / m['floor'][0]:.2f}x (CPU {m['case'][1] / m['floor'][1]:.2f}x) "
                      f"the same hook with {floor_name} ({m['floor'][0] * ms:.1f} ms)")
            alone = c_hash_ms(route.python, big) / ms / r["edit"]["bare"][0]
            print(f"    the C hash alone over the {big_bytes / 1e6:.0f} MB file: {alone * r['edit']['bare'][0] * ms:.1f} ms "
                  f"= {alone:.2f}x python -c pass: no edit of it can take less than {1 + alone:.2f}x")
            bare_script = script[f"{route.name}|script"][0] / script[f"{route.name}|bare"][0]
            print(f"    a bare script that reads the file and hashes it in C: {bare_script:.2f}x python -c pass "
                  f"(the edit's floor as a whole process; the hook above it: "
                  f"{r['edit']['case'][0] / r['edit']['bare'][0] - bare_script:+.2f}x)")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
