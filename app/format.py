"""Display helpers for the TUI: sizes, ages and paths as a person reads them (UI side only).

Sizes and ages go through humanize. Paths are shown relative to the root they live under
(`~`, `$TMPDIR`, `$CLAUDE_CODE_TMPDIR`, `$CLAUDETTO_HOME`, each when its variable is set;
else the default reads as itself: `~/.claude`, `/tmp/claude-$UID`), and a project slug of a folder
under HOME with HOME's own slug as `~` (`-home-alice-code-shop` reads `~-code-shop`), so a
row stays short and reads the same on every machine (and in every test sandbox).
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta

import humanize
from rich.cells import cell_len

from app.core import paths

KEEP_REASONS: dict[str, str] = {
    "live": "a live session uses it",
    "young": "younger than its age limit",
    "outside_root": "outside every allowed root",
    "symlink": "a symlink",
    "escapes_root": "its real path leaves the root",
    "dirty": "changed, untracked or secret files",
    "unmerged": "commits or a stash nowhere else",
    "in_use": "in use (a mount, a running config)",
    "journal": "the journal cannot be written",
    "not_a_worktree": "not a git worktree",
    "not_removed": "git would not remove it",
    "unknown": "no rule names it",
    "missing": "gone already",
    "read_only": "read-only mode",
}

DAY_S = 86400
ACTION_LABELS = {"remove": "will remove", "keep": "keep", "skip": "skip", "missing": "missing"}


def size(value: int | None) -> str:
    """Disk bytes, humanized in binary units ("1.5 MiB"); "…" when not measured yet."""
    if value is None:
        return "…"
    return humanize.naturalsize(value, binary=True, format="%.1f")


def age(mtime: float | None, now: float) -> str:
    """How long ago `mtime` was, relative to `now` ("3 days ago")."""
    if mtime is None:
        return "-"
    delta = max(0.0, now - mtime)
    if 2 * DAY_S <= delta < 30 * DAY_S:
        # humanize rounds 20 days up to "a month ago": beside `keep: young` under a 30-day
        # cleanupPeriodDays that reads as a contradiction, so under a month says its days
        return f"{int(delta // DAY_S)} days ago"
    try:
        return humanize.naturaltime(timedelta(seconds=delta), when=datetime.fromtimestamp(now))
    except (OverflowError, ValueError):  # before year 1 (a time set so, or read from a file half written)
        return f"{int(min(delta, 1e18) // (365.25 * DAY_S)):,} years ago"


def ms_age(ms: int | None, now: float) -> str:
    """A Claude timestamp in milliseconds, as an age."""
    return "-" if ms is None else age(ms / 1000.0, now)


def reason(action: str, why: str) -> str:
    """A verdict in words: "will remove (age)" or "keep: a live session uses it"."""
    if action == "remove":
        return f"will remove ({why})"
    return f"{ACTION_LABELS.get(action, action)}: {KEEP_REASONS.get(why, why)}"


def verdict_cell(action: str, why: str) -> str:
    """A verdict as a short cell: "will remove (age)", "keep: live", "skip: symlink"."""
    if action == "remove":
        return f"will remove ({why})"
    if action == "missing":
        return "missing"
    return f"{ACTION_LABELS.get(action, action)}: {why}"


def tail(text: str, width: int) -> str:
    """`text` cut from the left to `width` cells, so the end of a path stays visible (a wide
    character, CJK say, takes two: counted in characters, the table cut it at the right)."""
    if cell_len(text) <= width:
        return text
    start = max(0, len(text) - width + 1)  # at least one cell a character
    while start < len(text) and cell_len(text[start:]) > width - 1:
        start += 1
    return "…" + text[start:]


_UUID = re.compile(r"([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_WORKTREES = f"{os.sep}.claude{os.sep}worktrees{os.sep}"


def project_of(path: str | None) -> str | None:
    """The project folder a path belongs to, read from the path alone (no disk): the part
    before `/.claude/worktrees/` for a checkout, else None."""
    if path and _WORKTREES in path:
        return path.split(_WORKTREES, 1)[0]
    return None


def compact_path(path: str, width: int, project: str | None = None,
                 table: list[tuple[str, str]] | None = None) -> str:
    """`short_path(path)` when it fits `width`, else the project and the tail: the project's
    name (or the project slug in the path), `…`, and the last part with a session uuid cut to
    its first 8 characters (`notes/…/9b3e7d21…`), cut from the left only when still too long."""
    shown = short_path(path, table)
    if cell_len(shown) <= width:
        return shown
    parts = shown.rstrip(os.sep).split(os.sep)
    last = _UUID.sub(r"\1…", parts[-1])
    project = project or project_of(path)
    if project and (path + os.sep).startswith(project.rstrip(os.sep) + os.sep):
        label = os.path.basename(project.rstrip(os.sep))
    else:  # a folder of Claude's temp tree names its project by slug
        label = next((p for p in reversed(parts[:-1]) if p.startswith(("-", "~-"))), "")
    if not label or label == last:
        return tail(os.sep.join([*parts[:-1], last]), width)
    between = os.sep if len(parts) > 1 and parts[-2] == label else f"{os.sep}…{os.sep}"
    room = width - cell_len(last) - len(between)
    if room < cell_len(label):
        label = tail(label[::-1], room)[::-1] if room >= 4 else ""  # its start kept, cut at its end
    return tail(f"{label}{between}{last}" if label else f"…{os.sep}{last}", width)


def home_path(path: str | os.PathLike[str]) -> str:
    """A real path as a person reads it: HOME's part as `~`, everything else as it is."""
    text = os.fspath(path)
    for home in dict.fromkeys((str(paths.home()), os.path.realpath(str(paths.home())))):
        if home and home != os.sep and (text == home or text.startswith(home + os.sep)):
            return "~" + text[len(home):]
    return text


_ROOT_VARIABLES = ("HOME", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_TMPDIR", "TMPDIR", "TMP", "TEMP", "CLAUDETTO_HOME",
                   "CLAUDE_PLUGIN_DATA")
_roots_seen: dict[tuple[object, ...], list[tuple[str, str]]] = {}


def roots() -> list[tuple[str, str]]:
    """(prefix, label) pairs, longest prefix first, for `short_path`; the last pair is
    (HOME's project slug, "~"), which `short_path` applies to a slug inside the path.
    Worked out once per environment (a table of 2,000 paths asks 2,000 times)."""
    key = (os.getuid(), *(os.environ.get(name) for name in _ROOT_VARIABLES))
    if key not in _roots_seen:
        _roots_seen.clear()
        _roots_seen[key] = _roots()
    return _roots_seen[key]


def _roots() -> list[tuple[str, str]]:
    uid = os.getuid()
    candidates = [  # (variable that must be set for the label to mean something, prefix, label)
        ("CLAUDE_CODE_TMPDIR", str(paths.claude_tmp_dir()), f"$CLAUDE_CODE_TMPDIR/claude-{uid}"),
        ("CLAUDE_CODE_TMPDIR", str(paths.log_root()), "$CLAUDE_CODE_TMPDIR/claudetto"),
        ("CLAUDETTO_HOME", str(paths.claudetto_home()), "$CLAUDETTO_HOME"),
        ("CLAUDE_CONFIG_DIR", str(paths.config_dir()), "$CLAUDE_CONFIG_DIR"),
        ("TMPDIR", str(paths.user_tmp()), "$TMPDIR"),
        ("CLAUDE_CODE_TMPDIR", str(paths.claude_tmp_root()), "$CLAUDE_CODE_TMPDIR"),
        ("HOME", str(paths.home()), "~"),
    ]
    # an unset variable's default reads better as itself (`~/.claude`, `/tmp/claude-$UID`)
    found = [(prefix, label) for name, prefix, label in candidates if os.environ.get(name)]
    real_home = os.path.realpath(str(paths.home()))
    if real_home != str(paths.home()):
        found.append((real_home, "~"))
    home_slug = (paths.project_slug(real_home), "~")
    return [*sorted(found, key=lambda pair: len(pair[0]), reverse=True), home_slug]


def short_path(path: str, table: list[tuple[str, str]] | None = None) -> str:
    """`path` with its root replaced by a label, the uid of `claude-<uid>` shown as `$UID` and
    a project slug of a folder under HOME as `~-<rest>`."""
    table = table if table is not None else roots()
    shown = path
    for prefix, label in table[:-1]:
        if path == prefix:
            shown = label
            break
        if path.startswith(prefix + os.sep):
            shown = label + path[len(prefix):]
            break
    home_slug = table[-1][0]
    if home_slug and f"/{home_slug}-" in shown:
        shown = shown.replace(f"/{home_slug}-", "/~-")
    return shown.replace(f"claude-{os.getuid()}", "claude-$UID")


def bar(fraction: float, width: int) -> str:
    """A size bar of `width` cells, filled by `fraction` (eighths for a smooth end)."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[rest] if rest else ""
    return ("█" * full + partial).ljust(width)


def sparkline(values: list[int], width: int) -> str:
    """The last `width` values as one line of block characters, scaled between their least
    and their most (flat when they do not move); blank cells before too few values."""
    shown = values[-width:]
    if not shown:
        return " " * width
    low, high = min(shown), max(shown)
    blocks = "▁▂▃▄▅▆▇█"
    if high == low:
        line = blocks[0] * len(shown)
    else:
        line = "".join(blocks[min(7, int((v - low) / (high - low) * 7 + 0.5))] for v in shown)
    return line.rjust(width)


def rate(bytes_per_minute: float | None) -> str:
    """A growth rate: "+1.2 MiB/min", "steady", or "…" before there are two samples."""
    if bytes_per_minute is None:
        return "…"
    if abs(bytes_per_minute) < 1:
        return "steady"
    sign = "+" if bytes_per_minute > 0 else "-"
    return f"{sign}{size(int(abs(bytes_per_minute)))}/min"
