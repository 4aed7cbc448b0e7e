"""The output GC attacked a seventeenth time. Ordinary commands a session runs in Bash, recorded
by the PostToolUse hook (`python -P -m hooks`) as Claude runs it; a week passes (records and
mtimes moved back); the sweep runs in-process (`gc.sweep`, what `claudetto gc` calls).

Misses fixed:
- a skill, command, agent or output style a session wrote in a temp folder and linked into
  Claude's own folders (`ln -s "$d/my-skill" ~/.claude/skills/`), a plugin marketplace it
  registered from there (`extraKnownMarketplaces`, `plugins/known_marketplaces.json`), a file
  a `CLAUDE.md` imports from there (`@/tmp/x/guide.md`) and a macOS launch agent running from
  there went a week later, and every later session (or login) lost them; so did one a systemd
  unit's drop-in (`systemctl --user edit`) or a podman quadlet names, and one holding an MCP
  server registered with Claude Desktop, Cursor, VS Code or Gemini CLI;
- an `sshfs` in the home whose host went away held every sweep for ever, and so did a background
  call's claim on a path there, a copy's recorded source (or a temp clone's backup remote)
  there, and a clone there borrowing a temp clone's objects;
- a command that removed its own `mktemp -d` folder through a positional parameter (`sh -c 'rm
  -rf "$1"' sh "$d"`), an array, a name a substitution made from it (`r=$(realpath "$d")`) or a
  glob (`rm -rf "$TMPDIR"/tmp.*`, `find -exec rm`) let the guess by template and time take the
  user's folder made in the same seconds: a week later it went.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.core.test_red_team_12_gc import (
    SID,
    bash,
    call,
    pushed_project,
    shift_records,
    week_later,
)
from tests.support import (
    SandboxEnv,
    commit_file,
    git,
    hung_fuse_mounts,
    run_cli,
    run_hook,
    set_mtime,
)

DAY = 86_400


def skill_in_temp(project: Path) -> Path:
    """`d=$(mktemp -d)` and a skill written there: `$d/my-skill/SKILL.md`."""
    folder = Path(call("mktemp -d", project).strip())
    (folder / "my-skill").mkdir()
    (folder / "my-skill" / "SKILL.md").write_text("---\nname: my-skill\ndescription: x\n---\nDo it.\n")
    return folder


@pytest.mark.parametrize("where", ["config", "project"])
@pytest.mark.parametrize("kind", ["skills", "commands", "agents"])
def test_a_skill_linked_into_claudes_folders_keeps_its_temp_folder(sandbox: SandboxEnv, where: str,
                                                                   kind: str) -> None:
    """`d=$(mktemp -d)`, a skill written in `$d/my-skill`, then `ln -s "$d/my-skill"
    ~/.claude/skills/` (or the project's `.claude/skills`, `commands`, `agents`): Claude loads it
    in every later session. Only the top of `~/.claude` was looked at for links: the folder went
    by age and the skill was gone."""
    project = pushed_project(sandbox.home)
    folder = skill_in_temp(project)
    base = sandbox.config if where == "config" else project / ".claude"
    (base / kind).mkdir(parents=True)
    (base / kind / "my-skill").symlink_to(folder / "my-skill")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_marketplace_in_settings_keeps_its_temp_folder(sandbox: SandboxEnv) -> None:
    """A plugin developed in a temp folder, its marketplace declared in the user's settings
    (`extraKnownMarketplaces`, a `directory` source): Claude reads it at every start. Only the
    settings' hooks, status line, helpers and env were read."""
    project = pushed_project(sandbox.home)
    folder = skill_in_temp(project)
    (sandbox.config / "settings.json").write_text(json.dumps({"extraKnownMarketplaces": {
        "dev": {"source": {"source": "directory", "path": str(folder)}}}}))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_known_marketplace_keeps_its_temp_folder(sandbox: SandboxEnv) -> None:
    """`claude plugin marketplace add "$d"` writes the folder into
    `<config>/plugins/known_marketplaces.json`; nothing read that file."""
    project = pushed_project(sandbox.home)
    folder = skill_in_temp(project)
    (sandbox.config / "plugins").mkdir()
    (sandbox.config / "plugins" / "known_marketplaces.json").write_text(json.dumps({
        "dev": {"source": {"source": "directory", "path": str(folder)}, "installLocation": str(folder),
                "lastUpdated": "2026-01-01T00:00:00.000Z"}}))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_launch_agent_keeps_its_temp_folder(sandbox: SandboxEnv) -> None:
    """macOS's systemd user unit: a plist in `~/Library/LaunchAgents` whose `ProgramArguments`
    run a server from the temp folder (`launchctl load`) starts it at every login. Only Linux's
    start-up folders were read."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    agents = sandbox.home / "Library" / "LaunchAgents"
    agents.mkdir(parents=True)
    (agents / "com.me.server.plist").write_text(
        "<plist><dict><key>ProgramArguments</key><array>"
        f"<string>{folder}/server</string></array></dict></plist>\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_claude_md_import_keeps_its_temp_folder(sandbox: SandboxEnv) -> None:
    """The session keeps notes in a temp folder and imports them into the user's memory
    (`@/tmp/tmp.X/guide.md` in `~/.claude/CLAUDE.md`): every later session loads them."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "guide.md").write_text("# guide\n")
    (sandbox.config / "CLAUDE.md").write_text(f"See @{folder}/guide.md\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_project_import_keeps_its_temp_folder(sandbox: SandboxEnv) -> None:
    """The same import in the project's `CLAUDE.local.md`."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "guide.md").write_text("# guide\n")
    (project / "CLAUDE.local.md").write_text(f"# local\n@{folder}/guide.md\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_temp_folder_claudes_files_do_not_lead_into_still_goes(sandbox: SandboxEnv) -> None:
    """The control: a skill linked from elsewhere, a marketplace of another folder, a memory file
    that mentions the folder without importing from it keep nothing."""
    project = pushed_project(sandbox.home)
    folder = skill_in_temp(project)
    other = sandbox.home / "skills" / "my-skill"
    other.mkdir(parents=True)
    (sandbox.config / "skills").mkdir()
    (sandbox.config / "skills" / "my-skill").symlink_to(other)
    (sandbox.config / "settings.json").write_text(json.dumps({"extraKnownMarketplaces": {
        "dev": {"source": {"source": "directory", "path": str(other.parent)}}}}))
    (sandbox.config / "CLAUDE.md").write_text(f"Scratch went to {folder} once; @{other}/SKILL.md\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries



@pytest.mark.parametrize("where", ["home", "project"])
def test_a_mount_that_stopped_answering_holds_no_sweep(sandbox: SandboxEnv, where: str) -> None:
    """HANG. An `sshfs` mounted at `~/remote` whose host went away (a laptop offline): every
    look at it waits. The sweep reads the home's folders (and the project of each record's
    cwd) for what leads into an old output, and `claudetto gc` waited for ever there, holding
    the sweep's lock: no session start or end swept again. Now a folder on a remote mount
    that does not answer is passed over, as the cleanup does with a known project there, and
    the rest is judged; a record whose session worked there (its project cannot be read) waits
    until the mount answers again."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    if where == "project":  # the session worked in a project on the mount while it answered
        file = sandbox.state / "gc" / f"{SID}.json"
        data = json.loads(file.read_text())
        for record in data["records"]:
            record["cwd"] = str(sandbox.home / "remote" / "proj")
        file.write_text(json.dumps(data))
    shift_records(sandbox.state, -8 * DAY)
    set_mtime(folder, 8 * DAY)
    with hung_fuse_mounts() as mount:
        mount(sandbox.home / "remote")
        done = run_cli("gc", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    entries = {e["path"]: (e["status"], e["reason"]) for e in json.loads(done.stdout)["entries"]}
    if where == "home":
        assert entries[str(folder)] == ("removed", "age"), entries
    else:  # its project cannot be read: what it names is unknown, and the record is passed over
        assert str(folder) not in entries and folder.is_dir(), entries


@pytest.mark.parametrize("file", [".config/systemd/user/web.service.d/override.conf",
                                  ".config/containers/systemd/db.container"])
def test_a_unit_drop_in_or_quadlet_naming_a_temp_folder_keeps_it(sandbox: SandboxEnv, file: str) -> None:
    """`systemctl --user edit web` writes its change into a drop-in,
    `~/.config/systemd/user/web.service.d/override.conf` (`ExecStart=` the server the session
    built in a temp folder); podman's quadlets (`~/.config/containers/systemd/db.container`)
    bind-mount a folder at every login. Only the files directly in the unit folder were read."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "server").write_text("#!/bin/sh\n")
    path = sandbox.home / file
    path.parent.mkdir(parents=True)
    path.write_text(f"[Service]\nExecStart=\nExecStart={folder}/server --port 8080\n" if file.endswith(".conf")
                    else f"[Container]\nImage=postgres:16\nVolume={folder}/pgdata:/var/lib/postgresql/data\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


# --- a mktemp folder removed through a name the reader could not tie to it -------------------------


@pytest.mark.parametrize("removal", [
    'sh -c \'rm -rf "$1"\' sh "$d"',  # the helper-script idiom of find -exec and xargs
    'set -- "$d"; rm -rf "$1"',
    'dirs=("$d"); rm -rf "${dirs[@]}"',
    'real=$(realpath "$d"); rm -rf "$real"',
    'find "$TMPDIR" -maxdepth 1 -name "tmp.*" -mmin -5 -exec rm -rf {} +',
    'rm -rf "$TMPDIR"/tmp.*',
    'cd "$d" && cd .. && rm -rf tmp.*',
    'rm -rf "$d"/../tmp.*',
])
def test_a_mktemp_folder_removed_through_an_untold_name_takes_no_other_programs(sandbox: SandboxEnv,
                                                                               removal: str) -> None:
    """`d=$(mktemp -d) && ...; sh -c 'rm -rf "$1"' sh "$d"` (or a positional parameter, an array,
    a variable set from a substitution, a glob, `find -exec rm`): the call's own folder is gone,
    and the user's script made one of the same template in those seconds. Only `$d`, its aliases
    and a substitution counted as removing it; a removal through any other name was passed over,
    the guess by template and time found exactly one folder, the stranger's, and recorded it:
    a week later it went with what the user kept in it."""
    project = pushed_project(sandbox.home)
    command = f'd=$(mktemp -d) && echo hi > "$d/x"; {removal}'
    out = bash(command, project)
    # the user's script, in the same seconds, after the removal (a glob would have taken it too)
    theirs = Path(subprocess.run(["mktemp", "-d"], check=True, capture_output=True, text=True).stdout.strip())
    (theirs / "results.csv").write_text("the user's\n")
    done = run_hook({"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(project),
                     "transcript_path": "/dev/null", "tool_name": "Bash", "tool_input": {"command": command},
                     "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
                     "duration_ms": 3000}, cwd=project)
    assert done.returncode == 0, done.stderr
    entries = week_later(sandbox.state, theirs)
    assert str(theirs) not in entries and (theirs / "results.csv").exists(), entries


@pytest.mark.parametrize("removal", ['rm -f "$d/x"', 'rm -f "$d"/*.tmp', 'rm -rf "$d/build"'])
def test_a_mktemp_folder_whose_entries_were_removed_is_still_found(sandbox: SandboxEnv, removal: str) -> None:
    """The control: what the command removed lay inside the folder, which stays: it is found by
    template and time, recorded, and goes a week later."""
    project = pushed_project(sandbox.home)
    call(f'd=$(mktemp -d) && echo hi > "$d/x"; {removal}', project)
    ours = [p for p in sandbox.user_tmp.iterdir() if p.name.startswith("tmp.")]
    assert len(ours) == 1
    entries = week_later(sandbox.state, ours[0])
    assert entries[str(ours[0])] == ("removed", "age"), entries


@pytest.mark.parametrize("file", [".config/Claude/claude_desktop_config.json",
                                  "Library/Application Support/Claude/claude_desktop_config.json",
                                  ".cursor/mcp.json", ".config/Code/User/mcp.json", ".gemini/settings.json",
                                  "proj/.vscode/mcp.json", "proj/.cursor/mcp.json"])
def test_an_mcp_server_another_client_registered_keeps_its_temp_folder(sandbox: SandboxEnv, file: str) -> None:
    """"Build an MCP server and add it to Claude Desktop": the session builds it in a temp folder
    (`$d/build/index.js`) and registers it in Claude Desktop's config (or Cursor's, VS Code's,
    Gemini CLI's, a project's `.vscode/mcp.json`). Only Claude Code's own registrations were
    read: a week later the folder went, and the app's server failed at its next start."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "build").mkdir()
    (folder / "build" / "index.js").write_text("console.log('weather')\n")
    path = sandbox.home / file
    path.parent.mkdir(parents=True, exist_ok=True)
    key = "servers" if file.endswith("Code/User/mcp.json") or file.endswith(".vscode/mcp.json") else "mcpServers"
    path.write_text(json.dumps({key: {"weather": {"command": "node", "args": [f"{folder}/build/index.js"]}}}))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_background_calls_claim_on_a_mount_that_stopped_answering_holds_no_sweep(sandbox: SandboxEnv) -> None:
    """HANG. `git clone URL ~/remote/tool` run in the background (its hook fires at its start: the
    path is a claim, waiting for the clone to appear), then the sshfs host went away. Every read
    of the records looked at the claim's path, and `claudetto gc` waited there for ever, holding
    the sweep's lock. A claim on a mount that does not answer now waits unlooked at."""
    project = pushed_project(sandbox.home)
    target = sandbox.home / "remote" / "tool"
    command = f"sleep 30; git clone -q {sandbox.home / 'remote.git'} {target}"
    done = run_hook({"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(project),
                     "transcript_path": "/dev/null", "tool_name": "Bash",
                     "tool_input": {"command": command, "run_in_background": True},
                     "tool_response": {"stdout": "", "stderr": "", "interrupted": False, "isImage": False,
                                       "backgroundTaskId": "b1"}, "duration_ms": 4}, cwd=project)
    assert done.returncode == 0, done.stderr
    pending = json.loads((sandbox.state / "gc" / f"{SID}.json").read_text())["pending"]
    assert [c["path"] for c in pending] == [str(target)]
    with hung_fuse_mounts() as mount:
        mount(sandbox.home / "remote")
        swept = run_cli("gc", "--json", timeout=40)
    assert swept.returncode == 0, swept.stderr
    assert json.loads(swept.stdout)["entries"] == []




@pytest.mark.parametrize("what", ["data", "secret", "remote"])
def test_a_copy_whose_source_lies_on_a_mount_that_stopped_answering_holds_no_sweep(sandbox: SandboxEnv,
                                                                                    what: str) -> None:
    """HANG. `d=$(mktemp -d) && cp -r ~/remote/data "$d"/` (a copy of what lay on an sshfs; with
    its `.env`), or a temp clone pushed to a backup there (`git remote add backup
    ~/remote/backup.git`), then the host went away. The sweep asks whether each recorded source
    (each local remote) still holds what the copy has, and waited on it for ever. Such a source
    cannot be asked: the folder is kept (`dirty`, `unmerged`: when unsure, keep) and the sweep
    goes on."""
    source = sandbox.home / "remote" / "data"
    source.mkdir(parents=True)
    (source / ("a.csv" if what != "secret" else ".env")).write_text("1,2\n")
    if what == "remote":
        project = pushed_project(sandbox.home)
        backup = sandbox.home / "remote" / "backup.git"
        git(sandbox.home, "init", "-q", "--bare", str(backup))
        folder = Path(call(f'd=$(mktemp -d) && git clone -q {sandbox.home / "remote.git"} "$d/c" && echo "$d"',
                           project).strip())
        commit_file(folder / "c", "new.py", "x = 1\n", "new")
        git(folder / "c", "remote", "add", "backup", str(backup))
        git(folder / "c", "push", "-q", "backup", "main")
    else:
        folder = Path(call(f'd=$(mktemp -d) && cp -r {source} "$d"/ && echo "$d"', sandbox.home).strip())
    shift_records(sandbox.state, -8 * DAY)
    set_mtime(folder, 8 * DAY)
    with hung_fuse_mounts() as mount:
        mount(sandbox.home / "remote")
        done = run_cli("gc", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    entries = {e["path"]: (e["status"], e["reason"]) for e in json.loads(done.stdout)["entries"]}
    assert entries[str(folder)] == ("kept", "unmerged" if what == "remote" else "dirty"), entries


def test_a_clone_on_a_mount_that_stopped_answering_borrowing_a_temp_clones_objects_keeps_it(
        sandbox: SandboxEnv) -> None:
    """HANG. `git clone --reference "$d/c" URL ~/remote/p` (a clone on an sshfs borrowing a temp
    clone's objects: `evidence.lent_to`), then the host went away. The sweep asked the borrower's
    folder and its neighbours for `objects/info/alternates` and waited for ever. A borrower that
    cannot be asked may still borrow: the lender is kept (`unmerged`), and the sweep goes on."""
    project = pushed_project(sandbox.home)
    (sandbox.home / "remote").mkdir()
    url = sandbox.home / "remote.git"
    folder = Path(call(f'd=$(mktemp -d) && git clone -q {url} "$d/c" && echo "$d"', project).strip())
    borrower = sandbox.home / "remote" / "p"
    call(f"git clone -q --reference {folder / 'c'} {url} {borrower}", project)
    assert (borrower / ".git" / "objects" / "info" / "alternates").exists()
    shift_records(sandbox.state, -8 * DAY)
    set_mtime(folder, 8 * DAY)
    with hung_fuse_mounts() as mount:
        mount(sandbox.home / "remote")
        done = run_cli("gc", "--json", timeout=40)
    assert done.returncode == 0, done.stderr
    entries = {e["path"]: (e["status"], e["reason"]) for e in json.loads(done.stdout)["entries"]}
    assert entries[str(folder)] == ("kept", "unmerged"), entries


@pytest.mark.parametrize("word", ['"$a/"', '"$a"', "$a/.."])
def test_a_long_removal_of_many_variables_is_read_in_bounded_time(word: str) -> None:
    """The reader's promise: time linear in the command's length. A removal of a word of 85,000
    `$a/` (or `$a`, `$a/..`) before a glob, within the 256 Ki a command may hold: the look for a
    path climbing out of a variable's folder searched from every `$` to the end (`\\$.*/\\.\\.`),
    and the command took seconds of CPU in the hook."""
    import time

    from app.core.bash_outputs import read_bash
    from app.core.command_line import MAX_COMMAND_CHARS

    head = 'd=$(mktemp -d) && rm -rf '
    command = head + word * ((MAX_COMMAND_CHARS - len(head) - 1) // len(word)) + "*"
    assert len(command) <= MAX_COMMAND_CHARS
    best = float("inf")
    for _ in range(3):  # a loaded machine can double one measure: the best of three
        start = time.process_time()
        read_bash(command, "/nowhere", "")
        best = min(best, time.process_time() - start)
    assert best < 1.0, f"{best:.2f} s of CPU"


def test_a_long_word_of_variables_beside_a_mktemp_is_read_in_linear_time() -> None:
    """Each simple command of a command holding `mktemp` is now asked which calls' variables it
    names (`r=$(realpath "$d")`); a word of many `$a/x` copied the rest of the word at each one.
    Eight times the command must cost about eight times the CPU, not sixty-four."""
    import time

    from app.core.bash_outputs import read_bash
    from app.core.command_line import MAX_COMMAND_CHARS

    def cpu(parts: int) -> float:
        command = "d=$(mktemp -d); echo " + "$a/x" * ((MAX_COMMAND_CHARS - 40) // 4 // parts)
        best = float("inf")
        for _ in range(3):  # a loaded machine can double one measure: the best of three
            start = time.process_time()
            read_bash(command, "/nowhere", "")
            best = min(best, time.process_time() - start)
        return best

    small, big = cpu(8), cpu(1)
    assert big < 20 * max(small, 0.003), (small, big)
