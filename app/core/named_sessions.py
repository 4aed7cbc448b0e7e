"""The session a running Claude was started on, by its command line: live while it runs.

`claude --resume <id>` (`-r <id>`, `--resume=<id>`, with `--fork-session` too) and
`claude --session-id <id>` name the session on the command line from the first instant;
`claude --continue` the newest conversation of its folder (app/core/continued_sessions.py).
The sessions file says so only later, or never: a Claude starting up has not written it yet
(another session's cleanup, judging then, took the month-old folder it was resuming), a
headless `claude -p --resume <id>` keeps none (and was noted only by a SessionStart hook of
ours, which `--bare`, the mode advised for scripts, never runs), and a fork in a new process names only its
own id there while the conversation it goes on with uses its parent's scratchpad.

Only Claude's own program counts (`claude_process._claude_program`: `claude`, or node or bun
running Claude's `cli.js`), and only a value shaped like Claude's ids (a UUID): the picker's
search term (`--resume fix-login`) names no session. Read from `/proc/<pid>/cmdline` (none
without /proc). They count with the earlier ids (`earlier_sessions`) as one list
(`earlier_and_named`), but not for the Claude that ends the session, or its earlier ones.
"""

from __future__ import annotations

import contextlib
import os
import re

from app.core.claude_process import _claude_program, running_pids, start_of
from app.core.sessions import Session

#: How much of a command line is read: Claude's options come first, a prompt may be long.
_CMDLINE_MAX = 1 << 16
#: The options whose value is the session the Claude runs (or the parent a fork continues).
_NAMING = (b"--resume", b"-r", b"--session-id")
_ID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def earlier_and_named(files: list[Session], ending_session: str | None, current: str | None) -> list[Session]:
    """The earlier ids of the running Claude processes (`earlier_sessions`) and the ids their
    command lines name, as live sessions; none of the process that runs the ending session
    (`ending_session` unless it is the `current` one; a sessions file of `files` names it
    there): they end with it. The ending id noted for a process with no file goes too (the one
    exiting, its file removed first). A command line names its own process: another Claude
    running that id too (`claude -p --resume` beside the terminal's, no file of its own) goes
    on after it, unless no file says which Claude ends it."""
    from app.core.earlier_sessions import running_sessions

    ending = ending_session if ending_session != current else None
    ends = {s.pid for s in files if ending and s.session_id == ending}
    # a process whose file names another id goes on with the ending one (`claude --resume` in a
    # second terminal, then `/clear` in the first)
    filed = {s.pid for s in files}
    noted = [s for s in running_sessions() if s.pid not in ends
             and not (ending and s.session_id == ending and s.pid not in filed)]
    return noted + [s for s in running_named_sessions(filed) if s.pid not in ends
                    and not (ending and s.session_id == ending and not ends and s.pid not in filed)]


def named_ids(args: list[bytes]) -> list[str]:
    """The session ids a Claude command line names (`--resume ID`, `-r ID`, `-rID`,
    `--resume=ID`, `--session-id ID`); none when it is not Claude's program."""
    program = _claude_program(args)
    if program is None:
        return []
    return [value.decode("ascii") for _, value in named_values(args[program + 1:]) if _ID.fullmatch(value)]


def named_values(rest: list[bytes]) -> list[tuple[bytes, bytes]]:
    """(option, value) of each option naming a session in a Claude command line's arguments
    (after its program): an id, or for `--resume` a session's title (`claude -n NAME`,
    `/rename`) or the picker's search term."""
    found: list[tuple[bytes, bytes]] = []
    for i, arg in enumerate(rest):
        if arg == b"--":
            break  # what follows is the prompt
        name, equals, value = arg.partition(b"=")
        if name in _NAMING:
            value = value if equals else (rest[i + 1] if i + 1 < len(rest) else b"")
        elif arg.startswith(b"-r") and not equals:
            name, value = b"-r", arg[2:]  # `-r<id>`: a short option's value written against it
        else:
            continue
        found.append((name, value))
    return found


def running_named_sessions(filed: set[int | None] | frozenset[int] = frozenset()) -> list[Session]:
    """A live session for each id a running Claude's command line names, with that process's
    pid, start and folder. One with no sessions file (not in `filed`) whose arguments its
    title overwrote (`overwritten`) may go on with any session: taken as `--continue` is."""
    found: list[Session] = []
    own = os.getpid()
    for pid in running_pids():
        if pid == own:
            continue
        line = _cmdline(pid)
        args = line.split(b"\0") if b"claude" in line else []  # Claude's program names itself
        program = _claude_program(args)
        if program is None:
            continue
        values = named_values(args[program + 1:])
        ids = [value.decode("ascii") for _, value in values if _ID.fullmatch(value)]
        if not ids:  # `--continue`, `--resume TITLE`: no id (app/core/continued_sessions.py)
            from app.core.continued_sessions import gone_on_with

            rest = [b"--continue"] if pid not in filed and overwritten(args) else args[program + 1:]
            ids = gone_on_with(pid, rest, [value for name, value in values if name != b"--session-id"])
        if not ids:
            continue
        start = start_of(pid)
        cwd = _cwd_of(pid)
        found += [Session(session_id=sid, pid=pid, cwd=cwd, status=None, file=f"/proc/{pid}/cmdline",
                          proc_start=start, live=True, file_named=False) for sid in dict.fromkeys(ids)]
    return found


def overwritten(args: list[bytes]) -> bool:
    """Whether a command line is Claude's title written over its arguments: Claude on Node
    sets `process.title = "claude"` at its start, which on Linux writes the title and NULs
    over them (`claude` and empty words; a runtime that points the kernel at the title alone
    leaves `claude` only). Its `--continue`, `--resume <id>` or `-p` cannot be read then:
    unsure, so it may go on with a session of its folder, as `-c` does."""
    return len(args) > 1 and args[0] == b"claude" and not any(args[1:])


def _cwd_of(pid: int) -> str | None:
    """The folder process `pid` works in; None when it is gone or hidden."""
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/{pid}/cwd")
    return None


def _cmdline(pid: int) -> bytes:
    """The first `_CMDLINE_MAX` bytes of the command line of `pid` (b"" when gone or hidden),
    in one read: every process is looked at on every judgement, a third of `open()`'s cost."""
    try:
        fd = os.open(f"/proc/{pid}/cmdline", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(fd, _CMDLINE_MAX)
    except OSError:
        return b""
    finally:
        os.close(fd)
