"""`claudetto memory [--json] [PROJECT...]` and `claudetto supersede FILE --line N --correction TEXT`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.core.test_memory import memory_folder, write_memory
from tests.support import SandboxEnv, make_repo, run_cli

FRONT = "---\nname: n\ndescription: d\nmetadata:\n  type: project\n---\n"


@pytest.fixture
def rotten(tmp_path: Path, sandbox: SandboxEnv) -> Path:
    """A repository whose memory has one finding of every kind."""
    files = {f"db/migration/V{n}__s{n}.sql": "" for n in range(1, 4)}
    repo = make_repo(tmp_path / "shop", files={**files, "requirements.txt": "jhelm==1.5.2\n", "src/app.py": "x\n"})
    folder = memory_folder(repo)
    (folder / "MEMORY.md").write_text("- [Notes](notes.md) — facts\n- [Gone](gone.md) — missing\n")
    (folder / "notes.md").write_text(FRONT + "- `src/legacy.py` routes.\n- jhelm 1.3.1 renders.\n"
                                             "- The latest migration is V2.\n")
    (folder / "orphan.md").write_text(FRONT + "- nothing\n")
    return repo


def test_memory_json_has_the_contract_shape_and_every_kind(rotten: Path) -> None:
    result = run_cli("memory", "--json", cwd=rotten / "src")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    folder = memory_folder(rotten)
    rows = [(r["file"], r["line"], r["kind"], r["token"]) for r in document["findings"]]
    assert rows == [
        (str(folder / "notes.md"), 7, "vanished_artifact", "src/legacy.py"),
        (str(folder / "notes.md"), 8, "stale_version_pin", "jhelm 1.3.1"),
        (str(folder / "notes.md"), 9, "stale_sequence", "V2"),
        (str(folder / "MEMORY.md"), 2, "index_missing_file", "gone.md"),
        (str(folder / "orphan.md"), None, "index_unlisted_file", "orphan.md"),
    ]
    for row in document["findings"]:
        assert set(row) >= {"project", "file", "line", "kind", "token", "message"}
        assert row["project"] == str(rotten) and row["message"]


def test_memory_text_lists_findings_per_project(rotten: Path, tmp_path: Path) -> None:
    healthy = make_repo(tmp_path / "healthy")
    write_memory(healthy, {"a.md": "- fine\n"})
    bare = make_repo(tmp_path / "bare")
    result = run_cli("memory", str(rotten), str(healthy), str(bare))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"{rotten}: 5 findings in {memory_folder(rotten)} (each asks to re-verify)" in out
    assert "notes.md   7     vanished_artifact" in out and "orphan.md  -     index_unlisted_file" in out
    assert f"{healthy}: no findings in " in out and f"{bare}: no memory folder (" in out


def test_memory_of_a_missing_project_is_an_error(sandbox: SandboxEnv, tmp_path: Path) -> None:
    result = run_cli("memory", str(tmp_path / "nope"))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"claudetto memory: no such project folder: {tmp_path / 'nope'}\n"


def test_memory_in_demo_mode_finds_the_demo_rot(sandbox: SandboxEnv) -> None:
    result = run_cli("--demo", "memory", "--json")
    assert result.returncode == 0, result.stderr
    kinds = sorted(r["kind"] for r in json.loads(result.stdout)["findings"])
    # the demo holds every kind of rot (and the traps that must stay silent)
    assert sorted(set(kinds)) == ["index_missing_file", "index_unlisted_file", "stale_sequence",
                                  "stale_version_pin", "vanished_artifact"]


def test_supersede_strikes_and_corrects(rotten: Path) -> None:
    notes = memory_folder(rotten) / "notes.md"
    result = run_cli("supersede", str(notes), "--line", "7", "--correction", "Routing is `src/app.py`.")
    assert result.returncode == 0, result.stderr
    assert f"struck line 7 of {notes}" in result.stdout
    body = notes.read_text().splitlines()
    assert body[6] == "- ~~`src/legacy.py` routes.~~" and body[7].endswith("): Routing is `src/app.py`.")
    kinds = [r["kind"] for r in json.loads(run_cli("memory", "--json", str(rotten)).stdout)["findings"]]
    assert "vanished_artifact" not in kinds  # the strike silences the finding


def test_supersede_json(rotten: Path) -> None:
    notes = memory_folder(rotten) / "notes.md"
    result = run_cli("supersede", "--json", str(notes), "--line", "8", "--correction", "jhelm 1.5.2.")
    document = json.loads(result.stdout)
    assert document["dry_run"] is False and document["line"] == 8 and document["correction_line"] == 9
    assert document["struck"] == "- ~~jhelm 1.3.1 renders.~~" and document["file"] == str(notes)


@pytest.mark.parametrize("flag", ["--dry-run", "--read-only"])
def test_supersede_dry_run_and_read_only_change_nothing(flag: str, rotten: Path) -> None:
    notes = memory_folder(rotten) / "notes.md"
    before = notes.read_bytes()
    result = run_cli(flag, "supersede", str(notes), "--line", "7", "--correction", "x") if flag == "--read-only" \
        else run_cli("supersede", str(notes), "--line", "7", "--correction", "x", flag)
    assert result.returncode == 0, result.stderr
    assert f"would strike line 7 of {notes}" in result.stdout
    assert notes.read_bytes() == before
    if flag == "--read-only":
        assert result.stderr == "claudetto supersede: --read-only, so a dry run: nothing is removed or changed\n"


@pytest.mark.parametrize(("line", "message"), [
    ("99", "line 99 is out of range"),
    ("3", "is in the frontmatter"),
])
def test_supersede_refusals_exit_1_with_one_line(line: str, message: str, rotten: Path) -> None:
    notes = memory_folder(rotten) / "notes.md"
    before = notes.read_bytes()
    result = run_cli("supersede", str(notes), "--line", line, "--correction", "x")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("claudetto supersede: ") and message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert notes.read_bytes() == before


def test_supersede_of_a_struck_line_and_outside_memory(rotten: Path, tmp_path: Path) -> None:
    notes = memory_folder(rotten) / "notes.md"
    assert run_cli("supersede", str(notes), "--line", "7", "--correction", "x").returncode == 0
    again = run_cli("supersede", str(notes), "--line", "7", "--correction", "x")
    assert again.returncode == 1 and "is already struck" in again.stderr
    outside = tmp_path / "x.md"
    outside.write_text("- a\n")
    result = run_cli("supersede", str(outside), "--line", "1", "--correction", "x")
    assert result.returncode == 1 and "is not in a memory folder" in result.stderr and outside.read_text() == "- a\n"


@pytest.mark.parametrize("args", [["supersede", "f.md", "--correction", "x"], ["supersede", "f.md", "--line", "x",
                                                                                 "--correction", "y"]])
def test_supersede_usage_errors_exit_2(args: list[str], sandbox: SandboxEnv) -> None:
    assert run_cli(*args).returncode == 2
