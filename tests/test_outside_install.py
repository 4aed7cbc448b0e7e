"""An outside suite's second day: claudetto as a user installs it, seen only through the
contract (console scripts, the hook commands `setup` writes, JSON shapes, exact strings), real
files, real git and real processes; nothing of app/ or hooks/ is imported.

The install is built once for the module: a fresh venv holding claudetto as a plain
(non-editable) wheel installed by pip, so the packages live in site-packages and the console
scripts are pip's. The wheel is packed here from the tree (what hatchling packs: the files of
`app/` and `hooks/` that git does not ignore) and installed `--no-deps --no-index`: the
build backend is not in the project's venv and the suite must not reach a registry. The
dependencies are the project venv's own, linked into the new venv's site-packages.

The machine is hostile the way users' machines are: HOME (where the venv lives too) and the
project path hold spaces, quotes and a `$`; CLAUDE_CONFIG_DIR has a `$` in its name; the
project has its own `app/`, `hooks/`, `json.py`, `site.py`... packages; PYTHONPATH,
PYTHONHOME, PYTHONSTARTUP, PYTHONINSPECT and PYTHONWARNINGS are set; a `python3` and a
`python` on PATH are other programs. Every hook is run exactly as Claude Code runs it: the
command string setup wrote, through `sh -c`, JSON on stdin.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import sysconfig
import time
import tomllib
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EVENTS = ("SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse", "WorktreeCreate",
          "WorktreeRemove")
#: CONTRACT "Hooks": the tools each tool event acts on (PreToolUse: writes into a memory folder;
#: PostToolUse: Edit/Write/MultiEdit/NotebookEdit for the ledger, Bash/Write for GC records)
TOOL_MATCHERS = {"PreToolUse": {"Write", "Edit", "MultiEdit"},
                 "PostToolUse": {"Edit", "Write", "MultiEdit", "NotebookEdit", "Bash"}}
COMMANDS = ("sessions", "gc", "clean", "worktrees", "release", "ledger", "memory", "supersede", "setup")
DECOYS = ("app", "hooks", "json", "site", "sitecustomize", "usercustomize", "typing", "pathlib", "fnv_c")
USER_SETTINGS = (b'{\n\t"theme":"dark",\n\t"permissions": {"allow": ["Read", "Bash(ls:*)"]},\n'
                 b'\t"model": "caf\\u00e9",\n\t"hooks": {"Stop": [{"hooks": [{"type": "command", '
                 b'"command": "echo bye"}]}]}\n}')


def slug(path: Path | str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


# --- the install ------------------------------------------------------------------------------


def pack_wheel(out: Path) -> Path:
    """claudetto's wheel as hatchling packs it (pyproject: packages app and hooks, console
    scripts from [project.scripts]), made without the build backend."""
    toml = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = toml["project"]
    name, version = project["name"], project["version"]
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "--", "app", "hooks"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    forced = toml["tool"]["hatch"]["build"]["targets"]["wheel"].get("force-include", {})
    assert all(source == target for source, target in forced.items()), forced  # packed where they are
    files = sorted({p for p in listed if p and (ROOT / p).is_file()} | set(forced))
    info = f"{name}-{version}.dist-info"
    scripts = "".join(f"{k} = {v}\n" for k, v in project["scripts"].items())
    extra = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: outside-suite\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{info}/entry_points.txt": f"[console_scripts]\n{scripts}"}
    wheel = out / f"{name}-{version}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in [*((p, (ROOT / p).read_bytes()) for p in files), *((k, v.encode()) for k, v in extra.items())]:
            zf.writestr(arc, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arc},sha256={digest},{len(data)}\n")
        zf.writestr(f"{info}/RECORD", "".join(record) + f"{info}/RECORD,,\n")
    return wheel


def install(venv: Path, wheelhouse: Path) -> None:
    """A fresh venv with claudetto installed by pip, the dependencies linked in."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    wheel = pack_wheel(wheelhouse)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, env=env, timeout=120)
    ours = Path(sysconfig.get_paths()["purelib"])
    theirs = next((venv / "lib").glob("python3*/site-packages"))
    for entry in ours.iterdir():
        if entry.name.startswith(("claudetto", "_editable_impl_", "__editable__", "pip", "__pycache__")) \
                or entry.suffix == ".pth" or (theirs / entry.name).exists():
            continue
        (theirs / entry.name).symlink_to(entry)


# --- the machine ------------------------------------------------------------------------------


@dataclass
class Machine:
    base: Path
    home: Path
    bin: Path
    config: Path
    utmp: Path
    project: Path
    env: dict[str, str]  # what the user's shell (and so Claude, and its hooks) runs with
    got: dict[str, Any] = field(default_factory=dict)

    def run(self, argv: list[str], *, cwd: Path | None = None, stdin: bytes | None = None,
            env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(argv, input=stdin, capture_output=True, cwd=str(cwd or self.home),
                              env=env or self.env, timeout=timeout, check=False)

    def cli(self, *args: str, script: str = "claudetto", cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
        return self.run([str(self.bin / script), *args], cwd=cwd, env=env or self.plain_env())

    def plain_env(self, **more: str) -> dict[str, str]:
        """The user's terminal without the hostile PYTHON* variables (the console scripts are
        no hook: PYTHONHOME breaks any Python started without -I, claudetto's or not)."""
        return {**{k: v for k, v in self.env.items() if not k.startswith("PYTHON")}, **more}

    def hook(self, command: str, payload: dict[str, Any] | bytes, cwd: Path) -> tuple[subprocess.CompletedProcess[bytes], float]:
        """The hook as Claude runs it: the command string through `sh -c` in a process group of its
        own, the event on stdin; once it exits, its group is killed, as when Claude exits after
        SessionEnd (what must go on, the cleanup, the sweep, a release, is detached from it)."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        start = time.monotonic()
        proc = subprocess.Popen(["sh", "-c", command], cwd=str(cwd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                env={**self.env, "CLAUDE_PROJECT_DIR": str(self.project)})
        out, err = proc.communicate(data, timeout=60)
        seconds = time.monotonic() - start
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seconds


def make_project(m: Machine) -> None:
    """A repository with its own app/, hooks/, json.py... (each writes a marker when imported),
    one memory index line naming a file that is not there (a finding SessionStart tells)."""
    m.project.mkdir(parents=True)
    marks = m.base / "imported"
    marks.mkdir()
    for name in DECOYS:
        body = f"open({str(marks / name)!r}, 'w').write('imported')\n"
        if name in ("app", "hooks"):
            (m.project / name).mkdir()
            (m.project / name / "__init__.py").write_text(body)
        else:
            (m.project / f"{name}.py").write_text(body)
    (m.project / "hooks" / "__main__.py").write_text(body.replace("'imported'", "'main'") + "raise SystemExit(3)\n")
    (m.project / "hooks" / "entry.py").write_text(body + "def run():\n    raise SystemExit(4)\n")
    (m.project / "startup.py").write_text(f"open({str(marks / 'startup')!r}, 'w').write('run')\n")
    (m.project / "README.md").write_text("# shop\n")
    (m.project / "package-lock.json").write_text('{"lockfileVersion": 3}\n')
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        done = m.run(["git", *argv], cwd=m.project, env=m.plain_env())
        assert done.returncode == 0, done
    memory = m.config / "projects" / slug(m.project) / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- [Deploy notes](deploy.md) \u2014 how the shop deploys\n")
    m.got["memory"] = memory


def hostile_env(m: Machine, fakebin: Path) -> dict[str, str]:
    keep = {k: os.environ[k] for k in ("LANG", "LC_ALL", "TERM") if k in os.environ}
    return {
        **keep,
        "PATH": f"{fakebin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(m.home),
        "CLAUDE_CONFIG_DIR": str(m.config),
        "TMPDIR": str(m.utmp),  # CLAUDE_CODE_TMPDIR and CLAUDETTO_HOME left to their defaults
        # never the machine's /etc/claude-code/managed-settings.json
        "CLAUDETTO_MANAGED_SETTINGS": str(m.base / "managed-settings.json"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "User", "GIT_AUTHOR_EMAIL": "user@example.invalid",
        "GIT_COMMITTER_NAME": "User", "GIT_COMMITTER_EMAIL": "user@example.invalid",
        "PYTHONPATH": f"{m.project}:.",
        "PYTHONHOME": str(m.project),
        "PYTHONSTARTUP": str(m.project / "startup.py"),
        "PYTHONINSPECT": "1",
        "PYTHONWARNINGS": "error",
        "PYTHONUSERBASE": str(m.project),
    }


def session_payload(m: Machine, event: str, sid: str, cwd: Path, **more: Any) -> dict[str, Any]:
    return {"hook_event_name": event, "session_id": sid, "cwd": str(cwd),
            "transcript_path": str(m.config / "projects" / slug(cwd) / f"{sid}.jsonl"),
            "permission_mode": "default", **more}


def run_with_pythonpath(m: Machine) -> None:
    """The contract's entry (`python -P -m hooks`) and the console script from a folder with its
    own `app/` package, which the user's PYTHONPATH names (`.` in a shell profile is common)."""
    theirs = m.base / "their project"
    (theirs / "app").mkdir(parents=True)
    (theirs / "app" / "__init__.py").write_text(f"open({str(m.base / 'their-app-ran')!r}, 'w').write('ran')\n")
    (theirs / "f.txt").write_text("one\n")
    env = m.plain_env(PYTHONPATH=".", CLAUDETTO_HOME=str(m.base / "state-pythonpath"))
    post = {"hook_event_name": "PostToolUse", "session_id": "s-path", "cwd": str(theirs), "tool_name": "Write",
            "tool_input": {"file_path": str(theirs / "f.txt"), "content": "one\n"}, "tool_response": {},
            "transcript_path": "/none.jsonl", "tool_use_id": "toolu_p"}
    m.got["pythonpath_hook"] = m.run([str(m.bin / "python"), "-P", "-m", "hooks"], cwd=theirs,
                                     stdin=json.dumps(post).encode(), env=env)
    m.got["pythonpath_ledger"] = m.base / "state-pythonpath" / "ledger.json"
    m.got["pythonpath_hook_ran"] = (m.base / "their-app-ran").exists()
    m.got["pythonpath_cli"] = m.cli("sessions", "--json", cwd=theirs, env=env)
    m.got["pythonpath_ran"] = (m.base / "their-app-ran").exists()


def run_setup(m: Machine) -> None:
    settings = m.config / "settings.json"
    settings.write_bytes(USER_SETTINGS)
    got = m.got
    got["dry"] = m.cli("setup", "--dry-run", "--json")
    got["dry_files"] = sorted(os.listdir(m.config)), settings.read_bytes()  # projects/ and settings.json
    got["setup"] = m.cli("setup", "--json")
    got["setup_bytes"] = settings.read_bytes()
    got["setup_files"] = sorted(os.listdir(m.config))
    got["again"] = m.cli("setup", "--json")
    got["again_bytes"] = settings.read_bytes()
    got["again_files"] = sorted(os.listdir(m.config))
    got["settings"] = json.loads(got["setup_bytes"])


def wait_until(check: Any, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def run_release(m: Machine, cmd: dict[str, str], sid: str) -> None:
    """Seed 002 through the installed hooks: the session's checkout is released when it ends
    (scratch deleted, .tmp/ kept, by a detached process), and the resumed session, started
    from the launch directory, is told what went and how to reinstall it."""
    got, p = m.got, m.project
    got["create2"] = m.hook(cmd["WorktreeCreate"], session_payload(m, "WorktreeCreate", sid, p, name="bold-oak-a3f2"), p)
    checkout = got["checkout2"] = p / ".claude" / "worktrees" / "bold-oak-a3f2"
    if checkout.is_dir():
        (checkout / "node_modules" / "left-pad").mkdir(parents=True)
        (checkout / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1;\n" * 200)
        (checkout / ".tmp").mkdir()
        (checkout / ".tmp" / "report.txt").write_text("the session's report\n")
    got["end"] = m.hook(cmd["SessionEnd"], session_payload(m, "SessionEnd", sid, checkout, reason="prompt_input_exit"),
                        checkout if checkout.is_dir() else p)
    got["released"] = wait_until(lambda: not (checkout / "node_modules").exists())
    got["resume"] = m.hook(cmd["SessionStart"], session_payload(m, "SessionStart", sid, p, source="resume"), p)
    got["resume_again"] = m.hook(cmd["SessionStart"], session_payload(m, "SessionStart", sid, p, source="resume"), p)
    got["end_again"] = m.hook(cmd["SessionEnd"], session_payload(m, "SessionEnd", sid, p, reason="other"), p)


def run_hooks(m: Machine) -> None:
    """One session's events, each through the command setup wrote for it."""
    got, p = m.got, m.project
    commands = {e: [h["command"] for entry in got["settings"]["hooks"].get(e, []) for h in entry["hooks"]
                    if h["command"].endswith("# claudetto")] for e in EVENTS}
    got["commands"] = commands
    if not all(len(commands[e]) == 1 for e in EVENTS):
        return
    cmd = {e: commands[e][0] for e in EVENTS}
    sid = got["sid"] = str(uuid.uuid4())
    memory = got["memory"]
    got["start"] = m.hook(cmd["SessionStart"], session_payload(m, "SessionStart", sid, p, source="startup",
                                                                  model="claude-opus-5-5"), p)
    note = memory / "note.md"
    got["deny"] = m.hook(cmd["PreToolUse"], session_payload(
        m, "PreToolUse", sid, p, tool_name="Write", tool_use_id="toolu_1",
        tool_input={"file_path": str(note), "content": "The deploy moved last week.\n"}), p)
    target = p / "notes 'a'.txt"
    got["allow"] = m.hook(cmd["PreToolUse"], session_payload(
        m, "PreToolUse", sid, p, tool_name="Write", tool_use_id="toolu_2",
        tool_input={"file_path": str(target), "content": "one\n"}), p)
    target.write_text("one\n")
    got["post"] = m.hook(cmd["PostToolUse"], session_payload(
        m, "PostToolUse", sid, p, tool_name="Write", tool_use_id="toolu_2", duration_ms=3,
        tool_input={"file_path": str(target), "content": "one\n"},
        tool_response={"type": "create", "filePath": str(target)}), p)
    got["target"] = target
    target.write_text("two\n")  # the user changes it after Claude's edit
    prompt = session_payload(m, "UserPromptSubmit", sid, p, prompt="go on")
    got["prompt"] = m.hook(cmd["UserPromptSubmit"], prompt, p)
    got["prompt_again"] = m.hook(cmd["UserPromptSubmit"], prompt, p)
    got["create"] = m.hook(cmd["WorktreeCreate"], session_payload(m, "WorktreeCreate", sid, p, name="feature/login"), p)
    checkout = got["checkout"] = p / ".claude" / "worktrees" / "feature+login"
    if checkout.is_dir():
        got["branch"] = m.run(["git", "branch", "--show-current"], cwd=checkout, env=m.plain_env()).stdout
    got["remove"] = m.hook(cmd["WorktreeRemove"], session_payload(
        m, "WorktreeRemove", sid, p, worktree_path=str(checkout)), p)
    got["bad"] = [m.hook(cmd[e], b"{not json", p) for e in ("SessionStart", "PostToolUse", "UserPromptSubmit")]
    got["create_bad"] = [m.hook(cmd["WorktreeCreate"], session_payload(m, "WorktreeCreate", sid, p, name=name), p)
                         for name in ("a/../b", ".git", "x" * 65)]
    no_session = session_payload(m, "WorktreeCreate", sid, p, name="calm-river-7c1d")
    del no_session["session_id"]
    got["create_no_session"] = m.hook(cmd["WorktreeCreate"], no_session, p)
    got["create_dirty"] = m.hook(cmd["WorktreeCreate"], session_payload(m, "WorktreeCreate", sid, p, name="wip"), p)
    dirty = got["dirty"] = p / ".claude" / "worktrees" / "wip"
    if dirty.is_dir():
        (dirty / "mine.txt").write_text("unsaved work\n")
    got["remove_dirty"] = m.hook(cmd["WorktreeRemove"], session_payload(m, "WorktreeRemove", sid, p,
                                                                       worktree_path=str(dirty)), p)
    run_release(m, cmd, sid)
    log = Path(os.path.realpath(m.utmp)) / "claudetto" / slug(p) / f"{sid}.log"
    wait_until(lambda: "CLEANED " in (log.read_text() if log.exists() else ""))
    got["log"] = log.read_text() if log.exists() else ""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    base = tmp_path_factory.mktemp("install")
    home = base / "my home 'q'"  # no `"`: pip's launcher of a console script cannot quote one
    m = Machine(base=base, home=home, bin=home / "src" / "claudetto venv" / "bin",
                config=home / ".claude $USER cfg", utmp=base / "tmp link", project=home / "code" / "my \"shop\" $HOME 'x'",
                env={})
    for folder in (home / "src", base / "utmp", base / "wheelhouse", base / "fakebin"):
        folder.mkdir(parents=True)
    m.utmp.symlink_to(base / "utmp")  # the temp root through a link, as /tmp is on macOS
    install(m.bin.parent, base / "wheelhouse")
    fakebin = base / "fakebin"
    for name in ("python3", "python"):
        (fakebin / name).write_text(f"#!/bin/sh\necho \"$0 $*\" >> {str(base / 'fake-python-ran')!r}\nexit 3\n")
        (fakebin / name).chmod(0o755)
    m.env = hostile_env(m, fakebin)
    make_project(m)
    run_with_pythonpath(m)  # first: on a fresh install, before any hook built the import cache
    run_setup(m)
    run_hooks(m)
    yield m


def doc(done: subprocess.CompletedProcess[bytes]) -> Any:
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done
    return json.loads(done.stdout)


# --- the install and setup --------------------------------------------------------------------


def test_the_console_scripts_are_pips_and_claudetto_runs_from_site_packages(machine: Machine) -> None:
    for script in ("claudetto", "claudetto-gc"):
        assert (machine.bin / script).is_file()
    shown = machine.cli("--version")
    assert (shown.returncode, shown.stderr) == (0, b"") and shown.stdout == b"claudetto 0.1.0\n"
    for event, (command,) in machine.got["commands"].items():
        argv = shlex.split(command)
        assert argv[0] == str(machine.bin / "python"), (event, argv)
        assert "site-packages" in command and str(ROOT) not in command, (event, command)


def test_setup_dry_run_writes_nothing_and_setup_adds_one_entry_per_event_with_one_backup(machine: Machine) -> None:
    got = machine.got
    dry = doc(got["dry"])
    assert (dry["dry_run"], dry["changed"], dry["backup"]) == (True, True, None)
    assert got["dry_files"] == (["projects", "settings.json"], USER_SETTINGS)
    made = doc(got["setup"])
    assert made["changed"] is True and sorted(made["events"]) == sorted(EVENTS)
    assert made["temp_install"] is None and made["settings"] == str(machine.config / "settings.json")
    assert made["other_worktree_hooks"] == []
    backups = [n for n in got["setup_files"] if n not in ("settings.json", "projects")]
    assert len(backups) == 1 and re.fullmatch(r"settings\.json\.bak-\d{8}-\d{6}", backups[0])
    assert made["backup"] == str(machine.config / backups[0])
    assert (machine.config / backups[0]).read_bytes() == USER_SETTINGS
    again = doc(got["again"])
    assert (again["changed"], again["backup"]) == (False, None)
    assert got["again_bytes"] == got["setup_bytes"] and got["again_files"] == got["setup_files"]


def test_setup_keeps_every_user_setting_and_the_files_layout(machine: Machine) -> None:
    settings, text = machine.got["settings"], machine.got["setup_bytes"]
    assert (settings["theme"], settings["model"]) == ("dark", "caf\u00e9")
    assert settings["permissions"] == {"allow": ["Read", "Bash(ls:*)"]}
    assert settings["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "echo bye"}]}]
    assert b'"theme":"dark"' in text and b'"model": "caf\\u00e9"' in text and b'["Read", "Bash(ls:*)"]' in text
    assert text.startswith(b'{\n\t"theme"') and not text.endswith(b"\n")


def test_setup_writes_the_contracts_events_and_matchers_and_no_timeout(machine: Machine) -> None:
    hooks = machine.got["settings"]["hooks"]
    for event in EVENTS:
        ours = [e for e in hooks[event] if any(h["command"].endswith("# claudetto") for h in e["hooks"])]
        assert len(ours) == 1 and len(ours[0]["hooks"]) == 1, (event, hooks[event])
        entry, hook = ours[0], ours[0]["hooks"][0]
        assert hook["type"] == "command" and "timeout" not in hook and "async" not in hook, hook
        if event in TOOL_MATCHERS:
            assert set(entry["matcher"].split("|")) == TOOL_MATCHERS[event], entry
        else:  # every source, every reason, every name
            assert entry.get("matcher", "") in ("", "*"), entry
        assert re.search(r" -[IP]\b", hook["command"]), hook  # the project's own packages stay out


def test_the_plugins_hooks_json_names_the_same_events_and_matchers_as_setup(machine: Machine) -> None:
    """The two install routes run the same hooks: the plugin's hooks.json (as the wheel ships it)
    and setup's entries agree on every event and matcher, and neither asks for a timeout."""
    shipped = next(machine.bin.parent.glob("lib/python3*/site-packages/hooks/hooks.json"))
    plugin = json.loads(shipped.read_text())["hooks"]
    written = machine.got["settings"]["hooks"]

    def matchers(hooks: dict[str, Any], event: str, ours: bool) -> list[str]:
        return [e.get("matcher", "") for e in hooks[event]
                if not ours or any(h["command"].endswith("# claudetto") for h in e["hooks"])]

    assert set(plugin) == set(EVENTS)
    for event in EVENTS:
        assert matchers(plugin, event, False) == matchers(written, event, True), event
        assert all("timeout" not in h for e in plugin[event] for h in e["hooks"]), event


def test_setup_uninstall_gives_the_file_back_byte_for_byte_with_a_backup(machine: Machine, tmp_path: Path) -> None:
    """Run last on the machine's settings (the hooks above ran first, in the fixture)."""
    settings = machine.config / "settings.json"
    before = sorted(os.listdir(machine.config))
    done = machine.cli("setup", "--uninstall")
    assert (done.returncode, b"Traceback" in done.stderr) == (0, False), done
    assert settings.read_bytes() == USER_SETTINGS
    after = sorted(os.listdir(machine.config))
    new = sorted(set(after) - set(before))
    assert len(after) == len(before) + 1 and re.fullmatch(r"settings\.json\.bak-[-\d]+", new[0]), after
    again = doc(machine.cli("setup", "--uninstall", "--json"))
    assert (again["changed"], again["backup"]) == (False, None) and settings.read_bytes() == USER_SETTINGS
    done = machine.cli("setup")  # back for the tests that may run after
    assert done.returncode == 0, done


# --- the hooks, as Claude runs them --------------------------------------------------------------


def quiet(done: subprocess.CompletedProcess[bytes]) -> bool:
    return (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def context(done: subprocess.CompletedProcess[bytes], event: str) -> str:
    assert done.returncode == 0 and done.stderr == b"", done
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == event
    return str(out["additionalContext"])


def test_session_start_answers_at_once_with_the_memory_finding(machine: Machine) -> None:
    done, seconds = machine.got["start"]
    text = context(done, "SessionStart")
    assert "deploy.md" in text, text
    assert seconds < 3.0  # the cleanup and the sweep run detached


def test_the_detached_cleanup_runs_in_the_hostile_environment_and_logs_its_report(machine: Machine) -> None:
    log = machine.got["log"]
    assert re.search(r"^CLEANED folders=\d+ bytes=\d+ files=\d+ worktrees=\d+ probes=\d+$", log, re.M), log
    assert re.search(r"^UNKNOWN_KEPT \d+$", log, re.M), log


def test_pre_tool_use_denies_a_memory_write_without_frontmatter_and_lets_others_be(machine: Machine) -> None:
    done, _ = machine.got["deny"]
    assert done.returncode == 0 and done.stderr == b"", done
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny")
    assert out["permissionDecisionReason"].strip()
    assert quiet(machine.got["allow"][0]), machine.got["allow"]


def test_post_tool_use_is_silent_and_user_prompt_submit_says_the_exact_ledger_line_once(machine: Machine) -> None:
    assert quiet(machine.got["post"][0]), machine.got["post"]
    line = f"The user or a tool changed `{machine.got['target']}` after the last edit of `main`."
    assert context(machine.got["prompt"][0], "UserPromptSubmit") == line
    assert quiet(machine.got["prompt_again"][0]), machine.got["prompt_again"]


def test_claudetto_home_defaults_to_home_dot_claudetto(machine: Machine) -> None:
    ledger = json.loads((machine.home / ".claudetto" / "ledger.json").read_text())
    assert str(machine.got["target"]) in ledger["files"]


def test_worktree_create_prints_the_path_last_and_remove_exits_0_once_it_is_gone(machine: Machine) -> None:
    done, _ = machine.got["create"]
    checkout = machine.got["checkout"]
    assert done.returncode == 0, done
    assert done.stdout.decode().strip().splitlines()[-1] == str(checkout)
    assert machine.got["branch"] == b"worktree-feature+login\n"
    removed, _ = machine.got["remove"]
    assert (removed.returncode, removed.stdout) == (0, b""), removed
    assert not checkout.exists()


def one_line_failure(done: subprocess.CompletedProcess[bytes]) -> bool:
    err = done.stderr.decode()
    return done.returncode != 0 and done.stdout.strip() == b"" and err.endswith("\n") and err.count("\n") == 1 \
        and "Traceback" not in err


def test_worktree_create_fails_loud_in_one_line_on_a_name_claude_refuses_or_without_session_id(
        machine: Machine) -> None:
    assert all(one_line_failure(done) for done, _ in machine.got["create_bad"]), machine.got["create_bad"]
    assert one_line_failure(machine.got["create_no_session"][0]), machine.got["create_no_session"]
    assert sorted(os.listdir(machine.project / ".claude" / "worktrees")) == ["bold-oak-a3f2", "wip"]


def test_worktree_remove_keeps_a_dirty_checkout_with_exit_1_and_one_line_naming_it(machine: Machine) -> None:
    assert machine.got["create_dirty"][0].returncode == 0, machine.got["create_dirty"]
    done, _ = machine.got["remove_dirty"]
    assert one_line_failure(done) and done.returncode == 1, done
    assert done.stderr.decode().startswith(f"claudetto: kept {machine.got['dirty']}: dirty"), done.stderr
    assert (machine.got["dirty"] / "mine.txt").read_text() == "unsaved work\n"


def test_session_end_prints_nothing_within_claudes_budget(machine: Machine) -> None:
    done, seconds = machine.got["end"]
    assert quiet(done), done
    assert seconds < 1.5


def test_session_end_releases_the_checkout_detached_and_the_resumed_session_is_told(machine: Machine) -> None:
    got = machine.got
    checkout = got["checkout2"]
    assert got["create2"][0].returncode == 0, got["create2"]
    assert got["released"] is True
    assert (checkout / ".tmp" / "report.txt").read_text() == "the session's report\n"
    assert (checkout / "README.md").is_file()  # the checkout stays for a later session
    text = context(got["resume"][0], "SessionStart")
    assert f"({checkout})" in text and "node_modules" in text, text
    assert "`npm ci` (package-lock.json)" in text, text
    assert "deploy.md" in text  # the memory finding too, in the same context
    again = context(got["resume_again"][0], "SessionStart")
    assert "deploy.md" in again and "node_modules" not in again, again  # the note is told once
    assert quiet(got["end_again"][0]) and got["end_again"][1] < 1.5


def test_bad_input_through_the_installed_command_exits_0_and_prints_nothing(machine: Machine) -> None:
    assert all(quiet(done) for done, _ in machine.got["bad"]), machine.got["bad"]


def test_no_project_module_no_startup_file_and_no_python_on_path_ever_ran(machine: Machine) -> None:
    """Checked after every hook above and its detached children (the cleanup logged its report)."""
    assert machine.got["log"]
    assert sorted(os.listdir(machine.base / "imported")) == []
    assert not (machine.base / "fake-python-ran").exists()


def test_python_p_m_hooks_with_a_pythonpath_naming_a_project_app_runs_claudettos_own(machine: Machine) -> None:
    """CONTRACT "Set-up": a project with its own app/ must not change what the hooks do; `-P`
    keeps the current folder out, not PYTHONPATH. On a fresh install (no import cache yet) the
    project's `app` was imported and the edit went unrecorded, silently."""
    done = machine.got["pythonpath_hook"]
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), done
    ledger = json.loads(machine.got["pythonpath_ledger"].read_text())
    assert [Path(p).name for p in ledger["files"]] == ["f.txt"]
    assert machine.got["pythonpath_hook_ran"] is False


def test_the_console_script_with_a_pythonpath_naming_a_project_app_runs_claudettos_own(machine: Machine) -> None:
    """A console script imports its target from sys.path, PYTHONPATH first: the project's own
    app/ ran, and ended in a traceback, until the scripts' target became claudetto_cli."""
    done = machine.got["pythonpath_cli"]
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done
    assert json.loads(done.stdout)["sessions"] == [] and not machine.got["pythonpath_ran"]


# --- setup on the files users have ------------------------------------------------------------


def config_env(machine: Machine, config: Path) -> dict[str, str]:
    return machine.plain_env(CLAUDE_CONFIG_DIR=str(config))


def one_line_refusal(done: subprocess.CompletedProcess[bytes]) -> bool:
    err = done.stderr.decode()
    return done.returncode == 1 and done.stdout == b"" and err.endswith("\n") and err.count("\n") == 1 \
        and "Traceback" not in err


@pytest.mark.parametrize("text", [b'{\n  // my theme\n  "theme": "dark"\n}\n', b'{\n  "theme": "dark",\n}\n'],
                         ids=["comment", "trailing-comma"])
def test_a_settings_file_that_is_not_json_is_refused_and_left_as_it_is(machine: Machine, tmp_path: Path,
                                                                       text: bytes) -> None:
    """CONTRACT is silent on JSON5; docs/install.md: not valid JSON is left alone, exit 1."""
    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_bytes(text)
    os.utime(config / "settings.json", (time.time() - 60, time.time() - 60))  # no save of Claude's under way
    for args in (("setup",), ("setup", "--dry-run"), ("setup", "--uninstall")):
        done = machine.cli(*args, env=config_env(machine, config))
        assert one_line_refusal(done), (args, done)
    assert os.listdir(config) == ["settings.json"] and (config / "settings.json").read_bytes() == text


@pytest.mark.parametrize("text", [b"", b"\n", b"  \n\n", "\ufeff".encode(), b'{\n  "hooks": {\n    "PreToolUse": []\n  }\n}\n',
                                  b'{\n  "hooks": null,\n  "theme": "dark"\n}\n'],
                         ids=["empty", "newline", "blank", "bom", "empty-list-of-an-event", "null-hooks"])
def test_setup_then_uninstall_gives_a_blank_or_sparse_file_back_byte_for_byte(machine: Machine, tmp_path: Path,
                                                                              text: bytes) -> None:
    """A settings.json made by `touch` reads as no settings, and a `"hooks"` that is null or holds
    an empty list of one of claudetto's events is filled by the install: the uninstall left `{}`,
    or the settings without `"hooks"`, in their place."""
    config = tmp_path / "cfg"
    config.mkdir()
    settings = config / "settings.json"
    settings.write_bytes(text)
    os.utime(settings, (time.time() - 60, time.time() - 60))  # not a save of Claude's under way
    made = doc(machine.cli("setup", "--json", env=config_env(machine, config)))
    assert made["changed"] is True and Path(made["backup"]).read_bytes() == text
    assert doc(machine.cli("setup", "--uninstall", "--json", env=config_env(machine, config)))["changed"] is True
    assert settings.read_bytes() == text


def test_setup_names_another_worktree_tools_create_hook_it_adds_beside(machine: Machine, tmp_path: Path) -> None:
    """FACTS: every WorktreeCreate hook replaces Claude's own creation, and all of an event's
    hooks run at once: a worktree tool's hook (seed 002's `quest worktree hook`) beside
    claudetto's makes each worktree twice. Setup added its entry without a word."""
    config = tmp_path / "cfg"
    config.mkdir()
    theirs = {"type": "command", "command": "quest worktree hook"}
    (config / "settings.json").write_text(json.dumps({"hooks": {"WorktreeCreate": [{"hooks": [theirs]}]}}, indent=2))
    env = config_env(machine, config)
    made = doc(machine.cli("setup", "--json", env=env))
    assert made["other_worktree_hooks"] == [{"file": str(config / "settings.json"), "command": "quest worktree hook"}]
    told = machine.cli("setup", env=env)
    assert told.returncode == 0 and b"another WorktreeCreate hook (quest worktree hook)" in told.stdout, told
    assert json.loads((config / "settings.json").read_text())["hooks"]["WorktreeCreate"][0]["hooks"] == [theirs]


def test_an_unreadable_settings_file_is_refused_and_left_as_it_is(machine: Machine, tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    config.mkdir()
    settings = config / "settings.json"
    settings.write_bytes(b'{"theme": "dark"}\n')
    settings.chmod(0)
    try:
        done = machine.cli("setup", env=config_env(machine, config))
        assert one_line_refusal(done), done
        assert os.listdir(config) == ["settings.json"] and os.stat(settings).st_mode & 0o777 == 0
    finally:
        settings.chmod(0o600)
    assert settings.read_bytes() == b'{"theme": "dark"}\n'


def test_a_settings_link_into_a_dotfiles_repository_survives_setup_and_uninstall(machine: Machine,
                                                                                 tmp_path: Path) -> None:
    dotfiles, config = tmp_path / "dotfiles", tmp_path / "cfg"
    (dotfiles / "claude").mkdir(parents=True)
    config.mkdir()
    target = dotfiles / "claude" / "settings.json"
    target.write_bytes(b'{\n  "theme": "dark"\n}\n')
    env = config_env(machine, config)
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "dotfiles"]):
        assert machine.run(["git", *argv], cwd=dotfiles, env=env).returncode == 0
    link = config / "settings.json"
    link.symlink_to(target)
    made = doc(machine.cli("setup", "--json", env=env))
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert set(EVENTS) <= set(json.loads(target.read_bytes())["hooks"])
    assert made["backup"] and Path(made["backup"]).parent == config
    status = machine.run(["git", "status", "--porcelain"], cwd=dotfiles, env=env).stdout
    assert status == b" M claude/settings.json\n"  # nothing else left in the dotfiles repository
    assert doc(machine.cli("setup", "--uninstall", "--json", env=env))["changed"] is True
    assert link.is_symlink() and target.read_bytes() == b'{\n  "theme": "dark"\n}\n'
    assert machine.run(["git", "status", "--porcelain"], cwd=dotfiles, env=env).stdout == b""


# --- the console scripts on an empty machine ---------------------------------------------------


@dataclass
class Empty:
    """A user who just installed claudetto: no ~/.claude, no ~/.claudetto, not in a repository."""

    home: Path
    tmp: Path
    env: dict[str, str]
    got: dict[str, subprocess.CompletedProcess[bytes]]
    listings: dict[str, list[str]]


def tree(*roots: Path) -> list[str]:
    return sorted(os.path.join(top, n) for root in roots for top, dirs, names in os.walk(root) for n in dirs + names)


JSON_RUNS = {
    "sessions": ("sessions", "--json"), "gc_dry": ("gc", "--dry-run", "--json"),
    "clean_dry": ("clean", "--dry-run", "--json"), "worktrees": ("worktrees", "--json"),
    "ledger": ("ledger", "--json"), "memory": ("memory", "--json"),
    "setup_dry": ("setup", "--dry-run", "--json"),
}
USAGE_RUNS = {
    "unknown": ("frobnicate",), "gc_flag": ("gc", "--bogus"), "json_alone": ("--json",),
    "supersede_no_line": ("supersede", "notes.md"), "supersede_bad_line": ("supersede", "x.md", "--line", "one",
                                                                          "--correction", "c"),
    "release_empty": ("release", ""), "release_none": ("release",), "demo_abs": ("memory", "--demo", "/etc"),
}
DEMO_RUNS = {
    "sessions": ("sessions", "--json"), "gc": ("gc", "--json"), "clean": ("clean", "--json"),
    "worktrees": ("worktrees", "--json"), "ledger": ("ledger", "--json"), "memory": ("memory", "--json"),
    "release": ("release", "--dry-run", "--json", ".claude/worktrees/quiet-fern-2b9e"),
    "setup": ("setup", "--dry-run", "--json"),
}


@pytest.fixture(scope="module")
def empty(machine: Machine, tmp_path_factory: pytest.TempPathFactory) -> Empty:
    base = tmp_path_factory.mktemp("empty")
    home, tmp = base / "new user's home", base / "tmp"
    home.mkdir()
    tmp.mkdir()
    env = {**{k: v for k, v in machine.plain_env().items() if k not in ("CLAUDE_CONFIG_DIR",)},
           "HOME": str(home), "TMPDIR": str(tmp)}
    got: dict[str, subprocess.CompletedProcess[bytes]] = {}
    listings = {}
    for key, args in JSON_RUNS.items():  # listings and dry runs first: they write nothing
        got[key] = machine.cli(*args, cwd=home, env=env)
    listings["after_listing"] = tree(home, tmp)
    got["claudetto_gc"] = machine.cli("--json", script="claudetto-gc", cwd=home, env=env)
    got["gc"] = machine.cli("gc", "--json", cwd=home, env=env)
    got["clean"] = machine.cli("clean", "--json", cwd=home, env=env)
    listings["before_usage"] = tree(home, tmp)
    for key, args in USAGE_RUNS.items():
        got[f"usage_{key}"] = machine.cli(*args, cwd=home, env=env)
    got["usage_gc_script"] = machine.cli("--bogus", script="claudetto-gc", cwd=home, env=env)
    for command in ("", *COMMANDS):
        got[f"help_{command}"] = machine.cli(*([command] if command else []), "--help", cwd=home, env=env)
    got["help_gc_script"] = machine.cli("--help", script="claudetto-gc", cwd=home, env=env)
    listings["before_demo"] = tree(home, tmp)
    running = {key: subprocess.Popen([str(machine.bin / "claudetto"), *args, "--demo"], cwd=home, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for key, args in DEMO_RUNS.items()}
    running["gc_script"] = subprocess.Popen([str(machine.bin / "claudetto-gc"), "--demo", "--dry-run", "--json"],
                                            cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for key, proc in running.items():
        out, err = proc.communicate(timeout=120)
        got[f"demo_{key}"] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    listings["after_demo"] = tree(home, tmp)
    return Empty(home, tmp, env, got, listings)


def test_listings_and_dry_runs_on_an_empty_machine_write_nothing(empty: Empty) -> None:
    assert empty.listings["after_listing"] == []


@pytest.mark.parametrize("key", sorted(JSON_RUNS))
def test_each_json_document_on_an_empty_machine_is_alone_on_stdout(empty: Empty, key: str) -> None:
    done = empty.got[key]
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done
    json.loads(done.stdout)


def check_gc(report: Any, dry_run: bool) -> None:
    assert report["dry_run"] is dry_run and report["entries"] == []
    assert type(report["removed"]) is int and type(report["freed"]) is int
    assert (report["removed"], report["freed"]) == (0, 0)


def check_clean(report: Any, dry_run: bool) -> None:
    assert report["dry_run"] is dry_run
    assert set(report["cleaned"]) >= {"folders", "bytes", "files", "worktrees", "probes"}
    assert all(type(report["cleaned"][k]) is int and report["cleaned"][k] == 0
               for k in ("folders", "bytes", "files", "worktrees", "probes"))
    assert report["worktrees_kept"] == [] and report["unknown_kept"] == 0


def test_the_json_shapes_on_an_empty_machine(empty: Empty) -> None:
    got = {key: doc(done) for key, done in empty.got.items()
           if key in (*JSON_RUNS, "gc", "clean", "claudetto_gc")}
    assert got["sessions"] == {**got["sessions"], "sessions": []}
    assert got["worktrees"]["worktrees"] == [] and got["ledger"]["files"] == []
    assert got["memory"]["findings"] == []
    check_gc(got["gc_dry"], True)
    check_gc(got["gc"], False)
    check_gc(got["claudetto_gc"], False)
    check_clean(got["clean_dry"], True)
    check_clean(got["clean"], False)
    setup = got["setup_dry"]
    assert (setup["dry_run"], setup["changed"], setup["backup"]) == (True, True, None)
    assert setup["settings"] == str(empty.home / ".claude" / "settings.json")


@pytest.mark.parametrize("key", ["", *COMMANDS, "gc_script"])
def test_help_of_each_command_exits_0_on_stdout(empty: Empty, key: str) -> None:
    done = empty.got[f"help_{key}"]
    command = "gc" if key == "gc_script" else key
    assert (done.returncode, done.stderr) == (0, b""), done
    text = done.stdout.decode()
    assert text.startswith(f"usage: claudetto {command}".rstrip()), done.stdout[:200]
    if not command:  # the contract's every command is offered
        assert all(re.search(rf"^\s+{name}\s", text, re.M) for name in COMMANDS), text
    for flag in ("--json", "--dry-run") if command in ("gc", "clean", "release", "supersede", "setup") else ():
        assert flag in text, (command, flag)


@pytest.mark.parametrize("key", [*sorted(USAGE_RUNS), "gc_script"])
def test_a_usage_error_exits_2_and_ends_with_one_line_saying_what(empty: Empty, key: str) -> None:
    """CONTRACT: exit 2 on a usage error. argparse shows its usage first; the error itself is
    the one last line, never a traceback."""
    done = empty.got[f"usage_{key}"]
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (2, b""), done
    assert err.endswith("\n") and "Traceback" not in err
    assert err.splitlines()[-1].startswith("claudetto"), err


def test_usage_errors_and_help_write_nothing(empty: Empty) -> None:
    assert empty.listings["before_demo"] == empty.listings["before_usage"]


@pytest.mark.parametrize("key", [*sorted(DEMO_RUNS), "gc_script"])
def test_demo_of_each_command_answers_from_its_sandbox(empty: Empty, key: str) -> None:
    done = empty.got[f"demo_{key}"]
    assert done.returncode == 0, done
    err = done.stderr.decode()
    assert "Traceback" not in err and "--demo" in err.splitlines()[0], err
    report = json.loads(done.stdout)
    assert str(empty.home) not in json.dumps(report)  # nothing of the user's environment


def test_demo_shows_what_the_contract_says_it_holds(empty: Empty) -> None:
    """CONTRACT: live and dead sessions, real git worktrees in every state, outputs, ledger
    changes, memory rot."""
    got = {key: json.loads(empty.got[f"demo_{key}"].stdout) for key in DEMO_RUNS}
    assert {s["live"] for s in got["sessions"]["sessions"]} == {True, False}
    states = {w["state"] for w in got["worktrees"]["worktrees"]}
    assert states == {"active", "released", "cut_short", "unmanaged"}, states
    assert got["gc"]["entries"] and got["gc"]["removed"] > 0
    assert any(f["changed"] for f in got["ledger"]["files"])
    kinds = {f["kind"] for f in got["memory"]["findings"]}
    assert kinds == {"vanished_artifact", "stale_version_pin", "stale_sequence", "index_missing_file",
                     "index_unlisted_file"}, kinds
    assert got["release"]["dry_run"] is True


def test_demo_leaves_no_sandbox_and_nothing_of_the_users(empty: Empty) -> None:
    assert empty.listings["after_demo"] == empty.listings["before_demo"]
    assert not [n for n in os.listdir(empty.tmp) if n.startswith("claudetto-demo-")]

