"""The state store: atomic writes under a lock, corrupt files moved aside, races retried."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pytest

from app.core import state
from tests.support import SandboxEnv


def test_missing_file_gives_the_default(tmp_path: Path) -> None:
    assert state.read_json(tmp_path / "none.json", dict) == {}


def test_update_writes_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "s" / "data.json"
    state.update_json(target, lambda d: {**d, "a": 1}, dict)
    state.update_json(target, lambda d: {**d, "b": 2}, dict)
    assert json.loads(target.read_text()) == {"a": 1, "b": 2}
    assert sorted(p.name for p in target.parent.iterdir()) == ["data.json", "data.json.lock"]


def test_corrupt_file_is_moved_aside_not_deleted(sandbox: SandboxEnv, tmp_path: Path) -> None:
    target = tmp_path / "ledger.json"
    target.write_text("{half")
    assert state.read_json(target, dict) == {}
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("ledger.json.corrupt-")]
    assert len(aside) == 1 and aside[0].read_text() == "{half"
    assert not target.exists()


def _adding(key: str) -> Callable[[dict[str, bool]], dict[str, bool]]:
    return lambda data: {**data, key: True}


def _add_keys(args: tuple[str, int, int]) -> None:
    path, worker, count = args
    for i in range(count):
        state.update_json(Path(path), _adding(f"{worker}-{i}"), dict)


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    target = tmp_path / "shared.json"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.map(_add_keys, [(str(target), w, 20) for w in range(4)])
    assert len(json.loads(target.read_text())) == 80


def test_a_writer_that_cannot_get_the_lock_gives_up_after_the_tries(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDETTO_LEDGER_WRITE_TRIES", "2")
    monkeypatch.setattr(state, "LOCK_WAIT_S", 0.05)
    target = tmp_path / "busy.json"
    state.write_json_atomic(target, {"kept": 1})
    with state.locked(target), pytest.raises(state.StateBusy):
        state.update_json(target, lambda d: {"lost": 1}, dict)
    assert json.loads(target.read_text()) == {"kept": 1}


def test_remove_json_if_checks_what_the_file_holds_now(tmp_path: Path) -> None:
    target = tmp_path / "records.json"
    state.write_json_atomic(target, {"records": ["raced in"]})
    assert state.remove_json_if(target, lambda d: d.get("records") == []) is False
    assert target.exists()
    state.write_json_atomic(target, {"records": []})
    assert state.remove_json_if(target, lambda d: d.get("records") == []) is True
    assert not target.exists()
    assert state.remove_json_if(target, lambda d: True) is False  # already gone
