"""The session a running Claude goes on with when its command line names no id: live while it runs.

`claude --continue` (`-c`) takes the most recent conversation of its folder, the newest
transcript in `<config>/projects/<slug of its cwd>/`, and goes on with it under the same id;
`claude --resume NAME` the session of that title (`claude -n NAME`, `/rename NAME`: Claude
appends `{"type": "custom-title", "customTitle": NAME}` to the transcript). A headless
`claude -p --bare -c` (or `--resume NAME`), the way a script goes on with a task, keeps no
sessions file and runs no hook; its temp folder is that session's month-old one.

What counts, more rather than fewer and only while the process runs: for `--continue` the
newest transcript written before it began and every one written since (it writes to the one
it took; another session of the folder may too); every transcript when its start cannot be
told. For `--resume NAME` every transcript of the folder whose title, or agent name, is NAME
(without case), and one too big to read through (`MAX_READ`). A term no title has (the
picker's search) holds nothing.
"""

from __future__ import annotations

import json
import os
import stat
from typing import BinaryIO

#: A transcript name: `<session id>.jsonl`.
_SUFFIX = ".jsonl"
#: A transcript bigger than this is not read through for its title: it counts.
MAX_READ = 64 << 20
#: What a title was found to be in a transcript of that size and time: a sweep asks at its
#: judgement and again at each removal.
_TITLES: dict[tuple[str, int, int], frozenset[str]] = {}


def continues(args: list[bytes]) -> bool:
    """Whether a Claude command line (after its program) asks to continue (`--continue`, `-c`,
    or `-c` among short flags written together: `-pc`)."""
    for arg in args:
        if arg == b"--":
            return False  # what follows is the prompt
        if arg == b"--continue" or (arg[:1] == b"-" and arg[1:2] != b"-" and arg[1:].isalpha() and b"c" in arg):
            return True
    return False


def gone_on_with(pid: int, args: list[bytes], resumed: list[bytes]) -> list[str]:
    """The ids of the sessions Claude `pid` (its arguments `args`, after its program) may go on
    with: by `--continue`, or by the `--resume` values `resumed` that are no id (titles)."""
    titles = {os.fsdecode(value).strip().lower() for value in resumed if value and not value.startswith(b"-")}
    go_on = continues(args)
    if not titles and not go_on:
        return []
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return []
    config = _config_of(pid, cwd)
    ids: list[str] = []
    for slug in _slugs(cwd):  # each folder its own newest: the one it took is in one of them
        found = _transcripts(os.path.join(config, "projects", slug))
        ids += _continued(pid, found) if go_on else []
        ids += [sid for _, sid, path in found if titles and _titled(path, titles)]
    return ids


def _slugs(cwd: str) -> list[str]:
    """The transcripts' folders of a Claude working in `cwd`: its own, and (started in a
    subfolder, or where another version looks) its checkout's top."""
    from app.core.hung_mounts import reachable
    from app.core.paths import project_root_str, project_slug

    top = project_root_str(cwd) if reachable(cwd) else cwd  # never looked for on a dead `sshfs`
    return list(dict.fromkeys((project_slug(cwd), project_slug(top))))


def _transcripts(folder: str) -> list[tuple[float, str, str]]:
    """(mtime, session id, path) of each transcript in `folder`, the newest first (one that
    vanishes meanwhile, as Claude's own cleanup at its start removes old ones, is passed over)."""
    found: list[tuple[float, str, str]] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.endswith(_SUFFIX):
                    try:
                        found.append((entry.stat(follow_symlinks=False).st_mtime, entry.name[: -len(_SUFFIX)],
                                      entry.path))
                    except OSError:
                        continue
    except OSError:
        pass
    return sorted(found, reverse=True)


def _continued(pid: int, found: list[tuple[float, str, str]]) -> list[str]:
    """The newest transcript written before process `pid` began, and every one since."""
    from app.core.purge import started_at

    start = started_at(pid)
    if start is None:
        return [sid for _, sid, _ in found]
    # a second of slack: the boot time is whole seconds
    since = [sid for mtime, sid, _ in found if mtime >= start - 1.0]
    before = next((sid for mtime, sid, _ in found if mtime < start - 1.0), None)
    return [*since, *([before] if before else [])]


def _titled(path: str, titles: set[str]) -> bool:
    """Whether the transcript `path` bears one of `titles` (lower case), or cannot be read
    through (too big: unsure, so it counts). Only a regular file is read: a FIFO or a device
    named like a transcript is never waited on, nor a symlink followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        if st.st_size > MAX_READ:
            return True
        key = (path, st.st_size, st.st_mtime_ns)
        if key not in _TITLES:
            if len(_TITLES) >= 4096:  # a dashboard runs for days: the transcripts' older states go
                _TITLES.clear()
            _TITLES[key] = _titles_in(fh)
    return not titles.isdisjoint(_TITLES[key])


def _titles_in(fh: BinaryIO) -> frozenset[str]:
    """Every title and agent name a transcript's lines give (lower case); the lines found by
    their key, not read one by one (a transcript may be tens of MB)."""
    import mmap

    try:
        data: bytes | mmap.mmap = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # empty, or cannot be mapped
        data = b""
    found: set[str] = set()
    for key in (b'"customTitle"', b'"agentName"'):
        at = data.find(key)
        while at >= 0:
            begin, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
            end = len(data) if end < 0 else end
            found |= _names(bytes(data[begin:end]))
            at = data.find(key, end)
    return frozenset(found)


def _names(line: bytes) -> set[str]:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return set()
    if not isinstance(record, dict):
        return set()
    return {value.strip().lower() for value in (record.get("customTitle"), record.get("agentName"))
            if isinstance(value, str)}


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
