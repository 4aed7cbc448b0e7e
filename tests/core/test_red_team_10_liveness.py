"""Red team, round ten: liveness against what Claude Code 2.1.332 really does, one fact of
/work/shared/CLAUDE_CODE_FACTS.md at a time. Each case drives the real sequence: a stand-in
Claude process that runs every hook as its own child (tests/hooks/test_checkouts.py `Claude`),
its sessions file written and rewritten as Claude writes it, sweeps through the CLI.

The facts: `/clear` and `/resume` rewrite `sessionId` in the same process's file (the old
id's folders while the process lives on); an in-process fork or compact; two Claudes resumed
on one id; the older `pid-<n>.json`; a pid, a `procStart` or a `pidDomain` of another shape;
a crash that leaves the file behind and a pid reused since; the project slug of a long or a
non-ASCII cwd, two cwds of one slug; a payload's `scratchpad_dir`, `cwd` and `session_id` of
other shapes.

Losses found and fixed: an id a running Claude had before `/clear`, `/resume` or a fork (or
the parent id a `--fork-session` Claude's SessionStart names) was dead the moment its file
named another one, and its folder (scratchpad, a background task's
output Claude appends to) went at the next cleanup (app/core/earlier_sessions.py); a
`pidDomain` that is not text was read as this machine's; a `pid` field of 1 or past any pid
made a running Claude's file dead; a Claude whose `CLAUDE_CONFIG_DIR` is relative (or holds a
`~` no shell expanded) went unseen, and its session folders went; a teammate of an agent team
(its own process and id, no sessions file) was dead to every sweep but its own hooks', its
folder and its outputs with it; a FIFO in place of the sessions file of the Claude above hung
SessionStart and SessionEnd. Everything else here held
when it was written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core import paths, sessions
from app.core.claude_process import start_of
from tests.hooks.test_checkouts import _CLAUDE, Claude, wait_for
from tests.support import SandboxEnv, execed, run_cli

DAY = 86400.0
OLD = 40 * DAY  # past the default cleanupPeriodDays (30)


@pytest.fixture
def claudes(sandbox: SandboxEnv) -> Iterator[Callable[..., Claude]]:
    """Stand-in Claude processes, each ended (and its sessions file gone) at the test's end."""
    made: list[Claude] = []

    def launch(cwd: Path, session_id: str | None = None) -> Claude:
        made.append(Claude(sandbox, session_id or str(uuid.uuid4()), cwd))
        return made[-1]

    yield launch
    for claude in made:
        claude.exit()


def session_folder(sandbox: SandboxEnv, cwd: Path | str, session_id: str, *, age_s: float = OLD) -> Path:
    """`claude-<uid>/<slug>/<session>/` as Claude leaves it: a scratchpad note and a
    background task's output, the folder itself `age_s` old (its own mtime)."""
    folder = sandbox.claude_tmp / paths.project_slug(str(cwd)) / session_id
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "tasks").mkdir()
    (folder / "scratchpad" / "plan.md").write_text("the plan\n")
    (folder / "tasks" / "b1a2c3d4.output").write_text("npm run dev: listening\n")
    then = time.time() - age_s
    for path in (folder / "scratchpad", folder / "tasks", folder):
        os.utime(path, (then, then))
    return folder


def intact(folder: Path) -> bool:
    return (folder / "scratchpad" / "plan.md").is_file() and (folder / "tasks" / "b1a2c3d4.output").is_file()


def clean(*projects: Path) -> dict[str, Any]:
    done = run_cli("clean", "--json", *map(str, projects))
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def gc_rows() -> dict[str, tuple[str, str]]:
    done = run_cli("gc", "--json")
    assert done.returncode == 0, done.stderr
    return {e["path"]: (e["status"], e["reason"]) for e in json.loads(done.stdout)["entries"]}


def settled(sandbox: SandboxEnv) -> None:
    """Wait for the detached jobs the hooks started (their command line names their payload,
    in this sandbox's state folder) to end: a sweep of the test's own must not race them."""
    marker = str(sandbox.state).encode()

    def running() -> bool:
        for name in os.listdir("/proc"):
            try:
                line = Path(f"/proc/{name}/cmdline").read_bytes() if name.isdigit() else b""
            except OSError:
                continue
            if b"app.core.jobs" in line and marker in line:
                return True
        return False

    assert wait_for(lambda: not running())


def clear(claude: Claude, reason: str = "clear") -> str:
    """`/clear` (or an in-process `/resume`): SessionEnd for the old id, the same process's file
    rewritten with a new one, SessionStart for it. The old id."""
    old = claude.session_id
    claude.end(reason)
    claude.session_id = str(uuid.uuid4())
    claude.write_file()
    claude.start("clear" if reason == "clear" else "resume")
    return old


# --- /clear and /resume: one process, a new id ---------------------------------------------


def test_after_clear_the_old_ids_folder_stays_while_its_claude_runs_and_goes_after(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    # The task's output is written by Claude itself (node appends what the job's pipe gives):
    # no process holds the file, and the sessions file names the new id only.
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    claude.start()
    settled(sandbox)
    folder = session_folder(sandbox, project, claude.session_id)
    clear(claude)
    settled(sandbox)
    assert intact(folder)  # the SessionStart(clear) cleanup itself
    clean(project)
    assert intact(folder)
    claude.exit()
    clean(project)
    assert not folder.exists()  # its process gone, old: it goes


@pytest.mark.parametrize("reason", ["clear", "resume"])
def test_a_cleanup_between_session_end_and_the_new_sessions_start_keeps_the_old_ids_folder(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude], reason: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    claude.start()
    settled(sandbox)
    folder = session_folder(sandbox, project, claude.session_id)
    claude.end(reason)
    claude.session_id = str(uuid.uuid4())
    claude.write_file()  # rewritten; the SessionStart of the new id has not come yet
    clean(project)
    assert intact(folder)
    claude.start("clear" if reason == "clear" else "resume")
    settled(sandbox)
    assert intact(folder)


def test_an_output_recorded_before_clear_stays_through_the_end_start_pair(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    claude.start()
    made = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True,
                               env=dict(os.environ)).stdout.strip())
    (made / "a.o").write_text("object\n")
    answer = claude.hook("PostToolUse", tool_name="Bash", tool_input={"command": "mktemp -d"},
                         tool_response={"stdout": f"{made}\n", "stderr": "", "interrupted": False})
    assert answer["rc"] == 0, answer
    then = time.time() - 10 * DAY
    os.utime(made, (then, then))
    claude.end("clear")
    claude.session_id = str(uuid.uuid4())
    claude.write_file()
    assert gc_rows()[str(made)] == ("kept", "live")
    claude.start("clear")
    assert gc_rows()[str(made)] == ("kept", "live")
    assert (made / "a.o").is_file()


def test_an_in_process_fork_without_a_session_end_keeps_the_parents_folder_while_it_runs(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    # `source: fork`: the same process goes on under a new id; no SessionEnd for the parent.
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    claude.start()
    settled(sandbox)
    folder = session_folder(sandbox, project, claude.session_id)
    claude.session_id = str(uuid.uuid4())
    claude.write_file()
    claude.start("fork")
    settled(sandbox)
    clean(project)
    assert intact(folder)


@pytest.mark.parametrize("hook_id", [
    "parent",  # as 2.1.x reports it (anthropics/claude-code#39355): the hook names the id resumed
    pytest.param("fork", marks=pytest.mark.xfail(strict=True, reason="limit: a fork in a new process that "
                                                  "names only its own id leaves nothing linking it to its parent")),
])
def test_a_fork_session_in_a_new_claude_keeps_its_parents_folder_while_it_runs(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude], hook_id: str) -> None:
    # `claude --resume X --fork-session`: a new process whose file names the fork's id; the
    # parent's scratchpad is in the conversation it goes on with.
    project = tmp_path / "proj"
    project.mkdir()
    parent = str(uuid.uuid4())
    folder = session_folder(sandbox, project, parent)
    fork = claudes(project)
    named: dict[str, Any] = {"session_id": parent} if hook_id == "parent" else {}
    answer = fork.hook("SessionStart", source="resume", **named)
    assert answer["rc"] == 0, answer
    settled(sandbox)
    clean(project)
    assert intact(folder)


def test_compact_keeps_the_id_and_its_folder(sandbox: SandboxEnv, tmp_path: Path,
                                             claudes: Callable[..., Claude]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    claude.start()
    settled(sandbox)
    folder = session_folder(sandbox, project, claude.session_id)
    claude.start("compact")
    settled(sandbox)
    assert intact(folder)


def test_two_claudes_resumed_on_one_id_one_ending_keeps_the_folder_for_the_other(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    first = claudes(project)
    second = claudes(project, first.session_id)  # `claude --resume <id>` in a second terminal
    first.start()
    second.start("resume")
    settled(sandbox)
    folder = session_folder(sandbox, project, first.session_id)
    first.end("prompt_input_exit")
    first.exit()
    settled(sandbox)
    clean(project)
    assert intact(folder)


def test_a_hand_over_whose_file_was_rewritten_before_the_session_end_still_keeps_the_old_id(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    # claudetto installed mid-session (no SessionStart noted the old id), and Claude rewrote
    # its file before the SessionEnd hook ran: the Claude above names only the new id.
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    old = claude.session_id
    folder = session_folder(sandbox, project, old)
    claude.session_id = str(uuid.uuid4())
    claude.write_file()
    answer = claude.hook("SessionEnd", reason="clear", session_id=old)
    assert answer["rc"] == 0, answer
    clean(project)
    assert intact(folder)


def test_an_id_resumed_elsewhere_then_cleared_here_stays_when_the_other_claude_ends_it(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    # Two terminals on one id; the first `/clear`s, the second exits: the first still ran the
    # id and may `/resume` it (both appended to its transcript): what it holds stays.
    project = tmp_path / "proj"
    project.mkdir()
    first = claudes(project)
    shared = first.session_id
    second = claudes(project, shared)
    first.start()
    second.start("resume")
    settled(sandbox)
    folder = session_folder(sandbox, project, shared)
    made = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True,
                               env=dict(os.environ)).stdout.strip())
    answer = second.hook("PostToolUse", tool_name="Bash", tool_input={"command": "mktemp -d"},
                         tool_response={"stdout": f"{made}\n", "stderr": "", "interrupted": False})
    assert answer["rc"] == 0, answer
    then = time.time() - 10 * DAY
    os.utime(made, (then, then))
    clear(first)
    settled(sandbox)
    second.end("prompt_input_exit")
    second.exit()  # Claude exits once its SessionEnd hooks return: the sweep finds its file gone
    settled(sandbox)
    assert made.is_dir()
    assert gc_rows()[str(made)] == ("kept", "live")
    clean(project)
    assert intact(folder)
    first.exit()
    assert gc_rows()[str(made)] == ("removed", "age")


def test_a_noted_id_of_a_crashed_claude_whose_pid_runs_another_process_is_dead(
        sandbox: SandboxEnv, live_pid: int) -> None:
    ticks = start_of(live_pid)
    assert ticks is not None
    sandbox.state.mkdir(parents=True, exist_ok=True)
    notes = sandbox.state / "claude-processes.json"
    for start, live in ((str(int(ticks) - 3), False), (ticks, True)):
        notes.write_text(json.dumps({"processes": {str(live_pid): {"start": start, "sessions": {"s-was": "/w"}}}}))
        assert ("s-was" in sessions.liveness().ids) is live


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"processes": []}', b'{"processes": {"x": 1}}',
                                     b'{"processes": {"12": {"start": 5, "sessions": []}}}', b"\xff\xfe"])
def test_a_notes_file_of_another_shape_is_read_as_empty_and_written_anew(
        sandbox: SandboxEnv, live_pid: int, content: bytes) -> None:
    from app.core import earlier_sessions

    sandbox.state.mkdir(parents=True, exist_ok=True)
    notes = sandbox.state / earlier_sessions.FILE_NAME
    notes.write_bytes(content)
    assert earlier_sessions.running_sessions() == []
    ticks = start_of(live_pid)
    assert ticks is not None
    earlier_sessions.note(live_pid, ticks, "s-noted", "/w")
    assert [s.session_id for s in earlier_sessions.running_sessions()] == ["s-noted"]
    assert "s-noted" in sessions.liveness().ids


class Teammate(Claude):
    """A teammate of an agent team in a tmux pane: its own Claude process and session id,
    started with `--agent-id` and `--parent-session-id`, and no sessions file at all
    (anthropics/claude-code#75190)."""

    def __init__(self, sandbox: SandboxEnv, cwd: Path, lead: str) -> None:  # noqa: D107
        self.sandbox = sandbox
        self.proc = execed(subprocess.Popen([sys.executable, "-c", _CLAUDE, "--agent-id", "kiln@team",
                                             "--parent-session-id", lead], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True))
        self.session_id = str(uuid.uuid4())
        self.cwd = cwd

    def write_file(self) -> None:
        """A teammate writes none."""


def test_a_teammate_that_keeps_no_sessions_file_keeps_its_folder_and_outputs_while_it_runs(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    lead = claudes(project)
    lead.start()
    mate = Teammate(sandbox, project, lead.session_id)
    try:
        mate.start()
        folder = session_folder(sandbox, project, mate.session_id)
        made = Path(subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True,
                                   env=dict(os.environ)).stdout.strip())
        answer = mate.hook("PostToolUse", tool_name="Bash", tool_input={"command": "mktemp -d"},
                           tool_response={"stdout": f"{made}\n", "stderr": "", "interrupted": False})
        assert answer["rc"] == 0, answer
        then = time.time() - 10 * DAY
        os.utime(made, (then, then))
        settled(sandbox)
        assert gc_rows()[str(made)] == ("kept", "live")
        clean(project)
        assert intact(folder)
    finally:
        mate.exit()
    assert gc_rows()[str(made)] == ("removed", "age")
    clean(project)
    assert not folder.exists()


@pytest.mark.parametrize("event", ["SessionStart", "SessionEnd"])
def test_a_fifo_in_place_of_the_sessions_file_of_the_claude_above_never_hangs_a_hook(
        sandbox: SandboxEnv, tmp_path: Path, event: str) -> None:
    # the hook's parent (this test) looks for its own sessions file on the way up
    from tests.support import run_hook

    sandbox.sessions.mkdir(parents=True)
    os.mkfifo(sandbox.sessions / f"{os.getpid()}.json")
    done = run_hook({"hook_event_name": event, "session_id": str(uuid.uuid4()), "cwd": str(tmp_path),
                     "source": "clear", "reason": "clear"}, cwd=tmp_path, timeout=20)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    settled(sandbox)


# --- what a sessions file may hold --------------------------------------------------------


@pytest.mark.parametrize("pid_value", ["as-string", "float", "negative", "zero", "one", "huge", "list"])
def test_a_pid_of_another_shape_in_a_running_claudes_file_keeps_it_live(
        sandbox: SandboxEnv, live_pid: int, pid_value: str) -> None:
    # `<pid>.json` of a running process with its procStart: whatever the pid field says, the
    # file is that running process's (a field of another shape is no proof of an end).
    value: object = {"as-string": str(live_pid), "float": float(live_pid), "negative": -live_pid, "zero": 0,
                     "one": 1, "huge": 2**40 + live_pid, "list": [live_pid]}[pid_value]
    sid = str(uuid.uuid4())
    sandbox.write_session(str(live_pid), pid=value, sessionId=sid, cwd="/work/proj", procStart=start_of(live_pid))
    assert sid in sessions.liveness().ids


@pytest.mark.parametrize("start", ["missing", "empty", "int", "float", "list", "ps-text", "spaces"])
def test_a_proc_start_of_another_shape_keeps_a_running_pid_live(sandbox: SandboxEnv, live_pid: int,
                                                                  start: str) -> None:
    ticks = start_of(live_pid)
    assert ticks is not None
    fields: dict[str, object] = {"pid": live_pid, "sessionId": "s-1", "cwd": "/w"}
    if start != "missing":
        fields["procStart"] = {"empty": "", "int": int(ticks), "float": float(ticks), "list": [ticks],
                               "ps-text": "Tue Dec  1 00:12:34 2026", "spaces": f"  {ticks}\n"}[start]
    sandbox.write_session(str(live_pid), **fields)
    assert "s-1" in sessions.liveness().ids


def test_a_proc_start_of_another_process_is_a_reused_pid(sandbox: SandboxEnv, live_pid: int) -> None:
    ticks = start_of(live_pid)
    assert ticks is not None
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="s-1", cwd="/w", procStart=str(int(ticks) - 7))
    assert "s-1" not in sessions.liveness().ids


@pytest.mark.parametrize("domain", ["other-machine", "other-namespace", "int", "dict", "list"])
def test_a_pid_domain_that_cannot_be_checked_here_keeps_the_session_live(sandbox: SandboxEnv, domain: str) -> None:
    # A Claude in a container sharing the config folder: its pid (7) means nothing here, and
    # here no process 7 of that start runs.
    dead = subprocess.Popen(["true"])
    dead.wait()
    machine, namespace = sessions._own_pid_domain()
    value: object = {"other-machine": f"linux:{'0' * 32}:pid:[{namespace}]",
                     "other-namespace": f"linux:{machine}:pid:[1]",
                     "int": 4026531836, "dict": {"machine": machine, "pidNamespace": "4026532999"},
                     "list": ["linux", machine, "4026532999"]}[domain]
    sandbox.write_session(str(dead.pid), pid=dead.pid, sessionId="s-box", cwd="/app", procStart="12345",
                          pidDomain=value)
    assert "s-box" in sessions.liveness().ids


@pytest.mark.parametrize("given", [".claude-work", "~/.claude-work"])
def test_a_claude_of_a_config_folder_named_relative_to_its_folder_keeps_its_sessions_folder(
        sandbox: SandboxEnv, tmp_path: Path, started: list[subprocess.Popen[bytes]], given: str) -> None:
    # `CLAUDE_CONFIG_DIR=.claude-work claude` from the home, or a `~` no shell expanded (an env
    # file, a launcher): Claude makes the path absolute from its own folder, and keeps its
    # sessions there; the temp folder it shares with every config folder is the uid's.
    proc = execed(subprocess.Popen(["sleep", "60"], cwd=sandbox.home, env={**os.environ, "CLAUDE_CONFIG_DIR": given}))
    started.append(proc)
    config = sandbox.home / given
    (config / "sessions").mkdir(parents=True)
    sid = str(uuid.uuid4())
    (config / "sessions" / f"{proc.pid}.json").write_text(json.dumps(
        {"pid": proc.pid, "sessionId": sid, "cwd": str(tmp_path), "procStart": start_of(proc.pid)}))
    folder = session_folder(sandbox, tmp_path, sid)
    clean(tmp_path)
    assert intact(folder)


@pytest.mark.parametrize("value", [42, "", ["s-1"], None])
def test_a_running_claudes_file_whose_session_id_cannot_be_read_makes_every_session_unsure(
        sandbox: SandboxEnv, live_pid: int, value: object) -> None:
    # which folders are its own cannot be told: nothing a session may hold goes
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId=value, cwd="/w", procStart=start_of(live_pid))
    assert sessions.liveness().unsure


def test_a_hung_claude_whose_file_was_updated_long_ago_is_live(sandbox: SandboxEnv, live_pid: int) -> None:
    long_ago = int((time.time() - 90 * DAY) * 1000)
    sandbox.write_session(str(live_pid), pid=live_pid, sessionId="s-hung", cwd="/w", procStart=start_of(live_pid),
                          startedAt=long_ago, updatedAt=long_ago, status="busy")
    assert "s-hung" in sessions.liveness().ids


def test_an_older_generations_file_is_read(sandbox: SandboxEnv, live_pid: int) -> None:
    sandbox.write_session(f"pid-{live_pid}", session_id="s-old-gen", cwd="/w")
    assert "s-old-gen" in sessions.liveness().ids


def test_a_crashed_claudes_file_whose_pid_a_claude_of_another_session_runs_now_protects_nothing(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    # The crash left `~/.claude-work/sessions/<n>.json`; pid n is now a Claude of another
    # session with the default config folder (the same name there is its own file).
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    work = sandbox.home / ".claude-work" / "sessions"
    work.mkdir(parents=True)
    crashed = str(uuid.uuid4())
    ticks = start_of(claude.pid)
    assert ticks is not None
    (work / f"{claude.pid}.json").write_text(json.dumps(
        {"pid": claude.pid, "sessionId": crashed, "cwd": str(project), "procStart": str(int(ticks) - 500)}))
    gone = session_folder(sandbox, project, crashed)
    kept = session_folder(sandbox, project, claude.session_id)
    clean(project)
    assert not gone.exists() and intact(kept)


# --- slugs ----------------------------------------------------------------------------------


def _settings(project: Path, days: int) -> None:
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": days}))


@pytest.mark.parametrize("name", ["long", "non-ascii"])
def test_a_projects_own_period_reaches_its_folders_under_claudes_slug(
        sandbox: SandboxEnv, tmp_path: Path, name: str) -> None:
    # The slug of a path over 200 characters ends in `-<base 36 hash>`; an astral character
    # counts two UTF-16 units. A project keeping its sessions 90 days keeps a 40-day-old one.
    leaf = "x" * 150 if name == "long" else "projet-été-🚀"
    project = tmp_path / ("d" * 80) / leaf if name == "long" else tmp_path / leaf
    project.mkdir(parents=True)
    _settings(project, 90)
    folder = session_folder(sandbox, project, str(uuid.uuid4()))
    clean(project)
    assert intact(folder)


def test_two_projects_of_one_slug_keep_their_folders_by_the_longer_period(sandbox: SandboxEnv, tmp_path: Path) -> None:
    dotted, dashed = tmp_path / "a" / ".b", tmp_path / "a" / "-b"
    for project in (dotted, dashed):
        project.mkdir(parents=True)
    assert paths.project_slug(str(dotted)) == paths.project_slug(str(dashed))
    _settings(dotted, 90)
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(dotted): {}, str(dashed): {}}}))
    folder = session_folder(sandbox, dashed, str(uuid.uuid4()))
    clean(dashed)
    assert intact(folder)


# --- payloads of other shapes --------------------------------------------------------------


@pytest.mark.parametrize("shape", ["no-cwd", "relative-cwd", "int-id", "upper-id"])
def test_a_session_start_payload_of_another_shape_keeps_the_running_sessions_folder(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude], shape: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    folder = session_folder(sandbox, project, claude.session_id)
    payload: dict[str, Any] = {"hook_event_name": "SessionStart", "source": "startup",
                               "session_id": claude.session_id, "cwd": str(project)}
    if shape == "no-cwd":
        del payload["cwd"]
    elif shape == "relative-cwd":
        payload["cwd"] = "proj"
    elif shape == "int-id":
        payload["session_id"] = 42
    else:
        payload["session_id"] = claude.session_id.upper()
    answer = claude.hook("SessionStart", **{k: v for k, v in payload.items() if k != "hook_event_name"})
    assert answer["rc"] == 0, answer
    settled(sandbox)
    clean(project)
    assert intact(folder)


def test_a_scratchpad_dir_under_another_root_cleans_there_and_keeps_the_live_sessions_folder(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    claude = claudes(project)
    other = tmp_path / "bigdisk" / f"claude-{os.getuid()}"
    mine = other / paths.project_slug(str(project)) / claude.session_id
    (mine / "scratchpad").mkdir(parents=True)
    (mine / "scratchpad" / "plan.md").write_text("x\n")
    then = time.time() - OLD
    os.utime(mine, (then, then))
    dead = other / paths.project_slug(str(project)) / str(uuid.uuid4())
    dead.mkdir()
    os.utime(dead, (then, then))
    claude.start()
    answer = claude.hook("SessionStart", source="startup", scratchpad_dir=str(mine / "scratchpad"))
    assert answer["rc"] == 0, answer
    assert wait_for(lambda: not dead.exists()), "\n".join(  # what the detached cleanup said, if it ran
        f"{log}: {log.read_text(errors='replace')[-2000:]}" for log in [*tmp_path.rglob("*.log")])
    assert (mine / "scratchpad" / "plan.md").is_file()
