"""A path at or above the folder a Bash call ran in is never that call's output.

The call ran in its folder, so that folder and every one above it were there before it:
whatever the call then put in them, they are someone else's. `git clone URL .` in the
user's empty folder (`mkdir /tmp/work && cd /tmp/work`, done by hand), `CLAUDE_CONFIG_DIR=.
claude`, `cp -rT src .` all name one. Where the file system reports birth times the
evidence check (app/core/created.py) already tells so; where it does not, a folder whose
every entry the call just made has a fresh ctime and fresh entries, and it would be
recorded, then removed a week later with the user's folder. A `cd` inside the command moves
nothing here: `mkdir x && cd x && git clone URL .` makes x, and x is judged as any output.

Loaded with the command reader, only for commands holding a trigger word.
"""

from __future__ import annotations

import os

from app.core.paths import inside


def outside_call_folder(outputs: list[tuple[str, str]], cwd: str | None, notes: list[str]) -> list[tuple[str, str]]:
    """`outputs` without those at or above `cwd`, the folder the call started in (noted)."""
    if not cwd or not outputs:
        return outputs
    folders = {os.path.normpath(cwd), os.path.realpath(cwd)}
    kept: list[tuple[str, str]] = []
    for kind, path in outputs:
        if any(inside(folder, os.path.normpath(path)) or inside(folder, os.path.realpath(path)) for folder in folders):
            notes.append(f"{kind} {path} not recorded: the call ran in it, so it was there before")
        else:
            kept.append((kind, path))
    return kept
