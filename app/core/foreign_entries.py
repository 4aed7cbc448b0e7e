"""Entries of another user inside an output: what a container or `sudo` put there.

A session's call makes what it makes as this user. A container a session started with a
temp folder as its volume (`docker run -v "$d/pgdata":/var/lib/postgresql/data postgres`)
writes its database there as its own user (uid 999, root, or a rootless container's sub-uid).
Stopped (a reboot), nothing running shows the folder in use and the container's configuration
lies in the daemon's own folder, which this user cannot read; removed, the next `docker start`
finds an empty folder and starts a fresh database. Nor could this user delete those entries:
the removal would stop half-way. So an output holding an entry of another user at its top or
one level down (where a volume's data folder lies) is no output of this user's call.
"""

from __future__ import annotations

import os
import stat

#: Entries looked at for one output at most (its top and the folders directly in it).
MAX_LOOKED = 1_024


def foreign_entry(folder: str, known_mounts: frozenset[str] | None = None, judged: str | None = None) -> str | None:
    """The first entry at the top of `folder` or one level down that another user owns, else
    None (a file, a folder that cannot be read, or past MAX_LOOKED entries: none found). A
    folder with a mount inside is not looked at: a remote one may never answer, and the mount
    keeps it by itself (`gc_rules.in_use`). `known_mounts`: the sweep's mount table (read
    here when None), taken before `folder` was moved aside from `judged`, its place then."""
    from app.core.paths import strictly_inside

    if known_mounts is None:
        from app.core.mounts import mount_points

        known_mounts = mount_points()
    places = {os.path.realpath(folder), os.path.realpath(judged or folder)}
    if any(strictly_inside(point, real) for point in known_mounts for real in places):
        return None
    me, budget, level = os.geteuid(), MAX_LOOKED, [folder]
    try:
        if os.lstat(folder).st_uid != me:
            return None  # the whole folder is another user's: never this user's to remove (`removal`)
    except OSError:
        return None
    for depth in range(2):
        deeper: list[str] = []
        for top in level:
            try:
                with os.scandir(top) as entries:
                    for entry in entries:
                        budget -= 1
                        if budget < 0:
                            return None
                        st = entry.stat(follow_symlinks=False)
                        if st.st_uid != me:
                            return entry.path
                        if depth == 0 and stat.S_ISDIR(st.st_mode):
                            deeper.append(entry.path)
            except OSError:
                continue
        level = deeper
    return None
