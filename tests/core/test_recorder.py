"""The output recorder: each kind, the shell forms Claude writes, and the records file."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from app.core import paths
from app.core.bash_outputs import clone_dir_name, outputs_of_command, read_command
from app.core.gc_records import OutputRecord, read_records
from app.core.recorder import record_outputs
from tests.support import SandboxEnv

CWD = "/work/proj"


def test_reading_alone_never_records_an_unprinted_mktemp_path_nor_its_variable() -> None:
    # The folder's name is never printed and "$d" cannot be expanded: record_outputs looks for
    # it on disk (tests/core/test_mktemp.py); reading the command records nothing.
    assert outputs_of_command('d=$(mktemp -d) && cd "$d"', CWD, "") == []


def test_mktemp_in_an_assignment_then_cd_records_the_printed_path() -> None:
    printed = "/tmp/tmp.Xy12AbCd9Q\n"
    assert outputs_of_command('d=$(mktemp -d -p /tmp) && cd "$d" && pwd', CWD, printed) == [("temp", "/tmp/tmp.Xy12AbCd9Q")]


def test_mktemp_each_printed_path_with_its_template() -> None:
    stdout = "/tmp/build.a1B2c3\nsome noise /tmp/other.zzzzzz\n/tmp/tmp.0123456789\n"
    found = outputs_of_command("mktemp -d /tmp/build.XXXXXX; mktemp -p /tmp", CWD, stdout)
    assert found == [("temp", "/tmp/build.a1B2c3"), ("temp", "/tmp/tmp.0123456789")]


def test_mktemp_relative_template_is_made_absolute_against_the_cwd() -> None:
    assert outputs_of_command("mktemp -d work.XXXX", CWD, "work.Ab12\n") == [("temp", "/work/proj/work.Ab12")]


def test_printed_paths_without_mktemp_are_not_temp_outputs() -> None:
    assert outputs_of_command("ls -d /tmp/*", CWD, "/tmp/tmp.0123456789\n") == []


def test_worktree_add_with_dash_c_relative_path_and_branch_after_it() -> None:
    assert outputs_of_command("git -C repo worktree add ../wt -b x", CWD, "") == [("worktree", "/work/proj/wt")]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git worktree add -b feature /abs/wt main", "/abs/wt"),
        ("git worktree add -B feature wt", "/work/proj/wt"),
        ("git worktree add --detach --lock --reason 'in use' ../x HEAD~1", "/work/x"),
        ("git -C /r -c core.x=1 worktree add -f -- -odd", "/r/-odd"),
        ("git -C a -C b worktree add w", "/work/proj/a/b/w"),
    ],
)
def test_worktree_add_options(command: str, expected: str) -> None:
    assert outputs_of_command(command, CWD, "") == [("worktree", expected)]


def test_worktree_list_and_remove_record_nothing() -> None:
    assert outputs_of_command("git worktree list && git worktree remove wt", CWD, "") == []


def test_clone_with_depth_derives_the_folder_from_the_url() -> None:
    assert outputs_of_command("git clone --depth 1 https://github.com/acme/tool.git", CWD, "") == [
        ("copy", "/work/proj/tool")
    ]


@pytest.mark.parametrize(
    ("url", "bare", "name"),
    [
        ("https://github.com/acme/tool.git", False, "tool"),
        ("https://github.com/acme/tool/", False, "tool"),
        ("git@github.com:acme/tool.git", False, "tool"),
        ("/srv/repos/tool/.git", False, "tool"),
        ("../tool", True, "tool.git"),
        ("host:proj.bundle", False, "proj"),
    ],
)
def test_clone_dir_name(url: str, bare: bool, name: str) -> None:
    assert clone_dir_name(url, bare=bare) == name


def test_clone_with_an_explicit_target_and_valued_options() -> None:
    command = "git clone -b main --origin up --filter=blob:none https://x/y.git /tmp/copy"
    assert outputs_of_command(command, CWD, "") == [("copy", "/tmp/copy")]


def test_cp_recursive_several_sources_records_the_copies_not_the_target_folder() -> None:
    assert outputs_of_command("cp -r a b dest/", CWD, "") == [("copy", "/work/proj/dest/a"),
                                                              ("copy", "/work/proj/dest/b")]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cp -r a b dest", ["/work/proj/dest/a", "/work/proj/dest/b"]),  # several sources: dest is a folder
        ("cp -r src/ /tmp/into/", ["/tmp/into/src"]),  # a target ending in / is a folder
        ("cp -r ../up/src/ ./x/lib /", ["/src", "/lib"]),
        ("cp -r -t /tmp/into a b/c", ["/tmp/into/a", "/tmp/into/c"]),
        ("cp -rt/tmp/into a", ["/tmp/into/a"]),
        ("cp --target-directory=/tmp/into -R a", ["/tmp/into/a"]),
        ("cp -a --target-directory /tmp/into -- -odd", ["/tmp/into/-odd"]),
        ("cp -rT src /tmp/exact/", ["/tmp/exact"]),  # -T: the target is the copy, whatever it ends in
        ("cp -r --no-target-directory src /tmp/exact", ["/tmp/exact"]),
        ("cp a b /tmp/dest", []),  # not recursive: single files, not recorded
        ("cp -f a /tmp/dest", []),
    ],
)
def test_cp_into_a_folder_records_each_copy(command: str, expected: list[str]) -> None:
    assert outputs_of_command(command, CWD, "") == [("copy", path) for path in expected]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ('cp -r "$src" b /tmp/into/', ["/tmp/into/b"]),
        ("cp -r src/* /tmp/into/", []),  # a glob: the names are not known here
        ("cp -r ~ /tmp/into/", []),
        ("cp -r . .. / /tmp/into", []),  # the copy would be the folder itself, or has no name
        ("cp -r --parents a/b /tmp/into", []),
        ('cp -r a "$OUT/"', []),
    ],
)
def test_cp_copies_whose_name_cannot_be_known_are_not_recorded_and_logged(command: str, expected: list[str]) -> None:
    found, notes = read_command(command, CWD, "")
    assert found == [("copy", path) for path in expected]
    assert notes, "the log must say why"


def test_cp_one_source_records_the_target_cp_made(tmp_path: Path) -> None:
    # Really copied, then read as the hook does, after the fact.
    (tmp_path / "src" / "inner").mkdir(parents=True)
    (tmp_path / "notes.txt").write_text("x")
    run = "cp -r src copy && cp -R src/. merged && cp -r notes.txt copy.txt && cp -a src/ slash"
    subprocess.run(["bash", "-c", run], cwd=tmp_path, check=True)
    assert (tmp_path / "copy" / "inner").is_dir() and (tmp_path / "slash" / "inner").is_dir()
    expected = ["copy", "merged", "copy.txt", "slash"]
    assert outputs_of_command(run, str(tmp_path), "") == [("copy", str(tmp_path / name)) for name in expected]


def test_cp_one_source_into_a_folder_that_was_there_records_the_copy_inside(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    shared = tmp_path / "shared"
    (shared / "precious").mkdir(parents=True)
    subprocess.run(["cp", "-r", "src", "shared"], cwd=tmp_path, check=True)
    assert outputs_of_command("cp -r src shared", str(tmp_path), "") == [("copy", str(shared / "src"))]
    # The copy's name unknown and the target a folder: nothing is recorded, the log says why.
    found, notes = read_command('cp -r "$SRC" shared', str(tmp_path), "")
    assert found == [] and any("shared" in note for note in notes)


def test_claude_config_dir_assignment() -> None:
    assert outputs_of_command("CLAUDE_CONFIG_DIR=/x claude -p hi", CWD, "") == [("config", "/x")]


@pytest.mark.parametrize(
    "command",
    ["export CLAUDE_CONFIG_DIR=/x", "env -i CLAUDE_CONFIG_DIR=/x claude", "A=1 CLAUDE_CONFIG_DIR=/x B=2 claude"],
)
def test_claude_config_dir_forms(command: str) -> None:
    assert outputs_of_command(command, CWD, "") == [("config", "/x")]


def test_quoting_spaces_and_separators_inside_quotes() -> None:
    command = "cd /tmp && git clone 'https://x/my repo.git' \"my copy; && |\" && echo '&& git clone u/v'"
    assert outputs_of_command(command, CWD, "") == [("copy", "/tmp/my copy; && |")]


def test_heredoc_body_is_data_not_commands() -> None:
    command = "cat > notes.md <<'EOF'\ngit clone https://x/ghost.git\ncp -r a /tmp/ghost\nEOF\ngit clone https://x/real.git"
    assert outputs_of_command(command, CWD, "") == [("copy", "/work/proj/real")]


def test_heredoc_with_tabs_stripped_and_a_shell_that_runs_it() -> None:
    command = "bash <<-END\n\tgit clone https://x/run.git /tmp/run\n\tEND\ncat <<X\ngit clone u/no.git\nX"
    assert outputs_of_command(command, CWD, "") == [("copy", "/tmp/run")]


def test_chains_pipes_and_subshells() -> None:
    command = "ls | grep x || git clone u/a.git 2>&1 >/dev/null; (cd /b && git clone u/c.git) & git clone u/d.git"
    assert outputs_of_command(command, CWD, "") == [
        ("copy", "/work/proj/a"),
        ("copy", "/b/c"),
        ("copy", "/work/proj/d"),
    ]


def test_a_subshell_does_not_leak_into_a_sibling_substitution() -> None:
    command = "(cd /b && true); x=$(git clone u/v.git); (cd /c; (cd d; git clone u/1.git); git clone u/2.git)"
    assert outputs_of_command(command, CWD, "") == [("copy", "/work/proj/v"), ("copy", "/c/d/1"), ("copy", "/c/2")]


def test_cd_to_an_unknown_folder_makes_later_relative_paths_unknown() -> None:
    found, notes = read_command('cd "$d" && git clone u/rel.git && git clone u/abs.git /tmp/abs', CWD, "")
    assert found == [("copy", "/tmp/abs")]
    assert any("rel" in note for note in notes)


@pytest.mark.parametrize("target", ["~/wt", "$HOME/wt", "${TMP}/wt", "/tmp/$name", "`pwd`/x"])
def test_tilde_and_dollar_paths_are_not_recorded(target: str) -> None:
    found, notes = read_command(f"git worktree add {target}", CWD, "")
    assert found == []
    assert notes, "the log must say why"


@pytest.mark.parametrize("command", ["git clone 'https://x/y.git", 'cp -r "a /tmp/b', "echo $(git clone u/v", "echo `git clone u/v"])
def test_unparseable_commands_record_nothing_and_say_why(command: str) -> None:
    found, notes = read_command(command, CWD, "")
    assert found == []
    assert len(notes) == 1 and notes[0].startswith("cannot read the command")


@pytest.mark.parametrize(
    "command",
    [
        "timeout -k 5 60 git clone -b dev u/v.git /tmp/v",
        "sudo -u me git clone u/v.git /tmp/v",
        "nohup git clone u/v.git /tmp/v > log 2>&1 &",
        "if true; then git clone u/v.git /tmp/v; fi",
        "/usr/bin/git clone u/v.git /tmp/v",
    ],
)
def test_wrappers_and_keywords(command: str) -> None:
    assert outputs_of_command(command, CWD, "") == [("copy", "/tmp/v")]


def test_a_command_without_a_trigger_word_is_not_even_parsed() -> None:
    # An open quote would be a parse error, but nothing here can make an output.
    assert read_command("echo 'oops && ls", CWD, "") == ([], [])


def test_comments_are_not_commands() -> None:
    assert outputs_of_command("echo hi # git clone u/v.git\n# cp -r a /tmp/x", CWD, "") == []


def test_each_path_once() -> None:
    assert outputs_of_command("git clone u/v.git /tmp/v; git clone w/v.git /tmp/v", CWD, "") == [("copy", "/tmp/v")]


# --- record_outputs: the records file -----------------------------------------------------


def _bash(command: str, response: object = None, *, session: str = "s1", cwd: str = CWD) -> dict[str, object]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": session,
        "cwd": cwd,
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": response if response is not None else {"stdout": "", "stderr": "", "interrupted": False},
    }


def test_record_outputs_writes_one_record_per_path(sandbox: SandboxEnv) -> None:
    before = time.time()
    v, wt = sandbox.user_tmp / "v", sandbox.user_tmp / "wt"
    v.mkdir()  # made by "the call": fresh, this user's
    wt.mkdir()
    record_outputs(_bash(f"git clone u/v.git {v}"))
    record_outputs(_bash(f"git clone u/v.git {v} && git worktree add {wt}"))
    data = json.loads(paths.gc_records_file("s1").read_text())
    assert [(r["path"], r["kind"]) for r in data["records"]] == [(str(v), "copy"), (str(wt), "worktree")]
    first = data["records"][0]
    assert first["session"] == "s1" and first["cwd"] == CWD and first["time"] >= before
    records = read_records("s1")
    assert records[0] == OutputRecord(str(v), "copy", "s1", first["time"], CWD)
    assert [r.path for r in read_records()] == [str(v), str(wt)]


def test_bash_output_given_as_a_plain_string(sandbox: SandboxEnv) -> None:
    made = subprocess.run(["mktemp", "-d"], capture_output=True, text=True, check=True).stdout
    record_outputs(_bash("mktemp -d", made))  # a real folder the call made, printed
    assert [(r.kind, r.path) for r in read_records("s1")] == [("temp", os.path.realpath(made.strip()))]


def test_a_command_that_makes_nothing_writes_nothing(sandbox: SandboxEnv) -> None:
    record_outputs(_bash("ls -la && git status"))
    assert not paths.gc_dir().exists()


def test_write_into_the_user_temp_folder_is_scratch(sandbox: SandboxEnv) -> None:
    inside = sandbox.user_tmp / "notes" / "plan.md"
    inside.parent.mkdir()
    inside.write_text("x")  # the Write made it
    payload = {"session_id": "s2", "cwd": CWD, "tool_name": "Write",
               "tool_input": {"file_path": str(inside), "content": "x"}, "tool_response": {"type": "create"}}
    record_outputs(payload)
    outside = dict(payload, tool_input={"file_path": str(sandbox.home / "plan.md"), "content": "x"})
    record_outputs(outside)
    the_root = dict(payload, tool_input={"file_path": str(sandbox.user_tmp), "content": "x"})
    record_outputs(the_root)
    assert [(r.kind, r.path) for r in read_records("s2")] == [("scratch", str(inside))]


def test_write_through_a_symlinked_tmpdir_is_scratch(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    link = sandbox.root / "tmp-link"
    link.symlink_to(sandbox.user_tmp)
    monkeypatch.setenv("TMPDIR", str(link))
    target = link / "x.txt"
    (sandbox.user_tmp / "x.txt").write_text("x")
    record_outputs({"session_id": "s3", "cwd": CWD, "tool_name": "Write", "tool_input": {"file_path": str(target)},
                    "tool_response": {"type": "create"}})
    assert [r.path for r in read_records("s3")] == [str(sandbox.user_tmp / "x.txt")]  # parents resolved


@pytest.mark.parametrize(
    "payload",
    [
        {"tool_name": "Bash", "tool_input": "git clone u/v.git /tmp/v", "session_id": "s"},
        {"tool_name": "Bash", "tool_input": {"command": 7}, "session_id": "s"},
        {"tool_name": "Bash", "tool_input": {"command": "git clone u/v.git /tmp/v"}, "tool_response": 12},
        {"tool_name": "Write", "tool_input": {"file_path": None}, "session_id": "s"},
        {"tool_name": "Bash", "tool_input": {"command": "git clone u/v.git rel"}, "session_id": "s", "cwd": 3},
    ],
)
def test_bad_payloads_never_raise_and_record_nothing(sandbox: SandboxEnv, payload: dict[str, object]) -> None:
    record_outputs(payload)
    assert read_records() == []


def test_no_session_id_is_logged(sandbox: SandboxEnv) -> None:
    (sandbox.user_tmp / "v").mkdir()
    record_outputs({"tool_name": "Bash", "cwd": CWD,
                    "tool_input": {"command": f"git clone u/v.git {sandbox.user_tmp / 'v'}"}})
    assert read_records() == []
    logs = list(Path(paths.log_root()).rglob("*.log"))
    assert any("no session_id" in p.read_text() for p in logs)


def test_unreadable_command_is_logged(sandbox: SandboxEnv) -> None:
    record_outputs(_bash("git clone 'oops"))
    logs = list(Path(paths.log_root()).rglob("*.log"))
    assert any("cannot read the command" in p.read_text() for p in logs)


def test_a_corrupt_records_file_loses_no_new_record(sandbox: SandboxEnv) -> None:
    file = paths.gc_records_file("s1")
    file.parent.mkdir(parents=True)
    file.write_text("{not json")
    (sandbox.user_tmp / "v").mkdir()
    record_outputs(_bash(f"git clone u/v.git {sandbox.user_tmp / 'v'}"))
    assert [r.path for r in read_records("s1")] == [str(sandbox.user_tmp / "v")]
    assert any(name.startswith("s1.json.corrupt-") for name in os.listdir(file.parent))


def test_read_records_skips_bad_entries_and_keeps_good_ones(sandbox: SandboxEnv) -> None:
    file = paths.gc_records_file("s9")
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps({"session": "s9", "records": [
        {"path": "/tmp/a", "kind": "temp", "session": "s9", "time": 5, "cwd": "/p"},
        {"path": "relative", "kind": "temp"},
        {"path": "/tmp/b", "kind": "weird"},
        "junk",
        {"path": "/tmp/c", "kind": "copy", "time": "soon"},
    ]}))
    assert [(r.path, r.session, r.time) for r in read_records()] == [("/tmp/c", "s9", 0.0), ("/tmp/a", "s9", 5.0)]


# --- evidence that the call made a copy or worktree (app/core/created.py) ----------------


def test_without_a_birth_time_the_ctime_and_every_top_entry_must_be_in_the_window(tmp_path: Path) -> None:
    from app.core.created import why_not_made

    fresh = tmp_path / "fresh"
    (fresh / "inner").mkdir(parents=True)
    now = time.time()
    assert why_not_made(str(fresh), now - 60, now + 0.5, merged=False, use_birth=False) is None
    # Content put into what may be a folder that was there: only a birth time can tell.
    assert "no creation time" in str(why_not_made(str(fresh), now - 60, now, merged=True, use_birth=False))
    later = time.time() + 30  # a call that ran after these were made
    assert "there before" in str(why_not_made(str(fresh), later, later, merged=False, use_birth=False))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "old.txt").write_text("mine")
    time.sleep(1.3)  # beyond the 1 s clock slack
    (mixed / "new").mkdir()  # the folder's ctime moves: only the old entry gives it away
    now = time.time()
    assert "'old.txt' in it is older" in str(why_not_made(str(mixed), now, now, merged=False, use_birth=False))


def test_missing_symlinked_and_birth_timed_targets(tmp_path: Path) -> None:
    from app.core.created import birth_time, why_not_made

    now = time.time()
    assert "does not exist" in str(why_not_made(str(tmp_path / "none"), now - 60, now, merged=False))
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert "symlink" in str(why_not_made(str(tmp_path / "link"), now - 60, now + 1, merged=False))
    if birth_time(str(tmp_path / "real")) is None:
        pytest.skip("this file system reports no birth time (statx STATX_BTIME)")
    assert why_not_made(str(tmp_path / "real"), now - 60, now + 1, merged=True) is None
    later = time.time() + 30
    assert "there before the call (created" in str(why_not_made(str(tmp_path / "real"), later, later, merged=True))


def test_cp_one_source_into_a_fresh_target_that_holds_a_child_of_the_same_name(sandbox: SandboxEnv) -> None:
    # `cp -r src copy` where src holds `src/`: cp made `copy`, the reader guesses `copy/src`;
    # the birth time of `copy` settles it.
    from app.core.created import birth_time

    src = sandbox.user_tmp / "src"
    (src / "src").mkdir(parents=True)
    subprocess.run(["cp", "-r", "src", "copy"], cwd=sandbox.user_tmp, check=True)
    record_outputs(_bash("cp -r src copy", cwd=str(sandbox.user_tmp)))
    recorded = [r.path for r in read_records("s1")]
    if birth_time(str(sandbox.user_tmp / "copy")) is None:
        assert recorded == []  # `copy/src` may be merged into a folder that was there: not recorded
    else:
        assert recorded == [str(sandbox.user_tmp / "copy")]
