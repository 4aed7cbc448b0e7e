"""Memory hygiene timings: the sweep, and what the write lint costs a write outside memory.

1. The sweep of 200 memory files (about 1,200 backticked names, versions and migration
   facts) over a 5,000-file repository, warm cache: wall time, median of runs (target 0.3 s;
   the seed's own budget is 2.5 s), against one plain `git grep` of one name over the same
   tree (the floor of any grounded check).
2. The hook as installed (`python -I -S -c <entry>`, both install routes: bench/routes.py)
   with a PreToolUse Write outside memory, against the bare interpreter (`python -c pass`)
   and against the same hook process doing nothing (a PostToolUse of Read: reading the
   payload and dispatching). Target: within 1.2x.

Usage: .venv/bin/python bench/memory.py [runs]  (CLAUDETTO_BENCH_FILES, CLAUDETTO_BENCH_MEMORY shrink it)
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from routes import routes  # noqa: E402


def make_repo(root: str, files: int) -> None:
    """A repository of `files` files: packages of modules with classes and functions, build
    files, and a numbered migration folder."""
    os.makedirs(root)
    for i in range(files - 103):
        package, module = divmod(i, 50)
        path = os.path.join(root, f"pkg{package}", f"mod{module}.py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as out:
            out.write(f"class Widget{i}Service:\n    def load_widget_{i}(self):\n        return {i}\n" * 3)
    os.makedirs(os.path.join(root, "app", "migrations"))
    for n in range(1, 101):
        open(os.path.join(root, "app", "migrations", f"{n:04d}_change_{n}.py"), "w").close()
    with open(os.path.join(root, "pyproject.toml"), "w") as out:
        out.write('[project]\nname = "big"\ndependencies = ["requests>=2.31,<3", "jhelm==1.5.2", "django==5.0.6"]\n')
    with open(os.path.join(root, "package.json"), "w") as out:
        json.dump({"dependencies": {"react": "^18.3.1", "next": "14.2.3"}}, out)
    with open(os.path.join(root, "README.md"), "w") as out:
        out.write("# big\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "big"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


def make_memory(folder: str, count: int, files: int) -> None:
    os.makedirs(folder)
    index = []
    for i in range(count):
        j = (i * 37) % (files - 103)
        package, module = divmod(j, 50)
        gone = "Vanished" if i % 10 == 0 else ""
        text = (f"---\nname: topic {i}\ndescription: notes on module {j}\nmetadata:\n  type: project\n---\n"
                f"- `pkg{package}/mod{module}.py` defines `Widget{j}{gone}Service` and `load_widget_{j}()`.\n"
                f"- Helpers sit in `pkg{package}/helpers_{j}.py` next to `mod{module}.py`.\n"
                f"- requests 2.31.0 for HTTP; jhelm {'1.3.1' if i % 7 == 0 else '1.5.2'} for templates.\n"
                f"- The latest migration is {'0098' if i % 9 == 0 else '0100'}; react 18.3 in the admin.\n"
                f"- e.g. `src/example_{i}.py`; run with `--verbose` and `<config>`.\n"
                f"- ~~`pkg{package}/old_{j}.py`~~\n")
        with open(os.path.join(folder, f"topic_{i}.md"), "w") as out:
            out.write(text)
        if i % 50:
            index.append(f"- [Topic {i}](topic_{i}.md) — module {j}")
    with open(os.path.join(folder, "MEMORY.md"), "w") as out:
        out.write("\n".join(index) + "\n")


def median_time(cmd: list[str], stdin: bytes, env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(cases: list[tuple[list[str], bytes]], env: dict[str, str], runs: int) -> list[float]:
    """The median time of each command, run in turns so that every one sees the same load."""
    times: list[list[float]] = [[] for _ in cases]
    for _ in range(runs):
        for (cmd, stdin), out in zip(cases, times, strict=True):
            start = time.perf_counter()
            subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("runs", nargs="?", type=int, default=20, help="runs of each case (default 20)")
    runs = parser.parse_args().runs
    files = int(os.environ.get("CLAUDETTO_BENCH_FILES", "5000"))
    count = int(os.environ.get("CLAUDETTO_BENCH_MEMORY", "200"))
    base = tempfile.mkdtemp(prefix="claudetto-bench-memory-")
    try:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        for name, sub in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "home/.claude"), ("CLAUDE_CODE_TMPDIR", "ctmp"),
                          ("TMPDIR", "utmp"), ("CLAUDETTO_HOME", "state")):
            os.makedirs(os.path.join(base, sub), exist_ok=True)
            env[name] = os.environ[name] = os.path.join(base, sub)
        sys.path.insert(0, ROOT)
        from app.core import memory, paths

        repo = os.path.join(base, "repo")
        make_repo(repo, files)
        folder = os.path.join(str(paths.projects_dir()), paths.project_slug(repo), "memory")
        make_memory(folder, count, files)

        memory.sweep(repo)  # warm the page cache
        sweeps, findings = [], []
        for _ in range(max(3, runs // 4)):
            start = time.perf_counter()
            findings = memory.sweep(repo)
            sweeps.append(time.perf_counter() - start)
        floor = median_time(["git", "-C", repo, "grep", "-c", "-F", "-e", "load_widget_7"], b"", env, 5)
        sweep = statistics.median(sweeps)
        print(f"memory sweep: {count} memory files over {files} files, {len(findings)} findings: "
              f"{sweep * 1000:.0f} ms (target <= 300 ms), {sweep / floor:.1f}x one plain git grep "
              f"({floor * 1000:.0f} ms), median of {len(sweeps)}")

        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "app"),
                        os.path.join(ROOT, "hooks")], check=False, stdout=subprocess.DEVNULL)
        common = {"session_id": "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00", "transcript_path": os.path.join(base, "t.jsonl"),
                  "cwd": repo, "permission_mode": "default"}
        outside = json.dumps({**common, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "t1",
                              "tool_input": {"file_path": os.path.join(repo, "pkg0", "new.py"),
                                             "content": "x = 1\n" * 200}}).encode()
        inside = json.dumps({**common, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "t2",
                             "tool_input": {"file_path": os.path.join(folder, "new-topic.md"),
                                            "content": "---\nname: n\ndescription: d\ntype: project\n---\nA fact.\n"}}).encode()
        noop = json.dumps({**common, "hook_event_name": "PostToolUse", "tool_name": "Read",
                           "tool_input": {"file_path": os.path.join(repo, "README.md")}, "tool_response": {}}).encode()
        for route in routes():  # the hook as installed, both install routes
            hook = route.hook()
            cases = [(route.bare(), b""), (hook, outside), (hook, noop), (hook, inside)]
            interleaved(cases, env, 3)  # warm the page cache
            bare, write_outside, reading, write_inside = interleaved(cases, env, runs)
            print(f"memory lint ({route.name}): PreToolUse Write outside memory {write_outside * 1000:.1f} ms = "
                  f"{write_outside / bare:.2f}x python -c pass ({bare * 1000:.1f} ms), "
                  f"{write_outside / reading:.2f}x the hook reading a payload and doing nothing "
                  f"({reading * 1000:.1f} ms) (target <= 1.2x); a linted Write into memory "
                  f"{write_inside * 1000:.1f} ms; median of {runs}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
