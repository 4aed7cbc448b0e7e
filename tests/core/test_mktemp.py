"""A mktemp path the command never printed (`d=$(mktemp -d) && cd "$d"`): found by template
and time. Every case runs the real mktemp in the sandbox, then records as the hook does."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from app.core import paths
from app.core.gc_records import read_records
from app.core.mktemp import read_mktemp, window_s
from app.core.recorder import record_outputs
from tests.support import SandboxEnv

SESSION = "s1"


def run_bash(command: str, cwd: Path) -> str:
    """Run `command` for real (TMPDIR is the sandbox's user temp folder); its stdout."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True,
                          env=dict(os.environ))
    return done.stdout


def post(command: str, cwd: Path, stdout: str = "", **tool_input: object) -> dict[str, object]:
    return {"hook_event_name": "PostToolUse", "session_id": SESSION, "cwd": str(cwd), "tool_name": "Bash",
            "tool_input": {"command": command, **tool_input},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}}


def ran_and_recorded(command: str, cwd: Path, **tool_input: object) -> list[tuple[str, str]]:
    stdout = run_bash(command, cwd)
    record_outputs(post(command, cwd, stdout, **tool_input))
    return [(r.kind, r.path) for r in read_records(SESSION)]


def tmp(sandbox: SandboxEnv) -> Path:
    return Path(os.path.realpath(sandbox.user_tmp))


def entries(folder: Path) -> set[str]:
    return {entry.name for entry in folder.iterdir()}


def log_text() -> str:
    return "".join(p.read_text() for p in Path(paths.log_root()).rglob("*.log"))


def test_mktemp_d_into_a_variable_then_cd_records_the_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    command = 'd=$(mktemp -d) && cd "$d"'
    assert ran_and_recorded(command, tmp_path) == [("temp", str(tmp(sandbox) / name))
                                                    for name in entries(tmp(sandbox))]
    assert len(read_records(SESSION)) == 1
    assert "found by template and time" in log_text()


def test_mktemp_file_into_a_variable(sandbox: SandboxEnv, tmp_path: Path) -> None:
    found = ran_and_recorded('tmpf=$(mktemp) && echo hi > "$tmpf"', tmp_path)
    (name,) = entries(tmp(sandbox))
    assert (tmp(sandbox) / name).is_file() and found == [("temp", str(tmp(sandbox) / name))]


def test_mktemp_dash_t_with_a_template(sandbox: SandboxEnv, tmp_path: Path) -> None:
    found = ran_and_recorded('d=$(mktemp -d -t claude-XXXXXX); cd "$d"', tmp_path)
    (name,) = entries(tmp(sandbox))
    assert name.startswith("claude-") and len(name) == len("claude-XXXXXX")
    assert found == [("temp", str(tmp(sandbox) / name))]


@pytest.mark.parametrize("form", ["-p {dir}", "--tmpdir={dir}", "-p{dir} -d", "-dp {dir} work.XXXX", "{dir}/w.XXX.txt"])
def test_mktemp_into_another_folder(sandbox: SandboxEnv, tmp_path: Path, form: str) -> None:
    other = tmp_path / "other"
    other.mkdir()
    found = ran_and_recorded(f'x=$(mktemp {form.format(dir=other)})', tmp_path)
    (name,) = entries(other)
    assert found == [("temp", str(other / name))]
    assert entries(tmp(sandbox)) == set()


def test_a_relative_template_is_made_against_the_cwd_and_its_cds(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    found = ran_and_recorded("cd sub && d=$(mktemp -d build.XXXXXX)", tmp_path)
    (name,) = entries(tmp_path / "sub")
    assert found == [("temp", str(tmp_path / "sub" / name))]


def test_tmpdir_set_in_the_command_moves_the_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    found = ran_and_recorded(f"export TMPDIR={other}; a=$(mktemp -d); b=$(TMPDIR={tmp_path} mktemp)", tmp_path)
    (dir_name,) = entries(other)
    (file_name,) = [n for n in entries(tmp_path) if n.startswith("tmp.")]
    assert sorted(found) == sorted([("temp", str(other / dir_name)), ("temp", str(tmp_path / file_name))])


def test_tmpdir_set_in_a_subshell_ends_with_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    found = ran_and_recorded(f"(export TMPDIR={other}; true); d=$(mktemp -d)", tmp_path)
    (name,) = entries(tmp(sandbox))
    assert found == [("temp", str(tmp(sandbox) / name))] and entries(other) == set()


def test_two_calls_record_both(sandbox: SandboxEnv, tmp_path: Path) -> None:
    found = ran_and_recorded("a=$(mktemp -d); b=$(mktemp -d)", tmp_path)
    assert sorted(p for _, p in found) == sorted(str(tmp(sandbox) / n) for n in entries(tmp(sandbox)))
    assert len(found) == 2


def test_what_does_not_fit_is_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # Fresh entries that do not fit `mktemp -d`: a name that is not the template's, a file where
    # -d makes a folder, a symlink; the folder it really made is the only record.
    (tmp(sandbox) / "tmp.short").mkdir()
    (tmp(sandbox) / "cache.ABCDEFGHIJ").mkdir()
    (tmp(sandbox) / "tmp.FILEabcdef").write_text("x")
    (tmp(sandbox) / "tmp.LINKabcdef").symlink_to(tmp_path)
    (tmp(sandbox) / "tmp.ab-defghij").mkdir()  # a character mktemp never uses
    before = entries(tmp(sandbox))
    found = ran_and_recorded('d=$(mktemp -d) && cd "$d"', tmp_path)
    (made,) = entries(tmp(sandbox)) - before
    assert found == [("temp", str(tmp(sandbox) / made))]


def test_a_folder_where_mktemp_makes_a_file_is_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp(sandbox) / "tmp.DIRabcdefg").mkdir()
    found = ran_and_recorded("f=$(mktemp)", tmp_path)
    (made,) = entries(tmp(sandbox)) - {"tmp.DIRabcdefg"}
    assert found == [("temp", str(tmp(sandbox) / made))]


def test_an_entry_older_than_the_call_window_is_not_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # ctime cannot be set back, so the window shrinks instead: a 50 ms call, checked 300 ms later.
    run_bash("d=$(mktemp -d)", tmp_path)
    time.sleep(0.3)
    record_outputs(post("d=$(mktemp -d)", tmp_path, timeout=50))
    assert read_records(SESSION) == []
    assert "nothing in" in log_text()


def test_a_path_another_session_recorded_still_counts_as_a_candidate(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # two fit, one call: which is this call's is unknown, so neither is taken (whichever hook
    # runs first must not decide whose folder is whose)
    printed = run_bash("mktemp -d", tmp_path)
    record_outputs({**post("mktemp -d", tmp_path, printed), "session_id": "other"})
    assert [r.path for r in read_records("other")] == [printed.strip()]
    assert ran_and_recorded('d=$(mktemp -d) && cd "$d"', tmp_path) == []
    assert "2 entries" in log_text()


def test_a_printed_path_is_taken_from_stdout_and_nothing_is_looked_for(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp(sandbox) / "tmp.Unrelated0").mkdir()  # fresh and fitting: only a search would find it
    found = ran_and_recorded('d=$(mktemp -d) && echo "made $d"', tmp_path)
    (made,) = entries(tmp(sandbox)) - {"tmp.Unrelated0"}
    assert found == [("temp", str(tmp(sandbox) / made))]


def test_more_fresh_candidates_than_calls_record_none_and_say_why(sandbox: SandboxEnv, tmp_path: Path) -> None:
    run_bash("mktemp -d >/dev/null; mktemp -d >/dev/null", tmp_path)
    found = ran_and_recorded('d=$(mktemp -d) && cd "$d"', tmp_path)
    assert found == [] and len(entries(tmp(sandbox))) == 3
    assert "3 entries" in log_text() and "only as many as the calls is a guess" in log_text()


def test_dry_run_and_failing_calls_record_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp(sandbox) / "tmp.Fresh00000").mkdir()
    record_outputs(post("d=$(mktemp -u); e=$(mktemp -d -t nox 2>/dev/null); f=$(mktemp --help)", tmp_path))
    assert read_records(SESSION) == []


def test_a_folder_that_cannot_be_expanded_is_logged(sandbox: SandboxEnv, tmp_path: Path) -> None:
    record_outputs(post('d=$(mktemp -d -p "$WORK")', tmp_path))
    assert read_records(SESSION) == []
    assert "cannot be expanded" in log_text()


# --- reading the options ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "folder", "name", "directory"),
    [
        ([], "TMP", "tmp.AbCdEf0123", False),
        (["-d"], "TMP", "tmp.AbCdEf0123", True),
        (["-dt", "claude-XXXXXX"], "TMP", "claude-a1B2c3", True),
        (["-t", "-p", "/elsewhere", "x.XXX"], "TMP", "x.abc", False),  # -t: $TMPDIR wins over -p
        (["-p", "/elsewhere", "x.XXX"], "/elsewhere", "x.abc", False),
        (["--tmpdir", "x.XXX"], "TMP", "x.abc", False),
        (["--tmp=/e", "--dir", "x.XXX"], "/e", "x.abc", True),  # long options by unique prefix
        (["work/b.XXXXX.log"], "/cwd/work", "b.q1w2e.log", False),
        (["--suffix=.txt", "/abs/fXXX"], "/abs", "fabc.txt", False),
        (["-q", "--", "/abs/-fXXX"], "/abs", "-fabc", False),
    ],
)
def test_read_mktemp(args: list[str], folder: str, name: str, directory: bool) -> None:
    call = read_mktemp(args, "/cwd", "/tmpdir")
    assert call is not None
    assert call.folder == ("/tmpdir" if folder == "TMP" else folder)
    assert call.pattern.fullmatch(name) and call.directory is directory


@pytest.mark.parametrize(
    "args",
    [["-u"], ["--dry-run", "-d"], ["x.XX"], ["fooXXXbarXX"], ["-t", "a/x.XXX"], ["-p", "/d", "/abs/x.XXX"],
     ["--suffix=.t", "xXXXy"], ["--suffix=/a", "xXXX"], ["-z"], ["a.XXX", "b.XXX"], ["--help"], ["-p"]],
)
def test_read_mktemp_calls_that_make_nothing(args: list[str]) -> None:
    assert read_mktemp(args, "/cwd", "/tmpdir") is None


def test_the_default_template_does_not_fit_other_lengths() -> None:
    call = read_mktemp(["-d"], "/cwd", "")
    assert call is not None and call.folder == "/tmp"
    assert not call.pattern.fullmatch("tmp.abc") and not call.pattern.fullmatch("tmp.AbCdEf01234")


@pytest.mark.parametrize(("value", "seconds"), [(None, 120.0), (5000, 5.0), (10**9, 600.0), (-1, 120.0),
                                                (True, 120.0), ("60000", 120.0)])
def test_window_is_the_bash_timeout(value: object, seconds: float) -> None:
    assert window_s({} if value is None else {"timeout": value}) == seconds
