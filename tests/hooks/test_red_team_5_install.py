"""Red team, round five: the install paths. `claudetto setup` from a clone that later moves or
goes, from two clones, next to another tool's look-alike hook, under a managed policy; the
hooks run twice (a project settings file or the plugin naming claudetto too); a project or the
user's environment that tries to get into the hook's interpreter.

Every hook here runs as Claude runs it: the command exactly as written into settings.json (or
hooks.json), through `sh -c`, with the payload on stdin and the project as the current folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT, SandboxEnv, make_repo


def clone_packages(where: Path) -> Path:
    """A copy of claudetto's two packages: a clone the user may later move or delete."""
    where.mkdir(parents=True)
    for name in ("app", "hooks"):
        shutil.copytree(ROOT / name, where / name, ignore=shutil.ignore_patterns("__pycache__"))
    return where


def setup_from(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`claudetto setup` run by the venv's python from `clone` (as `.venv/bin/claudetto` would)."""
    code = f"import sys;sys.path.insert(0,{str(clone)!r});from app.cli import main;sys.exit(main())"
    return subprocess.run([sys.executable, "-I", "-c", code, "setup", *args], capture_output=True,
                          text=True, timeout=60, check=False, env=dict(os.environ))


def settings(sandbox: SandboxEnv) -> dict:
    return json.loads((sandbox.config / "settings.json").read_text())


def commands(sandbox: SandboxEnv, event: str) -> list[str]:
    return [h["command"] for entry in settings(sandbox)["hooks"].get(event, []) for h in entry["hooks"]]


def run_as_claude(command: str, payload: dict, cwd: Path,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True,
                          cwd=str(cwd), timeout=60, check=False, env=env if env is not None else dict(os.environ))


def prompt_payload(cwd: Path, session: str = "s-install") -> dict:
    return {"session_id": session, "transcript_path": "", "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit", "prompt": "hi"}


def edit_payload(cwd: Path, path: Path, session: str = "s-install") -> dict:
    return {"session_id": session, "transcript_path": "", "cwd": str(cwd), "hook_event_name": "PostToolUse",
            "tool_name": "Edit", "tool_input": {"file_path": str(path), "old_string": "a", "new_string": "b"},
            "tool_response": {}, "tool_use_id": "t1"}


# -- the clone moved or deleted after setup ------------------------------------------------

def test_a_deleted_clone_gives_one_clear_line_not_a_traceback(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The venv's python is still there (a system or pyenv one named by setup), claudetto's
    folder is gone: Claude shows a hook error on each event (non-zero exit, as for a missing
    interpreter), so it must be one line saying what to do, never a Python traceback."""
    clone = clone_packages(tmp_path / "src" / "claudetto")
    assert setup_from(clone).returncode == 0
    command = commands(sandbox, "UserPromptSubmit")[0]
    assert str(clone) in command
    shutil.rmtree(clone)
    project = tmp_path / "project"
    project.mkdir()
    for payload in (prompt_payload(project), {**prompt_payload(project), "hook_event_name": "WorktreeCreate",
                                              "name": "feature"}):
        result = run_as_claude(command, payload, project)
        assert result.returncode == 1, result  # WorktreeCreate: Claude aborts the creation
        assert b"Traceback" not in result.stderr
        lines = result.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("claudetto: cannot start from ")
        assert str(clone) in lines[0] and "claudetto setup" in lines[0]
        assert result.stdout == b""


def test_a_moved_interpreter_fails_loud_through_the_shell_without_a_traceback(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The clone moved with its .venv: the interpreter named by absolute path is gone. The shell
    says so (exit 127, a non-blocking hook error on each event; WorktreeCreate aborts), which is
    what tells the user to run setup again from the new place."""
    venv = tmp_path / "old" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    assert (sandbox.config / "settings.json").exists() is False
    code = f"import sys;sys.path.insert(0,{str(ROOT)!r});from app.cli import main;sys.exit(main())"
    done = subprocess.run([sys.executable, "-I", "-c", code, "setup"], capture_output=True, text=True, timeout=60,
                          check=False, env=dict(os.environ))
    assert done.returncode == 0
    command = commands(sandbox, "UserPromptSubmit")[0].replace(sys.executable, str(python), 1)
    ok = run_as_claude(command, prompt_payload(tmp_path), tmp_path)
    assert (ok.returncode, ok.stderr) == (0, b"")
    shutil.move(str(tmp_path / "old"), str(tmp_path / "new"))
    gone = run_as_claude(command, prompt_payload(tmp_path), tmp_path)
    assert gone.returncode == 127 and b"Traceback" not in gone.stderr and gone.stdout == b""


# -- two clones, a look-alike, the user's own edits ----------------------------------------

def test_setup_from_a_second_clone_moves_the_one_entry_and_keeps_the_users_edits(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    first = clone_packages(tmp_path / "a" / "claudetto")
    second = clone_packages(tmp_path / "b" / "claudetto")
    assert setup_from(first).returncode == 0
    data = settings(sandbox)
    data["hooks"]["PostToolUse"][0]["matcher"] = "Edit|Write"
    data["hooks"]["PostToolUse"][0]["hooks"][0]["timeout"] = 5
    (sandbox.config / "settings.json").write_text(json.dumps(data, indent=2))
    assert setup_from(second).returncode == 0
    after = settings(sandbox)
    for event, entries in after["hooks"].items():
        ours = [h["command"] for e in entries for h in e["hooks"]]
        assert len(ours) == 1 and str(second) in ours[0] and str(first) not in ours[0], event
    assert after["hooks"]["PostToolUse"][0]["matcher"] == "Edit|Write"
    assert after["hooks"]["PostToolUse"][0]["hooks"][0]["timeout"] == 5


def test_a_look_alike_hook_of_another_tool_is_neither_taken_over_nor_removed(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`# claudetto` at the end of someone's own command (a note, another tool's hook) does not
    make it ours: setup must not overwrite it, and --uninstall must not delete it."""
    theirs = {"type": "command", "command": "~/bin/notify.sh prompt # claudetto"}
    (sandbox.config / "settings.json").write_text(json.dumps(
        {"hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}}, indent=2))
    assert setup_from(ROOT).returncode == 0
    mine = commands(sandbox, "UserPromptSubmit")
    assert theirs["command"] in mine and len(mine) == 2
    assert setup_from(ROOT, "--uninstall").returncode == 0
    assert settings(sandbox) == {"hooks": {"UserPromptSubmit": [{"hooks": [theirs]}]}}


def test_an_entry_of_the_older_form_is_still_recognised(sandbox: SandboxEnv) -> None:
    old = f"{sys.executable} -P -m hooks # claudetto"
    (sandbox.config / "settings.json").write_text(json.dumps(
        {"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": old}]}]}}, indent=2))
    assert setup_from(ROOT).returncode == 0
    assert commands(sandbox, "SessionEnd") == [commands(sandbox, "SessionStart")[0]]


# -- managed policy ------------------------------------------------------------------------

def test_setup_says_when_the_managed_policy_lets_no_user_hook_run(sandbox: SandboxEnv) -> None:
    """`allowManagedHooksOnly` (or `disableAllHooks`) in the managed settings: Claude runs no
    hook of the user's settings, so setup would look done and nothing would ever run."""
    managed = Path(os.environ["CLAUDETTO_MANAGED_SETTINGS"])
    for policy in ({"allowManagedHooksOnly": True}, {"disableAllHooks": True}):
        managed.write_text(json.dumps(policy))
        done = setup_from(ROOT)
        assert done.returncode == 0
        assert "managed" in done.stdout and next(iter(policy)) in done.stdout, done.stdout
    managed.write_text(json.dumps({"cleanupPeriodDays": 9}))
    assert "managed" not in setup_from(ROOT).stdout


# -- hooks run twice (project settings, or plugin and setup both) ---------------------------

def test_two_runs_of_each_tool_hook_at_once_leave_one_ledger_entry_and_one_record(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    assert setup_from(ROOT).returncode == 0
    command = commands(sandbox, "PostToolUse")[0]
    project = make_repo(tmp_path / "project")
    edited = project / "notes.md"
    edited.write_text("b\n")
    scratch = sandbox.user_tmp / "out.txt"
    scratch.write_text("x\n")
    write = {**edit_payload(project, scratch), "tool_name": "Write",
             "tool_input": {"file_path": str(scratch), "content": "x\n"}}
    for payload in (edit_payload(project, edited), write):
        procs = [subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=str(project)) for _ in range(2)]
        for p in procs:
            out, err = p.communicate(json.dumps(payload).encode(), timeout=60)
            assert (p.returncode, out, err) == (0, b"", b"")
    ledger = json.loads((sandbox.state / "ledger.json").read_text())
    assert json.dumps(ledger).count(str(edited)) == 1
    record = json.loads((sandbox.state / "gc" / "s-install.json").read_text())
    assert json.dumps(record).count(str(scratch)) == 1
    changed = run_as_claude(commands(sandbox, "UserPromptSubmit")[0], prompt_payload(project), project)
    assert changed.returncode == 0 and changed.stdout == b""


def test_two_worktree_creations_of_one_name_at_once_both_name_the_same_checkout(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Plugin and setup both installed: Claude runs both WorktreeCreate hooks in parallel, and
    any non-zero exit aborts the creation."""
    assert setup_from(ROOT).returncode == 0
    command = commands(sandbox, "WorktreeCreate")[0]
    project = make_repo(tmp_path / "project")
    payload = {"session_id": "s-install", "transcript_path": "", "cwd": str(project),
               "hook_event_name": "WorktreeCreate", "name": "agent-a1b2c3d"}
    procs = [subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=str(project)) for _ in range(2)]
    results = [p.communicate(json.dumps(payload).encode(), timeout=120) + (p.returncode,) for p in procs]
    target = str(project / ".claude" / "worktrees" / "agent-a1b2c3d")
    for out, err, code in results:
        assert code == 0, err
        assert out.decode().strip().splitlines()[-1] == target


# -- what a project or the user's environment puts in the interpreter's way -----------------

def hostile_project(tmp_path: Path) -> Path:
    """A project with its own `app/` and `hooks/` packages, a sitecustomize.py and a .pth file,
    each of which would print and exit 3 if it ran in claudetto's hook."""
    project = tmp_path / "hostile"
    bomb = "import sys;print('HIJACKED');sys.exit(3)\n"
    for name in ("app", "hooks"):
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text(bomb)
        (project / name / "__main__.py").write_text(bomb)
        (project / name / "entry.py").write_text(bomb)
    (project / "sitecustomize.py").write_text(bomb)
    (project / "usercustomize.py").write_text(bomb)
    (project / "evil.pth").write_text("import sys;print('HIJACKED');sys.exit(3)\n")
    (project / "startup.py").write_text(bomb)
    return project


def test_a_hostile_project_and_python_variables_do_not_reach_the_setup_entry(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    assert setup_from(ROOT).returncode == 0
    project = hostile_project(tmp_path)
    env = {**os.environ, "PYTHONPATH": f".:{project}", "PYTHONSTARTUP": str(project / "startup.py"),
           "PYTHONHOME": str(tmp_path / "nowhere"), "PYTHONUSERBASE": str(project),
           "PYTHONINSPECT": "1", "PYTHONSAFEPATH": ""}
    for event in ("UserPromptSubmit", "SessionEnd", "PreToolUse"):
        result = run_as_claude(commands(sandbox, event)[0], {**prompt_payload(project), "hook_event_name": event},
                               project, env)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b""), event


def test_claudetto_python_in_the_plugin_keeps_pythonpath_out(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The plugin's CLAUDETTO_PYTHON route: `-P` alone still honours PYTHONPATH, so a `.` there
    (common in a user's shell profile) let the project's own `hooks/` package run instead."""
    project = hostile_project(tmp_path)
    data = tmp_path / "plugin-data"
    data.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDETTO_", "CLAUDE_PLUGIN_"))}
    env.update(CLAUDETTO_MANAGED_SETTINGS=os.environ["CLAUDETTO_MANAGED_SETTINGS"], CLAUDE_PLUGIN_ROOT=str(ROOT),
               CLAUDE_PLUGIN_DATA=str(data), CLAUDETTO_PYTHON=sys.executable, PYTHONPATH=".",
               PYTHONSTARTUP=str(project / "startup.py"))
    launcher = '. "${CLAUDE_PLUGIN_ROOT}/bin/claudetto-hook"'
    result = run_as_claude(launcher, prompt_payload(project), project, env)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    listed = subprocess.run(["sh", "-c", f'sh "{ROOT}/bin/claudetto-hook" sessions --json'], capture_output=True,
                            cwd=str(project), env=env, timeout=60, check=False)
    assert listed.returncode == 0 and "sessions" in json.loads(listed.stdout)


def test_two_cleanups_at_once_remove_each_old_folder_once_and_both_succeed(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Both installs start the session-start cleanup; run in the foreground at the same time,
    neither may fail, and the journal holds each removal once."""
    import uuid

    from tests.support import set_mtime

    folders = []
    for _ in range(20):
        folder = sandbox.claude_tmp / "-work" / str(uuid.uuid4())
        (folder / "scratchpad").mkdir(parents=True)
        (folder / "scratchpad" / "out.txt").write_text("x" * 5000)
        set_mtime(folder, 40 * 86400)
        folders.append(folder)
    code = "import sys;from app.cli import main;sys.exit(main())"
    procs = [subprocess.Popen([sys.executable, "-P", "-c", code, "clean", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=str(tmp_path)) for _ in range(2)]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert (p.returncode, err) == (0, b""), err
        reports.append(json.loads(out))
    assert not any(f.exists() for f in folders)
    assert sum(r["cleaned"]["folders"] for r in reports) == len(folders), reports
    journal = (sandbox.state / "journal.jsonl").read_text().splitlines()
    removed = [json.loads(line)["path"] for line in journal if json.loads(line).get("result") != "missing"]
    for folder in folders:
        assert sum(str(folder) in path for path in removed) == 1, [json.loads(line)["result"] for line in journal]


def test_two_prompt_hooks_at_once_tell_a_change_once(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Both installs run UserPromptSubmit in parallel; Claude joins both contexts, so a changed
    file must be named by one of them only."""
    assert setup_from(ROOT).returncode == 0
    project = make_repo(tmp_path / "project")
    told = 0
    for round_ in range(5):
        edited = project / f"notes{round_}.md"
        edited.write_text("b\n")
        assert run_as_claude(commands(sandbox, "PostToolUse")[0], edit_payload(project, edited), project).returncode == 0
        edited.write_text("changed outside\n")
        command = commands(sandbox, "UserPromptSubmit")[0]
        procs = [subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, cwd=str(project)) for _ in range(2)]
        outs = [p.communicate(json.dumps(prompt_payload(project)).encode(), timeout=60)[0] for p in procs]
        told = sum(out.decode().count(f"`{edited}`") for out in outs)
        assert told == 1, (round_, outs)


def test_setup_from_the_plugins_own_environment_is_refused(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`sh .../bin/claudetto-hook setup` would write entries naming the plugin's venv: every hook
    twice while the plugin is on, and every event failing once its uninstall deletes the venv."""
    venv = tmp_path / "plugin-data" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (venv / "claudetto-entry").write_text("0.1.0 import sys\n")
    code = f"import sys;sys.path.insert(0,{str(ROOT)!r});from app.cli import main;sys.exit(main())"
    for args in ((), ("--dry-run",)):
        done = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", code, "setup", *args], capture_output=True,
                              text=True, timeout=60, check=False, env=dict(os.environ))
        assert done.returncode == 1 and "plugin's own environment" in done.stderr, done
        assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
    assert not (sandbox.config / "settings.json").exists()
    assert setup_from(ROOT, "--uninstall").returncode == 0


def test_a_plugin_data_folder_that_cannot_be_written_is_said_at_session_start(tmp_path: Path) -> None:
    """CLAUDE_PLUGIN_DATA where nothing can be made (here a file in its way; read-only or full
    disks fail the same calls): the launcher's log cannot be written either, so SessionStart is
    the one place left to tell the user why claudetto does nothing; WorktreeCreate fails loud."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    data = blocker / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDETTO_", "CLAUDE_PLUGIN_"))}
    env.update(CLAUDETTO_MANAGED_SETTINGS=os.environ["CLAUDETTO_MANAGED_SETTINGS"], CLAUDE_PLUGIN_ROOT=str(ROOT),
               CLAUDE_PLUGIN_DATA=str(data), CLAUDETTO_HOME=os.environ["CLAUDETTO_HOME"])
    launcher = '. "${CLAUDE_PLUGIN_ROOT}/bin/claudetto-hook"'
    start = run_as_claude(launcher, {**prompt_payload(tmp_path), "hook_event_name": "SessionStart"}, tmp_path, env)
    assert start.returncode == 0 and start.stderr == b""
    said = json.loads(start.stdout)["hookSpecificOutput"]
    assert said["hookEventName"] == "SessionStart" and str(data) in said["additionalContext"]
    assert "inactive" in said["additionalContext"]
    prompt = run_as_claude(launcher, prompt_payload(tmp_path), tmp_path, env)
    assert (prompt.returncode, prompt.stdout, prompt.stderr) == (0, b"", b"")
    create = run_as_claude(launcher, {**prompt_payload(tmp_path), "hook_event_name": "WorktreeCreate",
                                      "name": "feature"}, tmp_path, env)
    assert create.returncode == 1 and create.stderr.decode().startswith("claudetto: worktree not created: ")


def test_two_worktree_removals_at_once_both_say_gone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Both installs run WorktreeRemove in parallel: exit 0 means "gone", so once the folder is
    gone neither may say it kept it."""
    assert setup_from(ROOT).returncode == 0
    project = make_repo(tmp_path / "project")
    base = {"session_id": "s-install", "transcript_path": "", "cwd": str(project)}
    made = run_as_claude(commands(sandbox, "WorktreeCreate")[0],
                         {**base, "hook_event_name": "WorktreeCreate", "name": "agent-a1b2c3d"}, project)
    assert made.returncode == 0, made.stderr
    target = made.stdout.decode().strip().splitlines()[-1]
    command = commands(sandbox, "WorktreeRemove")[0]
    payload = {**base, "hook_event_name": "WorktreeRemove", "worktree_path": target}
    procs = [subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=str(project)) for _ in range(2)]
    results = [p.communicate(json.dumps(payload).encode(), timeout=120) + (p.returncode,) for p in procs]
    assert not Path(target).exists()
    for out, err, code in results:
        assert (code, out, err) == (0, b"", b""), results


def test_the_plugin_builds_in_a_hostile_project_with_python_variables_set(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The first WorktreeCreate waits for the build, which runs in the user's project with the
    user's environment: PYTHONHOME/PYTHONPATH there, or the project's own sitecustomize.py,
    must reach neither the venv's pip nor the hook."""
    clone = tmp_path / "plugin"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    for name in ("bin/claudetto_env.py", "bin/claudetto-hook", "app/core/setup.py"):  # the tree under test
        shutil.copy(ROOT / name, clone / name)
    project = hostile_project(tmp_path)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    data = tmp_path / "plugin-data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDETTO_", "CLAUDE_PLUGIN_"))}
    env.update(CLAUDETTO_MANAGED_SETTINGS=os.environ["CLAUDETTO_MANAGED_SETTINGS"], CLAUDE_PLUGIN_ROOT=str(clone),
               CLAUDE_PLUGIN_DATA=str(data), CLAUDETTO_HOME=os.environ["CLAUDETTO_HOME"],
               PYTHONPATH=f".:{project}", PYTHONHOME=str(tmp_path / "nowhere"))
    launcher = '. "${CLAUDE_PLUGIN_ROOT}/bin/claudetto-hook"'
    made = subprocess.run(["sh", "-c", launcher], input=json.dumps(
        {**prompt_payload(project), "hook_event_name": "WorktreeCreate", "name": "agent-a1b2c3d"}).encode(),
        capture_output=True, cwd=str(project), env=env, timeout=600, check=False)
    assert made.returncode == 0, (made.stderr, (data / "build.log").read_text()[-2000:])
    assert made.stdout.decode().strip().splitlines()[-1] == str(project / ".claude" / "worktrees" / "agent-a1b2c3d")


def test_setup_names_a_project_settings_file_that_runs_claudetto_too(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A project's committed `.claude/settings.json` with a teammate's claudetto entry: Claude
    runs it beside the user's (twice, or a failing path on every event). Setup changes only the
    user's file, so it says where the other one is, and leaves that file alone."""
    project = make_repo(tmp_path / "project")
    sub = project / "src"
    sub.mkdir()
    shared = project / ".claude" / "settings.json"
    shared.parent.mkdir()
    theirs = "/home/alice/claudetto/.venv/bin/python -P -m hooks # claudetto"
    shared.write_text(json.dumps({"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": theirs}]}]}}))
    before = shared.read_bytes()
    code = f"import sys;sys.path.insert(0,{str(ROOT)!r});from app.cli import main;sys.exit(main())"
    done = subprocess.run([sys.executable, "-I", "-c", code, "setup"], capture_output=True, text=True, timeout=60,
                          check=False, env=dict(os.environ), cwd=str(sub))
    assert done.returncode == 0 and f"note: {shared} runs claudetto's hooks too" in done.stdout, done.stdout
    listed = subprocess.run([sys.executable, "-I", "-c", code, "setup", "--json"], capture_output=True, text=True,
                            timeout=60, check=False, env=dict(os.environ), cwd=str(sub))
    assert json.loads(listed.stdout)["also_in"] == [str(shared)]
    assert shared.read_bytes() == before
    shared.write_text(json.dumps({"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "x # claudetto"}]}]}}))
    assert "note:" not in subprocess.run([sys.executable, "-I", "-c", code, "setup"], capture_output=True, text=True,
                                         timeout=60, check=False, env=dict(os.environ), cwd=str(sub)).stdout


def test_setup_names_the_plugin_enabled_by_the_project_and_an_entry_in_the_managed_policy(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = make_repo(tmp_path / "project")
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"enabledPlugins": {"claudetto@claudetto": True}}))
    managed = Path(os.environ["CLAUDETTO_MANAGED_SETTINGS"])
    managed.write_text(json.dumps({"hooks": {"SessionEnd": [{"hooks": [
        {"type": "command", "command": "/opt/claudetto/bin/python -P -m hooks # claudetto"}]}]}}))
    code = f"import sys;sys.path.insert(0,{str(ROOT)!r});from app.cli import main;sys.exit(main())"
    done = subprocess.run([sys.executable, "-I", "-c", code, "setup", "--json"], capture_output=True, text=True,
                          timeout=60, check=False, env=dict(os.environ), cwd=str(project))
    assert json.loads(done.stdout)["also_in"] == [str(local), str(managed)]
    local.write_text(json.dumps({"enabledPlugins": {"claudetto@claudetto": False}}))
    managed.write_text("{not json")
    done = subprocess.run([sys.executable, "-I", "-c", code, "setup", "--json"], capture_output=True, text=True,
                          timeout=60, check=False, env=dict(os.environ), cwd=str(project))
    assert done.returncode == 0 and json.loads(done.stdout)["also_in"] == []


def test_a_build_killed_half_way_is_built_again_from_scratch(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A build killed mid-way (pip killed, the machine shut down between the swap's two renames)
    leaves a half venv.new, a venv.old and no venv: the next event that needs it builds anew,
    and nothing of the half build is left."""
    clone = tmp_path / "plugin"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    for name in ("bin/claudetto_env.py", "bin/claudetto-hook", "app/core/setup.py"):  # the tree under test
        shutil.copy(ROOT / name, clone / name)
    data = tmp_path / "plugin-data"
    for half in ("venv.new", "venv.old"):
        (data / half / "bin").mkdir(parents=True)
        (data / half / "bin" / "python").write_text("#!/bin/sh\nexit 9\n")
        (data / half / "bin" / "python").chmod(0o755)
    (data / "build.lock").write_text("")
    project = make_repo(tmp_path / "project")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDETTO_", "CLAUDE_PLUGIN_"))}
    env.update(CLAUDETTO_MANAGED_SETTINGS=os.environ["CLAUDETTO_MANAGED_SETTINGS"], CLAUDE_PLUGIN_ROOT=str(clone),
               CLAUDE_PLUGIN_DATA=str(data), CLAUDETTO_HOME=os.environ["CLAUDETTO_HOME"])
    launcher = '. "${CLAUDE_PLUGIN_ROOT}/bin/claudetto-hook"'
    made = subprocess.run(["sh", "-c", launcher], input=json.dumps(
        {**prompt_payload(project), "hook_event_name": "WorktreeCreate", "name": "agent-a1b2c3d"}).encode(),
        capture_output=True, cwd=str(project), env=env, timeout=600, check=False)
    assert made.returncode == 0, made.stderr
    assert not (data / "venv.new").exists() and not (data / "venv.old").exists()
    version = json.loads((clone / ".claude-plugin" / "plugin.json").read_text())["version"]
    assert (data / "venv" / "claudetto-entry").read_text().startswith(f"{version} import sys;")


def test_setup_is_not_held_up_by_a_fifo_in_place_of_a_project_or_policy_settings_file(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Setup reads the project's and the policy's settings to name what runs claudetto too: a
    FIFO in their place is passed over, never waited on."""
    project = make_repo(tmp_path / "project")
    (project / ".claude").mkdir()
    os.mkfifo(project / ".claude" / "settings.json")
    policy = tmp_path / "managed-settings.json"
    os.mkfifo(policy)
    code = f"import sys;sys.path.insert(0,{str(ROOT)!r});from app.cli import main;sys.exit(main())"
    done = subprocess.run([sys.executable, "-I", "-c", code, "setup", "--json"], capture_output=True, text=True,
                          timeout=30, check=False, env={**os.environ, "CLAUDETTO_MANAGED_SETTINGS": str(policy)},
                          cwd=str(project))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["also_in"] == [] and answer["managed_block"] is None
