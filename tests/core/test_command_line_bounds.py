"""The Bash command reader is linear and bounded, whatever the model wrote.

Each adversarial command is read as the recorder reads it (read_bash), and its CPU time is
bounded generously (1 s for a command at the size limit; the machine may be loaded, so the
bound is on this process's CPU time, not the wall clock). The results stay right at any
depth: a clone at the bottom of 20,000 nested substitutions is still found.
"""

from __future__ import annotations

import resource
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core import paths
from app.core.bash_outputs import (
    MAX_MKTEMP_CALLS,
    MAX_NESTED_SHELLS,
    MAX_NOTES,
    MAX_OUTPUTS,
    read_bash,
)
from app.core.command_line import (
    MAX_COMMAND_CHARS,
    MAX_PATH_CHARS,
    Unreadable,
    split_commands,
    split_words,
)
from app.core.gc_records import read_records
from app.core.recorder import record_outputs
from tests.support import SandboxEnv, run_hook

CWD = "/work/proj"
LIMIT = MAX_COMMAND_CHARS
MB = 1024 * 1024
T = TypeVar("T")


def cpu_of(read: Callable[[], T]) -> tuple[float, T]:
    start = time.process_time()
    result = read()
    return time.process_time() - start, result


def fill(unit: str, room: int = LIMIT) -> str:
    """`unit` repeated to just under `room` characters."""
    return unit * (room // len(unit))


def log_text() -> str:
    return "".join(p.read_text() for p in Path(paths.log_root()).rglob("*.log"))


# --- adversarial commands at the size limit -----------------------------------------------

CLONE = "git clone u/v.git /x"

ADVERSARIAL: list[tuple[str, Callable[[], str], list[tuple[str, str]], str | None]] = [
    # (name, command, outputs, a note that must be there)
    ("cp chain", lambda: fill("cp -r a b; "), [("copy", f"{CWD}/b")], None),
    ("30,000 ( around a command", lambda: "(" * 30_000 + "cp -r a b" + ")" * 30_000, [("copy", f"{CWD}/b")], None),
    ("( to the limit", lambda: "cp -r a b; " + fill("(", LIMIT - 20), [("copy", f"{CWD}/b")], None),
    ("( subshells each with a command", lambda: fill("(cp -r a b;", LIMIT - 20), [("copy", f"{CWD}/b")], None),
    ("30,000 open $(", lambda: "cp " + "$(" * 30_000, [], "cannot read the command (unbalanced $( ))"),
    ("$( to the limit", lambda: "cp " + fill("$(", LIMIT - 10), [], "cannot read the command"),
    ("30,000 nested $( with a clone inside", lambda: "echo " + "$(" * 30_000 + CLONE + ")" * 30_000,
     [("copy", "/x")], None),
    ("nested \"$( with a clone inside", lambda: "echo " + '"$(' * 20_000 + CLONE + ')"' * 20_000,
     [("copy", "/x")], None),
    ("open \"$( to the limit", lambda: "cp " + fill('"$(', LIMIT - 10), [], "cannot read the command"),
    ("nested $(( arithmetic", lambda: "cp -r a b; echo $((" + "(" * 60_000 + "1" + ")" * 60_000 + "))",
     [("copy", f"{CWD}/b")], None),
    ("backticks", lambda: fill("`cp -r a b` "), [("copy", f"{CWD}/b")], None),
    ("an open backtick", lambda: "cp -r a b " + fill("\\` ", LIMIT - 20) + "`", [], "unbalanced backtick"),
    ("escaped quotes in one word", lambda: 'cp -r "' + fill('\\"', LIMIT - 20) + '" b', [("copy", f"{CWD}/b")], None),
    ("an open double quote", lambda: 'cp -r "' + fill("a\\\"", LIMIT - 20), [], "unbalanced double quote"),
    ("one word source", lambda: "cp -r " + "a" * (LIMIT - 20) + " b", [("copy", f"{CWD}/b")], None),
    ("one word target", lambda: "cp -r a " + "b" * (LIMIT - 20), [], "not recorded"),
    ("many words", lambda: "cp -r " + fill("a ", LIMIT - 20) + "dest/", [("copy", f"{CWD}/dest/a")], None),
    ("many assignments", lambda: fill("A=1 ", LIMIT - 40) + CLONE, [("copy", "/x")], None),
    ("many redirections", lambda: fill("2>&1 >x ", LIMIT - 40) + CLONE, [("copy", "/x")], None),
    ("a heredoc body of commands", lambda: "cat <<EOF\n" + fill("cp -r a b\n", LIMIT - 40) + "EOF\n" + CLONE,
     [("copy", "/x")], None),
    ("many heredoc operators", lambda: "cp -r a b " + fill("<<E ", LIMIT - 40) + "\nE\n", [("copy", f"{CWD}/b")], None),
    ("quoted heredoc delimiters, paired", lambda: "cp -r a b; cat " + "<<'E " * 50_000, [("copy", f"{CWD}/b")], None),
    ("quoted heredoc delimiters, one open", lambda: "cp -r a b; cat " + "<<'E " * 50_001, [], "cannot read the command"),
    ("a shell's heredoc", lambda: "bash <<EOF\n" + fill("cp -r a b\n", LIMIT - 40) + "EOF\n", [("copy", f"{CWD}/b")], None),
    ("shells in shells' heredocs", lambda: "".join(f"bash <<E{i}\n" for i in range(9_000)) + CLONE + "\n"
     + "".join(f"E{i}\n" for i in reversed(range(9_000))), [], "nested deeper than"),
    ("semicolons", lambda: "cp -r a b" + fill(";", LIMIT - 20), [("copy", f"{CWD}/b")], None),
    ("newlines", lambda: "cp -r a b" + fill("\n", LIMIT - 20), [("copy", f"{CWD}/b")], None),
    ("comments", lambda: fill("cp -r a b # x\n", LIMIT - 20), [("copy", f"{CWD}/b")], None),
    ("backslashes", lambda: "cp -r a b; echo " + fill("\\\\", LIMIT - 20), [("copy", f"{CWD}/b")], None),
]


@pytest.mark.parametrize(("name", "build", "outputs", "note"), ADVERSARIAL, ids=[case[0] for case in ADVERSARIAL])
def test_an_adversarial_command_is_read_in_bounded_time(
        name: str, build: Callable[[], str], outputs: list[tuple[str, str]], note: str | None) -> None:
    command = build()
    assert len(command) <= LIMIT, "the case must be read, not skipped"
    cpu, result = cpu_of(lambda: read_bash(command, CWD, ""))
    for _ in range(2):  # a loaded machine (CI's workers on two cores) can double one measure: the best of three
        if cpu < 1.0:
            break
        cpu = min(cpu, cpu_of(lambda: read_bash(command, CWD, ""))[0])
    found, notes, _, _ = result
    assert cpu < 1.0, f"{name}: {cpu:.2f} s of CPU"
    assert found == outputs
    if note is not None:
        assert any(note in line for line in notes), notes
    assert all(len(line) < 1000 for line in notes), "a note quotes a word cut short"


def test_reading_time_grows_linearly() -> None:
    """Doubling the command about doubles the time (quadratic would be 4x): measured on the
    shapes that were quadratic (a chain, nested substitutions, subshells)."""
    for unit, tail in (("cp -r a b; ", ""), ("$(", ")"), ("(cp -r a b;", "")):
        small = unit * 6_000 + tail * (6_000 if tail else 0)
        big = unit * 24_000 + tail * (24_000 if tail else 0)
        read_bash(small, CWD, "")  # warm up (regular expressions compiled)
        small_cpu = min(cpu_of(lambda c=small: read_bash(c, CWD, ""))[0] for _ in range(3))  # type: ignore[misc]
        big_cpu = min(cpu_of(lambda c=big: read_bash(c, CWD, ""))[0] for _ in range(3))  # type: ignore[misc]
        assert big_cpu < 10 * max(small_cpu, 0.005), (unit, small_cpu, big_cpu)  # 4x the input


# --- over the size limit: not read at all -------------------------------------------------


def test_a_command_over_the_limit_is_skipped_and_says_so() -> None:
    command = fill("cp -r a b; ", MB)
    cpu, result = cpu_of(lambda: read_bash(command, CWD, ""))
    assert cpu < 0.1
    assert result == ([], [f"command not read: {len(command)} characters, more than {LIMIT}; nothing recorded"], [], {})
    just_over = "cp -r a b;" + "x" * (LIMIT - 9)
    assert read_bash(just_over, CWD, "")[1][0].startswith("command not read")
    at_limit = "cp -r a b;" + "x" * (LIMIT - 10)
    assert read_bash(at_limit, CWD, "")[0] == [("copy", f"{CWD}/b")]


def test_record_outputs_skips_a_megabyte_command_quickly_and_logs_it(sandbox: SandboxEnv) -> None:
    (sandbox.user_tmp / "b").mkdir()  # as if the command made it: still not recorded
    command = fill(f"cp -r a {sandbox.user_tmp / 'b'}; ", MB)
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(sandbox.root), "tool_name": "Bash",
               "tool_input": {"command": command}, "tool_response": {"stdout": ""}}
    cpu, _ = cpu_of(lambda: record_outputs(payload))
    assert cpu < 0.1
    assert read_records() == []
    assert "command not read" in log_text()


def _hook_cpu(payload: dict[str, Any], cwd: Path) -> tuple[float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = run_hook(payload, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), done.returncode


def test_the_hook_skips_a_megabyte_command_within_100_ms_of_a_small_one(sandbox: SandboxEnv, tmp_path: Path) -> None:
    def post(command: str) -> dict[str, object]:
        return {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Bash",
                "tool_input": {"command": command}, "tool_response": {"stdout": "", "stderr": ""}}

    small = min(_hook_cpu(post("cp -r a b"), tmp_path)[0] for _ in range(3))
    big, code = min(_hook_cpu(post(fill("cp -r a b; ", MB)), tmp_path) for _ in range(3))
    assert code == 0
    assert big < small + 0.1, f"the hook took {big:.3f} s of CPU for 1 MB, {small:.3f} s for a small command"
    assert read_records() == []
    assert "command not read" in log_text()


def test_the_hook_reads_a_command_at_the_limit_within_a_second(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp_path / "made").mkdir()  # what the command made, just now
    command = fill("cp -r a b; ", LIMIT - 100) + "git clone u/v.git made"
    payload = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_input": {"command": command}, "tool_response": {"stdout": ""}}
    cpu, code = _hook_cpu(payload, tmp_path)
    assert code == 0 and cpu < 1.0
    assert [(r.kind, r.path) for r in read_records("s1")] == [("copy", str(tmp_path / "made"))]


# --- what one command may name is bounded too ----------------------------------------------


def test_outputs_past_the_cap_are_left_out_and_said() -> None:
    command = "".join(f"cp -r a d{i}; " for i in range(MAX_OUTPUTS + 50))
    found, notes, _, _ = read_bash(command, CWD, "")
    assert found == [("copy", f"{CWD}/d{i}") for i in range(MAX_OUTPUTS)]
    assert f"50 more outputs of the command not recorded: at most {MAX_OUTPUTS} are read per command" in notes


def test_notes_are_each_said_once_and_bounded() -> None:
    same = read_bash(fill('cp -r a "$OUT/"; ', 20_000), CWD, "")[1]
    assert len(same) == 1
    many = read_bash("".join(f'cp -r a "$OUT{i}/"; ' for i in range(MAX_OUTPUTS)), CWD, "")[1]
    assert len(many) == MAX_NOTES + 1 and many[-1].endswith("more notes on this command left out")


def test_mktemp_calls_past_the_cap_are_left_out_and_said() -> None:
    command = "".join(f"mktemp -d x{i}.XXXX; " for i in range(MAX_MKTEMP_CALLS + 5)) + fill("mktemp -d; ", 50_000)
    _, notes, unprinted, _ = read_bash(command, CWD, "")
    assert len(unprinted) == MAX_MKTEMP_CALLS
    assert any(note.startswith("6 more mktemp calls") for note in notes)  # 5 more templates, and the default one


def test_shells_in_shells_heredocs_are_read_to_a_depth() -> None:
    def nested(depth: int) -> str:
        return ("".join(f"bash <<E{i}\n" for i in range(depth)) + CLONE + "\n"
                + "".join(f"E{i}\n" for i in reversed(range(depth))))

    assert read_bash(nested(MAX_NESTED_SHELLS), CWD, "") == ([("copy", "/x")], [], [], {"/x": (False, None)})
    found, notes, _, _ = read_bash(nested(MAX_NESTED_SHELLS + 1), CWD, "")
    assert found == [] and notes == [f"a shell's heredoc nested deeper than {MAX_NESTED_SHELLS} not read"]


def test_a_cd_chain_is_followed_to_the_path_limit_then_unknown() -> None:
    deep = "cd a && " * 2_000 + "cp -r x y"
    cpu, result = cpu_of(lambda: read_bash(deep, "/w", ""))
    assert cpu < 1.0
    assert result[0] == [("copy", "/w" + "/a" * 2_000 + "/y")]
    too_deep = "cd a && " * (MAX_PATH_CHARS // 2) + "cp -r x y && cp -r x /abs/y"
    found, notes, _, _ = read_bash(too_deep, "/w", "")
    assert found == [("copy", "/abs/y")]
    assert any("not recorded: it cannot be expanded here" in note for note in notes)


def test_a_cd_chain_through_real_symlinks_resolves_as_realpath(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "in").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real / "in")
    (real / "link").symlink_to(real / "in")  # so `cd link && cd ..` lands in real/ each round
    command = "cd link && cd .. && " * 300 + "cp -r x y && cd link && cp -r x z"
    cpu, result = cpu_of(lambda: read_bash(command, str(tmp_path), ""))
    assert cpu < 1.0
    assert result[0] == [("copy", str(real / "y")), ("copy", str(real / "in" / "z"))]


def test_resolving_with_a_cache_agrees_with_realpath(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "up").symlink_to("..")
    (tmp_path / "a" / "loop").symlink_to("loop")
    (tmp_path / "file").write_text("x")
    cache: dict[str, str] = {}
    for rel in ["a/b/c", "a/up/a/b", "a/up/../a", "a/b/../../a/./b/x", "a/loop/x", "file/x/..", "a//b/", "nope/../a",
                "a/up/up/up/b", "a/b/" + "../b/" * 50 + "q"]:
        path = f"{tmp_path}/{rel}"
        assert paths.resolve_parents(path, cache) == paths.resolve_parents(path), rel


# --- results stay right: the parser's semantics ------------------------------------------


def test_substitutions_run_before_the_command_that_holds_them() -> None:
    segments = split_commands('a $(b; c `d`) "e $(f)"; g')
    assert [s.text for s in segments] == ["b", "d", "c $__subst__", "f", 'a $__subst__ "e $__subst__"', "g"]
    b, d, c, f, a, g = segments
    assert (a.depth, g.depth, b.depth, c.depth, d.depth, f.depth) == (0, 0, 1, 1, 2, 1)
    assert d.scope is not None
    assert b.scope is c.scope and d.scope.parent is c.scope and f.scope is not b.scope


def test_a_here_string_is_not_a_heredoc() -> None:
    command = 'cat <<< "x"\ngit clone u/v.git /x\nx'
    assert read_bash(command, CWD, "")[0] == [("copy", "/x")]


def test_a_heredoc_inside_a_substitution_is_data() -> None:
    command = "out=$(cat <<'EOF'\ngit clone u/ghost.git /ghost )\nEOF\n) && git clone u/v.git /x"
    assert read_bash(command, CWD, "")[0] == [("copy", "/x")]


def test_a_heredoc_delimiter_is_unquoted_as_the_shell_does() -> None:
    command = "cat <<'E'\"O\"\\F\ncp -r a /ghost\nEOF\ncp -r a /real"
    assert read_bash(command, CWD, "")[0] == [("copy", "/real")]


DEEP = {"$(": "$(" * 100_000, '"$(': '"$(' * 50_000, "`$(`": "`" + "$(" * 50_000 + "`", "$((": "$((" * 50_000,
        "( then '": "; " + "(" * 100_000 + "'"}


@pytest.mark.parametrize("shape", list(DEEP))
def test_deep_unreadable_commands_say_so_never_hit_the_recursion_limit(shape: str) -> None:
    # A RecursionError is no ValueError: read_bash would let it out, and the hook log a failure.
    found, notes, _, _ = read_bash("cp " + DEEP[shape], CWD, "")
    assert found == [] and len(notes) == 1 and notes[0].startswith("cannot read the command")


def test_unreadable_is_a_value_error_with_the_reason() -> None:
    with pytest.raises(Unreadable, match="unbalanced"):
        split_commands("echo $(" * 100 + "x")
    assert issubclass(Unreadable, ValueError)


# --- words, as shlex.split gives them -----------------------------------------------------

_WORD_TEXT = st.text(alphabet=st.sampled_from(list("ab '\"\\\t\n\r$#é\x0b")), max_size=24)


def _shlex_or_error(text: str) -> object:
    try:
        return shlex.split(text, posix=True)
    except ValueError as exc:
        return ("error", str(exc))


def _words_or_error(text: str) -> object:
    try:
        return split_words(text)
    except Unreadable as exc:
        return ("error", str(exc))


@settings(max_examples=3000, deadline=None)
@given(_WORD_TEXT)
def test_words_are_split_exactly_as_shlex_splits_them(text: str) -> None:
    assert _words_or_error(text) == _shlex_or_error(text)


@pytest.mark.parametrize("text", ["a 'b c' \"d \\\" e\" f\\ g", "''", 'x"" ""', 'a\\\nb', '"\\$x \\\\ \\a"', "a\\", '"a\\'])
def test_words_of_known_shapes(text: str) -> None:
    assert _words_or_error(text) == _shlex_or_error(text)


@pytest.mark.parametrize(("text", "word"), [("a" * MB, "a" * MB), ('"' + "a" * MB + '"', "a" * MB),
                                           ("'" + "a" * MB + "'", "a" * MB), ("\\a" * (MB // 2), "a" * (MB // 2)),
                                           ('"' + '\\"' * (MB // 2) + '"', '"' * (MB // 2))])
def test_a_megabyte_word_is_split_in_linear_time(text: str, word: str) -> None:
    cpu, words = cpu_of(lambda: split_words(text))
    assert cpu < 1.0
    assert words == [word]
