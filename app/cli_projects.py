"""The PROJECT arguments of `claudetto clean`, `worktrees` and `memory`, checked before any
work: each an existing folder, each once, and none on a remote mount that does not answer (an
`sshfs` whose host went away: a look at a path there waits for ever, and the command with it).
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def given_projects(name: str, given: Sequence[str]) -> list[str] | None:
    """PROJECT arguments checked (each an existing folder), each once: a folder named again
    through a symlink is the same project, not a second one; None when none was given."""
    from app.cli import CommandError
    from app.core.hung_mounts import reachable

    once: dict[str, str] = {}
    for project in given:
        if not reachable(os.path.abspath(project)):  # asked first: the look below would wait for ever
            raise CommandError(f"claudetto {name}: {project} lies on a remote mount that does not answer")
        if not os.path.isdir(project):
            raise CommandError(f"claudetto {name}: no such project folder: {project}")
        once.setdefault(os.path.realpath(project), os.path.abspath(project))
    return list(once.values()) or None
