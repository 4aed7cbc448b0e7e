"""The write contract of Claude's project memory, checked before a write lands (PreToolUse).

Location is the contract: a prose instruction to keep memory tidy fails silently, a refusal
the model reads at the moment of writing holds. Three rules, each one function here:

- a fact file opens with frontmatter naming `name`, `description` and a type of user,
  feedback, project or reference (nested `metadata.type`, or top-level `type:` as older
  Claude versions write it): `frontmatter_problems`;
- prose a write adds uses no relative date ("yesterday", "last week", "recently"): such a
  fact expires silently, an absolute date does not: `relative_dates`;
- `MEMORY.md` stays an index of one-line pointers, no paragraph, no frontmatter: Claude
  loads its first 200 lines every session, and prose there is memory content in the wrong
  place: `index_problems`.

Only files inside `<config>/projects/*/memory/` are judged (`memory_folder_of`, also the rule
`claudetto supersede` uses); the hook calls in only for a path naming a memory folder, so other
writes cost only the payload's read. Stdlib only; `re` is loaded once a memory write is judged.
"""

from __future__ import annotations

import os

from app.core import paths
from app.core.relative_dates import relative_dates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MEMORY_TYPES = ("user", "feedback", "project", "reference")
INDEX_NAME = "MEMORY.md"
#: an index line is a pointer, not a paragraph squeezed onto one line
INDEX_LINE_MAX = 200
#: a memory file past this is not one Claude wrote through its tools: not judged
READ_MAX = 4 * 1024 * 1024
#: a line that corrects the struck one above it, as `supersede` writes it ("Correction
#: (2026-11-30): …", also as a table row) or as a dated note ("2026-11-30: …")
CORRECTION_PATTERN = r"\s*(?:[-*+>|]\s*|\d+[.)]\s+)*(?:\**correct(?:ion|ed)\b|\(?\d{4}-\d{2}-\d{2}\b)"

#: a Markdown rule (`---`, `***`, `___`, `- - -`) between groups of pointers: markup like a
#: heading or a blank line, neither prose nor frontmatter
THEMATIC_BREAK = r"([-*_])(?:[ \t]*\1){2,}"

_FRONTMATTER_TEMPLATE = ("---\nname: <short name>\ndescription: <one line: what this memory is for>\n"
                         "metadata:\n  type: <user|feedback|project|reference>\n---")


# --- where: the one rule for "inside a memory folder" ----------------------------------------


def memory_folder_of(path: str) -> str | None:
    """The memory folder (`<config>/projects/<slug>/memory`) that holds `path`, or None.

    `path` is absolute. It counts as inside when its spelling is, or when its parent folder,
    symlinks resolved, is inside the resolved config folder's `projects/*/memory/`: a
    symlinked config folder or memory folder still counts, a file whose real place lies
    elsewhere is judged by where it really is."""
    projects = os.path.join(paths.config_dir_str(), "projects")
    spelled = _folder_under(os.path.abspath(path), projects)
    if spelled is not None:
        return spelled
    try:
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        return _folder_under(real, os.path.realpath(projects))
    except (OSError, ValueError):
        return None


def _folder_under(path: str, projects: str) -> str | None:
    prefix = projects.rstrip("/") + "/"
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix):].split("/")
    if len(parts) < 3 or parts[1] != "memory" or not parts[0] or parts[0] in (".", ".."):
        return None
    if any(part in ("", ".", "..") for part in parts[2:]):
        return None
    return prefix + parts[0] + "/memory"


# --- the rules ------------------------------------------------------------------------------


def frontmatter(text: str) -> tuple[dict[str, str], int] | None:
    """The frontmatter of a memory file: its top-level keys (and `metadata.<key>` for keys
    nested one level under `metadata:`) with their values unquoted, and the number of lines
    it spans (both fences included); None when the text does not open with a closed block."""
    lines = text.split("\n")
    if not lines or lines[0].lstrip("\ufeff").strip() != "---":
        return None
    fields: dict[str, str] = {}
    parent: str | None = None
    last: str | None = None
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip("\r")
        if line.strip() in ("---", "..."):
            return fields, number
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indented = line[:1] in (" ", "\t")
        key, sep, value = line.strip().partition(":")
        if indented and (not sep or " " in key):
            if last is not None:  # a folded or block scalar's continuation
                fields[last] = (fields[last] + " " + line.strip()).strip()
            continue
        if not sep:
            continue
        value = _scalar(value)
        if not indented:
            parent = key if not value else None
            last = key
            if value.startswith("{") and value.endswith("}"):
                for item in value[1:-1].split(","):
                    sub, _, subvalue = item.partition(":")
                    fields[f"{key}.{sub.strip()}"] = _scalar(subvalue)
                continue
            fields[key] = "" if value in ("|", ">", "|-", ">-") else value
        elif parent is not None:
            last = f"{parent}.{key}"
            fields[last] = value
    return None


def _scalar(value: str) -> str:
    """A YAML scalar as text: quotes taken off, a comment cut; YAML's null (`~`, `null`, or
    nothing but a comment: `name: # TODO`) is empty, as YAML reads it."""
    value = value.strip()
    if value.startswith("#") or value in ("~", "null", "Null", "NULL"):
        return ""
    if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) >= 2:
        return value[1:-1].strip()
    cut = value.find(" #")
    return value[:cut].strip() if cut >= 0 else value


def frontmatter_problems(text: str) -> list[str]:
    """What a fact file's frontmatter lacks, each as a phrase; [] when it is complete."""
    found = frontmatter(text)
    if found is None:
        if text.lstrip("\ufeff").startswith("---"):
            return ["the frontmatter is not closed by a `---` line"]
        return ["there is no frontmatter"]
    fields, _ = found
    problems = [f"`{key}:` is missing or empty" for key in ("name", "description") if not fields.get(key)]
    kind = fields.get("metadata.type") or fields.get("type")
    if not kind:
        problems.append("the type is missing (`metadata:` / `  type: ...`)")
    elif kind not in MEMORY_TYPES:
        problems.append(f"the type `{kind}` is not one of {', '.join(MEMORY_TYPES)}")
    return problems


def index_problems(lines: list[tuple[int, str]], corrections: frozenset[int] = frozenset()) -> list[str]:
    """Index lines that are no one-line pointer (a list item naming a topic file, a heading,
    a rule or a blank line), each as a phrase naming its line. `corrections`: the numbers of the
    lines that correct a struck pointer right above them (`correction_lines`): one line each,
    as the seed asks of every wrong fact ("strike it through and append a dated correction in
    the same file"), so not refused for naming no topic file."""
    import re

    problems: list[str] = []
    for number, line in lines:
        if number in corrections and len(line.strip()) <= INDEX_LINE_MAX:
            continue
        text = line.lstrip("\ufeff").strip()  # an editor's BOM opens line 1: no text of its own
        if not text:
            continue
        shown = text if len(text) <= 60 else text[:57] + "..."
        if len(text) > INDEX_LINE_MAX:  # a heading too: a paragraph behind a `#` is still prose
            problems.append(f"line {number} is {len(text)} characters, over {INDEX_LINE_MAX} (\"{shown}\")")
            continue
        if text.startswith("#") or text.startswith("<!--") or re.fullmatch(THEMATIC_BREAK, text):
            continue
        item = re.match(r"(?:[-*+]|\d+[.)])\s+(.*)$", text)
        if item is None or not re.search(r"\]\([^)]+\)|[\w./-]+\.md\b", item.group(1)):
            problems.append(f"line {number} is no pointer (\"{shown}\")")
    return problems


def correction_lines(text: str) -> frozenset[int]:
    """The numbers of the lines of `text` that open as a dated correction (CORRECTION_PATTERN)
    right below a line with struck text (blank lines between allowed)."""
    import re

    pattern = re.compile(CORRECTION_PATTERN, re.IGNORECASE)
    found: set[int] = set()
    above = ""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if re.search(r"~~.+?~~", above) and pattern.match(line):
            found.add(number)
        above = line
    return frozenset(found)


# --- one write ------------------------------------------------------------------------------


def lint_write(payload: dict[str, Any]) -> str | None:
    """The reason to refuse a Write, Edit or MultiEdit of a memory file, or None to let it be.

    Anything that cannot be judged (a path outside memory, not a `.md` file, an Edit whose
    `old_string` is not in the file: the tool itself fails on that) is let through."""
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if tool not in ("Write", "Edit", "MultiEdit") or not isinstance(tool_input, dict):
        return None
    from app.core.ledger_entry import edited_path

    path = edited_path(payload)  # as Claude resolves it before writing: `~/` is the home, `cwd` the base
    if path is None:
        return None
    folder = memory_folder_of(path)
    if folder is None and os.path.islink(path):  # a link elsewhere into memory: the write lands there
        path = os.path.realpath(path)
        folder = memory_folder_of(path)
    if folder is None or not path.lower().endswith(".md"):
        return None
    old = _current(path)
    if old is not None:  # Claude's Edit reads a CRLF file as LF text and writes its endings back
        old = old.replace("\r\n", "\n")
    new = _after(tool, tool_input, old, missing=old is None and not os.path.exists(path))
    if new is None:
        return None
    is_index = os.path.basename(path) == INDEX_NAME and os.path.dirname(os.path.abspath(path)) == os.path.abspath(folder)
    return _verdict(os.path.basename(path), is_index, old or "", new)


def _current(path: str) -> str | None:
    from app.core.state import read_regular

    try:
        # through a link, as Claude's tools read and write it: a linked memory file is memory too
        return read_regular(os.path.realpath(path), limit=READ_MAX).decode("utf-8", "replace")
    except OSError:
        return None


def _after(tool: object, tool_input: dict[str, Any], old: str | None, missing: bool = False) -> str | None:
    """The file's text once the write is done, or None when it cannot be known.

    An edit with an empty `old_string` creates the file, or fills one that holds only
    blanks, with its `new_string` (Claude's Edit and MultiEdit refuse it on a file with
    content): a memory file made that way is judged as a whole new file, like a Write."""
    if tool == "Write":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    edits = [tool_input] if tool == "Edit" else tool_input.get("edits")
    text = "" if missing else old
    if text is None or not isinstance(edits, list):
        return None
    for edit in edits:
        if not isinstance(edit, dict):
            return None
        before, after = edit.get("old_string"), edit.get("new_string")
        if not isinstance(before, str) or not isinstance(after, str):
            return None
        if not before:
            if text.strip():
                return None
            text = after
            continue
        before = _as_in_file(before, text)
        if before is None:
            return None
        text = text.replace(before, after) if edit.get("replace_all") is True else text.replace(before, after, 1)
    return text


#: the typographic quotes Claude's Edit tool takes for straight ones when it looks for an old_string
_STRAIGHT = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def _as_in_file(before: str, text: str) -> str | None:
    """The text of the file that an edit's `old_string` names, or None when the tool would
    find none. Claude's Edit tool matches `'` and `"` against typographic quotes too (a memory
    file pasted from a document holds “…”): such an edit lands, so it is judged, not let by."""
    if before in text:
        return before
    at = text.translate(_STRAIGHT).find(before.translate(_STRAIGHT))
    return text[at:at + len(before)] if at >= 0 else None


def added_lines(old: str, new: str) -> list[tuple[int, str]]:
    """The lines of `new` (numbered from 1) that `old` does not have as often: what a write
    adds. A line kept as it was is never judged again, so a legacy file can still be fixed."""
    counts: dict[str, int] = {}
    for line in old.split("\n"):  # a line is the same line whatever its ending (CRLF or LF)
        counts[line.rstrip("\r")] = counts.get(line.rstrip("\r"), 0) + 1
    added = []
    for number, line in enumerate(new.split("\n"), start=1):
        if counts.get(line.rstrip("\r"), 0) > 0:
            counts[line.rstrip("\r")] -= 1
        else:
            added.append((number, line))
    return added


def _verdict(name: str, is_index: bool, old: str, new: str) -> str | None:
    problems: list[str] = []
    fenced = fenced_lines(new)
    every_added = added_lines(old, new)
    added = [(n, line) for n, line in every_added if n not in fenced]
    if is_index:
        if new.lstrip("\ufeff").startswith("---"):
            problems.append(f"{INDEX_NAME} is an index of one-line pointers (`- [Title](topic.md) — one-line "
                            "hook`) and takes no frontmatter: remove the `---` block (the frontmatter belongs "
                            "in each topic file)")
        body_from = (frontmatter(new) or ({}, 0))[1]
        # a fenced block is no pointer either: code or prose behind fences is content Claude
        # loads with the index every session, in the wrong territory all the same
        bad = index_problems([(n, line) for n, line in every_added if n > body_from], correction_lines(new))
        if bad:
            problems.append(f"{INDEX_NAME} stays an index of one-line pointers "
                            "(`- [Title](topic.md) — one-line hook`), no paragraphs: " + "; ".join(bad)
                            + ". Move the content into a topic file and add one pointer line for it")
    else:
        missing = frontmatter_problems(new)
        if missing:
            problems.append("a memory fact file opens with frontmatter (name, description, type), but "
                            + "; ".join(missing) + f". Start the file with:\n{_FRONTMATTER_TEMPLATE}")
    dated = [(n, word) for n, line in added for word in relative_dates(line)]
    if dated:
        import time

        shown = ", ".join(f"\"{word}\" (line {n})" for n, word in dated[:8])
        problems.append(f"relative dates expire silently: {shown}. Write the absolute date instead "
                        f"(today is {time.strftime('%Y-%m-%d')}), e.g. \"on 2026-08-11\" rather than \"last week\"")
    if not problems:
        return None
    return f"claudetto memory lint refused this write of `{name}`:\n" + "\n".join(f"- {p}" for p in problems)


def fenced_lines(text: str) -> set[int]:
    """The numbers of the lines of `text` inside fenced code blocks, fences included: code
    and examples, not prose or facts. An unclosed fence runs to the end, as Markdown reads it."""
    fenced: set[int] = set()
    marker = ""
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.lstrip()
        if marker:
            fenced.add(number)
            if stripped.startswith(marker) and not stripped[len(marker):].strip("`~ \r"):
                marker = ""
        elif stripped.startswith(("```", "~~~")):
            fenced.add(number)
            char = stripped[0]
            marker = char * (len(stripped) - len(stripped.lstrip(char)))
    return fenced
