"""Red team, round seventeen: the hooks and the edit ledger (seed 000), driven as Claude drives
them: `python -P -m hooks` with the JSON Claude sends, real files, real processes.

Misses fixed: a hook killed in the middle of a state write (`kill -9`, Claude's timeout) left
its temp file in CLAUDETTO_HOME for good; `claudetto ledger` spelled a Latin-1 byte of a name
`\udce9` where the prompt's line says `\xe9`; a prompt hook that read a corrupt ledger moved
aside the good ledger a writer had put in its place meanwhile; a copied claudetto folder
(`cp -a`, with its `__pycache__`) ran the original folder's code through the import cache; a
ledger.json or memory file of gigabytes was read 2 GiB at a time before its limit was checked.

Held: malformed, empty, non-object and wrongly typed payloads; a ledger.json that is a FIFO,
a folder, a symlink to /dev/zero or JSON of another shape; files the model edited turned into
a FIFO, a socket, a folder, a link to /dev/zero or a 50 GiB sparse file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core import paths
from tests.hooks.test_ledger_hooks import SID, edit, entries, log_text, prompt
from tests.support import SandboxEnv, execed, run_cli, run_hook

# --- a writer killed halfway leaves its temp file; the next write of that file removes it ----

WRITER = """
import sys, time
from app.core.state import write_atomic
write_atomic(sys.argv[1], b'{"version": 1, "files": {}}', before_replace=lambda: time.sleep(600))
"""


def _killed_writer(target: Path) -> tuple[Path, int]:
    """A real process killed (SIGKILL) in the middle of an atomic write of `target`: its temp
    file, written and never renamed, and its pid, which no longer runs."""
    before = set(os.listdir(target.parent)) if target.parent.exists() else set()
    proc = execed(subprocess.Popen([sys.executable, "-P", "-c", WRITER, str(target)]))
    deadline = time.monotonic() + 30
    while True:
        new = [n for n in os.listdir(target.parent) if n not in before and n.endswith(".tmp")] \
            if target.parent.exists() else []
        if new and os.path.getsize(target.parent / new[0]) > 0:
            break
        assert time.monotonic() < deadline, "the writer never wrote its temp file"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return target.parent / new[0], proc.pid


def _aged(path: Path, seconds: float = 120) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then), follow_symlinks=False)
    return path


def test_a_temp_file_of_a_writer_killed_halfway_goes_with_the_next_write(tmp_path: Path) -> None:
    """`kill -9` of a hook in the middle of its ledger write (Claude kills a hook's process group
    at its timeout; the OOM killer) left `.ledger.json.<pid>.<ns>.tmp` in CLAUDETTO_HOME for
    good: nothing removed it, and every killed write added one. The next write of the ledger
    now removes such a file once its writer is gone and it is over a minute old; everything
    else stays: a live writer's, a young one, another state file's, a name of another shape."""
    ledger_file = paths.ledger_file()
    ledger_file.parent.mkdir(parents=True, exist_ok=True)
    left, dead = _killed_writer(ledger_file)
    assert left.name.startswith(f".ledger.json.{dead}.") and not ledger_file.exists()
    _aged(left)
    young, _ = _killed_writer(ledger_file)
    live = ledger_file.parent / f".ledger.json.{os.getppid()}.123456789.tmp"
    other = ledger_file.parent / f".checkouts.json.{dead}.123456789.tmp"
    odd = [ledger_file.parent / name for name in (
        f".ledger.json.{dead}.tmp", f".ledger.json.{dead}.12.tmp.bak", f".ledger.json.{dead}.x1.tmp",
        f"ledger.json.{dead}.12.tmp", f".ledger.json.{dead}.12.13.tmp")]
    for path in (live, other, *odd):
        path.write_bytes(b"keep")
        _aged(path)
    folder_named_so = ledger_file.parent / f".ledger.json.{dead + 1}.99.tmp"
    folder_named_so.mkdir()
    _aged(folder_named_so)
    work = tmp_path / "a.py"
    work.write_text("x = 1\n")
    edit(work)
    assert str(work) in entries()
    assert not left.exists(), "the temp file of the killed writer is still there"
    for path in (young, live, other, *odd, folder_named_so):
        assert path.exists(), path
    assert f"removed {left}" in log_text() or str(left.name) in log_text()


# --- one way to show a path: the ledger's table as the prompt's line ---------------------------


def test_the_ledger_table_shows_a_latin1_byte_as_the_prompt_line_does(tmp_path: Path) -> None:
    """A file named in Latin-1 (`caf\\xe9.py`) was told to the model as `caf\\xe9.py` and listed
    by `claudetto ledger` as `caf\\udce9.py`, Python's private spelling: the user could not match
    the table to what the model was told, nor to what `ls` shows (`'caf'$'\\351''.py'`)."""
    raw = os.fsencode(str(tmp_path)) + b"/caf\xe9.py"
    with open(raw, "wb") as fh:
        fh.write(b"x = 1\n")
    work = Path(os.fsdecode(raw))
    edit(work)
    with open(raw, "wb") as fh:
        fh.write(b"x = 2\n")
    told = prompt(tmp_path)
    shown = f"{tmp_path}/caf\\xe9.py"
    assert f"`{shown}`" in told
    result = run_cli("ledger")
    assert result.returncode == 0, result.stderr
    row = [line for line in result.stdout.splitlines() if "caf" in line]
    assert len(row) == 1 and row[0].startswith(shown + " "), result.stdout
    assert "udce9" not in result.stdout


# --- a reader that met a corrupt ledger never sets aside the good one a writer put there since ---


def _opened(pid: int, name: Path, deadline: float) -> bool:
    """Whether process `pid` holds `name` open (polled until `deadline`)."""
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == str(name):
                        return True
                except OSError:
                    continue
        except OSError:
            return False
        time.sleep(0.0005)
    return False


def test_a_prompt_that_read_a_corrupt_ledger_leaves_the_good_one_written_meanwhile(tmp_path: Path) -> None:
    """LOST RECORD. A prompt hook read a corrupt ledger.json (a long one takes seconds to
    parse); meanwhile an edit's hook, under the lock, set that file aside and wrote the good
    ledger with its entry. The prompt hook, done parsing, then moved aside whatever was at the
    name by now: the good ledger, as "corrupt". Every entry was gone from the ledger, and the
    user's next change to those files was never told. A reader now sets aside only the very
    file it read."""
    work = tmp_path / "a.py"
    work.write_text("x = 1\n")
    edit(work)
    ledger_file = paths.ledger_file()
    good = ledger_file.read_bytes()
    item = b'{"a": 1, "b": [1, 2], "c": {"d": null}}, '
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_bytes(b'{"version": 1, "files": {}, "x": [' + item * (24 * 2**20 // len(item)) + b"1] !")
    os.replace(corrupt, ledger_file)
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "another-session", "cwd": str(tmp_path),
               "transcript_path": "/t.jsonl", "prompt": "go on"}
    reader = execed(subprocess.Popen([sys.executable, "-P", "-m", "hooks"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path))
    assert reader.stdin is not None
    reader.stdin.write(json.dumps(payload).encode())
    reader.stdin.close()
    try:
        assert _opened(reader.pid, ledger_file, time.monotonic() + 30), "the prompt hook never opened the ledger"
        fresh = tmp_path / "fresh.json"
        fresh.write_bytes(good)
        os.replace(fresh, ledger_file)  # what a writer does once it has set the corrupt one aside
        assert reader.wait(timeout=120) == 0
    finally:
        reader.kill()
        reader.wait()
    assert ledger_file.exists(), "the good ledger was set aside as corrupt"
    assert str(work) in entries()


# --- a copy of claudetto (with its __pycache__) runs its own code, not the original's ----------


def test_a_copied_install_runs_its_own_code_not_the_folder_it_was_copied_from(tmp_path: Path) -> None:
    """STALE CODE. `cp -a` (or `rsync -a`) of a claudetto folder takes `hooks/__pycache__`
    along, and with it the import cache, whose entries name the ORIGINAL folder's sources by
    absolute path. The copy's hooks then ran the original's `app` (the package and every
    module under it, cached or not) for as long as the original stayed unchanged: a `git
    pull` or a fix in the copy (the install settings point at) never took effect. The cache
    now serves only modules of its own folder or of the running interpreter."""
    from app.core.setup import entry_code

    root = Path(__file__).resolve().parents[2]
    work = tmp_path / "a.py"
    work.write_text("x = 1\n")
    edit(work)
    work.write_text("x = 2\n")
    assert prompt(tmp_path)  # both routes ran: the original's cache holds the modules they use
    cache = root / "hooks" / "__pycache__" / f"hot-imports.{sys.implementation.cache_tag}.marshal"
    assert cache.exists(), "the original folder has no import cache to copy"
    copy = tmp_path / "copy"
    for part in ("app", "hooks"):
        shutil.copytree(root / part, copy / part, symlinks=True)
    line_module = copy / "app" / "core" / "ledger_line.py"
    line_module.write_text(line_module.read_text().replace('f"The user or a tool changed `', 'f"COPY: changed `'))
    work.write_text("x = 3\n")
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
               "transcript_path": "/t.jsonl", "prompt": "go on"}
    result = subprocess.run([sys.executable, "-I", "-S", "-c", entry_code(str(copy))], input=json.dumps(payload).encode(),
                            capture_output=True, cwd=tmp_path, timeout=60, check=False)
    assert result.returncode == 0 and result.stderr == b"", result
    told = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert told.startswith("COPY: changed `"), told


# --- a file far past its read limit is not read into memory first -----------------------------

MEASURED = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-P", "-m", "hooks"], input=sys.stdin.buffer.read(), capture_output=True)
sys.stdout.write(f"{done.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n")
"""


def _hook_peak_kib(payload: dict[str, object], cwd: Path) -> int:
    """The hook's peak memory (KiB), run as Claude runs it; it must exit 0."""
    result = subprocess.run([sys.executable, "-P", "-c", MEASURED], input=json.dumps(payload).encode(),
                            capture_output=True, cwd=cwd, timeout=120, check=False)
    code, peak = result.stdout.split()
    assert code == b"0", result
    return int(peak)


def test_a_huge_ledger_or_memory_file_is_refused_without_reading_gigabytes(tmp_path: Path) -> None:
    """MEMORY. A ledger.json grown to gigabytes (a sparse file: a disk image saved under that
    name, a runaway tool) or a memory topic file of gigabytes: the state store's read asked the
    system for the whole file size in one read before it checked its limit (64 MiB for state,
    4 MiB for a memory file), so the prompt hook and the memory lint of every memory write
    read 2 GiB (Linux's most for one read) into memory and took seconds to refuse it, or
    died of MemoryError. Such a file is now refused after at most its limit."""
    from tests.hooks.test_memory_lint import GOOD, memory_dir

    ledger_file = paths.ledger_file()
    ledger_file.parent.mkdir(parents=True, exist_ok=True)
    with open(ledger_file, "wb") as fh:
        fh.truncate(8 * 2**30)
    peak = _hook_peak_kib({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
                           "transcript_path": "/t.jsonl", "prompt": "go on"}, tmp_path)
    assert peak < 300 * 1024, f"the prompt hook peaked at {peak // 1024} MiB"
    topic = memory_dir() / "big.md"
    with open(topic, "wb") as fh:
        fh.write(GOOD.encode())
        fh.truncate(8 * 2**30)
    peak = _hook_peak_kib({"hook_event_name": "PreToolUse", "session_id": SID, "cwd": str(tmp_path),
                           "transcript_path": "/t.jsonl", "tool_name": "Edit", "tool_use_id": "t1",
                           "tool_input": {"file_path": str(topic), "old_string": "- Uses make.",
                                          "new_string": "- Uses make (since 2026-11-24)."}}, tmp_path)
    assert peak < 300 * 1024, f"the memory lint peaked at {peak // 1024} MiB"


# --- what a records file leaves when it goes ----------------------------------------------------


@pytest.mark.xfail(strict=True, reason="the lock file of a state file stays when the file goes: deleting it "
                   "safely needs `locked` to check, once it holds the lock, that the lock file it holds is "
                   "still the one at the name (a waiter may hold an unlinked one), a change to the shared core")
def test_a_records_file_that_goes_takes_its_lock_file_along(tmp_path: Path, sandbox: SandboxEnv) -> None:
    """CLUTTER. Each session that made an output leaves `gc/<session>.json.lock` (empty) for
    good once its records file goes: one file per session ever run, in the folder every
    records write lists."""
    scratch = sandbox.user_tmp / "notes.txt"
    scratch.write_text("x\n")
    payload = {"hook_event_name": "PostToolUse", "session_id": "gone-session", "cwd": str(tmp_path),
               "transcript_path": "/t.jsonl", "tool_name": "Write", "tool_use_id": "t1",
               "tool_input": {"file_path": str(scratch), "content": "x\n"}, "tool_response": {"type": "create"}}
    assert run_hook(payload, cwd=tmp_path).returncode == 0
    records = paths.gc_records_file("gone-session")
    assert records.exists()
    scratch.unlink()
    assert run_cli("gc", "--json").returncode == 0
    assert not records.exists()
    assert not Path(f"{records}.lock").exists(), "the lock file of the records file that went is still there"
