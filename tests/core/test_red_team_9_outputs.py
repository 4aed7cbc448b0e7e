"""The output GC attacked a ninth time: an output the session really made (a clone, a copy, a
`mktemp -d` folder) that something OUTSIDE it now depends on, so that removing it breaks or
loses the user's work although nothing inside it is unique. Real commands run, the PostToolUse
hook records them (`python -P -m hooks`), the user's own commands run as plain processes, and
the sweep runs through `claudetto gc`. Each test is a way work could be lost or broken; a test
marked xfail is a loss still open (its reason says what goes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import (
    NEEDS_RSYNC,
    SandboxEnv,
    gc_entries,
    git,
    make_repo,
    recorded,
    run_hook,
    set_mtime,
)

OLD = 8 * 86_400
TWO_YEARS = 2 * 365 * 86_400


def bash(command: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run the command for real, as Claude's Bash tool or the user's shell would; its stdout."""
    return subprocess.run(["bash", "-c", command], cwd=cwd, check=True, capture_output=True, text=True,
                          env=env if env is not None else dict(os.environ)).stdout


def run_and_record(command: str, cwd: Path, session: str = "s1") -> str:
    """The Bash call, then the PostToolUse hook Claude runs after it; the call's stdout."""
    out = bash(command, cwd)
    payload = {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
               "tool_input": {"command": command},
               "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
               "duration_ms": 3000}
    done = run_hook(payload, cwd=cwd)
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    return out


def age_records(state: Path, seconds: float, session: str = "s1") -> None:
    """Move the time of every record of `session` back by `seconds` (a week passed since)."""
    file = state / "gc" / f"{session}.json"
    data = json.loads(file.read_text())
    for record in data["records"]:
        record["time"] -= seconds
    file.write_text(json.dumps(data))


def old_tree(folder: Path, age: float = TWO_YEARS) -> Path:
    """A project folder untouched for `age` seconds: every entry in it that old."""
    (folder / "chapters").mkdir(parents=True)
    (folder / "chapters" / "one.md").write_text("draft\n")
    for top, dirs, files in os.walk(folder, topdown=False):
        for name in [*files, *dirs]:
            set_mtime(Path(top) / name, age)
    set_mtime(folder, age)
    return folder


def temp_clone(sandbox: SandboxEnv, tmp_path: Path, name: str = "x") -> Path:
    """`git clone ORIGIN $TMPDIR/<name>`, made and recorded by the session; its origin is pushed."""
    origin = make_repo(tmp_path / f"origin-{name}", files={"a.txt": "a\n"})
    clone = sandbox.user_tmp / name
    run_and_record(f"git clone -q {origin} {clone}", tmp_path)
    assert recorded() == [str(clone)]
    return clone


# --- a copy that kept its source's old times ------------------------------------------------------


@pytest.mark.parametrize("copy", ["cp -a", "cp -rp", "cp -r --preserve=timestamps", "cp -R --preserve",
                                  "cp --archive"])
def test_a_fresh_copy_of_a_two_year_old_tree_gets_its_seven_days(sandbox: SandboxEnv, tmp_path: Path,
                                                                   copy: str) -> None:
    """`cp -a ~/docs "$TMPDIR/docs-try"` to try a rewrite on a copy: the copy's own mtime is its
    source's, two years back. GC_MAX_AGE_DAYS counts from when the session made it: the next
    sweep after the session ended must not take it "by age", with the hour of rewriting in it."""
    docs = old_tree(tmp_path / "docs")
    target = sandbox.user_tmp / "docs-try"
    run_and_record(f"{copy} {docs} {target}", tmp_path)
    assert recorded() == [str(target)]
    assert time.time() - target.stat().st_mtime > OLD  # the copy looks two years old
    (target / "chapters" / "one.md").write_text("an hour of rewriting, kept nowhere else\n")
    entries = gc_entries()
    assert entries[str(target)] == ("kept", "young"), entries
    assert (target / "chapters" / "one.md").read_text().startswith("an hour")


def test_a_time_keeping_copy_still_goes_a_week_after_it_was_made(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The same copy a week after the session made it (its record a week old): it goes by age."""
    docs = old_tree(tmp_path / "docs")
    target = sandbox.user_tmp / "docs-try"
    run_and_record(f"cp -a {docs} {target}", tmp_path)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(target)] == ("removed", "age"), entries
    assert not target.exists()


@NEEDS_RSYNC
def test_an_archive_copy_into_a_fresh_temp_folder_keeps_it_young(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d) && rsync -a ~/docs/ "$d"/`: rsync gives `$d` itself the source folder's
    mtime, two years back, though the session made `$d` a minute ago."""
    docs = old_tree(tmp_path / "docs")
    folder = Path(run_and_record(f'd=$(mktemp -d) && rsync -a {docs}/ "$d"/ && echo "$d"', tmp_path).strip())
    assert recorded() == [str(folder)]
    assert time.time() - folder.stat().st_mtime > OLD
    (folder / "chapters" / "one.md").write_text("the rewrite\n")
    entries = gc_entries()
    assert entries[str(folder)] == ("kept", "young"), entries


@NEEDS_RSYNC
def test_an_archive_copy_into_an_older_temp_output_a_call_later_keeps_it_young(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d)` in one call; `cp -a ~/docs/. /tmp/tmp.X` or `rsync -a` in a later one: the
    temp folder now wears a two-year-old mtime, yet what it holds was copied minutes ago."""
    docs = old_tree(tmp_path / "docs")
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    age_records(sandbox.state, 3 * 86_400)  # made three days ago: young either way
    run_and_record(f"rsync -a {docs}/ {folder}/", tmp_path)
    assert time.time() - folder.stat().st_mtime > OLD
    entries = gc_entries()
    assert entries[str(folder)] == ("kept", "young"), entries


def test_a_record_from_a_clock_set_forward_keeps_a_time_keeping_copy(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The clock ran a day ahead when the copy was recorded, and was set right since: the record
    lies in the future. The copy was made a moment ago; its old mtime must not make it go."""
    docs = old_tree(tmp_path / "docs")
    target = sandbox.user_tmp / "docs-try"
    run_and_record(f"cp -a {docs} {target}", tmp_path)
    age_records(sandbox.state, -86_400)
    entries = gc_entries()
    assert entries[str(target)] == ("kept", "young"), entries


@pytest.mark.parametrize("when", [float("inf"), float("nan")])
def test_a_time_keeping_copy_whose_record_time_is_no_time_goes_by_its_mtime(sandbox: SandboxEnv, tmp_path: Path,
                                                                          when: float) -> None:
    """A records file spoiled by hand (`Infinity`, `NaN`): that time plays no part, or the copy
    would stay for ever; its mtime decides."""
    docs = old_tree(tmp_path / "docs")
    target = sandbox.user_tmp / "docs-try"
    run_and_record(f"cp -a {docs} {target}", tmp_path)
    file = sandbox.state / "gc" / "s1.json"
    data = json.loads(file.read_text())
    data["records"][0]["time"] = when
    file.write_text(json.dumps(data))
    assert gc_entries()[str(target)] == ("removed", "age")


def test_an_output_whose_mtime_lies_in_the_future_is_young(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A folder made while the clock ran ahead (or a tar of future mtimes): its age is negative."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    set_mtime(folder, -30 * 86_400)
    assert gc_entries()[str(folder)] == ("kept", "young")


# --- a repository outside that borrows the output's objects -------------------------------------


@pytest.mark.parametrize("how", ["--shared", "--reference"])
@pytest.mark.parametrize("where", ["p2", "src/p2", "work/team/p2"])
def test_a_user_repository_borrowing_a_temp_clones_objects_keeps_it(sandbox: SandboxEnv, tmp_path: Path,
                                                                      how: str, where: str) -> None:
    """`git clone --reference /tmp/x ~/src/p2` (or `--shared`): p2's `objects/info/alternates`
    names the temp clone's objects; removing the clone corrupts p2, whose own commits then
    point at objects that are gone. Nothing in the clone is unique, yet p2 needs it."""
    clone = temp_clone(sandbox, tmp_path)
    borrower = sandbox.home / where
    borrower.parent.mkdir(parents=True, exist_ok=True)
    source = str(clone) if how == "--shared" else git(clone, "remote", "get-url", "origin").strip()
    args = ["--shared", source] if how == "--shared" else ["--reference", str(clone), source]
    git(tmp_path, "clone", "-q", *args, str(borrower))
    assert (borrower / ".git" / "objects" / "info" / "alternates").exists()
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    check = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=borrower, capture_output=True,
                           text=True, check=False)
    assert check.returncode == 0 and clone.exists(), (entries, check.stderr[-300:])
    assert entries[str(clone)] == ("kept", "unmerged"), entries


def test_a_borrower_the_session_made_itself_keeps_the_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The session's own `git clone --reference $TMPDIR/x URL /data/p2`, on a disk far from home."""
    clone = temp_clone(sandbox, tmp_path)
    far = tmp_path / "data" / "deep" / "p2"
    far.parent.mkdir(parents=True)
    url = git(clone, "remote", "get-url", "origin").strip()
    run_and_record(f"git clone -q --reference {clone} {url} {far}", tmp_path)
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    check = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=far, capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0 and clone.exists(), (entries, check.stderr[-300:])


@pytest.mark.parametrize("flag", ["--shared", "-s", "--reference-if-able"])
def test_a_borrower_made_in_the_same_call_as_the_temp_clone_keeps_it(sandbox: SandboxEnv, tmp_path: Path,
                                                                      flag: str) -> None:
    """`git clone URL $TMPDIR/x && git clone --shared $TMPDIR/x /data/p2` in one call: the
    lender's record is written by that same hook, before the clone is noted as its borrower."""
    origin = make_repo(tmp_path / "origin", files={"a.txt": "a\n"})
    clone = sandbox.user_tmp / "x"
    far = tmp_path / "data" / "p2"
    far.parent.mkdir(parents=True)
    second = f"{flag} {clone} {far}" if flag != "--reference-if-able" else f"{flag} {clone} {origin} {far}"
    run_and_record(f"git clone -q {origin} {clone} && git clone -q {second}", tmp_path)
    (far / "mine.txt").write_text("the user's\n")
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    check = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=far, capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0 and entries[str(clone)] == ("kept", "unmerged"), (entries, check.stderr[-300:])


def test_a_clone_nobody_borrows_from_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The control: a plain local clone of the temp clone (hard links, no alternates) loses nothing."""
    clone = temp_clone(sandbox, tmp_path)
    git(tmp_path, "clone", "-q", str(clone), str(sandbox.home / "src" / "p2"))
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    assert gc_entries()[str(clone)] == ("removed", "age")


# --- a worktree outside, made from a temp clone --------------------------------------------------


def test_a_worktree_in_the_home_made_from_a_temp_clone_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git -C /tmp/x worktree add ~/wt`: the worktree holds nothing unique (its branch is the
    pushed one), yet its `.git` file points into the clone: removing the clone breaks it."""
    clone = temp_clone(sandbox, tmp_path)
    wt = sandbox.home / "wt"
    git(clone, "worktree", "add", "-q", "--detach", str(wt))
    (wt / "a.txt").write_text("the user's edit in the worktree\n")
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert clone.exists() and git(wt, "status", "--porcelain").strip() == "M a.txt", entries
    assert entries[str(clone)] == ("kept", "unmerged"), entries


@pytest.mark.parametrize("args", [["--detach"], ["-b", "try"]])
def test_a_clean_worktree_in_the_home_made_from_a_temp_clone_keeps_it(sandbox: SandboxEnv, tmp_path: Path,
                                                                       args: list[str]) -> None:
    """The same worktree with nothing of its own at all (no edit, no commit): removing the
    clone still leaves `~/wt` a folder git no longer knows, its `.git` naming a git dir gone."""
    clone = temp_clone(sandbox, tmp_path)
    wt = sandbox.home / "wt"
    git(clone, "worktree", "add", "-q", *args, str(wt))
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert clone.exists() and git(wt, "status", "--porcelain").strip() == "", entries
    assert entries[str(clone)] == ("kept", "unmerged"), entries


# --- an editable install, a link, a remote, a submodule --------------------------------------------


def _package(folder: Path) -> Path:
    (folder / "xpkg").mkdir(parents=True)
    (folder / "xpkg" / "__init__.py").write_text("VALUE = 42\n")
    (folder / "pyproject.toml").write_text('[project]\nname = "xpkg"\nversion = "0.1"\n'
                                           '[build-system]\nrequires = ["setuptools"]\n'
                                           'build-backend = "setuptools.build_meta"\n')
    return folder


def test_an_editable_install_of_a_temp_folder_into_a_projects_venv_keeps_it(sandbox: SandboxEnv,
                                                                             tmp_path: Path) -> None:
    """`pip install -e /tmp/x` into the project's `.venv`: the venv imports the package from the
    output (a `.pth` or an `__editable__` finder names it); removing it breaks the project."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    _package(folder)
    project = make_repo(sandbox.home / "proj")
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(project): {}}}))
    venv = project / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", site, "-e", str(folder)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:  # an older pip: `--target` with `-e`; write what setuptools writes
        Path(site, "__editable__.xpkg-0.1.pth").write_text(f"{folder}\n")
    imported = [str(venv / "bin" / "python"), "-c", "import xpkg; print(xpkg.VALUE)"]
    assert subprocess.run(imported, capture_output=True, text=True, check=True).stdout.strip() == "42"
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert folder.exists(), entries
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_symlink_in_the_users_project_into_a_temp_output_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`ln -s /tmp/x/build ~/proj/b`: the user's project reaches into the output."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    (folder / "build").mkdir()
    (folder / "build" / "app.bin").write_bytes(b"\x7fELF")
    project = sandbox.home / "proj"
    project.mkdir()
    bash(f"ln -s {folder}/build {project}/b", tmp_path)
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert (project / "b" / "app.bin").exists(), entries
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_command_linked_into_the_users_bin_keeps_its_output(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`ln -s /tmp/x/bin/tool ~/.local/bin/tool`: the user's PATH runs a program from the output."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    (folder / "bin").mkdir()
    (folder / "bin" / "tool").write_text("#!/bin/sh\necho ok\n")
    (sandbox.home / ".local" / "bin").mkdir(parents=True)
    (sandbox.home / ".local" / "bin" / "tool").symlink_to(folder / "bin" / "tool")
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_an_npm_link_of_a_temp_package_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`npm link` in `/tmp/x`, then `npm link x` in the project: the project's `node_modules/x`
    leads (through the global prefix) into the output."""
    if subprocess.run(["npm", "--version"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no npm")
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    (folder / "package.json").write_text(json.dumps({"name": "xlib", "version": "0.1.0"}))
    (folder / "index.js").write_text("module.exports = 42;\n")
    project = sandbox.home / "proj"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "proj", "version": "0.1.0"}))
    env = dict(os.environ, npm_config_prefix=str(sandbox.home / ".npm-global"), npm_config_offline="true",
               npm_config_cache=str(tmp_path / "npm-cache"), npm_config_audit="false", npm_config_fund="false",
               npm_config_update_notifier="false")
    bash("npm link --silent", folder, env)
    bash("npm link --silent xlib", project, env)
    assert (project / "node_modules" / "xlib" / "index.js").exists()
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert (project / "node_modules" / "xlib" / "index.js").exists(), entries


def test_a_temp_clone_the_user_pushes_to_keeps_what_was_pushed(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The user's project has the temp clone as a remote and pushed a branch there: that branch
    lives in the clone (its own local branch, on none of its remotes)."""
    clone = temp_clone(sandbox, tmp_path)
    project = make_repo(sandbox.home / "proj", files={"p.txt": "p\n"})
    git(project, "remote", "add", "scratch", str(clone))
    git(project, "push", "-q", "scratch", "HEAD:refs/heads/from-proj")
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(clone)] == ("kept", "unmerged"), entries


def test_a_temp_clone_the_user_only_fetched_from_still_goes(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git remote add scratch /tmp/x && git fetch scratch` in the user's project (or `git clone
    /tmp/x ~/p2`): the project holds all it fetched, so a remote's url alone keeps nothing (or
    every clone of a temp clone would pin it for good); what was pushed there is kept above."""
    clone = temp_clone(sandbox, tmp_path)
    project = make_repo(sandbox.home / "proj", files={"p.txt": "p\n"})
    git(project, "remote", "add", "scratch", str(clone))
    git(project, "fetch", "-q", "scratch")
    git(tmp_path, "clone", "-q", str(clone), str(sandbox.home / "p2"))
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(clone)] == ("removed", "age"), entries
    assert git(project, "log", "-1", "--format=%s", "scratch/main").strip()


def test_a_submodule_whose_url_is_a_temp_clone_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git submodule add /tmp/x lib` in the user's project: `.gitmodules` (committed) names the
    output as the submodule's url; every new clone of the project fetches from there."""
    clone = temp_clone(sandbox, tmp_path)
    project = make_repo(sandbox.home / "proj", files={"p.txt": "p\n"})
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(clone), "lib")
    git(project, "commit", "-qm", "add lib")
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(clone)] == ("kept", "in_use"), entries


@pytest.mark.parametrize("where", [".local", "miniconda3/envs/work", ".virtualenvs/tools"])
def test_an_editable_install_into_an_environment_of_the_home_keeps_it(sandbox: SandboxEnv, tmp_path: Path,
                                                                       where: str) -> None:
    """`pip install --user -e /tmp/x` (`~/.local`), or into a conda env or a virtualenvwrapper
    venv: the finder setuptools writes names the output's package folder."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    _package(folder)
    site = sandbox.home / where / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable___xpkg_0_1_finder.py").write_text(
        f"MAPPING = {{'xpkg': '{folder}/xpkg'}}\nNAMESPACES = {{}}\n")
    (site / "__editable__.xpkg-0.1.pth").write_text("import __editable___xpkg_0_1_finder; "
                                                   "__editable___xpkg_0_1_finder.install()\n")
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_an_install_elsewhere_that_names_a_sibling_keeps_nothing_else(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The control: a `.pth` naming `/tmp/tmp.X-other` keeps neither `/tmp/tmp.X` (a name that
    only starts alike) nor anything else; the output with nothing leading into it goes."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    site = sandbox.home / ".local" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "other.pth").write_text(f"{folder}-other\n")
    (sandbox.home / "b").symlink_to(f"{folder}-other")
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    assert gc_entries()[str(folder)] == ("removed", "age")


# --- a live process that runs from the output ----------------------------------------------------


@pytest.mark.parametrize("variable", ["PATH", "LD_LIBRARY_PATH"])
def test_a_process_whose_search_path_names_the_output_keeps_it(sandbox: SandboxEnv, tmp_path: Path,
                                                                variable: str) -> None:
    """`export PATH=/tmp/x/bin:$PATH` in a shell that still runs (a long job, a server started
    from it): the next program it starts is looked for there."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    (folder / "bin").mkdir()
    env = dict(os.environ, **{variable: f"{folder}/bin:{os.environ.get(variable, '/usr/bin:/bin')}"})
    child = subprocess.Popen(["/bin/sleep", "60"], env=env, cwd=sandbox.home)
    try:
        set_mtime(folder, OLD)
        age_records(sandbox.state, OLD)
        entries = gc_entries()
        assert entries[str(folder)] == ("kept", "in_use"), entries
    finally:
        child.kill()
        child.wait()


def test_a_process_running_a_program_built_in_the_output_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A program the session built in `$d` and the user still runs: its executable is there."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    program = folder / "server"
    program.write_bytes(Path("/bin/sleep").read_bytes())
    program.chmod(0o755)
    child = subprocess.Popen([str(program), "60"], cwd=sandbox.home)
    try:
        set_mtime(folder, OLD)
        age_records(sandbox.state, OLD)
        entries = gc_entries()
        assert entries[str(folder)] == ("kept", "in_use") and program.exists(), entries
    finally:
        child.kill()
        child.wait()


# --- more of the same, spelled otherwise ---------------------------------------------------------


def test_a_folder_the_users_shell_startup_names_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`echo 'export PATH=/tmp/x/bin:$PATH' >> ~/.bashrc`: every new shell of the user runs
    programs from the output."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    (folder / "bin").mkdir()
    bash(f"echo 'export PATH={folder}/bin:$PATH' >> ~/.bashrc", tmp_path)
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_user_service_running_a_program_of_the_output_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`~/.config/systemd/user/dev.service` with `ExecStart=/tmp/x/server`: the user's login
    starts it from the output (not running now, so no process shows it)."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    units = sandbox.home / ".config" / "systemd" / "user"
    units.mkdir(parents=True)
    (units / "dev.service").write_text(f"[Service]\nExecStart={folder}/server --port 8080\n")
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    assert gc_entries()[str(folder)] == ("kept", "in_use")


def test_a_startup_file_naming_the_temp_folder_only_keeps_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`export TMPDIR=/tmp` or `cd $TMPDIR/..` in `~/.bashrc` names the temp folder, not an output in it."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    (sandbox.home / ".bashrc").write_text(f"export TMPDIR={sandbox.user_tmp}\nalias t='cd ~/{folder.name}'\n")
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    assert gc_entries()[str(folder)] == ("removed", "age")


def test_a_borrower_through_a_symlinked_temp_folder_keeps_the_clone(sandbox: SandboxEnv, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """As on macOS (`/tmp` a link to `/private/tmp`): the clone is recorded at its real path,
    while `git clone --shared` wrote `~/src/p2`'s alternates through the link."""
    link = sandbox.root / "tmp-link"
    link.symlink_to(sandbox.user_tmp)
    monkeypatch.setenv("TMPDIR", str(link))
    clone = temp_clone(sandbox, tmp_path)
    borrower = sandbox.home / "src" / "p2"
    borrower.parent.mkdir()
    git(tmp_path, "clone", "-q", "--shared", str(link / clone.name), str(borrower))  # kept as written
    assert str(link) in (borrower / ".git" / "objects" / "info" / "alternates").read_text()
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert clone.exists() and entries[str(clone)] == ("kept", "unmerged"), entries


def test_an_archive_unpacked_into_a_fresh_temp_folder_keeps_it_young(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`d=$(mktemp -d) && tar -xf site.tar -C "$d"`: an archive made with `-C dir .` holds `./`,
    whose two-year-old mtime tar gives `$d` itself."""
    site = old_tree(tmp_path / "site")
    bash(f"tar -cf {tmp_path}/site.tar -C {site} .", tmp_path)
    set_mtime(site, TWO_YEARS)
    folder = Path(run_and_record(f'd=$(mktemp -d) && tar -xf {tmp_path}/site.tar -C "$d" && echo "$d"',
                                 tmp_path).strip())
    assert time.time() - folder.stat().st_mtime > OLD
    assert gc_entries()[str(folder)] == ("kept", "young")


def test_a_hard_linked_copy_counts_by_its_own_mtime(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`cp -al ~/data "$TMPDIR/snap"`: its files are the user's own (an edit lands there too),
    so it keeps no record time of its own: it goes by its mtime."""
    data = old_tree(tmp_path / "data")
    snap = sandbox.user_tmp / "snap"
    run_and_record(f"cp -al {data} {snap}", tmp_path)
    assert recorded() == [str(snap)]
    assert gc_entries()[str(snap)] == ("removed", "age")
    assert (data / "chapters" / "one.md").read_text() == "draft\n"


@pytest.mark.parametrize("how", ["env", "hook", "hooks_path", "gitconfig"])
def test_a_projects_own_set_up_naming_a_temp_output_keeps_it(sandbox: SandboxEnv, tmp_path: Path, how: str) -> None:
    """The user's project set up to use the output: `DATA_DIR=/tmp/x/data` in its `.env`, a
    Claude hook in `.claude/settings.json` running `/tmp/x/check.sh`, `git config
    core.hooksPath /tmp/x/hooks`, or `~/.gitconfig` including `/tmp/x/gitconfig`."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    project = make_repo(sandbox.home / "proj", files={"p.txt": "p\n"})
    if how == "env":
        (project / ".env").write_text(f"DATA_DIR={folder}/data\n")
    elif how == "hook":
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PostToolUse": [{"hooks": [
            {"type": "command", "command": f"bash {folder}/check.sh"}]}]}}))
    elif how == "hooks_path":
        git(project, "config", "core.hooksPath", f"{folder}/hooks")
    else:
        git(project, "config", "--global", "include.path", f"{folder}/gitconfig")
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_hostile_places_neither_hang_nor_break_the_sweep(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A FIFO named `.env` or `.bashrc` (opening one waits for a writer), NUL bytes in a `.pth`,
    a symlink loop in the home, a records file whose `lent_to` is garbage: the sweep reads past
    them, says nothing of them on stdout, and judges the output by the rules as ever."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    project = sandbox.home / "proj"
    (project / ".git").mkdir(parents=True)
    os.mkfifo(project / ".env")
    os.mkfifo(sandbox.home / ".bashrc")
    os.mkfifo(project / ".git" / "config")
    site = project / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "x.pth").write_bytes(b"/nowhere\0/also\n\xff\xfe\n")
    (sandbox.home / "loop").symlink_to(sandbox.home / "loop")
    file = sandbox.state / "gc" / "s1.json"
    data = json.loads(file.read_text())
    data["records"][0]["evidence"]["lent_to"] = ["/x\u0000y", 7, None, {"a": 1}]
    data["records"].append({**data["records"][0], "path": str(folder) + "-gone",
                            "evidence": {**data["records"][0]["evidence"], "lent_to": "not a list"}})
    file.write_text(json.dumps(data))
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    started = time.monotonic()
    entries = gc_entries()
    assert time.monotonic() - started < 30
    assert entries[str(folder)] == ("removed", "age"), entries


# --- limits: what is not looked at --------------------------------------------------------------


@pytest.mark.xfail(strict=True, reason="only the top of each place is read for links: a link deeper in a "
                                       "project leads into an output unseen, and the output goes")
def test_a_link_deep_in_a_project_into_a_temp_output_keeps_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`ln -s /tmp/x/build ~/proj/assets/b`: reading every folder of every project for links
    would be a walk of the user's whole tree at each sweep."""
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    (folder / "build").mkdir()
    (sandbox.home / "proj" / "assets").mkdir(parents=True)
    (sandbox.home / "proj" / "assets" / "b").symlink_to(folder / "build")
    set_mtime(folder, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert folder.exists(), entries


@pytest.mark.xfail(strict=True, reason="a repository the user cloned with --reference outside the home, "
                                       "the known projects and the sessions' projects is not asked")
def test_a_borrower_the_user_made_far_from_home_keeps_the_clone(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`git clone --reference /tmp/x URL /data/mirror/p2`, typed by the user in a terminal."""
    clone = temp_clone(sandbox, tmp_path)
    far = tmp_path / "data" / "mirror" / "p2"
    far.parent.mkdir(parents=True)
    git(tmp_path, "clone", "-q", "--reference", str(clone), git(clone, "remote", "get-url", "origin").strip(),
        str(far))
    set_mtime(clone, OLD)
    age_records(sandbox.state, OLD)
    entries = gc_entries()
    assert clone.exists(), entries


def test_an_archive_unpacked_into_an_older_temp_folder_a_call_later_keeps_it_young(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    site = old_tree(tmp_path / "site")
    bash(f"tar -cf {tmp_path}/site.tar -C {site} .", tmp_path)
    folder = Path(run_and_record("mktemp -d", tmp_path).strip())
    run_and_record(f"tar -xf {tmp_path}/site.tar -C {folder}", tmp_path)
    assert gc_entries()[str(folder)] == ("kept", "young")


def test_a_time_keeping_copy_whose_mtime_was_set_since_goes_by_that_mtime(sandbox: SandboxEnv,
                                                                          tmp_path: Path) -> None:
    """The contract's age is the path's own mtime: the record's time counts only while the
    copy still has the mtime it was recorded with. One set since (`touch -d`, or a test aging
    an output to see it go) is the age again, with the copy's record a minute old."""
    docs = old_tree(tmp_path / "docs")
    target = sandbox.user_tmp / "docs-try"
    run_and_record(f"cp -a {docs} {target}", tmp_path)
    assert gc_entries()[str(target)] == ("kept", "young")
    set_mtime(target, 8 * 86_400)
    entries = gc_entries()
    assert entries[str(target)] == ("removed", "age"), entries
    assert not target.exists()
