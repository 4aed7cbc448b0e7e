"""Many long files changed at once (a branch switched, a formatter run over the tree): the
prompt reads them two at a time, and tells exactly what one-by-one reads would have told,
in the ledger's order, once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from app.core import fnv, ledger
from app.core.ledger_line import change_line
from app.core.ledger_look import PARALLEL_MIN_BYTES, Look, look_ahead, read_and_hash
from tests.support import run_hook, set_mtime

SID = "7e3a1c52-9b0d-4f6e-8a21-3c4d5e6f7a8b"
MiB = 1024 * 1024


def _edit(path: Path) -> None:
    payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(path.parent),
               "tool_name": "Write", "tool_input": {"file_path": str(path), "content": "x"},
               "tool_response": {"type": "update", "filePath": str(path)}}
    done = run_hook(payload, cwd=path.parent)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done


def _prompt(cwd: Path) -> list[str]:
    done = run_hook({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(cwd),
                     "prompt": "go on"}, cwd=cwd)
    assert done.returncode == 0 and done.stderr == b"", done
    if not done.stdout:
        return []
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]).splitlines()


def _long(path: Path, n: int, size: int = MiB) -> Path:
    path.write_bytes(bytes([n % 251]) * (size - 8) + b"%08d" % n)
    set_mtime(path, 3600)  # old enough: its stat stands for its content
    return path


def test_many_long_files_changed_at_once_are_each_told_once_in_order(tmp_path: Path) -> None:
    files = [_long(tmp_path / f"f{i}.bin", i) for i in range(8)]
    kept, touched = _long(tmp_path / "kept.bin", 100), _long(tmp_path / "touched.bin", 101)
    gone, fifo = _long(tmp_path / "gone.bin", 102), _long(tmp_path / "fifo.bin", 103)
    every = [*files, kept, touched, gone, fifo]
    for f in every:
        _edit(f)
    assert _prompt(tmp_path) == []
    for i, f in enumerate(files):
        _long(f, i + 50)  # the user's tool rewrote it, same length
    os.utime(touched)  # a touch: the content is the edited one
    gone.unlink()
    fifo.unlink()
    os.mkfifo(fifo)  # no regular file there any more: as good as gone, never opened
    told = _prompt(tmp_path)
    assert told == [change_line(str(f), "main") for f in [*files, gone, fifo]]
    assert _prompt(tmp_path) == []  # each change told once


def test_the_look_ahead_hashes_as_a_single_read_does(tmp_path: Path) -> None:
    files = [_long(tmp_path / f"f{i}.bin", i, MiB + i) for i in range(5)]
    small = _long(tmp_path / "small.py", 7, 100)
    assert sum(f.stat().st_size for f in files) >= PARALLEL_MIN_BYTES
    ahead = look_ahead([(str(f), []) for f in [*files, small]], deadline_ns=2**62)
    assert set(ahead) == {str(f) for f in [*files, small]}
    for f in [*files, small]:
        alone = read_and_hash(str(f))
        assert (ahead[str(f)].kind, ahead[str(f)].hash) == ("file", alone.hash)
        assert alone.hash == fnv.hex64(fnv.fnv1a_64_py(f.read_bytes()))


def test_past_the_deadline_only_what_a_stat_tells_is_looked_at(tmp_path: Path) -> None:
    files = [_long(tmp_path / f"f{i}.bin", i) for i in range(3)]
    missing = tmp_path / "missing.bin"
    ahead = look_ahead([(str(f), []) for f in [*files, missing]], deadline_ns=0)
    assert list(ahead) == [str(missing)] and ahead[str(missing)].kind == "deleted"


def test_a_stat_that_still_holds_needs_no_read(tmp_path: Path) -> None:
    f = _long(tmp_path / "a.bin", 1)
    stored = {**read_and_hash(str(f)).sig}  # type: ignore[dict-item]
    stored["seen_ns"] = max(stored["mtime_ns"], stored["ctime_ns"]) + ledger.RACY_NS
    other = _long(tmp_path / "b.bin", 2)
    ahead = look_ahead([(str(f), [(stored, "0123456789abcdef")]), (str(other), [])], deadline_ns=2**62)
    assert isinstance(ahead[str(f)], Look) and ahead[str(f)].hash == "0123456789abcdef"  # the stored hash, unread
    assert ahead[str(f)].fresh is False
    assert str(other) not in ahead  # one read alone is not worth a thread: the caller reads it
