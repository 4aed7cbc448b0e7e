"""What `claudetto` says for people beside the reports scripts read: `--version`, whole help
sentences, the paths a dry run would remove and sizes in human units (on stderr: the
CONTRACT's stdout lines stay exactly as they are, and `--json` keeps bytes)."""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from pathlib import Path

from tests.cli.test_clean_cli import old_probe
from tests.cli.test_gc_cli import setup_outputs
from tests.core.test_worktrees import GITIGNORE, add_worktree, age
from tests.support import SandboxEnv, make_repo, run_cli

CLEANED = re.compile(r"^CLEANED folders=\d+ bytes=\d+ files=\d+ worktrees=\d+ probes=\d+$")


def test_version() -> None:
    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"claudetto {version('claudetto')}"


def test_ledger_help_is_a_whole_sentence() -> None:
    done = run_cli("ledger", "--help")
    assert done.returncode == 0
    described = " ".join(done.stdout.split("\n\n")[1].split())
    assert described == ("the edit ledger: every file Claude edited, and whether the user or a tool changed it "
                         "after Claude's last edit")


def test_gc_text_says_the_size_in_human_units(sandbox: SandboxEnv) -> None:
    from app.format import size

    old, _young = setup_outputs(sandbox)
    going = json.loads(run_cli("gc", "--dry-run", "--json").stdout)["entries"][0]["size"]  # bytes
    assert isinstance(going, int) and going >= 9000
    dry = run_cli("gc", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1] == f"GC removed=1 freed={going} dry_run=true"  # the report, as it was
    assert dry.stderr == f"would remove 1 path, {size(going)}; nothing was removed (dry run)\n"
    assert size(going).endswith(" KiB")
    real = run_cli("gc")
    assert real.stderr == f"removed 1 path, {size(going)}\n" and not old.exists()


def test_clean_dry_run_lists_what_it_would_remove(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = make_repo(tmp_path / "proj", files={"README.md": "hello\n", ".gitignore": GITIGNORE})
    stale = age(add_worktree(repo, "stale"))
    probe = old_probe(sandbox, "c")
    dry = run_cli("clean", "--dry-run", cwd=repo)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert CLEANED.match(lines[0]) and lines[-1].startswith("UNKNOWN_KEPT ")  # the CONTRACT's lines only
    said = dry.stderr.splitlines()
    assert any(line.startswith("would remove") and line.endswith(str(stale)) and " worktree " in line for line in said)
    assert any(line.startswith("would remove") and line.endswith(str(probe)) and " probe " in line for line in said)
    assert re.match(r"^would free \d+(\.\d)? (Bytes|KiB|MiB) in 2 paths; nothing was removed \(dry run\)$", said[-1])
    assert stale.exists() and probe.exists()
    real = run_cli("clean", cwd=repo)
    assert re.match(r"^freed \d+(\.\d)? (Bytes|KiB|MiB) in 2 paths$", real.stderr.splitlines()[-1])
    assert not stale.exists() and not probe.exists()
