"""The edit ledger through `python -P -m hooks`, as Claude runs it: PostToolUse records,
UserPromptSubmit tells each outside change once, and prints nothing otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from app.core import ledger, paths
from tests.support import SandboxEnv, hook_modules, run_hook, set_mtime

SID = "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00"


def edit(path: Path, *, session: str = SID, tool: str = "Edit", cwd: Path | None = None,
         **extra: Any) -> subprocess.CompletedProcess[bytes]:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd or path.parent),
               "transcript_path": "/t.jsonl", "tool_name": tool, "tool_use_id": "toolu_1",
               "tool_input": {key: str(path), "old_string": "a", "new_string": "b"},
               "tool_response": {"filePath": str(path)}, **extra}
    result = run_hook(payload, cwd=cwd or path.parent)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), result
    return result


def prompt(cwd: Path, *, session: str = SID) -> str:
    """Run UserPromptSubmit; the additionalContext it printed, or "" when it printed nothing."""
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(cwd),
               "transcript_path": "/t.jsonl", "prompt": "go on"}
    result = run_hook(payload, cwd=cwd)
    assert result.returncode == 0 and result.stderr == b"", result
    if result.stdout == b"":
        return ""
    out = json.loads(result.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    text = out["hookSpecificOutput"]["additionalContext"]
    assert text, "printed an empty context instead of nothing"
    return text


def entries() -> dict[str, Any]:
    return json.loads(paths.ledger_file().read_text())["files"]


def log_text() -> str:
    root = paths.log_root()
    return "".join(f.read_text() for f in root.rglob("*.log")) if root.exists() else ""


def test_edit_outside_change_one_line_then_silence(tmp_path: Path) -> None:
    f = tmp_path / "src.py"
    f.write_text("x = 1\n")
    edit(f)
    assert prompt(tmp_path) == ""
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == f"The user or a tool changed `{f}` after the last edit of `main`."
    assert prompt(tmp_path) == ""
    assert prompt(tmp_path) == ""


def test_several_changes_one_line_each(tmp_path: Path) -> None:
    files = [tmp_path / f"m{i}.py" for i in range(3)]
    for f in files:
        f.write_text("a\n")
        edit(f, tool="Write")
    files[0].write_text("b\n")
    files[2].unlink()
    assert prompt(tmp_path).splitlines() == [
        f"The user or a tool changed `{files[0]}` after the last edit of `main`.",
        f"The user or a tool changed `{files[2]}` after the last edit of `main`.",
    ]
    assert prompt(tmp_path) == ""


def test_subagent_attribution(tmp_path: Path) -> None:
    f = tmp_path / "notes.md"
    f.write_text("one\n")
    edit(f, agent_id="a1b2c3", agent_type="Explore")
    assert entries()[str(f)]["agent"] == "Explore"
    f.write_text("two\n")
    assert prompt(tmp_path) == f"The user or a tool changed `{f}` after the last edit of `Explore`."
    edit(f)  # the main thread edits it next: the entry is its own now
    assert entries()[str(f)]["agent"] == "main"


def test_notebook_edit_uses_notebook_path(tmp_path: Path) -> None:
    nb = tmp_path / "a.ipynb"
    nb.write_text('{"cells": []}')
    edit(nb, tool="NotebookEdit")
    assert list(entries()) == [str(nb)]


def test_touch_without_change_is_silent(tmp_path: Path) -> None:
    f = tmp_path / "same.txt"
    f.write_text("same\n")
    edit(f)
    set_mtime(f, 100)
    assert prompt(tmp_path) == ""
    time.sleep(0.01)
    f.write_text("same\n")  # rewritten with equal content
    assert prompt(tmp_path) == ""


def test_deletion_is_said(tmp_path: Path) -> None:
    f = tmp_path / "gone.txt"
    f.write_text("bye\n")
    edit(f)
    f.unlink()
    assert prompt(tmp_path) == f"The user or a tool changed `{f}` after the last edit of `main`."
    assert prompt(tmp_path) == ""


def test_another_session_is_not_told(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("1\n")
    edit(f, session="other-session")
    f.write_text("2\n")
    assert prompt(tmp_path) == ""
    assert prompt(tmp_path, session="other-session") != ""


def test_eviction_at_201_files(tmp_path: Path) -> None:
    files = [tmp_path / f"f{i:03}.txt" for i in range(201)]
    for f in files:
        f.write_text(f.name)
    for f in files[:200]:  # the first 200 in process (fast), the 201st through the hook
        assert ledger.record_file(str(f), "main", SID)
    assert len(entries()) == 200
    edit(files[200])
    listed = list(entries())
    assert len(listed) == 200
    assert str(files[0]) not in listed
    assert listed[0] == str(files[1]) and listed[-1] == str(files[200])


# One writer: a process that hands each PostToolUse object on its stdin, one a line, to the
# hook's handler, as `python -P -m hooks` would in a process of its own. The race is between
# the writers' processes (the ledger keeps nothing in memory between two edits): 8 processes
# racing 25 times each, without 192 interpreter starts (~4 s of CPU) between the races.
_WRITER = """
import sys
from app.core import fastjson
from hooks.post_tool import handle
for line in sys.stdin.buffer:
    assert handle(fastjson.loads(line)) == 0
"""


def test_concurrent_writers_lose_no_entry(tmp_path: Path) -> None:
    """8 writer processes at once, 25 edits of distinct files each: all 200 entries land."""
    files = [[tmp_path / f"w{w}" / f"f{i:02}.txt" for i in range(25)] for w in range(8)]
    for group in files:
        group[0].parent.mkdir()
        for f in group:
            f.write_text(str(f))

    def writer(group: list[Path]) -> subprocess.CompletedProcess[bytes]:
        lines = b"".join(json.dumps({
            "hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path),
            "transcript_path": "/t.jsonl", "tool_name": "Edit", "tool_use_id": "toolu_1",
            "tool_input": {"file_path": str(f), "old_string": "a", "new_string": "b"},
            "tool_response": {"filePath": str(f)}}).encode() + b"\n" for f in group)
        return subprocess.run([sys.executable, "-P", "-c", _WRITER], input=lines, capture_output=True,
                              cwd=tmp_path, timeout=120, check=False)

    with ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(writer, files))
    assert all((d.returncode, d.stdout, d.stderr) == (0, b"", b"") for d in done), done
    assert sorted(entries()) == sorted(str(f) for group in files for f in group)


def test_corrupt_ledger_is_moved_aside_and_hooks_exit_0(tmp_path: Path) -> None:
    paths.ledger_file().parent.mkdir(parents=True, exist_ok=True)
    paths.ledger_file().write_bytes(b"\x00{garbage")
    assert prompt(tmp_path) == ""
    aside = list(paths.ledger_file().parent.glob("ledger.json.corrupt-*"))
    assert [a.read_bytes() for a in aside] == [b"\x00{garbage"]
    paths.ledger_file().write_text('{"files": ')
    f = tmp_path / "a.txt"
    f.write_text("a")
    edit(f)
    assert list(entries()) == [str(f)]
    assert len(list(paths.ledger_file().parent.glob("ledger.json.corrupt-*"))) == 2
    assert "corrupt" in log_text()


def test_bad_edit_payloads_leave_no_entry_and_are_logged(tmp_path: Path) -> None:
    base = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path), "tool_name": "Edit"}
    bad: list[dict[str, Any]] = [
        {**base, "tool_input": {}},
        {**base, "tool_input": {"file_path": 42}},
        {**base, "tool_input": "not an object"},
        {**base, "tool_input": {"file_path": str(tmp_path / "missing.txt")}},
        {**base, "tool_input": {"file_path": str(tmp_path)}},
    ]
    for payload in bad:
        result = run_hook(payload, cwd=tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert not paths.ledger_file().exists()
    assert log_text().count("no entry") == len(bad)


def test_an_edit_without_a_session_id_is_recorded_and_told_at_a_prompt_without_one(tmp_path: Path) -> None:
    """Claude always sends `session_id`; a hand-made or older payload may not: its edit is no
    lost record. It is told at a prompt that names no session either, never to a session's."""
    edited = tmp_path / "f.txt"
    edited.write_text("one\n")
    for session in (None, ""):
        payload: dict[str, Any] = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(tmp_path),
                                   "tool_name": "Write", "tool_input": {"file_path": str(edited), "content": "one\n"}}
        if session is None:
            del payload["session_id"]
        assert run_hook(payload, cwd=tmp_path).returncode == 0
    assert list(json.loads(paths.ledger_file().read_text())["files"]) == [str(edited)]
    edited.write_text("two\n")
    prompt: dict[str, Any] = {"hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path), "prompt": "go on"}
    assert run_hook({**prompt, "session_id": SID}, cwd=tmp_path).stdout == b""  # not this session's edit
    told = run_hook(prompt, cwd=tmp_path)
    line = json.loads(told.stdout)["hookSpecificOutput"]["additionalContext"]
    assert line == f"The user or a tool changed `{edited}` after the last edit of `main`."
    assert run_hook(prompt, cwd=tmp_path).stdout == b""  # once per change


HEAVY = {"fnv_c", "_cffi_backend", "git", "textual", "dataclasses", "pathlib", "json"}


def test_small_files_do_not_load_cffi_a_large_one_does(tmp_path: Path, sandbox: SandboxEnv) -> None:
    small = tmp_path / "small.py"
    small.write_text("x = 1\n" * 100)
    base = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path), "tool_name": "Edit"}
    mods = hook_modules({**base, "tool_input": {"file_path": str(small)}}, tmp_path)
    assert "app.core.ledger" in mods
    assert not HEAVY & mods
    small.write_text("x = 2\n" * 100)
    mods = hook_modules({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
                           "prompt": "x"}, tmp_path)
    assert "app.core.ledger" in mods
    assert not (HEAVY | {"typing"}) & mods  # the prompt path is all the ledger's
    if ledger.c_available():
        big = tmp_path / "big.bin"
        big.write_bytes(bytes(range(256)) * 1024)
        mods = hook_modules({**base, "tool_input": {"file_path": str(big)}}, tmp_path)
        assert "fnv_c" in mods
        assert entries()[str(big)]["hash"] == f"{ledger.fnv1a_64(big.read_bytes()):016x}"
