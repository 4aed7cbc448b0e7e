"""Red team, round thirteen: the edit ledger against changes that keep a file's size and put
its mtime back, and against edits recorded at once. Driven as Claude drives it: PostToolUse
and UserPromptSubmit through `python -P -m hooks`, real files and real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.hooks.test_ledger_hooks import SID, edit, entries, prompt
from tests.support import run_hook


def line(path: Path | str, agent: str = "main") -> str:
    return f"The user or a tool changed `{path}` after the last edit of `{agent}`."


def test_same_size_changes_with_the_mtime_put_back_are_told_after_the_stat_is_trusted(tmp_path: Path) -> None:
    """(Held.) Once the stat of an entry is old enough to stand for its content (no read at a
    prompt), a change keeping the size and the mtime is still told: rewritten in place and
    `touch -r`, replaced by a rename of a copy (`cp -p`, the inode changes), deleted and made
    again (a freed inode is soon given again on ext4). The ctime moves in each, and no program
    can set it back."""
    names = ("in_place.py", "renamed.py", "recreated.py")
    files = [tmp_path / name for name in names]
    for f in files:
        f.write_text("mode = 'safe'\n")
        edit(f)
    time.sleep(2.1)  # the stats are no longer racy: this prompt stores them, later ones trust them
    assert prompt(tmp_path) == ""
    assert all(entries()[str(f)]["seen_ns"] - entries()[str(f)]["ctime_ns"] >= 2 * 10**9 for f in files)
    kept = {f: os.stat(f) for f in files}
    in_place, renamed, recreated = files
    in_place.write_text("mode = 'FAST'\n")
    fresh = tmp_path / ".renamed.tmp"
    fresh.write_text("mode = 'FAST'\n")
    os.utime(fresh, ns=(kept[renamed].st_atime_ns, kept[renamed].st_mtime_ns))
    os.replace(fresh, renamed)
    recreated.unlink()
    recreated.write_text("mode = 'FAST'\n")
    for f in (in_place, recreated):
        os.utime(f, ns=(kept[f].st_atime_ns, kept[f].st_mtime_ns))
    assert all((os.stat(f).st_size, os.stat(f).st_mtime_ns) == (kept[f].st_size, kept[f].st_mtime_ns)
               for f in files)
    assert prompt(tmp_path).splitlines() == [line(f) for f in files]
    assert prompt(tmp_path) == ""


def test_edits_recorded_at_once_all_keep_their_entry(tmp_path: Path) -> None:
    """(Held.) Claude runs the PostToolUse hooks of parallel edits at the same time: eight
    hook processes write the ledger at once, under its lock, and no entry is lost."""
    files = [tmp_path / f"f{n}.py" for n in range(8)]
    for f in files:
        f.write_text(f"x = {f.name!r}\n")
    procs = [subprocess.Popen([sys.executable, "-P", "-m", "hooks"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=str(tmp_path), env=dict(os.environ)) for _ in files]
    for proc, f in zip(procs, files, strict=True):
        payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path),
                   "transcript_path": "/t.jsonl", "tool_name": "Write", "tool_use_id": f"toolu_{f.name}",
                   "tool_input": {"file_path": str(f), "content": f.read_text()},
                   "tool_response": {"filePath": str(f)}}
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=60) == 0 and proc.stderr is not None and proc.stderr.read() == b""
    assert set(entries()) == {str(f) for f in files}
    files[3].write_text("x = 'changed'\n")
    assert prompt(tmp_path) == line(files[3])
    assert run_hook({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
                     "prompt": "go on"}, cwd=tmp_path).stdout == b""
