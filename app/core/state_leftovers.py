"""Temp files of state writes whose writer was killed halfway (`kill -9`, the OOM killer,
Claude ending a hook's process group at its timeout): `state.write_atomic` writes
`.<name>.<pid>.<ns>.tmp` beside the file and renames it over it, and a writer killed before
the rename leaves that file for good. The next write of the same file removes it here.

Only a file named exactly as `write_atomic` names a temp file of THAT state file is judged,
and it goes only when it is a regular file of this user's, over STALE_S old (a write takes
milliseconds), and its writer's pid runs no more. A pid that runs (even reused by another
program) or that this user cannot signal keeps it: a leftover kept is a few bytes, a temp
file removed under a live writer would fail its write.

Imported only when a folder holds such a name: a write that finds none pays a listdir.
"""

from __future__ import annotations

import os
import stat
import time

from app.core.log import log

#: a temp file younger than this may be a live write's (on a slow disk, another pid namespace)
STALE_S = 60


def remove_leftovers(folder: str, prefix: str, names: list[str]) -> None:
    """Remove each of `names` (entries of `folder` that start with `prefix`, `.<name>.`, and end
    with `.tmp`) that is a dead writer's leftover; never raises."""
    now = time.time()
    for name in names:
        pid = writer_of(name, prefix)
        if pid is None or pid == os.getpid() or _running(pid):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or now - st.st_mtime < STALE_S:
                continue
            os.unlink(path)
        except OSError:
            continue
        log(f"state: removed {path}, the temp file of a write whose process {pid} was killed before it finished")


def writer_of(name: str, prefix: str) -> int | None:
    """The pid in a temp file's name `<prefix><pid>.<ns>.tmp`, or None for any other name."""
    middle = name[len(prefix):-len(".tmp")] if name.startswith(prefix) and name.endswith(".tmp") else ""
    pid, dot, ns = middle.partition(".")
    if not dot or not (pid + ns).isascii() or not pid.isdigit() or not ns.isdigit():
        return None
    return int(pid) if int(pid) > 0 else None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's, or a number no pid can be: not known to be gone
        return True
    return True
