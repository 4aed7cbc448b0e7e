"""At a prompt, a file whose (device, inode, size, mtime_ns, ctime_ns) equal the stat its hash
was taken with, taken at least RACY_NS after the file's last change, is not read again: no
program can set a ctime back, so equal stats mean the content the hash was taken of. Proved
through the hook as Claude runs it, with an entry whose hash no longer matches the bytes:
only a read would notice."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from app.core import ledger, paths
from tests.support import hook_modules, run_hook, set_mtime

SID = "5d1c0a9e-6b7f-4e2a-8c3d-9f0e1a2b3c4d"
OTHER = "a1b2c3d4-0000-4000-8000-000000000000"


def _edit(path: Path, session: str = SID) -> None:
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(path.parent),
               "tool_name": "Edit", "tool_input": {"file_path": str(path), "old_string": "a", "new_string": "b"},
               "tool_response": {"filePath": str(path)}}
    done = run_hook(payload, cwd=path.parent)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done


def _prompt(cwd: Path, session: str = SID) -> str:
    done = run_hook({"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(cwd),
                     "prompt": "go on"}, cwd=cwd)
    assert done.returncode == 0 and done.stderr == b"", done
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout else ""


def _files() -> dict[str, Any]:
    return json.loads(paths.ledger_file().read_text())["files"]


def _store(files: dict[str, Any]) -> None:
    paths.ledger_file().write_text(json.dumps({"version": 1, "files": files}))


def _old_file(path: Path, text: str) -> Path:
    path.write_text(text)
    set_mtime(path, 3600)
    return path


def _forge_hash(entry: dict[str, Any], *, seen_after_change_ns: int) -> None:
    """Give the entry a hash of other bytes, its stat left as the file's own."""
    entry["hash"] = ledger.hex64(ledger.fnv1a_64(b"other bytes"))
    entry["seen_ns"] = max(entry["mtime_ns"], entry["ctime_ns"]) + seen_after_change_ns


def test_an_unmoved_stat_is_trusted_without_reading(tmp_path: Path) -> None:
    f = _old_file(tmp_path / "a.py", "x = 1\n")
    _edit(f)
    files = _files()
    _forge_hash(files[str(f)], seen_after_change_ns=ledger.RACY_NS)  # the stat was old enough
    _store(files)
    before = paths.ledger_file().read_bytes()
    assert _prompt(tmp_path) == ""  # a read would have found other bytes than the hash's
    assert paths.ledger_file().read_bytes() == before  # and nothing was written


def test_a_prompt_with_nothing_changed_loads_neither_the_read_nor_the_hash(tmp_path: Path) -> None:
    """The common prompt: the ledger's entries and their stats, no more. A file whose stat
    moved is what loads the look at the disk and the hash; a change, the line."""
    f = _old_file(tmp_path / "a.py", "x = 1\n")
    _edit(f)
    files = _files()
    files[str(f)]["seen_ns"] = max(files[str(f)]["mtime_ns"], files[str(f)]["ctime_ns"]) + ledger.RACY_NS
    _store(files)
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path), "prompt": "go on"}
    lazy = {"app.core.ledger_look", "app.core.fnv", "app.core.ledger_line", "mmap"}
    loaded = hook_modules(prompt, tmp_path)
    assert "app.core.ledger_entry" in loaded and not lazy & loaded
    f.write_text("x = 2\n")
    loaded = hook_modules(prompt, tmp_path)
    assert {"app.core.ledger_look", "app.core.fnv", "app.core.ledger_line"} <= loaded


def test_a_stat_taken_too_soon_after_the_change_is_checked_by_content(tmp_path: Path) -> None:
    f = _old_file(tmp_path / "a.py", "x = 1\n")
    _edit(f)
    files = _files()
    _forge_hash(files[str(f)], seen_after_change_ns=ledger.RACY_NS - 1)  # a same-tick write could hide
    _store(files)
    assert _prompt(tmp_path) == f"The user or a tool changed `{f}` after the last edit of `main`."


def test_any_moved_field_of_the_stat_makes_it_read(tmp_path: Path) -> None:
    """mtime set back (as `cp -p` or `rsync -t` do) still moves ctime; a new inode (a rename
    over it) or another size moves the stat too: each is read and judged by content."""
    cases = {"mtime_back": "x = 2\n", "replaced": "x = 3\n", "longer": "x = 44\n"}
    for name, text in cases.items():
        f = _old_file(tmp_path / f"{name}.py", "x = 1\n")
        _edit(f)
        st = f.stat()
        if name == "replaced":
            fresh = tmp_path / "fresh.tmp"
            fresh.write_text(text)
            os.utime(fresh, ns=(st.st_atime_ns, st.st_mtime_ns))
            fresh.replace(f)
        else:
            f.write_text(text)
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    told = set(_prompt(tmp_path).splitlines())
    assert told == {f"The user or a tool changed `{tmp_path / name}.py` after the last edit of `main`."
                    for name in cases}


def test_a_prompt_judges_and_logs_only_its_own_sessions_entries(tmp_path: Path) -> None:
    mine = _old_file(tmp_path / "mine.py", "a\n")
    theirs = _old_file(tmp_path / "theirs.py", "a\n")
    _edit(mine)
    _edit(theirs, session=OTHER)
    files = _files()
    files[str(theirs)]["size"] = -1  # another session's entry this version cannot trust
    _store(files)
    mine.write_text("b\n")
    assert _prompt(tmp_path) == f"The user or a tool changed `{mine}` after the last edit of `main`."
    logs = "".join(p.read_text() for p in paths.log_root().rglob("*.log"))
    assert "theirs.py" not in logs  # judged (and logged) at its own session's prompts
    assert _prompt(tmp_path, session=OTHER) == ""
    logs = "".join(p.read_text() for p in paths.log_root().rglob("*.log"))
    assert "skipped the entry of" in logs and "theirs.py: size -1 is out of range" in logs
