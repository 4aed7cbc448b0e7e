"""Red team, round two: SessionEnd's detached work run concurrently, as Claude runs the hooks
(a stand-in Claude process per session, tests/hooks/test_checkouts.py): two sessions of one
checkout ending at the same moment while the GC sweep and the cleanup run on it."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.hooks.test_checkouts import (
    GITIGNORE,
    Claude,
    fill_scratch,
    registry,
    scratch_gone,
    tmp_intact,
    wait_for,
)
from tests.support import SandboxEnv, make_repo, run_cli


@pytest.fixture
def launch(sandbox: SandboxEnv) -> Iterator[Callable[[Path], Claude]]:
    made: list[Claude] = []

    def one(cwd: Path) -> Claude:
        claude = Claude(sandbox, str(uuid.uuid4()), cwd)
        made.append(claude)
        return claude

    yield one
    for claude in made:
        claude.exit()


def test_two_sessions_ending_at_once_with_a_sweep_lose_nothing_and_release_once(
        sandbox: SandboxEnv, tmp_path: Path, launch: Callable[[Path], Claude]) -> None:
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": GITIGNORE,
                                               "package.json": "{}\n"})
    first = launch(repo)
    checkout = first.create("shared-work")
    first.cwd = checkout
    first.write_file()
    first.start()
    second = launch(checkout)
    second.start()
    fill_scratch(checkout)
    (checkout / "notes.txt").write_text("untracked, the user's\n")
    (checkout / ".env").write_text("TOKEN=1\n")

    def end(claude: Claude) -> None:
        claude.end()
        claude.exit()

    def sweep() -> None:
        run_cli("gc")
        run_cli("clean", str(repo))

    threads = [threading.Thread(target=end, args=(c,)) for c in (first, second)]
    threads.append(threading.Thread(target=sweep))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    # both ends are recorded (no lost update of the registry), and the checkout is released
    assert wait_for(lambda: registry(sandbox)[str(checkout)]["sessions"]
                    == {first.session_id: False, second.session_id: False}), registry(sandbox)
    assert wait_for(lambda: registry(sandbox)[str(checkout)].get("state") == "released"), registry(sandbox)
    assert wait_for(lambda: scratch_gone(checkout))
    assert tmp_intact(checkout)
    assert (checkout / "notes.txt").read_text() == "untracked, the user's\n"
    assert (checkout / ".env").read_text() == "TOKEN=1\n"
    assert (checkout / "README.md").exists() and (checkout / "web" / "package.json").exists()


def test_clear_then_session_end_hands_over_and_keeps_the_scratch(
        sandbox: SandboxEnv, tmp_path: Path, launch: Callable[[Path], Claude]) -> None:
    """`/clear` ends the old session (reason clear) and starts a new one in the same process
    at once: the SessionEnd's detached work and the SessionStart race; the scratch the
    running Claude uses stays."""
    repo = make_repo(tmp_path / "repo", files={"README.md": "x\n", ".gitignore": GITIGNORE,
                                               "package.json": "{}\n"})
    claude = launch(repo)
    checkout = claude.create("clear-work")
    claude.cwd = checkout
    claude.write_file()
    claude.start()
    fill_scratch(checkout)
    old = claude.session_id
    claude.end(reason="clear")
    claude.session_id = str(uuid.uuid4())
    claude.write_file()
    claude.start(source="clear")
    assert wait_for(lambda: claude.session_id in registry(sandbox)[str(checkout)]["sessions"]), registry(sandbox)
    # the detached work of the SessionEnd has time to run: the checkout stays held all along
    assert not wait_for(lambda: registry(sandbox)[str(checkout)].get("state") == "released"
                        or not (checkout / "node_modules" / "pkg" / "f0").exists(), deadline_s=3.0)
    entry = registry(sandbox)[str(checkout)]
    assert entry["sessions"].get(claude.session_id) is True and old in entry["sessions"]
    assert tmp_intact(checkout)
