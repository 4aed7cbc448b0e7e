"""The output GC attacked a fifteenth time. Ordinary commands a session runs in Bash, recorded by
the PostToolUse hook (`python -P -m hooks`) as Claude runs it; a week passes (records and mtimes
moved back); the sweep runs in-process (`gc.sweep`, what `claudetto gc` calls).

Misses fixed (each: the user's tool or project broke when the folder went, nothing unique in it):
- a project one level down the home (`~/code/acme`, never opened in Claude) whose venv a
  session `pip install -e`-ed a temp folder into, or whose `package.json` takes a library from
  one, was never read;
- an editable install into a base Python of the home (conda's `~/miniconda3`, `anaconda3`,
  `miniforge3`, `mambaforge`, a uv-installed Python) was never read;
- a global Node package linked into a temp folder (`npm install -g "$d/tool"`, `npm link`,
  `pnpm link --global`, `bun link`) with nvm, fnm, pnpm or bun was never read;
- a tool set-up file of the home naming a temp folder (R's `.Rprofile`/`.Renviron`,
  `.kube/config`, `.aws/config`, `.m2/settings.xml`, IPython's and Julia's start-up files) was
  never read.
Held: a project's `.env`/`.envrc` naming a database in a temp folder, a database a running
program holds open, a clone in a temp folder the user committed in later, a temp repository
whose only own work is a note or a stash, a pyenv version's or a conda env's editable install,
a folder beside no project still going. Also tried and held (not kept): `mv`/`cp -r && rm` of
the user's folder into a `mktemp -d` folder spelled `/bin/mv`, `command mv`, `nice mv`, `env
mv`, `nohup mv`, `{ mv; }`, after `cd "$d"`/`pushd`, in a subshell or a shell function; a
process whose cwd is the temp folder (a Jupyter kernel); a worktree at `~/code/feat` of a
repository in a temp folder."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.test_red_team_12_gc import call, pushed_project, week_later
from tests.support import SandboxEnv, git, make_repo


@pytest.mark.parametrize(("name", "line"), [
    (".env", "DATABASE_URL=sqlite:///{db}\n"),
    (".env", "DB_PATH={db}\n"),
    (".envrc", "export APP_DB={db}\n"),
])
def test_a_projects_env_file_naming_a_database_in_a_temp_folder_keeps_it(sandbox: SandboxEnv, name: str,
                                                                         line: str) -> None:
    """`d=$(mktemp -d)`, then the session sets the user's app up to keep its development
    database there (`DATABASE_URL=sqlite:////tmp/tmp.X/app.db` in the project's `.env`, or an
    `export` in direnv's `.envrc`). The app is not running this week, nothing in the folder is
    git's, so the folder went by age with every row the user entered."""
    app = sandbox.home / "app"
    app.mkdir()
    folder = Path(call("mktemp -d", app).strip())
    db = folder / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table notes (body text)")
        conn.execute("insert into notes values ('the only copy')")
    conn.close()
    (app / name).write_text("DEBUG=1\n" + line.format(db=db))
    entries = week_later(sandbox.state, folder, db)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_database_a_running_program_holds_open_keeps_its_temp_folder(
        sandbox: SandboxEnv, started: list[subprocess.Popen[bytes]]) -> None:
    """(Held.) The user's dev server keeps a sqlite connection open on `$d/app.db`: an open file."""
    app = sandbox.home / "app"
    app.mkdir()
    folder = Path(call("mktemp -d", app).strip())
    code = ("import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1]); c.execute('create table t (x)'); c.commit()\n"
            "print('up', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(folder / "app.db")], cwd="/", stdout=subprocess.PIPE)
    started.append(proc)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    entries = week_later(sandbox.state, folder, folder / "app.db")
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_clone_in_a_temp_folder_the_user_committed_in_later_is_kept(sandbox: SandboxEnv) -> None:
    """(Held.) `git clone ~/remote.git "$(mktemp -d)/proj"` (the clone's path holds `$(`, only the
    temp folder is recorded); later, in their own terminal, the user commits a fix there and never
    pushes it: the commit lives only in the temp folder."""
    project = pushed_project(sandbox.home)
    out = call(f'd=$(mktemp -d) && git clone -q {sandbox.home}/remote.git "$d/proj" && echo "$d"', project)
    folder = Path(out.strip())
    clone = folder / "proj"
    (clone / "fix.py").write_text("print('fixed')\n")
    git(clone, "add", "fix.py")
    git(clone, "commit", "-q", "-m", "fix")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "unmerged"), entries


def test_a_temp_repository_whose_only_unpushed_work_is_a_note_or_a_stash_is_kept(sandbox: SandboxEnv) -> None:
    """(Held.) A clone in a temp folder, its branch pushed, whose only own work is a `git notes
    add` (review notes) in one and a `git stash` of an edit in the other."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    for name in ("noted", "stashed"):
        git(folder, "clone", "-q", str(sandbox.home / "remote.git"), name)
    git(folder / "noted", "notes", "add", "-m", "reviewed: the loop is wrong", "HEAD")
    (folder / "stashed" / "main.py").write_text("print('edited')\n")
    git(folder / "stashed", "stash", "-q")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "unmerged"), entries


@pytest.mark.parametrize("how", ["an editable install into its venv", "a path dependency of its manifest"])
def test_a_project_one_level_down_the_home_taking_code_from_a_temp_folder_keeps_it(sandbox: SandboxEnv,
                                                                                    how: str) -> None:
    """The session works in `~/proj` and clones a library into a temp folder to try a fix in the
    user's other project, one Claude never ran in: `~/code/acme/.venv/bin/pip install -e
    "$d/lib"` (the venv's `__editable__` `.pth` names the folder), or `npm install "$d/lib"` there.
    Only the home's own folders and the projects Claude knew were read, so `~/code/acme` was not:
    a week later the folder went, and acme's every `import lib` (or build) failed. Now the
    checkouts one level down the home's folders are read too."""
    project = pushed_project(sandbox.home)
    acme = make_repo(sandbox.home / "code" / "acme", files={"app.py": "import lib\n"})
    out = call(f'd=$(mktemp -d) && git clone -q {sandbox.home}/remote.git "$d/lib" && echo "$d"', project)
    folder = Path(out.strip())
    if how.startswith("an editable"):  # what pip writes for `pip install -e` (no index here)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(acme / ".venv")], check=True)
        site = next((acme / ".venv" / "lib").glob("python*/site-packages"))
        (site / "__editable__.lib-0.1.pth").write_text(f"{folder}/lib\n")
    else:
        (acme / "package.json").write_text(
            json.dumps({"name": "acme", "dependencies": {"lib": f"file:{os.path.relpath(folder / 'lib', acme)}"}}))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_temp_folder_beside_no_project_still_goes(sandbox: SandboxEnv) -> None:
    """(Held.) The control: `~/code/acme` names nothing in the temp folder; the clone goes by age."""
    project = pushed_project(sandbox.home)
    acme = make_repo(sandbox.home / "code" / "acme", files={"app.py": "print(1)\n"})
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(acme / ".venv")], check=True)
    out = call(f'd=$(mktemp -d) && git clone -q {sandbox.home}/remote.git "$d/lib" && echo "$d"', project)
    folder = Path(out.strip())
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)][0] in ("removed", "would_remove"), entries


@pytest.mark.parametrize("base", ["miniconda3", "anaconda3", "miniforge3", "mambaforge",
                                  ".local/share/uv/python/cpython-3.11.9-linux-x86_64-gnu",
                                  ".pyenv/versions/3.11.9", "miniconda3/envs/ml"])
def test_an_editable_install_into_a_base_python_of_the_home_keeps_its_temp_folder(sandbox: SandboxEnv,
                                                                                  base: str) -> None:
    """`~/miniconda3/bin/pip install -e "$d/lib"` (or `conda develop "$d/lib"`): conda's base
    environment, where many users work every day, is no venv, and its `site-packages` `.pth`
    naming the temp folder was never read (nor that of a Python uv installed): a week later
    the folder went and `import lib` failed in every notebook. A pyenv version and a conda
    env under `envs/` were read already (Held.)."""
    project = pushed_project(sandbox.home)
    out = call(f'd=$(mktemp -d) && git clone -q {sandbox.home}/remote.git "$d/lib" && echo "$d"', project)
    folder = Path(out.strip())
    site = sandbox.home / base / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (sandbox.home / base / "bin").mkdir()
    (site / "__editable__.lib-0.1.pth").write_text(f"{folder}/lib\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


@pytest.mark.parametrize("modules", [".nvm/versions/node/v20.11.0/lib/node_modules",
                                     ".local/share/fnm/node-versions/v20.11.0/installation/lib/node_modules",
                                     ".local/share/pnpm/global/5/node_modules", ".bun/install/global/node_modules",
                                     ".local/lib/node_modules"])
@pytest.mark.parametrize("scope", ["", "@acme/"])
def test_a_global_node_package_linked_from_a_temp_folder_keeps_it(sandbox: SandboxEnv, modules: str,
                                                                  scope: str) -> None:
    """`npm install -g "$d/tool"` (or `npm link`, `pnpm link --global`, `bun link`) with nvm, fnm,
    pnpm or bun: the global package is a link into the temp folder, in a prefix deep in the home
    that nothing read. A week later the folder went and the user's `tool` command with it."""
    project = pushed_project(sandbox.home)
    out = call(f'd=$(mktemp -d) && git clone -q {sandbox.home}/remote.git "$d/tool" && echo "$d"', project)
    folder = Path(out.strip())
    link = sandbox.home / modules / f"{scope}tool"
    link.parent.mkdir(parents=True)
    link.symlink_to(folder / "tool")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


@pytest.mark.parametrize(("name", "line"), [
    (".Rprofile", '.libPaths(c("{d}/Rlib", .libPaths()))\n'),
    (".Renviron", "R_LIBS_USER={d}/Rlib\n"),
    (".kube/config", "clusters:\n- cluster:\n    certificate-authority: {d}/ca.crt\n    server: https://127.0.0.1:6443\n"),
    (".aws/config", "[profile dev]\ncredential_process = {d}/bin/creds --profile dev\n"),
    (".m2/settings.xml", "<settings><localRepository>{d}/m2</localRepository></settings>\n"),
    (".ipython/profile_default/ipython_config.py", "c.InteractiveShellApp.exec_files = ['{d}/setup.py']\n"),
    (".julia/config/startup.jl", 'push!(LOAD_PATH, "{d}/src")\n'),
], ids=lambda value: value if value.startswith(".") else "")
def test_a_tool_set_up_file_of_the_home_naming_a_temp_folder_keeps_it(sandbox: SandboxEnv, name: str,
                                                                       line: str) -> None:
    """R's `.Rprofile`/`.Renviron` taking packages from a library the session installed into a temp
    folder, kubectl's config naming the certificate of a cluster the session set up there, an AWS
    profile's `credential_process`, Maven's local repository, IPython's and Julia's start-up files:
    each tool reads the folder at every start, and only the shell's and a few others' start-up
    files were read. A week later the folder went and the tool failed at its next start."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    file = sandbox.home / name
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(line.format(d=folder))
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries
