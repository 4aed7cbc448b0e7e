"""Red team, round sixteen: the hooks, the edit ledger (seed 000) and the memory write lint
(seed 003), driven as Claude drives them: `python -P -m hooks` with the JSON Claude sends,
real files, real symlinks.

Misses fixed: an Edit of a memory file that is a symlink (a topic file linked to another in
the folder, or to a dotfiles copy Claude loads as memory all the same) was let through
unjudged, a relative date and all: the lint read the current file without following the
link, found nothing, and could not apply the edit. A Write through such a link judged every
line as new, and refused the write for a legacy line it kept as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hooks.test_memory_lint import GOOD, memory_dir, pre_tool


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
