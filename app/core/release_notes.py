"""What SessionStart tells the model about its checkout: a release cut short is finished,
the session claims its checkouts, and the model reads what the last release deleted and how
to reinstall it (from the lock files beside what went).
"""

from __future__ import annotations

import os
from typing import Any

from app.core import checkouts, paths
from app.core.log import log, printable

#: Lock files, and how to reinstall what a release deleted from each (checked in order).
LOCK_FILES = (
    ("package-lock.json", "npm ci"),
    ("pnpm-lock.yaml", "pnpm install --frozen-lockfile"),
    ("yarn.lock", "yarn install --frozen-lockfile"),
    ("bun.lockb", "bun install --frozen-lockfile"),
    ("bun.lock", "bun install --frozen-lockfile"),
    ("uv.lock", "uv sync --frozen"),
    ("poetry.lock", "poetry install"),
    ("Cargo.lock", "cargo build"),
    ("go.sum", "go mod download"),
    ("Gemfile.lock", "bundle install"),
)
NOTE_MAX_PATHS = 20


def session_start_context(session_id: str, cwd: str | None, source: object) -> str:
    """SessionStart: finish any release of the session's checkouts that was cut short, claim
    them, and return the note on what a release deleted and how to reinstall it ("" when
    there is nothing to say)."""
    from app.core.claude_process import claude_process
    from app.core.release import release_checkout

    if not os.path.exists(paths.checkouts_file()):
        return ""
    process = claude_process()
    for key, entry in checkouts.claimable(session_id, cwd).items():
        if entry.get("state") == "cut_short" and releaser(entry) is None:
            # only one whose process is gone: a release still running is stopped by the claim
            # below, never finished here with this session's own hold left out
            done = release_checkout(key, session=session_id, process=process, trash=True,
                                    states=frozenset({"cut_short"}))
            log(f"release: {key}: a release cut short, finished at session start: {done.status}")
    notes = [reinstall_note(c.path, c.last_release) for c in checkouts.claim(session_id, cwd, process, source)
             if c.last_release]
    return "\n\n".join(n for n in notes if n)


def releaser(entry: object) -> int | None:
    """The pid of the process that wrote the record's `cut_short` while it still runs (a
    release under way, not one cut short), else None. The SessionStart that would finish a
    release and the dashboard that offers to both ask here."""
    from app.core.sessions import process_running

    cut = entry.get("cut_short") if isinstance(entry, dict) else None
    pid = cut.get("pid") if isinstance(cut, dict) else None
    start = cut.get("proc_start") if isinstance(cut, dict) else None
    running = type(pid) is int and (start is None or isinstance(start, str)) and process_running(pid, start)
    return pid if running and type(pid) is int else None


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} bytes"


def reinstall_commands(checkout: str, deleted: list[str]) -> list[str]:
    """`<command>` lines from the lock files present: in the checkout, and beside each
    deleted path (a workspace package's own lock file)."""
    folders = sorted({""} | {os.path.dirname(rel) for rel in deleted})
    lines = []
    for folder in folders:
        where = os.path.join(checkout, folder) if folder else checkout
        try:
            names = set(os.listdir(where))
        except OSError:
            continue
        found = [(name, command) for name, command in LOCK_FILES if name in names]
        found += [(name, f"pip install -r {name}") for name in sorted(names)
                  if name.startswith("requirements") and name.endswith(".txt")]
        prefix = f"in {printable(folder)}: " if folder else ""
        lines += [f"- {prefix}`{command}` ({name})" for name, command in found]
    return lines


def reinstall_note(checkout: str, last: dict[str, Any]) -> str:
    """What the last release of `checkout` deleted and how to reinstall it, for the model."""
    deleted = checkouts.strings(last.get("deleted"))
    if not deleted:
        return ""
    shown = ", ".join(printable(rel) for rel in deleted[:NOTE_MAX_PATHS])
    if len(deleted) > NOTE_MAX_PATHS:
        shown += f" and {len(deleted) - NOTE_MAX_PATHS} more"
    size = last.get("bytes")
    amount = f" ({_size(size)})" if isinstance(size, int) and not isinstance(size, bool) and size > 0 else ""
    if last.get("cut_short"):
        head = (f"claudetto: a release of this checkout ({printable(checkout)}) was cut short; "
                f"before it stopped it had deleted{amount}: {shown}.")
    else:
        head = (f"claudetto released this checkout ({printable(checkout)}) when no session held it, "
                f"deleting its scratch{amount}: {shown}.")
    lines = [head, "`.tmp/` and everything else were kept."]
    commands = reinstall_commands(checkout, deleted)
    if commands:
        lines.append("Reinstall before building or testing:")
        lines += commands
    else:
        lines.append("No lock file was found to say how to reinstall it: use the project's own setup.")
    return "\n".join(lines)
