"""The typical hook, whole process, as Claude starts it (`sh -c COMMAND`), against the bare
interpreter started the same way (`sh -c "<python> -c pass"`), for both install routes
(issue 17 target 1: 1.2x or less):

  settings  `make run` + `claudetto setup`: an editable install in .venv; the command
            settings.json holds (`<python> -I -S -c '...run()' # claudetto`)
  plugin    the plugin's launcher (`. bin/claudetto-hook`) with its environment built: a plain
            `pip install` of the repository in a venv under the plugin's data folder

and three typical events: UserPromptSubmit with an empty ledger, PostToolUse Write of a small
file in the project (a ledger entry: where Claude writes most), and the same in the temp
folder (a GC record and a ledger entry). The older entry
(`python -P -m hooks`, what settings held before) is shown for comparison.

Each figure is the median over RUNS runs, the cases taking turns with their baseline; the
bytecode is cached, as for an installed package. CPU time (user + system of the process
`sh -c` started, which execs the interpreter) is shown beside the wall time: on a busy
machine it is the steadier of the two.

The plugin's environment is built once into a temp folder (a real `pip install`, about a
minute), or reused from CLAUDETTO_BENCH_PLUGIN_DATA (a folder the launcher built before).

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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import routes  # noqa: E402

from app.core.setup import hook_command  # noqa: E402

LAUNCHER = '. "${CLAUDE_PLUGIN_ROOT}/bin/claudetto-hook"'


def run_once(command: str, stdin: bytes, env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, from wait4: the shell and what it exec'd) of
    `sh -c command` with stdin."""
    return routes.run_once(["sh", "-c", command], stdin, env, cwd)


def build_plugin_env(base: str, env: dict[str, str]) -> str:
    """A data folder with the plugin's environment built by the launcher itself."""
    reuse = os.environ.get("CLAUDETTO_BENCH_PLUGIN_DATA")
    if reuse:
        return reuse
    data = os.path.join(base, "plugin-data")
    os.makedirs(data)
    print("hook_latency: building the plugin's environment (a real pip install)...", file=sys.stderr)
    subprocess.run(["sh", os.path.join(ROOT, "bin", "claudetto-hook"), "sessions", "--json"],
                   env={**env, "CLAUDE_PLUGIN_ROOT": ROOT, "CLAUDE_PLUGIN_DATA": data},
                   stdout=subprocess.DEVNULL, check=True)
    return data


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("runs", nargs="?", type=int, default=40, help="runs of each case (default 40)")
    runs = parser.parse_args().runs
    base = tempfile.mkdtemp(prefix="claudetto-bench-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDETTO_", "CLAUDE_PLUGIN_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: bytecode cached
        subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(ROOT, "app"),
                        os.path.join(ROOT, "hooks")], check=False, stdout=subprocess.DEVNULL)
        for name, sub in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "home/.claude"), ("CLAUDE_CODE_TMPDIR", "ctmp"),
                          ("TMPDIR", "utmp"), ("CLAUDETTO_HOME", "state")):
            os.makedirs(os.path.join(base, sub), exist_ok=True)
            env[name] = os.path.join(base, sub)
        env["CLAUDETTO_MANAGED_SETTINGS"] = os.path.join(base, "managed-settings.json")
        project = os.path.join(base, "project")
        os.makedirs(project)
        small = os.path.join(env["TMPDIR"], "notes.md")
        source = os.path.join(project, "parser.py")
        for path in (small, source):
            with open(path, "w") as fh:
                fh.write("# notes\n")
        common = {"session_id": "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00",
                  "transcript_path": os.path.join(base, "t.jsonl"), "cwd": project, "permission_mode": "default"}
        events = {
            "UserPromptSubmit (empty ledger)": json.dumps(
                {**common, "hook_event_name": "UserPromptSubmit", "prompt": "Please refactor the parser."}).encode(),
            "PostToolUse Write (project file)": json.dumps(
                {**common, "hook_event_name": "PostToolUse", "tool_name": "Write",
                 "tool_input": {"file_path": source, "content": "# notes\n"},
                 "tool_response": {"type": "create", "filePath": source}}).encode(),
            "PostToolUse Write (temp file)": json.dumps(
                {**common, "hook_event_name": "PostToolUse", "tool_name": "Write",
                 "tool_input": {"file_path": small, "content": "# notes\n"},
                 "tool_response": {"type": "create", "filePath": small}}).encode(),
        }
        data = build_plugin_env(base, env)
        plugin_python = os.path.join(data, "venv", "bin", "python")
        plugin_env = {**env, "CLAUDE_PLUGIN_ROOT": ROOT, "CLAUDE_PLUGIN_DATA": data}
        py = sys.executable
        routes = [
            # (route, command, env, the bare interpreter of the same route)
            ("settings", hook_command().removesuffix(" # claudetto"), env, py),
            ("plugin", LAUNCHER, plugin_env, plugin_python),
            ("older -P -m hooks", f"{py} -P -m hooks", env, py),
        ]
        cases = [(route, event, command, e, payload, bare) for route, command, e, bare in routes
                 for event, payload in events.items()]
        bases = {bare: f"{bare} -c pass" for _, _, _, bare in routes}
        for _ in range(3):  # warm the page cache and the bytecode
            for _route, _event, command, e, payload, _bare in cases:
                run_once(command, payload, e, project)
        times: dict[str, list[tuple[float, float]]] = {}
        for _ in range(runs):
            for bare, command in bases.items():
                times.setdefault(bare, []).append(run_once(command, b"", env, project))
            for route, event, command, e, payload, _bare in cases:
                times.setdefault(f"{route}|{event}", []).append(run_once(command, payload, e, project))

        # the Write case is the one that records: the file is fresh (its ctime within the
        # Write's default window), so each run rewrites the session's records file
        records = os.path.join(env["CLAUDETTO_HOME"], "gc", f"{common['session_id']}.json")
        if not os.path.exists(records):
            print(f"hook_latency: WARNING: no GC record was written ({records})", file=sys.stderr)

        def med(key: str, i: int) -> float:
            return statistics.median(t[i] for t in times[key])

        for bare in bases:
            print(f"hook_latency: sh -c '{os.path.basename(bare)} -c pass' ({bare}): "
                  f"{med(bare, 0) * 1000:.1f} ms wall, {med(bare, 1) * 1000:.1f} ms cpu")
        for route, event, _command, _e, _payload, bare in cases:
            key = f"{route}|{event}"
            print(f"hook_latency: {route:18s} {event:33s} {med(key, 0) * 1000:5.1f} ms wall "
                  f"{med(key, 0) / med(bare, 0):.2f}x, cpu {med(key, 1) / med(bare, 1):.2f}x "
                  f"(target <= 1.2x), median of {runs}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
