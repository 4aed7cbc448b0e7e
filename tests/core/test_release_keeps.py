"""What a release keeps besides tracked paths: a secret in a regenerable folder, anything in
another repository (a submodule, a nested clone), and each folder whole or gone while the
trash's purge runs beside it. Real checkouts made by the code WorktreeCreate runs, real
git submodules, real purge processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from app.core import checkouts, release, scratch
from tests.core.test_release_kill import SCRATCH, build_scratch, count
from tests.support import SandboxEnv, git, make_repo

SID = "5a6b7c8d-1e2f-4a3b-8c4d-9e0f1a2b3c4d"


def ended_checkout(repo: Path, sid: str = SID) -> Path:
    made = checkouts.create_checkout(str(repo), "work", sid)
    checkouts.session_ended(sid, "prompt_input_exit")
    return Path(made.path)


def write(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_secret_keeps_its_folder_but_an_installed_packages_key_or_a_link_does_not(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "node_modules/\n.venv/\nbuild/\n"})
    checkout = ended_checkout(repo)
    write(checkout / "build" / "out" / "server.KEY", "only copy\n")  # any depth, any case
    write(checkout / "node_modules" / "dep" / "test" / "fixture.pem")  # shipped by a package
    write(checkout / ".venv" / "lib" / "python3.12" / "site-packages" / "certifi" / "cacert.pem")
    outside = write(tmp_path / "tokens" / ".env", "TOKEN=kept-elsewhere\n")
    (checkout / "web" / "node_modules").mkdir(parents=True)
    (checkout / "web" / "node_modules" / ".env").symlink_to(outside)  # a link holds no content
    plan, kept = scratch.scratch_plan(str(checkout))
    assert plan == [".venv", "node_modules", "web/node_modules"]
    assert kept == [("build", "dirty")]
    done = release.release_checkout(str(checkout))
    assert done.status == "released"
    assert (checkout / "build" / "out" / "server.KEY").read_text() == "only copy\n"
    assert [(Path(v.path).name, v.action, v.reason) for v in done.verdicts if v.action == "keep"] == [
        ("build", "keep", "dirty")]
    for gone in plan:
        assert not (checkout / gone).exists(), gone
    assert outside.read_text() == "TOKEN=kept-elsewhere\n"


def test_a_dry_run_names_the_secret_it_keeps(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "node_modules/\n"})
    checkout = ended_checkout(repo)
    write(checkout / "node_modules" / "credentials.json")
    done = release.release_checkout(str(checkout), dry_run=True)
    assert [(v.action, v.reason) for v in done.verdicts] == [("keep", "dirty")]
    assert (checkout / "node_modules" / "credentials.json").exists()


def test_another_repository_inside_the_checkout_is_never_its_scratch(tmp_path: Path) -> None:
    """A nested clone (`tools/gen`, with its own ignored `build/` and a `target/` that is a
    repository itself) and a submodule: the default scratch never looks inside them, and a
    declared path inside one is kept `dirty`."""
    lib = make_repo(tmp_path / "lib", files={"build/config.cmake": "set(X 1)\n"})
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "node_modules/\ntools/\ntarget/\n"})
    allow = ("-c", "protocol.file.allow=always")
    git(repo, *allow, "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-qm", "vendor lib")
    checkout = ended_checkout(repo)
    git(checkout, *allow, "submodule", "update", "-q", "--init")
    clone = make_repo(checkout / "tools" / "gen", files={".gitignore": "build/\n", "gen.py": "1\n"})
    write(clone / "build" / "notes.txt", "the clone's own output, its business\n")
    make_repo(checkout / "target", files={"a.txt": "a repository named like output\n"})
    write(checkout / "node_modules" / "dep" / "index.js")
    assert scratch.regenerable_folders(str(checkout)) == ["node_modules"]

    write(checkout / ".claude" / "claudetto.json", json.dumps(
        {"scratch": ["node_modules", "vendor/lib/build", "tools/gen/build", "target"]}))
    plan, kept = scratch.scratch_plan(str(checkout))
    assert plan == ["node_modules"]
    assert sorted(kept) == [("target", "dirty"), ("tools/gen/build", "dirty"), ("vendor/lib/build", "dirty")]
    release.release_checkout(str(checkout))
    assert not (checkout / "node_modules").exists()
    assert (checkout / "vendor" / "lib" / "build" / "config.cmake").exists()
    assert (clone / "build" / "notes.txt").exists()
    assert (checkout / "target" / "a.txt").exists()


def _fill(checkout: Path, n: int, template: Path) -> None:
    checkouts.claim(f"s-{n}", str(checkout), None, "startup")
    build_scratch(checkout, 1200, template)
    checkouts.session_ended(f"s-{n}", "prompt_input_exit")


def test_repeated_releases_beside_running_purges_leave_each_folder_whole_or_gone(
        sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The dashboard's case: releases one after another in one process while purges (spawned
    by the releases before, by a finished cut-short one) come and go."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": "node_modules/\nbuild/\n"})
    checkout = ended_checkout(repo)
    template = write(tmp_path / "t.js")
    stop = threading.Event()

    def purges() -> None:
        while not stop.is_set():
            subprocess.run([sys.executable, "-P", "-m", "app.core.purge"], check=False)

    purger = threading.Thread(target=purges)
    purger.start()
    broken = []
    try:
        for n in range(1, 11):
            _fill(checkout, n, template)
            done = release.release_checkout(str(checkout))
            state = checkouts.registry()[str(checkout)]["state"]
            left = {rel: count(checkout / rel) for rel in SCRATCH if count(checkout / rel) != -1}
            if state == "released" and left:
                broken.append((n, left, [(v.path, v.reason) for v in done.verdicts if v.action == "keep"]))
    finally:
        stop.set()
        purger.join(60)
    assert not broken, broken
