"""The output GC keeps what somebody is using at the moment of removal: a folder a running
process works in (whatever became of the session that recorded it), and a scratch file
another file replaced between the sweep's reading of the records and the removal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.core import gc
from tests.support import SandboxEnv, add_record, run_hook, set_mtime

OLD = 20 * 86_400
SESSION = "0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a"



def statuses(report: gc.GcReport) -> dict[str, tuple[str, str]]:
    return {e.path: (e.status, e.reason) for e in report.entries}


def test_an_old_output_a_process_works_in_is_kept_until_it_ends(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """`mktemp -d`, then a dev server started there; the session is long gone."""
    folder = sandbox.user_tmp / "tmp.server"
    (folder / "www").mkdir(parents=True)
    set_mtime(folder, OLD)
    add_record("dead-session", folder)
    started.append(subprocess.Popen(["sleep", "60"], cwd=folder / "www"))
    key = os.path.realpath(folder)
    assert statuses(gc.sweep(dry_run=True))[key] == ("kept", "in_use")
    assert statuses(gc.sweep(trash=False))[key] == ("kept", "in_use")
    assert (folder / "www").is_dir()
    started.pop().kill()
    assert statuses(gc.sweep(trash=False))[key] == ("removed", "age")
    assert not folder.exists()


def test_a_process_that_starts_in_the_folder_before_the_removal_keeps_it(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    folder = sandbox.user_tmp / "tmp.late"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "f").write_text("x")
    set_mtime(folder, OLD)
    add_record("dead-session", folder)

    def walks_in(_: str) -> None:
        started.append(subprocess.Popen(["sleep", "60"], cwd=folder / "sub"))

    report = gc.sweep(trash=False, _before_remove=walks_in)
    assert statuses(report)[os.path.realpath(folder)] == ("kept", "in_use")
    assert (folder / "sub" / "f").read_text() == "x"


def test_a_scratch_file_replaced_right_before_its_removal_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The records said the Write made it; by the moment of removal another file has taken
    its name (an editor's save: write a new file, rename it over): that one is not the GC's."""
    made = Path(os.path.realpath(sandbox.user_tmp)) / "plan.md"
    made.write_text("the Write's")
    payload = {"hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": str(tmp_path),
               "tool_name": "Write", "tool_input": {"file_path": str(made), "content": "x"},
               "tool_response": {"type": "create"}, "duration_ms": 20}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    set_mtime(made, OLD)
    if str(made) not in statuses(gc.sweep(dry_run=True)):
        pytest.skip("the Write's evidence does not hold on this file system")

    def replaced(_: str) -> None:
        fresh = made.with_name("plan.md.new")
        fresh.write_text("the user's own")
        set_mtime(fresh, OLD)
        fresh.rename(made)

    report = gc.sweep(trash=False, _before_remove=replaced)
    assert statuses(report)[str(made)] == ("kept", "changed")  # the removal holds to the file measured
    assert made.read_text() == "the user's own"
