"""Session checkouts held, released and reclaimed, through `python -P -m hooks` as Claude runs
it: each session is a real process standing in for Claude (its sessions file names it, and
every hook runs as its child), so the Claude process behind a session is found as in life.

The seed's list: two sessions sharing a checkout; ending a session that holds nothing; the
`/clear` hand-over; release from outside the checkout; resume from the launch folder with the
reinstall note; a cut-short release finished by the next session; subagent and manual
checkouts left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core.sessions import proc_start_time
from tests.support import SandboxEnv, git, make_repo, many_files

# A stand-in for Claude: it runs each hook payload it reads (one JSON line) as its own child,
# the way Claude runs a command hook, and answers with the hook's exit code and output.
_CLAUDE = r"""
import json, subprocess, sys
for line in sys.stdin:
    payload = json.loads(line)
    cwd = payload.get("cwd")
    done = subprocess.run([sys.executable, "-P", "-m", "hooks"], input=line.encode(), capture_output=True,
                          cwd=cwd if isinstance(cwd, str) and __import__("os").path.isdir(cwd) else None)
    sys.stdout.write(json.dumps({"rc": done.returncode, "out": done.stdout.decode("utf-8", "replace"),
                                 "err": done.stderr.decode("utf-8", "replace"), "took": 0}) + "\n")
    sys.stdout.flush()
"""


class Claude:
    """One running Claude process with its sessions file; `hook()` fires an event from it."""

    def __init__(self, sandbox: SandboxEnv, session_id: str, cwd: Path) -> None:
        self.sandbox = sandbox
        self.proc = subprocess.Popen([sys.executable, "-c", _CLAUDE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.session_id = session_id
        self.cwd = cwd
        self.write_file()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def write_file(self) -> None:
        """The sessions file Claude keeps while it runs (rewritten on /clear and /resume)."""
        self.sandbox.write_session(str(self.pid), pid=self.pid, sessionId=self.session_id, cwd=str(self.cwd),
                                   procStart=proc_start_time(self.pid), status="idle")

    def hook(self, event: str, cwd: Path | None = None, **fields: Any) -> dict[str, Any]:
        payload = {"hook_event_name": event, "session_id": self.session_id,
                   "cwd": str(cwd or self.cwd), "transcript_path": "/nonexistent.jsonl", **fields}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        started = time.monotonic()
        self.proc.stdin.write(json.dumps(payload) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        answer["took"] = time.monotonic() - started
        return answer

    def start(self, source: str = "startup", cwd: Path | None = None) -> str:
        """SessionStart; the context it prints ("" when none)."""
        answer = self.hook("SessionStart", cwd, source=source)
        assert answer["rc"] == 0 and answer["err"] == "", answer
        if not answer["out"]:
            return ""
        return str(json.loads(answer["out"])["hookSpecificOutput"]["additionalContext"])

    def create(self, name: str, cwd: Path | None = None) -> Path:
        answer = self.hook("WorktreeCreate", cwd, name=name)
        assert answer["rc"] == 0, answer
        return Path(answer["out"].strip().splitlines()[-1])

    def end(self, reason: str = "prompt_input_exit", cwd: Path | None = None) -> dict[str, Any]:
        answer = self.hook("SessionEnd", cwd, reason=reason)
        assert (answer["rc"], answer["out"], answer["err"]) == (0, "", ""), answer
        return answer

    def exit(self) -> None:
        """Claude ends: its process goes, and so does its sessions file."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)
        (self.sandbox.sessions / f"{self.pid}.json").unlink(missing_ok=True)


@pytest.fixture
def claudes(sandbox: SandboxEnv) -> Iterator[Callable[[Path], Claude]]:
    made: list[Claude] = []

    def launch(cwd: Path, session_id: str | None = None) -> Claude:
        claude = Claude(sandbox, session_id or str(uuid.uuid4()), cwd)
        made.append(claude)
        return claude

    yield launch
    for claude in made:
        claude.exit()


GITIGNORE = "node_modules/\n.tmp/\n__pycache__/\n.env\nbuild/\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": GITIGNORE,
                                               "package.json": "{}\n", "package-lock.json": "{}\n"})


def registry(sandbox: SandboxEnv) -> dict[str, dict[str, Any]]:
    file = sandbox.state / "checkouts.json"
    return json.loads(file.read_text())["checkouts"] if file.exists() else {}


def logs(sandbox: SandboxEnv) -> str:
    root = sandbox.claude_tmp_root / "claudetto"
    return "".join(p.read_text() for p in sorted(root.glob("*/*.log"))) if root.exists() else ""


def wait_for(check: Callable[[], bool], deadline_s: float = 30.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def released(sandbox: SandboxEnv, checkout: Path) -> bool:
    return registry(sandbox).get(str(checkout), {}).get("state") == "released"


def fill_scratch(checkout: Path, files: int = 50) -> None:
    """node_modules (two levels), a __pycache__, and `.tmp/` with a node_modules of its own."""
    for folder in ("node_modules/pkg", "web/node_modules/lib", "src/__pycache__", ".tmp/node_modules"):
        (checkout / folder).mkdir(parents=True, exist_ok=True)
        for i in range(files):
            (checkout / folder / f"f{i}").write_text("x" * 100)
    (checkout / ".tmp" / "report.md").write_text("the session's notes\n")
    (checkout / "web" / "package.json").write_text("{}\n")
    git(checkout, "add", "web/package.json")
    git(checkout, "commit", "-q", "-m", "web")


def scratch_gone(checkout: Path) -> bool:
    return not any((checkout / p).exists() for p in ("node_modules", "web/node_modules", "src/__pycache__"))


def tmp_intact(checkout: Path, files: int = 50) -> bool:
    return ((checkout / ".tmp" / "report.md").read_text() == "the session's notes\n"
            and len(os.listdir(checkout / ".tmp" / "node_modules")) == files)


# --- the seed's list --------------------------------------------------------------------------


def test_two_sessions_share_a_checkout_and_the_last_to_end_releases_it(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    first = claudes(repo)
    checkout = first.create("shared-work")
    first.cwd = checkout
    first.write_file()
    assert first.start() == ""
    fill_scratch(checkout)
    second = claudes(checkout)
    assert second.start() == ""
    entry = registry(sandbox)[str(checkout)]
    assert entry["sessions"] == {first.session_id: True, second.session_id: True}
    assert entry["processes"][first.session_id][0] == first.pid  # the Claude process behind it
    assert entry["processes"][second.session_id][0] == second.pid

    first.end()
    first.exit()
    assert wait_for(lambda: f"kept: held by {second.session_id}" in logs(sandbox))
    assert registry(sandbox)[str(checkout)]["state"] == "active"
    assert (checkout / "node_modules" / "pkg" / "f0").exists()

    second.end()
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: scratch_gone(checkout))
    assert tmp_intact(checkout) and (checkout / "README.md").exists() and (checkout / "web" / "package.json").exists()
    entry = registry(sandbox)[str(checkout)]
    assert entry["sessions"] == {first.session_id: False, second.session_id: False}
    assert sorted(entry["last_release"]["deleted"]) == ["node_modules", "src/__pycache__", "web/node_modules"]
    journal = [json.loads(line) for line in (sandbox.state / "journal.jsonl").read_text().splitlines()]
    assert {e["path"] for e in journal if e.get("rule") == "release" and e.get("result") == "removed"} == {
        str(checkout / "node_modules"), str(checkout / "web" / "node_modules"), str(checkout / "src" / "__pycache__")}


def test_ending_a_session_that_holds_nothing_releases_nothing(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    holder = claudes(repo)
    checkout = holder.create("held")
    fill_scratch(checkout)
    bystander = claudes(repo)
    assert bystander.start() == ""
    bystander.end()
    assert wait_for(lambda: "GC removed=" in logs(sandbox))  # its SessionEnd work is done
    time.sleep(0.3)
    assert registry(sandbox)[str(checkout)]["sessions"] == {holder.session_id: True}
    assert bystander.session_id not in json.dumps(registry(sandbox))
    assert "release:" not in logs(sandbox)
    assert (checkout / "node_modules" / "pkg" / "f0").exists()


def test_clear_hands_the_checkout_over_and_the_new_session_releases_it_at_the_end(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("cleared")
    claude.cwd = checkout
    claude.write_file()
    claude.start()
    fill_scratch(checkout)
    old = claude.session_id
    claude.end("clear")
    # /clear: the same process goes on in the same folder under a new session id
    claude.session_id = str(uuid.uuid4())
    claude.write_file()
    assert claude.start("clear") == ""
    entry = registry(sandbox)[str(checkout)]
    assert entry["sessions"] == {old: False, claude.session_id: True}
    assert "handover" not in entry and entry["state"] == "active"
    time.sleep(0.3)
    assert (checkout / "node_modules" / "pkg" / "f0").exists()  # no release on /clear

    claude.end("prompt_input_exit")
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: scratch_gone(checkout)) and tmp_intact(checkout)


def test_release_from_outside_the_checkout(sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    # EnterWorktree: the session started in the repository and asked for a checkout
    claude = claudes(repo)
    claude.start()
    checkout = claude.create("entered")
    fill_scratch(checkout)
    claude.end(cwd=repo)
    assert wait_for(lambda: released(sandbox, checkout))
    assert wait_for(lambda: scratch_gone(checkout)) and tmp_intact(checkout)
    assert checkout.is_dir() and git(checkout, "status", "--porcelain") == ""


def test_resume_from_the_launch_folder_reclaims_it_with_the_reinstall_note(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("resumed")
    fill_scratch(checkout)
    (checkout / "web" / "pnpm-lock.yaml").write_text("lockfileVersion: 9\n")
    (checkout / "requirements-dev.txt").write_text("pytest\n")
    claude.end(cwd=checkout)
    claude.exit()
    assert wait_for(lambda: released(sandbox, checkout))

    # claude --resume <id>: SessionStart fires from the launch folder, before Claude enters
    resumed = claudes(repo, claude.session_id)
    note = resumed.start("resume")
    assert note.startswith(f"claudetto released this checkout ({checkout})")
    assert "node_modules, src/__pycache__, web/node_modules" in note
    assert "- `npm ci` (package-lock.json)" in note
    assert "pip install" not in note  # no venv went (only a __pycache__): nothing to fill again
    assert "- in web: `pnpm install --frozen-lockfile` (pnpm-lock.yaml)" in note
    assert "`.tmp/` and everything else were kept." in note
    entry = registry(sandbox)[str(checkout)]
    assert entry["state"] == "active" and entry["sessions"] == {claude.session_id: True}
    assert entry["processes"][claude.session_id][0] == resumed.pid
    # told once: the next session starting there hears nothing more of it
    assert claudes(checkout).start() == ""


_KILL_AFTER_FIRST_REMOVAL = """
import os, signal, sys
from app.core import release, removal
real = removal.remove
def remove(*args, **kwargs):
    done = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
    return done
removal.remove = remove
release.release_checkout(sys.argv[1])
"""


def cut_short(checkout: Path) -> None:
    """A release killed right after its first folder went: a real process, really killed."""
    done = subprocess.run([sys.executable, "-P", "-c", _KILL_AFTER_FIRST_REMOVAL, str(checkout)], check=False)
    assert done.returncode == -signal.SIGKILL


def test_a_cut_short_release_is_finished_by_the_next_session(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("interrupted")
    fill_scratch(checkout)
    (checkout / ".claude").mkdir()
    # the seed's review finding: `.tmp` declared as scratch still survives, a finish included
    (checkout / ".claude" / "claudetto.json").write_text(json.dumps(
        {"scratch": ["node_modules", "web/node_modules", ".tmp", "src/__pycache__"]}))
    claude.exit()
    cut_short(checkout)
    entry = registry(sandbox)[str(checkout)]
    assert entry["state"] == "cut_short" and entry["cut_short"]["failure"].startswith("release was cut short")
    assert not (checkout / "node_modules").exists() and (checkout / "web" / "node_modules").exists()
    assert tmp_intact(checkout)

    later = claudes(checkout)
    note = later.start()
    assert "node_modules, src/__pycache__, web/node_modules" in note and "`npm ci`" in note
    assert scratch_gone(checkout) and tmp_intact(checkout)
    entry = registry(sandbox)[str(checkout)]
    assert entry["state"] == "active" and "cut_short" not in entry
    assert entry["sessions"][later.session_id] is True


def test_subagent_and_manual_checkouts_are_left_alone(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    claude.start()
    agent = claude.create("agent-a1b2c3d4e5f6a7b8")
    workflow = claude.create("wf_1a2b3c4d-abc-3")
    manual = repo / ".claude" / "worktrees" / "by-hand"
    git(repo, "worktree", "add", "-q", "-b", "by-hand", str(manual))
    for checkout in (agent, workflow, manual):
        (checkout / "node_modules").mkdir()
        (checkout / "node_modules" / "m.js").write_text("x")
    records = registry(sandbox)
    assert (records[str(agent)]["kind"], records[str(agent)]["sessions"]) == ("agent", {})
    assert (records[str(workflow)]["kind"], records[str(workflow)]["sessions"]) == ("workflow", {})
    assert str(manual) not in records
    inside = claudes(manual)
    assert inside.start() == ""
    inside.end()
    claude.end()
    assert wait_for(lambda: logs(sandbox).count("GC removed=") >= 2)
    time.sleep(0.3)
    for checkout in (agent, workflow, manual):
        assert (checkout / "node_modules" / "m.js").exists(), checkout
    assert str(manual) not in registry(sandbox)


def test_a_record_whose_folder_is_gone_is_dropped_quietly(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("swept")
    # Claude's own startup sweep removes worktrees with git, calling no hook
    git(repo, "worktree", "remove", "--force", str(checkout))
    assert claudes(repo).start() == ""
    assert str(checkout) not in registry(sandbox)


def test_session_end_returns_at_once_whatever_the_size(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("big")
    claude.cwd = checkout
    claude.write_file()
    claude.start()
    modules = checkout / "node_modules"
    for d in range(100):  # 20,000 files: in each folder one, and 199 hard links to it (as pnpm
        # links its store): as many entries to release, a fifth of the cost to make
        (modules / f"p{d}").mkdir(parents=True)
        many_files(modules / f"p{d}", ["f0.js"], b"x")
        for i in range(1, 200):
            os.link(modules / f"p{d}" / "f0.js", modules / f"p{d}" / f"f{i}.js")
    answer = claude.end()
    assert answer["took"] < 1.5, answer
    assert wait_for(lambda: released(sandbox, checkout), 60)
    assert not modules.exists()
    trash = sandbox.state / "trash"
    assert wait_for(lambda: not trash.exists() or not any(trash.iterdir()), 60)  # the purge ended


def test_a_live_session_inside_keeps_the_checkout(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("watched")
    fill_scratch(checkout)
    # a session that started before claudetto was set up: never claimed, yet its cwd is inside
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.write_session(str(sleeper.pid), pid=sleeper.pid, sessionId="unrecorded", cwd=str(checkout / "src"),
                              procStart=proc_start_time(sleeper.pid))
        claude.end()
        assert wait_for(lambda: "kept: held by unrecorded" in logs(sandbox))
        assert (checkout / "node_modules" / "pkg" / "f0").exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_same_worktree_asked_for_again_after_a_release_gets_the_note(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    claude = claudes(repo)
    checkout = claude.create("again")
    fill_scratch(checkout)
    claude.end(cwd=checkout)
    claude.exit()
    assert wait_for(lambda: released(sandbox, checkout))
    # `claude --worktree again` later: Claude asks the hook, which finds the checkout again
    later = claudes(repo)
    assert later.create("again") == checkout
    assert registry(sandbox)[str(checkout)]["state"] == "released"  # until the session starts
    later.cwd = checkout
    later.write_file()
    assert "node_modules, src/__pycache__, web/node_modules" in later.start()
    assert registry(sandbox)[str(checkout)]["state"] == "active"


def test_the_note_and_the_memory_findings_share_one_context(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import app.core.memory
    from hooks import session_start

    claude = claudes(repo)
    checkout = claude.create("both")
    fill_scratch(checkout)
    claude.end(cwd=checkout)
    assert wait_for(lambda: released(sandbox, checkout))
    payload = {"hook_event_name": "SessionStart", "session_id": claude.session_id, "cwd": str(checkout),
               "source": "resume"}
    monkeypatch.setattr(app.core.memory, "session_start_context", lambda p: "MEMORY FINDINGS", raising=False)
    assert session_start.handle(payload) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("claudetto released this checkout") and text.endswith("\n\nMEMORY FINDINGS")

    def broken(payload: object) -> str:
        raise RuntimeError("audit failed")

    monkeypatch.setattr(app.core.memory, "session_start_context", broken, raising=False)
    assert session_start.handle(payload) == 0  # told already, and the audit fails: nothing
    assert capsys.readouterr().out == ""
    assert "SessionStart memory failed: RuntimeError: audit failed" in logs(sandbox)
