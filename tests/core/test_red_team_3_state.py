"""Red team, round three: state, settings and memory files in odd shapes, driven as a user
drives them (`claudetto ...` in a subprocess) or as Claude does (the hook). Each test names
the input and what went wrong before; an `xfail` names a fix outside these files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import paths
from tests.core.test_memory import memory_folder
from tests.support import SandboxEnv, make_repo, run_cli, run_hook

FRONT = "---\nname: n\ndescription: d\ntype: project\n---\n"


# --- a dry run writes no state, not even a corrupt file set aside ------------------------------


@pytest.mark.parametrize("command", [["release", "--dry-run"], ["--read-only", "release"]])
def test_a_dry_run_leaves_a_corrupt_registry_where_it_is(sandbox: SandboxEnv, tmp_path: Path,
                                                         command: list[str]) -> None:
    """`release --dry-run` read a corrupt checkouts.json and moved it aside: the next real
    writer then started an empty registry, so a dry run had changed what claudetto knows."""
    registry = paths.checkouts_file()
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text('{"checkouts": [')
    repo = make_repo(tmp_path / "repo")
    result = run_cli(*command, str(repo))
    assert "Traceback" not in result.stderr
    assert registry.read_text() == '{"checkouts": ['
    assert not list(registry.parent.glob("checkouts.json.corrupt-*"))


def test_a_real_writer_still_sets_a_corrupt_registry_aside(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The other side of the dry run: a real release keeps the corrupt bytes, set aside."""
    registry = paths.checkouts_file()
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text('{"checkouts": [')
    repo = make_repo(tmp_path / "repo")
    run_cli("release", str(repo))
    aside = list(registry.parent.glob("checkouts.json.corrupt-*"))
    assert [p.read_text() for p in aside] == ['{"checkouts": [']


# --- --json is one valid JSON document whatever the names and the locale -------------------------


@pytest.mark.parametrize("encoding", ["", "ascii", "latin-1"])
def test_ledger_json_with_a_name_that_is_not_utf8_is_valid_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                encoding: str) -> None:
    """A file named in Latin-1 went out as its raw byte (invalid UTF-8, so no JSON parser
    read it), or under an ASCII locale made the command fail with UnicodeEncodeError."""
    raw = os.fsencode(str(tmp_path)) + b"/caf\xe9.txt"
    with open(raw, "wb") as fh:
        fh.write(b"x\n")
    name = os.fsdecode(raw)
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Write",
               "tool_input": {"file_path": name, "content": "x"}, "tool_response": {}}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    if encoding:
        monkeypatch.setenv("PYTHONIOENCODING", encoding)
    done = subprocess.run([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                           "ledger", "--json"], capture_output=True, check=False, timeout=60)
    assert (done.returncode, done.stderr) == (0, b"")
    document = json.loads(done.stdout.decode("utf-8"))  # strict: valid UTF-8 JSON
    assert [os.fsencode(f["path"]) for f in document["files"]] == [raw]


# --- Claude's settings files in odd shapes ------------------------------------------------------


def _clean(project: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("clean", "--json", "--dry-run", str(project), cwd=project, timeout=30)


def test_a_project_settings_file_nested_too_deeply_does_not_stop_the_cleanup(tmp_path: Path) -> None:
    """A `.claude/settings.json` of `[` x 100,000 (any repository can commit one) made
    `claudetto clean`, and the session-start cleanup, fail with RecursionError."""
    repo = make_repo(tmp_path / "repo")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text("[" * 100_000)
    result = _clean(repo)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert json.loads(result.stdout)["dry_run"] is True


@pytest.mark.parametrize("intruder", ["fifo", "device"])
def test_a_settings_file_that_is_a_fifo_or_a_device_hangs_nothing(tmp_path: Path, intruder: str) -> None:
    """`settings.local.json` as a FIFO (or a link to /dev/zero) hung the cleanup for good:
    the read waited for a writer that never came (or never ended)."""
    repo = make_repo(tmp_path / "repo")
    (repo / ".claude").mkdir()
    place = repo / ".claude" / "settings.local.json"
    if intruder == "fifo":
        os.mkfifo(place)
    else:
        place.symlink_to("/dev/zero")
    result = _clean(repo)  # times out (and fails) if it blocks
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_a_settings_file_with_a_bom_is_read_as_claudes_cli_reads_it(sandbox: SandboxEnv) -> None:
    """Windows editors and PowerShell write a UTF-8 BOM; Claude's CLI reads such a file."""
    from app.core import settings

    (sandbox.config / "settings.json").write_bytes(b'\xef\xbb\xbf{"cleanupPeriodDays": 99999}')
    assert settings.cleanup_period_days() == 99999


def test_a_symlinked_settings_file_is_still_read(sandbox: SandboxEnv, tmp_path: Path) -> None:
    from app.core import settings

    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text('{"cleanupPeriodDays": 12}')
    (sandbox.config / "settings.json").symlink_to(real)
    assert settings.cleanup_period_days() == 12


def test_setup_reads_a_settings_file_with_a_bom_and_keeps_the_bom(sandbox: SandboxEnv) -> None:
    """`claudetto setup` refused a settings.json saved with a BOM ("Unexpected UTF-8 BOM"),
    a file Claude's own CLI reads; now it adds its hooks and the file keeps its BOM and CRLF."""
    settings = sandbox.config / "settings.json"
    settings.write_bytes(b'\xef\xbb\xbf{\r\n    "model": "opus"\r\n}\r\n')
    result = run_cli("setup", "--json")
    assert result.returncode == 0, result.stderr
    raw = settings.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf{\r\n    ") and raw.count(b"\n") == raw.count(b"\r\n")
    data = json.loads(raw.decode("utf-8-sig"))
    assert data["model"] == "opus" and "UserPromptSubmit" in data["hooks"]
    assert run_cli("setup", "--uninstall").returncode == 0
    assert settings.read_bytes() == b'\xef\xbb\xbf{\r\n    "model": "opus"\r\n}\r\n'


def test_setup_with_a_config_dir_that_is_a_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It ended in `claudetto: FileExistsError: [Errno 17] File exists: ...`."""
    place = tmp_path / "not-a-folder"
    place.write_text("x")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(place))
    result = run_cli("setup")
    assert result.returncode == 1
    assert result.stderr == f"claudetto setup: cannot make Claude's config folder {place}: File exists; nothing changed\n"
    assert place.read_text() == "x"


# --- supersede with odd files and odd text ------------------------------------------------------


def _memory_file(tmp_path: Path, content: bytes) -> Path:
    repo = make_repo(tmp_path / "repo")
    file = memory_folder(repo) / "fact.md"
    file.write_bytes(content)
    return file


def test_supersede_of_the_first_line_keeps_a_bom_first_and_the_marker_outside(tmp_path: Path) -> None:
    """With a BOM the strike began before it (`~~\\ufeff- fact~~`): the BOM moved inside the
    text and the list marker was struck with the fact."""
    file = _memory_file(tmp_path, b"\xef\xbb\xbf- the API is v1\n- other\n")
    result = run_cli("supersede", str(file), "--line", "1", "--correction", "the API is v2", "--expect",
                     "- the API is v1")
    assert result.returncode == 0, result.stderr
    lines = file.read_bytes().split(b"\n")
    assert lines[0] == b"\xef\xbb\xbf- ~~the API is v1~~"
    assert lines[1].startswith(b"- Correction (") and lines[1].endswith(b"): the API is v2")
    assert b"\xef\xbb\xbf" not in file.read_bytes()[3:]


@pytest.mark.parametrize("correction", ["a\x1b[2Jb", "caf\udce9", "x\x07y", "a\x7fb"],
                         ids=["terminal-escape", "not-utf8", "bell", "delete"])
def test_supersede_refuses_a_correction_with_control_characters(tmp_path: Path, correction: str) -> None:
    """A terminal escape went into memory as it was; a byte that is not UTF-8 ended in
    `claudetto: UnicodeEncodeError`."""
    file = _memory_file(tmp_path, (FRONT + "- a fact\n").encode())
    before = file.read_bytes()
    result = subprocess.run([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                             "supersede", os.fsencode(str(file)), "--line", "6", "--correction",
                             os.fsencode(correction)], capture_output=True, check=False, timeout=60)
    assert result.returncode == 1
    assert result.stderr.decode().startswith("claudetto supersede: the correction holds a control character")
    assert result.stderr.count(b"\n") == 1 and file.read_bytes() == before


def test_a_supersede_record_nested_too_deeply_resets_the_guard_only(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """claudetto's own memory-supersede-shifts.json as `[` x 200,000 made every supersede fail
    with RecursionError; it guards a stale line number only, so it is reset and logged."""
    file = _memory_file(tmp_path, (FRONT + "- a fact\n").encode())
    sandbox.state.mkdir(parents=True, exist_ok=True)
    (sandbox.state / "memory-supersede-shifts.json").write_text("[" * 200_000)
    result = run_cli("supersede", str(file), "--line", "6", "--correction", "the fact is b")
    assert result.returncode == 0, result.stderr
    tail = file.read_text().splitlines()[-2:]
    assert tail[0] == "- ~~a fact~~" and tail[1].startswith("- Correction (") and tail[1].endswith("): the fact is b")


@pytest.mark.parametrize("build_file, text", [
    ("package.json", "[" * 100_000),
    ("pyproject.toml", "a = " + "[" * 100_000),
    ("Cargo.toml", "a = " + "{x=" * 100_000),
], ids=["package.json", "pyproject.toml", "Cargo.toml"])
def test_a_build_file_nested_too_deeply_pins_nothing_and_the_rest_is_found(tmp_path: Path, build_file: str,
                                                                          text: str) -> None:
    """Any repository may commit such a file: `claudetto memory` failed with RecursionError,
    and the session-start audit lost every finding of the project."""
    repo = make_repo(tmp_path / "repo", files={"requirements.txt": "jhelm==1.5.2\n", build_file: text})
    folder = memory_folder(repo)
    (folder / "MEMORY.md").write_text("- [A](a.md) \u2014 facts\n")
    (folder / "a.md").write_text(FRONT + "- We render with jhelm 1.3.1.\n")
    result = run_cli("memory", "--json", str(repo), cwd=repo)
    assert result.returncode == 0, result.stderr
    found = [(f["kind"], f["token"]) for f in json.loads(result.stdout)["findings"]]
    assert found == [("stale_version_pin", "jhelm 1.3.1")]


def test_an_index_line_for_a_topic_named_in_latin1_is_refused_in_one_line(tmp_path: Path) -> None:
    """The dashboard's "add the index line" on `caf\xe9.md` ended in UnicodeEncodeError from
    the link's quoting (no Markdown link, UTF-8 text, can name that byte): now a refusal the
    dashboard shows, and the index is untouched."""
    from app.core import memory

    repo = make_repo(tmp_path / "repo")
    folder = memory_folder(repo)
    index = folder / "MEMORY.md"
    index.write_text("- [A](a.md) \u2014 h\n")
    raw = os.fsencode(str(folder)) + b"/caf\xe9.md"
    with open(raw, "wb") as fh:
        fh.write((FRONT + "x\n").encode())
    with pytest.raises(memory.MemoryWriteRefused, match=r"caf\\xe9.md is not named in UTF-8"):
        memory.add_to_index(os.fsdecode(raw))
    assert index.read_text() == "- [A](a.md) \u2014 h\n"


def test_a_refusal_naming_a_path_with_a_newline_is_one_line(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`claudetto supersede '<memory>/x\ny.md' ...` wrote its refusal on two lines (the
    contract: one line on stderr), and called a file that is not there "not a file"."""
    folder = memory_folder(make_repo(tmp_path / "repo"))
    result = run_cli("supersede", str(folder / "x\ny.md"), "--line", "1", "--correction", "b")
    assert result.returncode == 1
    assert result.stderr == f"claudetto supersede: {folder}/x\\ny.md: no such file\n"


def test_a_huge_sweep_timeout_is_no_failed_memory_audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`CLAUDETTO_SWEEP_TIMEOUT_MS` of 400 nines made `claudetto memory` fail with
    `OverflowError: integer division result too large for a float`."""
    repo = make_repo(tmp_path / "repo")
    monkeypatch.setenv("CLAUDETTO_SWEEP_TIMEOUT_MS", "9" * 400)
    result = run_cli("memory", "--json", str(repo), cwd=repo)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"findings": []}


# --- found here, fixed elsewhere ------------------------------------------------------------------


def test_a_huge_bound_is_no_failed_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", "9" * 400)
    result = run_cli("gc", "--json", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["dry_run"] is True


def test_one_records_file_nested_too_deeply_does_not_stop_the_gc() -> None:
    gc_dir = paths.gc_dir()
    gc_dir.mkdir(parents=True)
    (gc_dir / "s1.json").write_text("[" * 100_000)
    result = run_cli("gc", "--json", "--dry-run")
    assert result.returncode == 0, result.stderr


def test_a_claude_json_nested_too_deeply_lists_the_worktrees_anyway(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (sandbox.config / ".claude.json").write_text("[" * 100_000)
    result = run_cli("worktrees", "--json", cwd=repo)
    assert result.returncode == 0, result.stderr


def test_a_fifo_as_a_project_settings_file_does_not_hang_worktree_create(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".claude").mkdir()
    os.mkfifo(repo / ".claude" / "settings.local.json")
    payload = {"hook_event_name": "WorktreeCreate", "session_id": "s1", "cwd": str(repo), "name": "agent-a1b2c3d"}
    try:
        result = run_hook(payload, cwd=repo, timeout=8)
    except subprocess.TimeoutExpired:
        pytest.fail("WorktreeCreate blocked on the FIFO")
    assert result.returncode == 0, result.stderr
