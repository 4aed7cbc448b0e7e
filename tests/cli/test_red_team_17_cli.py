"""The commands attacked a seventeenth time: dead mounts, a state folder that is no folder,
odd names. Real subprocesses of the command, real files, real FUSE mounts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.core import ledger
from tests.support import SandboxEnv, hung_fuse_mounts, run_cli

SID = "s-rt17"


def test_the_ledger_lists_a_file_on_a_dead_sshfs_without_waiting_on_it(tmp_path: Path, sandbox: SandboxEnv) -> None:
    """HANG. Claude edited `notes.md` on an `sshfs` share; the host went away. `claudetto
    ledger` looked at the file (and the dashboard's Ledger screen, every 5 s, in a worker that
    never returned) and waited for ever. Now a file on a remote mount that does not answer is
    listed as it was last judged, not looked at, and the command answers."""
    remote, here = tmp_path / "remote", tmp_path / "here.md"
    remote.mkdir()
    (remote / "notes.md").write_text("remote notes\n")
    here.write_text("local\n")
    assert ledger.record_file(str(remote / "notes.md"), "main", SID)
    assert ledger.record_file(str(here), "main", SID)
    here.write_text("changed by the user\n")
    with hung_fuse_mounts() as mount:
        mount(remote)
        try:
            done = run_cli("ledger", "--json", timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError("claudetto ledger waited on the dead mount") from None
    assert done.returncode == 0, done.stderr
    rows = {row["path"]: row for row in json.loads(done.stdout)["files"]}
    assert set(rows) == {str(remote / "notes.md"), str(here)}
    assert rows[str(here)]["changed"] is True
    assert rows[str(remote / "notes.md")]["changed"] is False


@pytest.mark.parametrize("args", [["ledger", "--json"], ["ledger"], ["gc", "--json"], ["gc"]])
def test_a_state_folder_that_is_a_file_is_said_in_one_clear_line(tmp_path: Path, sandbox: SandboxEnv,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   args: list[str]) -> None:
    """WRONG MESSAGE. CLAUDETTO_HOME named a file (a typo in an rc file): `claudetto ledger`
    said `claudetto: NotADirectoryError: [Errno 20] Not a directory: '…/ledger.json'`, a
    Python class and a quoted repr, naming no command. Now the line names the command, the
    path as it is and what is wrong, and nothing reaches stdout."""
    state = tmp_path / "claudetto-state"
    state.write_text("not a folder\n")
    monkeypatch.setenv("CLAUDETTO_HOME", str(state))
    done = run_cli(*args)
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"claudetto {args[0]}: {state}/"), done.stderr
    assert "Not a directory" in done.stderr, done.stderr
    assert "Error" not in done.stderr and "[Errno" not in done.stderr and "'" not in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["worktrees", "memory", "clean"])
def test_a_project_named_on_a_dead_sshfs_is_refused_in_one_line_not_waited_on(tmp_path: Path, sandbox: SandboxEnv,
                                                                             command: str) -> None:
    """HANG. `claudetto worktrees ~/remote/shop` (or memory, clean), the `sshfs` behind
    `~/remote` since gone dead: the check that PROJECT is a folder looked at it and waited for
    ever, and Ctrl-C was the only way out. Now a PROJECT on a remote mount that does not answer
    is refused in one line, at once, and nothing else is done."""
    remote = tmp_path / "remote"
    with hung_fuse_mounts() as mount:
        mount(remote)
        try:
            done = run_cli(command, str(remote / "shop"), "--json", timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"claudetto {command} waited on the dead mount") from None
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"claudetto {command}: "), done.stderr
    assert str(remote / "shop") in done.stderr and "does not answer" in done.stderr, done.stderr


@pytest.mark.parametrize("args", [["release", "{remote}/shop/.claude/worktrees/fix"],
                                  ["release", "{remote}/shop/.claude/worktrees/fix", "--dry-run", "--json"],
                                  ["supersede", "{remote}/notes.md", "--line", "1", "--correction", "x"]])
def test_a_path_or_file_on_a_dead_sshfs_is_refused_in_one_line_not_waited_on(tmp_path: Path, sandbox: SandboxEnv,
                                                                            args: list[str]) -> None:
    """HANG. `claudetto release` of a checkout of a project on an `sshfs` share whose host went
    away (or `supersede` of a file there) waited for ever. Now it is refused at once in one
    line, and nothing is changed (a release's record stays for when the share is back)."""
    from app.core import paths

    remote = tmp_path / "remote"
    given = [arg.format(remote=remote) for arg in args]
    with hung_fuse_mounts() as mount:
        mount(remote)
        try:
            done = run_cli(*given, timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"claudetto {args[0]} waited on the dead mount") from None
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr == f"claudetto {args[0]}: {given[1]} lies on a remote mount that does not answer\n"
    assert not paths.checkouts_file().exists()
