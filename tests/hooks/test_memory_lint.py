"""The memory write lint through `python -P -m hooks`, as Claude runs PreToolUse: each rule
refuses with a reason that says how to fix it, and writes outside memory are never touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.core import paths
from tests.support import SandboxEnv, hook_modules, run_hook

GOOD = "---\nname: Build\ndescription: how the shop builds\nmetadata:\n  type: project\n---\n- Uses make.\n"


def memory_dir(slug: str = "-home-u-shop") -> Path:
    folder = paths.projects_dir() / slug / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def pre_tool(tool: str, tool_input: dict[str, Any], cwd: Path | None = None) -> str | None:
    """The deny reason of one PreToolUse call, or None when it printed nothing."""
    payload = {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(cwd or paths.home()),
               "transcript_path": "/t", "tool_name": tool, "tool_input": tool_input, "tool_use_id": "t1"}
    result = run_hook(payload)
    assert result.returncode == 0 and result.stderr == b""
    if not result.stdout:
        return None
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse" and output["permissionDecision"] == "deny"
    reason: str = output["permissionDecisionReason"]
    assert reason.startswith("claudetto memory lint refused this write of `")
    return reason


def write(path: Path, content: str) -> str | None:
    return pre_tool("Write", {"file_path": str(path), "content": content})


# --- fact files: frontmatter ------------------------------------------------------------------


def test_a_complete_fact_file_is_let_through(sandbox: SandboxEnv) -> None:
    assert write(memory_dir() / "build.md", GOOD) is None


@pytest.mark.parametrize("front", [
    "---\nname: B\ndescription: d\ntype: feedback\n---\n",  # top-level type, as older versions write it
    "---\nname: 'B'\ndescription: \"d\"\nmetadata: {type: reference}\n---\n",
    "---\r\nname: B\r\ndescription: >\r\n  folded\r\nmetadata:\r\n  type: user\r\n---\r\n",
    "\ufeff---\nname: B\ndescription: d\nmetadata:\n  other: 1\n  type: project # why\n---\n",
])
def test_frontmatter_as_claude_versions_write_it(front: str, sandbox: SandboxEnv) -> None:
    assert write(memory_dir() / "f.md", front + "- A fact.\n") is None


@pytest.mark.parametrize(("content", "named"), [
    ("- A fact with no frontmatter.\n", "there is no frontmatter"),
    ("---\nname: B\ndescription: d\ntype: project\n- never closed\n", "not closed"),
    ("---\nname: B\ntype: project\n---\n- x\n", "`description:` is missing or empty"),
    ("---\nname:\ndescription: d\ntype: project\n---\n- x\n", "`name:` is missing or empty"),
    ("---\nname: B\ndescription: d\n---\n- x\n", "the type is missing"),
    ("---\nname: B\ndescription: d\nmetadata:\n  type: notes\n---\n- x\n", "the type `notes` is not one of"),
    ("\n---\nname: B\ndescription: d\ntype: user\n---\n", "there is no frontmatter"),  # must open the file
])
def test_a_fact_file_without_complete_frontmatter_is_refused(content: str, named: str, sandbox: SandboxEnv) -> None:
    reason = write(memory_dir() / "build.md", content)
    assert reason is not None and named in reason
    assert "name: <short name>" in reason and "type: <user|feedback|project|reference>" in reason  # how to fix


def test_an_edit_that_breaks_the_frontmatter_is_refused_and_one_that_keeps_it_is_not(sandbox: SandboxEnv) -> None:
    path = memory_dir() / "build.md"
    path.write_text(GOOD)
    assert pre_tool("Edit", {"file_path": str(path), "old_string": "- Uses make.", "new_string": "- Uses ninja."}) is None
    reason = pre_tool("Edit", {"file_path": str(path), "old_string": "description: how the shop builds\n",
                               "new_string": ""})
    assert reason is not None and "`description:` is missing" in reason
    assert path.read_text() == GOOD  # the lint only judges; it never writes


def test_multiedit_is_judged_on_the_result_of_all_edits(sandbox: SandboxEnv) -> None:
    path = memory_dir() / "build.md"
    path.write_text(GOOD)
    edits: list[dict[str, object]] = [{"old_string": "type: project", "new_string": "type: projekt"},
             {"old_string": "type: projekt", "new_string": "type: project"}]
    assert pre_tool("MultiEdit", {"file_path": str(path), "edits": edits}) is None
    edits.append({"old_string": "- Uses make.", "new_string": "- Broke it yesterday.", "replace_all": True})
    reason = pre_tool("MultiEdit", {"file_path": str(path), "edits": edits})
    assert reason is not None and '"yesterday" (line 7)' in reason


def test_an_edit_the_tool_cannot_apply_is_left_to_the_tool(sandbox: SandboxEnv) -> None:
    path = memory_dir() / "build.md"
    path.write_text("- legacy file, no frontmatter\n")
    assert pre_tool("Edit", {"file_path": str(path), "old_string": "not in the file", "new_string": "x"}) is None
    assert pre_tool("Edit", {"file_path": str(memory_dir() / "missing.md"), "old_string": "a", "new_string": "b"}) is None


# --- relative dates -------------------------------------------------------------------------


@pytest.mark.parametrize("phrase", ["yesterday", "today", "Last week", "next month", "recently", "3 days ago",
                                    "a few weeks ago", "this sprint", "last Friday", "earlier this year",
                                    "the other day", "lately", "tomorrow"])
def test_relative_dates_are_refused(phrase: str, sandbox: SandboxEnv) -> None:
    reason = write(memory_dir() / "build.md", GOOD + f"- The build broke {phrase}, fixed since.\n")
    assert reason is not None and f'"{phrase}" (line 8)' in reason and "absolute date" in reason


@pytest.mark.parametrize("line", [
    "- The build broke on 2026-08-11.",
    "- Run `git log --since=yesterday` to see it.",  # inline code is no prose
    "- ~~broke yesterday~~",  # struck history is kept, not written as a fact
    "- The last weekly release, the next release train.",  # no relative date
    "- Todays and yesterdays are words in names: `yesterday_report`.",
])
def test_what_is_no_relative_date(line: str, sandbox: SandboxEnv) -> None:
    assert write(memory_dir() / "build.md", GOOD + line + "\n") is None


def test_only_added_lines_are_judged(sandbox: SandboxEnv) -> None:
    path = memory_dir() / "old.md"
    legacy = GOOD + "- Deployed yesterday (an old line).\n"
    path.write_text(legacy)
    assert write(path, legacy + "- A new fact on 2026-11-30.\n") is None  # the old line is not new
    reason = pre_tool("Edit", {"file_path": str(path), "old_string": "- Uses make.",
                               "new_string": "- Uses make.\n- Moved to ninja last week."})
    assert reason is not None and '"last week" (line 8)' in reason and "yesterday" not in reason


def test_fenced_code_is_not_prose(sandbox: SandboxEnv) -> None:
    assert write(memory_dir() / "b.md", GOOD + "```sh\ngit log --since='last week'\n```\n") is None


# --- MEMORY.md: an index of pointers ----------------------------------------------------------


def test_an_index_of_pointers_is_let_through(sandbox: SandboxEnv) -> None:
    index = ("# Memory\n\n- [Build](build.md) — how the shop builds\n* [Deploy](deploy.md)\n"
             "1. [API](topics/api.md) - endpoints\n- Payments: payments.md\n<!-- note -->\n")
    assert write(memory_dir() / "MEMORY.md", index) is None


@pytest.mark.parametrize(("content", "named"), [
    ("---\nname: index\n---\n- [B](b.md)\n", "takes no frontmatter"),
    ("- [B](b.md)\nThe build uses make and the deploy goes through the staging box first.\n", "line 2 is no pointer"),
    ("- remember to run the tests before pushing\n", "line 1 is no pointer"),
    ("- [B](b.md) — " + "x" * 220 + "\n", "characters, over 200"),
])
def test_an_index_that_is_not_one_line_pointers_is_refused(content: str, named: str, sandbox: SandboxEnv) -> None:
    reason = write(memory_dir() / "MEMORY.md", content)
    assert reason is not None and named in reason and "- [Title](topic.md)" in reason


def test_an_index_edit_is_judged_on_the_lines_it_adds(sandbox: SandboxEnv) -> None:
    path = memory_dir() / "MEMORY.md"
    path.write_text("- [B](b.md) — build\nOld prose someone left here.\n")
    assert pre_tool("Edit", {"file_path": str(path), "old_string": "- [B](b.md) — build",
                             "new_string": "- [B](b.md) — build\n- [C](c.md) — cache"}) is None
    reason = pre_tool("Edit", {"file_path": str(path), "old_string": "- [B](b.md) — build",
                               "new_string": "- [B](b.md) — build\nMore prose."})
    assert reason is not None and "line 2 is no pointer" in reason and "Old prose" not in reason


def test_a_file_named_memory_md_in_a_subfolder_is_a_topic_file(sandbox: SandboxEnv) -> None:
    sub = memory_dir() / "archive"
    sub.mkdir()
    reason = write(sub / "MEMORY.md", "- [B](b.md)\n")
    assert reason is not None and "there is no frontmatter" in reason


# --- where the lint applies -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["project", "tmp memory", "projects without memory", "memory itself", "not md"])
def test_writes_outside_a_memory_folder_are_never_touched(where: str, sandbox: SandboxEnv, tmp_path: Path) -> None:
    path = {
        "project": tmp_path / "proj" / "notes.md",
        "tmp memory": tmp_path / "memory" / "notes.md",
        "projects without memory": paths.projects_dir() / "-x" / "notes.md",
        "memory itself": paths.projects_dir() / "-x" / "memory",
        "not md": memory_dir() / "data.json",
    }[where]
    assert write(path, "no frontmatter, written yesterday\n") is None


def test_a_symlinked_config_folder_is_still_memory(sandbox: SandboxEnv, tmp_path: Path) -> None:
    memory_dir()
    alias = tmp_path / "alias-claude"
    alias.symlink_to(sandbox.config)
    reason = write(alias / "projects" / "-home-u-shop" / "memory" / "x.md", "no frontmatter\n")
    assert reason is not None and "there is no frontmatter" in reason


def test_a_link_elsewhere_to_a_memory_file_is_judged_as_that_file(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`~/notes/build.md -> <memory>/build.md`: the Write lands in memory (it follows the
    link), so it is judged there; a link to a file outside memory stays unjudged."""
    target = memory_dir() / "build.md"
    target.write_text(GOOD)
    link = tmp_path / "build.md"
    link.symlink_to(target)
    reason = write(link, "no frontmatter\n")
    assert reason is not None and "there is no frontmatter" in reason
    assert write(link, GOOD) is None
    elsewhere = tmp_path / "plain.md"
    elsewhere.write_text("x\n")
    (tmp_path / "plain-link.md").symlink_to(elsewhere)
    assert write(tmp_path / "plain-link.md", "no frontmatter\n") is None


def test_a_relative_path_is_taken_from_the_payload_cwd(sandbox: SandboxEnv) -> None:
    folder = memory_dir()
    reason = pre_tool("Write", {"file_path": "x.md", "content": "no frontmatter\n"}, cwd=folder)
    assert reason is not None


@pytest.mark.parametrize("tool_input", [
    None, "x", [], {"file_path": 7}, {"file_path": ""}, {"content": "x"},
    {"file_path": "/x/memory/a\u0000.md", "content": "x"},
])
def test_bad_tool_input_is_let_through_silently(tool_input: Any, sandbox: SandboxEnv) -> None:
    payload = {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/", "tool_name": "Write",
               "tool_input": tool_input}
    result = run_hook(payload)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_other_tools_are_never_judged(sandbox: SandboxEnv) -> None:
    path = memory_dir() / "a.md"
    for tool in ("Read", "Bash", "NotebookEdit"):
        assert pre_tool(tool, {"file_path": str(path), "content": "no frontmatter yesterday"}) is None


def test_a_write_outside_memory_loads_nothing_beyond_the_payload(sandbox: SandboxEnv, tmp_path: Path) -> None:
    base = {"session_id": "s1", "cwd": str(tmp_path), "transcript_path": "/t"}
    outside = {**base, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "t",
               "tool_input": {"file_path": str(tmp_path / "src" / "app.py"), "content": "x = 1\n"}}
    reading = {**base, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {}, "tool_response": {}}
    extra = hook_modules(outside, tmp_path) - hook_modules(reading, tmp_path)
    assert extra == {"hooks.pre_tool"}
    inside = {**outside, "tool_input": {"file_path": str(memory_dir() / "a.md"), "content": GOOD}}
    assert "app.core.memory_lint" in hook_modules(inside, tmp_path)
    assert {"app.core.memory", "subprocess", "pathlib", "json"} & hook_modules(inside, tmp_path) == set()
