"""Red team, round five: the commands as a person types them, through the installed console
script (`.venv/bin/claudetto`), real git, real files and real signals."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import SandboxEnv, git, make_repo, set_mtime

CLAUDETTO = str(Path(sys.executable).parent / "claudetto")


def cli(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLAUDETTO, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False)


def old_output(sandbox: SandboxEnv, files: int = 400) -> Path:
    """A GC record of a dead session naming a 30-day-old folder in the user's temp folder."""
    big = sandbox.user_tmp / "big"
    for i in range(files // 50):
        (big / f"d{i}").mkdir(parents=True)
        for j in range(50):
            (big / f"d{i}" / f"f{j}").write_text("x" * 100)
    then = time.time() - 30 * 86400
    os.utime(big, (then, then))
    records = sandbox.state / "gc" / "dead1.json"
    records.parent.mkdir(parents=True, exist_ok=True)
    records.write_text(json.dumps({"session": "dead1", "records": [
        {"path": os.path.realpath(big), "kind": "temp", "session": "dead1", "time": 1.0, "cwd": "/nowhere"}]}))
    return big


def snapshot(root: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under `root` with its bytes (a link's target) and mtime in ns."""
    seen: dict[str, tuple[bytes | str, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if os.path.islink(path):
                seen[path] = (os.readlink(path), st.st_mtime_ns)
            elif os.path.isfile(path):
                seen[path] = (Path(path).read_bytes(), st.st_mtime_ns)
            else:
                seen[path] = ("dir", st.st_mtime_ns)
    return seen


# --- the flags as typed ---------------------------------------------------------------------


def test_json_before_the_command_name_is_json_too(sandbox: SandboxEnv) -> None:
    for args in (["--json", "sessions"], ["--json", "gc", "--dry-run"], ["--json", "ledger"]):
        done = cli(*args)
        assert done.returncode == 0, done.stderr
        json.loads(done.stdout)


def test_json_without_a_command_is_a_usage_error_not_the_dashboard() -> None:
    done = cli("--json", timeout=20)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--json goes with a command" in done.stderr


@pytest.mark.parametrize("args", [["gc", "--bogus"], ["sessions", "extra"], ["release", "a", "b"], ["clean", "-x"],
                                  ["release"], ["supersede", "f", "--line", "x", "--correction", "c"]])
def test_unknown_and_missing_arguments_are_usage_errors_without_a_traceback(args: list[str]) -> None:
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr and "usage:" in done.stderr


def test_repeated_flags_are_the_flag_once(sandbox: SandboxEnv) -> None:
    done = cli("gc", "--dry-run", "--dry-run", "--json", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["dry_run"] is True


def test_a_project_after_double_dash_that_starts_with_a_dash_is_a_project(sandbox: SandboxEnv, tmp_path: Path) -> None:
    done = cli("clean", "--json", "--", "-x", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "claudetto clean: no such project folder: -x\n"
    (tmp_path / "-x").mkdir()
    assert cli("clean", "--dry-run", "--", "-x", cwd=tmp_path).returncode == 0


# --- arguments that are not what they should be ----------------------------------------------


@pytest.mark.parametrize("command", ["clean", "worktrees", "memory"])
def test_a_project_that_is_a_file_or_missing_is_one_line_and_no_json(sandbox: SandboxEnv, tmp_path: Path,
                                                                   command: str) -> None:
    (tmp_path / "file").write_text("x")
    for project in ("file", "nope", "loop"):
        if project == "loop":
            os.symlink("loop", tmp_path / "loop")
        done = cli(command, "--json", project, cwd=tmp_path)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == f"claudetto {command}: no such project folder: {project}\n"


@pytest.mark.parametrize("command", ["worktrees", "memory"])
def test_a_newline_in_a_project_name_stays_on_one_line(sandbox: SandboxEnv, tmp_path: Path, command: str) -> None:
    (tmp_path / "a\nCLEANED folders=9").mkdir()
    done = cli(command, "a\nCLEANED folders=9", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and "a\\nCLEANED" in done.stdout


def test_a_project_named_again_through_a_symlink_is_one_project(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".claude" / "worktrees").mkdir(parents=True)
    for name in ("w1", "w2"):
        git(repo, "worktree", "add", "-q", "-b", name, str(repo / ".claude" / "worktrees" / name))
        set_mtime(repo / ".claude" / "worktrees" / name, 40 * 86400)
    os.symlink("repo", tmp_path / "link")
    listed = cli("worktrees", "--json", "repo", "link", "repo/.claude/..", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert sorted(w["name"] for w in json.loads(listed.stdout)["worktrees"]) == ["w1", "w2"]
    cleaned = cli("clean", "--dry-run", "--json", "link", "repo", cwd=tmp_path)
    assert json.loads(cleaned.stdout)["cleaned"]["worktrees"] == 2  # not 4: each counted once


@pytest.mark.parametrize("target", ["main", "root", "home", "dots", "file", "relative", "missing"])
def test_release_of_what_is_no_session_checkout_changes_nothing(sandbox: SandboxEnv, tmp_path: Path,
                                                                target: str) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "node_modules").mkdir()  # scratch a release would delete
    (repo / "node_modules" / "x.js").write_text("x")
    other = tmp_path / "elsewhere"
    other.mkdir()
    path, cwd = {"main": (str(repo), tmp_path), "root": ("/", tmp_path), "home": (str(sandbox.home), tmp_path),
                 "dots": ("repo/node_modules/..", tmp_path), "file": ("README.md", repo),
                 "relative": ("../repo", other), "missing": ("gone", tmp_path)}[target]
    before = snapshot(repo)
    for extra in ([], ["--json"]):
        done = cli("release", path, *extra, cwd=cwd)
        assert done.returncode == 1, done.stderr
        assert done.stderr.count("\n") == 1 and "is not a session checkout claudetto made; left alone" in done.stderr
        if extra:
            assert json.loads(done.stdout)["status"] == "not_managed"  # the one document, then the error line
        else:
            assert done.stdout == ""
    assert snapshot(repo) == before


def test_an_empty_release_path_is_a_usage_error_not_the_current_checkout(sandbox: SandboxEnv,
                                                                        tmp_path: Path) -> None:
    """`claudetto release "$DIR"` with DIR unset, typed inside a session checkout."""
    from app.core import checkouts

    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    made = Path(checkouts.create_checkout(str(repo), "work", "sid-empty").path)
    checkouts.session_ended("sid-empty", "prompt_input_exit")
    (made / "node_modules").mkdir()
    (made / "node_modules" / "x.js").write_text("x")
    for extra in ([], ["--json"]):
        done = cli("release", "", *extra, cwd=made)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == "claudetto release: PATH is empty; name the checkout (. for the current folder)\n"
    assert (made / "node_modules" / "x.js").exists()


def test_demo_refuses_a_relative_project_that_climbs_out_of_the_sandbox(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`--demo` promises nothing of yours is touched: `../../..` reaches your folders as surely
    as an absolute path does."""
    repo = make_repo(tmp_path / "repo")
    (repo / ".claude" / "worktrees").mkdir(parents=True)
    git(repo, "worktree", "add", "-q", "-b", "old", str(repo / ".claude" / "worktrees" / "old"))
    set_mtime(repo / ".claude" / "worktrees" / "old", 40 * 86400)
    climbing = "../" * 60 + str(repo).lstrip("/")
    for args in (["clean", climbing], ["worktrees", "--json", climbing], ["release", climbing + "/.claude/worktrees/old"]):
        done = cli("--demo", *args)
        assert done.returncode == 2 and done.stdout == "", (args, done.stdout)
        assert done.stderr.splitlines()[-1].endswith("inside the sandbox, or leave --demo out")
    assert (repo / ".claude" / "worktrees" / "old" / "README.md").exists()
    assert [p.name for p in sandbox.user_tmp.iterdir() if p.name.startswith("claudetto-demo-")] == []


# --- dry runs and --read-only write nothing -----------------------------------------------------


def test_dry_runs_leave_every_byte_and_mtime_of_the_sandbox(sandbox: SandboxEnv, tmp_path: Path) -> None:
    old_output(sandbox, files=100)
    repo = make_repo(tmp_path / "repo")
    (sandbox.state / "ledger.json").write_text("{bad")
    (sandbox.state / "checkouts.json").write_text("{bad")
    (sandbox.state / "gc" / "dead2.json").write_text("{bad")
    memory = sandbox.config / "projects" / str(repo).replace("/", "-") / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- see notes.md\n")
    log_root = Path(os.path.realpath(sandbox.claude_tmp_root)) / "claudetto"
    before = snapshot(sandbox.root)
    for args in (["gc", "--dry-run"], ["clean", "--dry-run"], ["clean", "--dry-run", ".", "/"],
                 ["release", "--dry-run", "."], ["setup", "--dry-run"], ["setup", "--dry-run", "--uninstall"],
                 ["supersede", "--dry-run", str(memory / "MEMORY.md"), "--line", "1", "--correction", "x"],
                 ["--read-only", "gc"], ["--read-only", "clean"], ["--read-only", "worktrees"],
                 ["--read-only", "ledger"], ["--read-only", "sessions"], ["--read-only", "memory"]):
        done = cli(*args, cwd=repo)
        assert "Traceback" not in done.stderr, (args, done.stderr)
    after = snapshot(sandbox.root)
    # a log line about the corrupt files is the one thing written (logged, never a lost record)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert {p for p in changed if not p.startswith(str(log_root))} <= {str(sandbox.claude_tmp_root)}


# --- concurrency, pipes and signals ------------------------------------------------------------


def test_gc_while_another_gc_holds_the_lock(sandbox: SandboxEnv) -> None:
    lock = sandbox.state / "gc" / "sweep.lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX)\n"
                               "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        for extra in ([], ["--json"]):
            done = cli("gc", *extra)
            assert done.returncode == 1 and done.stdout == ""
            assert done.stderr == "claudetto gc: another GC sweep is running; try again in a moment\n"
    finally:
        holder.kill()
        holder.wait()
    assert cli("gc", "--json").returncode == 0


@pytest.mark.parametrize("args", [["sessions"], ["sessions", "--json"], ["gc"], ["clean", "--dry-run"], ["ledger"]])
def test_a_closed_stdout_is_no_traceback(sandbox: SandboxEnv, args: list[str]) -> None:
    for i in range(40):
        sandbox.write_session(str(i), sessionId=f"s{i}", pid=999_999_00 + i, cwd=f"/x/{i}")
    proc = subprocess.Popen([CLAUDETTO, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in err


def test_ctrl_c_while_the_modules_load_is_one_line() -> None:
    """A Ctrl-C lands while `app.cli` imports argparse: one line, no import traceback."""
    probe = ("import sys\n"
             "class Interrupt:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'argparse':\n"
             "            raise KeyboardInterrupt\n"
             "sys.meta_path.insert(0, Interrupt())\n"
             "from app.cli import main\n")
    done = subprocess.run([sys.executable, "-P", "-c", probe], capture_output=True, text=True, timeout=30, check=False)
    assert done.stderr == "claudetto: interrupted\n"
    assert done.returncode in (-signal.SIGINT, 128 + signal.SIGINT)


@pytest.mark.parametrize("delay", [0.2, 0.35, 0.5])
def test_ctrl_c_during_gc_is_all_or_nothing_and_frees_the_lock(sandbox: SandboxEnv, delay: float) -> None:
    big = old_output(sandbox, files=3000)
    proc = subprocess.Popen([CLAUDETTO, "gc"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    assert proc.returncode in (0, 1, -signal.SIGINT), err
    if big.exists():  # cut short before the folder went: all of it is still there
        assert sum(len(files) for _, _, files in os.walk(big)) == 3000
    again = cli("gc", "--json", timeout=30)  # the lock is free: no "another GC sweep is running"
    assert again.returncode == 0, again.stderr
    assert not big.exists()


def test_gc_lock_file_is_free_after_an_interrupted_sweep(sandbox: SandboxEnv) -> None:
    old_output(sandbox, files=3000)
    proc = subprocess.Popen([CLAUDETTO, "gc"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    lock = sandbox.state / "gc" / "sweep.lock"
    if lock.exists():
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a stray process still holds it
        finally:
            os.close(fd)


# A Ctrl-C that lands after the folder went into the trash and before its `removed` journal line
# is written: the seam raises it exactly there, as the signal handler would.
_CTRL_C_AT_THE_JOURNAL_LINE = """
import sys
from app.core import journal
from app.cli import main
real = journal.append
def append(line, *args, **kwargs):
    if line.get("result") == "removed":
        raise KeyboardInterrupt
    return real(line, *args, **kwargs)
journal.append = append
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_before_the_journal_line_of_a_release_puts_the_scratch_back_at_once(sandbox: SandboxEnv,
                                                                                    tmp_path: Path) -> None:
    from app.core import checkouts

    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    made = Path(checkouts.create_checkout(str(repo), "work", "sid-ctrl-c").path)
    checkouts.session_ended("sid-ctrl-c", "prompt_input_exit")
    for i in range(30):  # over TRASH_MIN_ENTRIES: the folder goes through the trash
        (made / "node_modules" / f"p{i}").mkdir(parents=True)
        for j in range(40):
            (made / "node_modules" / f"p{i}" / f"f{j}").write_text("x")
    done = subprocess.run([sys.executable, "-P", "-c", _CTRL_C_AT_THE_JOURNAL_LINE, "release", str(made)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (1, "claudetto: interrupted\n")
    # nothing journaled as removed, so nothing removed: the folder is back, whole, right away
    assert sum(len(files) for _, _, files in os.walk(made / "node_modules")) == 1200


def test_the_release_after_a_ctrl_c_before_the_journal_line_finishes_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    from app.core import checkouts

    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    made = Path(checkouts.create_checkout(str(repo), "work", "sid-again").path)
    checkouts.session_ended("sid-again", "prompt_input_exit")
    for i in range(30):
        (made / "node_modules" / f"p{i}").mkdir(parents=True)
        for j in range(40):
            (made / "node_modules" / f"p{i}" / f"f{j}").write_text("x")
    cut = subprocess.run([sys.executable, "-P", "-c", _CTRL_C_AT_THE_JOURNAL_LINE, "release", str(made)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert cut.returncode == 1
    assert cli("worktrees", "--json", cwd=repo).stdout.count('"state": "cut_short"') == 1
    again = cli("release", "--json", str(made))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["state"] == "released"
    assert not (made / "node_modules").exists()
    assert [p.name for p in made.iterdir() if "claudetto-kept" in p.name] == []
    lines = [json.loads(line) for line in (sandbox.state / "journal.jsonl").read_text().splitlines()]
    assert [e["result"] for e in lines if e["path"] == str(made / "node_modules") and e["result"] == "removed"] \
        == ["removed"]


def test_a_terminal_of_20_columns_leaves_the_report_lines_whole(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "a-project-with-a-rather-long-name")
    env = {**os.environ, "COLUMNS": "20", "LINES": "5"}
    done = subprocess.run([CLAUDETTO, "clean", "--dry-run"], capture_output=True, text=True, cwd=repo, env=env,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["CLEANED folders=0 bytes=0 files=0 worktrees=0 probes=0", "UNKNOWN_KEPT 0"]
    listed = subprocess.run([CLAUDETTO, "worktrees", str(repo)], capture_output=True, text=True, env=env,
                            timeout=60, check=False)
    assert listed.stdout == f"no worktrees in {repo}/.claude/worktrees\n"


def from_a_removed_folder(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`claudetto ARGS` typed in a folder another shell has removed meanwhile."""
    gone = tmp_path / "gone"
    gone.mkdir()
    return subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone), CLAUDETTO, *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_release_of_a_relative_path_from_a_removed_folder_says_so(sandbox: SandboxEnv, tmp_path: Path) -> None:
    for extra in ([], ["--json"]):
        done = from_a_removed_folder(tmp_path, "release", ".", *extra)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr == "claudetto release: the current folder is gone; give PATH as an absolute path\n"


def test_setup_from_a_removed_folder_works(sandbox: SandboxEnv, tmp_path: Path) -> None:
    done = from_a_removed_folder(tmp_path, "setup", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)


@pytest.mark.parametrize("args", [["sessions"], ["gc", "--dry-run", "--json"], ["clean", "--dry-run"],
                                  ["worktrees", "--json"], ["ledger"], ["memory"]])
def test_the_other_commands_from_a_removed_folder_are_clear(sandbox: SandboxEnv, tmp_path: Path,
                                                            args: list[str]) -> None:
    done = from_a_removed_folder(tmp_path, *args)
    assert "Error" not in done.stderr and "Traceback" not in done.stderr
    if done.returncode:
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == "claudetto memory: the current folder is gone; name a PROJECT\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--version"], ["sessions", "--json"], ["gc", "--dry-run"]])
def test_a_full_disk_under_stdout_is_one_line_and_exit_1(sandbox: SandboxEnv, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([CLAUDETTO, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
                              check=False)
    assert done.returncode == 1
    name = "claudetto" if args == ["--version"] else f"claudetto {args[0]}"
    assert done.stderr == f"{name}: No space left on device\n"


@pytest.mark.parametrize("delay", [0.15, 0.4])
def test_ctrl_c_during_clean_leaves_no_half_removed_worktree(sandbox: SandboxEnv, tmp_path: Path,
                                                           delay: float) -> None:
    repo = make_repo(tmp_path / "repo")
    for i in range(40):
        where = repo / ".claude" / "worktrees" / f"w{i}"
        git(repo, "worktree", "add", "-q", "-b", f"w{i}", str(where))
        set_mtime(where, 40 * 86400)
    proc = subprocess.Popen([CLAUDETTO, "clean", "--json", str(repo)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err
    if proc.returncode:  # caught in `main` (1), or while the modules still loaded: the line from
        # the excepthook, then the interpreter ends itself by the signal, as for any uncaught Ctrl-C
        assert (proc.returncode, out, err) in ((1, "", "claudetto: interrupted\n"), (-signal.SIGINT, "", ""),
                                               (-signal.SIGINT, "", "claudetto: interrupted\n"))
    # each worktree git still lists has its folder, and each folder left is a worktree git lists
    listed = {line.split(" ", 1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
              if line.startswith("worktree ") and "/.claude/worktrees/" in line}
    assert listed == {str(p) for p in (repo / ".claude" / "worktrees").iterdir()}
    again = cli("clean", "--json", str(repo))
    assert again.returncode == 0, again.stderr
    assert list((repo / ".claude" / "worktrees").iterdir()) == []
