"""The sandbox builder: a realistic Claude Code environment under one folder.

One builder for the tests and for `claudetto --demo`. It makes HOME, `.claude` with session
files (live ones backed by real child processes, a stale one), projects with slugs,
transcripts and memory, the `claude-<uid>` temp tree, claudetto's gate logs, a real git
repository with worktrees in every state, GC records of outputs in the user's temp folder
and ledger entries. Content is deterministic: fixed ids, names and sizes; mtimes are set
relative to `now` with os.utime so every rule fires (old, young and live things).

The parts every screen of the dashboard needs in each of its states (checkouts active,
released and cut short, a journal of removals over several days, ledger files changed,
told and deleted, memory rot of every kind, a live session whose output grows) are in
app/sandbox/content.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
        from app.core import git

        env = {**self.box.env, "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "Demo", "GIT_AUTHOR_EMAIL": "demo@example.invalid",
               "GIT_COMMITTER_NAME": "Demo", "GIT_COMMITTER_EMAIL": "demo@example.invalid",
               "GIT_AUTHOR_DATE": "2026-01-05T10:00:00Z", "GIT_COMMITTER_DATE": "2026-01-05T10:00:00Z"}
        return git.output(args, cwd=str(cwd), env=env).strip()

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
        from app.sandbox import content

        self.with_env(lambda: content.ledger(self), "ledger")
        self.with_env(lambda: content.checkouts(self), "checkouts")
        self.with_env(lambda: content.journal(self), "journal")
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
        from app.sandbox.content import repository_files

        repository_files(self, repo)
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
                from app.sandbox.content import CHILD, growing_output

                child = subprocess.Popen([sys.executable, "-c", CHILD, *growing_output(self, sid)], stdin=subprocess.DEVNULL,
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
        from app.sandbox.content import memory_files

        memory_files(self, config / "projects" / project_slug(self.box.project) / "memory")

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
