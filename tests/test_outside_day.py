"""One whole day of a user's machine, seen as an outside suite sees it: only the contract's
commands and hook protocol (subprocesses), real files, real git, real processes; nothing of
app/ is imported. The day is built and run once (module fixture, every command's output kept),
and each test reads what the day left: the order pytest picks cannot change what they see."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support import SandboxEnv, make_sandbox, run_cli

MIN = 60.0
DAY = 86_400.0
UID = os.getuid()
QUIET = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def slug(path: Path | str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t), follow_symlinks=False)


def proc_start(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2:].split()[19]


def disk(path: Path) -> tuple[int, int, int]:
    """(regular files, their disk bytes, disk bytes with the folders) of a tree."""
    files = fbytes = dbytes = 0
    for top, _dirs, names in os.walk(path):
        dbytes += os.lstat(top).st_blocks * 512
        for name in names:
            st = os.lstat(os.path.join(top, name))
            if os.path.isfile(os.path.join(top, name)) and not os.path.islink(os.path.join(top, name)):
                files += 1
            fbytes += st.st_blocks * 512
    return files, fbytes, fbytes + dbytes


def snapshot(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for top, _dirs, names in os.walk(root):
        for name in names:
            p = os.path.join(top, name)
            out[os.path.relpath(p, root)] = Path(p).read_bytes() if os.path.isfile(p) else b"<other>"
    return out


@dataclass
class Day:
    root: Path
    env: dict[str, str]
    ctmp: Path  # realpath(CLAUDE_CODE_TMPDIR)/claude-<uid>
    utmp: Path  # realpath(TMPDIR)
    config: Path
    state: Path
    projects: dict[str, Path] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    got: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def run(self, argv: list[str], *, cwd: Path | None = None, stdin: bytes | None = None,
            extra: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(argv, input=stdin, capture_output=True, cwd=str(cwd or self.root),
                              env={**self.env, **(extra or {})}, timeout=timeout, check=False)

    def cli(self, *args: str, cwd: Path | None = None, extra: dict[str, str] | None = None,
            script: str = "claudetto") -> subprocess.CompletedProcess[bytes]:
        entry = "main" if script == "claudetto" else "gc_main"
        code = f"import sys; from app.cli import {entry}; sys.exit({entry}())"
        return self.run([sys.executable, "-P", "-c", code, *args], cwd=cwd, extra=extra)

    def hook(self, payload: dict[str, Any], cwd: Path,
             extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
        return self.run([sys.executable, "-P", "-m", "hooks"], cwd=cwd, stdin=json.dumps(payload).encode(),
                        extra=extra)

    def git(self, cwd: Path, *args: str) -> str:
        done = self.run(["git", *args], cwd=cwd)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode().strip()

    def bash(self, session: str, command: str, cwd: Path) -> None:
        """The command as Claude's Bash tool runs it, then its PostToolUse as Claude sends it."""
        done = self.run(["bash", "-c", command], cwd=cwd)
        assert done.returncode == 0, done.stderr
        post = self.hook(tool_event(session, cwd, "Bash", {"command": command},
                                    {**QUIET, "stdout": done.stdout.decode()}), cwd)
        assert (post.returncode, post.stdout, post.stderr) == (0, b"", b""), post


def tool_event(session: str, cwd: Path, tool: str, tool_input: dict[str, Any], response: Any = QUIET,
               **more: Any) -> dict[str, Any]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd),
            "transcript_path": "/none.jsonl", "tool_name": tool, "tool_input": tool_input,
            "tool_response": response, "tool_use_id": "toolu_01", "duration_ms": 12, **more}


def doc(done: subprocess.CompletedProcess[bytes]) -> Any:
    assert done.returncode == 0 and done.stderr == b"", done
    return json.loads(done.stdout)


# --- the day ------------------------------------------------------------------------------------


def build_projects(day: Day) -> None:
    for name in ("alpha", "beta", "gamma"):
        repo = day.root / "code" / name
        repo.mkdir(parents=True)
        day.git(repo, "init", "-q", "-b", "main")
        (repo / ".gitignore").write_text(".env\nnode_modules/\n")
        (repo / "README.md").write_text(f"# {name}\n")
        day.git(repo, "add", "-A")
        day.git(repo, "commit", "-q", "-m", "initial")
        day.projects[name] = repo
    alpha = day.projects["alpha"]
    trees = alpha / ".claude" / "worktrees"
    for name in ("live", "young", "dirty", "unmerged", "merged"):
        day.git(alpha, "worktree", "add", "-q", "-b", f"worktree-{name}", str(trees / name))
        day.paths[f"wt_{name}"] = trees / name
    (trees / "plain").mkdir()
    (trees / "plain" / "notes.txt").write_text("not a checkout\n")
    day.paths["wt_plain"] = trees / "plain"
    (trees / "dirty" / ".env").write_text("SECRET=1\n")
    (trees / "unmerged" / "work.txt").write_text("work\n")
    day.git(trees / "unmerged", "add", "work.txt")
    day.git(trees / "unmerged", "commit", "-q", "-m", "unmerged work")
    for name in ("live", "dirty", "unmerged", "merged", "plain"):
        age(trees / name, 31 * DAY)
    age(trees / "young", 29 * DAY)
    day.facts["merged_disk"] = disk(trees / "merged")


def build_sessions(day: Day, live_pid: int, dead_pid: int) -> None:
    sessions = day.config / "sessions"
    sessions.mkdir(parents=True)
    now_ms = int(time.time() * 1000)
    live, dead, young = (str(uuid.uuid4()) for _ in range(3))
    day.ids.update(live=live, dead=dead, young=young)
    day.paths["live_file"] = sessions / f"{live_pid}.json"
    day.paths["live_file"].write_text(json.dumps({
        "pid": live_pid, "sessionId": live, "cwd": str(day.paths["wt_live"]), "startedAt": now_ms,
        "updatedAt": now_ms, "status": "busy", "procStart": proc_start(live_pid), "version": "2.1.332",
        "kind": "interactive", "entrypoint": "cli"}))
    day.paths["dead_file"] = sessions / f"{dead_pid}.json"
    day.paths["dead_file"].write_text(json.dumps({
        "pid": dead_pid, "sessionId": dead, "cwd": str(day.projects["alpha"]), "startedAt": now_ms,
        "updatedAt": now_ms, "status": "idle", "version": "2.1.332"}))
    day.facts["live_pid"], day.facts["dead_pid"] = live_pid, dead_pid


def build_temp(day: Day) -> None:
    project = day.ctmp / slug(day.projects["alpha"])
    for key, days in (("dead", 31), ("live", 31), ("young", 29)):
        folder = project / day.ids[key]
        (folder / "scratchpad").mkdir(parents=True)
        (folder / "tasks").mkdir()
        (folder / "scratchpad" / "plan.md").write_text("plan\n" * 50)
        (folder / "tasks" / "b1.output").write_bytes(b"o" * 9000)
        age(folder / "scratchpad", days * DAY)
        age(folder / "tasks", days * DAY)
        age(folder, days * DAY)
        day.paths[f"tmp_{key}"] = folder
    for key, minutes in (("probe_old", 61), ("probe_young", 59), ("probe_mid", 45)):
        probe = day.ctmp / f"fswatch-probe-{key}"
        probe.mkdir()
        (probe / "w").write_text("w")
        age(probe, minutes * MIN)
        day.paths[key] = probe
    (project / "notes").mkdir()  # no rule names a non-uuid folder of a project folder
    (day.ctmp / "stray.txt").write_text("?")  # nor a file at the top
    logs = day.ctmp.parent / "claudetto" / slug(day.projects["alpha"])
    logs.mkdir(parents=True)
    for key, days in (("dead", 31), ("live", 31), ("young", 29)):
        log = logs / f"{day.ids[key]}.log"
        log.write_text("CLEANED folders=0 bytes=0 files=0 worktrees=0 probes=0\n")
        age(log, days * DAY)
        day.paths[f"log_{key}"] = log
    day.facts["removed_disk"] = [disk(day.paths["tmp_dead"]), disk(day.paths["probe_old"]),
                                 disk(day.paths["log_dead"].parent)]  # the logs folder: one file out of 3
    day.facts["log_disk"] = (1, os.lstat(day.paths["log_dead"]).st_blocks * 512)


def build_gc_trail(day: Day) -> None:
    """What a session made outside its project, recorded from the real Bash/Write calls."""
    sid, alpha, gamma = "gc-day", day.projects["alpha"], day.projects["gamma"]
    before = set(os.listdir(day.utmp))
    day.bash(sid, f"d=$(mktemp -d) && cd $d && git clone -q {day.projects['beta']} tool", alpha)
    made = set(os.listdir(day.utmp)) - before
    assert len(made) == 1
    day.paths["gc_temp"] = day.utmp / made.pop()
    day.paths["gc_copy"] = day.utmp / "gamma-copy"
    day.bash(sid, f"cp -r {gamma} {day.paths['gc_copy']}", alpha)
    day.paths["gc_config"] = day.utmp / "claude-cfg"
    day.paths["gc_config"].mkdir()  # what the sandboxed Claude made
    (day.paths["gc_config"] / "settings.json").write_text("{}")
    command = f"CLAUDE_CONFIG_DIR={day.paths['gc_config']} claude -p 'say hi'"
    post = day.hook(tool_event(sid, alpha, "Bash", {"command": command}, {**QUIET, "stdout": "hi\n"}), alpha)
    assert (post.returncode, post.stdout, post.stderr) == (0, b"", b"")
    day.paths["gc_scratch"] = day.utmp / "scratch-notes.md"
    day.paths["gc_scratch"].write_text("notes\n")
    post = day.hook(tool_event(sid, alpha, "Write", {"file_path": str(day.paths["gc_scratch"]),
                                                     "content": "notes\n"}, {"type": "create"}), alpha)
    assert (post.returncode, post.stdout, post.stderr) == (0, b"", b"")
    day.paths["gc_worktree"] = gamma / ".claude" / "worktrees" / "gc-wt"
    day.bash(sid, "git worktree add -q .claude/worktrees/gc-wt -b gc-wt", gamma)
    day.paths["gc_young"] = day.utmp / "young-copy"
    day.bash(sid, f"cp -r {gamma / 'README.md'} {day.paths['gc_young']}", alpha)
    for key in ("gc_temp", "gc_copy", "gc_config", "gc_scratch", "gc_worktree"):
        age(day.paths[key], 8 * DAY)
    day.ids["gc"] = sid


def build_ledger(day: Day) -> None:
    beta = day.projects["beta"]
    files = {name: beta / name for name in ("main.py", "explore.py", "agent_main.py", "calm.py")}
    for name, path in files.items():
        path.write_text(f"# {name} as Claude wrote it\n")
    ledger_sid = "ledger-day"
    events = [("Write", files["main.py"], {}),
              ("Edit", files["explore.py"], {"agent_id": "a1b2c3d", "agent_type": "Explore"}),
              ("Write", files["agent_main.py"], {"agent_type": "reviewer"}),
              ("Edit", files["calm.py"], {"agent_id": "0123456789abcdef"})]
    for tool, path, more in events:
        tool_input = {"file_path": str(path), "content": path.read_text()} if tool == "Write" else \
            {"file_path": str(path), "old_string": "x", "new_string": "y"}
        post = day.hook(tool_event(ledger_sid, beta, tool, tool_input, {"filePath": str(path)}, **more), beta)
        assert (post.returncode, post.stdout, post.stderr) == (0, b"", b""), post
    day.facts["ledger_written"] = {name: path.read_bytes() for name, path in files.items()}
    for name in ("main.py", "explore.py", "agent_main.py"):
        files[name].write_text(f"# {name} changed by the user\n")
    day.paths.update({f"ledger_{n}": p for n, p in files.items()})
    day.ids["ledger"] = ledger_sid


MEMORY_NOTES = """---
name: notes
description: what the shop remembers
metadata:
  type: project
---
- The router lives in `src/router_gone.py`.
- We render charts with jhelm 1.3.1.
- latest is `V27`
- ~~We used jhelm 1.0.0.~~
"""


def build_memory(day: Day) -> None:
    beta = day.projects["beta"]
    (beta / "build.gradle.kts").write_text('dependencies {\n    implementation("io.example:jhelm:1.5.2")\n}\n')
    (beta / "src").mkdir()
    (beta / "src" / "app.py").write_text("print('hi')\n")
    (beta / "db" / "migration").mkdir(parents=True)
    (beta / "db" / "migration" / "V27__a.sql").write_text("-- 27\n")
    (beta / "db" / "migration" / "V28__b.sql").write_text("-- 28\n")
    memory = day.config / "projects" / slug(beta) / "memory"
    memory.mkdir(parents=True)
    (day.config / ".claude.json").write_text(json.dumps({"projects": {str(beta): {"allowedTools": []}}}))
    (memory / "MEMORY.md").write_text("- [Notes](notes.md) — what the shop remembers\n"
                                      "- [Deploy](deploy.md) — how it ships\n")
    (memory / "notes.md").write_text(MEMORY_NOTES)
    (memory / "orphan.md").write_text("---\nname: orphan\ndescription: x\ntype: user\n---\n- likes tea\n")
    day.paths["memory"] = memory


def run_the_day(day: Day) -> None:
    got = day.got
    alpha = day.projects["alpha"]
    got["sessions"] = day.cli("sessions", "--json")
    got["worktrees_before"] = day.cli("worktrees", "--json", str(alpha))
    got["ledger_before"] = day.cli("ledger", "--json")
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": day.ids["ledger"], "cwd": str(day.projects["beta"]),
              "transcript_path": "/none.jsonl", "prompt": "go on"}
    got["prompt_1"] = day.hook(prompt, day.projects["beta"])
    got["prompt_2"] = day.hook(prompt, day.projects["beta"])
    got["ledger_after"] = day.cli("ledger", "--json")
    day.paths["ledger_main.py"].write_text("# changed once more\n")
    got["prompt_3"] = day.hook(prompt, day.projects["beta"])
    got["memory"] = day.cli("memory", "--json", str(day.projects["beta"]))
    # bounds from the environment, dry runs only
    got["probe_bound"] = day.cli("clean", "--dry-run", "--json", cwd=alpha, extra={"CLAUDETTO_PROBE_MAX_AGE_MIN": "44"})
    got["gc_bound"] = day.cli("gc", "--dry-run", "--json", extra={"CLAUDETTO_GC_MAX_AGE_DAYS": "9"})
    got["gc_bytes_bound"] = day.cli("gc", "--dry-run", "--json", extra={"CLAUDETTO_GC_MAX_BYTES": "0",
                                                                      "CLAUDETTO_GC_MAX_AGE_DAYS": "0"})
    got["gc_size_bound"] = day.cli("gc", "--dry-run", "--json", extra={"CLAUDETTO_GC_MAX_BYTES": "1"})
    got["sweep_bound"] = day.cli("clean", "--dry-run", "--json", cwd=alpha, extra={"CLAUDETTO_SWEEP_TIMEOUT_MS": "0"})
    got["bad_bound"] = day.cli("gc", "--dry-run", "--json", extra={"CLAUDETTO_GC_MAX_AGE_DAYS": "soon"})
    # the GC: a dry run changes nothing, then the sweep, then the other script finds nothing left
    before = snapshot(day.state)
    got["gc_dry"] = day.cli("gc", "--dry-run", "--json")
    got["gc_dry_state_same"] = snapshot(day.state) == before
    got["gc_dry_exists"] = {k: day.paths[k].exists() for k in day.paths if k.startswith("gc_")}
    got["gc_disk"] = {k: disk(day.paths[k])[2] if day.paths[k].is_dir() else os.lstat(day.paths[k]).st_blocks * 512
                      for k in day.paths if k.startswith("gc_")}
    got["gc"] = day.cli("gc", "--json")
    got["gc_after"] = {k: day.paths[k].exists() for k in day.paths if k.startswith("gc_")}
    got["gc_script"] = day.cli("--json", script="claudetto-gc")
    got["gamma_worktrees"] = day.git(day.projects["gamma"], "worktree", "list", "--porcelain")
    # the cleanup: the plain dry run, then the real one
    both = snapshot(day.state), snapshot(day.ctmp.parent)
    got["clean_dry"] = day.cli("clean", "--dry-run", cwd=alpha)
    got["clean_dry_same"] = (snapshot(day.state), snapshot(day.ctmp.parent)) == both
    got["clean_dry_exists"] = {k: day.paths[k].exists() for k in day.paths}
    got["clean"] = day.cli("clean", "--json", cwd=alpha)
    got["after_clean"] = {k: day.paths[k].exists() for k in day.paths}
    got["worktrees_after"] = day.cli("worktrees", "--json", str(alpha))
    # a session starts in alpha: at once, and its detached cleanup writes the three lines
    sid = str(uuid.uuid4())
    start = time.monotonic()
    got["session_start"] = day.hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(alpha),
                                     "transcript_path": "/none.jsonl", "source": "startup", "model": "x"}, alpha)
    got["session_start_s"] = time.monotonic() - start
    log = day.ctmp.parent / "claudetto" / slug(alpha) / f"{sid}.log"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "UNKNOWN_KEPT" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.1)
    got["session_start_log"] = log.read_text() if log.exists() else ""
    start = time.monotonic()
    got["session_end"] = day.hook({"hook_event_name": "SessionEnd", "session_id": sid, "cwd": str(alpha),
                                   "transcript_path": "/none.jsonl", "reason": "prompt_input_exit"}, alpha)
    got["session_end_s"] = time.monotonic() - start
    run_the_evening(day)


def run_the_evening(day: Day) -> None:
    got, beta = day.got, day.projects["beta"]
    create = {"hook_event_name": "WorktreeCreate", "session_id": "rel-sess", "cwd": str(beta),
              "transcript_path": "/none.jsonl", "name": "bold-oak-a3f2"}
    got["create"] = day.hook(create, beta)
    checkout = beta / ".claude" / "worktrees" / "bold-oak-a3f2"
    day.paths["checkout"] = checkout
    if checkout.is_dir():
        (checkout / "node_modules" / "left-pad").mkdir(parents=True)
        (checkout / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
        (checkout / ".tmp").mkdir()
        (checkout / ".tmp" / "report.txt").write_text("keep me\n")
    got["release_dry"] = day.cli("release", "--dry-run", "--json", str(checkout))
    got["release"] = day.cli("release", "--json", str(checkout))
    got["release_text"] = day.cli("release", str(checkout))
    got["after_release"] = {"checkout": checkout.is_dir(), "node_modules": (checkout / "node_modules").exists(),
                            "tmp": (checkout / ".tmp" / "report.txt").exists()}
    got["worktrees_beta"] = day.cli("worktrees", "--json", str(beta))
    got["release_missing"] = day.cli("release", str(day.root / "no-such-checkout"))
    notes = day.paths["memory"] / "notes.md"
    got["supersede"] = day.cli("supersede", str(notes), "--line", "8", "--correction", "We render charts with jhelm 1.5.2.")
    got["supersede_text"] = notes.read_text()
    got["memory_after"] = day.cli("memory", "--json", str(beta))
    got["supersede_bad_line"] = day.cli("supersede", str(notes), "--line", "99", "--correction", "x")
    got["supersede_missing"] = day.cli("supersede", str(day.root / "nope.md"), "--line", "1", "--correction", "x")
    got["usage_gc"] = day.cli("gc", "--bogus")
    got["usage_supersede"] = day.cli("supersede", str(notes))
    got["usage_none"] = day.cli("frobnicate")
    got["worktrees_all"] = day.cli("worktrees", "--json")  # from a folder outside every repository
    journal = day.state / "journal.jsonl"
    got["journal"] = [json.loads(line) for line in journal.read_text().splitlines()] if journal.exists() else []
    start = {"hook_event_name": "SessionStart", "session_id": str(uuid.uuid4()), "cwd": str(beta),
             "transcript_path": "/none.jsonl", "source": "startup"}
    got["beta_start"] = day.hook(start, beta)
    run_the_ledger_bound(day)
    run_setup(day)
    run_the_hooks(day)
    for name in ("sessions", "worktrees", "ledger", "memory"):
        got[f"text_{name}"] = day.cli(name, cwd=beta)
    got["text_gc_dry"] = day.cli("--dry-run", cwd=beta, script="claudetto-gc")
    got["json_first"] = day.cli("--json", "sessions")


BAD_INPUT = [b"", b"not json", b"[1, 2]", b'{"hook_event_name": 5}', b'{"hook_event_name": "Nope"}',
             b'{"hook_event_name": "PostToolUse", "tool_name": "Bash"}', b'{"hook_event_name": "UserPromptSubmit"}',
             b'{"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": "x"}', b"\xff\xfe"]
BAD_NAMES = ["../x", ".git", "a" * 65, "ok/..", "x y", "a//b"]


def run_the_hooks(day: Day) -> None:
    """The hook protocol's edges on gamma: bad input, worktree events, the memory write lint."""
    got, gamma = day.got, day.projects["gamma"]
    hook = [sys.executable, "-P", "-m", "hooks"]
    got["bad_input"] = [day.run(hook, cwd=gamma, stdin=raw) for raw in BAD_INPUT]
    base = {"session_id": "hooks-day", "cwd": str(gamma), "transcript_path": "/none.jsonl"}
    got["bad_names"] = [day.hook({**base, "hook_event_name": "WorktreeCreate", "name": n}, gamma) for n in BAD_NAMES]
    got["no_session"] = day.hook({"hook_event_name": "WorktreeCreate", "cwd": str(gamma), "name": "calm-fox-1a2b"}, gamma)
    got["slash_name"] = day.hook({**base, "hook_event_name": "WorktreeCreate", "name": "feature/login"}, gamma)
    checkout = gamma / ".claude" / "worktrees" / "feature+login"
    got["slash_branch"] = day.git(checkout, "branch", "--show-current") if checkout.is_dir() else None
    got["worktrees_gamma"] = sorted(os.listdir(gamma / ".claude" / "worktrees"))
    if checkout.is_dir():
        (checkout / "draft.txt").write_text("mine\n")
        got["remove_dirty"] = day.hook({**base, "hook_event_name": "WorktreeRemove", "worktree_path": str(checkout)}, gamma)
        got["remove_dirty_kept"] = (checkout / "draft.txt").read_text() if checkout.is_dir() else None
        (checkout / "draft.txt").unlink()
        got["remove_clean"] = day.hook({**base, "hook_event_name": "WorktreeRemove", "worktree_path": str(checkout)}, gamma)
        got["remove_clean_gone"] = not checkout.exists()
    memory = day.config / "projects" / slug(gamma) / "memory"
    topic = "---\nname: n\ndescription: d\nmetadata:\n  type: project\n---\n"
    memory.mkdir(parents=True)
    (memory / "kept.md").write_text(topic + "- x\n")  # an Edit needs a file that is there
    writes = {"no_frontmatter": ("Write", memory / "n.md", {"content": "just prose\n"}),
              "relative_date": ("Write", memory / "n.md", {"content": topic + "- We moved it last week.\n"}),
              "index_prose": ("Write", memory / "MEMORY.md", {"content": "- [N](n.md) — n\nA paragraph of prose here.\n"}),
              "edit_relative": ("Edit", memory / "kept.md", {"old_string": "- x", "new_string": "- fixed yesterday"}),
              "fine": ("Write", memory / "ok.md", {"content": topic + "- On 2026-08-11 we moved.\n"}),
              "outside": ("Write", gamma / "notes.md", {"content": "last week\n"})}
    got["lint"] = {key: day.hook({**base, "hook_event_name": "PreToolUse", "tool_name": tool, "tool_use_id": "t",
                                  "tool_input": {"file_path": str(path), **more}}, gamma)
                   for key, (tool, path, more) in writes.items()}


def run_the_ledger_bound(day: Day) -> None:
    """LEDGER_MAX_FILES=2 on a state of its own: three edits keep the last two."""
    extra = {"CLAUDETTO_HOME": str(day.root / "state-bound"), "CLAUDETTO_LEDGER_MAX_FILES": "2"}
    gamma = day.projects["gamma"]
    for name in ("one.txt", "two.txt", "three.txt"):
        (gamma / name).write_text(name)
        post = day.hook(tool_event("bound", gamma, "Write", {"file_path": str(gamma / name), "content": name},
                                   {"type": "create"}), gamma, extra)
        assert post.returncode == 0, post
    day.got["ledger_bound"] = day.cli("ledger", "--json", extra=extra)


SETTINGS = b'{\n    "cleanupPeriodDays": 30,\n    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo bye"}]}]},\n    "theme": "dark"\n}'


def run_setup(day: Day) -> None:
    """Setup on a config folder of its own, then the hook command it wrote run as Claude runs it,
    from a project that has its own app/ and hooks/ packages."""
    got, config = day.got, day.root / "cfg-setup"
    config.mkdir()
    settings = config / "settings.json"
    settings.write_bytes(SETTINGS)
    extra = {"CLAUDE_CONFIG_DIR": str(config), "CLAUDETTO_HOME": str(day.root / "state-setup")}
    got["setup_dry"] = day.cli("setup", "--dry-run", extra=extra)
    got["setup_dry_files"] = sorted(os.listdir(config)), settings.read_bytes()
    got["setup"] = day.cli("setup", "--json", extra=extra)
    got["setup_files"] = sorted(os.listdir(config))
    got["setup_settings"] = json.loads(settings.read_bytes())
    got["setup_again"] = day.cli("setup", "--json", extra=extra)
    got["setup_again_bytes"] = settings.read_bytes()
    decoy = day.root / "decoy"
    for package in ("app", "hooks"):
        (decoy / package).mkdir(parents=True)
        (decoy / package / "__init__.py").write_text(f"open({str(decoy / 'imported')!r}, 'w').write('{package}')\n")
    (decoy / "hooks" / "__main__.py").write_text("raise SystemExit(3)\n")
    (decoy / "f.txt").write_text("one\n")
    commands = {event: [h["command"] for entry in entries for h in entry["hooks"]]
                for event, entries in got["setup_settings"]["hooks"].items()}
    got["setup_commands"] = commands
    if commands.get("PostToolUse") and commands.get("UserPromptSubmit"):
        post = tool_event("decoy", decoy, "Write", {"file_path": str(decoy / "f.txt"), "content": "one\n"})
        got["installed_post"] = day.run(["sh", "-c", commands["PostToolUse"][-1]], cwd=decoy,
                                        stdin=json.dumps(post).encode(), extra=extra)
        (decoy / "f.txt").write_text("two\n")
        prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "decoy", "cwd": str(decoy),
                  "transcript_path": "/none.jsonl", "prompt": "hi"}
        got["installed_prompt"] = day.run(["sh", "-c", commands["UserPromptSubmit"][-1]], cwd=decoy,
                                          stdin=json.dumps(prompt).encode(), extra=extra)
    got["decoy_imported"] = (decoy / "imported").exists()
    got["uninstall"] = day.cli("setup", "--uninstall", extra=extra)
    got["uninstall_bytes"] = settings.read_bytes()
    got["uninstall_files"] = sorted(os.listdir(config))


@pytest.fixture(scope="module")
def day(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Day]:
    base = tmp_path_factory.mktemp("day")
    sandbox, variables = make_sandbox(base / "sb")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDETTO_", "GIT_", "CLAUDE_")) and k not in ("TMP", "TEMP")}
    env.update(variables)
    d = Day(root=base, env=env, ctmp=sandbox.claude_tmp, utmp=Path(os.path.realpath(sandbox.user_tmp)),
            config=sandbox.config, state=sandbox.state)
    d.ctmp.mkdir(mode=0o700)
    live = subprocess.Popen(["sleep", "600"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        build_projects(d)
        build_sessions(d, live.pid, gone.pid)
        build_temp(d)
        build_gc_trail(d)
        build_ledger(d)
        build_memory(d)
        run_the_day(d)
        yield d
    finally:
        live.kill()
        live.wait()


# --- sessions -----------------------------------------------------------------------------------


def test_sessions_json_names_the_live_and_the_dead_session(day: Day) -> None:
    rows = {r["session_id"]: r for r in doc(day.got["sessions"])["sessions"]}
    assert rows[day.ids["live"]] == {**rows[day.ids["live"]], "pid": day.facts["live_pid"],
                                     "cwd": str(day.paths["wt_live"]), "status": "busy", "live": True,
                                     "file": str(day.paths["live_file"])}
    assert rows[day.ids["dead"]] == {**rows[day.ids["dead"]], "pid": day.facts["dead_pid"],
                                     "cwd": str(day.projects["alpha"]), "status": "idle", "live": False,
                                     "file": str(day.paths["dead_file"])}
    assert set(rows) == {day.ids["live"], day.ids["dead"]}




# --- worktrees ----------------------------------------------------------------------------------

WORKTREE_KEYS = {"path", "project", "name", "branch", "size", "kind", "state", "sessions", "removable", "reason"}
EXPECTED_KEPT = {"live": "live", "young": "young", "plain": "not_a_worktree", "dirty": "dirty", "unmerged": "unmerged"}


def check_worktree_row(row: dict[str, Any]) -> None:
    assert set(row) >= WORKTREE_KEYS, row
    assert row["kind"] in ("session", "agent", "workflow", "manual")
    assert row["state"] in ("active", "released", "cut_short", "unmanaged")
    assert isinstance(row["removable"], bool) and isinstance(row["size"], int) and row["size"] > 0
    assert isinstance(row["sessions"], dict) and all(isinstance(v, bool) for v in row["sessions"].values())
    assert row["name"] == Path(row["path"]).name


def test_worktrees_json_names_each_checkout_of_alpha_with_its_state_and_reason(day: Day) -> None:
    alpha = day.projects["alpha"]
    rows = {Path(r["path"]).name: r for r in doc(day.got["worktrees_before"])["worktrees"]}
    assert set(rows) == {*EXPECTED_KEPT, "merged"}
    for name, row in rows.items():
        check_worktree_row(row)
        assert row["project"] == str(alpha)
        assert row["branch"] == (None if name == "plain" else f"worktree-{name}")
        assert row["removable"] is (name == "merged")
        if name in EXPECTED_KEPT:
            assert row["reason"] == EXPECTED_KEPT[name], row
    after = {Path(r["path"]).name: r for r in doc(day.got["worktrees_after"])["worktrees"]}
    assert set(after) == set(EXPECTED_KEPT)
    for name in ("live", "young", "unmerged", "plain"):  # nothing in them changed all day
        assert after[name]["size"] == disk(day.paths[f"wt_{name}"])[2], name


def test_worktrees_without_project_covers_the_projects_claude_json_and_session_files_name(day: Day) -> None:
    rows = doc(day.got["worktrees_all"])["worktrees"]
    projects = {r["project"] for r in rows}
    assert {str(day.projects["alpha"]), str(day.projects["beta"])} <= projects
    assert {Path(r["path"]).name for r in rows if r["project"] == str(day.projects["alpha"])} == set(EXPECTED_KEPT)


# --- the output GC ------------------------------------------------------------------------------

GC_KINDS = {"gc_temp": "temp", "gc_copy": "copy", "gc_config": "config", "gc_scratch": "scratch",
            "gc_worktree": "worktree", "gc_young": "copy"}
GC_KEYS = {"path", "kind", "session", "size", "status", "reason"}


def gc_rows(day: Day, key: str) -> dict[str, dict[str, Any]]:
    report = doc(day.got[key])
    assert {"dry_run", "entries", "removed", "freed"} <= set(report)
    by_path = {str(day.paths[k]): k for k in GC_KINDS}
    rows = {}
    for row in report["entries"]:
        assert set(row) >= GC_KEYS, row
        rows[by_path[row["path"]]] = row
    return rows


def test_gc_dry_run_lists_every_recorded_output_and_changes_nothing(day: Day) -> None:
    report = doc(day.got["gc_dry"])
    rows = gc_rows(day, "gc_dry")
    assert report["dry_run"] is True and set(rows) == set(GC_KINDS)
    for key, row in rows.items():
        assert (row["kind"], row["session"]) == (GC_KINDS[key], day.ids["gc"])
        assert row["size"] == day.got["gc_disk"][key], key
        assert (row["status"], row["reason"]) == (("kept", "young") if key == "gc_young" else ("would_remove", "age"))
    assert report["removed"] == 5
    assert report["freed"] == sum(r["size"] for k, r in rows.items() if k != "gc_young")
    assert day.got["gc_dry_state_same"] is True  # no record changed, byte for byte
    assert all(day.got["gc_dry_exists"].values())


def test_gc_sweep_removes_the_old_outputs_prunes_the_worktree_and_claudetto_gc_finds_the_rest(day: Day) -> None:
    report = doc(day.got["gc"])
    rows = gc_rows(day, "gc")
    assert report["dry_run"] is False and report["removed"] == 5
    assert {k: r["status"] for k, r in rows.items()} == {**{k: "removed" for k in GC_KINDS}, "gc_young": "kept"}
    assert report["freed"] == doc(day.got["gc_dry"])["freed"]
    assert day.got["gc_after"] == {**{k: False for k in GC_KINDS}, "gc_young": True}
    assert "gc-wt" not in day.got["gamma_worktrees"]  # `git worktree prune` ran in gamma
    again = doc(day.got["gc_script"])
    assert again["dry_run"] is False and (again["removed"], again["freed"]) == (0, 0)
    assert [(r["path"], r["status"], r["reason"]) for r in again["entries"]] == [
        (str(day.paths["gc_young"]), "kept", "young")]


# --- the cleanup --------------------------------------------------------------------------------


def kept_lines(day: Day) -> list[str]:
    return [f"WORKTREES_KEPT {reason} {day.paths[f'wt_{name}']}" for name, reason in EXPECTED_KEPT.items()]


def test_clean_dry_run_prints_the_three_line_kinds_and_removes_nothing(day: Day) -> None:
    done = day.got["clean_dry"]
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    cleaned = doc(day.got["clean"])["cleaned"]
    assert lines[0] == (f"CLEANED folders=3 bytes={cleaned['bytes']} files=7 worktrees=1 probes=1")
    assert sorted(lines[1:-1]) == sorted(kept_lines(day))
    assert lines[-1] == "UNKNOWN_KEPT 2"
    assert day.got["clean_dry_same"] is True
    assert all(v for k, v in day.got["clean_dry_exists"].items() if not k.startswith("gc_"))


def test_clean_json_removes_what_the_seed_names_and_counts_it(day: Day) -> None:
    report = doc(day.got["clean"])
    assert report["dry_run"] is False
    # the dead session's folder (2 files), the 61-minute probe (1), the dead session's gate log (1),
    # the old clean merged worktree (README.md, .gitignore, .git)
    assert {k: report["cleaned"][k] for k in ("folders", "files", "worktrees", "probes")} == {
        "folders": 3, "files": 7, "worktrees": 1, "probes": 1}
    files_only = day.facts["removed_disk"][0][1] + day.facts["removed_disk"][1][1] + day.facts["log_disk"][1] \
        + day.facts["merged_disk"][1]
    with_folders = day.facts["removed_disk"][0][2] + day.facts["removed_disk"][1][2] + day.facts["log_disk"][1] \
        + day.facts["merged_disk"][2]
    assert files_only <= report["cleaned"]["bytes"] <= with_folders
    assert sorted((k["reason"], k["path"]) for k in report["worktrees_kept"]) == sorted(
        (reason, str(day.paths[f"wt_{name}"])) for name, reason in EXPECTED_KEPT.items())
    assert report["unknown_kept"] == 2
    after = day.got["after_clean"]
    gone = {"tmp_dead", "probe_old", "log_dead", "wt_merged"}
    for key in ("tmp_live", "tmp_young", "probe_young", "probe_mid", "log_live", "log_young", "wt_live",
                "wt_young", "wt_dirty", "wt_unmerged", "wt_plain"):
        assert after[key] is True, key
    assert not any(after[k] for k in gone)
    assert (day.paths["wt_dirty"] / ".env").read_text() == "SECRET=1\n"


def test_session_start_returns_at_once_and_its_detached_cleanup_logs_the_report(day: Day) -> None:
    done = day.got["session_start"]
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert day.got["session_start_s"] < 1.5
    lines = [line for line in day.got["session_start_log"].splitlines()
             if line.startswith(("CLEANED ", "WORKTREES_KEPT ", "UNKNOWN_KEPT "))]
    assert lines[0] == "CLEANED folders=0 bytes=0 files=0 worktrees=0 probes=0"
    assert sorted(lines[1:-1]) == sorted(kept_lines(day))
    assert lines[-1] == "UNKNOWN_KEPT 2"


def test_session_end_returns_within_the_budget_and_prints_nothing(day: Day) -> None:
    done = day.got["session_end"]
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert day.got["session_end_s"] < 1.5


def test_the_journal_has_one_line_per_removal(day: Day) -> None:
    journal = day.got["journal"]
    for line in journal:
        assert {"time", "path", "kind", "bytes", "rule", "session"} <= set(line), line
    removed = {str(day.paths[k]) for k in GC_KINDS if k != "gc_young"} | {
        str(day.paths[k]) for k in ("tmp_dead", "probe_old", "log_dead", "wt_merged")} | {
        str(day.paths["checkout"] / "node_modules")}
    assert sorted(line["path"] for line in journal) == sorted(removed)


# --- the ledger ---------------------------------------------------------------------------------

LEDGER_AGENTS = {"main.py": "main", "explore.py": "Explore", "agent_main.py": "main", "calm.py": "subagent"}


def told_line(path: Path, agent: str) -> str:
    return f"The user or a tool changed `{path}` after the last edit of `{agent}`."


def test_ledger_json_names_each_edit_with_its_agent_hash_and_change(day: Day) -> None:
    before = {Path(r["path"]).name: r for r in doc(day.got["ledger_before"])["files"]
              if Path(r["path"]).parent == day.projects["beta"]}
    assert set(before) == set(LEDGER_AGENTS)
    for name, row in before.items():
        assert {"path", "agent", "hash", "changed", "told"} <= set(row)
        assert row["agent"] == LEDGER_AGENTS[name]
        assert row["hash"] == fnv1a64(day.facts["ledger_written"][name]), name
        assert re.fullmatch(r"[0-9a-f]{16}", row["hash"])
        assert (row["changed"], row["told"]) == (name != "calm.py", False)
    after = {Path(r["path"]).name: r for r in doc(day.got["ledger_after"])["files"]
             if Path(r["path"]).parent == day.projects["beta"]}
    assert {n: (r["changed"], r["told"]) for n, r in after.items()} == {
        n: (n != "calm.py", n != "calm.py") for n in LEDGER_AGENTS}


def test_user_prompt_submit_says_each_change_once(day: Day) -> None:
    first = day.got["prompt_1"]
    assert first.returncode == 0 and first.stderr == b""
    out = json.loads(first.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert sorted(out["hookSpecificOutput"]["additionalContext"].split("\n")) == sorted(
        told_line(day.paths[f"ledger_{n}"], a) for n, a in LEDGER_AGENTS.items() if n != "calm.py")
    assert (day.got["prompt_2"].returncode, day.got["prompt_2"].stdout) == (0, b"")
    third = json.loads(day.got["prompt_3"].stdout)
    assert third["hookSpecificOutput"]["additionalContext"] == told_line(day.paths["ledger_main.py"], "main")


def test_ledger_max_files_keeps_the_newest(day: Day) -> None:
    rows = doc(day.got["ledger_bound"])["files"]
    assert [Path(r["path"]).name for r in rows] == ["two.txt", "three.txt"]


# --- memory -------------------------------------------------------------------------------------


def findings(day: Day, key: str) -> list[tuple[str, int | None, str, str]]:
    rows = doc(day.got[key])["findings"]
    for row in rows:
        assert {"project", "file", "line", "kind", "token", "message"} <= set(row)
        assert row["project"] == str(day.projects["beta"])
        assert Path(row["file"]).parent == day.paths["memory"]
    return sorted(((Path(r["file"]).name, r["line"], r["kind"], r["token"]) for r in rows), key=str)


def test_memory_json_finds_each_kind(day: Day) -> None:
    assert findings(day, "memory") == sorted([
        ("notes.md", 7, "vanished_artifact", "src/router_gone.py"),
        ("notes.md", 8, "stale_version_pin", "jhelm 1.3.1"),
        ("notes.md", 9, "stale_sequence", "V27"),
        ("MEMORY.md", 2, "index_missing_file", "deploy.md"),
        ("orphan.md", None, "index_unlisted_file", "orphan.md")], key=str)


def test_supersede_strikes_the_line_adds_a_dated_correction_and_silences_it(day: Day) -> None:
    done = day.got["supersede"]
    assert done.returncode == 0 and done.stderr == b""
    lines = day.got["supersede_text"].splitlines()
    assert lines[7] == "- ~~We render charts with jhelm 1.3.1.~~"
    assert re.fullmatch(r"- Correction \(\d{4}-\d{2}-\d{2}\): We render charts with jhelm 1\.5\.2\.", lines[8])
    assert lines[6] == "- The router lives in `src/router_gone.py`."
    assert [k for _f, _l, k, _t in findings(day, "memory_after")].count("stale_version_pin") == 0
    assert ("notes.md", 10, "stale_sequence", "V27") in findings(day, "memory_after")


def test_session_start_in_beta_tells_the_memory_findings(day: Day) -> None:
    done = day.got["beta_start"]
    assert done.returncode == 0 and done.stderr == b""
    context = json.loads(done.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "V28__b.sql" in context["additionalContext"] and "deploy.md" in context["additionalContext"]


# --- release, errors, usage ---------------------------------------------------------------------


def test_release_deletes_the_scratch_keeps_tmp_and_the_checkout(day: Day) -> None:
    created = day.got["create"]
    assert created.returncode == 0
    assert created.stdout.decode().strip().splitlines()[-1] == str(day.paths["checkout"])
    assert doc(day.got["release"])["status"] == "released"
    assert day.got["after_release"] == {"checkout": True, "node_modules": False, "tmp": True}
    rows = doc(day.got["worktrees_beta"])["worktrees"]
    assert len(rows) == 1
    check_worktree_row(rows[0])
    assert (rows[0]["state"], rows[0]["kind"], rows[0]["sessions"]) == ("released", "session", {"rel-sess": False})


@pytest.mark.parametrize("key", ["release_missing", "supersede_bad_line", "supersede_missing"])
def test_an_error_exits_1_with_one_line_on_stderr(day: Day, key: str) -> None:
    done = day.got[key]
    assert done.returncode == 1 and done.stdout == b""
    err = done.stderr.decode()
    assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("key", ["usage_gc", "usage_supersede", "usage_none"])
def test_a_usage_error_exits_2(day: Day, key: str) -> None:
    done = day.got[key]
    assert done.returncode == 2 and done.stdout == b"" and b"Traceback" not in done.stderr


# --- bounds from the environment ----------------------------------------------------------------


def test_probe_max_age_min_override(day: Day) -> None:
    cleaned = doc(day.got["probe_bound"])["cleaned"]
    assert cleaned["probes"] == 3  # 45, 59 and 61 minutes old, all past 44


def test_gc_max_age_days_override(day: Day) -> None:
    report = doc(day.got["gc_bound"])
    assert report["removed"] == 0 and {r["reason"] for r in report["entries"]} == {"young"}


def test_gc_max_bytes_override_takes_the_young_output_by_size(day: Day) -> None:
    rows = gc_rows(day, "gc_size_bound")
    assert (rows["gc_young"]["status"], rows["gc_young"]["reason"]) == ("would_remove", "size")


def test_a_bound_that_is_no_number_is_no_traceback(day: Day) -> None:
    done = day.got["bad_bound"]
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert json.loads(done.stdout)["removed"] == 5  # the default stands


def test_sweep_timeout_ms_override_stops_the_cleanup(day: Day) -> None:
    done = day.got["sweep_bound"]
    report = doc(done) if done.stderr == b"" else json.loads(done.stdout)
    assert done.returncode == 0 and report["cleaned"]["folders"] == 0


# --- setup --------------------------------------------------------------------------------------

EVENTS = {"SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse", "WorktreeCreate",
          "WorktreeRemove"}


def test_setup_dry_run_changes_nothing_and_setup_adds_every_event_with_a_backup(day: Day) -> None:
    assert day.got["setup_dry"].returncode == 0
    assert day.got["setup_dry_files"] == (["settings.json"], SETTINGS)
    assert doc(day.got["setup"])["changed"] is True
    files = day.got["setup_files"]
    assert len(files) == 2 and re.fullmatch(r"settings\.json\.bak-\S+", files[1])
    settings = day.got["setup_settings"]
    assert (settings["cleanupPeriodDays"], settings["theme"]) == (30, "dark")
    assert settings["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "echo bye"}]}]
    commands = day.got["setup_commands"]
    assert set(commands) >= EVENTS
    for event in EVENTS:
        assert len(commands[event]) == 1 and re.search(r" -[IP] ", commands[event][0]), commands[event]
    assert doc(day.got["setup_again"])["changed"] is False
    assert json.loads(day.got["setup_again_bytes"]) == settings


def test_the_installed_hook_command_runs_from_a_project_with_its_own_app_and_hooks(day: Day) -> None:
    post, prompt = day.got["installed_post"], day.got["installed_prompt"]
    assert (post.returncode, post.stdout, post.stderr) == (0, b"", b"")
    assert prompt.returncode == 0 and prompt.stderr == b""
    context = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context == told_line(day.root / "decoy" / "f.txt", "main")
    assert day.got["decoy_imported"] is False


def test_setup_uninstall_gives_back_the_settings_byte_for_byte(day: Day) -> None:
    assert day.got["uninstall"].returncode == 0
    assert day.got["uninstall_bytes"] == SETTINGS
    assert all(name == "settings.json" or name.startswith("settings.json.bak-")
               for name in day.got["uninstall_files"])


# --- the hook protocol --------------------------------------------------------------------------


def test_bad_hook_input_exits_0_and_prints_nothing(day: Day) -> None:
    assert [(d.returncode, d.stdout, d.stderr) for d in day.got["bad_input"]] == [(0, b"", b"")] * len(BAD_INPUT)


def one_line_failure(done: subprocess.CompletedProcess[bytes]) -> bool:
    err = done.stderr.decode()
    return done.returncode != 0 and done.stdout.strip() == b"" and err.count("\n") == 1 and err.endswith("\n")


def test_worktree_create_fails_loud_on_a_name_claude_refuses_and_without_session_id(day: Day) -> None:
    assert all(one_line_failure(d) for d in day.got["bad_names"]), day.got["bad_names"]
    assert one_line_failure(day.got["no_session"])


def test_worktree_create_maps_slash_to_plus_and_prints_the_path_last(day: Day) -> None:
    done = day.got["slash_name"]
    checkout = day.projects["gamma"] / ".claude" / "worktrees" / "feature+login"
    assert done.returncode == 0 and done.stdout.decode().strip().splitlines()[-1] == str(checkout)
    assert day.got["slash_branch"] == "worktree-feature+login"
    assert day.got["worktrees_gamma"] == ["feature+login"]  # no folder for a refused name


def test_worktree_remove_keeps_a_dirty_checkout_with_exit_1_and_removes_a_clean_one(day: Day) -> None:
    assert one_line_failure(day.got["remove_dirty"]) and day.got["remove_dirty"].returncode == 1
    assert day.got["remove_dirty_kept"] == "mine\n"
    assert (day.got["remove_clean"].returncode, day.got["remove_clean"].stdout) == (0, b"")
    assert day.got["remove_clean_gone"] is True


def test_the_memory_write_lint_denies_what_the_seed_names_and_nothing_else(day: Day) -> None:
    lint = day.got["lint"]
    for key in ("no_frontmatter", "relative_date", "index_prose", "edit_relative"):
        done = lint[key]
        assert done.returncode == 0 and done.stderr == b"", key
        out = json.loads(done.stdout)["hookSpecificOutput"]
        assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny"), key
        assert out["permissionDecisionReason"].strip(), key
    for key in ("fine", "outside"):
        assert (lint[key].returncode, lint[key].stdout, lint[key].stderr) == (0, b"", b""), key


@pytest.mark.parametrize("key", ["text_sessions", "text_worktrees", "text_ledger", "text_memory", "text_gc_dry"])
def test_plain_text_commands_succeed_without_a_traceback(day: Day, key: str) -> None:
    done = day.got[key]
    assert done.returncode == 0 and done.stdout.strip() and b"Traceback" not in done.stderr


def test_json_before_the_command_is_the_same_document(day: Day) -> None:
    assert doc(day.got["json_first"]) == doc(day.got["sessions"])


# --- settings the user wrote --------------------------------------------------------------------


def test_a_huge_cleanup_period_keeps_every_session_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The FACTS: cleanupPeriodDays is a positive integer. 2**31 is one: no folder is that old."""
    (sandbox.config / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 2**31}))
    folder = sandbox.claude_tmp / "-work-proj" / str(uuid.uuid4())
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "scratchpad" / "plan.md").write_text("the user's plan\n")
    age(folder, 40 * DAY)
    done = run_cli("clean", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cleaned"]["folders"] == 0 and folder.exists()



@pytest.mark.parametrize("text", ['{"theme": "dark"}\n', '\ufeff{"theme":"dark", "model": "caf\\u00e9"}',
                                  '{\n  "theme": "dark",\n  "hooks": {}\n}\n', '  {"hooks": {"Stop": []}}  \n'],
                         ids=["one-line", "bom-escaped", "empty-hooks", "blank-around"])
def test_setup_then_uninstall_gives_any_settings_file_back_byte_for_byte(sandbox: SandboxEnv, text: str) -> None:
    """A file on one line (a tool's `echo '{...}' > settings.json`) or with an empty `hooks`
    is no less the user's: the uninstall gives back the bytes the install found."""
    settings = sandbox.config / "settings.json"
    settings.write_bytes(text.encode())
    assert run_cli("setup").returncode == 0
    assert settings.read_bytes() != text.encode()
    done = run_cli("setup", "--uninstall")
    assert done.returncode == 0 and done.stderr == ""
    assert settings.read_bytes() == text.encode()


def test_an_uninstall_keeps_what_the_user_changed_since_the_install(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_bytes(b'{"theme": "dark"}\n')
    assert run_cli("setup").returncode == 0
    changed = json.loads(settings.read_bytes())
    changed["theme"] = "light"  # Claude's /config saves the file whole
    settings.write_text(json.dumps(changed, indent=2))
    assert run_cli("setup", "--uninstall").returncode == 0
    assert json.loads(settings.read_bytes()) == {"theme": "light"}
