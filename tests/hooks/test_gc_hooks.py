"""The GC through the hooks, as Claude runs them: PostToolUse records, SessionStart and
SessionEnd sweep in a detached process (polled for, with a deadline)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from app.core import paths
from app.core.gc_records import read_records
from tests.support import SandboxEnv, hook_modules, make_repo, run_cli, run_hook, set_mtime
from tests.support import add_record as record

OLD = 8 * 86_400


def wait_for(check: Callable[[], bool], deadline_s: float = 20.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def post_bash(command: str, response: object, *, cwd: Path, session: str = "s1") -> dict[str, object]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_response": response}


def old_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "data.bin").write_bytes(b"x" * 5000)
    set_mtime(path, OLD)
    return path




def test_post_tool_bash_records_a_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(sandbox.root / "remote" / "tool")
    command = f"git clone -q {repo}"  # the folder's name derived from the URL, as git does
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, env=dict(os.environ))
    done = run_hook(post_bash(command, {"stdout": "", "stderr": "", "interrupted": False}, cwd=tmp_path),
                    cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert [(r.kind, r.path, r.cwd) for r in read_records("s1")] == [("copy", str(tmp_path / "tool"), str(tmp_path))]


def test_post_tool_bash_output_as_a_plain_string(sandbox: SandboxEnv, tmp_path: Path) -> None:
    printed = subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True,
                             env=dict(os.environ)).stdout  # a folder the call really made
    done = run_hook(post_bash("mktemp -d", printed, cwd=tmp_path), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b""
    assert [(r.kind, r.path) for r in read_records("s1")] == [("temp", os.path.realpath(printed.strip()))]


def test_post_tool_mktemp_into_a_variable_records_the_folder_it_made(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # The must-show case: the path goes into the substitution and is never printed.
    command = 'd=$(mktemp -d) && cd "$d"'
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, env=dict(os.environ))
    (made,) = Path(os.path.realpath(sandbox.user_tmp)).iterdir()
    done = run_hook(post_bash(command, {"stdout": "", "stderr": "", "interrupted": False}, cwd=tmp_path),
                    cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert made.is_dir() and [(r.kind, r.path) for r in read_records("s1")] == [("temp", str(made))]


def test_post_tool_cp_into_a_folder_records_the_copies_and_the_sweep_spares_the_folder(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text(name)
    dest = sandbox.user_tmp / "shared"
    (dest / "precious").mkdir(parents=True)
    command = f"cp -r a b {dest}/"
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert run_hook(post_bash(command, {"stdout": ""}, cwd=tmp_path), cwd=tmp_path).returncode == 0
    assert [r.path for r in read_records("s1")] == [str(dest / "a"), str(dest / "b")]
    for path in (dest / "a", dest / "b", dest / "precious", dest):
        set_mtime(path, OLD)
    from app.core import gc

    report = gc.sweep(trash=False)
    assert report.removed == 2
    assert not (dest / "a").exists() and not (dest / "b").exists() and (dest / "precious").is_dir()


def test_post_tool_write_into_tmp_is_scratch(sandbox: SandboxEnv, tmp_path: Path) -> None:
    target = sandbox.user_tmp / "notes.md"
    target.write_text("hi")  # what the Write made
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": str(target), "content": "hi"}, "tool_response": {"type": "create"}}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    assert [(r.kind, r.path) for r in read_records("s1")] == [("scratch", str(target))]


def test_post_tool_unparseable_command_records_nothing_and_logs(sandbox: SandboxEnv, tmp_path: Path) -> None:
    done = run_hook(post_bash("git clone 'oops", {"stdout": ""}, cwd=tmp_path), cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert read_records() == []
    log = paths.session_log(str(tmp_path), "s1")
    assert "cannot read the command" in log.read_text()


def test_post_tool_a_plain_command_costs_no_parser_import(sandbox: SandboxEnv, tmp_path: Path) -> None:
    loaded = hook_modules(post_bash("ls -la && pytest -q", {"stdout": "ok"}, cwd=tmp_path), tmp_path)
    assert "app.core.recorder" in loaded  # it did run
    parser = {"shlex", "dataclasses", "pathlib", "typing", "app.core.state", "app.core.gc_records",
              "app.core.bash_outputs", "app.core.command_line", "app.core.mktemp"}
    assert parser & loaded == set()


def test_post_tool_hot_path_imports_no_heavy_module(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp_path / "v").mkdir()  # as if the clone made it just now
    made = Path(os.path.realpath(sandbox.user_tmp)) / "tmp.0123456789"
    made.mkdir()  # and mktemp this one
    payload = post_bash(f"git clone u/v.git {tmp_path / 'v'} && mktemp -d", str(made), cwd=tmp_path)
    loaded = hook_modules(payload, tmp_path)
    assert "app.core.recorder" in loaded  # it did run
    heavy = {m for m in loaded if m.split(".")[0] in {"git", "textual", "rich", "humanize", "subprocess"}}
    assert heavy == set()
    assert len(read_records("s1")) == 2


def test_session_end_returns_at_once_and_the_detached_sweep_removes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine")
    record("ending", mine, cwd=cwd)
    # Claude's process is still running while SessionEnd runs: its session file names a live pid.
    sandbox.write_session(str(os.getpid()), pid=os.getpid(), sessionId="ending", cwd=str(cwd))
    payload = {"hook_event_name": "SessionEnd", "session_id": "ending", "cwd": str(cwd), "reason": "prompt_input_exit"}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""
    assert wait_for(lambda: not mine.exists())
    log = paths.session_log(str(cwd), "ending")
    assert wait_for(lambda: log.exists() and "GC removed=1" in log.read_text())
    text = log.read_text()
    assert "removed  age" in text and str(mine) in text
    assert wait_for(lambda: read_records() == [])


def test_session_start_keeps_its_own_outputs_and_sweeps_the_dead(sandbox: SandboxEnv, tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    mine = old_folder(sandbox.user_tmp / "mine")
    theirs = old_folder(sandbox.user_tmp / "theirs")
    record("starting", mine, cwd=cwd)  # a resumed session: its old outputs are still in use
    record("dead", theirs, cwd=cwd)
    payload = {"hook_event_name": "SessionStart", "session_id": "starting", "cwd": str(cwd), "source": "resume"}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0
    log = paths.session_log(str(cwd), "starting")
    assert wait_for(lambda: log.exists() and "GC removed=" in log.read_text())
    assert "GC removed=1 " in log.read_text()
    assert mine.exists() and not theirs.exists()
    assert [r.path for r in read_records()] == [str(mine)]


def test_post_tool_records_a_clone_or_copy_only_when_the_call_made_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The reviewer's data-loss repro: a target that was there is never recorded (the sweep
    would remove it on its own old mtime); what the call made fresh is."""
    from app.core.created import birth_time

    tmp = sandbox.user_tmp
    proj = tmp / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("work\n")
    set_mtime(proj, 20 * 86_400)
    kept = [proj, old_folder(tmp / "data"), old_folder(tmp / "data2"), old_folder(tmp / "data3")]
    existing = tmp / "existing"
    (existing / "precious").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text(name)
    repo = make_repo(sandbox.root / "remote" / "repo")
    time.sleep(2.5)  # all that is older than the calls' window below (1 s, plus 1 s of clock slack)

    def call(command: str, stdout: str = "", timeout_ms: int | None = None) -> None:
        subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=60,
                       env=dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true"))
        payload = post_bash(command, {"stdout": stdout, "stderr": "", "interrupted": False}, cwd=tmp_path)
        if timeout_ms is not None:
            payload["tool_input"]["timeout"] = timeout_ms  # type: ignore[index]
        done = run_hook(payload, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == b"" and done.stderr == b""

    call(f"git clone https://github.com/x/proj.git {proj} 2>/dev/null || git -C {proj} pull",
         "Already up to date.\n", 1000)
    call(f"cp -r srcc {tmp}/data || true", timeout_ms=1000)
    call(f"cp -rT a {tmp}/data2", timeout_ms=1000)
    call(f"cp -r a/. {tmp}/data3", timeout_ms=1000)
    assert read_records() == []
    log = paths.session_log(str(tmp_path), "s1").read_text()
    for path in kept:
        assert f"copy {path} not recorded: " in log
    dry = run_cli("gc", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and all(str(path) not in dry.stdout for path in kept)
    assert (proj / "notes.txt").read_text() == "work\n"

    call(f"git clone -q {repo} {tmp}/newclone")
    call(f"cp -r a {tmp}/new")
    call(f"cp -r a b {tmp}/existing/")
    assert (tmp / "newclone" / "README.md").is_file() and (existing / "a" / "f").is_file()
    recorded = [(r.kind, r.path) for r in read_records("s1")]
    fresh = [("copy", str(tmp / "newclone")), ("copy", str(tmp / "new"))]
    if birth_time(str(existing / "a")) is not None:
        assert recorded == [*fresh, ("copy", str(existing / "a")), ("copy", str(existing / "b"))]
    else:  # copies into a folder that was there need a birth time: without one, none is recorded
        assert recorded == fresh
    assert str(existing) not in {path for _, path in recorded}
