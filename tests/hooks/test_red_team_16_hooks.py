"""Red team, round sixteen: the hooks, the edit ledger (seed 000) and the memory write lint
(seed 003), driven as Claude drives them: `python -P -m hooks` with the JSON Claude sends,
real files, real symlinks.

Misses fixed: an Edit of a memory file that is a symlink (a topic file linked to another in
the folder, or to a dotfiles copy Claude loads as memory all the same) was let through
unjudged, a relative date and all: the lint read the current file without following the
link, found nothing, and could not apply the edit. A Write through such a link judged every
line as new, and refused the write for a legacy line it kept as it was. A lasting fact about
a schedule ("the nightly ETL loads yesterday's orders", "the weekly digest covers the past
week", "cache keys include today's date") was refused as a relative date. A file the model
edited on an sshfs mount whose host went away held every prompt hook until Claude killed it
at 30 s, nothing told, and the next edit of a file of the same name held the model's turn:
a file on a remote mount is now looked at in a thread given 1 s, and left for later.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core import paths
from tests.hooks.test_ledger_hooks import SID, edit, entries
from tests.hooks.test_memory_lint import GOOD, memory_dir, pre_tool
from tests.support import hung_fuse_mounts, run_hook


def test_an_edit_through_a_symlinked_memory_file_is_judged(tmp_path: Path) -> None:
    """Claude's Edit follows the link and writes the file it names; the lint must judge that
    file's text, whether the link stays inside the memory folder or leads to a copy kept
    elsewhere (which Claude loads as memory through the link)."""
    folder = memory_dir()
    (folder / "real").mkdir()
    (folder / "real" / "build.md").write_text(GOOD)
    (folder / "build.md").symlink_to("real/build.md")
    outside = tmp_path / "dotfiles" / "team.md"
    outside.parent.mkdir()
    outside.write_text(GOOD)
    (folder / "team.md").symlink_to(outside)
    for name in ("build.md", "team.md"):
        reason = pre_tool("Edit", {"file_path": str(folder / name), "old_string": "- Uses make.",
                                   "new_string": "- Uses make since last week."})
        assert reason is not None and '"last week"' in reason, name
        assert pre_tool("Edit", {"file_path": str(folder / name), "old_string": "- Uses make.",
                                 "new_string": "- Uses make (since 2026-11-24)."}) is None


def test_a_write_through_a_symlinked_memory_file_judges_only_the_lines_it_adds(tmp_path: Path) -> None:
    """A line already in the file is never judged again: a legacy relative date kept as it is
    does not refuse the write that adds a good line beside it."""
    folder = memory_dir()
    legacy = GOOD + "- Deploys moved to Fridays last week.\n"
    outside = tmp_path / "dotfiles" / "deploy.md"
    outside.parent.mkdir()
    outside.write_text(legacy)
    (folder / "deploy.md").symlink_to(outside)
    assert pre_tool("Write", {"file_path": str(folder / "deploy.md"),
                              "content": legacy + "- Staging is `stage.internal`.\n"}) is None
    reason = pre_tool("Write", {"file_path": str(folder / "deploy.md"),
                                "content": legacy + "- Staging moved yesterday.\n"})
    assert reason is not None and "\"yesterday\" (line 9)" in reason and "\"last week\" (line" not in reason


@pytest.mark.parametrize("line", [
    "- The nightly ETL loads yesterday's orders at 01:00.",
    "- Each morning the cleanup job archives yesterday's logs.",
    "- The weekly digest covers the past week.",
    "- The daily report covers the last 7 days, every morning at 06:00.",
    "- Cache keys include today's date (`YYYY-MM-DD`).",
    "- The hourly sync reads tomorrow's bookings from the partner feed.",
])
def test_a_window_each_run_of_a_schedule_computes_is_no_relative_date(line: str) -> None:
    """A job that runs each night reads "yesterday" anew at every run: a lasting fact about
    the project, true next year as today. Refused, it teaches the model to drop the fact."""
    assert pre_tool("Write", {"file_path": str(memory_dir() / "jobs.md"), "content": GOOD + line + "\n"}) is None


@pytest.mark.parametrize(("line", "word"), [
    ("- Yesterday's deploy broke checkout.", "Yesterday"),
    ("- Standup is every Monday; next Monday is a holiday.", "next Monday"),
    ("- The report covered the last 7 days when we checked.", "last 7 days"),
    ("- The nightly job failed yesterday.", "yesterday"),
])
def test_a_relative_date_beside_a_schedule_is_still_refused(line: str, word: str) -> None:
    reason = pre_tool("Write", {"file_path": str(memory_dir() / "jobs.md"), "content": GOOD + line + "\n"})
    assert reason is not None and f'"{word}" (line 8)' in reason


@pytest.fixture
def hung_mount() -> Iterator[Callable[[Path], None]]:
    """Mounts over a folder a FUSE file system whose server never answers (an `sshfs` whose
    host went away): every look at a name under it waits. Aborted (its device closed) and
    unmounted at the end."""
    with hung_fuse_mounts() as mount:
        yield mount


def on_mount(ledger: Path, path: str, mount: Path) -> None:
    """The entry of `path` as an edit made while the mount still answered records it: on the
    mount's own device (the file was written there, then the server went away)."""
    for row in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = row.split(" ")
        if fields[4] == str(mount):
            major, minor = fields[2].split(":")
    data = json.loads(ledger.read_text())
    data["files"][path]["dev"] = os.makedev(int(major), int(minor))
    ledger.write_text(json.dumps(data))


def timed_hook(payload: dict[str, Any], cwd: Path) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    start = time.monotonic()
    result = run_hook(payload, cwd=cwd, timeout=40)
    return time.monotonic() - start, result


def test_a_file_on_a_mount_that_stopped_answering_holds_no_prompt_and_no_edit(
        tmp_path: Path, hung_mount: Callable[[Path], None]) -> None:
    """HANG. The model edited `remote/app/main.py` on an sshfs mount and `local/main.py`; the
    host went away. Every look at a name on the mount now waits for ever: the prompt hook
    waited until Claude killed it at 30 s, at every prompt, and told nothing (the change to
    `local/main.py` never came); the PostToolUse hook of the next edit of a `main.py` waited
    the same (Claude's bound for it is 600 s), the model's turn with it. A file that does not
    answer is now left for a later prompt, and the others are told."""
    remote = tmp_path / "remote"
    (remote / "app").mkdir(parents=True)
    (remote / "app" / "main.py").write_text("x = 1\n")
    local = tmp_path / "local"
    local.mkdir()
    (local / "main.py").write_text("y = 1\n")
    edit(remote / "app" / "main.py")
    edit(local / "main.py")
    hung_mount(remote)
    on_mount(paths.ledger_file(), str(remote / "app" / "main.py"), remote)
    (local / "main.py").write_text("y = 2\n")
    payload: dict[str, Any] = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(local),
               "transcript_path": "/t.jsonl", "prompt": "go on"}
    took, result = timed_hook(payload, local)
    assert result.returncode == 0 and took < 10, (took, result)
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert text == f"The user or a tool changed `{local / 'main.py'}` after the last edit of `main`."
    other = tmp_path / "other" / "main.py"
    other.parent.mkdir()
    other.write_text("z = 1\n")
    payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(other.parent),
               "transcript_path": "/t.jsonl", "tool_name": "Write", "tool_use_id": "toolu_9",
               "tool_input": {"file_path": str(other), "content": "z = 1\n"}, "tool_response": {"filePath": str(other)}}
    took, result = timed_hook(payload, other.parent)
    assert (result.returncode, result.stdout) == (0, b"") and took < 10, (took, result)
    assert str(other) in entries() and str(remote / "app" / "main.py") in entries()


def test_each_of_a_thing_is_no_schedule() -> None:
    """"Each service" says nothing of a time: the date beside it is still one."""
    reason = pre_tool("Write", {"file_path": str(memory_dir() / "jobs.md"),
                                "content": GOOD + "- Each service has its own DB; yesterday's outage took two down.\n"})
    assert reason is not None and '"yesterday" (line 8)' in reason
