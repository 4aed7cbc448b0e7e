"""Display helpers for the TUI: sizes, ages and paths as a person reads them (UI side only).

Sizes and ages go through humanize. Paths are shown relative to the root they live under
(`~`, `$TMPDIR`, `$CLAUDE_CODE_TMPDIR`, `$CLAUDETTO_HOME`, each when its variable is set;
else the default reads as itself: `~/.claude`, `/tmp/claude-$UID`), and a project slug of a folder
under HOME with HOME's own slug as `~` (`-home-alice-code-shop` reads `~-code-shop`), so a
row stays short and reads the same on every machine (and in every test sandbox).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

import humanize

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
    return humanize.naturaltime(timedelta(seconds=delta), when=datetime.fromtimestamp(now))


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
    """`text` cut from the left to `width` cells, so the end of a path stays visible."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def roots() -> list[tuple[str, str]]:
    """(prefix, label) pairs, longest prefix first, for `short_path`; the last pair is
    (HOME's project slug, "~"), which `short_path` applies to a slug inside the path."""
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
