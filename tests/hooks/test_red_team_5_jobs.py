"""Red team, round five: the detached jobs of SessionStart and SessionEnd, driven as Claude
drives them (JSON piped into the hook in a subprocess), then waited for through their log
lines: two jobs at once, a job killed by SIGKILL, a job whose hook ran under another
environment, a job's folder that is not a folder, a payload with a huge field."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.core import paths
from app.core.setup import hook_command
from tests.hooks import test_checkouts
from tests.hooks.test_checkouts import Claude, fill_scratch, released, scratch_gone
from tests.hooks.test_gc_hooks import old_folder, wait_for
from tests.support import SandboxEnv, run_hook, set_mtime
from tests.support import add_record as record

claudes, repo = test_checkouts.claudes, test_checkouts.repo  # the stand-in Claude and its repository


def end_payload(session: str, cwd: Path, **extra: object) -> dict[str, object]:
    return {"hook_event_name": "SessionEnd", "session_id": session, "cwd": str(cwd),
            "reason": "prompt_input_exit", **extra}


def log_text(cwd: Path, session: str) -> str:
    log = paths.session_log(str(cwd), session)
    return log.read_text() if log.exists() else ""


def job_pids(marker: str) -> list[int]:
    """The running detached jobs whose command line names `marker` (their payload file)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if b"app.core.jobs" in cmdline and marker.encode() in cmdline:
            found.append(int(name))
    return found


@pytest.fixture
def sweep_lock(sandbox: SandboxEnv) -> Iterator[Callable[[], None]]:
    """Hold the GC sweep lock, as a long sweep of another session does; call to let it go."""
    lock = sandbox.state / "gc" / "sweep.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    held = [True]

    def release() -> None:
        if held[0]:
            held[0] = False
            os.close(fd)

    yield release
    release()


def test_a_job_waiting_for_the_sweep_works_in_no_folder_of_the_user(
        sandbox: SandboxEnv, tmp_path: Path, sweep_lock: Callable[[], None]) -> None:
    # A job left in the hook's folder is a process working there: while it waits for the sweep
    # lock, a release or a cleanup of that folder (a session checkout) sees it as in use.
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    done = run_hook(end_payload("s-wait", cwd), cwd=cwd)
    assert done.returncode == 0
    assert wait_for(lambda: bool(job_pids(str(sandbox.state / "jobs"))), 10)
    for pid in job_pids(str(sandbox.state / "jobs")):
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
    sweep_lock()
    assert wait_for(lambda: "GC removed=" in log_text(cwd, "s-wait"))


def test_a_pythonpath_with_its_own_app_package_does_not_run_the_job(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    # The hook Claude runs is isolated (`-I -S`): a PYTHONPATH naming a project with its own
    # `app` package does not reach it. The job it starts must be isolated the same way.
    other = tmp_path / "theirs"
    (other / "app" / "core").mkdir(parents=True)
    (other / "app" / "__init__.py").write_text("")
    (other / "app" / "core" / "__init__.py").write_text("")
    marker = tmp_path / "their-job-ran"
    (other / "app" / "core" / "jobs.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    cwd = tmp_path / "proj"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine")
    record("s-path", mine, cwd=cwd)
    env = {**os.environ, "PYTHONPATH": str(other)}
    done = subprocess.run(hook_command(), shell=True, input=json.dumps(end_payload("s-path", cwd)).encode(),
                          capture_output=True, cwd=cwd, env=env, timeout=30, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert wait_for(lambda: "GC removed=1" in log_text(cwd, "s-path"))
    assert not mine.exists() and not marker.exists()


@pytest.mark.parametrize("kind", ["fifo", "file", "dangling_link"])
def test_a_jobs_folder_that_is_no_folder_loses_no_job(sandbox: SandboxEnv, tmp_path: Path, kind: str) -> None:
    sandbox.state.mkdir(parents=True, exist_ok=True)
    jobs = sandbox.state / "jobs"
    if kind == "fifo":
        os.mkfifo(jobs)
    elif kind == "file":
        jobs.write_text("not a folder")
    else:
        jobs.symlink_to(tmp_path / "nowhere" / "jobs-gone")
    cwd = tmp_path / "proj"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine")
    record("s-fifo", mine, cwd=cwd)
    started = time.monotonic()
    done = run_hook(end_payload("s-fifo", cwd), cwd=cwd)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert time.monotonic() - started < 10
    assert wait_for(lambda: "GC removed=1" in log_text(cwd, "s-fifo"))
    assert not mine.exists()
    # the payload was read and removed wherever it went
    assert wait_for(lambda: not [p for p in sandbox.user_tmp.iterdir() if p.name.startswith("claudetto-")])


def test_a_payload_with_a_huge_field_is_handed_over_whole(sandbox: SandboxEnv, tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine")
    record("s-huge", mine, cwd=cwd)
    payload = end_payload("s-huge", cwd, transcript_path="/x/" + "y" * 8_000_000)
    started = time.monotonic()
    done = run_hook(payload, cwd=cwd)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert time.monotonic() - started < 10
    assert wait_for(lambda: "GC removed=1" in log_text(cwd, "s-huge"))
    assert wait_for(lambda: not list((sandbox.state / "jobs").glob("*.json")))  # no payload left behind


def test_two_sessions_ending_at_once_remove_each_output_once(sandbox: SandboxEnv, tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    outs = {sid: old_folder(sandbox.user_tmp / f"out-{sid}") for sid in ("s-a", "s-b")}
    for sid, out in outs.items():
        record(sid, out, cwd=cwd)
    hooks = [subprocess.Popen([os.sys.executable, "-P", "-m", "hooks"], stdin=subprocess.PIPE,  # type: ignore[attr-defined]
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
             for _ in outs]
    for proc, sid in zip(hooks, outs, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(end_payload(sid, cwd)).encode())
        proc.stdin.close()
    for proc in hooks:
        assert proc.wait(30) == 0
    assert wait_for(lambda: all("GC " in log_text(cwd, sid) for sid in outs))
    assert wait_for(lambda: not any(out.exists() for out in outs.values()))
    lines = [json.loads(x) for x in (sandbox.state / "journal.jsonl").read_text().splitlines()]
    removed = sorted(x["path"] for x in lines if x.get("result") == "removed")
    assert removed == sorted(str(out) for out in outs.values())


def test_a_job_killed_while_it_waits_leaves_no_lock_and_the_next_one_sweeps(
        sandbox: SandboxEnv, tmp_path: Path, sweep_lock: Callable[[], None]) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine")
    record("s-kill", mine, cwd=cwd)
    assert run_hook(end_payload("s-kill", cwd), cwd=cwd).returncode == 0
    assert wait_for(lambda: bool(job_pids(str(sandbox.state / "jobs"))), 10)
    for pid in job_pids(str(sandbox.state / "jobs")):
        os.kill(pid, signal.SIGKILL)
    sweep_lock()
    assert mine.exists() and "GC removed=" not in log_text(cwd, "s-kill")
    # killed before it read its payload, the job left it: an hour later nobody will read it
    for left in (sandbox.state / "jobs").glob("*.json"):
        set_mtime(left, 2 * 3600)
    assert run_hook(end_payload("s-kill", cwd), cwd=cwd).returncode == 0
    assert wait_for(lambda: "GC removed=1" in log_text(cwd, "s-kill"))
    assert not mine.exists()
    assert wait_for(lambda: not list((sandbox.state / "jobs").glob("*.json")))


def test_a_burst_of_session_starts_keeps_a_bounded_number_of_jobs(
        sandbox: SandboxEnv, tmp_path: Path, sweep_lock: Callable[[], None]) -> None:
    # Dozens of sessions starting at once (a script launching `claude -p` in a loop) while a long
    # sweep runs: each job would wait for the sweep lock; only a few may stay, the rest skip.
    cwd = tmp_path / "proj"
    cwd.mkdir()
    hooks = []
    for i in range(30):
        proc = subprocess.Popen([sys.executable, "-P", "-m", "hooks"], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"hook_event_name": "SessionStart", "session_id": f"burst-{i}",
                                     "cwd": str(cwd), "source": "startup"}).encode())
        proc.stdin.close()
        hooks.append(proc)
    for proc in hooks:
        assert proc.wait(60) == 0
    from app.core.jobs import MAX_RUNNING

    assert wait_for(lambda: len(job_pids(str(sandbox.state / "jobs"))) <= MAX_RUNNING, 4)
    skipped = sum("jobs: " in log_text(cwd, f"burst-{i}") and "skipped" in log_text(cwd, f"burst-{i}")
                  for i in range(30))
    assert skipped >= 30 - MAX_RUNNING
    sweep_lock()
    # the jobs that stayed finish their sweep once the long one is done
    assert wait_for(lambda: sum("GC removed=" in log_text(cwd, f"burst-{i}") for i in range(30)) >= 1)


def test_a_job_runs_in_the_hooks_environment_not_its_callers(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # CLAUDETTO_HOME and TMPDIR set only for the hook (a settings `env`): the job must use them.
    cwd = tmp_path / "proj"
    cwd.mkdir()
    state, utmp = tmp_path / "hook-state", tmp_path / "hook-tmp"
    utmp.mkdir()
    env = {**os.environ, "CLAUDETTO_HOME": str(state), "TMPDIR": str(utmp)}
    theirs = old_folder(utmp / "theirs")
    record_env = subprocess.run(
        [sys.executable, "-P", "-c", "import sys; from tests.support import add_record; "
         "add_record('s-env', sys.argv[1], cwd=sys.argv[2])", str(theirs), str(cwd)],
        env=env, cwd=str(Path(__file__).resolve().parents[2]), check=True)
    assert record_env.returncode == 0
    done = run_hook(end_payload("s-env", cwd), cwd=cwd, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert wait_for(lambda: "GC removed=1" in log_text(cwd, "s-env"))
    assert not theirs.exists() and not (sandbox.state / "gc").exists()


def test_a_hook_whose_folder_was_removed_still_hands_its_work_over(sandbox: SandboxEnv, tmp_path: Path) -> None:
    cwd = tmp_path / "gone"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine")
    record("s-gone", mine, cwd=cwd)
    script = f'cd "{cwd}" && rmdir "{cwd}" && exec "{sys.executable}" -P -m hooks'
    done = subprocess.run(["sh", "-c", script], input=json.dumps(end_payload("s-gone", cwd)).encode(),
                          capture_output=True, timeout=30, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert wait_for(lambda: "GC removed=1" in log_text(cwd, "s-gone"))
    assert not mine.exists()


def test_a_pythonpath_with_its_own_app_package_does_not_take_the_release(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude], repo: Path) -> None:
    other = tmp_path / "theirs"
    (other / "app" / "core").mkdir(parents=True)
    (other / "app" / "__init__.py").write_text("")
    (other / "app" / "core" / "__init__.py").write_text("")
    (other / "app" / "core" / "release.py").write_text("")
    claude = claudes(repo)
    claude.start()
    checkout = claude.create("shadowed")
    fill_scratch(checkout)
    session = claude.session_id
    claude.exit()
    env = {**os.environ, "PYTHONPATH": str(other)}
    done = subprocess.run(hook_command(), shell=True, input=json.dumps(end_payload(session, repo)).encode(),
                          capture_output=True, cwd=repo, env=env, timeout=30, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert wait_for(lambda: released(sandbox, checkout), 15)
    assert wait_for(lambda: scratch_gone(checkout))


@pytest.mark.parametrize("job", ["../../escaped", "no/such", "x" * 300, "\u00e9t\u00e9", "-", ""])
def test_a_job_with_an_odd_name_writes_nothing_outside_its_folder_and_is_logged(
        sandbox: SandboxEnv, tmp_path: Path, job: str) -> None:
    from app.core.jobs import _payload_file, spawn
    from app.core.log import bind

    kept = Path(_payload_file(job, {}))  # where its payload goes: in the jobs folder, whatever the name
    assert kept.parent == sandbox.state / "jobs"
    kept.unlink()

    cwd = tmp_path / "proj"
    cwd.mkdir()
    bind(str(cwd), "s-odd")
    pid = spawn(job, {"cwd": str(cwd), "session_id": "s-odd"})
    assert pid is not None
    assert wait_for(lambda: "jobs: unknown job" in log_text(cwd, "s-odd"))
    assert sorted(p.name for p in sandbox.state.iterdir()) == ["jobs"]
    assert wait_for(lambda: not list((sandbox.state / "jobs").glob("*.json")))
    assert not list((sandbox.state / "jobs").glob("*.running-*"))


def test_two_sessions_of_one_checkout_ending_at_once_release_it_once(
        sandbox: SandboxEnv, repo: Path, claudes: Callable[..., Claude]) -> None:
    # Each ending session may see the other still running: whichever judges last must let go,
    # and the scratch is deleted once (one journal line per folder).
    import threading

    from tests.hooks.test_checkouts import registry

    first = claudes(repo)
    checkout = first.create("both-end")
    first.cwd = checkout
    first.write_file()
    first.start()
    fill_scratch(checkout)
    second = claudes(checkout)
    second.start()
    ends = [threading.Thread(target=claude.end) for claude in (first, second)]
    for thread in ends:
        thread.start()
    for thread in ends:
        thread.join(30)
    first.exit()
    second.exit()
    assert wait_for(lambda: released(sandbox, checkout), 30), registry(sandbox)
    assert wait_for(lambda: scratch_gone(checkout))
    journal = [json.loads(x) for x in (sandbox.state / "journal.jsonl").read_text().splitlines()]
    removed = [e["path"] for e in journal if e.get("rule") == "release" and e.get("result") == "removed"]
    assert sorted(removed) == sorted(set(removed)) and len(removed) == 3


def test_a_payload_without_cwd_gives_the_job_the_hooks_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # The job runs from "/", so the project it would have found as its own folder goes along.
    cwd = tmp_path / "proj"
    cwd.mkdir()
    done = run_hook({"hook_event_name": "SessionEnd", "session_id": "s-nocwd", "reason": "other"}, cwd=cwd)
    assert done.returncode == 0
    assert wait_for(lambda: "GC removed=" in log_text(cwd, "s-nocwd"))
