"""Red team, round fourteen: the hooks' input, the edit ledger (seed 000) and memory writes
(seed 003). Driven as Claude drives them: every hook through `python -P -m hooks` with the
JSON Claude sends on stdin, real files, real processes.

Misses fixed: a hook payload past the 64 MiB read limit (an Edit of a file of tens of
megabytes: Claude sends the whole old file as `tool_response.originalFile`) was dropped
whole, so the model's own edit left the entry at the old content and was told at the next
prompt as the user's change; a prompt past the limit held back every notice. The fields
read whole before the cut are now used. A file grown faster than it is read (a sparse image
extended with ftruncate while the prompt hook hashed it) kept the hook reading and holding
every byte: MemoryError, the change never told; the read now stops past the hash limit.
A memory line of thousands of backticks held the SessionStart sweep and the write lint for
seconds to minutes (the code-span pattern was cubic in a run left open); runs are now
paired once each. A ledger.json a `sudo claude` left as root's (mode 0600) failed every
later edit of the user for good; it is set aside like the lock already was.

Held: every event with a vanished or relative cwd, NUL or newline in paths, a transcript
that is a FIFO or /dev/zero, fields of the wrong type; a cut input naming no event;
ledger.json or its lock truncated, zeroed, a folder, a FIFO, a symlink, another shape;
twenty hooks of two sessions at once, prompts among them; a full disk (the ledger stays
whole, the prompt's line is said again rather than lost).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.hooks.test_ledger_hooks import SID, edit, entries, log_text, prompt
from tests.support import run_hook


def line(path: Path | str, agent: str = "main") -> str:
    return f"The user or a tool changed `{path}` after the last edit of `{agent}`."


def test_an_edit_of_a_big_file_whose_payload_passes_the_read_limit_is_still_recorded(tmp_path: Path) -> None:
    """Claude's Edit sends the whole file as it was (`tool_response.originalFile`) to every
    PostToolUse hook: an edit of a file of tens of megabytes (a lockfile, a data dump) gives a
    payload past the hook's 64 MiB read limit. Its entry must still move to the new content,
    or the model's own edit is told at the next prompt as the user's change."""
    big = tmp_path / "dump.sql"
    body = b"INSERT INTO t VALUES (1, 'row');\n" * (2_100_000)  # ~69 MB
    big.write_bytes(b"-- v1\n" + body)
    edit(big)
    assert str(big) in entries()
    original = big.read_text()
    big.write_bytes(b"-- v2\n" + body)  # the model's second edit
    payload = {"session_id": SID, "transcript_path": "/t.jsonl", "cwd": str(tmp_path),
               "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "Edit",
               "tool_input": {"file_path": str(big), "old_string": "-- v1", "new_string": "-- v2",
                              "replace_all": False},
               "tool_response": {"filePath": str(big), "oldString": "-- v1", "newString": "-- v2",
                                 "originalFile": original, "structuredPatch": [], "userModified": False,
                                 "replaceAll": False},
               "tool_use_id": "toolu_2"}
    data = json.dumps(payload).encode()
    assert len(data) > 64 * 1024 * 1024
    result = run_hook(data, cwd=tmp_path, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert prompt(tmp_path) == "", log_text()[-2000:]
    big.write_bytes(b"-- v3\n" + body)  # and a real change after it is still told
    assert prompt(tmp_path) == line(big)
    os.unlink(big)


def test_a_prompt_past_the_read_limit_still_gets_its_notice(tmp_path: Path) -> None:
    """A prompt longer than the read limit (a pasted dump) cut the hook's input: the notice
    of a change waited, untold, for a shorter prompt. The fields before the prompt name the
    session, which is all the check needs."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    edit(f)
    f.write_text("x = 2\n")
    payload = {"session_id": SID, "transcript_path": "/t.jsonl", "cwd": str(tmp_path),
               "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
               "prompt": "y" * (64 * 1024 * 1024 + 10)}
    result = run_hook(payload, cwd=tmp_path, timeout=60)
    assert result.returncode == 0 and result.stderr == b""
    assert json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] == line(f)
    assert prompt(tmp_path) == ""


def test_a_cut_input_that_names_no_event_before_the_cut_does_nothing(tmp_path: Path) -> None:
    """(Held.) What the cut leaves must be whole members: an input whose event name comes only
    after the cut, or that is a list, does nothing, exit 0, silent."""
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    big = "z" * (64 * 1024 * 1024 + 10)
    for data in (json.dumps({"padding": big, "hook_event_name": "PostToolUse", "tool_name": "Write",
                             "session_id": SID, "tool_input": {"file_path": str(f), "content": "x = 1\n"}}),
                 json.dumps([{"hook_event_name": "UserPromptSubmit"}, big]),
                 '{"hook_event_name": "PostToolUse", "tool_name": "Wri' + big):
        result = run_hook(data, cwd=tmp_path, timeout=60)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert not os.path.exists(os.environ["CLAUDETTO_HOME"] + "/ledger.json")
    assert log_text().count("not read whole; nothing done") == 2


EVENTS = ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse")


def _odd_payloads(tmp_path: Path) -> list[tuple[tuple[str, ...], dict[str, object]]]:
    """(the events it goes to, the odd fields): the common fields to every event, a tool's to
    the tool events, an event's own to it."""
    gone = tmp_path / "gone"
    gone.mkdir()
    gone.rmdir()
    fifo = tmp_path / "transcript.fifo"
    os.mkfifo(fifo)
    memory = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / "-p" / "memory"
    tools = ("PreToolUse", "PostToolUse")
    common: list[dict[str, object]] = [
        {"cwd": str(gone)}, {"cwd": "relative/dir"}, {"cwd": "/a\x00b"}, {"cwd": "/a\nb"}, {"cwd": 7},
        {"transcript_path": str(fifo)}, {"transcript_path": "/dev/zero"},
        {"session_id": None}, {"session_id": {"a": 1}}, {"session_id": "a\x00b"},
        {"agent_id": 5}, {"agent_id": "a1b2c3d", "agent_type": None},
    ]
    tool: list[dict[str, object]] = [
        {"tool_name": None}, {"tool_name": ["Edit"]},
        {"tool_name": "Edit", "tool_input": "x"}, {"tool_name": "Write", "tool_input": None},
        {"tool_name": "Write", "tool_input": {"file_path": str(memory / "a\x00.md"), "content": "x"}},
        {"tool_name": "Write", "tool_input": {"file_path": str(memory / "a\nb.md"), "content": "yesterday"}},
        {"tool_name": "Edit", "tool_input": {"file_path": str(memory / "MEMORY.md"), "old_string": 1}},
        {"tool_name": "MultiEdit", "tool_input": {"file_path": str(memory / "t.md"), "edits": "x"}},
        {"tool_name": "NotebookEdit", "tool_input": {"notebook_path": "/dev/zero"}},
        {"tool_name": "Edit", "tool_input": {"file_path": str(fifo)}, "tool_response": {"filePath": str(fifo)}},
        {"tool_name": "Bash", "tool_input": {"command": ["rm", "-rf", "/"]}, "tool_response": 5},
        {"tool_name": "Bash", "tool_input": {"command": "mktemp -d\x00"}, "tool_response": None},
        {"tool_name": "Write", "tool_input": {"file_path": "/", "content": None}, "tool_response": []},
    ]
    own: list[tuple[tuple[str, ...], dict[str, object]]] = [
        (("SessionStart",), {"source": ["startup"]}), (("SessionEnd",), {"reason": 3}),
        (("UserPromptSubmit",), {"prompt": None}),
    ]
    return [(EVENTS, odd) for odd in common] + [(tools, odd) for odd in tool] + own


def test_every_event_with_odd_fields_exits_0_silent_and_fast(tmp_path: Path) -> None:
    """(Held.) Each of the five events Claude sends with a vanished or relative cwd, a NUL or
    a newline in a path, a transcript that is a FIFO or /dev/zero, fields of the wrong type,
    a memory write with a NUL in its name: exit 0, nothing printed (but a refusal of a memory
    write, one JSON line), no traceback, no hang
    (each call in well under the 30 s Claude gives a prompt hook)."""
    import time

    base = {"session_id": SID, "transcript_path": "/t.jsonl", "cwd": str(tmp_path)}
    for events, odd in _odd_payloads(tmp_path):
        for event in events:
            started = time.monotonic()
            result = run_hook({**base, "hook_event_name": event, **odd}, cwd=tmp_path, timeout=30)
            took = time.monotonic() - started
            out = result.stdout
            if event == "PreToolUse" and out:  # a memory write named with a newline is judged, and may be refused
                assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny" and out.count(b"\n") == 1
                out = b""
            assert (result.returncode, out, result.stderr) == (0, b"", b""), (event, odd, result)
            assert took < 10, (event, odd, took)
    assert "Traceback" not in log_text()


def _intruders(state: Path, user_file: Path) -> dict[str, object]:
    """What can sit where ledger.json (or its lock) belongs, each made by a callable."""
    def folder(p: Path) -> None:
        p.mkdir()
        (p / "inside.txt").write_text("kept\n")

    return {
        "truncated": lambda p: p.write_bytes(b'{"version": 1, "files": {"/x": {"agent": "ma'),
        "nul bytes": lambda p: p.write_bytes(b"\x00" * 4096),
        "a folder": folder,
        "a fifo": lambda p: os.mkfifo(p),
        "a symlink to a user file": lambda p: p.symlink_to(user_file),
        "a dangling symlink": lambda p: p.symlink_to(state / "nowhere" / "x.json"),
        "a list": lambda p: p.write_text("[1, 2, 3]"),
        "a ledger of another shape": lambda p: p.write_text('{"version": 1, "files": [["/x", {}]]}'),
    }


def test_a_ledger_or_lock_file_of_any_odd_kind_loses_no_notice_and_no_byte(tmp_path: Path) -> None:
    """(Held.) ledger.json (or ledger.json.lock) truncated, zeroed, a folder, a FIFO, a symlink
    to a file of the user's, a dangling symlink, JSON of another shape: the prompt hook prints
    nothing and never hangs, the next edit sets the intruder aside (never deletes it, never
    writes through the link) and records, and the change after it is told once."""
    state = Path(os.environ["CLAUDETTO_HOME"])
    user_file = tmp_path / "user-notes.txt"
    user_file.write_text("the user's own notes\n")
    f = tmp_path / "a.py"
    for target in ("ledger.json", "ledger.json.lock"):
        for what, make in _intruders(state, user_file).items():
            for p in state.glob("ledger.json*"):
                if p.is_dir() and not p.is_symlink():
                    import shutil

                    shutil.rmtree(p)
                else:
                    p.unlink()
            state.mkdir(exist_ok=True)
            make(state / target)  # type: ignore[operator]
            f.write_text(f"x = {what!r}\n")
            assert prompt(tmp_path) == "", (target, what)
            edit(f)
            assert entries()[str(f)]["hash"], (target, what)
            f.write_text("x = 'changed'\n")
            assert prompt(tmp_path) == line(f), (target, what)
            assert prompt(tmp_path) == "", (target, what)
            assert user_file.read_text() == "the user's own notes\n", (target, what)
            if target == "ledger.json" and what not in ("a dangling symlink",):
                assert list(state.glob("ledger.json.corrupt-*")), (target, what)
    assert "Traceback" not in log_text()


def _opened_by(pid: int, path: str) -> bool:
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") == path:
                return True
        except OSError:
            pass
    return False


def test_a_file_that_grows_faster_than_it_is_read_is_told_in_bounded_time_and_memory(tmp_path: Path) -> None:
    """A file grown while the prompt hook hashes it (a sparse disk image or a database
    extended with ftruncate, faster than any read) kept the hook reading to its end and
    holding every byte: under a 2 GiB address space the hook died of MemoryError and the
    change was never told (without a cap it ate memory until the growth stopped). The read
    now stops past the hash limit, and the file is told as changed."""
    import resource
    import subprocess
    import sys
    import time

    f = tmp_path / "disk.img"
    f.write_bytes(b"x\n")
    edit(f)
    fd = os.open(f, os.O_WRONLY)
    try:
        os.ftruncate(fd, 100 << 20)  # past the 4 MiB of a short read, under the 256 MiB hash limit
        time.sleep(2.1)  # no racy stat: the grown file's look is a read

        def capped() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

        payload = {"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
                   "transcript_path": "/t.jsonl", "prompt": "go on"}
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-P", "-m", "hooks"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path),
                                preexec_fn=capped)  # noqa: PLW1509 - a limit, set before exec
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        while proc.poll() is None and not _opened_by(proc.pid, str(f)) and time.monotonic() - started < 20:
            pass
        size = 100 << 20
        while proc.poll() is None and time.monotonic() - started < 60 and size < 1 << 40:
            size += 64 << 20  # sparse: no disk used
            os.ftruncate(fd, size)
        proc.wait(timeout=60)
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        os.close(fd)
    assert proc.returncode == 0 and err == b""
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == line(f), log_text()[-500:]
    assert time.monotonic() - started < 60


def test_twenty_hooks_of_two_sessions_at_once_lose_no_entry_and_no_notice(tmp_path: Path) -> None:
    """(Held.) Twenty PostToolUse hooks of two sessions started at once, with a prompt of each
    session among them telling an earlier change: under the ledger's lock no entry is lost, the
    earlier change is told once, and each session is told of its own files only."""
    import subprocess
    import sys

    other = "1c2d3e4f-0000-4000-8000-000000000001"
    early = tmp_path / "early.py"
    early.write_text("e = 1\n")
    edit(early)
    early.write_text("e = 2\n")
    files = {SID: [tmp_path / f"a{n}.py" for n in range(10)], other: [tmp_path / f"b{n}.py" for n in range(10)]}
    payloads: list[dict[str, object]] = []
    for session, names in files.items():
        for f in names:
            f.write_text(f"x = {f.name!r}\n")
            payloads.append({"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(tmp_path),
                             "transcript_path": "/t.jsonl", "tool_name": "Write", "tool_use_id": f"toolu_{f.name}",
                             "tool_input": {"file_path": str(f), "content": f.read_text()},
                             "tool_response": {"type": "create", "filePath": str(f)}})
        payloads.insert(10, {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(tmp_path),
                             "transcript_path": "/t.jsonl", "prompt": "go on"})
    procs = [subprocess.Popen([sys.executable, "-P", "-m", "hooks"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=str(tmp_path)) for _ in payloads]
    for proc, payload in zip(procs, payloads, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
    told = []
    for proc in procs:
        assert proc.wait(timeout=120) == 0
        assert proc.stdout is not None and proc.stderr is not None and proc.stderr.read() == b""
        out = proc.stdout.read()
        if out:
            told.append(json.loads(out)["hookSpecificOutput"]["additionalContext"])
    assert told == [line(early)]
    assert set(entries()) == {str(f) for names in files.values() for f in names} | {str(early)}
    files[SID][3].write_text("x = 'changed'\n")
    files[other][7].write_text("x = 'changed'\n")
    assert prompt(tmp_path) == line(files[SID][3])
    assert prompt(tmp_path, session=other) == line(files[other][7])
    assert prompt(tmp_path) == "" and prompt(tmp_path, session=other) == ""


def test_a_full_disk_keeps_every_entry_and_the_notice_comes_once_there_is_room(tmp_path: Path) -> None:
    """(Held.) The disk fills (a file-size limit stands for it, as `ulimit -f` sets it): an
    edit cannot grow ledger.json, and a prompt cannot store what it told. The ledger stays
    whole (no half file, no temp file left), the failure is logged, the prompt's line still
    comes, and once there is room again the next edit is recorded and its change told once."""
    import resource
    import subprocess
    import sys

    files = [tmp_path / f"f{n:02}.py" for n in range(30)]
    for f in files:
        f.write_text(f"x = {f.name!r}\n")
        edit(f)
    state = Path(os.environ["CLAUDETTO_HOME"])
    before = (state / "ledger.json").read_bytes()
    limit = len(before) + 64  # a new entry does not fit

    def full() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    def hook(payload: dict[str, object]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-P", "-m", "hooks"], input=json.dumps(payload).encode(),
                              capture_output=True, cwd=str(tmp_path), preexec_fn=full,  # noqa: PLW1509
                              timeout=60, check=False)

    new = tmp_path / "new.py"
    new.write_text("n = 1\n")
    done = hook({"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path), "tool_name": "Write",
                 "tool_input": {"file_path": str(new), "content": "n = 1\n"}, "tool_response": {"type": "create"}})
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert (state / "ledger.json").read_bytes() == before
    assert sorted(p.name for p in state.iterdir() if p.name.startswith(".")) == []
    assert "File too large" in log_text()
    files[5].write_text("x = 'changed'\n")
    said = hook({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path), "prompt": "go"})
    assert said.returncode == 0 and said.stderr == b""
    assert json.loads(said.stdout)["hookSpecificOutput"]["additionalContext"] == line(files[5])
    assert prompt(tmp_path) == line(files[5])  # not stored as told on the full disk: said again, not lost
    assert prompt(tmp_path) == ""
    edit(new)
    new.write_text("n = 2\n")
    assert prompt(tmp_path) == line(new)


def test_a_memory_line_of_thousands_of_backticks_blocks_neither_the_lint_nor_the_sweep(tmp_path: Path) -> None:
    """A code span was found with `(`+)(.+?)\\1`, which retried every shorter opener from each
    backtick of a run left open: a memory line of 4,000 backticks held the SessionStart sweep
    6 s and one of 20,000 held the write lint (PreToolUse) 5 minutes, cubic in the run, and
    Claude waits on both. Runs are now paired once each (CommonMark: a run closes at the next
    run of its length), and what a span hides is what it hid."""
    import time

    from app.core.code_spans import CODE_SPAN
    from app.core.memory import sweep
    from app.core.memory_lint import relative_dates
    from tests.support import make_repo

    assert relative_dates("- `yesterday` and ``a ` today`` but tomorrow") == ["tomorrow"]
    assert relative_dates("- ``` left open, yesterday") == ["yesterday"]
    assert [m.group(2) for m in CODE_SPAN.finditer("a `x` b ``y`z`` c ``` d `w`")] == ["x", "y`z", "w"]
    assert CODE_SPAN.sub(lambda m: "`" * len(m.group(0)), "p `ab` q") == "p ```` q"
    started = time.monotonic()
    assert relative_dates("- " + "`" * 20_000 + " yesterday") == ["yesterday"]
    assert time.monotonic() - started < 2
    repo = make_repo(tmp_path / "shop", files={"src/app.py": "x = 1\n"})
    slug = "".join(c if c.isalnum() else "-" for c in str(repo))
    memory = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects" / slug / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- [Notes](notes.md) — notes\n")
    (memory / "notes.md").write_text("---\nname: notes\ndescription: notes\ntype: project\n---\n"
                                     "- " + "`" * 20_000 + "\n- The entry point is `src/gone.py`.\n")
    started = time.monotonic()
    found = sweep(str(repo))
    assert time.monotonic() - started < 5
    assert [(f.kind, f.token) for f in found] == [("vanished_artifact", "src/gone.py")]
    payload = {"hook_event_name": "SessionStart", "session_id": SID, "cwd": str(repo), "source": "startup"}
    started = time.monotonic()
    result = run_hook(payload, cwd=repo, timeout=60)
    assert result.returncode == 0 and b"src/gone.py" in result.stdout
    assert time.monotonic() - started < 10


def test_a_ledger_a_sudo_run_left_as_another_users_is_set_aside_and_edits_are_recorded_again(
        tmp_path: Path) -> None:
    """A `sudo claude` that kept the home wrote ledger.json as root's, mode 0600: every later
    edit of the user failed to read it (PermissionError, logged) and recorded nothing, for
    good, so no change behind the model's back was ever told again. The lock file was set
    aside already; the ledger now is too (kept, renamed), and the next edit starts a new one.
    Here the hook runs as root without the capabilities that read other users' files
    (`setpriv`), and the ledger belongs to uid 65534."""
    import shutil
    import subprocess
    import sys

    import pytest

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to stand for another user")
    state = Path(os.environ["CLAUDETTO_HOME"])
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("a = 1\n")
    edit(first)
    theirs = (state / "ledger.json").read_bytes()
    for name in ("ledger.json", "ledger.json.lock"):
        os.chown(state / name, 65534, 65534)
        os.chmod(state / name, 0o600)

    def hook(payload: dict[str, object]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([setpriv, "--bounding-set=-dac_override,-dac_read_search", sys.executable, "-P", "-m",
                               "hooks"], input=json.dumps(payload).encode(), capture_output=True, cwd=str(tmp_path),
                              timeout=60, check=False)

    second.write_text("b = 1\n")
    done = hook({"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(tmp_path), "tool_name": "Edit",
                 "tool_input": {"file_path": str(second), "old_string": "b = 0", "new_string": "b = 1"},
                 "tool_response": {"filePath": str(second)}})
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    second.write_text("b = 2\n")
    said = hook({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path), "prompt": "go"})
    assert said.returncode == 0 and said.stderr == b""
    assert json.loads(said.stdout)["hookSpecificOutput"]["additionalContext"] == line(second), log_text()[-600:]
    aside = [p for p in state.glob("ledger.json.corrupt-*")]
    assert [p.read_bytes() for p in aside] == [theirs] and aside[0].stat().st_uid == 65534


def test_the_members_of_a_cut_object_are_the_whole_ones_before_the_cut() -> None:
    """(Held.) What a cut input still says: each member read whole, in any spacing, up to the
    one the cut ends in; nothing from a document that is not an object."""
    import pytest

    from app.core.fastjson import JSONError, members

    assert members(' {\n "a" : 1 ,\t"b":{"c":[1,2]}, "d": "x') == {"a": 1, "b": {"c": [1, 2]}}
    assert members('{"a": 1, "b"') == {"a": 1}
    assert members('{"a": 1, "b":') == {"a": 1}
    assert members('{"a": 1,') == {"a": 1}
    assert members('{"a": "\\u00e9\\ud83d\\ude00", "b": tru') == {"a": "\u00e9\U0001F600"}
    assert members('{"a": 1, "a": 2, "z"') == {"a": 2}
    assert members("{") == {} and members('{"a" 1}') == {}
    for text in ("", "[1, 2", '"x"', "nul"):
        with pytest.raises(JSONError):
            members(text)
