"""The output GC attacked a fourteenth time. Ordinary commands a session runs in Bash, recorded by
the PostToolUse hook (`python -P -m hooks`) as Claude runs it; a week passes (records and mtimes
moved back); the sweep runs in-process (`gc.sweep`, what `claudetto gc` calls).

Misses fixed:
- an unprinted `mktemp` that may not have run was counted as run, and the user's program's fresh
  `tmp.*` of the same seconds was recorded as the session's and removed a week later with its
  results: the right of `||`, an `if`/`case` branch, a loop that ran none, a shell function
  defined and not called, the script of `xargs`/`find -exec`, a background call, an
  interrupted call;
- a records file whose record held a NUL byte stopped every sweep with a traceback;
- a project whose manifest takes a library from a temp folder by the relative path npm and cargo
  write (`file:../../tmp/tmp.X/lib`) did not keep it;
- a copy whose source was replaced by a link into it was judged `would_remove` (only the
  removal's last check kept it);
- a user's tool installed editable from a temp folder by pipx or uv (its venv kept apart in the
  home) did not keep it;
- a repository made in a temp folder and pushed to a local remote that is gone since (or made
  anew) read as pushed, and went with the only copy of its commits.
Held: a folder bind-mounted in a container's mount namespace, a file mapped after its close, a
bare repository the user's clone pushes to."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.test_red_team_12_gc import SID, call, pushed_project, shift_records, week_later
from tests.support import SandboxEnv, git, recorded


def users_program_folder(sandbox: SandboxEnv) -> Path:
    """Another program of the user's (a test run, a notebook) makes its `mktemp -d` folder and
    writes its results there, in the same seconds as the session's call."""
    folder = Path(subprocess.run(["mktemp", "-d"], check=True, capture_output=True, text=True).stdout.strip())
    (folder / "results.csv").write_text("run,score\n1,0.93\n")
    return folder


@pytest.mark.parametrize("command", [
    'd=$(mktemp -d 2>/dev/null || mktemp -d) && echo made',
    'true || d=$(mktemp -d); echo none',
    'if [ -n "$HOME" ]; then echo home; else d=$(mktemp -d); fi',
    'while false; do d=$(mktemp -d); done; echo none',
    'case "$HOME" in /nowhere) d=$(mktemp -d);; esac; echo none',
    "true || bash -c 'd=$(mktemp -d)'; echo none",
    "find . -name '*.zip' -exec sh -c 'd=$(mktemp -d) && unzip -q \"$1\" -d \"$d\"' _ {} \\;",
    "printf '' | xargs -r -n1 sh -c 'd=$(mktemp -d) && cp \"$1\" \"$d\"/' _",
    'work() { d=$(mktemp -d); cd "$d"; }; echo defined',
    'work() {\n  d=$(mktemp -d)\n  cd "$d"\n}\necho defined',
])
def test_a_mktemp_call_that_may_not_have_run_takes_no_other_programs_folder(sandbox: SandboxEnv,
                                                                            command: str) -> None:
    """A `mktemp` that may not have run (the right of `||`, the other branch of an `if`, a loop
    that ran none, a shell function defined and not called, the script `find -exec` runs on no
    match) was counted as run: the search by template and time found one fresh `tmp.*`, the
    user's program's, made in the same seconds, and recorded it as the session's. A week later
    its results went with it. Now a template with such a call is not looked for."""
    project = pushed_project(sandbox.home)
    theirs = users_program_folder(sandbox)
    call(command, project)
    assert str(theirs) not in recorded(SID)
    entries = week_later(sandbox.state, theirs)
    assert str(theirs) not in entries, entries
    assert (theirs / "results.csv").exists()


# --- a records file with a bad record -----------------------------------------------------------


@pytest.mark.parametrize("field", ["path", "cwd"])
def test_a_record_naming_a_nul_byte_stops_no_sweep(sandbox: SandboxEnv, field: str) -> None:
    """A records file whose record holds a NUL in its path or cwd (a disk error, a hand edit):
    every file call on it raised ValueError, and the sweep, `claudetto gc` and the dashboard
    stopped with a traceback, judging nothing. Now that record is ignored (logged) and the rest go
    by the rules."""
    from app.core import gc

    project = pushed_project(sandbox.home)
    mine = Path(call("mktemp -d", project).strip())
    file = sandbox.state / "gc" / f"{SID}.json"
    data = json.loads(file.read_text())
    bad = {**data["records"][0], field: "/tmp/a\0b"}
    data["records"].append(bad)
    file.write_text(json.dumps(data))
    assert gc.sweep(dry_run=True).entries
    entries = week_later(sandbox.state, mine)
    assert entries[str(mine)] == ("removed", "age"), entries


# --- a project that builds from a temp folder, by a relative path -------------------------------


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
@pytest.mark.parametrize("tool", ["cargo", "npm"])
def test_a_project_whose_manifest_takes_a_library_from_a_temp_folder_by_a_relative_path_keeps_it(
        sandbox: SandboxEnv, tool: str) -> None:
    """To try a library, the session makes it in a temp folder and points the user's project at
    it: `cargo add --path "$d/clib"`, `npm install "$d/lib"`. Both write the path relative to the
    project (`path = "../../…/tmp.X/clib"`, `"file:../../…"`), and only absolute paths were read:
    a week later the folder went and the project no longer built (npm's `node_modules` link is
    gone after `rm -rf node_modules`, a fresh clone, a CI checkout). Now a path that climbs out of
    the project counts, taken from its top."""
    app = sandbox.home / "app"
    app.mkdir()
    folder = Path(call("mktemp -d", app).strip())
    if tool == "cargo":  # as `cargo add --path "$d/clib"` writes it (rustup lives in the real home)
        (folder / "clib" / "src").mkdir(parents=True)
        (folder / "clib" / "Cargo.toml").write_text('[package]\nname = "clib"\nversion = "0.1.0"\n')
        (folder / "clib" / "src" / "lib.rs").write_text("pub fn f() {}\n")
        up = os.path.relpath(folder / "clib", app)
        (app / "Cargo.toml").write_text('[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                        f'[dependencies]\nclib = {{ version = "0.1.0", path = "{up}" }}\n')
    else:
        (folder / "lib").mkdir()
        (folder / "lib" / "package.json").write_text('{"name": "lib", "version": "1.0.0"}\n')
        (app / "package.json").write_text('{"name": "app", "version": "1.0.0"}\n')
        call(f"npm install -s --offline --no-audit --no-fund {folder}/lib && rm -rf node_modules", app)
        assert '"file:../' in (app / "package.json").read_text()
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


# --- a temp folder mounted elsewhere --------------------------------------------------------------


@pytest.mark.parametrize("namespace", ["this", "a container's"])
def test_a_temp_folder_bind_mounted_elsewhere_is_kept(sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]],
                                                      namespace: str) -> None:
    """(Held.) `d=$(mktemp -d) && docker run -d -v "$d":/var/lib/postgresql/data postgres`: the database
    lives in the temp folder, mounted at another path in the container's own mount table. Its
    processes work in `/var/lib/...` (their cwd and open files name that path, not the folder),
    and no mount point lies inside the folder; the same for `mount --bind "$d" /srv/data` on the
    host. A mount, in this or any process's mount table, whose source lies at or inside the
    folder keeps it (`mounts.mount_sources`, each process's own table)."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "PG_VERSION").write_text("16\n")
    mnt = sandbox.home / "srv-data"
    mnt.mkdir()
    if namespace == "this":
        if subprocess.run(["mount", "--bind", str(folder), str(mnt)], capture_output=True).returncode:
            pytest.skip("no bind mounts here")
    else:
        script = f"mount --bind {folder} {mnt} && cd / && echo up && exec sleep 60"
        proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        started.append(proc)
        assert proc.stdout is not None
        if proc.stdout.readline() != b"up\n":
            pytest.skip("no mount namespaces here")
    try:
        entries = week_later(sandbox.state, folder)
    finally:
        if namespace == "this":
            subprocess.run(["umount", str(mnt)], check=False)
    assert entries[str(folder)] == ("kept", "in_use"), entries
    assert (folder / "PG_VERSION").exists()


def test_a_temp_file_a_running_program_maps_after_closing_it_is_kept(sandbox: SandboxEnv,
                                                                     started: list[subprocess.Popen[bytes]]) -> None:
    """(Held.) A program maps a model file of the temp folder and closes the file (`np.load(...,
    mmap_mode="r")`, a shared library loaded by `ctypes`): no cwd, no open file names the folder;
    only `/proc/<pid>/maps` does."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "model.bin").write_bytes(b"w" * 8192)
    code = ("import mmap, sys, time\n"
            "with open(sys.argv[1], 'rb') as fh:\n"
            "    m = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)\n"
            "print('up', flush=True)\n"
            "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(folder / "model.bin")], cwd="/", stdout=subprocess.PIPE)
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_bare_repository_in_a_temp_folder_the_users_clone_pushes_to_is_kept(sandbox: SandboxEnv) -> None:
    """(Held.) `git init --bare "$d/remote.git"`, then the user's `~/work` cloned from it and pushed
    a branch there: the remote of a clone elsewhere, maybe the only copy of what was pushed
    (`~/work` may drop the branch once pushed). A bare repository with any commit is `unmerged`."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    call(f"git init -q --bare -b main {folder}/remote.git", project)
    work = sandbox.home / "work"
    git(sandbox.home, "clone", "-q", str(folder / "remote.git"), str(work))
    (work / "notes.md").write_text("the only copy\n")
    git(work, "add", "notes.md")
    git(work, "commit", "-q", "-m", "notes")
    git(work, "push", "-q", "origin", "HEAD:refs/heads/notes")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "unmerged"), entries


@pytest.mark.parametrize("command", ['true || d=$(mktemp -d); sleep 1', 'if false; then d=$(mktemp -d); fi; sleep 1'])
def test_a_background_mktemp_that_may_not_run_claims_nothing(sandbox: SandboxEnv, tmp_path: Path, command: str) -> None:
    """The same in a call run in the background: its claim counted the call that never ran, and
    once its minute was over the user's program's `tmp.*` of that minute became the session's."""
    from tests.core.test_background_outputs import claims, run_in_background

    users_program_folder(sandbox)
    run_in_background(command, tmp_path)
    assert claims() == []


# --- a copy its source now leads to ---------------------------------------------------------------


def test_a_copy_its_source_was_replaced_by_a_link_to_is_kept(sandbox: SandboxEnv) -> None:
    """`cp -r ~/code/clients/acme /tmp/acme` in one call, then `rm -rf ~/code/clients/acme && ln -s
    /tmp/acme ~/code/clients/acme` in the next (work on the fast disk, the project's old path kept
    working). The source still "exists" (a link, leading into the copy), so the copy was judged no
    only copy, the link lying too deep for the places the sweep reads: the dry run listed it
    `would_remove`, and only the removal's last check (the copy moved aside, the link dangling)
    kept it. A source that leads at or into the copy is gone: `dirty` when judged."""
    project = sandbox.home / "code" / "clients" / "acme"
    project.mkdir(parents=True)
    (project / "report.md").write_text("the client's report\n")
    copy = Path(os.path.realpath(sandbox.user_tmp)) / "acme"
    call(f"cp -r {project} {copy}", sandbox.home)
    assert str(copy) in recorded(SID)
    call(f"rm -rf {project} && ln -s {copy} {project}", sandbox.home)
    from app.core import gc

    shift_records(sandbox.state, -8 * 86_400)
    os.utime(copy, (time.time() - 8 * 86_400,) * 2)
    planned = {e.path: (e.status, e.reason) for e in gc.sweep(dry_run=True).entries}
    assert planned[str(copy)] == ("kept", "dirty"), planned
    entries = week_later(sandbox.state, copy)
    assert entries[str(copy)] == ("kept", "dirty"), entries
    assert (project / "report.md").exists()


def test_an_interrupted_calls_mktemp_takes_no_other_programs_folder(sandbox: SandboxEnv,
                                                                    started: list[subprocess.Popen[bytes]]) -> None:
    """The user stops a call (Esc) while its build runs, before its `d=$(mktemp -d)`: the call
    was counted as having made its folder, and the user's program's `tmp.*` of the same seconds
    was taken for it. An interrupted call's unprinted mktemp is not looked for."""
    from tests.support import run_hook

    project = pushed_project(sandbox.home)
    command = 'sleep 30 && d=$(mktemp -d) && cd "$d" && echo built'
    proc = subprocess.Popen(["bash", "-c", command], cwd=project, start_new_session=True)
    started.append(proc)
    theirs = users_program_folder(sandbox)
    os.killpg(proc.pid, 9)  # as Claude stops a call: its whole group
    proc.wait(timeout=10)
    payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(project), "transcript_path": "/dev/null",
               "tool_name": "Bash", "tool_input": {"command": command},
               "tool_response": {"stdout": "", "stderr": "", "interrupted": True, "isImage": False}, "duration_ms": 2000}
    done = run_hook(payload, cwd=project)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    assert str(theirs) not in recorded(SID)


@pytest.mark.parametrize("tools", [".local/share/pipx/venvs", ".local/share/uv/tools"])
def test_a_users_tool_installed_editable_from_a_temp_folder_keeps_it(sandbox: SandboxEnv, tools: str) -> None:
    """`pipx install -e "$d/mytool"` (or `uv tool install -e`): the tool's own venv, kept apart in
    the home, imports the package from the temp folder through its `site-packages` `.pth`; the
    command in `~/.local/bin` leads into that venv, never into the folder. Editable installs were
    read in a place's `.venv`, `.local` and the `.virtualenvs`-like folders only: a week later the
    folder went and `mytool` failed to import. Each venv of pipx, uv tools, pipenv and poetry
    counts too."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    pkg = folder / "mytool"
    (pkg / "mytool").mkdir(parents=True)
    (pkg / "mytool" / "__init__.py").write_text("def main():\n    print('hi')\n")
    (pkg / "setup.py").write_text("from setuptools import setup\nsetup(name='mytool', version='1.0', "
                                  "packages=['mytool'])\n")
    venv = sandbox.home / tools / "mytool"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    # setuptools' own editable install (`easy-install.pth`): pip's needs `wheel`, not here offline
    done = subprocess.run([str(venv / "bin" / "python"), "setup.py", "-q", "develop"], cwd=pkg, capture_output=True,
                          text=True)
    if done.returncode:
        pytest.skip(f"no editable install here: {done.stderr[-200:]}")
    assert str(pkg) in (venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
                        / "easy-install.pth").read_text()
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


# --- a repository made in a temp folder, pushed to a local remote that went ---------------------------


@pytest.mark.parametrize("how", ["removed", "drive unplugged", "made anew"])
def test_a_temp_repository_whose_local_remote_is_gone_is_kept(sandbox: SandboxEnv, how: str) -> None:
    """`cd "$d" && git init && ... && git commit`, then `git remote add origin ~/backups/notes.git &&
    git push -u origin main`: its commits are on `origin/main`, so they read as pushed. The
    backup was removed since (or lies on a drive not mounted now, or was made anew empty):
    `origin/main` is only git's memory of it, and the temp folder holds the only copy. It went a
    week later. A remote whose url is a local path that is gone, or no longer holds what its
    remote-tracking branches say, holds nothing."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    backup = sandbox.home / ("backups" if how == "removed" else "usb-drive") / "notes.git"
    git(sandbox.home, "init", "-q", "--bare", "-b", "main", str(backup))
    call(f"cd {folder} && git init -q -b main && echo hi > notes.md && git add notes.md && git commit -q -m n && "
         f"git remote add origin {backup} && git push -q -u origin main", project)
    shutil.rmtree(backup.parent if how == "drive unplugged" else backup)
    if how == "made anew":  # `rm -rf ~/backups/notes.git && git init --bare ~/backups/notes.git`
        git(sandbox.home, "init", "-q", "--bare", "-b", "main", str(backup))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "unmerged"), entries


def test_a_temp_repository_pushed_to_a_local_remote_still_there_goes(sandbox: SandboxEnv) -> None:
    """(Held.) The same with the backup still there: pushed, nothing only here; it goes by age."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    backup = sandbox.home / "backups" / "notes.git"
    git(sandbox.home, "init", "-q", "--bare", "-b", "main", str(backup))
    call(f"cd {folder} && git init -q -b main && echo hi > notes.md && git add notes.md && git commit -q -m n && "
         f"git remote add origin {backup} && git push -q -u origin main", project)
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries
