"""Red team, round four: memory findings that would be wrong, supersedes that would strike
the wrong line or lose one, and the write lint, against the memory-hygiene seed. Real git
repositories, real worktrees, real memory folders, the hooks and the CLI as Claude and a
user run them."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core import memory
from tests.core.test_memory import found, write_memory
from tests.support import git, make_repo

CODE = {
    "src/router.py": "class Router:\n    def dispatch(self):\n        return parse_args()\n",
    "pyproject.toml": '[project]\nname = "app"\ndependencies = ["jhelm==1.3.1"]\n',
    "README.md": "# app\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "app", files=CODE)


# --- findings that would be wrong ---------------------------------------------------------


def test_a_path_relative_to_the_root_holds_from_a_subfolder(repo: Path) -> None:
    write_memory(repo, {"notes.md": "- The router is `src/router.py`, also `./src/router.py` and "
                                    f"`{repo}/src/router.py`.\n"})
    assert found(repo) == []
    assert memory.session_start_context({"cwd": str(repo / "src")}) == ""


def test_a_home_path_is_a_pointer_never_checked(repo: Path) -> None:
    write_memory(repo, {"notes.md": "- The deploy key is in `~/.config/app/deploy_key.toml`.\n"
                                    "- Tokens live in `$HOME/.app_tokens.json`.\n"})
    assert found(repo) == []


def test_a_worktree_on_an_older_commit_does_not_call_main_facts_gone(repo: Path, tmp_path: Path) -> None:
    """Memory is shared by every worktree of a repository. A worktree cut before the main
    checkout gained a file must not ask the model to strike the (true) fact about it."""
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "old", str(worktree))
    (repo / "src" / "billing_engine.py").write_text("class BillingEngine:\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "billing")
    write_memory(repo, {"notes.md": "- Billing lives in `src/billing_engine.py` (`BillingEngine`).\n"})
    assert found(repo) == []
    assert found(worktree) == []
    assert memory.session_start_context({"cwd": str(worktree)}) == ""


def test_a_worktree_with_an_older_pin_does_not_call_the_main_pin_stale(repo: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "old", str(worktree))
    (repo / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["jhelm==1.5.2"]\n')
    git(repo, "commit", "-q", "-am", "bump")
    write_memory(repo, {"notes.md": "- The build uses jhelm 1.5.2.\n"})
    assert found(repo) == []
    assert found(worktree) == []


def test_a_fact_gone_from_both_checkouts_is_still_found_from_the_worktree(repo: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "old", str(worktree))
    write_memory(repo, {"notes.md": "- The router is `src/legacy_router.py`.\n- The build uses jhelm 1.2.0.\n"})
    kinds = [(line, kind) for _, line, kind, _ in found(worktree)]
    assert kinds == [(7, "vanished_artifact"), (8, "stale_version_pin")]


def test_a_version_the_repo_pins_is_not_moved_on(repo: Path) -> None:
    (repo / "requirements.txt").write_text("requests==2.31.0\njhelm==1.3.1\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["requests>=2.0", "jhelm~=1.3"]\n')
    write_memory(repo, {"notes.md": "- We use requests 2.31.0 and jhelm 1.3.1.\n"})
    assert found(repo) == []


# --- the write lint: a legitimate write let through, a forbidden one refused --------------

GOOD = "---\nname: Build\ndescription: how the shop builds\nmetadata:\n  type: project\n---\n"


@pytest.mark.parametrize("line", [
    "- The worker retries as soon as the lock is released.",
    "- The cache evicts the least recently used entry; most recently used stays.",
    "- Releases go out on the last Friday of each month.",
    "- The freeze starts the day before each release.",
    "- The weekly report covers the last week of traffic, every Monday.",
])
def test_a_legitimate_fact_is_not_refused_for_a_relative_date(line: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    assert write(memory_dir() / "build.md", GOOD + line + "\n") is None


@pytest.mark.parametrize(("line", "word"), [
    ("- The build broke the day before.", "the day before"),
    ("- Soon the API moves to v2.", "Soon"),
    ("- Recently the deploy moved to ninja.", "Recently"),
    ("- We switched last Friday.", "last Friday"),
    ("- Deployed last week of the sprint, as planned last week.", "last week"),
])
def test_a_relative_date_is_still_refused(line: str, word: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    reason = write(memory_dir() / "build.md", GOOD + line + "\n")
    assert reason is not None and f'"{word}" (line 7)' in reason


@pytest.mark.parametrize("front", [
    "\ufeff---\nname: B\ndescription: d\ntype: feedback\n---\n",  # an editor's BOM, the older flat type
    "---\r\nname: B\r\ndescription: d\r\nmetadata: {type: user}\r\n---\r\n",
    "---\nname: B\ndescription: d\nmetadata:\n  type: reference  # kept\n---\n",
])
def test_legitimate_frontmatter_forms_are_let_through(front: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    assert write(memory_dir() / "build.md", front + "- Uses make.\n") is None


@pytest.mark.parametrize("front", [
    "---\nname: B\ndescription: d\n---\n",  # no type
    "---\nname: B\ndescription: d\nmetadata:\n  type: notes\n---\n",  # not one of the four
    "---\nname: B\nmetadata:\n  type: user\n---\n",  # no description
    "- Uses make.\n---\nname: B\ndescription: d\ntype: user\n---\n",  # frontmatter not at the top
])
def test_incomplete_frontmatter_is_refused(front: str) -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    reason = write(memory_dir() / "build.md", front + "- Uses make.\n")
    assert reason is not None and "frontmatter" in reason


def test_the_index_takes_pointers_only_and_no_frontmatter() -> None:
    from tests.hooks.test_memory_lint import memory_dir, write

    index = memory_dir() / "MEMORY.md"
    assert write(index, "# Memory\n\n- [Build](build.md) — how it builds\n- deploy.md: the deploy steps\n") is None
    reason = write(index, "- [Build](build.md) — builds\nThe build uses make and ninja, and it is slow.\n")
    assert reason is not None and "line 2 is no pointer" in reason
    reason = write(index, "---\nname: index\n---\n- [Build](build.md)\n")
    assert reason is not None and "takes no frontmatter" in reason
