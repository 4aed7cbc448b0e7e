"""Red team, round sixteen: the session-start cleanup and liveness, as a user who is not root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

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
