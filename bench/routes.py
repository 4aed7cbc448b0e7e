"""The two ways a user installs claudetto, for the benches to run side by side (issue 17):

  editable  `make run`: `pip install -e .` in the repository's .venv (the interpreter that
            runs the bench)
  plain     a plain `pip install .` of the repository into a venv of its own, as the
            plugin's launcher builds it (no extra: what the dependencies alone bring)

Run on its own it prints what each route pays before any claudetto code runs: the bare
interpreter, the hook entry with nothing to do, and `claudetto --help`, each as a ratio
against `python -c pass` of the same route, and whether the C hash is there.

The plain venv is built once under the temp folder (a real `pip install`, about a minute),
named after a hash of what it installs (app/, hooks/, bin/, pyproject.toml), and reused by
every bench until that changes; or it is CLAUDETTO_BENCH_PLAIN_VENV (a venv built this way:
`python -m venv V && V/bin/pip install .`).

Usage: .venv/bin/python bench/routes.py [runs]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY_PROBE = "from app.core.setup import entry_code;print(entry_code())"


class Route:
    """One install: its interpreter, its hook command, its `claudetto` script."""

    def __init__(self, name: str, venv: str) -> None:
        self.name = name
        self.venv = venv
        self.python = os.path.join(venv, "bin", "python")
        self.claudetto = os.path.join(venv, "bin", "claudetto")
        out = subprocess.run([self.python, "-I", "-c", ENTRY_PROBE], capture_output=True, text=True,
                             check=True, cwd="/")
        self.entry = out.stdout.strip().splitlines()[-1]

    def hook(self) -> list[str]:
        """The hook as `claudetto setup` and the plugin's launcher run it."""
        return [self.python, "-I", "-S", "-c", self.entry]

    def bare(self) -> list[str]:
        return [self.python, "-c", "pass"]

    def has_c_hash(self) -> bool:
        probe = "from app.core.fnv import c_available;print(c_available())"
        out = subprocess.run([self.python, "-I", "-c", probe], capture_output=True, text=True, check=False, cwd="/")
        return out.stdout.strip() == "True"


def routes(base: str | None = None) -> list[Route]:
    """The editable route (this interpreter's venv) and the plain one (see the module's doc)."""
    editable = os.path.dirname(os.path.dirname(sys.executable))
    plain = os.environ.get("CLAUDETTO_BENCH_PLAIN_VENV") or build_plain()
    return [Route("editable", editable), Route("plain", plain)]


def _source_hash() -> str:
    import hashlib

    digest = hashlib.sha1(sys.version.encode())
    for top in ("app", "hooks", "bin", "pyproject.toml"):
        found = [os.path.join(ROOT, top)] if top.endswith(".toml") else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(os.path.join(ROOT, top)) if "__pycache__" not in d
            for f in fs)
        for path in found:
            digest.update(os.path.relpath(path, ROOT).encode())
            with open(path, "rb") as fh:
                digest.update(fh.read())
    return digest.hexdigest()[:12]


def build_plain() -> str:
    venv = os.path.join(tempfile.gettempdir(), f"claudetto-bench-plain-{_source_hash()}")
    if os.path.exists(os.path.join(venv, "installed")):
        os.utime(os.path.join(venv, "installed"))  # in use: see _forget_old_venvs
        return venv
    print(f"building a plain `pip install .` venv in {venv} (about a minute; "
          "CLAUDETTO_BENCH_PLAIN_VENV names another)...", file=sys.stderr, flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    _forget_old_venvs()
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", venv], check=True)
    subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", ROOT], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(venv, "installed"), "w") as fh:
        fh.write("built for bench/routes.py\n")
    return venv


def _forget_old_venvs(hours: float = 1.0) -> None:
    """Plain venvs of earlier source states, unused for an hour: each is ~100 MB of /tmp."""
    import glob
    import time

    for old in glob.glob(os.path.join(tempfile.gettempdir(), "claudetto-bench-plain-*")):
        try:
            if time.time() - os.stat(os.path.join(old, "installed")).st_mtime > hours * 3600:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass


def run_once(argv: list[str], stdin: bytes = b"", env: dict[str, str] | None = None,
             cwd: str | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, from wait4) of one process."""
    import time

    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    try:
        proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime


def medians(cases: dict[str, tuple], runs: int) -> dict[str, tuple[float, float]]:
    """Median (wall, cpu) of each case `(argv, stdin, env, cwd, before)`; the cases take
    turns, so load from elsewhere hits them all alike. `before` (or None) runs untimed first."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (argv, stdin, env, cwd, before) in cases.items():
            if before is not None:
                before()
            times[name].append(run_once(argv, stdin, env, cwd))
    return {name: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts))
            for name, ts in times.items()}


def sandbox_env(base: str) -> dict[str, str]:
    """The environment of a sandboxed run: every folder claudetto reads or writes under `base`;
    bytecode cached, as for an installed package."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDETTO_", "CLAUDE_PLUGIN_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for name, sub in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "home/.claude"), ("CLAUDE_CODE_TMPDIR", "ctmp"),
                      ("TMPDIR", "utmp"), ("CLAUDETTO_HOME", "state")):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
        env[name] = os.path.join(base, sub)
    env["CLAUDETTO_MANAGED_SETTINGS"] = os.path.join(base, "managed-settings.json")
    return env


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    base = tempfile.mkdtemp(prefix="claudetto-bench-routes-")
    try:
        env = sandbox_env(base)
        project = os.path.join(base, "project")
        os.makedirs(project)
        empty = b'{"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "%s", "prompt": "go"}' % (
            project.encode())
        cases: dict[str, tuple] = {}
        found = routes(base)
        for route in found:
            cases[f"{route.name} bare"] = (route.bare(), b"", env, project, None)
            cases[f"{route.name} hook"] = (route.hook(), empty, env, project, None)
            cases[f"{route.name} cli"] = ([route.claudetto, "--help"], b"", env, project, None)
        medians(cases, 3)  # warm the caches and the bytecode
        m = medians(cases, runs)
        print(f"routes: median of {runs} interleaved runs (wall; CPU in brackets)")
        for route in found:
            bare = m[f"{route.name} bare"]
            print(f"  {route.name:8s} {route.python}: python -c pass {bare[0] * 1000:.1f} ms "
                  f"({bare[1] * 1000:.1f} ms); C hash: {'yes' if route.has_c_hash() else 'NO'}")
            for what, label in (("hook", "UserPromptSubmit, empty ledger"), ("cli", "claudetto --help")):
                wall, cpu = m[f"{route.name} {what}"]
                print(f"    {label:32s} {wall * 1000:6.1f} ms = {wall / bare[0]:.2f}x "
                      f"(CPU {cpu / bare[1]:.2f}x) python -c pass")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
