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
#: The folders each lock file's command fills again (a `requirements*.txt` fills a venv). Its
#: command is given only when one of them went: `npm ci` deletes a `node_modules` that is
#: there, one a release kept because a dev server runs from it. A deleted path of another name
#: (a project's own scratch list) says nothing of which tool fills it: every command is given.
_NODE = ("node_modules",)
_VENVS = (".venv", "venv")
FILLS = {"package-lock.json": _NODE, "pnpm-lock.yaml": _NODE, "yarn.lock": _NODE, "bun.lockb": _NODE,
         "bun.lock": _NODE, "uv.lock": _VENVS, "poetry.lock": _VENVS, "requirements": _VENVS,
         "Cargo.lock": ("target",)}
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
    """`<command>` lines from the lock files present: in the checkout (a workspace's root lock
    fills every package's `node_modules`), and beside each deleted path (a workspace package's
    own lock file); each only when what it fills again went (`FILLS`)."""
    lines = []
    for folder in sorted({""} | {os.path.dirname(rel) for rel in deleted}):
        try:
            names = set(os.listdir(os.path.join(checkout, folder) if folder else checkout))
        except OSError:
            continue
        prefix = f"in {printable(folder)}: " if folder else ""
        lines += [f"- {prefix}`{command}` ({name})" for name, command in _commands(names, folder, deleted)]
    return lines


def _commands(names: set[str], folder: str, deleted: list[str]) -> list[tuple[str, str]]:
    """(lock file, command) of the lock files `names` of one folder of the checkout."""
    went, here = _went(deleted, folder, anywhere=not folder), _went(deleted, folder, anywhere=False)
    found = [(name, command) for name, command in LOCK_FILES if name in names and _refills(name, went)]
    venv = next((v for v in _VENVS if v in here), None)  # a requirements file fills its own folder's
    return found + [(name, _pip(name, venv)) for name in sorted(names)
                    if name.startswith("requirements") and name.endswith(".txt") and _refills("requirements", here)]


def _went(deleted: list[str], folder: str, *, anywhere: bool) -> set[str]:
    """The names of the deleted paths directly in `folder` (`anywhere`: at any depth), but
    those inside an output folder (`node_modules/.cache`: the installs around it stayed)."""
    from app.core.repository_rules import REGENERABLE

    return {os.path.basename(rel) for rel in deleted if (anywhere or os.path.dirname(rel) == folder)
            and not REGENERABLE.intersection(rel.split("/")[:-1])}


def _refills(lock: str, went: set[str]) -> bool:
    """Whether the command of `lock` fills again something that went: one of its folders, or a
    path of a name no regenerable folder has (declared by the project: unsure, give it)."""
    from app.core.repository_rules import REGENERABLE

    return bool(went.intersection(FILLS.get(lock, ()))) or any(name not in REGENERABLE for name in went)


def _pip(requirements: str, venv: str | None) -> str:
    """`pip install -r`, into the venv made again first when the release deleted it beside. The
    file's name is quoted for the shell the model runs it in (`requirements dev.txt`, or a
    name a cloned repository chose, holding `$(...)`)."""
    from shlex import quote

    if venv is None:
        return f"pip install -r {quote(requirements)}"
    return f"python3 -m venv {venv} && {venv}/bin/pip install -r {quote(requirements)}"


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
