"""The ledger against hostile input, through `python -P -m hooks` and `claudetto ledger` as
users run them: paths whose bytes are not UTF-8, a FIFO where ledger.json belongs, entries
with numbers out of range, and who counts as a subagent (`agent_id`, not `agent_type`)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from app.core import ledger_line, paths
from tests.support import ROOT, SandboxEnv, hook_modules, run_hook, set_mtime

SID = "5f1d2c3b-0a9e-4b8c-9d7f-6e5a4b3c2d1e"
LATIN1 = b"caf\xe9"  # "café" in Latin-1: not UTF-8
LINE = "The user or a tool changed `{}` after the last edit of `{}`."


def post_tool(path: str, *, tool: str = "Edit", cwd: Path, **extra: Any) -> None:
    payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(cwd),
               "transcript_path": "/t.jsonl", "tool_name": tool, "tool_use_id": "toolu_1",
               "tool_input": {"file_path": path, "old_string": "a", "new_string": "b", "content": "b"},
               "tool_response": {"filePath": path}, **extra}
    result = run_hook(payload, cwd=cwd)  # json.dumps writes a lone surrogate as "\udcXX", as JSON allows
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), result


def prompt(cwd: Path, **extra: Any) -> str:
    """UserPromptSubmit; the additionalContext it printed, "" when it printed nothing."""
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(cwd),
               "transcript_path": "/t.jsonl", "prompt": "go on", **extra}
    result = run_hook(payload, cwd=cwd, timeout=10)
    assert result.returncode == 0 and result.stderr == b"", result
    if result.stdout == b"":
        return ""
    out = json.loads(result.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    return str(out["hookSpecificOutput"]["additionalContext"])


def claudetto(*args: str) -> subprocess.CompletedProcess[str]:
    """The `claudetto` console script (the module when the script is not installed); its
    output decoded as Python decodes file names, so a path's raw bytes read back as they are."""
    script = Path(sys.executable).parent / "claudetto"
    command = [str(script)] if script.exists() else [sys.executable, "-P", "-m", "app.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, errors="surrogateescape",
                          cwd=ROOT, timeout=10, check=False, env=dict(os.environ))


def ledger_json() -> dict[str, Any]:
    return dict(json.loads(paths.ledger_file().read_bytes())["files"])


def log_text(sandbox: SandboxEnv) -> str:
    root = paths.log_root()
    return "".join(f.read_text(errors="replace") for f in root.rglob("*.log")) if root.exists() else ""


def write_aged(path: str | bytes, text: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(text)
    set_mtime(Path(os.fsdecode(path)), 100)


# --- paths that are not UTF-8 -----------------------------------------------------------------


def test_a_latin1_path_is_recorded_kept_and_named(sandbox: SandboxEnv, tmp_path: Path) -> None:
    folder = os.fsencode(sandbox.user_tmp) + b"/" + LATIN1  # a folder named in Latin-1
    os.mkdir(folder)
    odd = folder + b"/r\xe9sum\xe9.txt"
    plain = sandbox.user_tmp / "plain.txt"
    write_aged(odd, b"one\n")
    write_aged(str(plain), b"one\n")
    post_tool(os.fsdecode(odd), cwd=tmp_path)
    post_tool(str(plain), tool="Write", cwd=tmp_path)
    write_aged(odd, b"one\n")  # rewritten by the next Write, in the temp folder (a scratch output)
    post_tool(os.fsdecode(odd), tool="Write", cwd=tmp_path)

    assert paths.ledger_file().read_bytes().isascii()
    files = ledger_json()
    assert [os.fsencode(p) for p in files] == [os.fsencode(plain), odd]  # the bytes, exactly
    records = json.loads(paths.gc_records_file(SID).read_bytes())["records"]
    assert {os.fsencode(r["path"]) for r in records} == {os.fsencode(plain), odd}
    assert not list(paths.claudetto_home().rglob("*.corrupt-*")), "a state file was moved aside"

    write_aged(odd, b"two\n")
    shown = os.fsencode(os.fsdecode(odd)).decode("utf-8", "backslashreplace")
    assert shown.endswith("/caf\\xe9/r\\xe9sum\\xe9.txt")
    assert prompt(tmp_path) == LINE.format(shown, "main")
    assert prompt(tmp_path) == ""
    plain.write_text("two\n")
    assert prompt(tmp_path) == LINE.format(plain, "main")  # the other entry still works
    assert [os.fsencode(p) for p in ledger_json()] == [os.fsencode(plain), odd]
    assert not list(paths.claudetto_home().rglob("*.corrupt-*"))

    result = claudetto("ledger", "--json")
    assert result.returncode == 0, result
    listed = json.loads(result.stdout)["files"]
    assert [(os.fsencode(f["path"]), f["changed"]) for f in listed] == [(os.fsencode(plain), True), (odd, True)]


def test_an_agent_name_that_is_not_utf8_is_shown_escaped(tmp_path: Path) -> None:
    f = tmp_path / "notes.md"
    write_aged(str(f), b"a")
    post_tool(str(f), cwd=tmp_path, agent_id="a1b2c3d", agent_type="rev\udce9w\ud800")
    write_aged(str(f), b"b")
    assert prompt(tmp_path) == LINE.format(f, "rev\\xe9w\\ud800")


# --- a FIFO where ledger.json belongs --------------------------------------------------------


def test_a_fifo_as_the_ledger_hangs_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    paths.ledger_file().parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(paths.ledger_file())
    for args in (("ledger",), ("ledger", "--json")):
        result = claudetto(*args)  # 10 s timeout: a hang fails the test
        assert result.returncode == 1 and result.stdout == "", result
        assert result.stderr.count("\n") == 1 and "FIFO" in result.stderr and "Traceback" not in result.stderr
    assert prompt(tmp_path) == ""
    assert "FIFO" in log_text(sandbox)
    assert stat.S_ISFIFO(os.lstat(paths.ledger_file()).st_mode)  # reading never moves it

    f = tmp_path / "a.txt"
    write_aged(str(f), b"a")
    post_tool(str(f), cwd=tmp_path)  # the writer sets the FIFO aside and starts a ledger
    assert list(ledger_json()) == [str(f)]
    moved = list(paths.claudetto_home().glob("ledger.json.corrupt-*"))
    assert len(moved) == 1 and stat.S_ISFIFO(os.lstat(moved[0]).st_mode)
    assert claudetto("ledger", "--json").returncode == 0


# --- numbers out of range --------------------------------------------------------------------


def test_entries_with_numbers_out_of_range_are_skipped_and_the_rest_works(sandbox: SandboxEnv,
                                                                         tmp_path: Path) -> None:
    good, told = tmp_path / "good.txt", tmp_path / "told.txt"
    for f in (good, told):
        write_aged(str(f), b"a")
        post_tool(str(f), cwd=tmp_path)
    write_aged(str(told), b"b")
    assert prompt(tmp_path) == LINE.format(told, "main")  # its entry now holds a told record
    files = ledger_json()
    template = files[str(good)]
    bad: dict[str, tuple[str, Any]] = {
        "size_inf": ("size", "Infinity"), "mtime_nan": ("mtime_ns", "NaN"), "seen_huge": ("seen_ns", "1e400"),
        "size_negative": ("size", "-1"), "edited_negative": ("edited_ns", "-5"), "inode_bool": ("inode", "true"),
        "ctime_float": ("ctime_ns", "1.5"), "hash_short": ("hash", '"abc"'), "agent_number": ("agent", "7"),
    }
    text_entries = []
    for name, (key, raw) in bad.items():
        victim = tmp_path / f"{name}.txt"
        write_aged(str(victim), b"changed since")  # would be told if it were judged
        fields = {**template, key: "@@"}
        text_entries.append(f'{json.dumps(str(victim))}: {json.dumps(fields).replace(chr(34) + "@@" + chr(34), raw)}')
    # the told record of told.txt with a time no int can hold: it used to stop every line
    told_entry = files[str(told)]
    told_entry["told"]["seen_ns"] = "@@"
    text_entries.append(f'{json.dumps(str(told))}: {json.dumps(told_entry).replace(chr(34) + "@@" + chr(34), "1e400")}')
    text_entries.append(f'{json.dumps(str(good))}: {json.dumps(template)}')
    paths.ledger_file().write_text('{"version": 1, "files": {' + ", ".join(text_entries) + "}}")

    write_aged(str(good), b"b")
    assert prompt(tmp_path) == LINE.format(good, "main")
    assert prompt(tmp_path) == ""
    result = claudetto("ledger", "--json")
    assert result.returncode == 0 and result.stderr == "", result
    assert [(f["path"], f["changed"], f["told"]) for f in json.loads(result.stdout)["files"]] == [(str(good), True, True)]
    text = claudetto("ledger")
    assert text.returncode == 0 and str(good) in text.stdout and "size_inf" not in text.stdout
    log = log_text(sandbox)
    assert all(f"{name}.txt" in log for name in bad) and "skipped the entry" in log
    assert len(ledger_json()) == len(bad) + 2  # skipped, not deleted: a newer version's may be there


# --- who is a subagent -----------------------------------------------------------------------


def test_agent_type_without_agent_id_is_the_main_thread(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    write_aged(str(f), b"a")
    post_tool(str(f), cwd=tmp_path, agent_type="reviewer")  # main thread of `claude --agent reviewer`
    assert ledger_json()[str(f)]["agent"] == "main"
    write_aged(str(f), b"b")
    assert prompt(tmp_path, agent_type="reviewer") == LINE.format(f, "main")


def test_a_subagent_is_named_by_its_type_or_as_subagent(tmp_path: Path) -> None:
    typed, untyped = tmp_path / "typed.py", tmp_path / "untyped.py"
    for f in (typed, untyped):
        write_aged(str(f), b"a")
    post_tool(str(typed), cwd=tmp_path, agent_id="a1b2c3d4e5f6a7b8", agent_type="Explore")
    post_tool(str(untyped), cwd=tmp_path, agent_id="a1b2c3d")
    assert {p: e["agent"] for p, e in ledger_json().items()} == {str(typed): "Explore", str(untyped): "subagent"}
    for f in (typed, untyped):
        write_aged(str(f), b"b")
    assert prompt(tmp_path).splitlines() == [LINE.format(typed, "Explore"), LINE.format(untyped, "subagent")]


def test_a_subagent_prompt_prints_nothing_and_leaves_the_lines_to_the_main_thread(tmp_path: Path) -> None:
    f = tmp_path / "shared.py"
    write_aged(str(f), b"a")
    post_tool(str(f), cwd=tmp_path)
    write_aged(str(f), b"b")
    before = paths.ledger_file().read_bytes()
    assert prompt(tmp_path, agent_id="a1b2c3d", agent_type="Explore") == ""
    assert paths.ledger_file().read_bytes() == before  # nothing marked told
    assert prompt(tmp_path) == LINE.format(f, "main")
    assert prompt(tmp_path) == ""


# --- the hot path ----------------------------------------------------------------------------


def test_the_hostile_paths_load_no_heavy_module(sandbox: SandboxEnv, tmp_path: Path) -> None:
    odd = os.fsencode(tmp_path) + b"/" + LATIN1 + b".py"
    write_aged(odd, b"a")
    base = {"session_id": SID, "cwd": str(tmp_path), "transcript_path": "/t.jsonl"}
    edit = {**base, "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": os.fsdecode(odd)}, "agent_id": "a1b2c3d"}
    heavy = {"json", "pathlib", "re", "typing", "dataclasses"}
    assert not heavy & hook_modules(edit, tmp_path)
    write_aged(odd, b"b")
    loaded = hook_modules({**base, "hook_event_name": "UserPromptSubmit", "prompt": "x"}, tmp_path)
    assert "app.core.ledger" in loaded and not heavy & loaded
    assert ledger_line.utf16_len("a\U0001f600") == 3
