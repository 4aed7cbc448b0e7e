"""The session a running `claude --continue` (`-c`) goes on with: live while it runs.

`--continue` names no id: Claude takes the most recent conversation of its folder, the newest
transcript in `<config>/projects/<slug of its cwd>/`, and goes on with it under the same id (a
headless `claude -p --bare -c`, the way a script goes on with a task, keeps no sessions file and
runs no hook). Its temp folder is that session's month-old one. The one it took was the newest
transcript when it started; it writes to it since, and so may another session of the folder:
the newest transcript written before the process began and every one written since count (more
rather than fewer, and only while it runs). Where the start cannot be told, every transcript
of the folder counts.
"""

from __future__ import annotations

import os

#: A transcript name: `<session id>.jsonl`.
_SUFFIX = ".jsonl"


def continues(args: list[bytes]) -> bool:
    """Whether a Claude command line (after its program) asks to continue (`--continue`, `-c`,
    or `-c` among short flags written together: `-pc`)."""
    for arg in args:
        if arg == b"--":
            return False  # what follows is the prompt
        if arg == b"--continue" or (arg[:1] == b"-" and arg[1:2] != b"-" and arg[1:].isalpha() and b"c" in arg):
            return True
    return False


def continued_ids(pid: int, cwd: str | None) -> list[str]:
    """The ids of the sessions the `--continue` Claude `pid` working in `cwd` may go on with."""
    from app.core.paths import project_slug
    from app.core.purge import started_at

    if cwd is None:
        return []
    folder = os.path.join(_config_of(pid, cwd), "projects", project_slug(cwd))
    try:
        with os.scandir(folder) as entries:
            found = [(entry.stat(follow_symlinks=False).st_mtime, entry.name[: -len(_SUFFIX)])
                     for entry in entries if entry.name.endswith(_SUFFIX)]
    except OSError:
        return []
    found.sort(reverse=True)
    start = started_at(pid)
    if start is None:
        return [sid for _, sid in found]
    # a second of slack: the boot time is whole seconds
    since = [sid for mtime, sid in found if mtime >= start - 1.0]
    before = next((sid for mtime, sid in found if mtime < start - 1.0), None)
    return [*since, *([before] if before else [])]


def _config_of(pid: int, cwd: str) -> str:
    """The config folder Claude `pid` reads: its `CLAUDE_CONFIG_DIR` (from its own folder when
    relative), else its home's `.claude`; this one's when its environment cannot be read."""
    from app.core.claude_process import read_environ
    from app.core.paths import config_dir_str

    data = read_environ(f"/proc/{pid}/environ")
    if data is None:
        return config_dir_str()
    env = dict(item.split(b"=", 1) for item in data.split(b"\0") if b"=" in item)
    config = env.get(b"CLAUDE_CONFIG_DIR")
    if config:
        return os.path.join(cwd, os.fsdecode(config))  # an absolute value stays as it is
    home = env.get(b"HOME")
    return os.path.join(os.fsdecode(home), ".claude") if home and home.startswith(b"/") else config_dir_str()
