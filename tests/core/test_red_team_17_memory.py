"""Red team, round seventeen: memory hygiene (seed 003): the write lint through
`python -P -m hooks` as Claude runs PreToolUse, the sweep and `claudetto supersede`, on real
files.
"""

from __future__ import annotations

import pytest

from tests.hooks.test_memory_lint import memory_dir, write

# --- MEMORY.md: a thematic break is markup between pointers, not prose ---------------------------


@pytest.mark.parametrize("rule", ["---", "***", "___", "- - -", " * * *", "-----"])
def test_a_thematic_break_between_index_sections_is_let_through(rule: str) -> None:
    """A `---` line between two groups of pointers (as a model or a user writes an index that
    grew sections) was refused as "no pointer": seed 003 keeps MEMORY.md free of paragraph
    prose and frontmatter, and a rule is neither; headings and blank lines already pass."""
    index = memory_dir() / "MEMORY.md"
    content = f"# Index\n\n- [Build](build.md) \u2014 how it builds\n\n{rule}\n\n## Older\n- [Db](db.md) \u2014 the db\n"
    assert write(index, content) is None


@pytest.mark.parametrize("content, named", [
    ("- [Build](build.md) \u2014 how it builds\n--- we moved to bazel ---\n", "line 2"),
    ("- [Build](build.md) \u2014 how it builds\n-- -x\n", "line 2"),
    ("---\nname: index\n---\n- [Build](build.md) \u2014 how it builds\n", "frontmatter"),
], ids=["prose-between-dashes", "not-a-rule", "frontmatter"])
def test_prose_dressed_as_a_rule_and_frontmatter_are_still_refused(content: str, named: str) -> None:
    reason = write(memory_dir() / "MEMORY.md", content)
    assert reason is not None and named in reason
