"""Every context claudetto prints stays under 9,000 UTF-16 units, counted as Claude counts
(JavaScript string length: a character outside the BMP is two units), cut at a line boundary
with a closing line saying how many lines were left out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.core.ledger_line import utf16_len
from hooks.output import CONTEXT_CAP, cap_context
from tests.support import SandboxEnv, run_hook

SID = "7d1e0c55-3b7a-4a9e-8f0e-2c4b6a8d9e10"
CLOSING = re.compile(r"^\(claudetto: (\d+) more lines? left out\)$")
CODER = "\U0001F469\u200D\U0001F4BB"  # a ZWJ sequence: astral, BMP, astral
LEDGER_LINE = re.compile(r"^The user or a tool changed `(.+)` after the last edit of `main`\.$")


def units(text: str) -> int:
    """Independent of the code under test: JavaScript's `.length`."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def test_utf16_len_counts_astral_characters_twice() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("\u2603") == 1  # a snowman is in the BMP
    assert utf16_len("\U0001F600") == 2  # an emoji is not
    assert utf16_len("\U0001D518x") == 3  # nor is a mathematical letter
    assert utf16_len("\U0001F469\u200D\U0001F4BB") == 5  # a ZWJ sequence: 2 + 1 + 2
    assert utf16_len("\udcff") == 1  # a lone surrogate (from a non-UTF-8 name) is one unit


def test_short_text_is_untouched() -> None:
    text = "one\ntwo\n" + "\U0001F600" * 100
    assert cap_context(text) is text
    just_under = "x" * (CONTEXT_CAP - 1)
    assert cap_context(just_under) == just_under


def test_text_at_the_cap_is_cut_at_a_line_with_the_count() -> None:
    lines = [f"line {i:04d} " + "\U0001F600" * 40 for i in range(150)]  # 90 units each
    assert sum(len(line) for line in lines) < CONTEXT_CAP  # by code points it would all fit
    out = cap_context("\n".join(lines))
    assert units(out) < CONTEXT_CAP
    *kept, closing = out.split("\n")
    assert kept == lines[: len(kept)]  # whole lines, in order, none cut inside
    match = CLOSING.match(closing)
    assert match is not None and int(match.group(1)) == len(lines) - len(kept)
    assert len(kept) > 80  # it used the room it had
    # nothing wasted: one more line would not have fit with the closing line
    assert units("\n".join(lines[: len(kept) + 1])) + 1 + len(closing) >= CONTEXT_CAP


def test_exactly_the_cap_is_cut_and_one_below_is_not() -> None:
    under = "\U0001F600" * ((CONTEXT_CAP - 1) // 2) + ("x" if (CONTEXT_CAP - 1) % 2 else "")
    assert units(under) == CONTEXT_CAP - 1 and cap_context(under) == under
    at = "a\n" + "\U0001F600" * ((CONTEXT_CAP - 2) // 2)
    assert units(at) == CONTEXT_CAP
    out = cap_context(at)
    assert out == "a\n(claudetto: 1 more line left out)"


def test_one_line_longer_than_the_cap_is_cut_inside_it() -> None:
    line = "\U0001F600" * 6000  # 12,000 units on one line
    out = cap_context(line + "\nsecond")
    assert units(out) < CONTEXT_CAP
    head, closing = out.split("\n")
    assert head.endswith("\u2026") and set(head[:-1]) == {"\U0001F600"}
    assert closing == "(claudetto: 2 more lines left out)"


def test_a_prompt_with_many_changed_astral_files_prints_under_the_cap(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """UserPromptSubmit through the real hook: files with long emoji and astral names, recorded
    by real PostToolUse edits, then changed behind the model's back."""
    level = "\U0001F680\U0001D518\u2603" * 20  # 60 characters, 180 bytes, 100 UTF-16 units
    folder = tmp_path / level / level / level
    folder.mkdir(parents=True)
    files = []
    for i in range(40):
        f = folder / f"{i:02d}-{CODER * 12}.txt"
        f.write_text("before\n")
        files.append(f)
        payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path),
                   "transcript_path": "/t.jsonl", "tool_name": "Edit", "tool_use_id": f"toolu_{i}",
                   "tool_input": {"file_path": str(f), "old_string": "a", "new_string": "b"},
                   "tool_response": {"filePath": str(f)}}
        done = run_hook(payload, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (0, b"")
    for f in files:
        f.write_text("changed by the user\n")
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
              "transcript_path": "/t.jsonl", "prompt": "go on"}
    result = run_hook(prompt, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout.isascii()  # escaped JSON: no locale or lone surrogate can break the write
    assert result.stdout.startswith(b"{") and result.stdout.count(b"\n") == 1
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    text = out["additionalContext"]
    assert units(text) < CONTEXT_CAP
    lines = text.split("\n")
    closing = CLOSING.match(lines[-1])
    told = lines[:-1] if closing else lines
    assert told, "no whole line fitted"
    named = set()
    for line in told:
        match = LEDGER_LINE.match(line)
        assert match is not None, line[:80]
        named.add(match.group(1))
    assert named <= {str(f) for f in files}
    if closing:
        assert len(told) + int(closing.group(1)) <= len(files)


@pytest.mark.parametrize("count", [1, 12])
def test_the_closing_line_grammar(count: int) -> None:
    lines = ["\U0001F600" * (CONTEXT_CAP // 2 - 30)] + ["y" * 100] * count  # only the first fits
    out = cap_context("\n".join(lines))
    assert out.split("\n")[-1] == f"(claudetto: {count} more line{'s' if count != 1 else ''} left out)"
