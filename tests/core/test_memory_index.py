"""Listing an unlisted topic file in MEMORY.md: the line Claude would write, appended and
nothing else touched; every refusal leaves the index byte for byte as it was."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from app.core import memory, paths
from app.core.memory import IndexRefused, add_to_index
from app.core.memory.index_writer import INDEX_LOADED_LINES, link_target
from app.core.memory.supersede import memory_write_lock
from app.core.memory_lint import INDEX_LINE_MAX, index_problems
from tests.core.test_memory import FRONT, memory_folder, write_memory
from tests.support import SandboxEnv, make_repo

INDEX = "- [Build](build.md) — how it builds\n"


@pytest.fixture
def folder(tmp_path: Path, sandbox: SandboxEnv) -> Path:
    """A memory folder with an index listing build.md, and deploy.md that no line lists."""
    folder = memory_folder(tmp_path / "app")
    (folder / "MEMORY.md").write_text(INDEX)
    (folder / "build.md").write_text(FRONT + "Tests run with make.\n")
    (folder / "deploy.md").write_text("---\nname: Deploy\ndescription: the deploy steps\ntype: project\n---\n"
                                      "Push the tag.\n")
    return folder


def test_the_line_is_appended_in_claudes_own_form(folder: Path) -> None:
    done = add_to_index(str(folder / "deploy.md"))
    assert (folder / "MEMORY.md").read_text() == INDEX + "- [Deploy](deploy.md) — the deploy steps\n"
    assert (done.index, done.topic, done.line, done.number, done.loaded, done.dry_run) == (
        str(folder / "MEMORY.md"), "deploy.md", "- [Deploy](deploy.md) — the deploy steps", 2, True, False)
    assert index_problems([(2, done.line)]) == []  # the write lint would take it from Claude too


def test_the_sweep_no_longer_finds_it_and_a_second_add_is_refused(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = make_repo(tmp_path / "app")
    folder = write_memory(repo, {"MEMORY.md": INDEX, "build.md": "Tests run with make.\n",
                                 "deploy.md": "Push the tag.\n"})
    [unlisted] = [f for f in memory.sweep(str(repo)) if f.kind == "index_unlisted_file"]
    assert unlisted.file == str(folder / "deploy.md")
    add_to_index(unlisted.file)
    assert not [f for f in memory.sweep(str(repo)) if f.kind.startswith("index_")]
    after = (folder / "MEMORY.md").read_bytes()
    with pytest.raises(IndexRefused, match="already lists deploy.md"):
        add_to_index(unlisted.file)
    assert (folder / "MEMORY.md").read_bytes() == after


def test_a_file_the_index_names_without_a_link_is_listed_already(folder: Path) -> None:
    (folder / "MEMORY.md").write_text(INDEX + "- deploy.md — the deploy steps\n")
    with pytest.raises(IndexRefused, match="already lists"):
        add_to_index(str(folder / "deploy.md"))


def test_the_title_falls_back_to_the_first_heading_then_the_file_name(folder: Path) -> None:
    (folder / "heading.md").write_text("```\n# not this one\n```\n\n## Release  checklist ##\nbody\n")
    (folder / "bare.md").write_text("no heading, no frontmatter\n")
    (folder / "named.md").write_text("---\nname: Named only\n---\n# Heading\n")
    assert add_to_index(str(folder / "heading.md")).line == "- [Release checklist](heading.md)"
    assert add_to_index(str(folder / "bare.md")).line == "- [bare](bare.md)"
    assert add_to_index(str(folder / "named.md")).line == "- [Named only](named.md)"
    assert (folder / "MEMORY.md").read_text().splitlines()[1:] == [
        "- [Release checklist](heading.md)", "- [bare](bare.md)", "- [Named only](named.md)"]


def test_odd_names_and_long_descriptions_still_make_one_pointer_line(folder: Path) -> None:
    sub = folder / "team notes"
    sub.mkdir()
    odd = sub / "a (draft) #2.md"
    odd.write_text(f"---\nname: \"[Draft]   notes\"\ndescription: {'word ' * 60}\ntype: project\n---\n")
    done = add_to_index(str(odd))
    assert done.line.startswith("- [Draft notes](team%20notes/a%20%28draft%29%20%232.md) — word word")
    assert len(done.line) == INDEX_LINE_MAX and done.line.endswith("…")
    assert link_target("team notes/a (draft) #2.md") in done.line
    assert index_problems([(2, done.line)]) == []
    with pytest.raises(IndexRefused, match="already lists"):  # the sweep reads the link back as that file
        add_to_index(str(odd))


def test_a_dry_run_writes_nothing(folder: Path) -> None:
    done = add_to_index(str(folder / "deploy.md"), dry_run=True)
    assert done.dry_run and done.line == "- [Deploy](deploy.md) — the deploy steps" and done.number == 2
    assert (folder / "MEMORY.md").read_text() == INDEX


def test_crlf_a_last_line_without_newline_and_other_bytes_are_kept(folder: Path) -> None:
    index = folder / "MEMORY.md"
    raw = b"# Index \xff\xfe latin-1: caf\xe9\r\n- [Build](build.md) \xe2\x80\x94 builds\r\n\r\n- old line"
    index.write_bytes(raw)
    os.chmod(index, 0o640)
    done = add_to_index(str(folder / "deploy.md"))
    assert index.read_bytes() == raw + b"\r\n- [Deploy](deploy.md) \xe2\x80\x94 the deploy steps\r\n"
    assert done.number == 5
    assert stat.S_IMODE(index.stat().st_mode) == 0o640
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md", "build.md", "deploy.md"]  # no temp file


def test_a_missing_index_is_refused_and_not_created(folder: Path) -> None:
    (folder / "MEMORY.md").unlink()
    with pytest.raises(IndexRefused, match="there is no MEMORY.md"):
        add_to_index(str(folder / "deploy.md"))
    assert not (folder / "MEMORY.md").exists()


def test_a_symlinked_or_odd_index_is_refused(folder: Path, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere.md"
    real.write_text(INDEX)
    index = folder / "MEMORY.md"
    index.unlink()
    index.symlink_to(real)
    with pytest.raises(IndexRefused, match="must be a regular file"):
        add_to_index(str(folder / "deploy.md"))
    assert real.read_text() == INDEX and index.is_symlink()
    index.unlink()
    os.mkfifo(index)
    with pytest.raises(IndexRefused, match="must be a regular file"):  # never blocks on a FIFO
        add_to_index(str(folder / "deploy.md"))


def test_an_index_changed_since_it_was_shown_is_refused(folder: Path) -> None:
    shown = add_to_index(str(folder / "deploy.md"), dry_run=True)
    index = folder / "MEMORY.md"
    changed = INDEX + "- [Ops](ops.md) — added meanwhile\n"
    index.write_text(changed)
    with pytest.raises(IndexRefused, match="changed since the line was shown"):
        add_to_index(str(folder / "deploy.md"), seen=shown.seen)
    assert index.read_text() == changed
    add_to_index(str(folder / "deploy.md"), seen=add_to_index(str(folder / "deploy.md"), dry_run=True).seen)
    assert index.read_text() == changed + "- [Deploy](deploy.md) — the deploy steps\n"


def test_a_writer_holding_the_memory_lock_keeps_its_line(folder: Path) -> None:
    index = folder / "MEMORY.md"
    errors: list[BaseException] = []

    def add() -> None:
        try:
            add_to_index(str(folder / "deploy.md"))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    with memory_write_lock():  # a supersede, say, in the middle of its write
        adder = threading.Thread(target=add)
        adder.start()
        adder.join(0.3)
        assert adder.is_alive()  # it waits for the lock before it reads the index
        index.write_text(INDEX + "- [Ops](ops.md) — written under the lock\n")
    adder.join(5)
    assert not errors
    assert index.read_text() == INDEX + "- [Ops](ops.md) — written under the lock\n" \
                                        "- [Deploy](deploy.md) — the deploy steps\n"


def test_topic_files_that_cannot_be_listed_are_refused(folder: Path, tmp_path: Path, sandbox: SandboxEnv) -> None:
    outside = tmp_path / "notes.md"
    outside.write_text(FRONT)
    (folder / ".hidden.md").write_text(FRONT)
    (folder / "data.txt").write_text("x\n")
    (folder / "gone.md").symlink_to(tmp_path / "nowhere.md")
    for path, why in ((outside, "is not in a memory folder"), (folder / "MEMORY.md", "is the index itself"),
                      (folder / ".hidden.md", "is not a topic file"), (folder / "data.txt", "is not a topic file"),
                      (folder / "gone.md", "is not in a memory folder|is not a file")):
        with pytest.raises(IndexRefused, match=why):
            add_to_index(str(path))
    assert (folder / "MEMORY.md").read_text() == INDEX


def test_a_symlinked_memory_folder_is_written_where_it_really_is(tmp_path: Path, sandbox: SandboxEnv) -> None:
    real_folder = tmp_path / "dotfiles" / "memory"
    real_folder.mkdir(parents=True)
    (real_folder / "MEMORY.md").write_text(INDEX)
    (real_folder / "deploy.md").write_text("# Deploy\n")
    linked = paths.projects_dir() / "slug" / "memory"
    linked.parent.mkdir(parents=True)
    linked.symlink_to(real_folder)
    add_to_index(str(linked / "deploy.md"))
    assert (real_folder / "MEMORY.md").read_text() == INDEX + "- [Deploy](deploy.md)\n"
    assert linked.is_symlink()


def test_a_line_past_what_claude_loads_says_so(folder: Path) -> None:
    (folder / "MEMORY.md").write_text("".join(f"- [n{i}](n{i}.md)\n" for i in range(INDEX_LOADED_LINES)))
    done = add_to_index(str(folder / "deploy.md"))
    assert done.number == INDEX_LOADED_LINES + 1 and not done.loaded
