"""claudetto's Python environment in a plugin install: built on first use, rebuilt when the
plugin's version changes, and what a hook does until it is there.

Run by bin/claudetto-hook with the first Python 3.11+ on PATH, only while the environment is
missing or built for another version (a built one is run by the launcher directly):

    python -I claudetto_env.py ROOT DATA            one hook event on stdin
    python -I claudetto_env.py ROOT DATA ARGS...    a claudetto command line (`gc --dry-run`)
    python -I claudetto_env.py ROOT DATA --build    the detached build itself

The environment is a venv at DATA/venv with claudetto installed from ROOT (a plain
`pip install ROOT[fast]`, PyPI reachable). It is built in DATA/venv.new and swapped in whole;
`DATA/venv/claudetto-entry` (`<version> <entry>`) is written last, so a half-built one is never
run. One build at a time: a flock on DATA/build.lock. A build that failed is recorded in
DATA/build-failed and not tried again for RETRY_AFTER_S, so a machine without network does
not start a pip on every call. The last attempt's output is in DATA/build.log, one line per
skipped event or failure in DATA/launcher.log.

Until the environment is there:
- WorktreeCreate waits for the build (Claude hands worktree creation to its hooks entirely),
  then runs the event; a build that cannot be made fails the creation with one line.
- A command line waits for it too, saying so on stderr.
- Every other event starts the build detached and exits 0 at once; SessionStart says in the
  session's context that claudetto is getting ready, and so does the first UserPromptSubmit of
  a session that started before the plugin was installed (once: DATA/told/<session>).

Stdlib only, and nothing here ever prints a traceback: a failure is one line and a log entry.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import TextIO

RETRY_AFTER_S = 600
VENV_TIMEOUT_S = 300
PIP_TIMEOUT_S = 900
WAIT_FOR_BUILD_S = 540  # under Claude's default 600 s hook timeout
MAX_INPUT = 64 * 1024 * 1024
CLI = "import sys;from app.cli import main;sys.exit(main())"
ENTRY_PROBE = "from app.core.setup import entry_code;print(entry_code())"


class BuildError(Exception):
    """The environment could not be built; the message is one line for the user."""


class PluginEnv:
    def __init__(self, root: str, data: str) -> None:
        self.root = os.path.abspath(root)
        self.data = os.path.abspath(data)
        self.venv = os.path.join(self.data, "venv")
        self.python = os.path.join(self.venv, "bin", "python")
        self.stamp = os.path.join(self.venv, "claudetto-entry")
        self.lock_path = os.path.join(self.data, "build.lock")
        self.failed_path = os.path.join(self.data, "build-failed")
        self.log_path = os.path.join(self.data, "build.log")
        self.told_dir = os.path.join(self.data, "told")
        self.version = plugin_version(self.root)

    # -- state ---------------------------------------------------------------------------
    def entry(self) -> str | None:
        """The hook entry when the environment is built for this version, else None."""
        try:
            with open(self.stamp, encoding="utf-8") as fh:
                built, _, entry = fh.readline().strip().partition(" ")
        except (OSError, UnicodeDecodeError):
            return None
        if not self.version or built != self.version or not entry.strip():
            return None
        return entry.strip() if os.access(self.python, os.X_OK) else None

    def recent_failure(self) -> str | None:
        """Why the last build failed, when that was less than RETRY_AFTER_S ago."""
        try:
            with open(self.failed_path, encoding="utf-8") as fh:
                record = json.load(fh)
            when, why = float(record["time"]), str(record["why"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if 0 <= time.time() - when < RETRY_AFTER_S:
            return why
        return None

    def retry_at(self) -> str:
        try:
            when = os.stat(self.failed_path).st_mtime + RETRY_AFTER_S
        except OSError:
            when = time.time()
        return time.strftime("%H:%M", time.localtime(when))

    def building(self) -> bool:
        """Whether another process holds the build lock right now."""
        with self.lock(wait_s=0) as held:
            return not held

    # -- the build -----------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, wait_s: float) -> Iterator[bool]:
        """The build lock, waiting up to wait_s; yields whether it is held."""
        os.makedirs(self.data, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held = True
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                        raise
                    if time.monotonic() >= deadline:
                        held = False
                        break
                    time.sleep(0.2)
            yield held
        finally:
            os.close(fd)

    def build(self, wait_s: float) -> str:
        """The hook entry, building the environment first when needed (waiting up to wait_s
        for a build that is running). Raises BuildError."""
        entry = self.entry()
        if entry:
            return entry
        with self.lock(wait_s) as held:
            if not held:
                raise BuildError(f"its environment is still being built (log: {self.log_path})")
            entry = self.entry()
            if entry:
                return entry
            why = self.recent_failure()
            if why:
                raise BuildError(f"building its environment failed ({why}); it tries again at "
                                 f"{self.retry_at()} (log: {self.log_path})")
            try:
                entry = self._build()
            except BuildError as exc:
                self._record_failure(str(exc))
                raise BuildError(f"building its environment failed ({exc}) (log: {self.log_path})") from None
            with contextlib.suppress(OSError):
                os.unlink(self.failed_path)
            shutil.rmtree(self.told_dir, ignore_errors=True)
            return entry

    def _build(self) -> str:
        if not self.version:
            raise BuildError(f"no version in {self.root}/.claude-plugin/plugin.json")
        new, old = self.venv + ".new", self.venv + ".old"
        for leftover in (new, old):
            shutil.rmtree(leftover, ignore_errors=True)
        with open(self.log_path, "w", encoding="utf-8") as log:  # the last attempt only
            log.write(f"== {time.strftime('%Y-%m-%dT%H:%M:%S')} building claudetto {self.version} "
                      f"from {self.root} with {sys.executable}\n")
            log.flush()
            self._run([sys.executable, "-I", "-m", "venv", new], log, VENV_TIMEOUT_S, "python -m venv")
            self._run([os.path.join(new, "bin", "python"), "-I", "-m", "pip", "install", "--no-input",
                       "--disable-pip-version-check", f"{self.root}[fast]"], log, PIP_TIMEOUT_S,
                      "pip install")
            # swapped in whole; the entry is asked of the environment where it now lies
            if os.path.lexists(self.venv):
                os.rename(self.venv, old)
            os.rename(new, self.venv)
            shutil.rmtree(old, ignore_errors=True)
            out = self._run([self.python, "-I", "-c", ENTRY_PROBE], log, 60, "the entry probe")
        entry = out.strip().splitlines()[-1] if out.strip() else ""
        if "\n" in entry or not entry.startswith("import "):
            raise BuildError("the new environment gave no hook entry")
        tmp = f"{self.stamp}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(f"{self.version} {entry}\n")
        os.replace(tmp, self.stamp)
        self._leave_pointer()
        return entry

    def _run(self, argv: list[str], log: TextIO, timeout: float, what: str) -> str:
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, cwd=self.data,
                                  stderr=subprocess.STDOUT, timeout=timeout, check=False, env=build_env())
        except subprocess.TimeoutExpired:
            raise BuildError(f"{what} took more than {timeout:.0f} s") from None
        except OSError as exc:
            raise BuildError(f"{what}: {exc.strerror}") from None
        text = done.stdout.decode("utf-8", "replace")
        log.write(text)
        if done.returncode != 0:
            last = [line for line in text.splitlines() if line.strip()][-1:] or ["no output"]
            raise BuildError(f"{what} exited {done.returncode}: {last[0].strip()[:200]}")
        return text

    def _record_failure(self, why: str) -> None:
        with contextlib.suppress(OSError):
            tmp = f"{self.failed_path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"time": time.time(), "why": why}, fh)
            os.replace(tmp, self.failed_path)

    def _leave_pointer(self) -> None:
        """Where a command run through the Bash tool (no CLAUDE_PLUGIN_DATA there) finds this
        environment: the data folder's path in claudetto's state folder."""
        if os.environ.get("CLAUDE_PLUGIN_DATA") != self.data:
            return
        home = os.environ.get("CLAUDETTO_HOME")
        if not home:
            return
        with contextlib.suppress(OSError):
            os.makedirs(home, exist_ok=True)
            tmp = os.path.join(home, f".plugin-data.{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(self.data + "\n")
            os.replace(tmp, os.path.join(home, "plugin-data"))

    def remember_python(self) -> None:
        """Keep this interpreter's path for the launcher: the next call skips its search."""
        path = os.path.join(self.data, "python")
        with contextlib.suppress(OSError), open(path, encoding="utf-8") as fh:
            if fh.readline().strip() == sys.executable:
                return
        with contextlib.suppress(OSError):
            os.makedirs(self.data, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(sys.executable + "\n")
            os.replace(tmp, path)

    def spawn_build(self) -> None:
        """Start the build detached (own session, no pipe of Claude's held open)."""
        if self.building() or self.recent_failure():
            return
        subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__), self.root, self.data, "--build"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)

    # -- telling the session --------------------------------------------------------------
    def note(self) -> str:
        why = self.recent_failure()
        if why:
            return (f"claudetto (plugin) is not active yet: building its Python environment failed "
                    f"({why}). It tries again at {self.retry_at()}; the log is {self.log_path}.")
        return ("claudetto (plugin) is getting ready: it is building its Python environment in the "
                "background (first use or a new version; about a minute). Until then its hooks "
                "do nothing, and creating a worktree waits for it.")

    def told(self, session: str) -> bool:
        """Whether this session was told already; marks it told."""
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in session)[:128].lstrip(".")
        if not name:
            return False
        try:
            os.makedirs(self.told_dir, exist_ok=True)
            fd = os.open(os.path.join(self.told_dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return True
        except OSError:
            return False
        os.close(fd)
        return False


def build_env() -> dict[str, str]:
    """The environment of the build's steps: the user's without PYTHON* variables. A hook starts
    the build in the user's project with the user's environment, and pip starts further Pythons
    of its own (its isolated build of the project) that no `-I` of ours reaches: a PYTHONHOME
    there fails them all, a PYTHONPATH with `.` runs the project's code. PIP_* settings (an
    index, a proxy, certificates) are the user's to give and stay."""
    return {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}


def plugin_version(root: str) -> str:
    try:
        with open(os.path.join(root, ".claude-plugin", "plugin.json"), encoding="utf-8") as fh:
            version = json.load(fh).get("version")
    except (OSError, ValueError, AttributeError):
        return ""
    return version if isinstance(version, str) and " " not in version else ""


LOG_MAX_BYTES = 256 * 1024


def log_line(env: PluginEnv, message: str) -> None:
    """One line in DATA/launcher.log, which starts over past LOG_MAX_BYTES (a machine where
    the build keeps failing calls this on every hook)."""
    path = os.path.join(env.data, "launcher.log")
    with contextlib.suppress(OSError):
        os.makedirs(env.data, exist_ok=True)
        try:
            mode = "w" if os.path.getsize(path) > LOG_MAX_BYTES else "a"
        except OSError:
            mode = "a"
        with open(path, mode, encoding="utf-8") as fh:
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(message.split())}\n")


def context(event: str, text: str) -> None:
    sys.stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}) + "\n")


def run_hook(env: PluginEnv, entry: str, raw: bytes) -> int:
    return subprocess.run([env.python, "-I", "-S", "-c", entry], input=raw, check=False).returncode


def hook(env: PluginEnv) -> int:
    raw = sys.stdin.buffer.read(MAX_INPUT)
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    payload = payload if isinstance(payload, dict) else {}
    event = payload.get("hook_event_name")
    session = payload.get("session_id")
    try:
        if event == "WorktreeCreate":
            return run_hook(env, env.build(WAIT_FOR_BUILD_S), raw)
        entry = env.entry()
        if entry:  # built meanwhile: the event runs after all
            return run_hook(env, entry, raw)
        env.spawn_build()
        if event == "SessionStart" or (event == "UserPromptSubmit" and isinstance(session, str)
                                       and not env.told(session)):
            if event == "SessionStart" and isinstance(session, str):
                env.told(session)
            context(str(event), env.note())
        log_line(env, f"{event}: skipped, the environment is not built yet")
        return 0
    except Exception as exc:  # noqa: BLE001 - never a traceback into Claude
        why = str(exc) if isinstance(exc, BuildError) else f"{type(exc).__name__}: {exc}"
        log_line(env, f"{event}: {why}")
        if event == "WorktreeCreate":
            sys.stderr.write(" ".join(f"claudetto: worktree not created: {why}".split()) + "\n")
            return 1
        if event == "SessionStart":  # a data folder it cannot write (read-only, full, a file in the
            # way): the log cannot be written either, so the session is the only place to say it
            context(event, " ".join(f"claudetto (plugin) is inactive: {why}. Its data folder is "
                                    f"{env.data}; start a new session once it can be written.".split()))
        return 0


def command_line(env: PluginEnv, args: list[str]) -> int:
    try:
        if not env.entry():
            sys.stderr.write("claudetto: building its environment first (about a minute)...\n")
            sys.stderr.flush()
            env.build(WAIT_FOR_BUILD_S)
    except Exception as exc:  # noqa: BLE001 - one line, no traceback
        why = str(exc) if isinstance(exc, BuildError) else f"{type(exc).__name__}: {exc}"
        log_line(env, f"command line: {why}")
        sys.stderr.write(" ".join(f"claudetto: {why}".split()) + "\n")
        return 1
    return subprocess.run([env.python, "-I", "-c", CLI, *args], check=False).returncode


def detached_build(env: PluginEnv) -> int:
    try:
        env.build(0)
    except Exception as exc:  # noqa: BLE001 - logged; nobody waits on this process
        log_line(env, f"build: {exc}")
        return 1
    log_line(env, f"build: claudetto {env.version} is ready")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        sys.stderr.write("usage: claudetto_env.py ROOT DATA [--build | ARGS...]\n")
        return 2
    env = PluginEnv(argv[1], argv[2])
    env.remember_python()
    args = argv[3:]
    if args == ["--build"]:
        return detached_build(env)
    if args:
        return command_line(env, args)
    return hook(env)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
