"""Each output record names the Claude process whose call made it (app/core/claude_process.py).

A real, long-lived "fake Claude" process writes its own `sessions/<pid>.json`, as Claude does,
and runs the hook as Claude does: through `sh -c`, with the payload on stdin. The record must
name that process and its start time, whatever shells lie between it and the hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import paths
from app.core.claude_process import MAX_LEVELS, claude_process, start_of
from app.core.gc_records import read_records
from tests.support import ROOT, SandboxEnv, hook_modules, run_hook

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads start times from /proc")

#: A stand-in for Claude: writes `sessions/<own pid>.json` (procStart right, wrong or absent),
#: runs HOOK_COMMAND through `sh -c` with the payload file on stdin, prints its pid, start time
#: and the hook's exit code, then stays alive, as a running Claude does, until stdin closes.
FAKE_CLAUDE = r"""
import json, os, subprocess, sys

mode, payload, command = sys.argv[1:4]
with open(f"/proc/{os.getpid()}/stat", "rb") as fh:
    start = fh.read().rsplit(b")", 1)[1].split()[19].decode()
fields = {"pid": os.getpid(), "sessionId": "first-id", "cwd": os.getcwd(), "status": "busy"}
if mode == "right":
    fields["procStart"] = start
elif mode == "wrong":
    fields["procStart"] = str(int(start) + 12345)  # a file a crashed Claude left, its pid reused
sessions = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "sessions")
os.makedirs(sessions, exist_ok=True)
with open(os.path.join(sessions, f"{os.getpid()}.json"), "w") as fh:
    json.dump(fields, fh)
with open(payload, "rb") as fh:
    done = subprocess.run(["sh", "-c", command], stdin=fh)
print(os.getpid(), start, done.returncode, flush=True)
sys.stdin.read()
"""

#: The hook as Claude's shell runs it; `; true` keeps sh from exec'ing python in its place,
#: so a real shell process lies between the fake Claude and the hook.
HOOK = f'"{sys.executable}" -P -m hooks; true'


class FakeClaude:
    """One running fake Claude (see FAKE_CLAUDE) that has run the hook once."""

    def __init__(self, tmp_path: Path, payload: dict[str, object], *, mode: str = "right",
                 command: str = HOOK) -> None:
        script = tmp_path / "fake_claude.py"
        script.write_text(FAKE_CLAUDE)
        data = tmp_path / f"payload-{len(list(tmp_path.glob('payload-*')))}.json"
        data.write_text(json.dumps(payload))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, str(script), mode, str(data), command],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
        assert self.proc.stdout is not None
        pid, start, code = self.proc.stdout.readline().split()
        self.pid, self.start, self.hook_code = int(pid), start, int(code)

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


def write_call(sandbox: SandboxEnv, name: str, session: str = "first-id") -> dict[str, object]:
    """A Write that created a scratch file in the user's temp folder, as PostToolUse reports it."""
    target = Path(os.path.realpath(sandbox.user_tmp)) / name
    target.write_text("notes\n")
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(sandbox.root),
            "tool_name": "Write", "tool_input": {"file_path": str(target), "content": "notes\n"},
            "tool_response": {"type": "create", "filePath": str(target)}, "duration_ms": 15}


def stat_start(pid: int) -> str:
    """Field 22 of /proc/<pid>/stat, read here independently of the code under test."""
    fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    return fields[19].decode()


def test_the_record_names_the_claude_process_above_the_hooks_shell(sandbox: SandboxEnv, tmp_path: Path) -> None:
    claude = FakeClaude(tmp_path, write_call(sandbox, "plan.md"))
    try:
        assert claude.hook_code == 0
        (record,) = read_records("first-id")
        assert record.kind == "scratch" and record.claude_pid == claude.pid
        assert record.claude_start == claude.start == stat_start(claude.pid) == start_of(claude.pid)
        raw = json.loads(paths.gc_records_file("first-id").read_text())["records"][0]
        assert (raw["claude_pid"], raw["claude_start"]) == (claude.pid, claude.start)
    finally:
        claude.stop()


def test_after_clear_the_new_id_records_the_same_process(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # `/clear` gives the running session a new id; both records name the one Claude process,
    # which is what keeps the first id's outputs in use while it runs.
    first = FakeClaude(tmp_path, write_call(sandbox, "before-clear.md"))
    first.stop()
    claude = FakeClaude(tmp_path, write_call(sandbox, "after-clear.md", session="second-id"))
    try:
        (old,) = read_records("first-id")
        (new,) = read_records("second-id")
        assert new.claude_pid == claude.pid and new.claude_start == stat_start(claude.pid)
        assert old.claude_pid == first.pid and old.claude_start == first.start
    finally:
        claude.stop()


def test_several_shells_between_claude_and_the_hook(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp_path / "hook.sh").write_text(HOOK + "\n")
    nested = "sh -c 'sh hook.sh; true'; true"  # fake Claude -> sh -> sh -> sh hook.sh -> the hook
    claude = FakeClaude(tmp_path, write_call(sandbox, "deep.md"), command=nested)
    try:
        assert claude.hook_code == 0
        (record,) = read_records("first-id")
        assert (record.claude_pid, record.claude_start) == (claude.pid, stat_start(claude.pid))
    finally:
        claude.stop()


def test_a_sessions_file_whose_start_is_another_process_is_passed_over(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # The nearest ancestor with a sessions file has another procStart (its pid was reused):
    # it is no Claude, so the walk goes on up; above it is the test, with no file: None.
    stale = FakeClaude(tmp_path, write_call(sandbox, "stale.md"), mode="wrong")
    try:
        (record,) = read_records("first-id")
        assert record.claude_pid is None and record.claude_start is None
    finally:
        stale.stop()
    # A file without procStart (an older Claude) is taken on its name.
    plain = FakeClaude(tmp_path, write_call(sandbox, "plain.md", session="other"), mode="none")
    try:
        (record,) = read_records("other")
        assert (record.claude_pid, record.claude_start) == (plain.pid, stat_start(plain.pid))
    finally:
        plain.stop()


def test_no_sessions_file_among_the_ancestors_records_none(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # A running process with a sessions file that is no ancestor of the hook is not taken.
    other = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(other.pid), pid=other.pid, sessionId="first-id", procStart=stat_start(other.pid))
        done = run_hook(write_call(sandbox, "orphan.md"), cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    finally:
        other.kill()
        other.wait()
    (record,) = read_records("first-id")
    assert record.claude_pid is None and record.claude_start is None
    raw = json.loads(paths.gc_records_file("first-id").read_text())["records"][0]
    assert raw["claude_pid"] is None and raw["claude_start"] is None


#: `sh levels.sh N` nests N more shells, then the innermost writes its pid and sleeps.
LEVELS = """if [ "$1" -gt 0 ]; then sh levels.sh $(($1 - 1)) "$2"; true; else echo $$ > inner-$2.pid; exec sleep 60; fi
"""


def _innermost_of(levels: int, tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    import time

    (tmp_path / "levels.sh").write_text(LEVELS)
    chain = subprocess.Popen(["sh", "levels.sh", str(levels), str(levels)], cwd=tmp_path)
    file = tmp_path / f"inner-{levels}.pid"
    deadline = time.monotonic() + 10
    while not (file.exists() and file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return chain, int(file.read_text())


def test_the_walk_stops_after_max_levels_and_at_pid_1(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # This test process plays Claude; the walk starts at the innermost of a chain of shells.
    me = (os.getpid(), stat_start(os.getpid()))
    sandbox.write_session(str(os.getpid()), pid=os.getpid(), procStart=me[1])
    assert claude_process(os.getpid()) == me
    assert claude_process(1) is None
    # innermost (1), its N shells above, then this process: N + 2 levels looked at.
    near, inner = _innermost_of(MAX_LEVELS - 2, tmp_path)
    far, too_deep = _innermost_of(MAX_LEVELS - 1, tmp_path)
    try:
        assert claude_process(inner) == me
        assert claude_process(too_deep) is None
    finally:
        for chain, pid in ((near, inner), (far, too_deep)):
            os.kill(pid, 9)
            chain.wait(timeout=10)
    os.remove(sandbox.sessions / f"{os.getpid()}.json")
    assert claude_process(os.getpid()) is None


def test_old_records_without_the_process_fields_still_read(sandbox: SandboxEnv) -> None:
    file = paths.gc_records_file("s9")
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps({"session": "s9", "records": [
        {"path": "/tmp/a", "kind": "temp", "session": "s9", "time": 5, "cwd": "/p"},
        {"path": "/tmp/b", "kind": "temp", "session": "s9", "time": 6, "cwd": "/p", "claude_pid": 4321,
         "claude_start": "98765"},
        {"path": "/tmp/c", "kind": "temp", "session": "s9", "time": 7, "cwd": "/p", "claude_pid": True,
         "claude_start": 12},
        {"path": "/tmp/d", "kind": "temp", "session": "s9", "time": 8, "cwd": "/p", "claude_pid": "4321",
         "claude_start": ""},
    ]}))
    assert [(r.path, r.claude_pid, r.claude_start) for r in read_records("s9")] == [
        ("/tmp/a", None, None), ("/tmp/b", 4321, "98765"), ("/tmp/c", None, None), ("/tmp/d", None, None)]


def test_finding_the_process_costs_the_hot_path_nothing_new(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # A call that makes nothing never looks for the process; one that records does, without
    # subprocess (only a system without /proc runs ps) and without json or pathlib.
    plain = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
             "tool_input": {"file_path": str(tmp_path / "in-project.md"), "content": "x"}, "tool_response": {}}
    loaded = hook_modules(plain, tmp_path)
    assert "app.core.recorder" in loaded and {"app.core.claude_process", "app.core.created"} & loaded == set()
    loaded = hook_modules(write_call(sandbox, "scratch.md", session="s1"), tmp_path)
    assert "app.core.claude_process" in loaded and len(read_records("s1")) == 1
    assert {"subprocess", "json", "pathlib", "typing", "dataclasses"} & loaded == set()
