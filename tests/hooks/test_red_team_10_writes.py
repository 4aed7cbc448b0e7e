"""Red team, round ten: the writes claudetto makes into the user's and Claude's files.

`claudetto setup` edits `$CLAUDE_CONFIG_DIR/settings.json`, a file a person lays out by hand;
the hooks print what the model reads; the ledger decides what it is told. Driven as Claude
and a user do it: the CLI and the hook entry in subprocesses, real files in the sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.core import paths
from tests.hooks.test_checkouts import GITIGNORE, Claude, fill_scratch, registry, released, wait_for
from tests.hooks.test_ledger_hooks import SID, edit, prompt
from tests.support import SandboxEnv, make_repo, run_cli

# A settings.json as people write it by hand: short lists on one line, an escape, a number
# in exponent form, a key without a space after its colon, a hook of their own.
HAND_LAID = """{
  "permissions": {"allow": ["Bash(ls:*)", "Read"], "deny": []},
  "env": {"GREETING": "caf\\u00e9", "RETRIES": 1E3},
  "model":"opus",
  "hooks": {
    "PostToolUse": [
      {"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}
    ]
  }
}
"""


def _setup(*args: str) -> None:
    result = run_cli("setup", *args)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("text", [
    HAND_LAID,
    HAND_LAID.replace(',\n  "hooks": {\n    "PostToolUse": [\n      {"matcher": "Edit", "hooks": '
                      '[{"type": "command", "command": "prettier --write"}]}\n    ]\n  }', ""),
    HAND_LAID.replace("\n", "\r\n"),
    "\ufeff" + HAND_LAID.replace("  ", "\t"),
    HAND_LAID.rstrip("\n"),
    HAND_LAID.replace('"hooks": {\n', '"hooks": {\n    "Stop": [],\n'),
], ids=["own-hooks", "no-hooks", "crlf", "bom-tabs", "no-final-newline", "empty-event-of-the-users"])
def test_setup_then_uninstall_gives_the_hand_laid_file_back_byte_for_byte(sandbox: SandboxEnv, text: str) -> None:
    """Written back whole by json.dumps, every setup re-laid the user's file: the one-line
    lists spread over lines, `\\u00e9` decoded, `1E3` became `1000.0`, and uninstall did not
    give the file back. Only what changed is rewritten now. An empty event list of the
    user's (`"Stop": []`) was dropped by every setup: it is theirs, and stays."""
    settings = sandbox.config / "settings.json"
    settings.write_bytes(text.encode())
    _setup()
    installed = settings.read_bytes().decode()
    for line in text.removeprefix("\ufeff").splitlines()[1:3]:  # what setup did not change is there as it was written
        assert line in installed.splitlines()
    data = json.loads(installed.removeprefix("\ufeff"))
    assert {"SessionStart", "PostToolUse", "WorktreeRemove"} <= set(data["hooks"])
    assert data["env"] == {"GREETING": "café", "RETRIES": 1000.0}
    _setup()  # again: nothing to change
    assert settings.read_bytes().decode() == installed
    _setup("--uninstall")
    assert settings.read_bytes() == text.encode()


def test_an_upgrade_rewrites_only_the_command_strings(sandbox: SandboxEnv) -> None:
    """Entries of the older form (every event, as an older claudetto wrote them) are brought
    up to date by changing their commands and nothing else: one line each, the keys the user
    set on them and their layout kept."""
    from app.core.setup import EVENTS

    settings = sandbox.config / "settings.json"
    old = "/usr/bin/python3 -P -m hooks # claudetto"
    entries = ",\n".join(f'    "{event}": [{{"hooks": [{{"type": "command", "command": {json.dumps(old)}, '
                         f'"statusMessage": "{event}"}}]}}]' for event in EVENTS)
    text = '{\n  "hooks": {\n' + entries + '\n  },\n  "model":"opus"\n}\n'
    settings.write_text(text)
    _setup()
    before, after = text.splitlines(), settings.read_text().splitlines()
    assert len(after) == len(before)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == len(EVENTS)
    command = json.loads(settings.read_text())["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert "from hooks.entry import run;run()" in command
    for was, now in changed:
        assert was.replace(json.dumps(old), json.dumps(command)) == now


def test_an_upgrade_keeps_the_order_the_user_gave_the_keys_of_its_hook(sandbox: SandboxEnv) -> None:
    """`{"command": ..., "timeout": 5, "type": "command"}`: the upgrade moved `type` to the
    front, one more line of the user's file rewritten for nothing."""
    settings = sandbox.config / "settings.json"
    old = "/usr/bin/python3 -P -m hooks # claudetto"
    hook = f'{{"command": {json.dumps(old)}, "timeout": 5, "type": "command"}}'
    settings.write_text('{\n  "hooks": {\n    "SessionEnd": [\n      {"hooks": [' + hook + ']}\n    ]\n  }\n}\n')
    _setup()
    entry = json.loads(settings.read_text())["hooks"]["SessionEnd"]
    assert list(entry[0]["hooks"][0]) == ["command", "timeout", "type"]
    assert '      {"hooks": [{"command": ' in settings.read_text()


def test_setup_says_when_disable_all_hooks_keeps_its_entries_from_running(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`disableAllHooks` in the user's own settings (or the project's) and setup said "did
    add claudetto's hooks" as if they would run: Claude runs none of them. Named now, in
    the text and in --json; the key itself is the user's and stays."""
    settings = sandbox.config / "settings.json"
    settings.write_text('{\n  "disableAllHooks": true\n}\n')
    result = run_cli("setup")
    assert result.returncode == 0
    assert f"note: {settings} sets disableAllHooks" in result.stdout
    assert json.loads(settings.read_text())["disableAllHooks"] is True
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    local = project / ".claude" / "settings.local.json"
    local.write_text('{"disableAllHooks": true}')
    settings.write_text('{\n  "disableAllHooks": false\n}\n')
    shown = json.loads(run_cli("setup", "--json", cwd=project).stdout)
    assert shown["disabled_in"] == [str(local)]
    local.write_text('{"disableAllHooks": false}')
    quiet = run_cli("setup", cwd=project)
    assert quiet.returncode == 0 and "disableAllHooks" not in quiet.stdout
    assert json.loads(run_cli("setup", "--uninstall", "--json").stdout)["disabled_in"] == []


def _session_start_into_a_closed_pipe(payload: dict[str, Any], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """SessionStart whose stdout Claude has closed already (the user quit while the session
    was starting): every write to it fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-P", "-m", "hooks"], input=json.dumps(payload).encode(),
                              stdout=write_end, stderr=subprocess.PIPE, cwd=str(cwd), timeout=60, check=False)
    finally:
        os.close(write_end)


@pytest.fixture
def claudes(sandbox: SandboxEnv) -> Iterator[Callable[..., Claude]]:
    """Stand-ins for running Claude processes (tests/hooks/test_checkouts.py), ended after."""
    made: list[Claude] = []

    def launch(cwd: Path, session_id: str | None = None) -> Claude:
        made.append(Claude(sandbox, session_id or str(uuid.uuid4()), cwd))
        return made[-1]

    yield launch
    for claude in made:
        claude.exit()


def test_a_reinstall_note_that_never_reached_the_model_comes_at_the_next_start(
        sandbox: SandboxEnv, tmp_path: Path, claudes: Callable[..., Claude]) -> None:
    """The note on what a release deleted was marked told in the registry before it was
    printed: a SessionStart whose stdout was gone lost it for good, and the model never
    learned why node_modules went. Like the ledger's lines, it is told only once printed."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": GITIGNORE,
                                               "package.json": "{}\n", "package-lock.json": "{}\n"})
    claude = claudes(repo)
    checkout = claude.create("noted")
    fill_scratch(checkout)
    claude.end(cwd=checkout)
    claude.exit()
    assert wait_for(lambda: released(sandbox, checkout))

    payload = {"hook_event_name": "SessionStart", "session_id": claude.session_id, "cwd": str(repo),
               "source": "resume", "transcript_path": "/nonexistent.jsonl"}
    lost = _session_start_into_a_closed_pipe(payload, repo)
    assert lost.returncode == 0 and lost.stderr == b""
    assert registry(sandbox)[str(checkout)]["state"] == "active"  # claimed all the same
    note = claudes(repo, claude.session_id).start("resume")
    assert note.startswith(f"claudetto released this checkout ({checkout})")
    assert claudes(checkout).start() == ""  # and then told once


def test_backups_are_bounded_the_first_and_the_newest_kept(sandbox: SandboxEnv) -> None:
    """Every setup that changes the file leaves a backup, and nothing ever took one away: a
    user who runs setup at each upgrade piled them up in the config folder. Ten are kept: the
    first (the file before claudetto ever changed it) and the newest. A file of the user's
    named like one, or a link, is not setup's and stays."""
    settings = sandbox.config / "settings.json"
    settings.write_text('{\n  "model": "opus"\n}\n')
    old = [f"settings.json.bak-202601{day:02d}-120000" for day in range(1, 12)]
    for age, name in enumerate(old):
        (sandbox.config / name).write_text(f"backup {age}\n")
        os.utime(sandbox.config / name, (1_700_000_000 + age, 1_700_000_000 + age))
    (sandbox.config / "settings.json.bak-mine").write_text("the user's own\n")
    (sandbox.config / "settings.json.bak-20250101-000000").symlink_to(sandbox.config / "settings.json.bak-mine")
    result = json.loads(run_cli("setup", "--json").stdout)
    left = sorted(p.name for p in sandbox.config.glob("settings.json.bak-2*") if not p.is_symlink())
    assert len(left) == 10
    assert old[0] in left and (sandbox.config / old[0]).read_text() == "backup 0\n"
    assert old[1] not in left and old[2] not in left and old[3] in left
    assert Path(result["backup"]).name in left
    assert (sandbox.config / "settings.json.bak-mine").read_text() == "the user's own\n"
    assert (sandbox.config / "settings.json.bak-20250101-000000").is_symlink()



def test_a_newer_claudettos_keys_in_the_ledger_are_kept_through_edits_and_prompts(tmp_path: Path) -> None:
    """The plugin and a checkout may run two versions of claudetto on one CLAUDETTO_HOME: what
    a newer one wrote into ledger.json (a key of the file, a key of an entry) must survive
    the older one's edits and prompts, and not silence its lines. (Held when tried.)"""
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    for file in (first, second):
        file.write_text("x = 1\n")
        edit(file)
    ledger_file = paths.ledger_file()
    data = json.loads(ledger_file.read_text())
    data["future"] = {"kept": True}
    for entry in data["files"].values():
        entry["future_key"] = [1, 2]
    ledger_file.write_text(json.dumps(data))
    first.write_text("x = 2\n")
    assert prompt(tmp_path) == f"The user or a tool changed `{first}` after the last edit of `main`."
    third = tmp_path / "c.py"
    third.write_text("y\n")
    edit(third)
    after = json.loads(ledger_file.read_text())
    assert after["future"] == {"kept": True}
    assert after["files"][str(first)]["future_key"] == [1, 2] and after["files"][str(second)]["future_key"] == [1, 2]
    shown = {f["path"]: f for f in json.loads(run_cli("ledger", "--json").stdout)["files"]}
    assert shown[str(first)]["changed"] and shown[str(first)]["told"]
    assert not shown[str(second)]["changed"]


# Claude saves settings.json with a plain truncating write (no temp file, no rename): for a
# moment the file is empty, or half written. This writer does the same, slowly.
_TRUNCATING_WRITER = """
import sys, time
path, text, split, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open(path, "w") as fh:
    fh.write(text[:split]); fh.flush()
    open(ready, "w").close()
    time.sleep(0.2)
    fh.write(text[split:])
"""


@pytest.mark.parametrize("split", [0, 20], ids=["empty", "half-written"])
def test_setup_while_claude_saves_settings_loses_none_of_them(sandbox: SandboxEnv, tmp_path: Path,
                                                               split: int) -> None:
    """Read while Claude's save had truncated the file, setup took the empty file for no
    settings, wrote the hooks alone and renamed them into place; Claude's save then went to
    the replaced file, and every setting of the user was gone. Half written, setup refused
    it as not JSON. An empty or broken text is read again until it settles."""
    from app.core.setup import setup

    settings = sandbox.config / "settings.json"
    text = json.dumps({"permissions": {"allow": ["Read"]}, "env": {"TOKEN": "t" * 200}, "model": "opus"},
                      indent=2) + "\n"
    settings.write_text(text)
    ready = tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", _TRUNCATING_WRITER, str(settings), text, str(split), str(ready)])
    try:
        while not ready.exists():
            assert writer.poll() is None
        result = setup()
    finally:
        writer.wait(10)
    assert result.changed
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["env"]["TOKEN"] == "t" * 200
    assert "SessionStart" in data["hooks"]


def test_a_cleanup_while_claude_saves_settings_keeps_the_users_longer_period(sandbox: SandboxEnv,
                                                                             tmp_path: Path) -> None:
    """`cleanupPeriodDays: 90`, read in the instant Claude's truncating save left the file
    empty: taken as not JSON, the default of 30 days held and the cleanup deleted a session
    folder of 45 days the user had asked to keep. An empty or broken settings file is read
    again until it settles."""
    from app.core import hygiene
    from tests.test_seed_000 import DAY, folder

    settings = sandbox.config / "settings.json"
    text = json.dumps({"cleanupPeriodDays": 90}, indent=2) + "\n"
    settings.write_text(text)
    kept = folder(sandbox.claude_tmp / "-p" / str(uuid.uuid4()), 45 * DAY)
    ready = tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", _TRUNCATING_WRITER, str(settings), text, "0", str(ready)])
    try:
        while not ready.exists():
            assert writer.poll() is None
        hygiene.run_cleanup([], dry_run=False, current_cwd=str(tmp_path))
    finally:
        writer.wait(10)
    assert kept.exists()


def test_the_projects_of_claude_json_are_known_while_claude_saves_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`.claude.json` is saved by Claude all day, with the same truncating write: read in that
    instant it listed no project, and every rule that keeps a known project's folders lost
    them for that run."""
    project = tmp_path / "project"
    project.mkdir()
    claude_json = paths.claude_json()
    text = json.dumps({"numStartups": 3, "projects": {str(project): {"allowedTools": []}}}, indent=2)
    claude_json.write_text(text)
    ready = tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", _TRUNCATING_WRITER, str(claude_json), text, "0", str(ready)])
    try:
        while not ready.exists():
            assert writer.poll() is None
        listed = paths.claude_json_projects()
    finally:
        writer.wait(10)
    assert listed == [str(project)]


def test_a_slow_payload_and_a_log_that_cannot_be_written_still_give_one_json_object(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude's payload arriving in two pieces with a pause between, and the log folder a
    file (nothing can be logged): the prompt hook still prints exactly one JSON object with
    both lines, nothing on stderr, exit 0. (Held when tried.)"""
    files = [tmp_path / "one.py", tmp_path / "two.py"]
    for file in files:
        file.write_text("x = 1\n")
        edit(file)
        file.write_text("x = 2\n")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    env = {**os.environ, "CLAUDE_CODE_TMPDIR": str(blocked)}
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": SID, "cwd": str(tmp_path),
                          "transcript_path": "/t.jsonl", "prompt": "go on \u00e9\U0001f600"}).encode()
    hook = subprocess.Popen([sys.executable, "-P", "-m", "hooks"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=str(tmp_path), env=env)
    assert hook.stdin is not None
    hook.stdin.write(payload[:25])
    hook.stdin.flush()
    time.sleep(0.5)
    out, err = hook.communicate(payload[25:], timeout=60)
    assert (hook.returncode, err) == (0, b"")
    assert out.count(b"\n") == 1 and out.startswith(b"{") and out.endswith(b"}\n")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.splitlines() == [f"The user or a tool changed `{f}` after the last edit of `main`." for f in files]


def test_ours_moved_out_of_a_shared_entry_leaves_the_users_entry_as_written(sandbox: SandboxEnv) -> None:
    """Claudetto's hook in an entry the user shares with their own moves to an entry of its
    own: the user's entry loses that hook and nothing else of its layout."""
    settings = sandbox.config / "settings.json"
    old = "/usr/bin/python3 -P -m hooks # claudetto"
    mine = '{"type": "command", "command": "notify-send edited"}'
    text = ('{\n  "hooks": {\n    "PostToolUse": [\n      {"matcher": "Edit", "hooks": [' + mine + ', '
            + json.dumps({"type": "command", "command": old}) + ']}\n    ]\n  }\n}\n')
    settings.write_text(text)
    _setup()
    written = settings.read_text()
    assert '      {"matcher": "Edit", "hooks": [' + mine + ']},\n' in written
    entries = json.loads(written)["hooks"]["PostToolUse"]
    assert len(entries) == 2 and "from hooks.entry import run;run()" in entries[1]["hooks"][0]["command"]


def test_setup_says_when_claudetto_runs_from_a_temp_folder(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone in the temp folder (Claude, asked to try claudetto, clones it into /tmp): the
    entries named it, and when the temp folder was cleaned (by the system, or by claudetto's
    own GC, which removes the clones Claude's commands made there) every hook failed on every
    event and WorktreeCreate aborted every creation, without a word at setup. Named now."""
    from app.core.setup import describe, package_root, setup, setup_json

    checkout = package_root()
    monkeypatch.setenv("TMPDIR", os.path.dirname(checkout))  # the checkout lies in "the temp folder"
    result = setup()
    assert result.temp_install == os.path.realpath(os.path.dirname(checkout))
    assert f"claudetto runs from inside the temp folder {result.temp_install}" in describe(result, False)
    assert setup_json(result)["temp_install"] == result.temp_install
    monkeypatch.setenv("TMPDIR", str(sandbox.user_tmp))
    assert setup().temp_install is None
    assert setup(uninstall=True).temp_install is None
