"""The output GC attacked a sixteenth time. Ordinary commands a session runs in Bash, recorded by
the PostToolUse hook (`python -P -m hooks`) as Claude runs it; a week passes (records and mtimes
moved back); the sweep runs in-process (`gc.sweep`, what `claudetto gc` calls).

Misses fixed:
- a temp folder a compose override bind-mounts, a `.env.local`/`.env.<mode>` names, a project's
  git config runs from (`core.sshCommand = ssh -i $d/deploy_key`) or a `~/.bashrc.d` snippet puts
  on the PATH went by age (only the base compose files, `.env`, a few git keys and the start-up
  files themselves were read);
- copies named by a brace (`cp -r {src,docs} "$d"/`) stored `{src,docs}` as their source, a path
  that never was: the folder was kept `dirty` for good;
- a file saved into an old temp folder between the sweep's judgement and its removal went with
  it (the last check never looked at the age again);
- a stopped container's database in a temp folder (owned by the container's uid) went, and the
  next `docker start` began an empty one;
- what `tar -c`/`zip` packed into a temp folder and the command (or a later call) removed was no
  source: the folder went with the only copy;
- a private key `ssh-keygen -f` wrote under a name of its own (`deploy_key`) did not look secret.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.core.test_red_team_12_gc import call, pushed_project, week_later
from tests.support import SandboxEnv, git


@pytest.mark.parametrize("name", ["compose.override.yaml", "docker-compose.override.yml"])
def test_a_compose_override_bind_mounting_a_temp_folder_keeps_it(sandbox: SandboxEnv, name: str) -> None:
    """The project runs its database in a container (`compose.yaml`); the session keeps the
    data of the user's local run out of the project: `d=$(mktemp -d)`, and in the override file
    compose reads beside it by default, `volumes: - /tmp/tmp.X/pgdata:/var/lib/postgresql/data`.
    The container is not up this week (and its processes are another user's): only the file
    says the folder holds the database."""
    project = pushed_project(sandbox.home)
    (project / "compose.yaml").write_text("services:\n  db:\n    image: postgres:16\n")
    folder = Path(call("mktemp -d", project).strip())
    (folder / "pgdata").mkdir()
    (folder / "pgdata" / "PG_VERSION").write_text("16\n")
    (project / name).write_text(f"services:\n  db:\n    volumes:\n      - {folder}/pgdata:/var/lib/postgresql/data\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


@pytest.mark.parametrize("name", [".env.local", ".env.development", ".env.development.local"])
def test_a_projects_local_env_file_naming_a_database_in_a_temp_folder_keeps_it(sandbox: SandboxEnv,
                                                                               name: str) -> None:
    """Next.js, Vite and dotenv-flow read `.env.local` (and `.env.<mode>[.local]`) for what is
    the user's own: the session points the app's development database there
    (`DATABASE_URL=file:/tmp/tmp.X/dev.db`). Only `.env` was read, so the folder went by age
    with every row the user entered."""
    app = sandbox.home / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app"}\n')
    folder = Path(call("mktemp -d", app).strip())
    (folder / "dev.db").write_bytes(b"SQLite format 3\0the only copy")
    (app / name).write_text(f"NEXT_PUBLIC_TITLE=app\nDATABASE_URL=file:{folder}/dev.db\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_deploy_key_a_projects_git_config_uses_keeps_its_temp_folder(sandbox: SandboxEnv) -> None:
    """`d=$(mktemp -d) && ssh-keygen -f "$d/deploy_key"`, then `git config core.sshCommand "ssh -i
    $d/deploy_key"` in the project (the key is added to the server as a deploy key). Only a
    project config's url, hooksPath, path and a few file keys were read, so a week later the
    folder went with the only copy of the key and every `git push` failed."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "deploy_key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----\n")
    (folder / "deploy_key.pub").write_text("ssh-ed25519 AAAAC3 deploy\n")
    git(project, "config", "core.sshCommand", f"ssh -i {folder}/deploy_key -o IdentitiesOnly=yes")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_snippet_the_users_bashrc_sources_naming_a_temp_folder_keeps_it(sandbox: SandboxEnv) -> None:
    """Fedora's `~/.bashrc` sources every file of `~/.bashrc.d`; the session adds the tool it
    built there to the PATH (`echo 'export PATH=/tmp/tmp.X/bin:$PATH' > ~/.bashrc.d/tool.sh`).
    Only the start-up files themselves were read: a week later every new shell lost the tool."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "bin").mkdir()
    (sandbox.home / ".bashrc").write_text('for rc in ~/.bashrc.d/*; do . "$rc"; done\n')
    (sandbox.home / ".bashrc.d").mkdir()
    (sandbox.home / ".bashrc.d" / "tool.sh").write_text(f"export PATH={folder}/bin:$PATH\n")
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries


def test_a_temp_folder_a_projects_files_do_not_name_still_goes(sandbox: SandboxEnv) -> None:
    """The control: an override, a `.env.local` and a git config naming other folders keep nothing."""
    project = pushed_project(sandbox.home)
    (project / "compose.override.yaml").write_text("services:\n  db:\n    volumes:\n      - ./pgdata:/data\n")
    (project / ".env.local").write_text("DATABASE_URL=file:./dev.db\n")
    git(project, "config", "core.sshCommand", "ssh -o IdentitiesOnly=yes")
    folder = Path(call("mktemp -d", project).strip())
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries


@pytest.mark.parametrize("words", ["{src,docs}", "~/proj/{src,docs}", "src/{a,b}.txt"])
def test_a_temp_folder_given_copies_named_by_brace_expansion_goes(sandbox: SandboxEnv, words: str) -> None:
    """`d=$(mktemp -d) && cp -r {src,docs} "$d"/`: bash copies `src` and `docs`, both still in the
    project. The word `{src,docs}` was stored as the copy's source, a path that never existed: it
    read as a source removed since, and the folder was kept `dirty` for good (the log said the
    project's files were gone)."""
    project = pushed_project(sandbox.home)
    for name in ("src", "docs"):
        (project / name).mkdir()
        (project / name / "a.txt").write_text("a\n")
    (project / "src" / "b.txt").write_text("b\n")
    folder = Path(call(f'd=$(mktemp -d) && cp -r {words} "$d"/ && echo "$d"', project).strip())
    assert len(list(folder.iterdir())) == 2
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries


def test_a_temp_folder_given_a_brace_copy_of_a_folder_removed_since_is_kept(sandbox: SandboxEnv) -> None:
    """The other side: one of the braced sources removed a call later leaves the only copy."""
    project = pushed_project(sandbox.home)
    for name in ("src", "docs"):
        (project / name).mkdir()
        (project / name / "a.txt").write_text("a\n")
    folder = Path(call('d=$(mktemp -d) && cp -r {src,docs} "$d"/ && echo "$d"', project).strip())
    call("rm -rf docs", project)
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "dirty"), entries


def test_a_brace_copy_into_a_folder_the_call_made_is_no_copy_of_a_path_that_never_was(sandbox: SandboxEnv) -> None:
    """`mkdir /tmp/bak && cp -r ~/proj/{src,docs} /tmp/bak/`: bash copies `src` and `docs` into
    `bak`. The recorder read one source named `{src,docs}`, found no `bak/{src,docs}`, took `bak`
    itself as the copy of `~/proj/{src,docs}`, a path that never existed, and kept it `dirty` for
    good as a copy whose source was gone. A brace names no copy it can know: not recorded."""
    project = pushed_project(sandbox.home)
    for name in ("src", "docs"):
        (project / name).mkdir()
        (project / name / "a.txt").write_text("a\n")
    bak = Path(sandbox.user_tmp.resolve() / "bak")
    call(f"mkdir {bak} && cp -r {project}/{{src,docs}} {bak}/", project)
    assert sorted(p.name for p in bak.iterdir()) == ["docs", "src"]
    entries = week_later(sandbox.state, bak)
    assert entries.get(str(bak)) != ("kept", "dirty"), entries


def _old_temp_folder(sandbox: SandboxEnv) -> Path:
    """A temp folder a session made, its record and mtime a week back."""
    from tests.core.test_red_team_12_gc import OLD, shift_records

    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "scratch.txt").write_text("the session's\n")
    shift_records(sandbox.state, -OLD)
    when = time.time() - OLD
    os.utime(folder, (when, when))
    return folder


def test_a_file_written_into_an_old_temp_folder_after_the_sweep_judged_it_keeps_it(sandbox: SandboxEnv) -> None:
    """The sweep judged the folder a week old; before its removal the user saves their results
    into it (`cp results.csv /tmp/tmp.X/`): the folder's mtime is now. The last check asked who
    uses it and what unique work it holds, never its age again, and the new file went with it.
    Changed since judged: `young`, as the cleanup's last check says."""
    from app.core import gc

    folder = _old_temp_folder(sandbox)

    def user_saves(target: str) -> None:
        Path(target, "results.csv").write_text("the user's only copy\n")

    report = gc.sweep(_before_remove=user_saves)
    assert {e.path: (e.status, e.reason) for e in report.entries}[str(folder)] == ("kept", "young")
    assert (folder / "results.csv").read_text() == "the user's only copy\n"



@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_containers_database_in_a_temp_folder_keeps_it(sandbox: SandboxEnv) -> None:
    """`d=$(mktemp -d) && docker run -d --name db -v "$d/pgdata":/var/lib/postgresql/data
    postgres`: the container's postgres (uid 999) owns its data folder. The container is stopped
    this week (a reboot): no process, no mount shows it, and its configuration lies in the
    daemon's root-only folder. The sweep moved the folder into its trash, so the next `docker
    start db` found no data at that path (docker makes an empty one: a fresh database), and a
    user could not even delete what the container wrote. An entry of another user (a container's,
    what `sudo` made) is no output of this user's call."""
    project = pushed_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    (folder / "pgdata" / "base").mkdir(parents=True)
    (folder / "pgdata" / "PG_VERSION").write_text("16\n")
    for path in (folder / "pgdata", folder / "pgdata" / "base", folder / "pgdata" / "PG_VERSION"):
        os.chown(path, 999, 999)
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "in_use"), entries
    assert (folder / "pgdata" / "PG_VERSION").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="an archive keeps its owners when root extracts it")
def test_an_archive_root_extracted_into_a_temp_folder_still_goes(sandbox: SandboxEnv) -> None:
    """The other side, run as root (a dev container): `tar -xf` gives what it unpacks the
    archive's owners (uid 1000 here), and so do `cp -a` and `rsync -a`. Those entries are the
    copy's, not a container's: the folder goes by age."""
    import tarfile

    project = pushed_project(sandbox.home)
    (project / "pkg").mkdir()
    (project / "pkg" / "README").write_text("a package\n")
    def theirs(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 1000
        info.uname = info.gname = ""  # tar goes by the name first
        return info

    with tarfile.open(project / "pkg.tar", "w") as archive:
        archive.add(project / "pkg", arcname="pkg", filter=theirs)
    folder = Path(call(f'd=$(mktemp -d) && tar -xf {project}/pkg.tar -C "$d" && echo "$d"', project).strip())
    assert (folder / "pkg").stat().st_uid == 1000
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries


def _old_project(home: Path) -> Path:
    old = home / "work" / "old"
    old.mkdir(parents=True)
    (old / "thesis.tex").write_text("the only copy\n")
    return old


@pytest.mark.parametrize("command", [
    'd=$(mktemp -d) && tar -czf "$d/old.tgz" {old} && rm -rf {old} && echo "$d"',
    'd=$(mktemp -d) && tar -czf "$d/old.tgz" -C {work} old && rm -rf {old} && echo "$d"',
    'd=$(mktemp -d) && cd {work} && tar czf "$d/old.tgz" old && rm -r old && echo "$d"',
    pytest.param('d=$(mktemp -d) && cd {work} && zip -qr "$d/old.zip" old && rm -rf old && echo "$d"',
                 marks=pytest.mark.skipif(shutil.which("zip") is None, reason="zip is not installed")),
])
def test_a_folder_packed_into_a_temp_folder_and_removed_is_kept(sandbox: SandboxEnv, command: str) -> None:
    """"Archive the old project before deleting it": `tar -czf "$d/old.tgz" ~/work/old && rm -rf
    ~/work/old`. The archive in the temp folder is the only copy left, as after `cp -r` and `rm`
    (a move, which records nothing) or `tar -x` of an archive and its removal; yet a `tar -c`'s
    inputs were no source, and the folder went a week later with the project in it."""
    project = pushed_project(sandbox.home)
    old = _old_project(sandbox.home)
    out = call(command.format(old=old, work=old.parent), project).strip().splitlines()[-1]
    folder = Path(out)
    assert not old.exists() and len(list(folder.iterdir())) == 1
    entries = week_later(sandbox.state, folder)
    assert entries.get(str(folder), ("kept", "not recorded"))[0] == "kept", entries


@pytest.mark.parametrize("pack", [
    'tar -czf {folder}/old.tgz -C {work} old',
    pytest.param('cd {work} && zip -qr {folder}/old.zip old',
                 marks=pytest.mark.skipif(shutil.which("zip") is None, reason="zip is not installed")),
])
def test_a_folder_packed_into_a_temp_folder_then_removed_a_call_later_keeps_it(sandbox: SandboxEnv, pack: str) -> None:
    """The move in three calls: `mktemp -d`, then the pack into it, then `rm -rf ~/work/old`."""
    project = pushed_project(sandbox.home)
    old = _old_project(sandbox.home)
    folder = Path(call("mktemp -d", project).strip())
    call(pack.format(folder=folder, work=old.parent), project)
    call(f"rm -rf {old}", project)
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "dirty"), entries


def test_a_folder_packed_into_a_temp_folder_and_still_there_goes(sandbox: SandboxEnv) -> None:
    """The control: the project is still there; the archive is a copy, and the folder goes."""
    project = pushed_project(sandbox.home)
    old = _old_project(sandbox.home)
    folder = Path(call(f'd=$(mktemp -d) && tar -czf "$d/old.tgz" {old} && echo "$d"', project).strip())
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("removed", "age"), entries


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
@pytest.mark.parametrize("name", ["deploy_key", "github_ed25519", "work_rsa"])
def test_a_private_key_generated_into_a_temp_folder_under_its_own_name_keeps_it(sandbox: SandboxEnv,
                                                                                  name: str) -> None:
    """`d=$(mktemp -d) && ssh-keygen -t ed25519 -N "" -f "$d/deploy_key"`, the public half then
    added to the server as a deploy key. Only `id_*`, `*.key` and `*.pem` looked secret, so the
    folder went a week later with the only copy of the private half."""
    project = pushed_project(sandbox.home)
    out = call(f'd=$(mktemp -d) && ssh-keygen -q -t ed25519 -N "" -C deploy -f "$d/{name}" && echo "$d"', project)
    folder = Path(out.strip().splitlines()[-1])
    assert (folder / name).is_file()
    entries = week_later(sandbox.state, folder)
    assert entries[str(folder)] == ("kept", "dirty"), entries
