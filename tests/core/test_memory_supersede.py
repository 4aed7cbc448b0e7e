"""Supersede, never delete: the struck line and the dated correction, compared line by line;
every refusal leaves the file as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core import memory, paths
from app.core.memory import SupersedeRefused, supersede
from tests.core.test_memory import FRONT, memory_folder, write_memory
from tests.support import SandboxEnv, make_repo

TODAY = "2026-11-30"


@pytest.fixture
def notes(tmp_path: Path, sandbox: SandboxEnv) -> Path:
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router: pass\n"})
    folder = write_memory(repo, {"notes.md": (
        "# Routing\n"  # 7
        "- The router is `src/legacy_router.py`.\n"  # 8
        "  * nested: `LegacyRouter` handles v1\n"  # 9
        "## The old entry point\n"  # 10
        "Plain prose about `src/old_main.py`.\n"  # 11
        "```\ncode here\n```\n"  # 12-14
        "\n"  # 15
        "- ~~already struck~~\n"  # 16
    )})
    return folder / "notes.md"


def lines(path: Path) -> list[str]:
    return path.read_text().split("\n")


def test_a_list_item_is_struck_and_corrected_below_it(notes: Path) -> None:
    before = lines(notes)
    done = supersede(str(notes), 8, "The router is `src/router.py`.", today=TODAY)
    after = lines(notes)
    assert after[:7] == before[:7]
    assert after[7] == "- ~~The router is `src/legacy_router.py`.~~"
    assert after[8] == "- Correction (2026-11-30): The router is `src/router.py`."
    assert after[9:] == before[8:]
    assert (done.file, done.line, done.correction_line, done.dry_run) == (str(notes), 8, 9, False)
    assert (done.struck, done.correction) == (after[7], after[8])


@pytest.mark.parametrize(("number", "struck", "correction"), [
    (9, "  * ~~nested: `LegacyRouter` handles v1~~", "  * Correction (2026-11-30): fixed"),
    (10, "## ~~The old entry point~~", "Correction (2026-11-30): fixed"),
    (11, "~~Plain prose about `src/old_main.py`.~~", "Correction (2026-11-30): fixed"),
])
def test_indentation_markers_and_headings_stay_outside_the_strike(number: int, struck: str, correction: str,
                                                                   notes: Path) -> None:
    before = lines(notes)
    supersede(str(notes), number, "fixed", today=TODAY)
    after = lines(notes)
    assert after == before[: number - 1] + [struck, correction] + before[number:]


def test_the_correction_is_one_line(notes: Path) -> None:
    supersede(str(notes), 8, "  first\nsecond\r\n third  ", today=TODAY)
    assert lines(notes)[8] == "- Correction (2026-11-30): first second third"


def test_crlf_and_a_last_line_without_newline_are_kept(tmp_path: Path, sandbox: SandboxEnv) -> None:
    folder = memory_folder(tmp_path / "p")
    path = folder / "crlf.md"
    path.write_bytes(b"- one\r\n- two")
    supersede(str(path), 2, "2", today=TODAY)
    assert path.read_bytes() == b"- one\r\n- ~~two~~\r\n- Correction (2026-11-30): 2"
    supersede(str(path), 1, "1", today=TODAY)
    assert path.read_bytes() == (b"- ~~one~~\r\n- Correction (2026-11-30): 1\r\n- ~~two~~\r\n"
                                 b"- Correction (2026-11-30): 2")


def test_the_file_keeps_its_mode_and_no_temp_file_is_left(notes: Path) -> None:
    notes.chmod(0o640)
    supersede(str(notes), 8, "x", today=TODAY)
    assert notes.stat().st_mode & 0o7777 == 0o640
    assert sorted(p.name for p in notes.parent.iterdir()) == ["MEMORY.md", "notes.md"]
    assert not (notes.parent / "notes.md.lock").exists()  # the lock lives in claudetto's own state


def test_today_is_the_default_date(notes: Path) -> None:
    import time

    supersede(str(notes), 8, "x")
    assert lines(notes)[8] == f"- Correction ({time.strftime('%Y-%m-%d')}): x"


def test_a_dry_run_writes_nothing(notes: Path) -> None:
    before = notes.read_bytes()
    done = supersede(str(notes), 8, "x", dry_run=True, today=TODAY)
    assert done.dry_run and done.struck == "- ~~The router is `src/legacy_router.py`.~~"
    assert notes.read_bytes() == before


def test_the_next_sweep_skips_the_struck_line(notes: Path) -> None:
    repo = next(p for p in notes.parents if (p / "sb").exists()) / "app"
    assert [(f.line, f.token) for f in memory.sweep(str(repo))] == [
        (8, "src/legacy_router.py"), (9, "LegacyRouter"), (11, "src/old_main.py")]
    supersede(str(notes), 8, "The router is `src/router.py`.", today=TODAY)
    assert [(f.line, f.token) for f in memory.sweep(str(repo))] == [(10, "LegacyRouter"), (12, "src/old_main.py")]


REFUSALS = [
    (0, "line 0 is out of range"),
    (17, "line 17 is out of range"),
    (-1, "line -1 is out of range"),
    (16, "is already struck"),
    (15, "is empty"),
    (2, "is in the frontmatter"),
    (13, "is in a code block"),
]


@pytest.mark.parametrize(("number", "why"), REFUSALS, ids=[r[1] for r in REFUSALS])
def test_refusals_leave_the_file_as_it_was(number: int, why: str, notes: Path) -> None:
    before = notes.read_bytes()
    with pytest.raises(SupersedeRefused, match=why) as refused:
        supersede(str(notes), number, "x", today=TODAY)
    assert "\n" not in str(refused.value)
    assert notes.read_bytes() == before


def test_an_empty_correction_is_refused(notes: Path) -> None:
    with pytest.raises(SupersedeRefused, match="the correction is empty"):
        supersede(str(notes), 8, " \n ", today=TODAY)


def test_a_file_outside_a_memory_folder_is_refused(tmp_path: Path, sandbox: SandboxEnv) -> None:
    outside = tmp_path / "notes.md"
    outside.write_text("- fact\n")
    near = paths.projects_dir() / "slug" / "notes.md"  # in a project folder, not in its memory
    near.parent.mkdir(parents=True)
    near.write_text("- fact\n")
    for path in (outside, near):
        with pytest.raises(SupersedeRefused, match="is not in a memory folder"):
            supersede(str(path), 1, "x", today=TODAY)
        assert path.read_text() == "- fact\n"


def test_a_symlink_in_memory_that_points_outside_is_refused(tmp_path: Path, sandbox: SandboxEnv) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("- fact\n")
    link = memory_folder(tmp_path / "p") / "link.md"
    link.symlink_to(target)
    with pytest.raises(SupersedeRefused, match="is not in a memory folder"):
        supersede(str(link), 1, "x", today=TODAY)
    assert target.read_text() == "- fact\n" and link.is_symlink()


def test_a_symlink_into_memory_and_a_symlinked_memory_folder_are_followed(tmp_path: Path, sandbox: SandboxEnv) -> None:
    real_folder = tmp_path / "dotfiles" / "memory"
    real_folder.mkdir(parents=True)
    (real_folder / "a.md").write_text("- one\n")
    linked = paths.projects_dir() / "slug" / "memory"
    linked.parent.mkdir(parents=True)
    linked.symlink_to(real_folder)
    supersede(str(linked / "a.md"), 1, "1", today=TODAY)
    assert (real_folder / "a.md").read_text() == "- ~~one~~\n- Correction (2026-11-30): 1\n"

    shortcut = tmp_path / "shortcut.md"
    shortcut.symlink_to(real_folder / "a.md")  # resolves into a folder only a symlink makes memory
    with pytest.raises(SupersedeRefused, match="is not in a memory folder"):
        supersede(str(shortcut), 2, "x", today=TODAY)

    direct = memory_folder(tmp_path / "q") / "b.md"
    direct.write_text("- two\n")
    via = tmp_path / "via.md"
    via.symlink_to(direct)
    supersede(str(via), 1, "2", today=TODAY)
    assert direct.read_text() == "- ~~two~~\n- Correction (2026-11-30): 2\n" and via.is_symlink()


def test_a_file_that_is_not_utf8_or_not_a_file_is_refused(tmp_path: Path, sandbox: SandboxEnv) -> None:
    folder = memory_folder(tmp_path / "p")
    (folder / "latin.md").write_bytes(b"- caf\xe9\n")
    with pytest.raises(SupersedeRefused, match="not UTF-8"):
        supersede(str(folder / "latin.md"), 1, "x", today=TODAY)
    (folder / "dir.md").mkdir()
    with pytest.raises(SupersedeRefused, match="is not a file"):
        supersede(str(folder / "dir.md"), 1, "x", today=TODAY)
    os.mkfifo(folder / "fifo.md")
    with pytest.raises(SupersedeRefused):
        supersede(str(folder / "fifo.md"), 1, "x", today=TODAY)
    with pytest.raises(SupersedeRefused):
        supersede(str(folder / "missing.md"), 1, "x", today=TODAY)


def test_frontmatter_lines_count_from_the_top(tmp_path: Path, sandbox: SandboxEnv) -> None:
    folder = memory_folder(tmp_path / "p")
    path = folder / "f.md"
    path.write_text(FRONT + "- fact\n")
    supersede(str(path), 7, "x", today=TODAY)
    assert lines(path)[6:8] == ["- ~~fact~~", "- Correction (2026-11-30): x"]
