"""Red team, round nine: the edit ledger told truly. Edits that did not happen, paths as the
model writes them (`~`, `//`), an edit the ledger cannot hash, and an entry pushed out of a
full ledger before its change was told. Driven as Claude drives it: PostToolUse and
UserPromptSubmit through `python -P -m hooks`, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.core import ledger
from tests.hooks.test_ledger_hooks import SID, edit, entries, log_text, prompt
from tests.support import run_cli, run_hook

OTHER = "7d1e2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"


def line(path: Path | str, agent: str = "main") -> str:
    return f"The user or a tool changed `{path}` after the last edit of `{agent}`."


def post(path: str, *, tool: str = "Edit", cwd: Path, response: Any = None, event: str = "PostToolUse",
         key: str | None = None, **extra: Any) -> None:
    """A PostToolUse (or another event) of an edit tool whose `tool_input` names `path` as given."""
    name = key or ("notebook_path" if tool == "NotebookEdit" else "file_path")
    payload = {"hook_event_name": event, "session_id": SID, "cwd": str(cwd), "transcript_path": "/t.jsonl",
               "tool_name": tool, "tool_use_id": "toolu_9", "tool_input": {name: path, "old_string": "a",
                                                                           "new_string": "b"},
               "tool_response": {"filePath": path} if response is None else response, **extra}
    result = run_hook(payload, cwd=cwd)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), result


def ledger_json() -> dict[str, dict[str, Any]]:
    result = run_cli("ledger", "--json")
    assert result.returncode == 0, result.stderr
    return {row["path"]: row for row in json.loads(result.stdout)["files"]}


# --- an edit that did not happen records nothing ------------------------------------------


@pytest.mark.parametrize("response", [
    "<tool_use_error>String to replace not found in file.</tool_use_error>",
    "Error: File has been modified since read, either by the user or by a linter.",
    {"is_error": True, "content": "String to replace not found in file."},
    {"success": False, "filePath": "x"},
    {"error": "File has not been read yet. Read it first before writing to it."},
])
def test_an_edit_that_failed_records_nothing_and_the_change_before_it_is_told(
        tmp_path: Path, response: Any) -> None:
    """The model edits, the user changes the file, the model's next Edit fails because of it
    (its old_string is gone). Recording that failed edit would take the user's content for the
    model's and swallow the one notice the model needs."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2  # the user's\n")
    post(str(f), cwd=tmp_path, response=response)
    assert prompt(tmp_path) == line(f)
    assert "did not change" in log_text()


def test_a_failure_event_records_nothing(tmp_path: Path) -> None:
    """PostToolUseFailure (how current versions report a failed tool) is no edit either."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    post(str(f), cwd=tmp_path, event="PostToolUseFailure", response="String to replace not found")
    assert prompt(tmp_path) == line(f)


def test_a_successful_response_that_mentions_an_error_is_still_an_edit(tmp_path: Path) -> None:
    """Only the response's own failure marks count: content that says "error" is an edit."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("raise Error('is_error')\n")
    post(str(f), tool="Write", cwd=tmp_path,
         response={"type": "update", "filePath": str(f), "content": "raise Error('is_error')\n", "error": ""})
    assert prompt(tmp_path) == ""


# --- the path as the model wrote it -------------------------------------------------------


def test_a_tilde_path_is_the_home_as_claude_expands_it(tmp_path: Path) -> None:
    """Claude expands `~/` in a file_path to the home; taken from the cwd instead, the edit
    named a file that is not there and left no entry, so every later change was missed."""
    home = Path(os.environ["HOME"])
    f = home / "notes.md"
    f.write_text("one\n")
    post("~/notes.md", cwd=tmp_path)
    assert list(entries()) == [str(f)]
    f.write_text("two\n")
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


def test_a_tilde_of_another_user_or_a_tilde_file_is_not_the_home(tmp_path: Path) -> None:
    """`~root/x` is not expanded (it needs a password-database lookup on the hot path and the
    model never writes it); `~x.py`, relative, is a file of the cwd named so."""
    odd = tmp_path / "~x.py"
    odd.write_text("a\n")
    post("~x.py", cwd=tmp_path)
    assert list(entries()) == [str(odd)]


def test_a_path_with_a_double_leading_slash_is_one_file_with_one_name(tmp_path: Path) -> None:
    """POSIX lets `//` at the start mean something else, Linux and macOS do not, and Claude
    resolves it to `/`: the line names the file as every other tool shows it, and an edit
    through either spelling is one entry."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    post("/" + str(f), cwd=tmp_path)
    assert list(entries()) == [str(f)]
    post(str(f), cwd=tmp_path)
    assert list(entries()) == [str(f)]
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == line(f)


def test_dot_dot_segments_and_a_trailing_dot_name_the_file(tmp_path: Path) -> None:
    """`a/../b.py` and `./b.py` are the file Claude wrote (it resolves them the same way)."""
    (tmp_path / "a").mkdir()
    f = tmp_path / "b.py"
    f.write_text("x = 1\n")
    post(f"{tmp_path}/a/../././b.py", cwd=tmp_path)
    assert list(entries()) == [str(f)]
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == line(f)


# --- an edit the ledger cannot hash ---------------------------------------------------------


def test_an_edit_that_makes_the_file_too_large_to_hash_is_no_outside_change(tmp_path: Path) -> None:
    """The model's own Write makes a listed file too large to hash on the hot path: the entry
    of its smaller content must not stay, or its own edit is told as a tool's change."""
    f = tmp_path / "big.csv"
    f.write_text("a,b\n")
    edit(f)
    with open(f, "r+b") as fh:  # sparse: 300 MiB of length, no disk
        fh.truncate(300 * 1024 * 1024)
    post(str(f), tool="Write", cwd=tmp_path)
    assert prompt(tmp_path) == ""
    assert str(f) not in entries()
    assert "too large to hash" in log_text()


def test_another_sessions_edit_too_large_to_hash_is_told_to_the_first(tmp_path: Path) -> None:
    """Session B's Write makes the file session A edited too large to hash: B's entry cannot
    be, yet A must still hear that its file changed (and B, whose edit it is, must not)."""
    f = tmp_path / "big.csv"
    f.write_text("a,b\n")
    edit(f)
    with open(f, "r+b") as fh:
        fh.truncate(300 * 1024 * 1024)
    post(str(f), tool="Write", cwd=tmp_path, session_id=OTHER)
    assert prompt(tmp_path, session=OTHER) == ""
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


# --- a full ledger ----------------------------------------------------------------------------


def test_a_changed_entry_pushed_out_of_a_full_ledger_is_still_told(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """LEDGER_MAX_FILES reached within one turn while the user changed the oldest file: the
    change must be told at the next prompt, not go with the entry."""
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "3")
    files = [tmp_path / f"f{i}.py" for i in range(4)]
    for f in files[:3]:
        f.write_text(f"{f.name}\n")
        edit(f)
    files[0].write_text("changed by the user\n")
    files[3].write_text("new\n")
    edit(files[3])
    assert list(entries()) == [str(f) for f in files[1:]]
    assert prompt(tmp_path) == line(files[0])
    assert prompt(tmp_path) == ""
    assert "left" not in json.loads(Path(os.environ["CLAUDETTO_HOME"], "ledger.json").read_text())


def test_an_unchanged_or_already_told_entry_leaves_a_full_ledger_quietly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "2")
    a, b, c, d = (tmp_path / f"{n}.py" for n in "abcd")
    for f in (a, b):
        f.write_text(f"{f.name}\n")
        edit(f)
    b.write_text("told\n")
    assert prompt(tmp_path) == line(b)
    for f in (c, d):  # a (unchanged) and then b (its change already told) leave
        f.write_text(f"{f.name}\n")
        edit(f)
    assert prompt(tmp_path) == ""


def test_an_entry_pushed_out_tells_its_own_session_under_its_own_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another session's edits push this session's changed file out: this session is told,
    naming the agent that edited it, and the other session is not."""
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "1")
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("a\n")
    edit(a, agent_id="a1b2c3d", agent_type="Explore")
    a.write_text("a changed\n")
    b.write_text("b\n")
    edit(b, session=OTHER)
    assert prompt(tmp_path, session=OTHER) == ""
    assert prompt(tmp_path) == line(a, "Explore")
    assert prompt(tmp_path) == ""


def test_an_entry_pushed_out_and_changed_back_says_nothing(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "1")
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("a\n")
    edit(a)
    a.write_text("a changed\n")
    b.write_text("b\n")
    edit(b)
    a.write_text("a\n")  # back to what the model wrote before the prompt came
    assert prompt(tmp_path) == ""


def test_a_file_pushed_out_then_edited_again_through_another_name_is_no_outside_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pushed out of the ledger within the turn it was edited (its stat still too fresh to
    trust), then edited again through a symlinked folder: the model's own edit, not news."""
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "1")
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    a, b = real / "a.py", tmp_path / "b.py"
    a.write_text("a\n")
    edit(a)
    b.write_text("b\n")
    edit(b)  # a leaves the ledger
    a.write_text("a, the model's second edit\n")
    edit(tmp_path / "link" / "a.py")
    assert prompt(tmp_path) == ""


def test_a_long_turn_past_a_full_ledger_keeps_the_one_real_change(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn edits far more files than the ledger holds: only a file that really changed
    waits to be told, so the files the model merely edited cannot push it out."""
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "1")
    a = tmp_path / "a.py"
    a.write_text("a\n")
    edit(a)
    a.write_text("a, the user's\n")
    for i in range(80):  # the turn's edits, as the hook records them (80 hook runs add nothing)
        f = tmp_path / f"f{i}.py"
        f.write_text(f"{i}\n")
        assert ledger.record_file(str(f), "main", SID)
    assert [r["path"] for r in json.loads(Path(os.environ["CLAUDETTO_HOME"], "ledger.json").read_text())["left"]] \
        == [str(a)]
    assert prompt(tmp_path) == line(a)
    assert prompt(tmp_path) == ""


def test_a_hostile_left_list_is_skipped_and_the_ledger_goes_on(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    state = Path(os.environ["CLAUDETTO_HOME"], "ledger.json")
    for left in ("x", [1, None, {"path": 3, "session": SID}, {"path": "rel", "session": SID, "agent": "main",
                                                              "hash": "0" * 16},
                       {"path": str(f), "session": SID, "agent": "", "hash": "0" * 16},
                       {"path": str(f), "session": SID, "agent": "main", "hash": "nothex"}]):
        data = json.loads(state.read_text())
        data["left"] = left
        state.write_text(json.dumps(data))
        assert prompt(tmp_path) == ""
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == line(f)
    edit(f)
    assert prompt(tmp_path) == ""


def test_a_file_pushed_out_then_deleted_is_told_and_a_cancelled_prompt_keeps_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deletion is a change for a record in `left` too, and a prompt whose stdout is closed
    (cancelled) leaves the record for the next prompt."""
    monkeypatch.setenv("CLAUDETTO_LEDGER_MAX_FILES", "1")
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("a\n")
    edit(a)
    a.unlink()
    b.write_text("b\n")
    edit(b)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        payload = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
                   "transcript_path": "/t.jsonl", "prompt": "go on"}
        cancelled = subprocess.run([sys.executable, "-P", "-m", "hooks"], input=json.dumps(payload).encode(),
                                   stdout=write_end, stderr=subprocess.PIPE, cwd=tmp_path, check=False)
    finally:
        os.close(write_end)
    assert (cancelled.returncode, cancelled.stderr) == (0, b"")
    assert prompt(tmp_path) == line(a)
    assert prompt(tmp_path) == ""


# --- what held (checked, kept as tests) -------------------------------------------------------


def test_an_in_place_rewrite_that_restores_size_and_mtime_is_told(tmp_path: Path) -> None:
    """`touch -r` after an in-place write of the same length, as `rsync -t --inplace` leaves
    it: only the ctime moved, and that is enough."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    ref = tmp_path / "ref"
    ref.write_text("")
    subprocess.run(["touch", "-r", str(f), str(ref)], check=True)
    f.write_text("x = 7\n")
    subprocess.run(["touch", "-r", str(ref), str(f)], check=True)
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


def test_truncated_to_nothing_and_rewritten_as_it_was_is_quiet(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("")
    f.write_text("x = 1\n")
    assert prompt(tmp_path) == ""
    f.write_text("")
    assert prompt(tmp_path) == line(f)


def test_a_multiedit_and_a_notebook_edit_record_and_tell(tmp_path: Path) -> None:
    py, nb = tmp_path / "m.py", tmp_path / "n.ipynb"
    py.write_text("a = 1\nb = 2\n")
    nb.write_text('{"cells": []}\n')
    edit(py, tool="MultiEdit", tool_input={"file_path": str(py), "edits": [
        {"old_string": "a", "new_string": "c"}, {"old_string": "b", "new_string": "d"}]})
    edit(nb, tool="NotebookEdit", tool_input={"notebook_path": str(nb), "new_source": "x", "cell_id": "1"})
    py.write_text("changed\n")
    nb.write_text('{"cells": [2]}\n')
    assert prompt(tmp_path).splitlines() == [line(py), line(nb)]


def test_a_compact_keeps_the_pending_notice(tmp_path: Path) -> None:
    """`/compact` keeps the session id and fires SessionStart(compact): a notice not yet
    told is told at the next prompt."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    start = {"hook_event_name": "SessionStart", "session_id": SID, "cwd": str(tmp_path),
             "transcript_path": "/t.jsonl", "source": "compact"}
    assert run_hook(start, cwd=tmp_path).returncode == 0
    assert prompt(tmp_path) == line(f)


def test_a_file_name_with_backticks_keeps_the_exact_line(tmp_path: Path) -> None:
    """The contract's line puts the path between backticks as it is: a backtick in the name
    is shown as it is (no escape the model would read as part of the name)."""
    f = tmp_path / "a`b`.md"
    f.write_text("x\n")
    edit(f)
    f.write_text("y\n")
    assert prompt(tmp_path) == line(f)


def test_the_ledger_command_agrees_with_what_the_hook_tells(tmp_path: Path) -> None:
    f, g = tmp_path / "a.py", tmp_path / "b.py"
    f.write_text("x = 1\n")
    g.write_text("y = 1\n")
    edit(f)
    edit(g)
    f.write_text("x = 2\n")
    rows = ledger_json()
    assert (rows[str(f)]["changed"], rows[str(f)]["told"]) == (True, False)
    assert (rows[str(g)]["changed"], rows[str(g)]["told"]) == (False, False)
    assert prompt(tmp_path) == line(f)
    rows = ledger_json()
    assert (rows[str(f)]["changed"], rows[str(f)]["told"]) == (True, True)
    f.write_text("x = 3\n")  # a new change: not told yet, and the hook tells it
    assert (ledger_json()[str(f)]["told"]) is False
    assert prompt(tmp_path) == line(f)
    f.write_text("x = 1\n")
    assert (ledger_json()[str(f)]["changed"], ledger_json()[str(f)]["told"]) == (False, False)
    assert prompt(tmp_path) == ""


def test_two_hundred_changed_files_fill_the_budget_and_the_rest_come_next(tmp_path: Path) -> None:
    files = []
    for i in range(200):
        f = tmp_path / f"module_with_a_fairly_long_name_{i:03}.py"
        f.write_text("a\n")
        files.append(f)
    for f in files:  # the edits as the hook records them, in-process: 200 hook runs add nothing
        assert ledger.record_file(str(f), "main", SID)
    for f in files:
        f.write_text("b\n")
    told: list[str] = []
    for _ in range(5):
        text = prompt(tmp_path)
        if not text:
            break
        assert len(text) <= 9_000
        told += text.splitlines()
    assert told == [line(f) for f in files]


def test_a_clear_starts_a_session_told_nothing_of_the_cleared_ones_files(tmp_path: Path) -> None:
    """`/clear` gives the conversation a new session id and a model that remembers no edit: a
    change to a file the cleared conversation edited is no news to it (and no noise)."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    start = {"hook_event_name": "SessionStart", "session_id": OTHER, "cwd": str(tmp_path),
             "transcript_path": "/t.jsonl", "source": "clear"}
    assert run_hook(start, cwd=tmp_path).returncode == 0
    assert prompt(tmp_path, session=OTHER) == ""


def test_a_path_of_four_kilobytes_is_told_whole(tmp_path: Path) -> None:
    deep = tmp_path
    while len(str(deep)) + 201 < 4_000:
        deep = deep / ("d" * 200)
    deep = deep / ("d" * (4_000 - len(str(deep)) - 1))  # ~4,000 whatever tmp_path's length: PATH_MAX is 4,096
    deep.mkdir(parents=True)
    f = deep / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


@pytest.mark.skipif(os.geteuid() != 0 and not Path("/proc/self/ns/user").exists(), reason="no user namespace")
def test_one_file_reached_through_a_bind_mount_is_one_file(tmp_path: Path) -> None:
    """The model edits a file through its folder and then through a bind mount of that folder
    (same device, same inode): its own second edit is no outside change, and the user's
    change through the first name is told once, under the name of the newest edit."""
    real, bound = tmp_path / "real", tmp_path / "bound"
    real.mkdir()
    bound.mkdir()
    (real / "a.py").write_text("x = 1\n")
    steps = []
    for n, (path, event) in enumerate([(real, "PostToolUse"), (bound, "PostToolUse"), (None, "UserPromptSubmit"),
                                       (None, "UserPromptSubmit"), (None, "UserPromptSubmit")]):
        payload: dict[str, Any] = {"hook_event_name": event, "session_id": SID, "cwd": str(tmp_path),
                                   "transcript_path": "/t.jsonl", "prompt": "go on"}
        if path is not None:
            payload.update(tool_name="Edit", tool_input={"file_path": str(path / "a.py")},
                           tool_response={"filePath": str(path / "a.py")})
        (tmp_path / f"in{n}.json").write_text(json.dumps(payload))
        steps.append(f"{sys.executable} -P -m hooks < {tmp_path}/in{n}.json > {tmp_path}/out{n}")
    script = " && ".join([f"mount --bind {real} {bound}", steps[0], "echo 'x = 2' > bound/a.py", steps[1],
                          steps[2], "echo 'x = 3' > real/a.py", steps[3], steps[4]])
    run = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         check=False, env=dict(os.environ))
    if run.returncode != 0 and "mount" in run.stderr:
        pytest.skip(f"no bind mount here: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr
    said = [(tmp_path / f"out{n}").read_text() for n in (2, 3, 4)]
    assert said[0] == ""
    assert json.loads(said[1])["hookSpecificOutput"]["additionalContext"] == line(bound / "a.py")
    assert said[2] == ""
