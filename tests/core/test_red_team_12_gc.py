"""The output GC attacked a twelfth time, both ways. A place OUTSIDE the recorded folder that
depends on it (a project's git dir, a venv's interpreter, a kernel, a linked worktree) must keep
it though nothing inside it is unique; and plain garbage the seed names must not be kept by a
check of an earlier round (a clone whose origin was pointed elsewhere, a copy whose source
committed a removal since). Each output is made by a real command and recorded by the
PostToolUse hook as Claude runs it (`python -P -m hooks`); a week passes (records and mtimes
moved back with `os.utime`); the sweep runs in-process (`gc.sweep`, what `claudetto gc` calls).
Docstrings marked (Held.) passed at once: they document what holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import SandboxEnv, git, make_repo, run_hook

DAY = 86_400
OLD = 8 * DAY
SID = "5e551012-aaaa-4bbb-8ccc-000000000001"


def bash(command: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, text=True).stdout


def call(command: str, cwd: Path) -> str:
    """One Bash call of the session, then its PostToolUse hook, as Claude runs it; its stdout."""
    out = bash(command, cwd)
    payload = {"hook_event_name": "PostToolUse", "session_id": SID, "cwd": str(cwd), "transcript_path": "/dev/null",
               "tool_name": "Bash", "tool_input": {"command": command},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": 3000}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    return out


def shift_records(state: Path, seconds: float) -> None:
    """Move the time of every record by `seconds` (negative: into the past)."""
    for file in (state / "gc").glob("*.json"):
        data = json.loads(file.read_text())
        for record in data["records"]:
            record["time"] += seconds
        file.write_text(json.dumps(data))


def week_later(state: Path, *outputs: Path, record_shift: float = -OLD) -> dict[str, tuple[str, str]]:
    """A week passes (the records and the outputs' own mtimes), then a sweep: {path: (status, reason)}."""
    from app.core import gc

    shift_records(state, record_shift)
    when = time.time() - OLD
    for path in outputs:
        os.utime(path, (when, when), follow_symlinks=False)
    return {e.path: (e.status, e.reason) for e in gc.sweep().entries}


def pushed_project(home: Path) -> Path:
    """The user's project `~/proj`, pushed to its origin `~/remote.git`."""
    remote = home / "remote.git"
    git(home, "init", "-q", "--bare", "-b", "main", str(remote))
    project = make_repo(home / "proj", files={"main.py": "print('hi')\n"})
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "-u", "origin", "main")
    return project


def temp_folder(project: Path) -> Path:
    """`mktemp -d` in a Bash call of the session run in the project: a recorded `temp` output."""
    return Path(call("mktemp -d", project).strip())


# --- losses: a place outside the output depends on it -------------------------------------------


def test_a_temp_folder_holding_the_projects_separate_git_dir_is_kept(sandbox: SandboxEnv) -> None:
    """(Held.) `git init --separate-git-dir="$d/g"` run in the user's project moves its whole
    repository into the temp folder and leaves a `.git` file naming it. Everything is pushed and
    clean, nothing in the folder is unique, yet removing it leaves the project no repository."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    git(project, "init", "-q", f"--separate-git-dir={folder}/g")
    assert (project / ".git").is_file()
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "unmerged"), entries
    assert git(project, "status", "--porcelain") == ""


def test_a_temp_clone_with_a_linked_worktree_in_the_home_is_kept(sandbox: SandboxEnv) -> None:
    """(Held.) `git -C /tmp/c worktree add ~/wt -b feature`, its branch pushed: the worktree in
    the home has its objects, refs and index in the clone."""
    project = pushed_project(sandbox.home)
    clone = Path(os.path.realpath(sandbox.user_tmp)) / "c"
    call(f"git clone -q {sandbox.home / 'remote.git'} {clone}", project)
    git(clone, "worktree", "add", "-q", str(sandbox.home / "wt"), "-b", "feature")
    git(sandbox.home / "wt", "push", "-q", "origin", "feature")
    entries = week_later(sandbox.state, clone)
    assert entries[str(clone)] == ("kept", "unmerged"), entries
    assert git(sandbox.home / "wt", "status", "--porcelain") == ""


def python_in(folder: Path) -> Path:
    """A Python installation unpacked into the temp folder (`uv python install --install-dir`):
    its `bin/` with the interpreter (a link to this one: the test needs no second Python)."""
    bin_dir = folder / "py" / "bin"
    bin_dir.mkdir(parents=True)
    os.symlink(sys.executable, bin_dir / "python3")
    return bin_dir


def venv_from(venv: Path, bin_dir: Path) -> None:
    """A venv made from the interpreter in `bin_dir`, as `python -m venv` writes one."""
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {bin_dir}\ninclude-system-site-packages = false\n"
                                     f"version = 3.12.3\nexecutable = {bin_dir}/python3.12\n"
                                     f"command = {bin_dir}/python3 -m venv {venv}\n")
    os.symlink(bin_dir / "python3", venv / "bin" / "python")


@pytest.mark.parametrize("where", ["proj/.venv", ".virtualenvs/tool", ".cache/pypoetry/virtualenvs/proj-Xa1-py3.12",
                                   ".local/share/uv/tools/ruff"])
def test_a_venv_made_from_a_python_in_a_temp_folder_keeps_it(sandbox: SandboxEnv, where: str) -> None:
    """A session unpacks a Python into a temp folder and makes the project's `.venv` (or a
    virtualenvwrapper, poetry or uv tool environment) from it: `pyvenv.cfg` names the folder as
    its `home` and `bin/python` links there. Nothing in the folder is unique and no process runs,
    yet removing it leaves a venv whose every `python` fails to start. It was removed by age."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    venv_from(sandbox.home / where, python_in(folder))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries
    assert (sandbox.home / where / "bin" / "python").exists()


def test_a_jupyter_kernel_registered_from_a_temp_venv_keeps_it(sandbox: SandboxEnv) -> None:
    """`python -m venv "$d/venv" && "$d/venv/bin/python" -m ipykernel install --user --name exp`:
    the user's kernel list now starts `$d/venv/bin/python`; removing the folder breaks the kernel.
    It was removed by age."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    kernel = sandbox.home / ".local" / "share" / "jupyter" / "kernels" / "exp"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [f"{folder}/venv/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "exp", "language": "python"}))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_venv_of_another_python_keeps_no_temp_folder(sandbox: SandboxEnv) -> None:
    """The control: the project's `.venv` made from the system's Python, a kernel naming it, and
    a kernel spec that is no JSON: the week-old temp folder beside them goes."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    (folder / "data.csv").write_text("1,2\n")
    venv_from(project / ".venv", Path(sys.executable).parent)
    kernels = sandbox.home / ".local" / "share" / "jupyter" / "kernels"
    (kernels / "proj").mkdir(parents=True)
    (kernels / "proj" / "kernel.json").write_text(json.dumps({"argv": [f"{project}/.venv/bin/python"]}))
    (kernels / "broken").mkdir()
    (kernels / "broken" / "kernel.json").write_text(f'{{"argv": ["{folder}/x"')
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries
    assert not folder.exists()


# --- misses: plain garbage an earlier check kept ------------------------------------------------


@pytest.mark.parametrize("after", ["git remote set-url origin https://git.invalid/team/c.git",
                                   "git remote rename origin upstream"])
def test_a_clone_whose_origin_was_pointed_elsewhere_goes(sandbox: SandboxEnv, after: str) -> None:
    """`git clone ~/remote.git /tmp/c` (a local mirror, for speed), then its origin pointed at the
    network url that cannot be reached from here, or renamed: nothing unpushed, a clone like any
    other. A bare source has no names at its top to compare the clone's with, and the origin no
    longer named it: it was kept `dirty` for good."""
    project = pushed_project(sandbox.home)
    clone = Path(os.path.realpath(sandbox.user_tmp)) / "c"
    call(f"git clone -q {sandbox.home / 'remote.git'} {clone}", project)
    bash(after, clone)
    entries = week_later(sandbox.state, clone)
    assert entries[str(clone)] == ("removed", "age"), entries


def copy_then_drop(sandbox: SandboxEnv, change_copy: str = "") -> tuple[Path, Path]:
    """`cp -r ~/proj /tmp/proj-copy` with `old.py` committed and pushed; then the user removes it
    in a commit of the project (`git rm old.py`)."""
    project = pushed_project(sandbox.home)
    (project / "old.py").write_text("x = 1\n")
    git(project, "add", "old.py")
    git(project, "commit", "-q", "-m", "old")
    git(project, "push", "-q")
    copy = Path(os.path.realpath(sandbox.user_tmp)) / "proj-copy"
    call(f"cp -r {project} {copy}", project)
    if change_copy:
        bash(change_copy, copy)
    git(project, "rm", "-q", "old.py")
    git(project, "commit", "-q", "-m", "no old")
    git(project, "push", "-q")
    return project, copy


def test_a_copy_of_a_project_whose_source_committed_a_removal_since_goes(sandbox: SandboxEnv) -> None:
    """The copy still checks `old.py` out, unchanged, at a commit the project holds: its history
    keeps the file. Compared by the names at the top, the copy held one its source lacked and was
    kept `dirty` for good."""
    _project, copy = copy_then_drop(sandbox)
    entries = week_later(sandbox.state, copy)
    assert entries[str(copy)] == ("removed", "age"), entries


@pytest.mark.parametrize("change", ["echo 'an edit' >> old.py", "git checkout -q --orphan x && git commit -q -m y"])
def test_a_copy_that_changed_the_file_its_source_dropped_is_kept(sandbox: SandboxEnv, change: str) -> None:
    """The other side: the copy's `old.py` edited (no commit holds that), or the copy's HEAD a
    commit the project never had: kept."""
    _project, copy = copy_then_drop(sandbox, change)
    entries = week_later(sandbox.state, copy)
    assert entries[str(copy)][0] == "kept", entries
    assert (copy / "old.py").exists()


def test_a_copy_keeps_an_untracked_file_its_source_removed(sandbox: SandboxEnv) -> None:
    """`notes.txt` untracked in the project when copied, then removed there: no commit holds it."""
    project = pushed_project(sandbox.home)
    (project / "notes.txt").write_text("the only copy\n")
    copy = Path(os.path.realpath(sandbox.user_tmp)) / "proj-copy"
    call(f"cp -r {project} {copy}", project)
    (project / "notes.txt").unlink()
    entries = week_later(sandbox.state, copy)
    assert entries[str(copy)] == ("kept", "dirty"), entries
    assert (copy / "notes.txt").read_text() == "the only copy\n"


@pytest.mark.parametrize("how", ["detached_tag", "no_remote"])
def test_a_package_repository_in_a_temp_folders_node_modules(sandbox: SandboxEnv, how: str) -> None:
    """(Held.) `node_modules/left-pad` a git checkout of a package: at a tag of its origin, the
    folder is garbage and goes; a repository with a commit on no remote (a package someone
    `git init`-ed and committed in) is the only copy of that commit, regenerable folder or not:
    kept `unmerged`."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    pkg = folder / "node_modules" / "left-pad"
    if how == "detached_tag":
        git(sandbox.home / "remote.git", "tag", "v1", "main")
        bash(f"git clone -q {sandbox.home / 'remote.git'} {pkg} && git -C {pkg} checkout -q v1", project)
    else:
        make_repo(pkg, files={"package.json": "{}\n"})
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == (("removed", "age") if how == "detached_tag" else ("kept", "unmerged")), entries


# --- time -----------------------------------------------------------------------------------------


def test_a_record_time_in_the_future_keeps_no_week_old_temp_folder(sandbox: SandboxEnv) -> None:
    """(Held.) The clock ran a year ahead when the call was recorded, then was set right: the
    folder's own mtime is its age (the contract's definition), a week: it goes."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    entries = week_later(sandbox.state, folder, record_shift=365 * DAY)
    assert entries[str(folder)] == ("removed", "age"), entries


MANIFESTS = {
    "go.mod": "module example.com/proj\n\ngo 1.22\n\nrequire example.com/lib v1.2.0\n\nreplace example.com/lib => {lib}\n",
    "package.json": '{{"name": "proj", "dependencies": {{"lib": "file:{lib}"}}}}\n',
    "Cargo.toml": '[package]\nname = "proj"\n\n[dependencies]\nlib = {{ path = "{lib}" }}\n',
    "requirements.txt": "requests==2.32.3\n-e {lib}\n",
    "pyproject.toml": '[project]\nname = "proj"\n\n[tool.uv.sources]\nlib = {{ path = "{lib}", editable = true }}\n',
    "compose.yaml": "services:\n  db:\n    image: postgres:16\n    volumes:\n      - {lib}:/var/lib/postgresql/data\n",
    ".vscode/settings.json": '{{"python.defaultInterpreterPath": "{lib}/bin/python"}}\n',
}


@pytest.mark.parametrize("manifest", sorted(MANIFESTS))
def test_a_dependency_the_projects_manifest_takes_from_a_temp_folder_keeps_it(sandbox: SandboxEnv,
                                                                              manifest: str) -> None:
    """A session clones a library into a temp folder to try a fix and points the project at it:
    `go mod edit -replace example.com/lib=$d/lib`, `npm install $d/lib` (`file:`), a Cargo path
    dependency, `-e $d/lib` in `requirements.txt`, a uv path source; or a database's data folder
    its `compose.yaml` mounts, the interpreter its editor runs. The project now builds (or runs)
    from the folder; nothing in it is unique and nothing runs that rule 4 can see, and a week
    later the build failed: it was removed by age."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    (folder / "lib").mkdir()
    (folder / "lib" / "lib.txt").write_text("the library\n")
    (project / manifest).parent.mkdir(exist_ok=True)
    (project / manifest).write_text(MANIFESTS[manifest].format(lib=folder / "lib"))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_manifest_naming_another_folder_keeps_no_temp_folder(sandbox: SandboxEnv) -> None:
    """The control: the project's `go.mod` replaces a module by a folder beside the output, whose
    name starts alike (`/tmp/tmp.X-lib`), and by one in the home: the output goes."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    (project / "go.mod").write_text(f"module example.com/proj\n\nreplace example.com/a => {folder}-lib\n"
                                    f"replace example.com/b => {sandbox.home}/lib\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries


@pytest.mark.parametrize("how", ["cp", "cp_then_call"])
def test_a_temp_folder_given_an_unchanged_copy_of_the_projects_env_goes(sandbox: SandboxEnv, how: str) -> None:
    """`d=$(mktemp -d) && cp .env "$d/" && cd "$d" && ...` so a tool finds its settings there
    (in the call that made the folder, or a later one): the `.env` is the project's own, still
    there unchanged. A secret-looking file kept the folder `dirty` for good."""
    project = pushed_project(sandbox.home)
    (project / ".env").write_text("API_TOKEN=abc\n")
    if how == "cp":
        folder = Path(call('d=$(mktemp -d) && cp .env "$d/" && echo "$d"', project).strip())
    else:
        folder = temp_folder(project)
        call(f"cp {project}/.env {folder}/ && echo done", project)
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries


SECRET_CHANGES = {  # (the session's call, what the user does later in the project)
    "edited in the copy": ('cp .env "$d/" && echo "API_TOKEN=rotated" >> "$d/.env"', ""),
    "a key made beside it": ('cp .env "$d/" && echo "-----BEGIN OPENSSH PRIVATE KEY-----" > "$d/id_ed25519"', ""),
    "made there, then copied there": ('echo "SECRET=only here" > "$d/.env" && cp "$d/.env" "$d/.env.bak"', ""),
    "its source removed since": ('cp .env "$d/"', "rm .env"),
    "its source changed since": ('cp .env "$d/"', "echo API_TOKEN=new > .env"),
}


@pytest.mark.parametrize("change", sorted(SECRET_CHANGES))
def test_a_temp_folder_with_a_secret_no_source_holds_is_kept(sandbox: SandboxEnv, change: str) -> None:
    """The other side: a secret edited in the copy, a key generated beside the copy, a secret made
    in the folder and copied within it (its source lies in the output itself), or a copy whose
    source the user removed or changed since: the folder holds the only copy of a secret. Kept."""
    project = pushed_project(sandbox.home)
    (project / ".env").write_text("API_TOKEN=abc\n")
    in_call, later = SECRET_CHANGES[change]
    folder = Path(call(f'd=$(mktemp -d) && {in_call} && echo "$d"', project).strip())
    if later:
        bash(later, project)
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "dirty"), entries


def built_copy(sandbox: SandboxEnv, build: str) -> Path:
    """`cp -r ~/proj /tmp/proj-build && cd /tmp/proj-build && <build>`, the project's git-ignored
    `.env` (still there, unchanged) copied with it."""
    project = pushed_project(sandbox.home)
    (project / ".gitignore").write_text(".env\ndist/\nnode_modules/\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-q", "-m", "ignore")
    git(project, "push", "-q")
    (project / ".env").write_text("API_TOKEN=abc\n")
    copy = Path(os.path.realpath(sandbox.user_tmp)) / "proj-build"
    call(f"cp -r {project} {copy} && cd {copy} && {build}", project)
    return copy


def test_a_copy_of_a_project_with_its_ignored_env_built_in_goes(sandbox: SandboxEnv) -> None:
    """The build added `dist/` and `node_modules/`: the copy is no longer the same tree as its
    source, and `dist` was born with the copy, so it looked like a name the source had lost.
    What a build adds is regenerable; nothing in the copy is unique. It was kept `dirty` for good."""
    copy = built_copy(sandbox, "mkdir -p dist node_modules/left-pad && echo built > dist/app.js && "
                               "echo '{}' > node_modules/left-pad/package.json")
    entries = week_later(sandbox.state, copy)
    assert entries[str(copy)] == ("removed", "age"), entries


BUILDS = {
    "a key the build wrote": "mkdir dist && echo key > dist/release.keystore",
    "a package checkout with its own commit": "mkdir -p node_modules && git init -q node_modules/pkg && "
                                              "git -C node_modules/pkg commit -q --allow-empty -m only-here",
    "an edit beside the build": "mkdir dist && echo built > dist/app.js && echo '# edit' >> main.py",
}


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_a_built_copy_holding_more_than_a_build_makes_is_kept(sandbox: SandboxEnv, build: str) -> None:
    """The other side: a secret-looking file in the build's folder, a repository with a commit of
    its own in `node_modules`, or an edit of a tracked file beside the build: kept."""
    copy = built_copy(sandbox, BUILDS[build])
    entries = week_later(sandbox.state, copy)
    assert entries[str(copy)][0] == "kept", entries


def test_two_temp_folders_that_copied_a_secret_back_and_forth_are_kept(sandbox: SandboxEnv) -> None:
    """A key made in one temp folder, copied to a second, and the second's copied back over the
    first (`cp "$b/id_ed25519" "$a/"`): each names the other as its source, and both would go in
    one sweep. A source that is itself an output is no copy kept elsewhere: both stay."""
    project = pushed_project(sandbox.home)
    first = temp_folder(project)
    second = temp_folder(project)
    call(f'echo "-----BEGIN OPENSSH PRIVATE KEY-----" > {first}/id_ed25519 && cp {first}/id_ed25519 {second}/ && '
         f'cp {second}/id_ed25519 {first}/', project)
    entries = week_later(sandbox.state, first, second)
    assert entries[str(first)] == ("kept", "dirty") and entries[str(second)] == ("kept", "dirty"), entries


def test_an_alias_in_the_users_bash_aliases_keeps_the_tool_it_runs(sandbox: SandboxEnv) -> None:
    """`alias fmt=/tmp/tmp.X/bin/fmt` written to `~/.bash_aliases` by a session that built a tool
    in a temp folder: every new shell runs it from there."""
    project = pushed_project(sandbox.home)
    folder = temp_folder(project)
    (folder / "bin").mkdir()
    (folder / "bin" / "fmt").write_text("#!/bin/sh\n")
    (sandbox.home / ".bash_aliases").write_text(f"alias fmt={folder}/bin/fmt\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_copy_with_an_edit_in_a_build_folder_its_source_tracks_is_kept(sandbox: SandboxEnv) -> None:
    """A Go layout's tracked `build/ci/Dockerfile`, edited in a `cp -r` copy: a regenerable name
    the source also has is compared like any folder (only one a build added is passed over)."""
    project = pushed_project(sandbox.home)
    (project / "build" / "ci").mkdir(parents=True)
    (project / "build" / "ci" / "Dockerfile").write_text("FROM scratch\n")
    git(project, "add", "build")
    git(project, "commit", "-q", "-m", "ci")
    git(project, "push", "-q")
    copy = Path(os.path.realpath(sandbox.user_tmp)) / "proj-edit"
    call(f"cp -r {project} {copy} && echo 'RUN make' >> {copy}/build/ci/Dockerfile", project)
    entries = week_later(sandbox.state, copy)
    assert entries[str(copy)][0] == "kept" and "RUN make" in (copy / "build/ci/Dockerfile").read_text(), entries
