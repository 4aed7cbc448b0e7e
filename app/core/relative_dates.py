"""Relative dates in the prose a memory write adds: "yesterday", "last week", "3 days ago".
Such a fact expires silently, an absolute date does not (seed 003); the write lint
(`memory_lint`) refuses them and names today's date to write instead.

Phrases that only look relative are left out, since a refusal of a true fact teaches the
model to drop it (`_RELATIVE` names each), and so is a window a schedule reads anew at each
run (`_each_run`): "the nightly ETL loads yesterday's orders" is as true next year.

Stdlib only (`re`, loaded at the first call): the write lint runs on the PreToolUse hook.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_UNIT = r"(?:second|minute|hour|day|week|month|year|decade)"
_UNITS = _UNIT + "s?"
_COUNTS = (r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a\s+few|few|several|"
           r"some|a\s+couple\s+of|couple\s+of|many)")
_PERIODS = (r"(?:week|weekend|month|year|quarter|sprint|night|morning|afternoon|evening|"
            r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)")
# Phrases that only look relative are left out, since a refusal of a true fact teaches the
# model to drop it: "as soon as" (a condition), "least/most recently used" (a policy), "the
# last Friday of each month" (a position in a period), "the day before each release" (before
# an event, not before today).
_RELATIVE = (
    r"\b(?:yesterday|today|tomorrow|tonight|lately|nowadays|soon(?!\s+as\b)|"
    r"(?<!most\s)(?<!least\s)recently(?![\s-]+(?:used|accessed|modified|updated|opened|viewed)\b)|"
    r"the\s+other\s+(?:day|week)|the\s+day\s+before(?![ \t]+\w)|just\s+now|right\s+now|"
    rf"(?:last|next|this|past|coming|previous|following)\s+{_PERIODS}(?!\s+of\b)|"
    rf"(?:last|next|past|previous|coming)\s+(?:few|couple\s+of|\d+)\s+{_UNITS}|"
    rf"(?:{_COUNTS}\s+{_UNITS}|{_UNIT}s|(?:a|one)\s+fortnight|fortnights)\s+(?:ago|from\s+now)|"
    r"(?:a\s+while|a\s+moment|some\s+time|not\s+long)\s+ago|"
    rf"(?:earlier|later)\s+this\s+{_PERIODS})\b"
)
_pattern: Any = None


def relative_dates(line: str) -> list[str]:
    """The relative dates in one line of prose, as written; inline code and struck text
    (`~~…~~`, kept history) are not prose and are not looked at."""
    global _pattern
    import re

    if _pattern is None:
        _pattern = re.compile(_RELATIVE, re.IGNORECASE)
    from app.core.code_spans import CODE_SPAN

    prose = re.sub(r"~~.*?~~", " ", CODE_SPAN.sub(" ", line))
    # an address is a name, not prose: `…/d/today-errors`, `[notes](standup-today.md)`
    prose = re.sub(r"\b[a-z][a-z0-9+.-]*://\S+|\bwww\.\S+|\]\([^)\s]*\)", " ", prose, flags=re.IGNORECASE)
    prose = re.sub(r"\S+", _unless_name, prose)
    # `_last week_` is emphasis: its underscores are word characters, so no word edge showed
    # the date (inside a name, `last_week_report`, they stay)
    prose = re.sub(r"(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])", " ", prose)
    recurring = re.search(_RECURRING, prose, re.IGNORECASE) is not None
    return [" ".join(match.group(0).split()) for match in _pattern.finditer(prose)
            if not _each_run(match, prose, recurring)]


# A line about a schedule ("the nightly ETL", "every morning", "a cron job")
_RECURRING = (r"\b(?:daily|nightly|hourly|weekly|monthly|cron|(?:each|every|per)\s+(?:other\s+)?"
              rf"(?:day|hour|minute|run|build|deploy|release|{_PERIODS})s?)\b")


def _each_run(match: Any, prose: str, recurring: bool) -> bool:
    """Whether a relative phrase is what each run of a schedule reads anew, not a date: on a
    line about a schedule, a day's data (`yesterday's orders`) or a window (`the past week`,
    `the last 7 days`); anywhere, `today's date`, a value a program computes. A bare
    "yesterday" or "last week" beside a schedule ("the nightly job failed yesterday") is
    still a date, and so is "next Monday"."""
    import re

    word = match.group(0).lower()
    after, before = prose[match.end():match.end() + 8].lower(), prose[:match.start()]
    if word in ("yesterday", "today", "tomorrow") and after[:2] in ("'s", "\u2019s"):
        return recurring or re.match(r"..\s+date\b", after) is not None
    return recurring and word.startswith(("last", "past", "previous")) and re.search(r"\bthe\s+$", before, re.I) is not None


def _unless_name(word: Any) -> str:
    """A blank for a word that is a name (a path, a file name, a call, a decorator, an address,
    a flag's value, a channel: `notes/today.md`, `today()`, `@today`, `--since=yesterday`,
    `#today`), else the word. Prose around them is still read: `yesterday/today` is no path."""
    import re

    token = word.group(0).strip("\"'()[]{},;:!?*").rstrip(".")
    if (token.startswith(("/", "./", "../", "~/", "@", "#", "--")) and len(token) > 2) or "@" in token \
            or re.search(r"\w\.[a-z0-9]{1,8}$", token) or re.search(r"\w\(", word.group(0)):
        return " "
    return word.group(0)


