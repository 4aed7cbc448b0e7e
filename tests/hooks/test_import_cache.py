"""The import cache of the frequent hook events (hooks/import_cache.py, hooks/entry.py
`Cached`): built by the first prompt or tool call, used by the next ones, and never serving
code older than its source (edited, replaced, its mtime set back), a damaged file, or a
folder it cannot write.

Each test runs a copy of claudetto's code (app/ and hooks/) in tmp_path through the settings
entry, exactly as Claude runs it (`sh -c '<python> -I -S -c ...'`), with a first statement
that reports at exit where each module came from."""

from __future__ import annotations

import json
import marshal
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import setup
from tests.support import ROOT, SandboxEnv

PROBE = ("import atexit,sys;atexit.register(lambda:sys.stderr.write('LOADERS='+json.dumps("
         "{n:type(getattr(m,'__spec__',None) and m.__spec__.loader).__name__ for n,m in list(sys.modules.items())"
         " if n.split('.')[0] in ('app','hooks')})+'\\n'));import json;")


def copy_code(tmp_path: Path) -> Path:
    root = tmp_path / "claudetto"
    for part in ("app", "hooks"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def cache_file(root: Path) -> Path:
    return root / "hooks" / "__pycache__" / f"hot-imports.{sys.implementation.cache_tag}.marshal"


def age_cache(root: Path) -> None:
    """As if the last rebuild were a minute ago (rebuilds are at most one in REBUILD_EVERY_S)."""
    cache = cache_file(root)
    old = cache.stat().st_mtime - 60
    os.utime(cache, (old, old))


def cache_index(root: Path) -> dict:
    whole = cache_file(root).read_bytes()
    size = int.from_bytes(whole[:4], "little")
    return marshal.loads(whole[4:4 + size])[2]


def hook(root: Path, payload: dict, cwd: Path) -> tuple[subprocess.CompletedProcess[bytes], dict[str, str]]:
    command = f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(PROBE + setup.entry_code(str(root)))}"
    result = subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), cwd=str(cwd),
                            capture_output=True, timeout=60, check=False)
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.decode().splitlines() if x.startswith("LOADERS=")]
    return result, json.loads(lines[-1][len("LOADERS="):])


def edit(tmp_path: Path) -> tuple[dict, Path]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    edited = project / "parser.py"
    edited.write_text("x = 1\n")
    return {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(project), "tool_name": "Write",
            "tool_input": {"file_path": str(edited), "content": "x = 1\n"},
            "tool_response": {"type": "create", "filePath": str(edited)}}, project


def test_the_first_tool_call_builds_it_and_the_next_one_is_served_from_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    _, loaders = hook(root, payload, project)
    assert loaders["app.core.ledger"] == "SourceFileLoader"
    built = cache_file(root).stat()

    _, loaders = hook(root, payload, project)
    assert loaders["app.core.ledger"] == "Cached" and loaders["hooks.post_tool"] == "Cached"
    assert loaders["hooks.entry"] == "SourceFileLoader"  # the entry itself is what reads the cache
    assert "hooks.import_cache" not in loaders  # nothing was missed: nothing rebuilt
    again = cache_file(root).stat()
    assert (again.st_ino, again.st_mtime_ns) == (built.st_ino, built.st_mtime_ns)
    ledger = json.loads((sandbox.state / "ledger.json").read_text())
    assert str(project / "parser.py") in ledger["files"]


def test_an_edited_module_runs_as_edited_and_the_cache_follows(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    hook(root, payload, project)
    hook(root, payload, project)
    module = root / "app" / "core" / "ledger_look.py"
    module.write_text(module.read_text() + "\nimport sys as _s\n_s.stderr.write('EDITED\\n')\n")

    built = cache_file(root).stat()
    result, loaders = hook(root, payload, project)
    assert b"EDITED" in result.stderr and loaders["app.core.ledger_look"] == "SourceFileLoader"
    assert cache_file(root).stat().st_ino == built.st_ino  # rebuilt at most once in REBUILD_EVERY_S
    age_cache(root)
    result, loaders = hook(root, payload, project)
    assert b"EDITED" in result.stderr and loaders["app.core.ledger_look"] == "SourceFileLoader"
    result, loaders = hook(root, payload, project)
    assert b"EDITED" in result.stderr and loaders["app.core.ledger_look"] == "Cached"


def test_a_same_size_edit_with_its_mtime_set_back_is_not_served_stale(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    hook(root, payload, project)
    module = root / "hooks" / "post_tool.py"
    before = module.stat()
    text = module.read_text()
    addition = "\nimport sys as _s\n_s.stderr.write('NEW\\n')\n"
    first = text.index("\n")  # the docstring's first line gives up as many characters as are added
    assert first > len(addition) + 3
    module.write_text(text[: first - len(addition)] + text[first:] + addition)
    assert module.stat().st_size == before.st_size
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))  # only the ctime still tells
    # Python's own .pyc check (mtime and size) cannot see this edit: take its .pyc away, so
    # what runs shows what the cache did
    for pyc in (root / "hooks" / "__pycache__").glob("post_tool.*.pyc"):
        pyc.unlink()
    result, loaders = hook(root, payload, project)
    assert b"NEW" in result.stderr and loaders["hooks.post_tool"] == "SourceFileLoader"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "another python", "a folder", "a symlink"])
def test_a_damaged_or_foreign_file_is_ignored_and_rebuilt(damage: str, sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    hook(root, payload, project)
    cache = cache_file(root)
    whole = cache.read_bytes()
    cache.unlink()
    if damage == "garbage":
        cache.write_bytes(os.urandom(len(whole)))
    elif damage == "truncated":
        cache.write_bytes(whole[: len(whole) // 2])
    elif damage == "empty":
        cache.write_bytes(b"")
    elif damage == "another python":
        cache.write_bytes(whole.replace(sys.modules["_frozen_importlib_external"].MAGIC_NUMBER, b"\0\0\r\n", 1))
    elif damage == "a folder":
        cache.mkdir()
    else:
        (tmp_path / "elsewhere").write_bytes(whole)
        cache.symlink_to(tmp_path / "elsewhere")

    if cache.is_file() and not cache.is_symlink():
        age_cache(root)
    _, loaders = hook(root, payload, project)
    assert loaders["app.core.ledger"] in ("SourceFileLoader", "Cached")
    if damage == "truncated":  # the index is whole: the modules whose code is cut short are imported as usual
        assert "SourceFileLoader" in {loader for name, loader in loaders.items() if name.startswith("app.")}
    if damage in ("a folder", "a symlink"):
        return
    _, loaders = hook(root, payload, project)
    assert loaders["app.core.ledger"] == "Cached"


def test_a_symlinked_cache_is_never_written_through(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    os.utime(target, (1e9, 1e9))
    cache = cache_file(root)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.symlink_to(target)
    hook(root, payload, project)
    assert target.read_text() == "keep me\n"  # the rebuild renames a new file over the link
    assert not cache.is_symlink() and cache.stat().st_size > 1000


def test_where_the_cache_cannot_be_written_the_hooks_still_work(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    (root / "hooks" / "__pycache__").write_text("not a folder\n")
    for _ in range(2):
        _, loaders = hook(root, payload, project)
        assert loaders["app.core.ledger"] == "SourceFileLoader"
    ledger = json.loads((sandbox.state / "ledger.json").read_text())
    assert str(project / "parser.py") in ledger["files"]


def test_only_the_frequent_events_fill_it(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    start = {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(project), "source": "startup"}
    hook(root, start, project)
    assert not cache_file(root).exists()
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(project), "prompt": "hi"}
    hook(root, prompt, project)
    assert cache_file(root).exists()
    age_cache(root)
    hook(root, start, project)
    assert "app.core.gc" not in cache_index(root)
    _, loaders = hook(root, start, project)  # any event may read it
    assert loaders["app.core.log"] == "Cached"


def test_many_hooks_at_once_on_an_empty_cache(sandbox: SandboxEnv, tmp_path: Path) -> None:
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    command = f"{shlex.quote(sys.executable)} -I -S -c {shlex.quote(setup.entry_code(str(root)))}"
    running = [subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project)
               for _ in range(8)]
    for process in running:
        _, err = process.communicate(json.dumps(payload).encode(), timeout=60)
        assert process.returncode == 0 and err == b""
    assert [p.name for p in cache_file(root).parent.iterdir() if p.name.endswith(".tmp")] == []
    _, loaders = hook(root, payload, project)
    assert loaders["app.core.ledger"] == "Cached"


def test_a_project_module_of_the_same_name_is_never_served(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """The cache holds claudetto's code by name and by path: a project's own `app/` in the
    folder Claude runs the hook from stays out, as with -I alone."""
    root = copy_code(tmp_path)
    payload, project = edit(tmp_path)
    hook(root, payload, project)
    for pkg in ("app", "hooks"):
        (project / pkg / "core").mkdir(parents=True)
        (project / pkg / "__init__.py").write_text("raise RuntimeError('user package imported')\n")
        (project / pkg / "core" / "__init__.py").write_text("raise RuntimeError('user package imported')\n")
    result, loaders = hook(root, payload, project)
    assert b"user package" not in result.stderr and loaders["app.core"] == "Cached"
