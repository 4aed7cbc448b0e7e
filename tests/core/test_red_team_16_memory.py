"""Red team, round sixteen: memory hygiene (seed 003) as a session meets it.

Misses fixed: the SessionStart context told the model to run `claudetto supersede` and
`claudetto memory`, a command no PATH names where claudetto runs from its own environment
(the plugin's venv, a clone's `.venv`): the model's Bash call failed with "command not
found". The context now names the script of the claudetto that wrote it, by absolute path,
unless `claudetto` on PATH is that very script. A recorded upgrade (`jhelm 1.3.1 -> 1.5.2`,
with an arrow or "to") and an old version's documentation (`the jhelm 1.3 docs`) were told
to the model as stale pins, to strike, and so was "the latest orders migration is V27" (the
latest of a topic, in a tree whose one migration folder is not named orders) as a stale sequence.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

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


PINNED = {"pyproject.toml": '[project]\nname = "app"\ndependencies = ["jhelm==1.5.2"]\n', "app.py": "x = 1\n"}


def pins_found(tmp_path: Path, lines: list[str]) -> list[tuple[int, str]]:
    from app.core import memory

    repo = make_repo(tmp_path / "pins", files=PINNED)
    write_memory(repo, {"notes.md": "".join(f"{line}\n" for line in lines)})
    return [(f.line or 0, f.token) for f in memory.sweep(str(repo)) if f.kind == "stale_version_pin"]


def test_a_change_from_one_version_to_another_and_an_old_versions_docs_are_no_stale_pin(tmp_path: Path) -> None:
    """`jhelm 1.3.1 -> 1.5.2` records the upgrade the build bears out, as a table row of two
    versions does; `the jhelm 1.3 docs` names documentation, as `the requests 2.0 API` names
    an API. Told to strike them, the model loses a true fact (and the why of the move)."""
    assert pins_found(tmp_path, [
        "- jhelm 1.3.1 -> 1.5.2 migration done.",
        "- jhelm 1.3.1 \u2192 1.5.2, the YAML loader changed.",
        "- jhelm: 1.3.1 => 1.5.2",
        "- Moved jhelm from 1.3.1 to 1.5.2 for the anchors fix.",
        "- The jhelm 1.3 docs are still at the vendor site.",
        "- The jhelm 1.4 migration guide lists the renamed options.",
        "- jhelm 1.3.1 is what the build pins.",  # still a pin, and stale
    ]) == [(13, "jhelm 1.3.1")]


def test_the_latest_migration_of_a_topic_no_folder_is_named_for_is_no_stale_sequence(tmp_path: Path) -> None:
    """One migration folder; V28 adds indexes. "The latest orders migration is V27" (the
    latest that touches orders) is true and says nothing of V28: no folder is named `orders`,
    so the line cannot be judged, and the model must not be asked to strike it."""
    from app.core import memory

    repo = make_repo(tmp_path / "seq", files={**{f"db/migration/V{n}__step.sql": "-- x\n" for n in (1, 2, 27, 28)},
                                               "app.py": "x = 1\n"})
    write_memory(repo, {"notes.md": "- The latest orders migration is V27.\n"
                                    "- V27 is the latest migration touching orders.\n"
                                    "- The latest migration is V27.\n"})
    found = [(f.line, f.token) for f in memory.sweep(str(repo)) if f.kind == "stale_sequence"]
    assert found == [(9, "V27")]


@pytest.mark.xfail(strict=True, reason="a snake_case name of a thing outside the repository (a CI job, a dashboard, "
                   "a cron entry, a Sentry project) is reported vanished though the tree never had it; telling "
                   "'no longer' from 'never' needs a history search (git log -S), and the calibration corpus, "
                   "committed once, would lose its recall with it")
def test_a_name_of_something_outside_the_repository_is_no_vanished_artifact(tmp_path: Path) -> None:
    from app.core import memory

    repo = make_repo(tmp_path / "ext", files={"app.py": "def main():\n    return 0\n"})
    write_memory(repo, {"notes.md": "- CI job `build_and_test` runs on GitHub Actions.\n"
                                    "- Grafana dashboard `shop_overview` tracks latency.\n"
                                    "- The cron `nightly_reindex` runs at 02:00 UTC.\n"
                                    "- The Sentry project `shop_backend` gets the errors.\n"})
    assert [f.token for f in memory.sweep(str(repo)) if f.kind == "vanished_artifact"] == []
