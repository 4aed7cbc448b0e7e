"""One line numbering for memory: split on `\\n` only, as `grep -n` and Claude count lines.
The sweep's findings, the viewer, the write lint, supersede and the index writer agree on
it, and supersede strikes only the line the caller meant: the text it saw there, or a number
not moved by the last supersede."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from app.core import memory
from app.core.memory import IndexRefused, SupersedeRefused, add_to_index, supersede
from app.core.memory_lint import added_lines
from app.data.memory import file_lines
from tests.core.test_memory import memory_folder, write_memory
from tests.support import SandboxEnv, make_repo, run_cli

TODAY = "2026-11-30"
# a form feed, NEL, a line separator and a lone carriage return: all inside one line for grep
ODD = "# Notes\nmake\x0c page 2\nnext\x85line\nUse port 8080\u2028for dev\nhalf\rway\nThe port is 8080\n"


def grep_n(path: Path, needle: str) -> int:
    out = subprocess.run(["grep", "-n", "-F", needle, str(path)], capture_output=True, check=True).stdout
    return int(out.split(b":", 1)[0])


@pytest.fixture
def odd(tmp_path: Path, sandbox: SandboxEnv) -> Path:
    path = memory_folder(tmp_path / "p") / "notes.md"
    path.write_bytes(ODD.encode("utf-8"))
    return path


def test_supersede_strikes_the_line_grep_names_past_every_odd_separator(odd: Path) -> None:
    number = grep_n(odd, "The port is 8080")
    assert number == 6
    done = supersede(str(odd), number, "The port is 9090", today=TODAY)
    assert done.struck == "~~The port is 8080~~" and done.correction_line == 7
    assert odd.read_bytes().decode("utf-8") == ODD.replace(
        "The port is 8080\n", "~~The port is 8080~~\nCorrection (2026-11-30): The port is 9090\n")


def test_a_line_holding_a_unicode_separator_is_struck_whole(odd: Path) -> None:
    supersede(str(odd), 4, "Use port 9090", today=TODAY)
    text = odd.read_bytes().decode("utf-8")
    assert "\n~~Use port 8080\u2028for dev~~\nCorrection (2026-11-30): Use port 9090\nhalf\rway\n" in text


def test_crlf_endings_are_kept_and_a_last_line_without_newline_stays_so(tmp_path: Path, sandbox: SandboxEnv) -> None:
    path = memory_folder(tmp_path / "p") / "crlf.md"
    path.write_bytes(b"# Notes\r\n- one\r\n- two")
    supersede(str(path), 2, "1", today=TODAY)
    supersede(str(path), 4, "2", expect="- two", today=TODAY)
    assert path.read_bytes() == (b"# Notes\r\n- ~~one~~\r\n- Correction (2026-11-30): 1\r\n"
                                 b"- ~~two~~\r\n- Correction (2026-11-30): 2")


def test_a_last_line_ending_in_a_lone_cr_is_not_merged_with_its_correction(tmp_path: Path,
                                                                            sandbox: SandboxEnv) -> None:
    path = memory_folder(tmp_path / "p") / "cr.md"
    path.write_bytes(b"# Notes\n- wrong\r")
    supersede(str(path), 2, "right", today=TODAY)
    assert path.read_bytes().split(b"\n") == [b"# Notes", b"- ~~wrong~~", b"- Correction (2026-11-30): right\r"]


def test_the_sweep_and_the_viewer_number_lines_as_grep_does(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router: pass\n"})
    folder = write_memory(repo, {"notes.md": "A\u2028B\x0cC\x85D\rE\n- The router is `src/gone_router.py`.\n"})
    notes = folder / "notes.md"
    [finding] = [f for f in memory.sweep(str(repo)) if f.kind == "vanished_artifact"]
    assert finding.line == grep_n(notes, "gone_router")
    viewed = file_lines(str(notes))
    assert viewed[finding.line - 1] == "- The router is `src/gone_router.py`."
    assert viewed[finding.line - 2] == "A\u2028B\x0cC\x85D\rE"


def test_the_write_lint_numbers_added_lines_the_same_way() -> None:
    assert added_lines("a\n", "a\nb\u2028c\r\nd\x0ce\n") == [(2, "b\u2028c\r"), (3, "d\x0ce")]


def test_the_index_writer_ends_a_lone_cr_last_line_before_appending(tmp_path: Path, sandbox: SandboxEnv) -> None:
    folder = memory_folder(tmp_path / "p")
    (folder / "MEMORY.md").write_bytes(b"- [Build](build.md) \xe2\x80\xa8 how\r")
    (folder / "build.md").write_text("Tests run with make.\n")
    (folder / "deploy.md").write_text("---\nname: Deploy\ndescription: steps\ntype: project\n---\nPush.\n")
    done = add_to_index(str(folder / "deploy.md"))
    raw = (folder / "MEMORY.md").read_bytes()
    assert raw.split(b"\n") == [b"- [Build](build.md) \xe2\x80\xa8 how\r", b"- [Deploy](deploy.md) \xe2\x80\x94 steps", b""]
    assert done.number == 2 == grep_n(folder / "MEMORY.md", "Deploy")


def test_the_expected_text_is_checked_and_a_mismatch_writes_nothing(odd: Path) -> None:
    with pytest.raises(SupersedeRefused, match=r"line 3 of .* changed: it reads 'next\\x85line', not 'make'"):
        supersede(str(odd), 3, "x", expect="make", today=TODAY)
    with pytest.raises(SupersedeRefused, match="line 9 of .* changed: it is out of range"):
        supersede(str(odd), 9, "x", expect="make", today=TODAY)
    assert odd.read_bytes() == ODD.encode("utf-8")
    supersede(str(odd), 2, "make all", expect="  make\x0c page 2 ", today=TODAY)
    assert "~~make\x0c page 2~~" in odd.read_text(encoding="utf-8")


def test_a_bare_number_below_the_last_strike_is_refused_until_the_file_changes(odd: Path) -> None:
    supersede(str(odd), 3, "x", today=TODAY)  # pushes the port line from 6 to 7
    after = odd.read_bytes()
    with pytest.raises(SupersedeRefused, match="line 6 of .* moved: the correction added below line 3"):
        supersede(str(odd), 6, "The port is 9090", today=TODAY)
    with pytest.raises(SupersedeRefused, match="moved"):
        supersede(str(odd), 6, "The port is 9090", dry_run=True, today=TODAY)
    assert odd.read_bytes() == after
    supersede(str(odd), 2, "above is fine", today=TODAY)  # a line above the strike did not move
    supersede(str(odd), 8, "The port is 9090", expect="The port is 8080", today=TODAY)
    assert "~~The port is 8080~~" in odd.read_text(encoding="utf-8")


def test_a_hand_edit_after_a_strike_lets_a_fresh_number_through(odd: Path) -> None:
    supersede(str(odd), 2, "x", today=TODAY)
    odd.write_bytes(odd.read_bytes() + b"- added by hand\n")  # the user edits: numbers read now are fresh
    supersede(str(odd), 7, "The port is 9090", today=TODAY)
    assert "~~The port is 8080~~" in odd.read_text(encoding="utf-8")


def test_the_cli_takes_expect_and_refuses_a_stale_line_in_one_line(odd: Path) -> None:
    result = run_cli("supersede", str(odd), "--line", "6", "--correction", "9090", "--expect", "The port is 80")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "changed" in result.stderr
    assert odd.read_bytes() == ODD.encode("utf-8")
    result = run_cli("supersede", str(odd), "--line", "6", "--correction", "9090", "--expect", "The port is 8080")
    assert result.returncode == 0, result.stderr


def test_read_only_files_are_refused_by_supersede_and_the_index_writer(tmp_path: Path, sandbox: SandboxEnv) -> None:
    folder = memory_folder(tmp_path / "p")
    notes = folder / "notes.md"
    notes.write_text("- fact\n")
    notes.chmod(0o444)
    for dry_run in (True, False):
        with pytest.raises(SupersedeRefused, match="is read-only; nothing changed"):
            supersede(str(notes), 1, "x", dry_run=dry_run, today=TODAY)
    assert notes.read_text() == "- fact\n" and os.stat(notes).st_mode & 0o777 == 0o444
    (folder / "MEMORY.md").write_text("- [Notes](notes.md) — notes\n")
    (folder / "MEMORY.md").chmod(0o400)
    (folder / "deploy.md").write_text("Push.\n")
    with pytest.raises(IndexRefused, match="is read-only"):
        add_to_index(str(folder / "deploy.md"))
    assert (folder / "MEMORY.md").read_text() == "- [Notes](notes.md) — notes\n"


def test_a_corrupt_guard_record_is_reset_and_the_strike_still_happens(odd: Path, sandbox: SandboxEnv) -> None:
    from app.core import paths
    from app.core.memory.shifts import RECORD_NAME

    record = Path(paths.claudetto_home_str()) / RECORD_NAME
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("[not an object")
    supersede(str(odd), 2, "x", today=TODAY)
    assert "~~make\x0c page 2~~" in odd.read_text(encoding="utf-8")
    with pytest.raises(SupersedeRefused, match="moved"):  # the record is whole again
        supersede(str(odd), 6, "y", today=TODAY)
