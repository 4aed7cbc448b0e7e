"""Red team, round four: changes behind the model's back that the edit ledger must see, and
notices that must reach the right session once. Driven as Claude drives it: PostToolUse and
UserPromptSubmit through `python -P -m hooks`, real files, real links, real folders."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.hooks.test_ledger_hooks import edit, entries, prompt

SID = "0b6c3f8e-1c9d-4c1e-9f3a-6f7e2d1a9b00"
OTHER = "7d1e2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"


def line(path: Path, agent: str = "main", *, deleted: bool = False) -> str:
    text = f"The user or a tool changed `{path}` after the last edit of `{agent}`."
    return text


def test_atomic_save_with_same_size_and_mtime_is_told(tmp_path: Path) -> None:
    """An editor writes a temp file, copies the old times onto it (`touch -r`) and renames it
    over the file: same size, same mtime. The inode and ctime moved, so it is read again."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    tmp = tmp_path / ".a.py.swp"
    tmp.write_text("x = 2\n")
    subprocess.run(["touch", "-r", str(f), str(tmp)], check=True)
    os.replace(tmp, f)
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


def test_same_tick_change_right_after_the_edit_is_told(tmp_path: Path) -> None:
    """A change within the same mtime granularity, mtime set back to the edit's: the stat
    taken at the edit was racy, so the content is hashed, not trusted."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    st = f.stat()
    with open(f, "r+b") as fh:
        fh.write(b"x = 9\n")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert prompt(tmp_path) == line(f)


def test_replaced_by_a_hard_link_to_another_file_is_told(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    other = tmp_path / "b.py"
    other.write_text("y = 2\n")
    f.unlink()
    os.link(other, f)
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


def test_a_change_and_a_change_back_then_a_change_again(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == line(f)
    f.write_text("x = 1\n")  # back to what the model wrote: nothing to say
    assert prompt(tmp_path) == ""
    f.write_text("x = 2\n")  # the same change again is news again
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


def test_made_a_symlink_to_other_content_is_told(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    other = tmp_path / "b.py"
    other.write_text("y = 2\n")
    f.unlink()
    f.symlink_to(other)
    assert prompt(tmp_path) == line(f)


def test_a_folder_swapped_in_is_told_as_deleted_once(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.unlink()
    f.mkdir()
    assert prompt(tmp_path) == line(f, deleted=True)
    assert prompt(tmp_path) == ""


def test_a_file_on_another_device_is_told(tmp_path: Path) -> None:
    """The file swapped for a copy on another device with the same bytes count and times."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system here")
    target = shm / f"claudetto-rt4-{os.getpid()}.py"
    target.write_text("x = 2\n")
    try:
        f = tmp_path / "a.py"
        f.write_text("x = 1\n")
        edit(f)
        f.unlink()
        f.symlink_to(target)
        assert prompt(tmp_path) == line(f)
    finally:
        target.unlink()


def test_edited_through_a_symlink_changed_through_the_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    f = real / "a.py"
    f.write_text("x = 1\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    edit(link / "a.py")
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == line(link / "a.py")


def test_the_models_own_edit_through_another_name_is_no_outside_change(tmp_path: Path) -> None:
    """The model edits one file through a symlinked folder, then through its real path (or a
    hard link): its own second edit must not come back as "the user or a tool changed" the
    first name."""
    real = tmp_path / "real"
    real.mkdir()
    f = real / "a.py"
    f.write_text("x = 1\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    edit(link / "a.py")
    f.write_text("x = 2\n")
    edit(f)
    hard = tmp_path / "hard.py"
    os.link(f, hard)
    hard.write_text("x = 3\n")
    edit(hard)
    assert prompt(tmp_path) == ""
    f.write_text("x = 4\n")  # now an outside change: told once, under the newest name
    assert prompt(tmp_path) == line(hard)
    assert prompt(tmp_path) == ""


def test_a_subagents_edit_names_it_and_its_prompt_marks_nothing(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f, agent_id="a1b2c3d4e5f6a7b8", agent_type="Explore")
    f.write_text("x = 2\n")
    sub = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
           "transcript_path": "/t.jsonl", "prompt": "go", "agent_id": "a1b2c3d4e5f6a7b8",
           "agent_type": "Explore"}
    from tests.support import run_hook

    result = run_hook(sub, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, b"")
    assert prompt(tmp_path) == line(f, "Explore")
    assert prompt(tmp_path) == ""


def test_the_other_session_is_not_told_of_this_ones_file(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    assert prompt(tmp_path, session=OTHER) == ""
    assert prompt(tmp_path) == line(f)


def test_two_sessions_edit_one_file_the_first_learns_of_the_seconds_edit(tmp_path: Path) -> None:
    """Session A edits, session B edits the same file: for A the file changed after its last
    edit (B is "a tool" to A); B is told nothing of its own edit."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    edit(f, session=OTHER)
    assert prompt(tmp_path, session=OTHER) == ""
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""
    f.write_text("x = 3\n")
    assert prompt(tmp_path, session=OTHER) == line(f)
    assert set(entries()) == {str(f)}


def test_two_sessions_the_first_takes_the_file_back_and_its_note_goes(tmp_path: Path) -> None:
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    edit(f, session=OTHER)
    f.write_text("x = 3\n")
    edit(f)  # the first session edits again before its prompt: it knows the content now
    assert "earlier" in entries()[str(f)] and SID not in entries()[str(f)]["earlier"]
    assert prompt(tmp_path) == ""
    f.write_text("x = 4\n")
    assert prompt(tmp_path, session=OTHER) == line(f)  # its edit was overwritten by the first's


def test_a_bad_earlier_record_is_ignored_and_the_rest_is_told(tmp_path: Path) -> None:
    import json

    from app.core import paths

    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    data = json.loads(paths.ledger_file().read_text())
    data["files"][str(f)]["earlier"] = {"x": {"agent": 5, "hash": "zz"}, "": [], SID: None}
    paths.ledger_file().write_text(json.dumps(data))
    f.write_text("x = 2\n")
    assert prompt(tmp_path) == line(f)
    assert prompt(tmp_path) == ""


def test_a_quiet_prompt_loads_nothing_for_shared_files(tmp_path: Path) -> None:
    from tests.support import hook_modules

    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
               "transcript_path": "/t.jsonl", "prompt": "go on"}
    loaded = hook_modules(payload, tmp_path)
    assert "app.core.ledger" in loaded and "app.core.ledger_shared" not in loaded


def test_the_ledger_holds_at_most_200_files_the_oldest_going_first(tmp_path: Path) -> None:
    from app.core import ledger

    files = []
    for n in range(201):
        f = tmp_path / f"f{n}.txt"
        f.write_text(f"{n}\n")
        files.append(f)
        assert ledger.record_file(str(f), "main", SID)
    held = list(entries())
    assert len(held) == 200 and str(files[0]) not in held and held[-1] == str(files[-1])


def test_the_bound_set_through_the_environment_holds_for_the_hook(tmp_path: Path) -> None:
    from tests.support import run_hook

    env = {**os.environ, "CLAUDETTO_LEDGER_MAX_FILES": "2"}
    files = [tmp_path / f"f{n}.txt" for n in range(3)]
    for f in files:
        f.write_text("x\n")
        payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path),
                   "transcript_path": "/t.jsonl", "tool_name": "Write", "tool_use_id": "t",
                   "tool_input": {"file_path": str(f), "content": "x\n"}, "tool_response": {}}
        assert run_hook(payload, cwd=tmp_path, env=env).returncode == 0
    assert list(entries()) == [str(files[1]), str(files[2])]


def test_the_ledger_command_shows_changed_and_told_as_the_contract_says(tmp_path: Path) -> None:
    import json

    from tests.support import run_cli

    same, moved = tmp_path / "same.py", tmp_path / "moved.py"
    for f in (same, moved):
        f.write_text("x = 1\n")
        edit(f)
    moved.write_text("x = 2\n")
    rows = {r["path"]: r for r in json.loads(run_cli("ledger", "--json").stdout)["files"]}
    assert {p: (r["changed"], r["told"], r["agent"]) for p, r in rows.items()} == {
        str(same): (False, False, "main"), str(moved): (True, False, "main")}
    assert all(len(r["hash"]) == 16 and set(r["hash"]) <= set("0123456789abcdef") for r in rows.values())
    assert prompt(tmp_path) == line(moved)
    rows = {r["path"]: r for r in json.loads(run_cli("ledger", "--json").stdout)["files"]}
    assert (rows[str(moved)]["changed"], rows[str(moved)]["told"]) == (True, True)


def test_two_sessions_the_first_is_told_under_its_own_agent_and_of_a_deletion(tmp_path: Path) -> None:
    f, g = tmp_path / "a.py", tmp_path / "b.py"
    for path in (f, g):
        path.write_text("x = 1\n")
        edit(path, agent_id="a1b2c3d", agent_type="Explore")
        path.write_text("x = 2\n")
        edit(path, session=OTHER)
    g.unlink()
    assert prompt(tmp_path) == f"{line(f, 'Explore')}\n{line(g, 'Explore', deleted=True)}"
    assert prompt(tmp_path) == ""
    assert prompt(tmp_path, session=OTHER) == line(g, deleted=True)


def test_a_ledger_write_that_loses_every_race_gives_up_quietly_and_the_notice_comes_again(tmp_path: Path) -> None:
    """LEDGER_WRITE_TRIES: a writer that cannot get the ledger's lock tries again, then gives
    up with a log line, never a traceback; a notice it could not mark told comes again."""
    from app.core import paths, state
    from tests.hooks.test_ledger_hooks import log_text
    from tests.support import run_hook

    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    env = {**os.environ, "CLAUDETTO_LEDGER_WRITE_TRIES": "2"}
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
               "transcript_path": "/t.jsonl", "prompt": "go"}
    with state.locked(paths.ledger_file_str()):
        busy = run_hook(payload, cwd=tmp_path, env=env)
        g = tmp_path / "b.py"
        g.write_text("y\n")
        lost = run_hook({**payload, "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": "t",
                         "tool_input": {"file_path": str(g), "content": "y\n"}, "tool_response": {}},
                        cwd=tmp_path, env=env)
    assert busy.returncode == 0 and busy.stderr == b"" and line(f).encode() in busy.stdout
    assert (lost.returncode, lost.stdout, lost.stderr) == (0, b"", b"")
    assert "(try 2 of 2)" in log_text() and "(try 3 of" not in log_text()
    assert str(g) not in entries()
    assert prompt(tmp_path) == line(f)  # not marked told while the lock was held: told again
    assert prompt(tmp_path) == ""


@pytest.mark.parametrize("how", ["hard link", "symlink"])
def test_a_name_the_user_points_at_another_edited_file_is_still_told(tmp_path: Path, how: str) -> None:
    """The model edited old.py and new.py; the user makes old.py a (hard or symbolic) link to
    new.py; the model edits new.py again. That edit must not swallow old.py's change."""
    old, new = tmp_path / "old.py", tmp_path / "new.py"
    old.write_text("a = 1\n")
    new.write_text("b = 1\n")
    edit(old)
    edit(new)
    old.unlink()
    if how == "hard link":
        os.link(new, old)
    else:
        old.symlink_to(new)
    with open(new, "a") as fh:
        fh.write("b = 2\n")  # the model's next edit, in place
    edit(new)
    assert prompt(tmp_path) == line(old)
    assert prompt(tmp_path) == ""


def test_an_atomic_save_by_the_model_through_the_real_path_is_no_outside_change(tmp_path: Path) -> None:
    """Edited through a symlinked folder, then rewritten through the real path by rename (a
    new inode): still the same file, the model's own edit."""
    real = tmp_path / "real"
    real.mkdir()
    f = real / "a.py"
    f.write_text("x = 1\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    edit(link / "a.py")
    tmp = real / ".a.py.tmp"
    tmp.write_text("x = 2\n")
    os.replace(tmp, f)
    edit(f)
    assert prompt(tmp_path) == ""
    assert list(entries()) == [str(f)]
