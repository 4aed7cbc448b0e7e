"""Red team, round four: memory findings that would be wrong, supersedes that would strike
the wrong line or lose one, and the write lint, against the memory-hygiene seed. Real git
repositories, real worktrees, real memory folders, the hooks and the CLI as Claude and a
user run them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.core import memory
from tests.core.test_memory import FRONT, found, memory_folder, write_memory
from tests.support import SandboxEnv, git, make_repo, run_cli

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
