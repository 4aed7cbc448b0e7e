"""Red team, round thirteen: the session-start cleanup and liveness.

Found and fixed: a Claude of a second config folder (`CLAUDE_CONFIG_DIR=~/.claude-work`)
whose sessions file could not be read at the cleanup's look (caught half rewritten) was
passed over, where one of our own config folder makes every session unsure: the old
folder of the session it had resumed went.

What held: an old session folder holding a FIFO, a device node and names that are not
UTF-8 (in it, and in its project folder's name) goes, whole, journaled, and nothing hangs.
"""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path

from app.core import paths
from tests.core.test_other_configs import other_claude
from tests.support import SandboxEnv, run_cli, set_mtime

DAY = 86_400


def _old_folder(sandbox: SandboxEnv, slug: str, sid: str, age_s: float = 31 * DAY) -> Path:
    """`claude-<uid>/<slug>/<sid>/tasks/b1.output`, all `age_s` old."""
    folder = sandbox.claude_tmp / slug / sid
    (folder / "tasks").mkdir(parents=True)
    (folder / "tasks" / "b1.output").write_text("build log\n")
    for path in (folder / "tasks" / "b1.output", folder / "tasks", folder):
        set_mtime(path, age_s)
    return folder


def _clean() -> dict[str, object]:
    done = run_cli("clean", "--json")
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def _journaled(path: Path) -> list[str]:
    file = paths.journal_file()
    lines = [json.loads(line) for line in file.read_text().splitlines()] if file.exists() else []
    return [str(line.get("result")) for line in lines if line.get("path") == str(path)]


# --- liveness ---------------------------------------------------------------------------------


def test_a_second_accounts_claude_whose_file_is_caught_half_written_keeps_its_old_folder(
        sandbox: SandboxEnv) -> None:
    """A second account's Claude resumed a month-old session; its sessions file is being
    rewritten (cut short) when the cleanup reads it. Before: passed over, as if no Claude
    ran there, and the resumed session's folder went."""
    config = sandbox.home / ".claude-work"
    child, sid = other_claude(config, str(sandbox.home))
    try:
        folder = _old_folder(sandbox, "-srv-work", sid)
        file = config / "sessions" / f"{child.pid}.json"
        file.write_text(file.read_text()[:40])
        _clean()
        assert (folder / "tasks" / "b1.output").is_file()
        file.write_text(json.dumps({"pid": child.pid, "sessionId": sid, "cwd": "/srv/work"}))
        _clean()
        assert folder.is_dir()  # readable again: live by its id
    finally:
        child.kill()
        child.wait()
    _clean()
    assert not folder.exists()  # its Claude ended: the folder is an ended session's


# --- what goes, whatever it holds -------------------------------------------------------------


def test_an_old_folder_holding_a_fifo_and_a_device_node_goes_without_hanging(sandbox: SandboxEnv) -> None:
    """(Held.) Nothing reads the FIFO (no writer would ever come) nor the device: unlinked."""
    folder = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    os.mkfifo(folder / "tasks" / "pipe")
    os.mknod(folder / "tasks" / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    set_mtime(folder / "tasks", 31 * DAY)
    set_mtime(folder, 31 * DAY)
    report = _clean()
    assert not folder.exists() and _journaled(folder) == ["removed"], report
    assert os.path.exists("/dev/null") and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_names_that_are_not_utf8_go_and_are_journaled(sandbox: SandboxEnv) -> None:
    """(Held.) A file name of Latin-1 bytes inside, and a project folder whose name is not
    UTF-8 (a path Claude slugged from raw bytes): both folders go, each journaled."""
    inside = _old_folder(sandbox, "-srv-w", str(uuid.uuid4()))
    (Path(os.fsdecode(os.path.join(os.fsencode(inside), b"caf\xe9.txt")))).write_bytes(b"x")
    set_mtime(inside, 31 * DAY)
    odd = _old_folder(sandbox, os.fsdecode(b"-srv-\xff\xfe"), str(uuid.uuid4()))
    report = _clean()
    assert not inside.exists() and not odd.exists(), report
    assert _journaled(inside) == ["removed"] and _journaled(odd) == ["removed"]
