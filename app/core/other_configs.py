"""The live sessions of the other config folders Claudes of this user run with.

A second account's Claude (`CLAUDE_CONFIG_DIR=~/.claude-work claude`) writes its sessions
files in its own config folder, yet shares Claude's temp folder with ours (it depends on the
uid only): its session folders lie beside ours. Its config folder is found in the
environment of the running processes of the same home or of the same Claude temp root
(`HOME=~/claude-home claude`), and the default `~/.claude` is read too (a Claude started
without the variable names no folder).

A config folder on a remote mount that does not answer (an `sshfs` whose host went away,
named by a shell's `export CLAUDE_CONFIG_DIR=~/remote/.claude-work`) is never looked at:
its real path, let alone its listing, would wait for ever, holding the cleanup and its lock.
What its sessions hold cannot be told, so it counts as a running session whose file cannot
be read: unsure, nothing a session may hold goes.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.core import paths
from app.core.hung_mounts import reachable
from app.core.log import log
from app.core.sessions import Session, read_sessions


def other_configs_sessions() -> list[Session]:
    """The sessions of the other config folders (see the module's docstring). A file there
    that cannot be read while the process its name gives runs (caught half rewritten) is
    unsure, as one of ours: passed over, the old folder of the session that Claude resumed
    went."""
    seen = {os.path.realpath(paths.sessions_dir())}
    found: list[Session] = []
    from app.core.claude_process import config_dirs_of_processes

    others = config_dirs_of_processes(os.environ.get("HOME"), paths.claude_tmp_root_str())
    for config in [os.path.join(paths.home_str(), ".claude"), *sorted(others)]:
        folder = os.path.join(config, "sessions")
        if not reachable(folder):
            log(f"sessions: {folder} lies on a remote mount that does not answer; every session is unsure")
            found.append(Session(session_id=None, pid=None, cwd=None, status=None, file=folder, unreadable=True))
            continue
        folder = os.path.realpath(folder)
        if folder not in seen:
            seen.add(folder)
            found += read_sessions(folder=Path(folder))
    return found
