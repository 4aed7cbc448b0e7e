"""The plugin as Claude runs it: every command of hooks/hooks.json through `sh -c`, with
CLAUDE_PLUGIN_ROOT a clean clone of the repository and CLAUDE_PLUGIN_DATA an empty folder,
and no claudetto variable but the sandbox's. The environment is really built (a venv and a
real `pip install` of the clone): on first use, and again for a new version, in two tests that
can run side by side (about 15 s each).

And the manifests, checked against the shapes Claude Code reads (CLAUDE_CODE_FACTS, the
plugin and marketplace references)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.setup import EVENTS
from tests.support import ROOT, SandboxEnv, git, make_repo

BUILD_WAIT_S = 600
LAUNCHER = '. "${CLAUDE_PLUGIN_ROOT}/bin/claudetto-hook"'


def clean_clone(tmp_path: Path) -> Path:
    """The committed repository, as a marketplace install copies it: no .venv, no caches."""
    root = tmp_path / "plugin"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(root)], check=True, capture_output=True)
    return root


def plugin_env(root: Path, data: Path, **extra: str) -> dict[str, str]:
    """The environment of a plugin hook: the sandbox's HOME, CLAUDE_CONFIG_DIR and temp roots,
    the two plugin variables, and no claudetto variable but the one that keeps every test off
    the machine's managed settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDETTO_", "CLAUDE_PLUGIN_"))}
    env["CLAUDETTO_MANAGED_SETTINGS"] = os.environ["CLAUDETTO_MANAGED_SETTINGS"]
    env["CLAUDE_PLUGIN_ROOT"] = str(root)
    env["CLAUDE_PLUGIN_DATA"] = str(data)
    env.update(extra)
    return env


def hook_commands(root: Path) -> dict[str, list[str]]:
    config = json.loads((root / "hooks" / "hooks.json").read_text())
    return {event: [h["command"] for entry in entries for h in entry["hooks"]]
            for event, entries in config["hooks"].items()}


def sh(command: str, payload: dict | None, env: dict[str, str], cwd: Path,
       timeout: float = 60) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """`sh -c COMMAND` with the payload on stdin, as Claude runs a hook; and how long it took."""
    start = time.monotonic()
    result = subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode() if payload else b"",
                            env=env, cwd=str(cwd), capture_output=True, timeout=timeout, check=False)
    return result, time.monotonic() - start


def wait_for_build(data: Path, version: str) -> None:
    stamp = data / "venv" / "claudetto-entry"
    deadline = time.monotonic() + BUILD_WAIT_S
    while time.monotonic() < deadline:
        if stamp.exists() and stamp.read_text().startswith(version + " "):
            return
        if (data / "build-failed").exists():
            log = (data / "build.log").read_text(errors="replace") if (data / "build.log").exists() else ""
            pytest.fail(f"the build failed: {(data / 'build-failed').read_text()}\n{log[-3000:]}")
        time.sleep(0.5)
    pytest.fail("the environment was not built in time")


def wait_for_builder_to_end(data: Path) -> None:
    """The lock is free once no build runs: a test leaves no process behind."""
    import fcntl

    deadline = time.monotonic() + BUILD_WAIT_S
    while time.monotonic() < deadline:
        fd = os.open(data / "build.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError:
            time.sleep(0.2)
        finally:
            os.close(fd)
    pytest.fail("a build kept running")


def stop_builder(data: Path) -> None:
    """End the build that holds DATA/build.lock, with all it started (it leads its own
    session): the holder is found in /proc/locks by the lock file's inode, and is only
    ended when it is the builder of this data folder."""
    import signal

    inode = os.stat(data / "build.lock").st_ino
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return  # no lock table to read: the build runs to its end
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK" or "->" in fields or int(fields[5].split(":")[-1]) != inode:
            continue
        pid = int(fields[4])
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if os.getpgid(pid) == pid and b"--build" in command and os.fsencode(data) in command:
                os.killpg(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass  # ended meanwhile


def base(sandbox: SandboxEnv, cwd: Path, event: str, session: str = "s-plugin", **fields: object) -> dict:
    return {"session_id": session, "transcript_path": str(sandbox.root / "t.jsonl"), "cwd": str(cwd),
            "hook_event_name": event, **fields}


def test_every_hook_command_works_from_a_clean_clone_with_nothing_set(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = clean_clone(tmp_path)
    data = tmp_path / "plugin-data"
    data.mkdir()
    env = plugin_env(root, data)
    project = make_repo(tmp_path / "project")
    commands = hook_commands(root)
    assert set(commands) == set(EVENTS)

    # First use: SessionStart returns at once and says claudetto is getting ready.
    (start,) = commands["SessionStart"]
    result, took = sh(start, base(sandbox, project, "SessionStart", source="startup"), env, project)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    assert took < 1.0, f"SessionStart took {took:.2f} s"
    told = json.loads(result.stdout)["hookSpecificOutput"]
    assert told["hookEventName"] == "SessionStart" and "getting ready" in told["additionalContext"]

    # Meanwhile every other event (but WorktreeCreate, which waits) exits 0 and blocks nothing;
    # the session was told once, so its prompt adds nothing.
    scratch = sandbox.user_tmp / "early.txt"
    scratch.write_text("x\n")
    early = {
        "SessionEnd": base(sandbox, project, "SessionEnd", reason="other", session="s-other"),
        "UserPromptSubmit": base(sandbox, project, "UserPromptSubmit", prompt="hi"),
        "PreToolUse": base(sandbox, project, "PreToolUse", tool_name="Write",
                           tool_input={"file_path": str(scratch), "content": "x\n"}, tool_use_id="t0"),
        "PostToolUse": base(sandbox, project, "PostToolUse", tool_name="Write",
                            tool_input={"file_path": str(scratch), "content": "x\n"}, tool_response={}),
        "WorktreeRemove": base(sandbox, project, "WorktreeRemove",
                               worktree_path=str(project / ".claude" / "worktrees" / "nothing")),
    }
    for event, payload in early.items():
        for command in commands[event]:
            result, _ = sh(command, payload, env, project)
            assert b"Traceback" not in result.stderr, (event, result.stderr)
            if event == "WorktreeRemove":
                continue  # its code is about the folder, and the folder was never there
            assert result.returncode == 0, (event, result.stderr)
            assert result.stdout == b"", (event, result.stdout)

    # WorktreeCreate waits for the environment, then makes the checkout.
    (create,) = commands["WorktreeCreate"]
    result, _ = sh(create, base(sandbox, project, "WorktreeCreate", name="feature/login"), env, project,
                   timeout=BUILD_WAIT_S)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]
    checkout = project / ".claude" / "worktrees" / "feature+login"
    assert result.stdout.decode().strip().splitlines()[-1] == str(checkout)
    assert git(checkout, "branch", "--show-current") == "worktree-feature+login"
    version = json.loads((root / ".claude-plugin" / "plugin.json").read_text())["version"]
    wait_for_build(data, version)
    wait_for_builder_to_end(data)
    assert (data / "venv" / "bin" / "python").exists()

    # Built: a Write into the temp folder is recorded, in the state folder both installs share.
    state = sandbox.home / ".claudetto"
    written = sandbox.user_tmp / "report.md"
    written.write_text("# report\n")
    (post,) = commands["PostToolUse"]
    result, _ = sh(post, base(sandbox, project, "PostToolUse", tool_name="Write",
                              tool_input={"file_path": str(written), "content": "# report\n"},
                              tool_response={}), env, project)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    records = json.loads((state / "gc" / "s-plugin.json").read_text())["records"]
    assert [r["path"] for r in records if r["kind"] == "scratch"] == [str(written)]
    assert not (data / "gc").exists()  # nothing of claudetto's state in the plugin's data folder

    # The project's own app/ and hooks/ packages change nothing.
    for pkg in ("app", "hooks"):
        (project / pkg).mkdir()
        (project / pkg / "__init__.py").write_text("raise RuntimeError('user package imported')\n")
    (prompt,) = commands["UserPromptSubmit"]
    result, _ = sh(prompt, base(sandbox, project, "UserPromptSubmit", prompt="hi"), env, project)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")

    # /claudetto:gc runs through the same launcher, from the Bash tool (no plugin variables).
    gc_md = (root / "commands" / "gc.md").read_text()
    line = re.search(r'^sh "\$\{CLAUDE_PLUGIN_ROOT\}/bin/claudetto-hook" gc \$ARGUMENTS$', gc_md, re.M)
    assert line is not None, gc_md
    bash_tool_env = {k: v for k, v in env.items() if not k.startswith("CLAUDE_PLUGIN_")}
    command = line.group(0).replace("${CLAUDE_PLUGIN_ROOT}", str(root)).replace("$ARGUMENTS", "--dry-run --json")
    result, _ = sh(command, None, bash_tool_env, project)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dry_run"] is True and str(written) in [e["path"] for e in report["entries"]]
    assert written.exists()
    assert not (state / "plugin").exists()  # it found the environment the hooks built



def test_a_new_plugin_version_rebuilds_the_environment(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The environment of the version before is used while the version is the same; a new
    version does not use it: it is rebuilt (for real), the session is told, and only the new
    one is left. The old one stands in as the launcher sees a built environment: a venv (no
    pip: nothing is installed in it; the entry names the clone) with its `claudetto-entry`."""
    from app.core.setup import entry_code

    root = clean_clone(tmp_path)
    data = tmp_path / "plugin-data"
    data.mkdir()
    env = plugin_env(root, data)
    project = make_repo(tmp_path / "project")
    version = json.loads((root / ".claude-plugin" / "plugin.json").read_text())["version"]
    subprocess.run([sys.executable, "-I", "-m", "venv", "--without-pip", str(data / "venv")], check=True)
    (data / "venv" / "claudetto-entry").write_text(f"{version} {entry_code(str(root))}\n")
    (prompt,) = hook_commands(root)["UserPromptSubmit"]
    (post,) = hook_commands(root)["PostToolUse"]

    written = sandbox.user_tmp / "before.md"
    written.write_text("# before\n")
    result, _ = sh(post, base(sandbox, project, "PostToolUse", tool_name="Write",
                              tool_input={"file_path": str(written), "content": "# before\n"},
                              tool_response={}), env, project)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    records = json.loads((sandbox.home / ".claudetto" / "gc" / "s-plugin.json").read_text())["records"]
    assert [r["path"] for r in records if r["kind"] == "scratch"] == [str(written)]  # it ran there

    manifest = root / ".claude-plugin" / "plugin.json"
    manifest.write_text(manifest.read_text().replace(f'"version": "{version}"', '"version": "0.1.1-test"'))
    result, _ = sh(prompt, base(sandbox, project, "UserPromptSubmit", prompt="hi", session="s-new"), env, project)
    assert result.returncode == 0 and "getting ready" in result.stdout.decode()
    wait_for_build(data, "0.1.1-test")
    wait_for_builder_to_end(data)
    assert sorted(p.name for p in data.iterdir() if p.name.startswith("venv")) == ["venv"]
    assert (data / "venv" / "bin" / "pip").exists()  # the new one, built by pip


def fake_path_without_python(tmp_path: Path, old_python: bool) -> str:
    """A PATH with the tools the launcher may use and no Python 3.11+: none at all, or a
    `python3` that reports an older version (as a real 3.9 would, by its sys.version_info)."""
    bin_dir = tmp_path / "bin-no-python"
    bin_dir.mkdir()
    for tool in ("sh", "cat", "mkdir", "date"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    if old_python:
        old = bin_dir / "python3"
        old.write_text("#!/bin/sh\n# a Python older than 3.11: its version check prints nothing\nexit 0\n")
        old.chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("old_python", [False, True], ids=["none", "too-old"])
def test_without_a_usable_python_every_event_exits_0_and_worktree_create_says_why(
        sandbox: SandboxEnv, tmp_path: Path, old_python: bool) -> None:
    data = tmp_path / "plugin-data"
    data.mkdir()
    env = plugin_env(ROOT, data, PATH=fake_path_without_python(tmp_path, old_python))
    project = tmp_path / "project"
    project.mkdir()
    for event, payload in [
        ("SessionStart", base(sandbox, project, "SessionStart", source="startup")),
        ("UserPromptSubmit", base(sandbox, project, "UserPromptSubmit", prompt="hi")),
        ("PostToolUse", base(sandbox, project, "PostToolUse", tool_name="Bash", tool_input={"command": "ls"},
                             tool_response={"stdout": ""})),
        ("SessionEnd", base(sandbox, project, "SessionEnd", reason="other")),
    ]:
        result, _ = sh(LAUNCHER, payload, env, project)
        assert result.returncode == 0 and result.stderr == b"", (event, result.stderr)
        if event == "SessionStart":
            said = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
            assert "no Python 3.11 or newer" in said
        else:
            assert result.stdout == b"", event
    result, _ = sh(LAUNCHER, base(sandbox, project, "WorktreeCreate", name="x"), env, project)
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 1 and result.stdout == b""
    assert lines == ["claudetto: worktree not created: no Python 3.11 or newer on PATH "
                     "(looked for python3, python3.13, python3.12, python3.11)"]
    assert "no Python 3.11 or newer" in (data / "launcher.log").read_text()
    result, _ = sh(f'sh "{ROOT}/bin/claudetto-hook" gc --dry-run', None, env, project)
    assert result.returncode == 1 and result.stderr.decode().count("\n") == 1


def test_a_failed_build_is_retried_later_not_on_every_call(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = clean_clone(tmp_path)
    data = tmp_path / "plugin-data"
    data.mkdir()
    # pip cannot reach any index: the build fails after the venv is made, as without network
    env = plugin_env(root, data, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="2",
                     PIP_NO_CACHE_DIR="1")
    project = tmp_path / "project"
    project.mkdir()
    start = base(sandbox, project, "SessionStart", source="startup")
    result, _ = sh(LAUNCHER, start, env, project)
    assert result.returncode == 0
    deadline = time.monotonic() + BUILD_WAIT_S
    while not (data / "build-failed").exists() and time.monotonic() < deadline:
        time.sleep(0.3)
    wait_for_builder_to_end(data)
    failed = json.loads((data / "build-failed").read_text())
    assert "pip install exited" in failed["why"]
    first_log = (data / "build.log").stat().st_mtime_ns

    # Within the retry delay: no new build, the session is told why, WorktreeCreate fails loud.
    result, _ = sh(LAUNCHER, dict(start, session_id="s-2"), env, project)
    said = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert result.returncode == 0 and "failed" in said and "tries again at" in said
    result, _ = sh(LAUNCHER, base(sandbox, project, "WorktreeCreate", name="x"), env, project)
    assert result.returncode == 1 and result.stdout == b""
    assert result.stderr.decode().count("\n") == 1 and "building its environment failed" in result.stderr.decode()
    wait_for_builder_to_end(data)
    assert (data / "build.log").stat().st_mtime_ns == first_log

    # Once the delay is over, the next event starts a build again.
    (data / "build-failed").write_text(json.dumps({"time": time.time() - 3600, "why": failed["why"]}))
    result, _ = sh(LAUNCHER, dict(start, session_id="s-3"), env, project)
    assert result.returncode == 0 and "getting ready" in result.stdout.decode()
    deadline = time.monotonic() + BUILD_WAIT_S
    while (data / "build.log").stat().st_mtime_ns == first_log and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (data / "build.log").stat().st_mtime_ns != first_log
    stop_builder(data)  # it started again: that is all there is to see; it would fail as before
    wait_for_builder_to_end(data)


def test_the_manifests_have_the_shapes_claude_code_reads() -> None:
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", plugin["name"])  # kebab-case, the plugin's id
    assert re.fullmatch(r"\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?", plugin["version"])
    assert isinstance(plugin["description"], str) and isinstance(plugin["author"]["name"], str)
    assert "hooks" not in plugin and "commands" not in plugin  # the standard places, loaded once

    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert re.fullmatch(r"[A-Za-z0-9._-]+", market["name"]) and isinstance(market["owner"]["name"], str)
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"]
    assert entry["source"] == "./"  # this repository is the plugin ("." alone is refused)
    assert "version" not in entry  # plugin.json's is the one; two would drift

    config = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    assert set(config) <= {"description", "hooks"} and set(config["hooks"]) == set(EVENTS)
    for event, entries in config["hooks"].items():
        assert isinstance(entries, list) and len(entries) == 1
        (entry,) = entries
        assert set(entry) <= {"matcher", "hooks"}
        assert entry.get("matcher") == EVENTS[event]  # the same matchers `claudetto setup` writes
        assert entry["hooks"] == [{"type": "command", "command": LAUNCHER}]  # no timeout: SessionEnd

    command = (ROOT / "commands" / "gc.md").read_text()
    front = command.split("---")[1]
    assert "description:" in front and "argument-hint:" in front
    assert "allowed-tools" not in front  # ${CLAUDE_PLUGIN_ROOT} is not substituted there
    assert "!`" not in command  # an inline command of a plugin fails Claude's permission check


def test_the_launcher_reads_the_version_as_the_manifest_says(tmp_path: Path) -> None:
    """The shell reads the version line by line; it must agree with the JSON, whatever the
    description says."""
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    script = (ROOT / "bin" / "claudetto-hook").read_text()
    start = script.index("claudetto_version=\n")
    end = script.index("# Built for this version")
    probe = f'claudetto_root="{ROOT}"\n' + script[start:end] + 'printf "%s" "$claudetto_version"\n'
    out = subprocess.run(["sh", "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out == manifest["version"]


def test_the_shell_launcher_is_posix_sh() -> None:
    script = ROOT / "bin" / "claudetto-hook"
    for shell in ("sh", "dash", "bash"):
        found = shutil.which(shell)
        if found:
            subprocess.run([found, "-n", str(script)], check=True)
    assert b"\r" not in script.read_bytes()
    checker = subprocess.run([sys.executable, "-I", str(ROOT / "bin" / "claudetto_env.py")], capture_output=True,
                             text=True, check=False)
    assert checker.returncode == 2 and checker.stderr.startswith("usage:")


def test_claudetto_python_names_an_interpreter_that_has_claudetto_and_nothing_is_built(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    data = tmp_path / "plugin-data"
    data.mkdir()
    env = plugin_env(ROOT, data, CLAUDETTO_PYTHON=sys.executable)
    project = tmp_path / "project"
    project.mkdir()
    written = sandbox.user_tmp / "out.txt"
    written.write_text("x\n")
    result, _ = sh(LAUNCHER, base(sandbox, project, "PostToolUse", tool_name="Write",
                                  tool_input={"file_path": str(written), "content": "x\n"}, tool_response={}),
                   env, project)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert (sandbox.home / ".claudetto" / "gc" / "s-plugin.json").exists()
    result, _ = sh(f'sh "{ROOT}/bin/claudetto-hook" sessions --json', None, env, project)
    assert result.returncode == 0 and "sessions" in json.loads(result.stdout)
    assert list(data.iterdir()) == []
