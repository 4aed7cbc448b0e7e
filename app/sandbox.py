"""The sandbox builder: a realistic Claude Code environment under one folder.

One builder for the tests and for `claudetto --demo`. It makes HOME, `.claude` with session
files (live ones backed by real child processes, a stale one), projects with slugs,
transcripts and memory, the `claude-<uid>` temp tree, claudetto's gate logs, a real git
repository with worktrees in every state, GC records of outputs in the user's temp folder
and ledger entries. Content is deterministic: fixed ids, names and sizes; mtimes are set
relative to `now` with os.utime so every rule fires (old, young and live things).

`DemoRun` is the life of one `--demo` sandbox: a folder in the temp folder named after the
owning process (pid and start time, also in a marker file inside), the environment and the
current folder pointed at it, and its removal exactly once, on a normal exit, an exception,
SIGTERM or SIGHUP (a closed terminal). A process killed outright (SIGKILL, a crash) cannot
clean up, so every start removes the demo sandboxes whose owner is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DAY = 86400.0
MIB = 1024 * 1024

LIVE_BUSY = "5f0c2a8e-1d7b-4c3e-9a61-0b7e2d4c8f10"
LIVE_WAITING = "c7a41e09-3b2d-4f6a-8e15-2d9b6c0f7a33"
STALE = "9b3e7d21-6a4f-4e8b-b2c5-7d1f0e9a3c42"
OLD_GONE = "2e8f6b40-7c1a-4d93-a5e7-f03b9c18d6e5"
YOUNG_GONE = "71d3c9a2-0e4b-4b8f-9c26-a5f8e1d7b094"
STALE_PID = 4194301  # beyond most pid ranges; its procStart "1" never matches anyway

_CHILD = "import os, sys, time\nparent = os.getppid()\nwhile os.getppid() == parent:\n    time.sleep(0.5)\n"


@dataclass
class Sandbox:
    """A built sandbox: its folders, the environment that points claudetto at it, its children."""

    root: Path
    env: dict[str, str]
    now: float
    project: Path
    second_project: Path
    children: list[subprocess.Popen[bytes]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # parts that could not be made, and why

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    @property
    def config(self) -> Path:
        return Path(self.env["CLAUDE_CONFIG_DIR"])

    @property
    def user_tmp(self) -> Path:
        return Path(self.env["TMPDIR"])

    @property
    def claude_tmp(self) -> Path:
        return Path(os.path.realpath(self.env["CLAUDE_CODE_TMPDIR"])) / f"claude-{os.getuid()}"

    @property
    def state(self) -> Path:
        return Path(self.env["CLAUDETTO_HOME"])

    def close(self) -> None:
        """Stop the live sessions' processes (the folders are the caller's to remove)."""
        for child in self.children:
            if child.poll() is None:
                child.kill()
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.children.clear()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_sandbox(base: Path, *, now: float | None = None, live_processes: bool = True,
                  scale: float = 1.0) -> Sandbox:
    """Build the environment under `base` (created if missing) and return it.

    `live_processes=False` writes the live sessions without a pid (the contract counts such a
    file as live) so that a snapshot shows no varying pid; `scale` multiplies file sizes.
    The caller's os.environ is left alone; `Sandbox.env` holds the variables to set.
    """
    base = Path(os.path.realpath(base))
    now = time.time() if now is None else now
    env = {
        "HOME": str(base / "home"),
        "CLAUDE_CONFIG_DIR": str(base / "home" / ".claude"),
        "CLAUDE_CODE_TMPDIR": str(base / "ctmp"),
        "TMPDIR": str(base / "utmp"),
        "CLAUDETTO_HOME": str(base / "state"),
    }
    for value in env.values():
        Path(value).mkdir(parents=True, exist_ok=True)
    # a file that is not there: the machine's managed policy must not reach into the demo
    env["CLAUDETTO_MANAGED_SETTINGS"] = str(base / "managed-settings.json")
    project = base / "home" / "code" / "webshop"
    second = base / "home" / "code" / "notes"
    box = Sandbox(root=base, env=env, now=now, project=project, second_project=second)
    builder = _Builder(box, scale)
    try:
        builder.build(live_processes)
    except BaseException:
        box.close()
        raise
    return box


class _Builder:
    def __init__(self, box: Sandbox, scale: float) -> None:
        self.box = box
        self.scale = scale
        self.ages: list[tuple[Path, float]] = []  # (path, age in seconds), applied last

    # --- small tools ------------------------------------------------------------------------

    def file(self, path: Path, size: int = 0, text: str | None = None) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is not None:
            path.write_text(text, encoding="utf-8")
        else:
            data = bytes((i * 31 + len(path.name)) % 251 for i in range(4096))
            left = max(1, int(size * self.scale))
            with open(path, "wb") as fh:
                while left > 0:
                    fh.write(data[: min(left, len(data))])
                    left -= len(data)
        return path

    def aged(self, path: Path, age_s: float) -> Path:
        self.ages.append((path, age_s))
        return path

    def git(self, cwd: Path, *args: str) -> str:
        env = {**os.environ, **self.box.env, "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "Demo", "GIT_AUTHOR_EMAIL": "demo@example.invalid",
               "GIT_COMMITTER_NAME": "Demo", "GIT_COMMITTER_EMAIL": "demo@example.invalid",
               "GIT_AUTHOR_DATE": "2026-01-05T10:00:00Z", "GIT_COMMITTER_DATE": "2026-01-05T10:00:00Z"}
        out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def with_env(self, step: Callable[[], None], what: str) -> None:
        """Run a core call with os.environ pointed at the sandbox (the core reads it)."""
        saved = {name: os.environ.get(name) for name in self.box.env}
        os.environ.update(self.box.env)
        try:
            step()
        except ImportError as exc:
            self.box.notes.append(f"{what}: not available ({exc})")
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    # --- the parts --------------------------------------------------------------------------

    def build(self, live_processes: bool) -> None:
        self.repository()
        self.second_project()
        self.sessions(live_processes)
        self.claude_files()
        self.temp_tree()
        self.gc_outputs()
        self.with_env(self.ledger, "ledger")
        for path, age_s in sorted(self.ages, key=lambda pair: -len(pair[0].parts)):
            stamp = self.box.now - age_s
            os.utime(path, (stamp, stamp), follow_symlinks=False)

    def repository(self) -> None:
        repo = self.box.project
        repo.mkdir(parents=True, exist_ok=True)
        self.git(repo, "init", "-q", "-b", "main")
        self.file(repo / "README.md", text="# webshop\n\nA small shop.\n")
        self.file(repo / "src" / "app.py", text="def main():\n    return 'shop'\n")
        self.file(repo / ".gitignore", text="node_modules/\n.env\n.claude/\n")
        self.git(repo, "add", "-A")
        self.git(repo, "commit", "-q", "-m", "initial")
        trees = repo / ".claude" / "worktrees"
        old, young = 40 * DAY, 1 * DAY
        for name in ("old-clean", "agent-a3f9c2e1b7", "dirty-wip", "env-secret",
                     "unmerged-feature", "fresh-idea", "live-task"):
            self.git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(trees / name))
        self.file(trees / "agent-a3f9c2e1b7" / "node_modules" / "left-pad" / "index.js", 4 * MIB)
        self.file(trees / "dirty-wip" / "notes.txt", text="half done\n")
        self.file(trees / "env-secret" / ".env", text="TOKEN=not-a-real-token\n")
        self.file(trees / "unmerged-feature" / "src" / "feature.py", text="FEATURE = True\n")
        self.git(trees / "unmerged-feature", "add", "-A")
        self.git(trees / "unmerged-feature", "commit", "-q", "-m", "feature in progress")
        self.file(trees / "not-a-worktree" / "copy.txt", 1 * MIB)
        for name in ("old-clean", "agent-a3f9c2e1b7", "dirty-wip", "env-secret",
                     "unmerged-feature", "live-task", "not-a-worktree"):
            self.aged(trees / name, old)
        self.aged(trees / "fresh-idea", young)

    def second_project(self) -> None:
        notes = self.box.second_project
        self.file(notes / "todo.md", text="- write the notes\n")

    def sessions(self, live_processes: bool) -> None:
        from app.core.sessions import proc_start_time

        folder = self.box.config / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        now_ms = int(self.box.now * 1000)
        live = [
            (LIVE_BUSY, str(self.box.project / ".claude" / "worktrees" / "live-task"), "busy", 50_000, 41001),
            (LIVE_WAITING, str(self.box.project), "waiting", 3_600_000, 41002),
        ]
        for sid, cwd, status, age_ms, fixed in live:
            record: dict[str, Any] = {"sessionId": sid, "cwd": cwd, "status": status,
                                      "startedAt": now_ms - age_ms - 7_200_000,
                                      "updatedAt": now_ms - age_ms // 10,
                                      "version": "2.1.240", "kind": "interactive", "entrypoint": "cli"}
            name = str(fixed)
            if live_processes:
                child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                self.box.children.append(child)
                start = proc_start_time(child.pid)
                record = {"pid": child.pid, **record, "procStart": start}
                name = str(child.pid)
            (folder / f"{name}.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
        stale = {"pid": STALE_PID, "sessionId": STALE, "cwd": str(self.box.second_project),
                 "status": "idle", "startedAt": now_ms - 3 * 86_400_000, "updatedAt": now_ms - 2 * 86_400_000,
                 "procStart": "1", "version": "2.1.201", "kind": "interactive", "entrypoint": "cli"}
        (folder / f"{STALE_PID}.json").write_text(json.dumps(stale, indent=1), encoding="utf-8")

    def claude_files(self) -> None:
        from app.core.paths import project_slug

        config = self.box.config
        projects: dict[str, dict[str, Any]] = {str(self.box.project): {}, str(self.box.second_project): {}}
        self.file(config / ".claude.json", text=json.dumps({"projects": projects}, indent=1))
        self.file(config / "settings.json", text=json.dumps({"cleanupPeriodDays": 30}, indent=1))
        for project, sids in ((self.box.project, (LIVE_BUSY, LIVE_WAITING, OLD_GONE)),
                              (self.box.second_project, (STALE, YOUNG_GONE))):
            folder = config / "projects" / project_slug(project)
            for sid in sids:
                line = {"type": "user", "sessionId": sid, "cwd": str(project), "message": {"role": "user", "content": "hello"}}
                self.file(folder / f"{sid}.jsonl", text=json.dumps(line) + "\n")
        memory = config / "projects" / project_slug(self.box.project) / "memory"
        self.file(memory / "MEMORY.md", text="- [Build](build.md) — how the shop builds\n"
                                             "- [Deploy](deploy.md) — the deploy steps\n")
        self.file(memory / "build.md", text="---\nname: Build\ndescription: how the shop builds\n"
                                            "metadata:\n  type: project\n---\n"
                                            "The router lives in `src/legacy_router.py`.\n")
        self.file(memory / "old-notes.md", text="---\nname: Old notes\ndescription: unlisted\n"
                                                "type: reference\n---\nNothing indexes this file.\n")

    def temp_tree(self) -> None:
        from app.core.paths import project_slug

        tmp = self.box.claude_tmp
        shop, notes = project_slug(self.box.project), project_slug(self.box.second_project)
        folders = [  # (project slug, session, age, {relative file: size})
            (shop, LIVE_BUSY, 40 * DAY, {"tasks/b1.output": 3 * MIB, "scratchpad/plan.md": 2048}),
            (notes, STALE, 45 * DAY, {"tasks/b7.output": 24 * MIB, "scratchpad/log.md": 4096}),
            (shop, OLD_GONE, 60 * DAY, {"images/shot-1.png": 6 * MIB, "images/shot-2.png": 2 * MIB}),
            (notes, YOUNG_GONE, 2 * DAY, {"tasks/b2.output": 1 * MIB}),
        ]
        for slug, sid, age_s, files in folders:
            folder = tmp / slug / sid
            for relative, size in files.items():
                self.file(folder / relative, size)
                self.aged(folder / relative, age_s)
                self.aged((folder / relative).parent, age_s)
            self.aged(folder, age_s)
        self.file(tmp / "fswatch-probe-Ab3k9Q" / "probe", 512)
        self.aged(tmp / "fswatch-probe-Ab3k9Q", 3 * 3600)
        self.file(tmp / "fswatch-probe-Zq7m2W" / "probe", 512)
        self.aged(tmp / "fswatch-probe-Zq7m2W", 10 * 60)
        self.file(tmp / "stray-notes.txt", text="nobody knows\n")
        logs = Path(os.path.realpath(self.box.env["CLAUDE_CODE_TMPDIR"])) / "claudetto"
        self.aged(self.file(logs / notes / f"{STALE}.log", 64 * 1024), 40 * DAY)
        self.aged(self.file(logs / shop / f"{LIVE_BUSY}.log", 8 * 1024), 60)

    def gc_outputs(self) -> None:
        utmp = self.box.user_tmp
        made = [  # (session, command, path, age, size)
            (STALE, "mktemp -d", utmp / "tmp.BuildCache", 10 * DAY, 16 * MIB),
            (STALE, "mktemp -d", utmp / "tmp.FreshLogs0", 1 * DAY, 2 * MIB),
            (LIVE_WAITING, "mktemp -d", utmp / "tmp.LiveCache0", 12 * DAY, 5 * MIB),
            (OLD_GONE, "mktemp -d", utmp / "tmp.Vanished00", 0, 0),
        ]
        for _sid, _cmd, path, age_s, size in made:
            if size:
                self.file(path / "blob.bin", size)
                self.aged(path / "blob.bin", age_s)
                self.aged(path, age_s)
        outside = self.box.home / "elsewhere" / "tmp.Outside000"  # shown as ~/elsewhere/…
        self.file(outside / "data", 64 * 1024)
        link = utmp / "tmp.LinkToNote"
        link.symlink_to(self.box.second_project)
        copy = utmp / "webshop-copy"
        self.git(utmp, "clone", "-q", str(self.box.project), str(copy))
        self.aged(copy, 9 * DAY)
        scratch = self.file(utmp / "claude-report.md", 3 * 1024)
        self.aged(scratch, 8 * DAY)
        payloads = [self.bash(sid, cmd, str(path)) for sid, cmd, path, _a, sz in made if sz]
        payloads.append(self.bash(STALE, f"git clone {self.box.project} {copy}", ""))
        # The recorder keeps only what a call made; records an older version (or a hand) left
        # behind show the sweep's other answers: outside every root, a symlink, gone.
        legacy = [(OLD_GONE, outside), (YOUNG_GONE, link), (OLD_GONE, utmp / "tmp.Vanished00")]
        payloads.append({**self.common(STALE, str(self.box.second_project)), "tool_name": "Write",
                         "tool_input": {"file_path": str(scratch), "content": "report"},
                         "tool_response": {"filePath": str(scratch)}})

        def record() -> None:
            from app.core import paths
            from app.core.recorder import record_outputs
            from app.core.state import update_json

            for payload in payloads:
                record_outputs(payload)
            for sid, path in legacy:
                entry = {"path": str(path), "kind": "temp", "session": sid, "time": 1.0,
                         "cwd": str(self.box.project)}

                def add(data: Any, entry: dict[str, Any] = entry) -> Any:
                    data = data if isinstance(data, dict) else {}
                    return {**data, "records": [*data.get("records", []), entry]}

                update_json(paths.gc_records_file(sid), add, dict)

        self.with_env(record, "GC records")

    def common(self, sid: str, cwd: str) -> dict[str, Any]:
        return {"session_id": sid, "cwd": cwd, "hook_event_name": "PostToolUse",
                "transcript_path": str(self.box.config / "projects" / f"{sid}.jsonl")}

    def bash(self, sid: str, command: str, stdout: str) -> dict[str, Any]:
        cwd = str(self.box.second_project if sid in (STALE, YOUNG_GONE) else self.box.project)
        return {**self.common(sid, cwd), "tool_name": "Bash", "tool_input": {"command": command},
                "tool_response": {"stdout": stdout + "\n" if stdout else "", "stderr": "",
                                  "interrupted": False, "isImage": False}}

    def ledger(self) -> None:
        from app.core.ledger import record_edit

        app_py = self.box.project / "src" / "app.py"
        readme = self.box.project / "README.md"
        for path, agent in ((app_py, None), (readme, "general-purpose")):
            payload = {**self.common(LIVE_WAITING, str(self.box.project)), "tool_name": "Edit",
                       "tool_input": {"file_path": str(path), "old_string": "a", "new_string": "b"},
                       "tool_response": {"filePath": str(path)}}
            if agent:
                payload["agent_type"] = agent
                payload["agent_id"] = "a1b2c3"
            record_edit(payload)
        app_py.write_text("def main():\n    return 'shop, changed by the user'\n", encoding="utf-8")


# --- the demo run: one sandbox per process, removed once ---------------------------------------

DEMO_PREFIX = "claudetto-demo-"
DEMO_MARKER = ".claudetto-demo"
#: claudetto-demo-<pid>-<start time in clock ticks, or x where unknown>-<mkdtemp suffix>
_DEMO_NAME = re.compile(r"^claudetto-demo-([0-9]+)-([0-9]+|x)-[A-Za-z0-9_]+$")
ENV_NAMES = ("HOME", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "TMPDIR", "CLAUDETTO_HOME",
             "CLAUDETTO_MANAGED_SETTINGS")


def demo_owner(name: str) -> tuple[int, str | None] | None:
    """The owning pid and start time a demo folder's name carries, or None for any other name."""
    found = _DEMO_NAME.match(name)
    if found is None:
        return None
    start = found.group(2)
    return int(found.group(1)), None if start == "x" else start


def _marker_text(pid: int, start: str | None) -> str:
    return f"{pid} {start or 'x'}\n"


def _is_our_demo(path: str, pid: int, start: str | None) -> bool:
    """A folder of ours (this user's, a real folder) holding the marker its name promises;
    an empty one is the start of a demo that died before it wrote the marker."""
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return False
        entries = os.listdir(path)
        if not entries:
            return True
        marker = os.path.join(path, DEMO_MARKER)
        mst = os.lstat(marker)
        if not stat.S_ISREG(mst.st_mode) or mst.st_size > 64:
            return False
        with open(marker, encoding="ascii", errors="replace") as fh:
            return fh.read() == _marker_text(pid, start)
    except OSError:
        return False


def remove_stale_demos(folder: str | None = None) -> list[str]:
    """Remove the demo sandboxes in `folder` (the temp folder) whose owning process is gone;
    returns their paths. Only folders named and marked as claudetto demos of this user; a
    symlink is never followed (rmtree removes links, not what they point at)."""
    from app.core.sessions import process_running

    folder = folder or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [entry.name for entry in os.scandir(folder) if entry.name.startswith(DEMO_PREFIX)]
    except OSError:
        return removed
    for name in names:
        owner = demo_owner(name)
        if owner is None:
            continue
        pid, start = owner
        if pid == os.getpid() or process_running(pid, start):
            continue
        path = os.path.join(folder, name)
        if _is_our_demo(path, pid, start):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def make_demo_folder(folder: str | None = None) -> Path:
    """A fresh folder for this process's sandbox, named and marked with its owner."""
    from app.core.sessions import proc_start_time

    pid = os.getpid()
    start = proc_start_time(pid)
    base = tempfile.mkdtemp(prefix=f"{DEMO_PREFIX}{pid}-{start or 'x'}-", dir=folder)
    with open(os.path.join(base, DEMO_MARKER), "w", encoding="ascii") as fh:
        fh.write(_marker_text(pid, start))
    return Path(base)


class DemoRun:
    """`with DemoRun() as box:` builds the sandbox, points os.environ and the current folder at
    it, and removes it once on the way out.

    SIGTERM and SIGHUP end the run too: the first one calls `on_signal` (the TUI asks its app
    to exit, so the terminal is restored) and gives it GRACE_S to get out of the `with`; after
    that, or when there is no `on_signal`, or on a second signal, the run is cut short (a
    SystemExit, so the removal still runs). A main thread that never comes back is covered by
    a timer that removes the sandbox and ends the process itself. `signalled` keeps the
    signal, so the caller can exit with 128 + its number.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)
    GRACE_S = 3.0

    def __init__(self, *, cwd: str = "home", folder: str | None = None) -> None:
        self.cwd = cwd  # "home" or "project": where the current folder goes
        self.folder = folder
        self.on_signal: Callable[[], None] | None = None
        self.signalled: int | None = None
        self.base: Path | None = None
        self.box: Sandbox | None = None
        self._state = "new"  # new -> live -> removing -> removed
        self._lock = threading.Lock()
        self._saved: dict[str, str | None] = {}
        self._here: str | None = None
        self._handlers: dict[int, Any] = {}
        self._timer: threading.Timer | None = None

    def __enter__(self) -> Sandbox:
        remove_stale_demos(self.folder)
        self._state = "live"
        self._install_handlers()
        try:
            self.base = make_demo_folder(self.folder)
            self.box = build_sandbox(self.base)
            self._saved = {name: os.environ.get(name) for name in ENV_NAMES}
            os.environ.update(self.box.env)
            with contextlib.suppress(OSError):
                self._here = os.getcwd()
            # the current folder's repository is a known project: keep the real one out
            os.chdir(self.box.project if self.cwd == "project" else self.box.home)
        except BaseException:
            self._finish()
            raise
        return self.box

    def __exit__(self, *exc: object) -> None:
        self._finish()

    def _finish(self) -> None:
        self.remove()
        if self._timer is not None:
            self._timer.cancel()
        for signum, handler in self._handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)
        self._handlers.clear()

    def remove(self) -> None:
        """Put the environment back, stop the sandbox's processes and remove its folder; once,
        whichever thread or signal gets here first."""
        with self._lock:
            if self._state in ("removing", "removed"):
                return
            self._state = "removing"
            try:
                if self._here is not None:
                    with contextlib.suppress(OSError):
                        os.chdir(self._here)
                if self.box is not None:
                    self.box.close()
                for name, value in self._saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
                if self.base is not None:
                    shutil.rmtree(self.base, ignore_errors=True)
            finally:
                self._state = "removed"

    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; a test's thread does without
        for signum in self.SIGNALS:
            self._handlers[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        first = self.signalled is None
        if first:
            self.signalled = signum
        if self._state != "live":
            return  # the removal is under way or done: the process is on its way out
        if first and self.on_signal is not None:
            try:
                self.on_signal()
            except Exception:  # noqa: BLE001 - no app to ask (not started, or gone): cut short
                pass
            else:
                self._timer = threading.Timer(self.GRACE_S, self._give_up, args=(signum,))
                self._timer.daemon = True
                self._timer.start()
                return
        raise SystemExit(128 + signum)

    def _give_up(self, signum: int) -> None:
        """The app did not get out in time: remove the sandbox from here and end the process."""
        self.remove()
        os._exit(128 + signum)
