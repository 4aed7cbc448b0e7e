"""Red team, round eleven: the session-start cleanup as Claude Code 2.1.332 leaves things.

Both directions. What the seed says goes (a dead session's folder past cleanupPeriodDays,
its gate logs, a stale probe folder) goes, by `claudetto clean` and by the detached
SessionStart job, with the CLEANED counts exactly what went; and what a running program
still uses stays, whatever its age.

Found and fixed: a cleanupPeriodDays set in the managed policy's drop-in folder
(`managed-settings.d/*.json`) was not read (7 days kept a 10-day-old folder, 60 days let a
31-day-old one go); a headless `claude -p` (or the Agent SDK's print mode) keeps no sessions
file, and the folder of the old session it resumed went at another session's cleanup; so did
that of a Claude started under another home sharing our temp root, and that of a `/clear`ed
id of a Claude whose claudetto keeps its state elsewhere (another account's plugin data); two
cleanups at once journaled and counted one gate log twice; a cleanup killed between its move
to the trash and its journal line left folders its re-run did not remove; a killed cleanup's
forked helper held its lock on. What held: a task's shell writing in a dead session's old
folder, a pager reading in one, a stopped Claude, a zombie one, a Claude in its own pid
namespace, a deep new file (the folder goes by its own mtime), a probe with a user's file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from app.core import hygiene, paths
from app.core.pid_domain import own_pid_domain
from app.core.sessions import proc_start_time
from tests.core.test_red_team_10_liveness import settled
from tests.hooks.test_checkouts import _CLAUDE, Claude
from tests.support import SandboxEnv, execed, run_cli, run_hook, set_mtime

DAY = 86_400
MINUTE = 60


def _domain() -> str:
    machine, namespace = own_pid_domain()
    return f"linux:{machine}:pid:[{namespace}]"


def _claude_file(sandbox: SandboxEnv, pid: int, sid: str, cwd: Path, proc_start: str | None) -> Path:
    """A sessions file as Claude Code 2.1.332 writes it."""
    now = int(time.time() * 1000)
    fields = {"pid": pid, "sessionId": sid, "cwd": str(cwd), "startedAt": now - 3_600_000, "updatedAt": now,
              "status": "idle", "procStart": proc_start, "pidDomain": _domain(), "version": "2.1.332",
              "kind": "interactive", "entrypoint": "cli"}
    return sandbox.write_session(str(pid), **fields)


def _session_folder(sandbox: SandboxEnv, project: Path, sid: str, age_s: float, payload: int = 3000) -> Path:
    """`claude-<uid>/<slug>/<sid>/` with what Claude leaves there, every part `age_s` old."""
    folder = sandbox.claude_tmp / paths.project_slug(str(project)) / sid
    (folder / "scratchpad").mkdir(parents=True)
    (folder / "tasks").mkdir()
    (folder / "scratchpad" / "notes.md").write_bytes(b"n" * payload)
    (folder / "tasks" / "b1x2.output").write_bytes(b"o" * payload)
    for path in (folder / "scratchpad" / "notes.md", folder / "tasks" / "b1x2.output", folder / "scratchpad",
                 folder / "tasks", folder):
        set_mtime(path, age_s)
    return folder


def _disk(path: Path) -> tuple[int, int]:
    """(disk bytes, regular files) of a tree, links not followed, hard links once."""
    if not path.is_dir():
        return os.lstat(path).st_blocks * 512, 1
    seen: set[tuple[int, int]] = set()
    total = files = 0
    for top, dirs, names in os.walk(path):
        for name in [top, *(os.path.join(top, n) for n in names), *(os.path.join(top, d) for d in dirs
                                                                    if os.path.islink(os.path.join(top, d)))]:
            st = os.lstat(name)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
            files += name != top and os.path.isfile(name) and not os.path.islink(name)
    return total, files


class Ended:
    """Claude's temp folder after sessions that ended as Claude Code 2.1.332 leaves them:
    one whose sessions file is gone, one whose file names a pid now run by another program
    (a `sleep` started since, procStart another), one whose file names a process that is no
    Claude (pid 1, with the crashed Claude's procStart), each folder 31 days old with its
    gate log; a probe folder 61 minutes old; three entries no rule names; one young
    session folder and one young probe."""

    def __init__(self, sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
        self.project = sandbox.root / "proj"
        self.project.mkdir()
        other = subprocess.Popen(["sleep", "60"])
        started.append(other)
        start = proc_start_time(other.pid)
        assert start is not None
        ids = [str(uuid.uuid4()) for _ in range(4)]
        self.gone = [_session_folder(sandbox, self.project, sid, 31 * DAY) for sid in ids[:3]]
        _claude_file(sandbox, other.pid, ids[1], self.project, str(int(start) + 7))
        _claude_file(sandbox, 1, ids[2], self.project, "12345")
        logs = paths.log_root() / paths.project_slug(str(self.project))
        logs.mkdir(parents=True)
        for sid in ids[:3]:
            log = logs / f"{sid}.log"
            log.write_text("CLEANED folders=0 bytes=0 files=0 worktrees=0 probes=0\n")
            set_mtime(log, 31 * DAY)
            self.gone.append(log)
        probe = sandbox.claude_tmp / "fswatch-probe-Ab12Cd"
        probe.mkdir()
        (probe / "probe").write_text("")
        set_mtime(probe / "probe", 61 * MINUTE)
        set_mtime(probe, 61 * MINUTE)
        self.gone.append(probe)
        young_probe = sandbox.claude_tmp / "fswatch-probe-Zz99Yy"
        young_probe.mkdir()
        set_mtime(young_probe, 50 * MINUTE)
        self.young = _session_folder(sandbox, self.project, ids[3], 10 * DAY)
        self.kept = [young_probe, self.young]
        (sandbox.claude_tmp / "claude-prompt-0f3a.md").write_text("prompt\n")
        (sandbox.claude_tmp / "plugin-tool-staging").mkdir()
        (sandbox.claude_tmp / paths.project_slug(str(self.project)) / "notes.txt").write_text("mine\n")
        self.unknown = 3
        self.bytes = self.files = 0
        for path in self.gone:
            disk, files = _disk(path)
            self.bytes += disk
            self.files += files
        self.folders = sum(path.is_dir() for path in self.gone)

    def all_gone(self) -> bool:
        return not any(os.path.lexists(path) for path in self.gone)


@pytest.fixture
def ended(sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> Ended:
    return Ended(sandbox, started)


def test_clean_removes_what_ended_sessions_left_and_counts_it_exactly(ended: Ended) -> None:
    done = run_cli("clean", "--json", cwd=ended.project)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert ended.all_gone(), [str(p) for p in ended.gone if os.path.lexists(p)]
    assert all(path.exists() for path in ended.kept)
    assert report["cleaned"] == {"folders": ended.folders, "bytes": ended.bytes, "files": ended.files,
                                 "worktrees": 0, "probes": 1}, (report, ended.folders, ended.bytes, ended.files)
    assert report["unknown_kept"] == ended.unknown and report["dry_run"] is False


def test_session_start_removes_the_same_in_its_detached_job_and_logs_the_counts(ended: Ended) -> None:
    sid = str(uuid.uuid4())
    payload = {"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(ended.project), "source": "startup",
               "transcript_path": "/nowhere.jsonl", "model": "claude-opus-4-5"}
    done = run_hook(payload, cwd=ended.project)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    log = paths.session_log(str(ended.project), sid)
    end = time.monotonic() + 30
    while time.monotonic() < end and not (log.exists() and "UNKNOWN_KEPT" in log.read_text()):
        time.sleep(0.05)
    text = log.read_text()
    assert (f"CLEANED folders={ended.folders} bytes={ended.bytes} files={ended.files} worktrees=0 probes=1"
            in text), text
    assert f"UNKNOWN_KEPT {ended.unknown}" in text and ended.all_gone()
    assert all(path.exists() for path in ended.kept)


def _settings(path: Path, days: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cleanupPeriodDays": days, "model": "opus"}))


@pytest.mark.parametrize("where", ["user", "managed", "managed_drop_in", "config_dir"])
def test_a_cleanup_period_of_7_days_wherever_claude_reads_it_lets_a_10_day_old_folder_go(
        ended: Ended, sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    managed = Path(os.environ["CLAUDETTO_MANAGED_SETTINGS"])
    if where == "user":
        _settings(sandbox.config / "settings.json", 7)
    elif where == "managed":
        _settings(managed, 7)
    elif where == "managed_drop_in":  # systemd-style fragments beside the policy file, merged after it
        _settings(managed, 30)
        _settings(managed.parent / "managed-settings.d" / "50-cleanup.json", 7)
    else:  # a second account's config folder: its settings, not the default one's
        work = sandbox.home / ".claude-work"
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(work))
        _settings(work / "settings.json", 7)
        _settings(sandbox.home / ".claude" / "settings.json", 90)
    report = hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert not ended.young.exists() and ended.all_gone(), report.verdicts
    assert report.folders == ended.folders + 1


def test_a_longer_period_in_a_managed_fragment_keeps_a_31_day_old_folder(
        ended: Ended, sandbox: SandboxEnv) -> None:
    managed = Path(os.environ["CLAUDETTO_MANAGED_SETTINGS"])
    _settings(sandbox.config / "settings.json", 7)
    _settings(managed.parent / "managed-settings.d" / "10-base.json", 7)
    _settings(managed.parent / "managed-settings.d" / "90-keep.json", 60)
    (managed.parent / "managed-settings.d" / ".hidden.json").write_text(json.dumps({"cleanupPeriodDays": 1}))
    (managed.parent / "managed-settings.d" / "notes.txt").write_text(json.dumps({"cleanupPeriodDays": 1}))
    report = hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert ended.young.exists() and all(p.exists() for p in ended.gone if p.is_dir() and "probe" not in p.name)
    assert report.probes == 1


# --- losses: what a running program still uses ----------------------------------------------


class Headless(Claude):
    """`claude -p --resume <id> "…"`: a headless run, its own Claude process, which keeps no
    sessions file while it runs; every hook its child, as Claude runs them."""

    def __init__(self, sandbox: SandboxEnv, session_id: str, cwd: Path, mode: list[str]) -> None:  # noqa: D107
        program = sandbox.root / "bin" / "claude"
        program.parent.mkdir(exist_ok=True)
        program.write_text(_CLAUDE)
        self.sandbox = sandbox
        self.proc = execed(subprocess.Popen([sys.executable, str(program), *mode, "--resume", session_id,
                                             "summarize the failing tests"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, text=True))
        self.session_id = session_id
        self.cwd = cwd

    def write_file(self) -> None:
        """A headless run writes none."""


@pytest.mark.parametrize("mode", [["-p"], ["--print"], ["--output-format", "stream-json", "--verbose"]])
def test_a_headless_run_resuming_an_old_session_keeps_its_folder_while_it_runs(
        sandbox: SandboxEnv, ended: Ended, mode: list[str]) -> None:
    # `claude -p`, and the Agent SDK's `claude --output-format stream-json ...` (print mode)
    sid = ended.gone[0].name
    run = Headless(sandbox, sid, ended.project, mode)
    try:
        run.start(source="resume")
        settled(sandbox)
        report = json.loads(run_cli("clean", "--json", cwd=ended.project).stdout)
        assert ended.gone[0].is_dir() and (ended.gone[0] / "scratchpad" / "notes.md").is_file(), report
        assert (paths.log_root() / paths.project_slug(str(ended.project)) / f"{sid}.log").exists()
    finally:
        run.exit()
    run_cli("clean", cwd=ended.project)
    assert not ended.gone[0].exists()


# --- at once, and cut short -----------------------------------------------------------------


def _journal() -> list[dict[str, object]]:
    file = paths.journal_file()
    return [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []


def _removed_lines(path: Path) -> int:
    return sum(1 for line in _journal() if line.get("path") == str(path) and line.get("result") == "removed")


def _trash_empty() -> bool:
    from app.core.trash import is_slot, trash_places

    return not any(is_slot(name) for place in trash_places() if place.is_dir() for name in os.listdir(place))


def _start_log(project: Path, sid: str) -> Path:
    return paths.session_log(str(project), sid)


def _session_start(project: Path) -> str:
    sid = str(uuid.uuid4())
    done = run_hook({"hook_event_name": "SessionStart", "session_id": sid, "cwd": str(project),
                     "source": "startup", "transcript_path": "/nowhere.jsonl"}, cwd=project)
    assert done.returncode == 0 and done.stderr == b""
    return sid


def _cleaned(text: str) -> dict[str, int]:
    """The counts of a session start's CLEANED line; none when it found a cleanup running."""
    if "another cleanup is running; this one skipped" in text:
        return {"folders": 0, "bytes": 0, "files": 0, "worktrees": 0, "probes": 0}
    line = next(line for line in text.splitlines() if line.startswith("CLEANED "))
    return {key: int(value) for key, value in (part.split("=") for part in line.split()[1:])}


def test_two_cleans_and_a_session_start_at_once_remove_each_folder_once_and_count_it_once(
        sandbox: SandboxEnv, ended: Ended) -> None:
    more = [_session_folder(sandbox, ended.project, str(uuid.uuid4()), 31 * DAY) for _ in range(12)]
    for folder in more:
        disk, files = _disk(folder)
        ended.bytes += disk
        ended.files += files
    ended.gone += more
    ended.folders += len(more)
    cleans = [subprocess.Popen([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                                "clean", "--json"], cwd=ended.project, stdout=subprocess.PIPE, text=True)
              for _ in range(2)]
    sid = _session_start(ended.project)
    reports = [json.loads(proc.communicate(timeout=60)[0])["cleaned"] for proc in cleans]
    settled(sandbox)
    log = _start_log(ended.project, sid).read_text()
    counts = [*reports, _cleaned(log)]
    assert ended.all_gone() and all(path.exists() for path in ended.kept)
    for key, want in (("folders", ended.folders), ("bytes", ended.bytes), ("files", ended.files), ("probes", 1)):
        assert sum(c[key] for c in counts) == want, (key, counts)
    assert all(_removed_lines(path) == 1 for path in ended.gone), _journal()
    assert _trash_empty()


def test_a_cleanup_killed_at_random_points_in_a_big_folder_is_finished_once_by_the_next(
        sandbox: SandboxEnv, ended: Ended) -> None:
    import random

    from tests.support import many_files

    big = sandbox.claude_tmp / paths.project_slug(str(ended.project)) / str(uuid.uuid4())
    (big / "tasks").mkdir(parents=True)
    many_files(big / "tasks", [f"{i:05}.output" for i in range(3000)], b"x" * 100)
    set_mtime(big / "tasks", 31 * DAY)
    set_mtime(big, 31 * DAY)
    rng = random.Random(11)
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                                 "clean"], cwd=ended.project, stdout=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.2))
        proc.kill()
        proc.wait()
    sid = _session_start(ended.project)
    settled(sandbox)
    end = time.monotonic() + 30
    while time.monotonic() < end and not (_trash_empty() and not big.exists()):
        time.sleep(0.05)
    assert not big.exists() and _trash_empty()
    assert ended.all_gone(), [p for p in ended.gone if os.path.lexists(p)]
    assert _removed_lines(big) == 1, [line for line in _journal() if line.get("path") == str(big)]
    assert all(_removed_lines(path) == 1 for path in ended.gone)
    assert "Traceback" not in _start_log(ended.project, sid).read_text()


def _popen(started: list[subprocess.Popen[bytes]], *args: str, **kw: object) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(list(args), **kw)  # type: ignore[call-overload]
    started.append(proc)
    return proc


def _until(check: object, deadline_s: float = 10.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and not check():  # type: ignore[operator]
        time.sleep(0.02)


def test_what_non_claude_programs_hold_in_a_dead_sessions_old_folder_keeps_it(
        ended: Ended, started: list[subprocess.Popen[bytes]]) -> None:
    # a background task's shell still writing its output (the folder's own mtime a month
    # old), and a pager reading the scratchpad note: their session ended long ago
    writing, reading, gone = ended.gone[0], ended.gone[1], ended.gone[2]
    task = writing / "tasks" / "b1x2.output"
    _popen(started, "sh", "-c", "while :; do sleep 0.1; done", stdout=task.open("ab"))
    note = reading / "scratchpad" / "notes.md"
    _popen(started, "sh", "-c", 'exec 3<"$0"; exec sleep 60', str(note))
    _until(lambda: any(os.path.realpath(f"/proc/{p.pid}/fd/3") == str(note) for p in started[-1:])
           if os.path.exists(f"/proc/{started[-1].pid}/fd/3") else False)
    set_mtime(writing, 31 * DAY)
    report = hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert task.is_file() and note.is_file() and not gone.exists()
    reasons = {os.path.basename(v.path): v.reason for v in report.verdicts}
    assert reasons[writing.name] == reasons[reading.name] == "in_use"


def test_an_old_folder_with_a_new_file_deep_inside_goes_by_its_own_mtime(ended: Ended) -> None:
    # CONTRACT "Age": its own modification time, not the newest inside it; no process holds it
    deep = ended.gone[0] / "tasks" / "later.output"
    deep.write_text("written an hour ago by a task long finished\n")
    set_mtime(ended.gone[0] / "tasks", 3600)
    report = hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert not ended.gone[0].exists() and report.folders == ended.folders


def test_a_stale_probe_holding_a_users_file_goes_and_a_fresh_one_waits(sandbox: SandboxEnv, ended: Ended) -> None:
    probe = ended.gone[-1]
    (probe / "draft.txt").write_text("pasted here by mistake\n")  # its own mtime is now: young
    hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert (probe / "draft.txt").is_file()
    set_mtime(probe, 61 * MINUTE)
    report = hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert not probe.exists() and report.probes == 1


def test_a_zombie_claude_holds_nothing_and_a_stopped_one_keeps_its_session(
        sandbox: SandboxEnv, ended: Ended, started: list[subprocess.Popen[bytes]]) -> None:
    import signal

    stopped = _popen(started, "sleep", "60")
    zombie = _popen(started, "sleep", "60")
    ids = [str(uuid.uuid4()), str(uuid.uuid4())]
    folders = [_session_folder(sandbox, ended.project, sid, 31 * DAY) for sid in ids]
    for proc, sid in zip((stopped, zombie), ids, strict=True):
        _claude_file(sandbox, proc.pid, sid, ended.project, proc_start_time(proc.pid))
    os.kill(stopped.pid, signal.SIGSTOP)
    os.kill(zombie.pid, signal.SIGKILL)
    _until(lambda: Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z")
    try:
        hygiene.run_cleanup(None, current_cwd=str(ended.project))
        assert (folders[0] / "scratchpad" / "notes.md").is_file() and not folders[1].exists()
    finally:
        os.kill(stopped.pid, signal.SIGCONT)


@pytest.mark.parametrize("how", ["home", "home_and_config_dir"])
def test_a_claude_of_another_home_sharing_the_temp_folder_keeps_its_sessions_folder(
        sandbox: SandboxEnv, ended: Ended, how: str) -> None:
    # `HOME=~/claude-home claude --resume <id>` (one uid, one TMPDIR: one claude-<uid>): its
    # config folder is that home's `.claude`, or the CLAUDE_CONFIG_DIR it was given there
    other_home = sandbox.root / "claude-home"
    config = other_home / (".claude" if how == "home" else "cfg")
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(other_home)
    if how != "home":
        env["CLAUDE_CONFIG_DIR"] = str(config)
    program = sandbox.root / "bin" / "claude"
    program.parent.mkdir(exist_ok=True)
    program.write_text(_CLAUDE)
    proc = execed(subprocess.Popen([sys.executable, str(program), "--resume", ended.gone[0].name], env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.DEVNULL))
    try:
        (config / "sessions").mkdir(parents=True)
        (config / "sessions" / f"{proc.pid}.json").write_text(json.dumps({
            "pid": proc.pid, "sessionId": ended.gone[0].name, "cwd": str(ended.project),
            "procStart": proc_start_time(proc.pid), "pidDomain": _domain(), "status": "idle"}))
        report = hygiene.run_cleanup(None, current_cwd=str(ended.project))
        assert (ended.gone[0] / "scratchpad" / "notes.md").is_file(), report.verdicts
        assert not ended.gone[1].exists()
    finally:
        proc.kill()
        proc.wait()
    hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert not ended.gone[0].exists()


_IN_NAMESPACE = r"""
import json, os, sys, time
stat = open("/proc/self/stat").read().rpartition(")")[2].split()
machine = open("/etc/machine-id").read().strip()
ns = os.readlink("/proc/self/ns/pid")
with open(sys.argv[1], "w") as fh:
    json.dump({"pid": os.getpid(), "sessionId": sys.argv[2], "cwd": sys.argv[3], "procStart": stat[19],
               "pidDomain": f"linux:{machine}:{ns}", "status": "busy", "version": "2.1.332"}, fh)
time.sleep(60)
"""


def test_a_claude_in_another_pid_namespace_keeps_its_folder_though_its_pid_is_another_program_here(
        sandbox: SandboxEnv, ended: Ended, started: list[subprocess.Popen[bytes]]) -> None:
    # `unshare -p -f --mount-proc`: the Claude there is pid 1, which is init here
    if subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"], capture_output=True).returncode != 0:
        pytest.skip("no pid namespaces here")
    sid = ended.gone[0].name
    file = sandbox.sessions / "1.json"
    sandbox.sessions.mkdir(parents=True, exist_ok=True)
    _popen(started, "unshare", "-p", "-f", "--kill-child", "--mount-proc", sys.executable, "-c", _IN_NAMESPACE, str(file), sid,
           str(ended.project))
    def written() -> bool:  # over the fixture's own `1.json` (pid 1, another session)
        try:
            return bool(json.loads(file.read_text()).get("sessionId") == sid)
        except (OSError, ValueError):
            return False  # not yet, or caught half written

    _until(written)
    assert json.loads(file.read_text())["pid"] == 1 and written()
    report = hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert (ended.gone[0] / "scratchpad" / "notes.md").is_file(), report.verdicts
    assert not ended.gone[1].exists()


def test_a_gate_log_another_removal_unlinks_after_this_ones_check_is_neither_counted_nor_journaled_as_freed(
        ended: Ended) -> None:
    # the dashboard's removal beside a session start's: the other one unlinks the file after
    # this one's last check, before its own unlink
    from app.core import journal, removal

    log = next(p for p in ended.gone if p.suffix == ".log")

    def taken_meanwhile(where: str) -> None:
        os.unlink(where)

    done = removal.remove(log, paths.log_root(), "gate_log", kind="gate_log", guard=taken_meanwhile)
    assert (done.status, done.bytes) == ("missing", 0)
    assert sum(journal.freed_per_day().values()) == 0, _journal()


def _jobs_done(state: Path) -> None:
    """Wait for the detached jobs whose payload lies in `state` to end."""
    marker = str(state).encode()

    def running() -> bool:
        for name in os.listdir("/proc"):
            try:
                if name.isdigit() and marker in Path(f"/proc/{name}/cmdline").read_bytes():
                    return True
            except OSError:
                continue
        return False

    _until(lambda: not running(), 30)


def test_a_cleared_id_of_a_claude_of_another_account_with_its_own_state_keeps_its_folder(
        sandbox: SandboxEnv, ended: Ended) -> None:
    # two accounts, one temp folder, and claudetto's state per account (a plugin's
    # CLAUDE_PLUGIN_DATA lies in each config folder): the second account's Claude `/clear`s
    # a session it had resumed; the first account's cleanup runs meanwhile
    old, new = ended.gone[0].name, str(uuid.uuid4())
    config, state = sandbox.home / ".claude-work", sandbox.root / "state-work"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "CLAUDETTO_HOME": str(state)}
    claude = execed(subprocess.Popen([sys.executable, "-c", _CLAUDE], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env))
    try:
        (config / "sessions").mkdir(parents=True)

        def file(sid: str) -> None:
            (config / "sessions" / f"{claude.pid}.json").write_text(json.dumps({
                "pid": claude.pid, "sessionId": sid, "cwd": str(ended.project), "status": "idle",
                "procStart": proc_start_time(claude.pid), "pidDomain": _domain()}))

        def hook(event: str, sid: str, **fields: str) -> None:
            assert claude.stdin is not None and claude.stdout is not None
            claude.stdin.write(json.dumps({"hook_event_name": event, "session_id": sid, "cwd": str(ended.project),
                                           "transcript_path": "/nowhere.jsonl", **fields}) + "\n")
            claude.stdin.flush()
            assert json.loads(claude.stdout.readline())["rc"] == 0

        file(old)
        hook("SessionStart", old, source="resume")
        file(new)
        hook("SessionEnd", old, reason="clear")
        hook("SessionStart", new, source="clear")
        _jobs_done(state)
        assert old in (state / "claude-processes.json").read_text()  # noted where that account keeps its state
        hygiene.run_cleanup(None, current_cwd=str(ended.project))
        assert (ended.gone[0] / "scratchpad" / "notes.md").is_file()
        assert not ended.gone[1].exists()
    finally:
        claude.kill()
        claude.wait()
    (config / "sessions" / f"{claude.pid}.json").unlink()
    hygiene.run_cleanup(None, current_cwd=str(ended.project))
    assert not ended.gone[0].exists()


def test_a_cleanup_that_finds_another_removing_waits_then_says_so_and_a_dry_run_does_not_wait(
        ended: Ended, started: list[subprocess.Popen[bytes]]) -> None:
    from app.core.state import StateBusy

    holder = _popen(started, sys.executable, "-c", "import time; from app.core.cleanup_lock import one_at_a_time\n"
                    "with one_at_a_time(0.0):\n    print('held', flush=True); time.sleep(30)",
                    stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    with pytest.raises(StateBusy, match="another cleanup is still running"):
        hygiene.run_cleanup(None, current_cwd=str(ended.project), lock_wait_s=0.05)
    assert hygiene.plan(None, current_cwd=str(ended.project)).folders == ended.folders
    assert ended.gone[0].exists()
    holder.kill()
    holder.wait()
    assert hygiene.run_cleanup(None, current_cwd=str(ended.project)).folders == ended.folders


def test_the_cleanups_lock_is_not_held_by_a_child_forked_while_it_ran(
        ended: Ended, started: list[subprocess.Popen[bytes]]) -> None:
    # the measuring walk forks a helper: killed with its cleanup's process, the helper must
    # not keep the next cleanup out while its walk goes on
    script = ("import os, sys, time; from app.core.cleanup_lock import one_at_a_time\n"
              "with one_at_a_time(0.0):\n"
              "    child = os.fork()\n"
              "    if child == 0:\n        time.sleep(30); os._exit(0)\n"
              "    print(child, flush=True); time.sleep(30)")
    holder = _popen(started, sys.executable, "-c", script, stdout=subprocess.PIPE)
    assert holder.stdout is not None
    helper = int(holder.stdout.readline())
    holder.kill()
    holder.wait()
    try:
        assert hygiene.run_cleanup(None, current_cwd=str(ended.project), lock_wait_s=0.0).folders == ended.folders
    finally:
        os.kill(helper, 9)
