"""The unique-work rule beyond the branches, on real repositories: tags made here, git dirs
whose work tree lives elsewhere, object stores another repository borrows, and secret files
outside any repository in a GC output."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from app.core import gc, scanner, unique_work
from app.core.secret_files import first_secret, looks_secret
from tests.support import SandboxEnv, git, make_repo, set_mtime
from tests.support import add_record as record

OLD = 8 * 86_400
SUB = ("-c", "protocol.file.allow=always")


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "origin", files={"a.txt": "a\n", ".gitignore": ".env\n"})


def clone(origin: Path, where: Path, *args: str) -> Path:
    where.parent.mkdir(parents=True, exist_ok=True)
    git(where.parent, *SUB, "clone", "-q", *args, str(origin), str(where))
    return where


def judge(path: Path) -> str | None:
    """The answer with a walk of its own and with the scanner's list: both must agree."""
    walked = unique_work.unique_work(path)
    assert unique_work.unique_work(path, scanner.scan(path).repos) == walked
    return walked


def commit(repo: Path, name: str) -> str:
    (repo / name).write_text(f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-qm", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


# --- tags ------------------------------------------------------------------------------------


def test_a_lightweight_or_annotated_tag_on_a_local_commit_is_unmerged(origin: Path, sandbox: SandboxEnv) -> None:
    for kind in ("light", "annotated"):
        repo = clone(origin, sandbox.user_tmp / kind / "proj")
        git(repo, "checkout", "-q", "--detach")
        commit(repo, "release.txt")
        git(repo, "tag", *(["-a", "-m", "v2"] if kind == "annotated" else []), "v2")
        git(repo, "checkout", "-q", "main")
        assert judge(repo.parent) == "unmerged", kind


def test_a_packed_local_tag_still_counts(origin: Path, sandbox: SandboxEnv) -> None:
    """`git pack-refs` (run by `git gc`) moves the tag into packed-refs: still found."""
    repo = clone(origin, sandbox.user_tmp / "packed" / "proj")
    git(repo, "checkout", "-q", "--detach")
    commit(repo, "release.txt")
    git(repo, "tag", "v2")
    git(repo, "checkout", "-q", "main")
    git(repo, "pack-refs", "--all")
    assert not any((repo / ".git" / "refs" / "tags").iterdir())
    assert judge(repo) == "unmerged"


def test_a_tag_on_a_commit_a_remote_branch_holds_keeps_nothing(origin: Path, sandbox: SandboxEnv) -> None:
    repo = clone(origin, sandbox.user_tmp / "pushed" / "proj")
    git(repo, "tag", "mine")  # on main, which origin/main holds
    assert judge(repo) is None


def test_a_repository_without_a_reflog_counts_every_tag(origin: Path, sandbox: SandboxEnv,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody knows when it came to be: a tag on an old commit no remote holds counts too."""
    repo = clone(origin, sandbox.user_tmp / "noreflog" / "proj")
    git(repo, "checkout", "-q", "--detach")
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{int(time.time()) - 86_400} +0000")
    commit(repo, "old.txt")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    git(repo, "tag", "old")
    git(repo, "checkout", "-q", "main")
    assert judge(repo) is None  # older than the clone: taken for a fetched tag
    for log in (repo / ".git" / "logs").rglob("*"):
        if log.is_file():
            log.unlink()
    assert judge(repo) == "unmerged"


# --- a git dir whose work tree lives elsewhere -------------------------------------------------


def test_a_separated_git_dir_judged_with_its_checkout_inside_the_folder(origin: Path, sandbox: SandboxEnv) -> None:
    top = sandbox.user_tmp / "both"
    work = clone(origin, top / "work", f"--separate-git-dir={top / 'proj.git'}")
    assert judge(top) is None
    (work / "a.txt").write_text("edited\n")
    assert judge(top) == "dirty"


def test_a_git_dir_naming_its_work_tree_is_judged_with_it(origin: Path, sandbox: SandboxEnv) -> None:
    """`core.worktree` inside the folder, with no `.git` there: judged as that checkout;
    outside the folder: the checkout needs it."""
    top = sandbox.user_tmp / "named"
    git_dir = top / "proj.git"
    clone(origin, top / "files", f"--separate-git-dir={git_dir}")
    (top / "files" / ".git").unlink()  # the git dir alone says where its work tree is
    git(git_dir, "config", "core.worktree", "../files")
    assert (top / "files" / "a.txt").exists() and not (top / "files" / ".git").exists()
    assert judge(top) is None
    (top / "files" / "a.txt").write_text("edited\n")
    assert judge(top) == "dirty"
    git(git_dir, "config", "core.worktree", str(sandbox.home / "elsewhere"))
    assert judge(top) == "unmerged"


def test_a_deinitialized_submodule_keeps_nothing(origin: Path, sandbox: SandboxEnv) -> None:
    """Its git dir stays in `.git/modules`, naming a checkout that is now empty: only its
    commits are judged (all on its remote), never an empty checkout as all deleted."""
    parent = make_repo(sandbox.user_tmp / "upstream-parent")
    git(parent, *SUB, "submodule", "add", "-q", str(origin), "sub")
    git(parent, "commit", "-qm", "sub")
    top = clone(parent, sandbox.user_tmp / "withsub" / "proj")
    git(top, *SUB, "submodule", "update", "-q", "--init")
    git(top, "submodule", "deinit", "-q", "-f", "sub")
    assert (top / ".git" / "modules" / "sub").is_dir()  # its git dir stays, naming the empty checkout
    assert judge(top.parent) is None


# --- object stores another repository borrows --------------------------------------------------


def test_a_clone_a_known_project_borrows_from_is_unmerged(origin: Path, sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The project lies deep (not directly in the home): known by `.claude.json`."""
    cache = clone(origin, sandbox.user_tmp / "cache")
    project = clone(cache, sandbox.home / "src" / "deep" / "proj", "--shared")
    assert judge(cache) is None  # nobody knows the project yet
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(project): {}}}))
    assert judge(cache) == "unmerged"
    assert judge(project) is None  # the borrower itself lends nothing


def test_a_borrower_inside_the_same_folder_goes_with_it(origin: Path, sandbox: SandboxEnv) -> None:
    top = sandbox.user_tmp / "pair"
    cache = clone(origin, top / "cache")
    project = clone(cache, top / "proj", "--shared")
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(project): {}}}))
    assert judge(top) is None
    assert judge(cache) == "unmerged"


def test_a_linked_worktree_of_a_home_project_names_the_common_dir(origin: Path, sandbox: SandboxEnv) -> None:
    cache = clone(origin, sandbox.user_tmp / "cache")
    main = clone(cache, sandbox.user_tmp / "main", "--shared")
    wt = sandbox.home / "wt"
    git(main, "worktree", "add", "-q", "-b", "side", str(wt))
    assert judge(cache) == "unmerged"  # the worktree sits in the home; its objects are main's


# --- secret files outside repositories ---------------------------------------------------------


def test_first_secret_outside_repos(origin: Path, sandbox: SandboxEnv) -> None:
    top = sandbox.user_tmp / "out"
    (top / "deep" / "er").mkdir(parents=True)
    (top / "deep" / "er" / "notes.txt").write_text("n\n")
    assert first_secret(str(top), ["out"]) is None
    for ignored in ("node_modules/pkg/test/id_rsa", "node_modules/@s/p/x.pem",
                    "venv/lib/python3.12/site-packages/certifi/cacert.pem"):
        (top / ignored).parent.mkdir(parents=True)
        (top / ignored).write_text("shipped\n")
    (top / "link.key").symlink_to(top / "deep" / "er" / "notes.txt")
    repo = clone(origin, top / "repo")
    commit(repo, ".env.example")  # tracked: committed, not lost
    assert first_secret(str(top), ["out"]) is None
    (top / "node_modules" / ".env").write_text("T=1\n")  # not inside a package
    assert first_secret(str(top), ["out"]) == "out/node_modules/.env"
    (top / "node_modules" / ".env").unlink()
    (top / "deep" / "er" / "Credentials.json").write_text("{}\n")
    assert first_secret(str(top), ["out"]) == "out/deep/er/Credentials.json"
    key = top / "deep" / "er" / "Credentials.json"
    assert first_secret(str(key), ["Credentials.json"]) == "Credentials.json"
    assert first_secret(str(top / "deep" / "er" / "notes.txt"), ["notes.txt"]) is None
    # moved aside for its removal, a folder is judged by the name it had, not its trash slot
    moved = sandbox.user_tmp / ".pending-123-456-abc"
    (sandbox.user_tmp / "pkgs" / "node_modules").mkdir(parents=True)
    (sandbox.user_tmp / "pkgs" / "node_modules").rename(moved)
    (moved / ".env").write_text("T=1\n")
    assert first_secret(str(moved), ["node_modules"]) == "node_modules/.env"
    assert first_secret(str(moved), ["site-packages"]) is None


def test_looks_secret_agrees_with_the_patterns() -> None:
    from app.core.secret_files import SECRET_PATTERNS, _glob

    names = [".env", ".ENV.local", "a.pem", "x.KEY", "id_rsa", "credentials.json", "a.local.b", ".local.",
             "env", "pem", "x.pem.bak", "foo.local", "local.x", "key", "my.env", "ID_ed25519.pub"]
    for name in names:
        assert looks_secret(name) == any(_glob(name.lower(), p) for p in SECRET_PATTERNS), name


@pytest.mark.parametrize("layout", ["folder", "file"])
def test_the_gc_keeps_an_old_output_holding_a_key(sandbox: SandboxEnv, layout: str) -> None:
    folder = sandbox.user_tmp / "tmp.keys"
    folder.mkdir()
    key = folder / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (folder / "plain.txt").write_text("x\n")
    path = folder if layout == "folder" else key
    set_mtime(path, OLD)
    record("s1", path)
    report = gc.sweep()
    assert {e.path: (e.status, e.reason) for e in report.entries}[str(path)] == ("kept", "dirty")
    assert key.exists()
    key.unlink()
    set_mtime(path if path.exists() else folder, OLD)
    if layout == "folder":
        assert {e.path: e.status for e in gc.sweep().entries}[str(folder)] == "removed"
        assert not folder.exists()


def test_the_gc_removes_an_old_output_whose_only_secret_is_inside_a_clone(origin: Path, sandbox: SandboxEnv) -> None:
    """A tracked `.env.example` of a clean clone is committed: the output goes."""
    top = sandbox.user_tmp / "tmp.clone"
    repo = clone(origin, top / "proj")
    (repo / ".env.example").write_text("X=\n")
    git(repo, "add", ".env.example")
    git(repo, "commit", "-qm", "example")
    git(repo, "push", "-q", "origin", "HEAD:refs/heads/example")
    git(repo, "fetch", "-q")
    set_mtime(top, OLD)
    record("s1", top)
    entries = {e.path: (e.status, e.reason) for e in gc.sweep().entries}
    assert entries[str(top)] == ("removed", "age")
    assert not os.path.exists(top)
