"""The hook entry `claudetto setup` writes (`<python> -I -S -c '...run()' # claudetto`), run
through `sh -c` exactly as settings.json holds it: what it loads (no runpy, no site: the
~6 ms `python -m hooks` paid on every call), that it still keeps a project's own `app/` and
`hooks/` packages out, that it finds the venv's site-packages itself (and falls back to
`site` elsewhere), and that an older entry is upgraded in place. Timings are in
bench/hook_latency.py."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from app.core import setup
from tests.support import ROOT, SandboxEnv, run_cli

PROBE = ("import atexit,sys;atexit.register(lambda:sys.stderr.write("
         "'MODULES='+','.join(sorted(sys.modules))+'\\n'));")


def settings_commands(sandbox: SandboxEnv) -> dict[str, str]:
    data = json.loads((sandbox.config / "settings.json").read_text())
    return {event: h["command"] for event, entries in data["hooks"].items() for e in entries for h in e["hooks"]
            if h["command"].endswith(setup.MARKER)}


def sh(command: str, payload: dict, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), cwd=str(cwd),
                          capture_output=True, timeout=30, check=False)


def with_probe(command: str) -> str:
    """The same command with a line first that reports the loaded modules at exit."""
    parts = shlex.split(command.removesuffix(setup.MARKER))
    assert parts[1:4] == ["-I", "-S", "-c"], parts
    return shlex.join([*parts[:-1], PROBE + parts[-1]])


def modules_of(result: subprocess.CompletedProcess[bytes]) -> set[str]:
    line = [x for x in result.stderr.decode().splitlines() if x.startswith("MODULES=")][-1]
    return set(line[len("MODULES="):].split(","))


def user_project(tmp_path: Path) -> Path:
    """A project with its own `app` and `hooks` packages that must never be imported."""
    project = tmp_path / "userproj"
    for pkg in ("app", "hooks"):
        (project / pkg).mkdir(parents=True)
        (project / pkg / "__init__.py").write_text("raise RuntimeError('user package imported')\n")
        (project / pkg / "entry.py").write_text("raise RuntimeError('user module imported')\n")
    return project


def test_setup_writes_the_cheap_entry_and_it_runs_as_written(sandbox: SandboxEnv, tmp_path: Path) -> None:
    assert run_cli("setup").returncode == 0
    commands = settings_commands(sandbox)
    assert set(commands) == set(setup.EVENTS) and len(set(commands.values())) == 1
    command = commands["PostToolUse"]
    assert command == setup.hook_command()
    argv = shlex.split(command)
    assert argv[0] == os.path.abspath(sys.executable) and argv[1:4] == ["-I", "-S", "-c"]
    assert " -m " not in command  # runpy costs ~4 ms a call

    project = user_project(tmp_path)
    edited = project / "notes.txt"
    edited.write_bytes(b"one line\n" * 8192)  # long enough for the C hash, if installed
    edit = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(project), "tool_name": "Edit",
            "tool_input": {"file_path": str(edited), "old_string": "x", "new_string": "y"}, "tool_response": {}}
    result = sh(with_probe(command), edit, project)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    loaded = modules_of(result)
    assert {"runpy", "site"} & loaded == set()
    assert "app.core.ledger" in loaded
    # without `site`, the venv's site-packages was still found: the C hash was loaded from it
    assert ("fnv_c" in loaded) == _has_fnv_c()
    ledger = json.loads((sandbox.state / "ledger.json").read_text())
    assert str(edited) in json.dumps(ledger)

    edited.write_text("changed behind its back\n")
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(project), "prompt": "go on"}
    result = sh(commands["UserPromptSubmit"], prompt, project)
    assert result.returncode == 0 and result.stderr == b""
    said = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"`{edited}`" in said


def _has_fnv_c() -> bool:
    try:
        import fnv_c  # noqa: F401
    except ImportError:
        return False
    return True


def test_outside_a_venv_the_entry_runs_site_after_all(sandbox: SandboxEnv, tmp_path: Path) -> None:
    base = getattr(sys, "_base_executable", sys.executable)
    if os.path.isfile(os.path.join(os.path.dirname(os.path.dirname(base)), "pyvenv.cfg")):
        base = os.path.realpath(base)
    command = f"{shlex.quote(base)} -I -S -c {shlex.quote(PROBE + setup.entry_code(str(ROOT)))}"
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(tmp_path), "prompt": "hi"}
    result = sh(command, prompt, tmp_path)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    loaded = modules_of(result)
    assert "site" in loaded and "hooks.prompt" in loaded


def test_an_odd_folder_name_survives_the_quoting(sandbox: SandboxEnv, tmp_path: Path) -> None:
    odd = tmp_path / "it's a \"folder\" $HOME `x`"
    odd.mkdir()
    (odd / "claudetto").symlink_to(ROOT)
    root = str(odd / "claudetto")
    command = f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(PROBE + setup.entry_code(root))}"
    project = user_project(tmp_path)
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(project), "prompt": "hi"}
    result = sh(command, prompt, project)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    assert "hooks.prompt" in modules_of(result)


def test_an_older_entry_is_upgraded_in_place(sandbox: SandboxEnv, tmp_path: Path) -> None:
    settings = sandbox.config / "settings.json"
    old_command = f"{sys.executable} -P -m hooks # claudetto"
    before = {
        "hooks": {
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": "mine-first.sh"}]},
                {"hooks": [{"type": "command", "command": old_command, "timeout": 60}]},
                {"hooks": [{"type": "command", "command": "mine-last.sh"}]},
            ],
        },
    }
    settings.write_text(json.dumps(before, indent=4) + "\n")
    result = run_cli("setup", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["changed"] is True and "UserPromptSubmit" in report["removed"]
    data = json.loads(settings.read_text())
    prompt = data["hooks"]["UserPromptSubmit"]
    assert [h for e in prompt for h in e["hooks"]] == [
        {"type": "command", "command": "mine-first.sh"},
        {"type": "command", "command": setup.hook_command()},  # where the old one stood, no timeout
        {"type": "command", "command": "mine-last.sh"},
    ]
    assert settings.read_text().startswith('{\n    "hooks"')  # the file's own indentation
    assert "nothing changed" in run_cli("setup").stdout
    project = user_project(tmp_path)
    ran = sh(setup.hook_command(), {"hook_event_name": "UserPromptSubmit", "session_id": "s",
                                    "cwd": str(project), "prompt": "x"}, project)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, b"", b"")


def test_setup_says_so_when_the_plugin_is_enabled_too(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_text(json.dumps({"enabledPlugins": {"claudetto@claudetto": True, "other@x": True}}))
    result = run_cli("setup")
    assert result.returncode == 0
    assert "plugin is enabled too" in result.stdout
    assert json.loads(run_cli("setup", "--json").stdout)["plugin_enabled"] is True
    settings.write_text(json.dumps({"enabledPlugins": {"claudetto@claudetto": False}}))
    assert "plugin is enabled" not in run_cli("setup").stdout


def test_a_venv_that_sees_the_systems_packages_runs_site(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Its packages may be in the system's site-packages, which only `site` knows."""
    venv = tmp_path / "sysvenv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    command = f"{shlex.quote(str(venv / 'bin' / 'python'))} -I -S -c {shlex.quote(PROBE + setup.entry_code(str(ROOT)))}"
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(tmp_path), "prompt": "hi"}
    result = sh(command, prompt, tmp_path)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    assert "site" in modules_of(result)
    plain = tmp_path / "plainvenv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(plain)], check=True)
    command = command.replace(shlex.quote(str(venv / "bin" / "python")), shlex.quote(str(plain / "bin" / "python")))
    result = sh(command, prompt, tmp_path)
    assert result.returncode == 0 and "site" not in modules_of(result)
