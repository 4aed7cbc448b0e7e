"""The edit ledger in the core: real files in tmp_path, judged by content, told once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from app.core import fnv, ledger, ledger_entry, ledger_line, paths
from tests.support import SandboxEnv, set_mtime


def ledger_data() -> dict:
    return json.loads(paths.ledger_file().read_text())


RACY_NS = 20_000_000


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stat is trusted 20 ms after the file's last change here (2 s in the product)."""
    monkeypatch.setattr(ledger_entry, "RACY_NS", RACY_NS)


def settle() -> None:
    time.sleep(RACY_NS / 1e9 * 1.5)


def aged(path: Path, text: str) -> Path:
    """Write `text` and make the file old; after settle() its stat is trusted."""
    path.write_text(text)
    set_mtime(path, 3600)
    return path


@pytest.fixture
def hash_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the files the ledger reads and hashes (the hash itself still runs)."""
    calls: list[int] = []
    real = fnv.fnv1a_64

    def counting(data: bytes) -> int:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(fnv, "fnv1a_64", counting)
    return calls


def test_change_is_told_once_then_silence(tmp_path: Path) -> None:
    f = aged(tmp_path / "a.py", "print(1)\n")
    assert ledger.record_file(str(f), "main", "s1")
    assert ledger.check_session("s1") == []
    f.write_text("print(2)\n")
    line = f"The user or a tool changed `{f}` after the last edit of `main`."
    assert ledger.check_session("s1") == [line]
    assert ledger.check_session("s1") == []
    f.write_text("print(3)\n")  # changed again: news again
    assert ledger.check_session("s1") == [line]
    assert ledger.check_session("s1") == []


def test_back_to_the_edited_content_then_a_change_is_news(tmp_path: Path) -> None:
    f = aged(tmp_path / "a.py", "one\n")
    ledger.record_file(str(f), "main", "s1")
    f.write_text("two\n")
    assert len(ledger.check_session("s1")) == 1
    f.write_text("one\n")
    assert ledger.check_session("s1") == []
    assert ledger_data()["files"][str(f)]["told"] is None
    f.write_text("two\n")
    assert len(ledger.check_session("s1")) == 1


def test_touch_is_no_change_and_the_new_stat_is_kept(tmp_path: Path, hash_calls: list[int]) -> None:
    f = aged(tmp_path / "a.py", "same\n")
    settle()
    ledger.record_file(str(f), "main", "s1")
    hash_calls.clear()
    set_mtime(f, 1800)  # a touch: new mtime and ctime, same content
    settle()
    assert ledger.check_session("s1") == []
    assert len(hash_calls) == 1  # the stat moved: rehashed once
    entry = ledger_data()["files"][str(f)]
    assert entry["mtime_ns"] == f.stat().st_mtime_ns
    assert entry["told"] is None
    hash_calls.clear()
    assert ledger.check_session("s1") == []
    assert hash_calls == []  # the stored stat holds now: not read again


def test_unmoved_stat_is_not_rehashed(tmp_path: Path, hash_calls: list[int]) -> None:
    files = [aged(tmp_path / f"f{i}.txt", f"content {i}\n") for i in range(20)]
    settle()
    for f in files:
        ledger.record_file(str(f), "main", "s1")
    hash_calls.clear()
    before = paths.ledger_file().read_bytes()
    assert ledger.check_session("s1") == []
    assert hash_calls == []
    assert paths.ledger_file().read_bytes() == before  # nothing written either


def test_a_fresh_stat_is_checked_by_content(tmp_path: Path, hash_calls: list[int],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ledger_entry, "RACY_NS", 2_000_000_000)  # the product's window
    f = tmp_path / "new.txt"
    f.write_text("just written\n")  # mtime = now: a same-tick rewrite would not move it
    ledger.record_file(str(f), "main", "s1")
    hash_calls.clear()
    assert ledger.check_session("s1") == []
    assert hash_calls == [len("just written\n")]


def test_same_size_rewrite_with_old_mtime_is_seen(tmp_path: Path) -> None:
    f = aged(tmp_path / "a.txt", "aaaa\n")
    ledger.record_file(str(f), "main", "s1")
    mtime = f.stat().st_mtime_ns
    f.write_text("bbbb\n")
    os.utime(f, ns=(mtime, mtime))  # same size, same mtime: only ctime and content moved
    assert len(ledger.check_session("s1")) == 1


def test_deletion_is_told_once(tmp_path: Path) -> None:
    f = aged(tmp_path / "gone.txt", "bye\n")
    ledger.record_file(str(f), "Explore", "s1")
    f.unlink()
    assert ledger.check_session("s1") == [
        f"The user or a tool changed `{f}` after the last edit of `Explore`."
    ]
    assert ledger.check_session("s1") == []
    f.write_text("bye\n")  # back as edited
    assert ledger.check_session("s1") == []
    f.write_text("other\n")
    assert ledger.check_session("s1") == [
        f"The user or a tool changed `{f}` after the last edit of `Explore`."
    ]


def test_a_folder_in_place_of_the_file_is_a_deletion(tmp_path: Path) -> None:
    f = aged(tmp_path / "x", "file\n")
    ledger.record_file(str(f), "main", "s1")
    f.unlink()
    f.mkdir()
    assert ledger.check_session("s1") == [f"The user or a tool changed `{f}` after the last edit of `main`."]


def test_only_the_editing_session_is_told(tmp_path: Path) -> None:
    f = aged(tmp_path / "a.txt", "1\n")
    ledger.record_file(str(f), "main", "s1")
    f.write_text("2\n")
    assert ledger.check_session("s2") == []
    assert len(ledger.check_session("s1")) == 1


def test_the_last_edit_decides_the_session_and_resets_told(tmp_path: Path) -> None:
    f = aged(tmp_path / "a.txt", "1\n")
    ledger.record_file(str(f), "main", "s1")
    f.write_text("2\n")
    assert len(ledger.check_session("s1")) == 1
    set_mtime(f, 3600)
    ledger.record_file(str(f), "Plan", "s2")  # s2 edits it now
    f.write_text("3\n")
    assert ledger.check_session("s1") == []
    assert ledger.check_session("s2") == [f"The user or a tool changed `{f}` after the last edit of `Plan`."]


def test_eviction_oldest_first_and_a_new_edit_refreshes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "3")
    files = [aged(tmp_path / f"f{i}", str(i)) for i in range(5)]
    for f in files[:3]:
        ledger.record_file(str(f), "main", "s1")
    ledger.record_file(str(files[0]), "main", "s1")  # refreshed: now the newest
    ledger.record_file(str(files[3]), "main", "s1")  # f1 is the oldest: out
    assert list(ledger_data()["files"]) == [str(files[2]), str(files[0]), str(files[3])]
    ledger.record_file(str(files[4]), "main", "s1")
    assert list(ledger_data()["files"]) == [str(files[0]), str(files[3]), str(files[4])]


def test_unreadable_or_missing_file_leaves_no_entry(tmp_path: Path, sandbox: SandboxEnv) -> None:
    assert not ledger.record_file(str(tmp_path / "missing"), "main", "s1")
    assert not ledger.record_file(str(tmp_path), "main", "s1")  # a folder
    assert not paths.ledger_file().exists()


def test_corrupt_ledger_is_moved_aside(tmp_path: Path) -> None:
    paths.ledger_file().parent.mkdir(parents=True, exist_ok=True)
    paths.ledger_file().write_text("{not json")
    assert ledger.check_session("s1") == []
    aside = list(paths.ledger_file().parent.glob("ledger.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_text() == "{not json"
    f = aged(tmp_path / "a", "a")
    assert ledger.record_file(str(f), "main", "s1")
    assert list(ledger_data()["files"]) == [str(f)]


def test_json_of_another_shape_is_moved_aside_not_lost(tmp_path: Path) -> None:
    paths.ledger_file().parent.mkdir(parents=True, exist_ok=True)
    paths.ledger_file().write_text('["not", "a", "ledger"]')
    assert ledger.check_session("s1") == []
    f = aged(tmp_path / "a", "a")
    assert ledger.record_file(str(f), "main", "s1")
    aside = list(paths.ledger_file().parent.glob("ledger.json.corrupt-*"))
    assert len(aside) == 1 and json.loads(aside[0].read_text()) == ["not", "a", "ledger"]
    assert list(ledger_data()["files"]) == [str(f)]


def test_a_malformed_entry_is_skipped_and_kept(tmp_path: Path) -> None:
    f = aged(tmp_path / "a", "a")
    ledger.record_file(str(f), "main", "s1")
    data = ledger_data()
    data["files"]["/weird"] = {"session": "s1", "hash": 5}
    data["files"]["/odder"] = ["not", "an", "entry"]
    paths.ledger_file().write_text(json.dumps(data))
    f.write_text("b")
    assert len(ledger.check_session("s1")) == 1
    assert "/weird" in ledger_data()["files"] and "/odder" in ledger_data()["files"]
    assert [x.path for x in ledger.ledger_files()] == [str(f)]


def test_ledger_files_judges_live_and_writes_nothing(tmp_path: Path) -> None:
    same = aged(tmp_path / "same", "s")
    moved = aged(tmp_path / "moved", "m")
    gone = aged(tmp_path / "gone", "g")
    for f in (same, moved, gone):
        ledger.record_file(str(f), "main", "s1")
    moved.write_text("M")
    gone.unlink()
    before = paths.ledger_file().read_bytes()
    result = {x.path: x for x in ledger.ledger_files()}
    assert paths.ledger_file().read_bytes() == before
    assert (result[str(same)].changed, result[str(same)].told) == (False, False)
    assert (result[str(moved)].changed, result[str(moved)].told) == (True, False)
    assert (result[str(gone)].changed, result[str(gone)].deleted) == (True, True)
    assert result[str(same)].hash == f"{ledger.fnv1a_64(b's'):016x}"
    ledger.check_session("s1")
    result = {x.path: x for x in ledger.ledger_files()}
    assert result[str(moved)].told and result[str(gone)].told
    assert not result[str(same)].told


def test_edited_path_and_agent_from_payloads(tmp_path: Path) -> None:
    assert ledger.edited_path({"tool_name": "Edit", "tool_input": {"file_path": "/a/../b/c.py"}}) == "/b/c.py"
    assert ledger.edited_path({"tool_name": "NotebookEdit", "tool_input": {"notebook_path": "/n.ipynb"}}) == "/n.ipynb"
    assert ledger.edited_path({"tool_name": "NotebookEdit", "tool_input": {"file_path": "/n.ipynb"}}) is None
    assert ledger.edited_path({"tool_name": "Write", "cwd": "/p", "tool_input": {"file_path": "x.py"}}) == "/p/x.py"
    assert ledger.edited_path({"tool_name": "Write", "tool_input": {"file_path": "x.py"}}) is None
    assert ledger.edited_path({"tool_name": "Edit", "tool_input": {"file_path": 7}}) is None
    assert ledger.edited_path({"tool_name": "Edit", "tool_input": "nope"}) is None
    # agent_type alone is also sent on the main thread of an --agent session: agent_id marks a subagent
    assert ledger.agent_of({"agent_type": "Explore"}) == "main"
    assert ledger.agent_of({"agent_id": "a1b2c3d", "agent_type": "Explore"}) == "Explore"
    assert ledger.agent_of({"agent_id": "a1b2c3d"}) == "subagent"
    assert ledger.agent_of({"agent_type": ""}) == "main"
    assert ledger.agent_of({"agent_type": None}) == "main"
    assert ledger.agent_of({}) == "main"


def test_the_line_stays_one_line() -> None:
    assert ledger_line.change_line("/a\nb", "main") == "The user or a tool changed `/a\\nb` after the last edit of `main`."


def test_lines_past_the_context_budget_wait_for_the_next_prompt(tmp_path: Path) -> None:
    folder = tmp_path / ("long-folder-name-" * 8)
    folder.mkdir()
    files = [aged(folder / f"file_{i:03}.txt", "a") for i in range(120)]
    for f in files:
        ledger.record_file(str(f), "main", "s1")
    for f in files:
        f.write_text("b")
    first = ledger.check_session("s1")
    assert 0 < len(first) < 120
    assert sum(len(x) + 1 for x in first) <= ledger.CONTEXT_BUDGET
    told = list(first)
    for _ in range(10):
        more = ledger.check_session("s1")
        if not more:
            break
        assert sum(len(x) + 1 for x in more) <= ledger.CONTEXT_BUDGET
        told += more
    assert len(told) == 120 and len(set(told)) == 120
    assert ledger.check_session("s1") == []
