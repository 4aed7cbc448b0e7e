"""Index drift: `MEMORY.md` lines pointing at missing files, and topic files no line of
`MEMORY.md` points at (invisible to recall).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from app.core.memory.facts import URL, fact_lines
from app.core.memory_lint import INDEX_NAME

#: a Markdown link's target: `<with spaces.md>`, or a run without blanks that may hold balanced
#: parentheses (`a(2).md`); then an optional title in quotes or parentheses
_LINK = re.compile(r"\[[^\]]*\]\(\s*(?:<([^<>\n]+)>|((?:[^()\s<>]|\([^()\s]*\))+))"
                   r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)")


#: a list item with no link that names a topic file (`- deploy.md — how`, ``- `deploy.md` ``):
#: the write lint lets such a line stand as a pointer, so the sweep reads it as one
_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s")
_NAMED = re.compile(r"(?<![\w./:~-])`?((?:[\w-][\w.-]*/)*[\w-][\w.-]*\.md)`?(?![\w/-])", re.IGNORECASE)


def index_links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every local link on a fact line of an index (pure): not a URL,
    not an in-page anchor; the `#anchor` and `?query` of a target are dropped. A list item
    without a link points at each `.md` file it names."""
    from urllib.parse import unquote

    links = []
    for fact in fact_lines(text):
        if not _LINK.search(fact.text) and _ITEM.match(fact.text):
            # a correction ("`deploy.md` no longer exists") or an example names a file it
            # does not point at
            if not fact.has("past", "negation", "example", "future", "url"):
                links += [(fact.number, name) for name in _NAMED.findall(fact.text)]
            continue
        for match in _LINK.finditer(fact.text):
            target = match.group(1) or match.group(2)
            if URL.match(target) or target.startswith(("#", "mailto:")) or ":" in target.split("/", 1)[0]:
                continue
            target = unquote(target.split("#", 1)[0].split("?", 1)[0])
            if target:
                links.append((fact.number, target))
    return links


def target_missing(folder: str, target: str) -> bool:
    """Whether an index link's target (relative to the memory `folder`) names nothing: the
    test of `index_missing_file`, asked again before such a line is struck (Claude may have
    written the file since the sweep)."""
    return not os.path.lexists(os.path.normpath(os.path.join(folder, target)))


def index_drift(folder: str, index_text: str | None, topics: Sequence[str]) -> list[tuple[str, int | None, str, str, str]]:
    """(file, line, kind, token, message) for each index line pointing at a missing file and
    each topic file (relative to `folder`) that no index line names."""
    drift: list[tuple[str, int | None, str, str, str]] = []
    index = os.path.join(folder, INDEX_NAME)
    listed: set[str] = set()
    if index_text is not None:
        for number, target in index_links(index_text):
            listed.add(os.path.normpath(os.path.join(folder, target)))
            if target_missing(folder, target):
                drift.append((index, number, "index_missing_file", target,
                              f"{INDEX_NAME} points at `{target}`, which does not exist"))
        named = " ".join(fact.text for fact in fact_lines(index_text))
    else:
        named = ""
    for topic in topics:
        path = os.path.normpath(os.path.join(folder, topic))
        if path in listed or re.search(rf"(?<![\w./-]){re.escape(topic)}(?![\w/-])", named):
            continue
        why = "no line in MEMORY.md points at it" if index_text is not None else "there is no MEMORY.md"
        drift.append((path, None, "index_unlisted_file", topic,
                      f"`{topic}` is invisible to recall: {why}"))
    return drift
