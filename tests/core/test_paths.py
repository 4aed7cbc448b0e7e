from __future__ import annotations

import json
import os
from pathlib import Path

from app.core import paths
from tests.support import SandboxEnv, git, make_repo


def test_every_location_comes_from_the_environment(sandbox: SandboxEnv) -> None:
    assert paths.home() == sandbox.home
    assert paths.config_dir() == sandbox.config
    assert paths.sessions_dir() == sandbox.config / "sessions"
    assert paths.claude_tmp_dir() == sandbox.claude_tmp
    assert paths.user_tmp() == Path(os.path.realpath(sandbox.user_tmp))
    assert paths.claudetto_home() == sandbox.state
    assert paths.journal_file() == sandbox.state / "journal.jsonl"
    assert paths.claude_json() == sandbox.config / ".claude.json"


def test_defaults_when_variables_are_unset(sandbox: SandboxEnv, monkeypatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.delenv("CLAUDETTO_HOME")
    monkeypatch.delenv("CLAUDE_CODE_TMPDIR")
    assert paths.config_dir() == sandbox.home / ".claude"
    assert paths.claude_json() == sandbox.home / ".claude.json"
    assert paths.claudetto_home() == sandbox.home / ".claudetto"
    # Claude's own rule: CLAUDE_CODE_TMPDIR, else TMPDIR, TMP, TEMP, else /tmp
    assert paths.claude_tmp_root() == Path(os.path.realpath(sandbox.user_tmp))
    for name in ("TMPDIR", "TMP", "TEMP"):
        monkeypatch.delenv(name, raising=False)
    assert paths.claude_tmp_root() == Path(os.path.realpath("/tmp"))
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(sandbox.root / "plugin-data"))
    assert paths.claudetto_home() == sandbox.root / "plugin-data"


def test_temp_roots_are_real_paths(sandbox: SandboxEnv, monkeypatch, tmp_path: Path) -> None:
    link = tmp_path / "tmp-link"
    link.symlink_to(sandbox.claude_tmp_root)
    monkeypatch.setenv("CLAUDE_CODE_TMPDIR", str(link))
    assert paths.claude_tmp_dir() == Path(os.path.realpath(sandbox.claude_tmp_root)) / f"claude-{os.getuid()}"


def test_slug_replaces_every_non_alphanumeric() -> None:
    assert paths.project_slug("/a/.b") == "-a--b"
    assert paths.project_slug("/home/chris/2_project-files") == "-home-chris-2-project-files"
    # an astral character is two UTF-16 code units, so two dashes
    assert paths.project_slug("/x/\U0001f600") == "-x---"
    assert paths.project_slug("/x/é") == "-x--"


def test_slug_over_200_characters_gets_a_base36_hash() -> None:
    long_path = "/" + "a" * 250
    slug = paths.project_slug(long_path)
    assert slug.startswith("-" + "a" * 199 + "-")
    # Java-style string hash, wrapped to signed 32 bits, |h| in base 36
    h = 0
    for ch in long_path:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    expected = ""
    n = abs(h)
    while True:
        n, r = divmod(n, 36)
        expected = "0123456789abcdefghijklmnopqrstuvwxyz"[r] + expected
        if n == 0:
            break
    assert slug == ("-" + "a" * 250)[:200] + "-" + expected
    assert len(paths.project_slug("/" + "b" * 199)) == 200  # exactly 200: no hash


def test_session_log_lives_under_the_claude_tmp_root(sandbox: SandboxEnv, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    (repo / "sub").mkdir()
    log = paths.session_log(str(repo / "sub"), "abc-123")
    assert log == Path(os.path.realpath(sandbox.claude_tmp_root)) / "claudetto" / paths.project_slug(repo) / "abc-123.log"
    assert paths.session_log(None, "x\n../y").name == "x_.._y.log"


def test_git_root_and_main_repo_of_a_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    wt = repo / ".claude" / "worktrees" / "w1"
    git(repo, "worktree", "add", "-q", "-b", "worktree-w1", str(wt))
    (wt / "deep").mkdir()
    assert paths.git_root(wt / "deep") == wt
    assert paths.main_repo_root(wt / "deep") == repo
    assert paths.main_repo_root(repo) == repo
    assert paths.git_root(tmp_path) is None


def test_known_projects_from_claude_json_sessions_and_cwd(sandbox: SandboxEnv, tmp_path: Path, monkeypatch) -> None:
    a = make_repo(tmp_path / "a")
    b = tmp_path / "b"
    b.mkdir()
    c = make_repo(tmp_path / "c")
    (sandbox.config / ".claude.json").write_text(json.dumps({"projects": {str(a): {}, str(tmp_path / "gone"): {}}}))
    sandbox.write_session("1", pid=None, sessionId="s1", cwd=str(b))
    monkeypatch.chdir(c)
    assert paths.known_projects() == [a, b, c]


def test_known_projects_survive_a_corrupt_claude_json(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (sandbox.config / ".claude.json").write_text("{not json")
    assert paths.known_projects(cwd=tmp_path) == []
