"""The state store against hostile files: a FIFO, socket, device, folder or symlink where a
state file belongs (never a hang, never a lost record), paths that are not UTF-8 (kept to
the byte), numbers JSON cannot write strictly. Anything that could hang runs in a child
process under a timeout, so a hang fails the test instead of stopping the suite."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import journal, paths, state
from tests.support import ROOT, SandboxEnv

LATIN1 = b"caf\xe9"  # "café" in Latin-1: not UTF-8


def run_py(code: str, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter with the sandbox environment; a hang raises TimeoutExpired."""
    return subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, check=False, env=dict(os.environ))


def aside(folder: Path, name: str) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith(f"{name}.corrupt-"))


# --- read_regular ---------------------------------------------------------------------------


def test_read_regular_reads_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(b'{"a": 1}')
    assert state.read_regular(target) == b'{"a": 1}'
    assert state.read_regular(str(target)) == b'{"a": 1}'
    big = tmp_path / "big"
    big.write_bytes(b"x" * 300_000)  # more than one read() asks for
    assert state.read_regular(big) == b"x" * 300_000
    with pytest.raises(FileNotFoundError):
        state.read_regular(tmp_path / "none.json")


def test_read_regular_refuses_a_file_past_the_limit(tmp_path: Path) -> None:
    target = tmp_path / "big.json"
    target.write_bytes(b"1" * 101)
    assert state.read_regular(target, limit=101) == b"1" * 101
    with pytest.raises(state.FileTooLarge, match="longer than 100 bytes") as caught:
        state.read_regular(target, limit=100)
    assert isinstance(caught.value, OSError) and str(target) in str(caught.value)


def test_read_regular_refuses_a_folder_a_symlink_and_a_socket(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "link.json").symlink_to(real)
    (tmp_path / "folder.json").mkdir()
    monkeypatch.chdir(tmp_path)  # a socket path must be short: bind it relative
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("sock.json")
        for name, kind in (("link.json", "a symlink"), ("folder.json", "a folder"), ("sock.json", "a socket")):
            with pytest.raises(state.NotRegularFile, match=kind) as caught:
                state.read_regular(tmp_path / name)
            assert isinstance(caught.value, OSError)
            assert state.read_json(tmp_path / name, lambda: "default") == "default"
    assert (tmp_path / "link.json").is_symlink() and real.read_text() == "{}"
    assert (tmp_path / "folder.json").is_dir()


def test_a_fifo_is_refused_at_once_by_every_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "ledger.json"
    os.mkfifo(fifo)
    code = f"""
from app.core import state
path = {str(fifo)!r}
try:
    state.read_regular(path)
except state.NotRegularFile as exc:
    print("refused:", exc)
print("read_json:", state.read_json(path, lambda: "default"))
print("remove_json_if:", state.remove_json_if(path, lambda data: True))
try:
    state.read_json(path, dict, strict=True)
except OSError as exc:
    print("strict:", type(exc).__name__)
"""
    result = run_py(code)
    assert result.returncode == 0 and result.stderr == "", result
    assert result.stdout.splitlines() == [
        f"refused: {fifo} is a FIFO, not a regular file",
        "read_json: default",
        "remove_json_if: False",
        "strict: NotRegularFile",
    ]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # a reader never moves or removes it


def test_a_device_is_refused_without_being_opened(tmp_path: Path) -> None:
    device = tmp_path / "checkouts.json"
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: a read never ends
    except PermissionError:
        pytest.skip("no permission to make a device node here")
    result = run_py(f"""
from app.core import state
try:
    state.read_regular({str(device)!r})
except state.NotRegularFile as exc:
    print(exc)
print(state.read_json({str(device)!r}, list))
""")
    assert result.stdout.splitlines() == [f"{device} is a character device, not a regular file", "[]"], result


# --- writers --------------------------------------------------------------------------------


def test_a_writer_sets_a_fifo_aside_and_writes_the_state(tmp_path: Path) -> None:
    fifo = tmp_path / "gc" / "s1.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    result = run_py(f"""
from app.core import state
print(state.update_json({str(fifo)!r}, lambda d: {{**d, "records": [1]}}, dict))
""")
    assert result.returncode == 0 and result.stdout.strip() == "{'records': [1]}", result
    assert json.loads(fifo.read_text()) == {"records": [1]}
    moved = aside(fifo.parent, "s1.json")
    assert len(moved) == 1 and stat.S_ISFIFO(os.lstat(moved[0]).st_mode)


def test_a_fifo_where_the_lock_goes_does_not_hang_a_writer(tmp_path: Path) -> None:
    target = tmp_path / "ledger.json"
    os.mkfifo(tmp_path / "ledger.json.lock")
    result = run_py(f"""
from app.core import state
state.update_json({str(target)!r}, lambda d: {{**d, "a": 1}}, dict)
state.update_json({str(target)!r}, lambda d: {{**d, "b": 2}}, dict)
""")
    assert result.returncode == 0 and result.stderr == "", result
    assert json.loads(target.read_text()) == {"a": 1, "b": 2}
    assert (tmp_path / "ledger.json.lock").is_file()
    moved = aside(tmp_path, "ledger.json.lock")
    assert len(moved) == 1 and stat.S_ISFIFO(os.lstat(moved[0]).st_mode)


def test_a_symlinked_state_file_is_set_aside_and_its_target_untouched(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"theirs": true}')
    target = tmp_path / "checkouts.json"
    target.symlink_to(elsewhere)
    state.update_json(target, lambda d: {**d, "ours": True}, dict)
    assert json.loads(target.read_text()) == {"ours": True} and not target.is_symlink()
    assert json.loads(elsewhere.read_text()) == {"theirs": True}
    assert [p.is_symlink() for p in aside(tmp_path, "checkouts.json")] == [True]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 file anyway")
def test_a_state_file_that_cannot_be_read_now_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "ledger.json"
    target.write_text('{"files": {"/a": 1}}')
    target.chmod(0)
    try:
        with pytest.raises(PermissionError):
            state.update_json(target, lambda d: {"files": {}}, dict)
    finally:
        target.chmod(0o600)
    assert json.loads(target.read_text()) == {"files": {"/a": 1}}


# --- what is written ------------------------------------------------------------------------


def test_a_path_that_is_not_utf8_round_trips_to_the_byte(tmp_path: Path) -> None:
    raw_path = os.fsencode(tmp_path) + b"/" + LATIN1 + b"/\xff\x80.txt"
    name = os.fsdecode(raw_path)
    assert "\udce9" in name
    target = tmp_path / "records.json"
    state.update_json(target, lambda d: {"records": [{"path": name}, {"path": "/other"}]}, dict)
    data = target.read_bytes()
    assert data.isascii() and b"\\udce9" in data
    back = state.read_json(target, dict)
    assert back == {"records": [{"path": name}, {"path": "/other"}]}
    assert os.fsencode(back["records"][0]["path"]) == raw_path
    assert aside(tmp_path, "records.json") == []


def test_a_file_an_older_version_wrote_with_raw_bytes_still_reads(tmp_path: Path) -> None:
    target = tmp_path / "ledger.json"
    target.write_bytes(b'{"files": {"/x/' + LATIN1 + b'": 1, "/y": 2}}')
    data = state.read_json(target, dict)
    assert os.fsencode(next(iter(data["files"]))) == b"/x/" + LATIN1
    assert aside(tmp_path, "ledger.json") == []
    state.update_json(target, lambda d: {**d, "more": 1}, dict)  # rewritten as ASCII, nothing lost
    assert target.read_bytes().isascii()
    assert state.read_json(target, dict)["files"] == data["files"]


def test_numbers_json_writes_only_loosely_never_block_later_writes(tmp_path: Path) -> None:
    target = tmp_path / "gc.json"
    target.write_text('{"records": [{"time": Infinity}, {"time": NaN}, {"time": 1e400}]}')
    state.update_json(target, lambda d: {**d, "records": [*d["records"], {"time": 5}]}, dict)
    records = state.read_json(target, dict)["records"]
    assert len(records) == 4 and records[3] == {"time": 5}
    assert records[0]["time"] == float("inf") and records[1]["time"] != records[1]["time"]


# --- the journal ----------------------------------------------------------------------------


def test_a_fifo_as_the_journal_is_neither_read_nor_written(sandbox: SandboxEnv) -> None:
    target = paths.journal_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(target)
    result = run_py("""
from app.core import journal
print(journal.read_entries())
journal.append({"path": "/p", "result": "removed"})
try:
    journal.append({"path": "/p", "result": "started"}, strict=True)
except OSError as exc:
    print(type(exc).__name__)
""")
    assert result.returncode == 0 and result.stdout.splitlines() == ["[]", "NotRegularFile"], result
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


def test_the_journal_keeps_a_path_that_is_not_utf8(tmp_path: Path) -> None:
    name = os.fsdecode(os.fsencode(tmp_path) + b"/" + LATIN1)
    journal.append({"path": name, "result": "removed", "bytes": 1})
    assert [os.fsencode(e["path"]) for e in journal.read_entries()] == [os.fsencode(tmp_path) + b"/" + LATIN1]
