"""Red team, round sixteen: the session-start cleanup and liveness, as they really run.

The suite runs as root and starts fake Claudes that keep their command lines: two things a
user's machine does differently went unseen.

Found and fixed: for a user who is not root, a container's processes are root's, and their
mount namespace could not be told (`/proc/<pid>/ns/mnt` is closed to other users): `docker
run -d -v <old session folder>/data:/data redis` lost its data at the next cleanup. Their
mount table is open to every user and now stands for their namespace (app/core/mounts.py
`namespace_of`). Claude on Node sets `process.title = "claude"`, which on Linux writes the
title over its arguments: a headless `claude -p -c` or `--resume <id>` read as a bare
`claude`, held nothing, and its month-old session folder went while it ran; such a Claude
without a sessions file is now taken as a `--continue` is (app/core/named_sessions.py).

Found and fixed (hang): a running process whose `PATH` (or `TMPDIR`, `HOME`) names a folder on
a remote mount that stopped answering (`PATH=~/remote/bin:$PATH`, the `sshfs` host gone) held
every look at who uses a folder, and with it the cleanup and its lock, for ever: each entry
was made a real path; so was the temp folder of every process that names a Claude config
folder (`CLAUDE_CONFIG_DIR` exported in a shell's rc), compared with ours. Now such an entry
is taken as written (app/core/processes.py, app/core/claude_process.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.core import paths
from tests.core.test_red_team_14_cleanup import _old_folder, _transcript, kept_while_it_runs
from tests.core.test_red_team_14_cleanup import hung_fuse as hung_fuse  # the fixture
from tests.support import ROOT, SandboxEnv, make_sandbox, set_mtime

NOBODY = 65534
DAY = 86_400


def _python_for_nobody() -> str | None:
    """An interpreter a user who is not root may run (the venv's may lie in root's home)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate) and os.stat(candidate).st_mode & 0o001:
            found = subprocess.run([candidate, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                                   capture_output=True, text=True, user=NOBODY, group=NOBODY, check=False)
            if found.stdout.strip() == "True":
                return candidate
    return None


PYTHON = _python_for_nobody() if os.geteuid() == 0 else None
as_nobody = pytest.mark.skipif(PYTHON is None, reason="needs root, and a Python 3.11 another user may run")


@pytest.fixture
def nobody_sandbox() -> Iterator[tuple[SandboxEnv, dict[str, str]]]:
    """A sandbox a user who is not root owns (tmp_path lies in a folder only root may enter)."""
    base = Path(tempfile.mkdtemp(prefix="claudetto-rt16-"))
    os.chmod(base, 0o755)
    env, variables = make_sandbox(base / "sb")
    for path in [base / "sb", *(base / "sb").rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    try:
        yield env, variables
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _clean_as_nobody(variables: dict[str, str]) -> dict[str, object]:
    """The cleanup `claudetto clean` runs (its report as JSON), run by that user through the
    core (the venv's packages, the dashboard's, may lie in root's home)."""
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT)!r}); from app.core import hygiene; "
            "print(json.dumps(hygiene.report_json(hygiene.run_cleanup([]))))")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **variables}
    done = subprocess.run([str(PYTHON), "-P", "-c", code], capture_output=True, text=True,
                          env=env, cwd="/", user=NOBODY, group=NOBODY, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@as_nobody
def test_a_containers_volume_in_an_old_session_folder_is_kept_for_a_user_who_is_not_root(
        nobody_sandbox: tuple[SandboxEnv, dict[str, str]]) -> None:
    """LOSS. `docker run -d -v <scratchpad>/data:/data redis`, as a Claude session does for a
    test database: the container's processes are root's, so a user who is not root cannot
    read which mount namespace they are in, and claudetto passed them over. Their mount
    table is readable by every user: it shows the folder mounted there. A month later the
    session is dead and its folder old, and the cleanup emptied the folder under the running
    server. Kept `in_use` while the container runs."""
    env, variables = nobody_sandbox
    folder = env.root / "ctmp" / f"claude-{NOBODY}" / "-work-proj" / str(uuid.uuid4())
    data = folder / "scratchpad" / "data"
    data.mkdir(parents=True)
    (data / "dump.rdb").write_text("the test database\n")
    for path in (folder.parent.parent, folder.parent, folder, folder / "scratchpad", data, data / "dump.rdb"):
        os.chown(path, NOBODY, NOBODY)
    for path in (data, folder / "scratchpad", folder):
        set_mtime(path, 40 * DAY)
    target = env.root / "container-data"
    target.mkdir()
    # the container: root's, in a mount namespace of its own, the folder mounted into it
    server = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               f'mount --bind "{data}" "{target}" && echo up && exec sleep 120'],
                              stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None and server.stdout.readline() == b"up\n"
        report = _clean_as_nobody(variables)
        assert (data / "dump.rdb").exists(), report
    finally:
        server.kill()
        server.wait()
    report = _clean_as_nobody(variables)  # the container stopped: the old folder goes
    assert not folder.exists(), report
    assert report["cleaned"]["folders"] == 1  # type: ignore[index]


# --- a Claude whose command line its own title overwrote ----------------------------------------

NODE = shutil.which("node")


@pytest.fixture
def titled_claude(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """`claude ARGS...` as Node runs Claude's `cli.js` on Linux: it sets `process.title =
    "claude"` at its start, which writes the title over its arguments (`/proc/<pid>/cmdline`
    reads `claude` and NULs). No sessions file: a headless run."""
    program = tmp_path / "lib" / "node_modules" / "@anthropic-ai" / "claude-code" / "cli.js"
    program.parent.mkdir(parents=True)
    program.write_text('process.title = "claude"; console.log("up"); setTimeout(() => {}, 120000);\n')
    running: list[subprocess.Popen[bytes]] = []

    def launch(cwd: Path, *args: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([str(NODE), str(program), *args], cwd=cwd, stdout=subprocess.PIPE)
        running.append(proc)
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        assert Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"claude", b""]
        return proc

    yield launch
    for proc in running:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(NODE is None, reason="needs node")
@pytest.mark.parametrize("args", [["-p", "-c", "go on"], ["-p", "--resume", "{sid}", "go on"]])
def test_a_headless_claude_whose_title_hid_its_arguments_keeps_the_session_it_goes_on_with(
        sandbox: SandboxEnv, titled_claude: Callable[..., subprocess.Popen[bytes]], tmp_path: Path,
        args: list[str]) -> None:
    """LOSS. A script's `claude -p -c "go on"` (or `--resume <id>`) goes on with a session of
    40 days ago, no sessions file. Claude on Node sets its title at its start, which on Linux
    overwrites its arguments: `--continue` and the id were read from a command line that
    showed only `claude`, it held nothing, and another session's cleanup took the session's
    folder while it ran. Such a Claude is unsure: what it goes on with is taken as `-c` is (the
    newest conversation of its folder before it began, and every one written since)."""
    project = tmp_path / "proj"
    project.mkdir()
    slug = paths.project_slug(str(project))
    older, last = str(uuid.uuid4()), str(uuid.uuid4())
    _transcript(sandbox, project, older, 60 * DAY)
    resumed = _transcript(sandbox, project, last, 40 * DAY)
    kept = _old_folder(sandbox, slug, last, 40 * DAY)
    gone = _old_folder(sandbox, slug, older, 60 * DAY)
    proc = titled_claude(project, *(arg.format(sid=last) for arg in args))
    if "--resume" in args:  # not the newest one: its transcript goes on once it runs
        _transcript(sandbox, project, str(uuid.uuid4()), 20 * DAY)
        resumed.write_text(resumed.read_text() + json.dumps({"type": "user", "sessionId": last}) + "\n")
    kept_while_it_runs(proc, kept, gone)



def test_a_claude_whose_title_left_a_bare_name_and_no_sessions_file_keeps_its_folders_session(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A runtime that points the kernel at the title alone leaves `claude` and nothing after it:
    no sessions file, nothing to read. Unsure too: taken as a `--continue` is."""
    project = tmp_path / "proj"
    project.mkdir()
    slug = paths.project_slug(str(project))
    last = str(uuid.uuid4())
    _transcript(sandbox, project, last, 40 * DAY)
    kept = _old_folder(sandbox, slug, last, 40 * DAY)
    gone = _old_folder(sandbox, slug, str(uuid.uuid4()), 60 * DAY)
    proc = subprocess.Popen(["bash", "-c", "exec -a claude cat"], cwd=project, stdin=subprocess.PIPE)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{proc.pid}/cmdline").read_bytes() != b"claude\0":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    kept_while_it_runs(proc, kept, gone)


@pytest.mark.parametrize("config", [False, True])
def test_a_dead_remote_mount_on_a_processs_path_never_holds_the_cleanup(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]], hung_fuse: Callable[[Path], None],
        tmp_path: Path, config: bool) -> None:
    """HANG. `export PATH=~/remote/bin:$PATH` in a shell, the `sshfs` behind `~/remote` since
    gone dead: every look at who uses a folder resolved each process's PATH (and TMPDIR, HOME)
    entries to real paths, and the look at the dead mount waited for ever, holding the
    cleanup's lock. Such an entry is taken as written; so is its temp folder when it names a
    Claude config folder (`CLAUDE_CONFIG_DIR` exported in a shell's rc: its Claude temp root
    is compared with ours). (`started` before `hung_fuse`: a cleanup still waiting is killed
    once the mount is cut, never waited on before.)"""
    remote = tmp_path / "remote"
    hung_fuse(remote)
    sleep = shutil.which("sleep")  # found here: a search of that PATH would wait on the mount too
    env = {"PATH": f"{remote}/bin:/usr/bin:/bin", "TMPDIR": str(remote / "tmp")}
    if config:
        env["CLAUDE_CONFIG_DIR"] = str(sandbox.home / ".claude-work")
    started.append(subprocess.Popen([str(sleep), "60"], cwd="/", env=env))
    folder = _old_folder(sandbox, "-srv-work", str(uuid.uuid4()))
    clean = subprocess.Popen([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                              "clean", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started.append(clean)
    try:
        _, errors = clean.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        pytest.fail("claudetto clean waited on the dead mount")
    assert clean.returncode == 0, errors
    assert not folder.exists()
