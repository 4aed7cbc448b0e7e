"""The paths a command is given (PROJECT, PATH, FILE), checked before any work: none on a
remote mount that does not answer (an `sshfs` whose host went away: a look at a path there
waits for ever, and the command with it), and each PROJECT an existing folder, named once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def answering(name: str, path: str) -> None:
    """Refuse `path` (one line, exit 1) when it lies on a remote mount that does not answer:
    asked before any look at it, which would wait for ever."""
    from app.cli import CommandError
    from app.core.hung_mounts import reachable

    if not reachable(os.path.abspath(path)):
        raise CommandError(f"claudetto {name}: {path} lies on a remote mount that does not answer")


def given_projects(name: str, given: Sequence[str]) -> list[str] | None:
    """PROJECT arguments checked (each an existing folder), each once: a folder named again
    through a symlink is the same project, not a second one; None when none was given."""
    from app.cli import CommandError

    once: dict[str, str] = {}
    for project in given:
        answering(name, project)
        if not os.path.isdir(project):
            raise CommandError(f"claudetto {name}: no such project folder: {project}")
        once.setdefault(os.path.realpath(project), os.path.abspath(project))
    return list(once.values()) or None
