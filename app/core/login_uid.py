"""The kernel's audit login uid of a process: who logged in to the session it runs in.

PAM sets it at a login (`pam_loginuid`: ssh, a console, a desktop's greeter) and every
process started in that session inherits it, `sudo`'s and `su`'s included: a root process a
user started keeps the user's login uid, whoever it runs as and wherever its parent went.
`/proc/<pid>/loginuid` is readable by every user, also for a process whose folders are not.
"""

from __future__ import annotations

#: What an unset login uid reads (a daemon started at boot, a container's processes).
UNSET = 4294967295


def login_uid(pid: int) -> int | None:
    """The login uid of `pid`; None when it is unset, unknown (no audit support) or gone."""
    try:
        with open(f"/proc/{pid}/loginuid", "rb") as fh:
            value = int(fh.read(32).strip())
    except (OSError, ValueError):
        return None
    return None if value == UNSET else value
