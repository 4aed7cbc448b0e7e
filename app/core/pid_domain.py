"""Whether a sessions file's `pidDomain` is this machine's and pid namespace's: a pid of
another (a Claude in a container sharing the config folder, another machine sharing a home)
means nothing here, so the session cannot be judged by it."""

from __future__ import annotations

import os


def own_pid_domain() -> tuple[str | None, str | None]:
    """(machine id, pid namespace) of this process, each None when it cannot be read."""
    machine = None
    for name in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(name, encoding="ascii", errors="replace") as fh:
                machine = fh.read().strip() or None
        except OSError:
            continue
        if machine:
            break
    try:
        link = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
        namespace: str | None = link[link.find("[") + 1 : link.rfind("]")] if "[" in link else link
    except OSError:
        namespace = None
    return machine, namespace


def foreign_pid_domain(domain: str | None) -> bool:
    """Whether a sessions file's `pidDomain` (`linux:<machine-id>:<pid namespace>`) names a
    machine or pid namespace other than this one, or one that cannot be compared: its pid
    means nothing here. Claude writes the namespace as `readlink /proc/self/ns/pid` gives it
    (`linux:<machine-id>:pid:[4026531836]`); the bare number is read too."""
    if domain is None:
        return False
    parts = domain.split(":", 2)  # a machine id is hex: the rest is the namespace, colons and all
    if len(parts) < 3:
        return True
    machine, namespace = own_pid_domain()
    theirs_ns = parts[2]
    theirs_ns = theirs_ns[theirs_ns.find("[") + 1 : theirs_ns.rfind("]")] if "[" in theirs_ns else theirs_ns
    return machine is None or namespace is None or parts[1] != machine or theirs_ns != namespace
