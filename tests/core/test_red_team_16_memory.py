"""Red team, round sixteen: memory hygiene (seed 003) as a session meets it.

Misses fixed: the SessionStart context told the model to run `claudetto supersede` and
`claudetto memory`, a command no PATH names where claudetto runs from its own environment
(the plugin's venv, a clone's `.venv`): the model's Bash call failed with "command not
found". The context now names the script of the claudetto that wrote it, by absolute path,
unless `claudetto` on PATH is that very script.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.core.test_memory import write_memory
from tests.support import make_repo, run_hook

SCRIPT = os.path.join(os.path.dirname(sys.executable), "claudetto")


def session_start(cwd: Path, path_variable: str) -> str:
    payload = {"hook_event_name": "SessionStart", "session_id": "5e7f3a2b-0000-4000-8000-000000000016",
               "cwd": str(cwd), "transcript_path": "/t.jsonl", "source": "startup"}
    result = run_hook(payload, cwd=cwd, env={**os.environ, "PATH": path_variable})
    assert result.returncode == 0 and result.stderr == b""
    text: str = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    return text


def rotten(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router:\n    pass\n"})
    folder = write_memory(repo, {"notes.md": "- The router is `src/legacy_router.py`.\n"})
    return repo, folder / "notes.md"


def test_the_command_the_context_names_runs_where_claudetto_is_on_no_path(tmp_path: Path) -> None:
    assert os.access(SCRIPT, os.X_OK), "the venv running the tests has its claudetto script"
    repo, notes = rotten(tmp_path)
    text = session_start(repo, "/usr/bin:/bin")
    named = f"`{shlex.quote(SCRIPT)} supersede FILE --line N --correction TEXT`"
    assert named in text
    line = next(row for row in text.split("\n") if row.startswith("- notes.md:"))
    number = line.split(":")[1]
    done = subprocess.run([*shlex.split(named.strip("`").split(" FILE")[0]), str(notes), "--line", number,
                           "--correction", "The router is `src/router.py`.", "--dry-run"],
                          capture_output=True, text=True, env={**os.environ, "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert "~~The router is `src/legacy_router.py`.~~" in done.stdout


def test_the_bare_name_is_kept_when_path_finds_this_very_claudetto(tmp_path: Path) -> None:
    repo, _notes = rotten(tmp_path)
    text = session_start(repo, f"{os.path.dirname(SCRIPT)}:/usr/bin:/bin")
    assert "(`claudetto supersede FILE --line N --correction TEXT` does both" in text
