"""Red team, round six: what claudetto WRITES on the user's behalf. A supersede or an index line
in a memory file, setup's edit of settings.json, the `.worktreeinclude` copies of a new
checkout and claudetto's own state must change only what they name, never a file outside
Claude's memory (or through a link into the user's files), never lose a save Claude made in
between, never leave half a file. Each case is driven as a user or Claude would, on real
files, links, processes; every file is compared byte for byte afterwards."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.memory.index_writer import IndexRefused, add_to_index
from app.core.memory.supersede import SupersedeRefused, write_unchanged
from tests.support import SandboxEnv, make_repo, run_cli, run_hook

FRONT = "---\nname: deploy\ndescription: how we deploy\nmetadata:\n  type: project\n---\n"


def memory(sandbox: SandboxEnv, slug: str = "-p") -> Path:
    folder = sandbox.config / "projects" / slug / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def supersede(path: Path | str, line: int | str, text: str = "right", *extra: str) -> tuple[int, str, str]:
    done = run_cli("supersede", str(path), "--line", str(line), "--correction", text, *extra)
    return done.returncode, done.stdout, done.stderr


def one_line_refusal(code: int, out: str, err: str, *words: str) -> None:
    assert code == 1 and out == "", (code, out, err)
    assert err.startswith("claudetto supersede: ") and err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


# --- supersede: only Claude's memory, only through its own name ------------------------------


def test_supersede_refuses_a_dotfile_or_source_file_reached_through_a_linked_memory_folder(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A memory folder kept in a dotfiles checkout (or linked to home) is followed, so its real
    place counts as memory: every file beside the notes is then "in a memory folder". Only
    Markdown is memory; `.bashrc` and a project's source file are refused, by either name."""
    bashrc = sandbox.home / ".bashrc"
    bashrc.write_bytes(b"export PATH=/opt/bin:$PATH\nalias ll='ls -l'\n")
    source = sandbox.home / "deploy.py"
    source.write_bytes(b"PORT = 8080\n")
    (sandbox.config / "projects" / "-home").mkdir(parents=True)
    (sandbox.config / "projects" / "-home" / "memory").symlink_to(sandbox.home)
    notes = memory(sandbox) / "notes.md"
    notes.symlink_to(source)  # named .md in memory, really a source file
    for path in (sandbox.config / "projects" / "-home" / "memory" / ".bashrc",
                 sandbox.config / "projects" / "-home" / "memory" / "deploy.py"):
        one_line_refusal(*supersede(path, 1), "is not a memory file", "nothing changed")
    one_line_refusal(*supersede(notes, 1), "nothing changed")
    assert bashrc.read_bytes() == b"export PATH=/opt/bin:$PATH\nalias ll='ls -l'\n"
    assert source.read_bytes() == b"PORT = 8080\n" and notes.is_symlink()


@pytest.mark.parametrize("where", ["home", "dotdot", "link", "etc"])
def test_supersede_refuses_whatever_lies_outside_memory(where: str, sandbox: SandboxEnv) -> None:
    """`~/.bashrc` named directly, through `..` from a memory folder, through a link in a memory
    folder, or a system file: refused before a byte is written."""
    rc = sandbox.home / ".bashrc.md"
    rc.write_bytes(b"- export A=1\n")
    folder = memory(sandbox)
    choices: dict[str, Path | str] = {"home": rc, "dotdot": f"{folder}/../../../../.bashrc.md",
                                      "link": folder / "rc.md", "etc": "/etc/hostname"}
    path = choices[where]
    if where == "link":
        (folder / "rc.md").symlink_to(rc)
    before = Path("/etc/hostname").read_bytes() if os.path.exists("/etc/hostname") else None
    one_line_refusal(*supersede(path, 1), "is not in a memory folder", "nothing changed")
    assert rc.read_bytes() == b"- export A=1\n"
    assert (Path("/etc/hostname").read_bytes() if before is not None else None) == before


def test_a_hard_linked_memory_file_is_refused_and_both_names_keep_their_bytes(sandbox: SandboxEnv) -> None:
    """A rename would split the link silently: the user's note keeps the wrong fact while memory
    holds the correction (or the other way round for an index)."""
    folder = memory(sandbox)
    note = sandbox.home / "notes.md"
    note.write_bytes(b"- The port is 8080\n")
    os.link(note, folder / "ports.md")
    one_line_refusal(*supersede(folder / "ports.md", 1), "hard links", "nothing changed")
    assert note.read_bytes() == (folder / "ports.md").read_bytes() == b"- The port is 8080\n"
    assert os.stat(note).st_nlink == 2
    index = sandbox.home / "index.md"
    index.write_bytes(b"- [Ports](ports.md) - ports\n")
    os.link(index, folder / "MEMORY.md")
    (folder / "deploy.md").write_text(FRONT)
    with pytest.raises(IndexRefused, match="hard links"):
        add_to_index(str(folder / "deploy.md"))
    with pytest.raises(IndexRefused, match="hard links"):  # the dry run refuses what the write would
        add_to_index(str(folder / "deploy.md"), dry_run=True)
    assert index.read_bytes() == b"- [Ports](ports.md) - ports\n" and os.stat(index).st_nlink == 2


_CLAUDE_EDITS_IN_PLACE = """
import os, sys, time
path, stop, report = sys.argv[1], sys.argv[2], sys.argv[3]
folder = os.path.dirname(path)

def temp_there():
    return any(name.endswith(".tmp") for name in os.listdir(folder))

while not os.path.exists(stop):
    if temp_there():  # supersede has read the file and is writing its new text
        before = os.stat(path)
        with open(path, "r+b") as fh:  # the Edit tool: same file, same length
            fh.write(b"- The port is 9090")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # one clock tick
        with open(report, "w") as fh:
            fh.write("before the rename" if temp_there() else "too late")
        break
    time.sleep(0.0002)
"""


def test_an_edit_claude_makes_while_supersede_writes_is_kept(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude edits the memory file in place right after supersede read it (while supersede's
    temp file is there), keeping its length and, within one clock tick, its time: supersede
    must see the new bytes and write nothing."""
    path = memory(sandbox) / "ports.md"
    path.write_bytes(b"- The port is 8080\n- The host is a\n")
    stop, report = tmp_path / "stop", tmp_path / "report"
    claude = subprocess.Popen([sys.executable, "-c", _CLAUDE_EDITS_IN_PLACE, str(path), str(stop), str(report)])
    try:
        time.sleep(0.3)  # its interpreter is up and watching
        code, out, err = supersede(path, 1, "use 9090")
    finally:
        stop.touch()
        claude.wait(30)
    if not report.exists() or report.read_text() != "before the rename":
        pytest.skip("supersede's temp file came and went faster than the watcher (a file system without fsync cost)")
    one_line_refusal(code, out, err, "changed while it was being written", "nothing changed")
    assert path.read_bytes() == b"- The port is 9090\n- The host is a\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["ports.md"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root (sudo claudetto) writes another user's file")
def test_a_memory_file_rewritten_under_sudo_stays_the_users(sandbox: SandboxEnv) -> None:
    """`sudo claudetto supersede` (or the dashboard run as root): the corrected file and the
    index must stay the user's, or Claude, running as the user, can no longer write them."""
    folder = memory(sandbox)
    path = folder / "ports.md"
    path.write_bytes(b"- The port is 8080\n")
    (folder / "MEMORY.md").write_bytes(b"- [Ports](ports.md) - ports\n")
    (folder / "deploy.md").write_text(FRONT)
    for file in (path, folder / "MEMORY.md"):
        os.chown(file, 65534, 65534)
        file.chmod(0o640)
    code, _out, err = supersede(path, 1, "use 9090")
    assert code == 0, err
    add_to_index(str(folder / "deploy.md"))
    for file in (path, folder / "MEMORY.md"):
        st = os.stat(file)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (65534, 65534, 0o640), file


def test_a_same_length_edit_in_one_clock_tick_is_not_overwritten(sandbox: SandboxEnv) -> None:
    """Claude's Edit rewrites a memory file in place, without claudetto's lock. An edit of the
    same length within one tick of the file system's clock leaves size, time and inode as they
    were: the write must still see it (the bytes are compared) and write nothing."""
    path = memory(sandbox) / "ports.md"
    path.write_bytes(b"- The port is 8080\n- The host is a\n")
    old = path.read_bytes()
    before = os.stat(path)
    with open(path, "r+b") as fh:  # Claude's save: same inode, same size
        fh.write(b"- The port is 9090\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # within the same tick
    with pytest.raises(SupersedeRefused, match="changed while it was being written"):
        write_unchanged(str(path), b"- ~~The port is 8080~~\n", before, SupersedeRefused, old=old)
    assert path.read_bytes() == b"- The port is 9090\n- The host is a\n"
    assert [p.name for p in path.parent.iterdir()] == ["ports.md"]  # no temp file left


def test_supersede_says_in_one_line_when_claudetto_home_cannot_hold_its_lock(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDETTO_HOME a file (a typo, a stale mount point): no lock, no write, one clear line."""
    path = memory(sandbox) / "ports.md"
    path.write_bytes(b"- The port is 8080\n")
    blocker = sandbox.root / "not-a-folder"
    blocker.write_bytes(b"mine\n")
    monkeypatch.setenv("CLAUDETTO_HOME", str(blocker))
    one_line_refusal(*supersede(path, 1), "cannot take the memory write lock", "CLAUDETTO_HOME", "nothing changed")
    assert path.read_bytes() == b"- The port is 8080\n" and blocker.read_bytes() == b"mine\n"


@pytest.mark.parametrize(("body", "args", "after"), [
    (b"- a\r\n- The port is 8080\r\n", ("2", "use 9090"),
     b"- a\r\n- ~~The port is 8080~~\r\n- Correction (2026-11-30): use 9090\r\n"),
    (b"- a\n- The port is 8080", ("2", "use 9090"),
     b"- a\n- ~~The port is 8080~~\n- Correction (2026-11-30): use 9090"),
    (b"- The port is 8080\n", ("1", "use\n9090\r\n  now"),
     b"- ~~The port is 8080~~\n- Correction (2026-11-30): use 9090 now\n"),
], ids=["crlf", "no-final-newline", "multi-line-correction"])
def test_line_endings_and_a_multi_line_correction_come_out_byte_for_byte(
        body: bytes, args: tuple[str, str], after: bytes, sandbox: SandboxEnv) -> None:
    path = memory(sandbox) / "ports.md"
    path.write_bytes(body)
    code, out, err = supersede(path, *args)
    assert (code, err) == (0, ""), err
    assert path.read_bytes() == after.replace(b"2026-11-30", time.strftime("%Y-%m-%d").encode())


@pytest.mark.parametrize(("body", "line", "words"), [
    (b"- a\n- b\n", "3", ("out of range",)),
    (b"- a\n- b\n", "0", ("out of range",)),
    (b"- a\n- b\n", "-1", ("out of range",)),
    (b"- caf\xe9 is open\n", "1", ("not UTF-8",)),
    (b"- x\n" + b"y" * (1024 * 1024 + 1), "1", ("cannot read", "longer than")),
], ids=["past-the-end", "zero", "negative", "latin-1", "over-1-MiB"])
def test_bad_lines_and_bad_files_are_refused_byte_for_byte(body: bytes, line: str, words: tuple[str, ...],
                                                           sandbox: SandboxEnv) -> None:
    path = memory(sandbox) / "ports.md"
    path.write_bytes(body)
    one_line_refusal(*supersede(path, line), *words)
    assert path.read_bytes() == body


def test_the_index_writer_never_writes_through_a_linked_index(sandbox: SandboxEnv) -> None:
    folder = memory(sandbox)
    mine = sandbox.home / "dotfiles-index.md"
    mine.write_bytes(b"- [Ports](ports.md) - ports\n")
    (folder / "MEMORY.md").symlink_to(mine)
    (folder / "deploy.md").write_text(FRONT)
    with pytest.raises(IndexRefused, match="symlink"):
        add_to_index(str(folder / "deploy.md"))
    assert mine.read_bytes() == b"- [Ports](ports.md) - ports\n" and (folder / "MEMORY.md").is_symlink()


def test_an_index_line_past_what_claude_loads_is_written_and_said_so(sandbox: SandboxEnv) -> None:
    folder = memory(sandbox)
    lines = b"".join(b"- [T%d](t%d.md) - topic\n" % (n, n) for n in range(200))
    (folder / "MEMORY.md").write_bytes(lines)
    (folder / "deploy.md").write_text(FRONT)
    added = add_to_index(str(folder / "deploy.md"))
    assert (added.number, added.loaded) == (201, False)
    assert (folder / "MEMORY.md").read_bytes() == lines + b"- [deploy](deploy.md) \xe2\x80\x94 how we deploy\n"


# --- setup: settings.json ---------------------------------------------------------------------


_CLAUDE_SAVES = """
import json, os, sys, time
path, stop, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
folder, seen, n = os.path.dirname(path), set(), 0
while not os.path.exists(stop) and n < limit:
    for name in sorted(os.listdir(folder)):
        try:
            key = (name, os.stat(os.path.join(folder, name)).st_ino)
        except FileNotFoundError:
            continue
        if name.startswith("settings.json.bak-") and key not in seen:  # setup has read the file
            seen.add(key)
            with open(path) as fh:
                data = json.load(fh)
            data.setdefault("saves", []).append(n)
            with open(path + ".claude-tmp", "w") as fh:
                json.dump(data, fh, indent=2)
            os.replace(path + ".claude-tmp", path)
            n += 1
    time.sleep(0.0002)
"""


def test_setup_never_loses_a_save_claude_makes_while_it_writes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """Claude saves settings.json (`/config`, an "always allow") whole, without claudetto's lock.
    Here it saves right after setup has read the file (as soon as setup's backup shows), each
    save appending the next number: a setup that renamed its text over it would drop that
    number. Setup compares before its rename and reads again; every save stays."""
    settings = sandbox.config / "settings.json"
    settings.write_text('{"model": "opus"}\n')
    stop = tmp_path / "stop"
    claude = subprocess.Popen([sys.executable, "-c", _CLAUDE_SAVES, str(settings), str(stop), "2"])
    try:
        time.sleep(0.3)  # its interpreter is up and watching
        done = run_cli("setup")
        time.sleep(0.3)
    finally:
        stop.touch()
        claude.wait(30)
    assert done.returncode == 0 or (done.returncode == 1 and "changed while setup was writing it" in done.stderr
                                    and done.stderr.count("\n") == 1), done.stderr
    data = json.loads(settings.read_text())
    assert data.get("saves", [])[:1] == [0] and data["model"] == "opus", data
    assert data["saves"] == list(range(len(data["saves"])))
    for backup in sandbox.config.glob("settings.json.bak-*"):  # each a whole file Claude had written
        json.loads(backup.read_text())


def test_setup_refuses_a_key_written_twice_and_keeps_the_file(sandbox: SandboxEnv) -> None:
    """JSON with a key twice: a rewrite keeps one value and the other vanishes from the file."""
    settings = sandbox.config / "settings.json"
    body = b'{\n  "env": {"A": "1"},\n  "model": "opus",\n  "env": {"B": "2"}\n}\n'
    settings.write_bytes(body)
    for args in ((), ("--uninstall",), ("--dry-run",)):
        done = run_cli("setup", *args)
        if args == ("--uninstall",):  # nothing of ours to take out: nothing to write, nothing lost
            assert done.returncode in (0, 1), done.stderr
        else:
            assert done.returncode == 1 and '"env" twice' in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert settings.read_bytes() == body
    assert list(sandbox.config.glob("settings.json.bak-*")) == []


def test_a_hard_linked_settings_file_is_refused_and_both_names_keep_their_bytes(sandbox: SandboxEnv) -> None:
    """A dotfiles manager that hard-links settings.json: a rename would leave the repository's
    copy without the change and the two names apart, without a word."""
    dotfiles = sandbox.home / "dotfiles"
    dotfiles.mkdir()
    body = b'{\n  "model": "opus"\n}\n'
    (dotfiles / "settings.json").write_bytes(body)
    os.link(dotfiles / "settings.json", sandbox.config / "settings.json")
    for args in ((), ("--dry-run",)):
        done = run_cli("setup", *args)
        assert done.returncode == 1 and "hard links" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert (dotfiles / "settings.json").read_bytes() == body and os.stat(dotfiles / "settings.json").st_nlink == 2
    assert list(sandbox.config.glob("settings.json.bak-*")) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root (sudo claudetto setup) writes another user's file")
def test_setup_under_sudo_leaves_the_settings_and_the_backup_the_users(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    settings.write_bytes(b'{"env": {"TOKEN": "secret"}}\n')
    os.chown(settings, 65534, 65534)
    settings.chmod(0o600)
    done = run_cli("setup")
    assert done.returncode == 0, done.stderr
    (backup,) = sandbox.config.glob("settings.json.bak-*")
    for file in (settings, backup):
        st = os.stat(file)
        assert (st.st_uid, st.st_gid) == (65534, 65534) and st.st_mode & 0o077 == 0, file
    assert backup.read_bytes() == b'{"env": {"TOKEN": "secret"}}\n'


def _setup_with_file_size_limit(limit: int) -> subprocess.CompletedProcess[str]:
    """setup in a process that cannot write a file past `limit` bytes: a disk that fills up."""
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())",
                           "setup"], capture_output=True, text=True, preexec_fn=limited, timeout=60, check=False)


def test_a_full_disk_leaves_no_half_backup_and_no_half_settings(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    body = json.dumps({"env": {"TOKEN": "x" * 3000}, "model": "opus"}, indent=2).encode()
    settings.write_bytes(body)
    cut = _setup_with_file_size_limit(1000)  # the backup cannot be written whole
    assert cut.returncode == 1 and "cannot write the backup" in cut.stderr, cut.stderr
    assert settings.read_bytes() == body
    assert sorted(p.name for p in sandbox.config.iterdir()) == ["settings.json"]
    full = _setup_with_file_size_limit(len(body) + 10)  # the backup fits, the new file does not
    assert full.returncode == 1 and "nothing changed" in full.stderr, full.stderr
    assert settings.read_bytes() == body
    backups = list(sandbox.config.glob("settings.json.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == body
    assert sorted(p.name for p in sandbox.config.iterdir()) == sorted(["settings.json", backups[0].name])


def test_uninstall_leaves_look_alike_hooks_of_other_tools(sandbox: SandboxEnv) -> None:
    settings = sandbox.config / "settings.json"
    others = ["python3 -m hooks", "claudetto-notify # claudetto", "node hooks.js -m hooks # claudetto-ish",
              "python -m hooks # claudetto and more", "sh -c 'python -m hooks' # claudetto"]
    data = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": c} for c in others]}]}}
    settings.write_text(json.dumps(data, indent=2) + "\n")
    assert run_cli("setup").returncode == 0
    done = run_cli("setup", "--uninstall")
    assert done.returncode == 0, done.stderr
    assert json.loads(settings.read_text()) == data


# --- .worktreeinclude copies ------------------------------------------------------------------


def _create(repo: Path, name: str) -> Path:
    made = run_hook({"hook_event_name": "WorktreeCreate", "cwd": str(repo), "name": name, "session_id": "s-6",
                     "transcript_path": "/t"}, cwd=repo, timeout=120)
    assert made.returncode == 0, made.stderr
    return Path(made.stdout.decode().strip().splitlines()[-1])


def test_a_sparse_included_file_stays_sparse_in_the_new_checkout(tmp_path: Path) -> None:
    """A 2 GB preallocated database holding a few KB must not become 2 GB of zeros in every new
    checkout: the holes stay holes, the bytes stay the bytes."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "*.db\n",
                                               ".worktreeinclude": "*.db\n"})
    db = repo / "big.db"
    with open(db, "wb") as fh:
        fh.write(b"HEADER")
        fh.seek(1 << 30)
        fh.write(b"MIDDLE")
        fh.truncate(2 << 30)
    if os.stat(db).st_blocks * 512 > 1 << 20:
        pytest.skip("this file system does not keep holes")
    target = _create(repo, "sparse")
    copy = os.stat(target / "big.db")
    assert copy.st_size == 2 << 30
    assert copy.st_blocks * 512 < 16 << 20, copy.st_blocks * 512
    with open(target / "big.db", "rb") as fh:
        assert fh.read(6) == b"HEADER"
        fh.seek(1 << 30)
        assert fh.read(6) == b"MIDDLE"
        fh.seek((2 << 30) - 4)
        assert fh.read() == b"\0" * 4


def test_included_files_never_replace_the_checkouts_own_and_special_files_are_not_copied(
        tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """A `.env` the repository's post-checkout hook wrote into the new checkout stays; a FIFO is
    never waited on, a socket never copied, a link to /etc/shadow copied as the link it is
    (nothing read through it)."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "local/\n.env\n",
                                               ".worktreeinclude": "local/\n.env\n"})
    (repo / ".env").write_bytes(b"TOKEN=main\n")
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\nprintf 'TOKEN=checkout\\n' > .env\n")
    hook.chmod(0o755)
    local = repo / "local"
    local.mkdir()
    os.mkfifo(local / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(local / "sock"))
    (local / "shadow").symlink_to("/etc/shadow")
    (local / "notes.txt").write_bytes(b"kept\n")
    try:
        target = _create(repo, "include")
    finally:
        server.close()
    assert (target / ".env").read_bytes() == b"TOKEN=checkout\n"
    assert (repo / ".env").read_bytes() == b"TOKEN=main\n"
    assert (target / "local" / "notes.txt").read_bytes() == b"kept\n"
    assert os.readlink(target / "local" / "shadow") == "/etc/shadow"
    assert not (target / "local" / "pipe").exists() and not (target / "local" / "sock").exists()


# --- claudetto's own state --------------------------------------------------------------------


def test_a_state_file_linked_to_a_user_file_never_writes_the_user_file(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """ledger.json (and its lock) a symlink to a file of the user's: the link is replaced or set
    aside, the user's file keeps every byte."""
    sandbox.state.mkdir(parents=True, exist_ok=True)
    mine = sandbox.home / "diary.txt"
    mine.write_bytes(b"dear diary\n")
    lock_target = sandbox.home / "todo.txt"
    lock_target.write_bytes(b"buy milk\n")
    (sandbox.state / "ledger.json").symlink_to(mine)
    (sandbox.state / "ledger.json.lock").symlink_to(lock_target)
    project = make_repo(tmp_path / "project")
    edited = project / "README.md"
    done = run_hook({"hook_event_name": "PostToolUse", "session_id": "s-6", "transcript_path": "",
                     "cwd": str(project), "tool_name": "Edit", "tool_response": {},
                     "tool_input": {"file_path": str(edited), "old_string": "hello", "new_string": "hello"}},
                    cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert mine.read_bytes() == b"dear diary\n" and lock_target.read_bytes() == b"buy milk\n"
    assert str(edited) in (sandbox.state / "ledger.json").read_text()
    assert not (sandbox.state / "ledger.json").is_symlink()



def test_a_checkout_that_cannot_be_recorded_is_not_left_behind(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDETTO_HOME unwritable (a file in its place, a read-only or full file system):
    WorktreeCreate fails loud, "worktree not created", and so it must be: no checkout folder
    and no `worktree-<name>` branch left for nobody to release or remove."""
    repo = make_repo(tmp_path / "repo")
    blocker = sandbox.root / "not-a-folder"
    blocker.write_bytes(b"mine\n")
    monkeypatch.setenv("CLAUDETTO_HOME", str(blocker))
    made = run_hook({"hook_event_name": "WorktreeCreate", "cwd": str(repo), "name": "feat", "session_id": "s-6",
                     "transcript_path": "/t"}, cwd=repo)
    assert made.returncode != 0 and made.stderr.decode().count("\n") == 1, made.stderr
    assert blocker.read_bytes() == b"mine\n"
    assert not (repo / ".claude" / "worktrees" / "feat").exists()
    assert "worktree-feat" not in subprocess.run(["git", "branch", "--list"], cwd=repo, capture_output=True,
                                                 text=True, check=True).stdout


def test_claudetto_home_through_a_symlink_is_written_where_it_points(
        sandbox: SandboxEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "dotfiles-state"
    real.mkdir()
    link = tmp_path / "state-link"
    link.symlink_to(real)
    monkeypatch.setenv("CLAUDETTO_HOME", str(link))
    project = make_repo(tmp_path / "project")
    done = run_hook({"hook_event_name": "PostToolUse", "session_id": "s-6", "transcript_path": "",
                     "cwd": str(project), "tool_name": "Edit", "tool_response": {},
                     "tool_input": {"file_path": str(project / "README.md"), "old_string": "a", "new_string": "b"}},
                    cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert link.is_symlink() and str(project / "README.md") in (real / "ledger.json").read_text()


def _immutable(folder: Path, on: bool) -> bool:
    return subprocess.run(["chattr", "+i" if on else "-i", str(folder)], capture_output=True, check=False).returncode == 0


def test_a_read_only_claudetto_home_loses_nothing_and_says_so(sandbox: SandboxEnv, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """CLAUDETTO_HOME on a file system that takes no write (here: an immutable folder, which
    refuses even root): the prompt and tool hooks stay silent, the state keeps its bytes, and
    supersede says in one line why it wrote nothing."""
    state = tmp_path / "ro-state"
    state.mkdir()
    ledger = b'{"version": 1, "files": {}}'
    (state / "ledger.json").write_bytes(ledger)
    monkeypatch.setenv("CLAUDETTO_HOME", str(state))
    path = memory(sandbox) / "ports.md"
    path.write_bytes(b"- The port is 8080\n")
    project = make_repo(tmp_path / "project")
    if not _immutable(state, True):
        pytest.skip("chattr +i is not available here")
    try:
        base = {"session_id": "s-6", "transcript_path": "", "cwd": str(project)}
        for payload in ({**base, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_response": {},
                         "tool_input": {"file_path": str(project / "README.md"), "old_string": "a", "new_string": "b"}},
                        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "hi"}):
            done = run_hook(payload, cwd=project)
            assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), payload["hook_event_name"]
        one_line_refusal(*supersede(path, 1), "cannot take the memory write lock", "nothing changed")
    finally:
        _immutable(state, False)
    assert (state / "ledger.json").read_bytes() == ledger and sorted(p.name for p in state.iterdir()) == ["ledger.json"]
    assert path.read_bytes() == b"- The port is 8080\n"


def test_an_included_file_the_disk_cannot_hold_leaves_no_half_copy(tmp_path: Path) -> None:
    """The disk fills up half way through a `.worktreeinclude` copy (here: a file size limit on
    the hook's process): the half copy is taken back, the rest of the checkout is made."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "*.bin\n.env\n",
                                               ".worktreeinclude": "*.bin\n.env\n"})
    (repo / "model.bin").write_bytes(os.urandom(3 << 20))
    (repo / ".env").write_bytes(b"TOKEN=1\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    made = subprocess.run([sys.executable, "-P", "-m", "hooks"], input=json.dumps(
        {"hook_event_name": "WorktreeCreate", "cwd": str(repo), "name": "agent-a1b2c3d", "session_id": "s-6",
         "transcript_path": "/t"}).encode(), capture_output=True, cwd=str(repo), preexec_fn=limited, timeout=120,
        check=False)
    assert made.returncode == 0, made.stderr
    target = Path(made.stdout.decode().strip().splitlines()[-1])
    assert not (target / "model.bin").exists()
    assert (target / ".env").read_bytes() == b"TOKEN=1\n" and (target / "README.md").read_bytes() == b"x\n"
