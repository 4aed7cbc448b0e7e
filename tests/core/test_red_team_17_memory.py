"""Red team, round seventeen: memory hygiene (seed 003): the write lint through
`python -P -m hooks` as Claude runs PreToolUse, the sweep and `claudetto supersede`, on real
files.

Misses fixed: a Markdown rule (`---`, `***`, `___`) between sections of MEMORY.md was refused
as "no pointer" (seed 003 keeps prose and frontmatter out, and a rule is neither); "weeks
ago", "months ago", "a fortnight ago" and "the other week" went into memory as if they were
absolute dates; the refusal of an index line for a topic named in Latin-1 spelled a valid `é`
as `\xe9` and the byte as `\udce9`.

Held: memory files that are FIFOs, links to /dev/zero or /dev/stdin, folders, symlink loops
or named in Latin-1 or with a newline (escaped in the session-start context); supersede of
out-of-range, negative and huge line numbers, of a FIFO or a link out of memory, of a line
that is not UTF-8; version pins stated as history ("upgraded from 2.28.0", "do not use
2.28.0") and release lines; 20,000 random index, frontmatter and strike inputs.
"""

from __future__ import annotations

import pytest

from tests.hooks.test_memory_lint import GOOD, memory_dir, write

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


# --- relative dates: a span with no count is as relative as one with a count ----------------------


@pytest.mark.parametrize("line, word", [
    ("- We migrated off Mongo weeks ago.", "weeks ago"),
    ("- The flaky test was quarantined months ago.", "months ago"),
    ("- Billing moved to Stripe a fortnight ago.", "a fortnight ago"),
    ("- Staging was rebuilt the other week.", "the other week"),
    ("- The cert was renewed hours ago.", "hours ago"),
])
def test_a_relative_date_without_a_count_is_refused(line: str, word: str) -> None:
    """"3 weeks ago", "a few weeks ago" and "the other day" were refused, but "weeks ago",
    "months ago", "a fortnight ago" and "the other week" went into memory: each is as relative
    to the day it was written, and expires as silently."""
    reason = write(memory_dir() / "history.md", GOOD + line + "\n")
    assert reason is not None and f'"{word}" (line 8)' in reason, reason


@pytest.mark.parametrize("line", [
    "- Tokens expire after seven days.",
    "- Logs older than 30 days are deleted.",
    "- The cache keeps entries for weeks; flush it with `make flush`.",
    "- Old weeks are archived to `archive/` (the other weeks stay).",
])
def test_a_duration_is_no_relative_date(line: str) -> None:
    assert write(memory_dir() / "ops.md", GOOD + line + "\n") is None


# --- one spelling of a name in a refusal --------------------------------------------------------


def test_a_refused_index_line_names_the_topic_as_every_report_does() -> None:
    """The refusal of an index line for `résumé-caf\\xe9.md` (a name with a Latin-1 byte) read
    `r\\xe9sum\\xe9-caf\\udce9.md`: the valid `é` shown as the escape every other report uses
    for a byte that is not UTF-8, and that byte as Python's private `\\udce9`. It now reads
    `résumé-caf\\xe9.md`, as `claudetto memory`, the ledger and the session-start context
    show it."""
    import os

    from app.core import memory

    folder = memory_dir()
    (folder / "MEMORY.md").write_text("- [A](a.md) \u2014 h\n")
    raw = os.fsencode(str(folder)) + "/résumé-caf".encode() + b"\xe9.md"
    with open(raw, "wb") as fh:
        fh.write((GOOD + "x\n").encode())
    with pytest.raises(memory.MemoryWriteRefused) as refused:
        memory.add_to_index(os.fsdecode(raw))
    assert str(refused.value).startswith("résumé-caf\\xe9.md is not named in UTF-8"), str(refused.value)
