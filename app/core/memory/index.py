"""Index drift: `MEMORY.md` lines pointing at missing files, and topic files no line of
`MEMORY.md` points at (invisible to recall).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from app.core.memory.facts import URL, fact_lines
from app.core.memory_lint import INDEX_NAME

#: Claude loads the first 200 lines or 25 KB of MEMORY.md each session (CLAUDE_CODE_FACTS):
#: a pointer past that is not recalled
INDEX_LOADED_LINES = 200
INDEX_LOADED_BYTES = 25 * 1024

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


def target_path(folder: str, target: str) -> str:
    """Where an index link's target points: relative to the memory folder, or from the home
    (`~/.claude/projects/…/memory/deploy.md`, as a path Claude wrote from the home reads)."""
    if target.startswith("~/"):
        target = os.path.expanduser(target)
    return os.path.normpath(os.path.join(folder, target))


def target_missing(folder: str, target: str) -> bool:
    """Whether an index link's target (relative to the memory `folder`) names nothing: the
    test of `index_missing_file`, asked again before such a line is struck (Claude may have
    written the file since the sweep)."""
    try:
        os.stat(target_path(folder, target))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        # a link left dangling is a pointer at nothing too: Claude's read of it fails the same
        return True
    except OSError:
        return False  # there, but out of reach (a loop, no permission): not known to be gone
    return False


def loaded_lines(text: str) -> int:
    """How many lines of an index Claude loads each session: the first INDEX_LOADED_LINES,
    as far as they fit in INDEX_LOADED_BYTES (pure)."""
    size = 0
    for number, line in enumerate(text.split("\n")[:INDEX_LOADED_LINES], start=1):
        size += len(line.encode("utf-8", "surrogateescape")) + 1
        if size > INDEX_LOADED_BYTES:
            return number - 1
    return INDEX_LOADED_LINES


class Listing:
    """Where an index lists each file: the first line that links to it, or names it."""

    def __init__(self, folder: str, index_text: str) -> None:
        self.first: dict[str, int] = {}
        self.links = index_links(index_text)
        for number, target in self.links:
            self.first.setdefault(target_path(folder, target), number)
        self.facts = fact_lines(index_text)
        self.named = " ".join(fact.text for fact in self.facts)
        self.folder = folder

    def line_of(self, topic: str) -> int | None:
        """The first line listing `topic` (relative to the folder), or None."""
        linked = self.first.get(os.path.normpath(os.path.join(self.folder, topic)))
        pattern = rf"(?<![\w./-]){re.escape(topic)}(?![\w/-])"
        if not re.search(pattern, self.named):
            return linked
        named = next(fact.number for fact in self.facts if re.search(pattern, fact.text))
        return named if linked is None else min(linked, named)


def listed_at(folder: str, index_text: str, topic: str) -> int | None:
    """The first line of the index that lists `topic`, or None (the sweep's own reading)."""
    return Listing(folder, index_text).line_of(topic)


def index_drift(folder: str, index_text: str | None, topics: Sequence[str]) -> list[tuple[str, int | None, str, str, str]]:
    """(file, line, kind, token, message) for each index line pointing at a missing file and
    each topic file (relative to `folder`) that no index line names, or that only lines past
    what Claude loads each session name: a pointer there is never recalled either."""
    drift: list[tuple[str, int | None, str, str, str]] = []
    index = os.path.join(folder, INDEX_NAME)
    listing = Listing(folder, index_text) if index_text is not None else None
    for number, target in listing.links if listing else []:
        if target_missing(folder, target):
            drift.append((index, number, "index_missing_file", target,
                          f"{INDEX_NAME} points at `{target}`, which does not exist"))
    loaded = loaded_lines(index_text) if index_text is not None else 0
    for topic in topics:
        path = os.path.normpath(os.path.join(folder, topic))
        at = listing.line_of(topic) if listing else None
        if at is not None and at <= loaded:
            continue
        if at is not None:
            why = (f"{INDEX_NAME} lists it only at line {at}, past the first {loaded} lines Claude loads "
                   f"(at most {INDEX_LOADED_LINES} lines, {INDEX_LOADED_BYTES // 1024} KB); move that line up")
        elif index_text is not None:
            why = "no line in MEMORY.md points at it"
        else:
            why = "there is no MEMORY.md"
        drift.append((path, None, "index_unlisted_file", topic, f"`{topic}` is invisible to recall: {why}"))
    return drift
