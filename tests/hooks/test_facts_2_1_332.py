"""The hooks against what Claude Code 2.1.332 sends and does (CLAUDE_CODE_FACTS, CONTRACT
"Hooks"), each fact checked through `python -P -m hooks` with JSON on stdin, as Claude runs
it. Facts the earlier conformance files prove are not repeated here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.core import paths
from tests.support import ROOT, run_hook, set_mtime

SID = "0b6f6c1e-2d3a-4c5b-8e9f-a0b1c2d3e4f5"
LINE = "The user or a tool changed `{}` after the last edit of `{}`."
GOOD = "---\nname: Build\ndescription: how the shop builds\nmetadata:\n  type: project\n---\n- Uses make.\n"


def common(event: str, cwd: Path, **extra: Any) -> dict[str, Any]:
    return {"hook_event_name": event, "session_id": SID, "cwd": str(cwd),
            "transcript_path": "/t.jsonl", **extra}


def post_edit(path: str, cwd: Path, *, tool: str = "Edit", hook_cwd: Path | None = None, **extra: Any) -> None:
    payload = common("PostToolUse", cwd, tool_name=tool, tool_use_id="toolu_1",
                     tool_input={"file_path": path, "old_string": "a", "new_string": "b"},
                     tool_response={"filePath": path}, **extra)
    result = run_hook(payload, cwd=hook_cwd or cwd)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), result


def prompt_raw(cwd: Path, argv: list[str] | None = None, **extra: Any) -> subprocess.CompletedProcess[bytes]:
    data = json.dumps(common("UserPromptSubmit", cwd, prompt="go on", **extra)).encode()
    return subprocess.run(argv or [sys.executable, "-P", "-m", "hooks"], input=data, capture_output=True,
                          cwd=cwd, timeout=30, env=dict(os.environ), check=False)


def context_of(result: subprocess.CompletedProcess[bytes], event: str = "UserPromptSubmit") -> str:
    """The additionalContext of a hook run, "" when it printed nothing. Claude parses stdout as
    JSON only when it starts with `{`, and several JSON lines read as plain text: the hook
    prints one object on one line, naming the event it answers."""
    assert result.returncode == 0 and result.stderr == b"", result
    if result.stdout == b"":
        return ""
    assert result.stdout.startswith(b"{") and result.stdout.count(b"\n") == 1, result.stdout
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == event
    return str(output["additionalContext"])


def aged(path: Path, text: str) -> None:
    path.write_text(text)
    set_mtime(path, 100)


def entries() -> dict[str, Any]:
    return dict(json.loads(paths.ledger_file().read_bytes())["files"])


def log_text() -> str:
    root = paths.log_root()
    return "".join(f.read_text(errors="replace") for f in root.rglob("*.log")) if root.exists() else ""


# --- PostToolUse: tool_response varies by tool and version ---------------------------------


@pytest.mark.parametrize("response", [{"filePath": "x", "structuredPatch": []}, "Edited.", None, []])
def test_the_ledger_records_whatever_shape_tool_response_has(response: object, tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("a\n")
    payload = common("PostToolUse", tmp_path, tool_name="Edit", tool_use_id="toolu_1", duration_ms=12,
                     tool_input={"file_path": str(f), "old_string": "x", "new_string": "a"},
                     tool_response=response)
    result = run_hook(payload, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert list(entries()) == [str(f)]


def test_a_relative_path_is_taken_from_the_payloads_cwd_not_the_hooks(tmp_path: Path) -> None:
    """Claude starts the hook in the project folder, but the payload's `cwd` is the session's
    folder now (it follows a `cd` in Bash): that one is what a relative path means."""
    project, elsewhere = tmp_path / "p", tmp_path / "q"
    (project / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    f = project / "sub" / "m.py"
    f.write_text("a\n")
    post_edit("sub/m.py", project, hook_cwd=elsewhere)
    assert list(entries()) == [str(f)]


# --- UserPromptSubmit: the optional common fields change nothing --------------------------


def test_optional_fields_and_an_agent_session_leave_the_line_as_the_contract_writes_it(tmp_path: Path) -> None:
    """`permission_mode`, `prompt_id`, `scratchpad_dir` may come on any event, `agent_type`
    on the main thread of a `--agent` session: the line names `main`, the output is one JSON
    object for UserPromptSubmit."""
    f = tmp_path / "m.py"
    f.write_text("a\n")
    extra: dict[str, Any] = {"permission_mode": "acceptEdits", "prompt_id": "p-1", "agent_type": "reviewer",
                             "scratchpad_dir": str(tmp_path / "claude-0" / "slug" / SID / "scratchpad")}
    post_edit(str(f), tmp_path, **extra)
    aged(f, "changed\n")
    assert context_of(prompt_raw(tmp_path, **extra)) == LINE.format(f, "main")
    assert context_of(prompt_raw(tmp_path, **extra)) == ""


def test_a_teammates_prompt_with_agent_id_null_is_the_main_thread(tmp_path: Path) -> None:
    """`agent_id` is present only for a subagent; a null one is no marker."""
    f = tmp_path / "m.py"
    f.write_text("a\n")
    post_edit(str(f), tmp_path, agent_id=None, agent_type=None)
    assert entries()[str(f)]["agent"] == "main"
    aged(f, "b\n")
    assert context_of(prompt_raw(tmp_path, agent_id=None)) == LINE.format(f, "main")


# --- UserPromptSubmit: Claude kills it after 30 s ------------------------------------------

RACY_S = 2.1
BUDGET_SPENT = ("import app.core.ledger as ledger; ledger.PROMPT_BUDGET_NS = 0; "
                "from hooks.entry import main; raise SystemExit(main())")


def test_a_prompt_past_its_time_budget_leaves_the_rest_to_the_next_and_loses_none(tmp_path: Path) -> None:
    """Rehashing is the content's cost; a hook Claude kills at 30 s would store nothing and do
    the same reads at every prompt after. With its budget spent at once, each prompt reads
    one file, tells it, and the next prompt goes on with the others: every change is told
    once, none twice, none lost."""
    files = [tmp_path / f"m{i}.py" for i in range(3)]
    for f in files:
        f.write_text("a\n")
        post_edit(str(f), tmp_path, tool="Write")
        aged(f, f"changed {f.name}\n")
    # past the racy window of the changes' ctime: a told file is then known by its stat and
    # costs no read (a racy one is read again, and with no budget at all would take the turn)
    time.sleep(RACY_S)
    argv = [sys.executable, "-P", "-c", BUDGET_SPENT]
    told = [context_of(prompt_raw(tmp_path, argv)) for _ in range(4)]
    assert told == [LINE.format(f, "main") for f in files] + [""]
    assert "left for the next prompt" in log_text()


# --- PreToolUse: Edit with an empty old_string creates the file -----------------------------


def memory_dir() -> Path:
    folder = paths.projects_dir() / "-home-u-shop" / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def pre_edit(path: Path, old: str, new: str) -> str | None:
    payload = common("PreToolUse", paths.home(), tool_name="Edit", tool_use_id="toolu_1",
                     tool_input={"file_path": str(path), "old_string": old, "new_string": new})
    result = run_hook(payload, cwd=ROOT)
    assert result.returncode == 0 and result.stderr == b"", result
    if not result.stdout:
        return None
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    return str(output["permissionDecisionReason"])


def test_an_edit_creating_a_memory_file_is_judged_as_a_whole_new_file() -> None:
    """Claude's Edit with `old_string: ""` on a missing (or empty) file creates it with
    `new_string`: the write contract holds for it as for a Write."""
    target = memory_dir() / "build.md"
    reason = pre_edit(target, "", "- Uses make since last week.\n")
    assert reason is not None and "there is no frontmatter" in reason and '"last week"' in reason
    assert pre_edit(target, "", GOOD) is None
    target.write_text(" \n")
    assert pre_edit(target, "", "no frontmatter\n") is not None


def test_a_multiedit_creating_a_memory_file_is_judged_as_a_whole_new_file() -> None:
    """MultiEdit (legacy) creates a file from a first edit with an empty `old_string`."""
    target = memory_dir() / "deploy.md"
    edits = [{"old_string": "", "new_string": "Deploys yesterday.\n"},
             {"old_string": "Deploys", "new_string": "Deployed"}]
    payload = common("PreToolUse", paths.home(), tool_name="MultiEdit", tool_use_id="toolu_1",
                     tool_input={"file_path": str(target), "edits": edits})
    result = run_hook(payload, cwd=ROOT)
    reason = json.loads(result.stdout)["hookSpecificOutput"]["permissionDecisionReason"] if result.stdout else ""
    assert "there is no frontmatter" in reason and '"yesterday"' in reason


def test_an_edit_with_an_empty_old_string_on_a_written_file_is_left_to_the_tool() -> None:
    """On a file with content, Claude's Edit refuses an empty `old_string` itself."""
    target = memory_dir() / "build.md"
    target.write_text(GOOD)
    assert pre_edit(target, "", "no frontmatter\n") is None


# --- tool_input fields missing, null or of another type --------------------------------------

INNER = {
    "Write": ["file_path", "content"],
    "Edit": ["file_path", "old_string", "new_string", "replace_all"],
    "MultiEdit": ["file_path", "edits"],
    "NotebookEdit": ["notebook_path", "new_source"],
}


@pytest.mark.parametrize("tool", sorted(INNER))
@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
def test_a_tool_input_field_of_another_type_is_silence_and_no_failure(tool: str, event: str) -> None:
    """Each field of each edit tool's `tool_input`, missing or of another type, on a memory
    file (where the lint judges) is no refusal, no output and no internal failure."""
    target = memory_dir() / "build.md"
    target.write_text(GOOD)
    base: dict[str, Any] = {"file_path": str(target), "notebook_path": str(target), "content": GOOD,
                            "old_string": "make", "new_string": "ninja", "replace_all": True, "new_source": "x",
                            "edits": [{"old_string": "make", "new_string": "ninja"}]}
    for field in INNER[tool]:
        for value in ([1], {"a": None}, 7, None, "", True, [{"old_string": 1}]):
            tool_input = {**base, field: value}
            payload = common(event, paths.home(), tool_name=tool, tool_use_id="toolu_1", tool_input=tool_input,
                             tool_response={"filePath": str(target)})
            result = run_hook(payload, cwd=ROOT)
            assert (result.returncode, result.stderr) == (0, b""), (field, value, result)
            assert result.stdout == b"" or b'"deny"' in result.stdout, (field, value, result)
    assert " failed: " not in log_text()


@pytest.mark.parametrize("response", [
    {"stdout": "", "stderr": "", "interrupted": False, "isImage": False, "backgroundTaskId": "b1x2"},
    "Command running in background with ID: b1x2",
    None,
])
def test_a_background_bash_call_of_any_response_shape_is_silence(response: object, tmp_path: Path) -> None:
    """Bash `{command, description?, timeout?, run_in_background?}`: a background call's
    output goes to Claude's task file, and its response is a dict or a plain string."""
    out = tmp_path / "utmp-out.log"
    payload = common("PostToolUse", tmp_path, tool_name="Bash", tool_use_id="toolu_1", duration_ms=3,
                     tool_input={"command": f"sleep 1 > {out}", "description": "wait", "timeout": 1000,
                                 "run_in_background": True},
                     tool_response=response)
    result = run_hook(payload, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert " failed: " not in log_text()
