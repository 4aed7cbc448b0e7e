"""Shared test helpers: the sandbox environment, hook runs as Claude does them, real git."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: A test of a command a session runs with rsync, where rsync is installed (.ci/run installs it).
NEEDS_RSYNC = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync is not installed")


@dataclass(frozen=True)
class SandboxEnv:
    """The five roots every test points the program at (never the real ones)."""

    root: Path
    home: Path
    config: Path  # CLAUDE_CONFIG_DIR
    claude_tmp_root: Path  # CLAUDE_CODE_TMPDIR
    user_tmp: Path  # TMPDIR
    state: Path  # CLAUDETTO_HOME

    @property
    def claude_tmp(self) -> Path:
        """realpath(CLAUDE_CODE_TMPDIR)/claude-<uid>."""
        return Path(os.path.realpath(self.claude_tmp_root)) / f"claude-{os.getuid()}"

    @property
    def sessions(self) -> Path:
        return self.config / "sessions"

    def write_session(self, name: str, **fields: Any) -> Path:
        """A session file as Claude writes it (`sessions/<name>.json`)."""
        self.sessions.mkdir(parents=True, exist_ok=True)
        path = self.sessions / f"{name}.json"
        path.write_text(json.dumps(fields))
        return path


def make_sandbox(base: Path) -> tuple[SandboxEnv, dict[str, str]]:
    env = SandboxEnv(
        root=base,
        home=base / "home",
        config=base / "home" / ".claude",
        claude_tmp_root=base / "ctmp",
        user_tmp=base / "utmp",
        state=base / "state",
    )
    for p in (env.home, env.config, env.claude_tmp_root, env.user_tmp):
        p.mkdir(parents=True, exist_ok=True)
    variables = {
        "HOME": str(env.home),
        "CLAUDE_CONFIG_DIR": str(env.config),
        "CLAUDE_CODE_TMPDIR": str(env.claude_tmp_root),
        "TMPDIR": str(env.user_tmp),
        "CLAUDETTO_HOME": str(env.state),
        # never the machine's /etc/claude-code/managed-settings.json
        "CLAUDETTO_MANAGED_SETTINGS": str(base / "managed-settings.json"),
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return env, variables


def run_hook(payload: dict[str, Any] | bytes | str, *, cwd: Path | str | None = None,
             timeout: float = 30, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -P -m hooks` in a subprocess with the payload on stdin, as Claude runs it."""
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = payload
    return subprocess.run(
        [sys.executable, "-P", "-m", "hooks"],
        input=data,
        capture_output=True,
        cwd=str(cwd) if cwd else None,
        timeout=timeout,
        env=env if env is not None else dict(os.environ),
        check=False,
    )


def run_cli(*args: str, cwd: Path | str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`claudetto ARGS` in a subprocess (through the module, so it needs no PATH)."""
    return subprocess.run(
        [sys.executable, "-P", "-c", "import sys; from app.cli import main; sys.exit(main())", *args],
        capture_output=True,
        text=True,
        cwd=str(cwd) if cwd else None,
        timeout=timeout,
        check=False,
    )


@contextmanager
def running_claudes(root: Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """`launch(*args, cwd=None)`: `claude ARGS...` as a running process (a program named
    `claude`, kept in `root/bin`, that waits on its stdin), with no sessions file: one starting
    up, a headless run, or one whose files this claudetto cannot see. Each is ended on exit."""
    from app.core.claude_process import start_of

    program = root / "bin" / "claude"
    program.parent.mkdir(exist_ok=True)
    program.write_text("import sys\nsys.stdin.read()\n")
    running: list[subprocess.Popen[bytes]] = []

    def launch(*args: str, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([sys.executable, str(program), *args], stdin=subprocess.PIPE, cwd=cwd)
        running.append(proc)
        assert start_of(proc.pid)
        return execed(proc)

    try:
        yield launch
    finally:
        for proc in running:
            proc.kill()
            proc.wait()


def execed(proc: subprocess.Popen[Any]) -> subprocess.Popen[Any]:
    """`proc` once its command line can be read. Popen returns when the child's exec has
    closed its close-on-exec files, a moment before the kernel has set the new program's
    arguments: `/proc/<pid>/cmdline` reads empty then, and a judgement by command line made at
    once would not see the program yet."""
    deadline = time.monotonic() + 10
    while os.path.isdir("/proc/self") and time.monotonic() < deadline:
        with contextlib.suppress(OSError), open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
            if fh.read(1):
                break
        time.sleep(0.001)
    return proc


def git(cwd: Path | str, *args: str) -> str:
    """Run real git; raises on failure so a broken fixture cannot pass silently."""
    out = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True, text=True, check=True)
    return out.stdout.strip()


def make_repo(path: Path, *, files: dict[str, str] | None = None) -> Path:
    """A real git repo on branch main with one commit.

    Hundreds of tests make one (four git processes, ~15 ms of CPU): a set of files asked for
    again is made once a worker and copied (~3 ms), new files with new times, as git would
    have left them. Made in place whenever anything could make git's result differ: a folder
    that already holds something, a git setting in HOME, a GIT_* variable naming other
    folders (any other GIT_* variable is part of the template's key)."""
    chosen = files or {"README.md": "hello\n"}
    template = _repo_template(path, chosen)
    if template is not None:
        copy_fresh(template, path)
        return path
    _init_repo(path, chosen)
    return path


def pushed_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    """`tmp_path/proj`, a repository of `files` pushed to its remote `tmp_path/origin.git`."""
    proj = make_repo(tmp_path / "proj", files=files)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(proj, "remote", "add", "origin", str(origin))
    git(proj, "push", "-q", "-u", "origin", "main")
    return proj


def _init_repo(path: Path, files: dict[str, str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")


# Where make_repo keeps its templates: set by the suite's conftest (a folder of the session's
# basetemp); None (outside the suite) makes every repository in place.
REPO_TEMPLATES: Path | None = None
_TEMPLATES: dict[tuple[object, ...], Path] = {}
_ASKED: set[tuple[object, ...]] = set()
# GIT_* variables that point git at other folders than the one a template was made in.
_ELSEWHERE = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
              "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR")


def _repo_template(path: Path, files: dict[str, str]) -> Path | None:
    """The template repository for `files` under the current git environment, made on first
    use; None when the repository must be made in place."""
    if REPO_TEMPLATES is None or os.path.lexists(path) and (not path.is_dir() or any(path.iterdir())):
        return None
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    if any(os.path.lexists(p) for p in (os.path.join(home, ".gitconfig"), os.path.join(xdg, "git"))):
        return None
    if any(name in os.environ for name in _ELSEWHERE):
        return None
    key = (tuple(files.items()), tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GIT_"))))
    if key not in _TEMPLATES:
        if key not in _ASKED:  # many sets of files are asked for once: no template for those
            _ASKED.add(key)
            return None
        made = REPO_TEMPLATES / f"repo-{len(_TEMPLATES)}"
        _init_repo(made, files)
        _TEMPLATES[key] = made
    return _TEMPLATES[key]


def copy_fresh(source: Path, target: Path) -> None:
    """Copy a tree of folders and regular files (a repository git made: no symlinks) with
    every file and folder new: new inodes, and times of now, not the source's. A repository's
    index is refreshed: the stats it keeps are the source's, and git's plumbing (diff-files)
    would call every tracked file changed until a porcelain command refreshed them."""
    target.mkdir(parents=True, exist_ok=True)
    for folder, dirs, names in os.walk(source):
        into = os.path.join(target, os.path.relpath(folder, source))
        for name in dirs:
            os.mkdir(os.path.join(into, name))
        for name in names:
            shutil.copyfile(os.path.join(folder, name), os.path.join(into, name))
            shutil.copymode(os.path.join(folder, name), os.path.join(into, name))
    if (target / ".git" / "index").is_file():
        git(target, "update-index", "-q", "--refresh")


# --- session checkouts and the worktree rule, as the checkout attack rounds drive them ---------

#: A worktree judged by `judge_old_worktree` is made this old, past the period it is judged by.
CHECKOUT_OLD_S = 40 * 86_400
CHECKOUT_PERIOD_S = 30 * 86_400


def claude_worktree(proj: Path, name: str, start: str = "HEAD") -> Path:
    """`git worktree add -b worktree-<name> .claude/worktrees/<name> <start>` in `proj`."""
    path = proj / ".claude" / "worktrees" / name
    git(proj, "worktree", "add", "-q", "-b", f"worktree-{name}", str(path), start)
    return path


def judge_old_worktree(tree: Path, proj: Path) -> tuple[str, str]:
    """The worktree rule's (action, reason) for `tree`, made older than the period, no session in it."""
    from app.core import worktrees

    set_mtime(tree, CHECKOUT_OLD_S)
    verdict = worktrees.judge_worktree(tree, proj, live_cwds=[], period_s=CHECKOUT_PERIOD_S)
    return verdict.action, verdict.reason


def commit_file(where: Path, name: str, text: str, message: str = "work") -> str:
    """`name` written with `text` and committed in `where`; the new HEAD."""
    (where / name).write_text(text)
    git(where, "add", name)
    git(where, "commit", "-q", "-m", message)
    return git(where, "rev-parse", "HEAD")


def session_hook(event: str, project: Path, **fields: Any) -> subprocess.CompletedProcess[bytes]:
    """Hook `event` of session s1 with its cwd in `project`, through `python -P -m hooks`."""
    return run_hook({"hook_event_name": event, "session_id": "s1", "cwd": str(project), **fields}, cwd=project)


def session_checkout(project: Path, name: str) -> Path:
    """The session checkout WorktreeCreate makes for session s1 in `project`."""
    made = session_hook("WorktreeCreate", project, name=name)
    assert made.returncode == 0, made.stderr
    return Path(made.stdout.decode().strip().splitlines()[-1])


def many_files(folder: Path, names: list[str], content: bytes = b"") -> None:
    """Regular files `folder/<name>` holding `content`, made with one open, write and close
    each: a tree of tens of thousands of files costs its kernel work and little more
    (Path.write_bytes also stats the file and asks whether it is a terminal)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    top = os.fspath(folder)
    for name in names:
        fd = os.open(os.path.join(top, name), flags, 0o666)
        try:
            if content:
                os.write(fd, content)
        finally:
            os.close(fd)


def deep_folders(top: Path, depth: int, name: str = "d", *, each: tuple[str, bytes] | None = None,
                 bottom: tuple[str, bytes] | None = None) -> None:
    """`top/<name>/<name>/...` `depth` folders deep below the folder `top`, made fd-relative
    (its deep end may lie past PATH_MAX, where no path names it): the file `each` (name,
    content) in every one of them, the file `bottom` in the deepest."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            if each:
                _write_at(fd, *each)
        if bottom:
            _write_at(fd, *bottom)
    finally:
        os.close(fd)


def _write_at(fd: int, name: str, content: bytes) -> None:
    file = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    try:
        os.write(file, content)
    finally:
        os.close(file)


def set_mtime(path: Path, age_seconds: float) -> None:
    """Make `path` (itself, not what is inside) `age_seconds` old."""
    import time

    t = time.time() - age_seconds
    os.utime(path, (t, t), follow_symlinks=False)


_MODULES_PROBE = """
import io, runpy, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
sys.argv = ["hooks"]
try:
    runpy.run_module("hooks", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
sys.stderr.write("MODULES=" + ",".join(sorted(sys.modules)) + "\\n")
"""


def hook_modules(payload: dict[str, Any], cwd: Path | str) -> set[str]:
    """The modules loaded by one hook event, run as `python -P -m hooks` runs it (runpy),
    in a fresh interpreter that imports nothing else first (not even json)."""
    result = subprocess.run([sys.executable, "-P", "-c", _MODULES_PROBE, json.dumps(payload)],
                            capture_output=True, text=True, cwd=str(cwd), check=True)
    line = [x for x in result.stderr.splitlines() if x.startswith("MODULES=")][-1]
    return set(line[len("MODULES="):].split(","))


def add_record(sid: str, path: Path | str, kind: str = "temp", cwd: Path | str = "/nowhere",
               when: float = 1.0, **extra: object) -> None:
    """Append one output record to a session's records file, in the form the recorder writes
    (`CLAUDETTO_HOME/gc/<session>.json`)."""
    from app.core import paths
    from app.core.state import write_json_atomic

    file = paths.gc_records_file(sid)
    data: dict[str, Any] = json.loads(file.read_text()) if file.exists() else {"session": sid, "records": []}
    data["records"].append({"path": str(path), "kind": kind, "session": sid, "time": when,
                            "cwd": str(cwd), **extra})
    write_json_atomic(file, data)


def recorded(session: str = "s1") -> list[str]:
    """The paths the GC has records of for `session`, sorted."""
    from app.core.gc_records import read_records

    return sorted(r.path for r in read_records(session))


def gc_entries() -> dict[str, tuple[str, str]]:
    """`claudetto gc --json`'s verdicts: {path: (status, reason)}."""
    result = run_cli("gc", "--json")
    assert result.returncode == 0, result.stderr
    return {e["path"]: (e["status"], e["reason"]) for e in json.loads(result.stdout)["entries"]}


def ended_session_checkout(repo: Path, name: str, session: str) -> Path:
    """A session checkout that WorktreeCreate made and its session's SessionEnd (an ending for
    good) then let go of, released: for tests of what comes after (a later release, a
    listing), made in this process by the calls those hooks make, the release as its
    detached job runs it. Four Python processes a checkout fewer: the two hooks, the detached
    release and the SessionEnd's GC sweep (no record to sweep: these sessions made no output).
    The events themselves go through `python -P -m hooks` in tests/hooks/test_checkouts.py;
    here too whenever a Claude runs above this process (the hooks would name it)."""
    from app.core import log
    from app.core.checkouts import create_checkout, names
    from app.core.claude_process import claude_process
    from app.core.release import _child_main
    from app.core.reopen import reopen

    if claude_process(os.getpid()) is not None:
        return _ended_by_hooks(repo, name, session)
    context = dict(log._context)
    try:
        log.bind(str(repo), session)  # as the hook entry binds its log
        made = create_checkout(str(repo), name, session, None)
        if made.kind == "session":
            reopen(made.path, session)
        path = Path(made.path)
        log.bind(str(path), session)
        if names(session, None):
            order = {"paths": [], "session": session, "cwd": str(path), "mark": True,
                     "reason": "prompt_input_exit", "process": None}
            assert _child_main([json.dumps(order)]) == 0
    finally:
        log._context.update(context)
    from app.core import checkouts

    assert (checkouts.registry().get(str(path)) or {}).get("state") == "released", checkouts.registry()
    return path


def _ended_by_hooks(repo: Path, name: str, session: str) -> Path:
    """`ended_session_checkout` through the hooks, as Claude runs them."""
    import time

    from app.core import checkouts

    made = run_hook({"hook_event_name": "WorktreeCreate", "session_id": session, "cwd": str(repo), "name": name},
                    cwd=repo)
    assert made.returncode == 0, made.stderr
    path = Path(made.stdout.decode().strip().splitlines()[-1])
    ended = run_hook({"hook_event_name": "SessionEnd", "session_id": session, "cwd": str(path),
                      "reason": "prompt_input_exit"}, cwd=path)
    assert ended.returncode == 0
    deadline = time.monotonic() + 30
    while (checkouts.registry().get(str(path)) or {}).get("state") != "released":
        assert time.monotonic() < deadline, checkouts.registry()
        time.sleep(0.05)
    return path


@contextmanager
def hung_fuse_mounts() -> Iterator[Callable[[Path], None]]:
    """A function that mounts over a folder a FUSE file system whose server never answers (an
    `sshfs` whose host went away): every look at a name under it waits. Each one is aborted
    (its device closed: every look waiting on it ends) and unmounted at the end. Skips the
    test without root or /dev/fuse."""
    import ctypes

    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("needs root and /dev/fuse")
    libc = ctypes.CDLL(None, use_errno=True)
    made: list[tuple[int, Path]] = []

    def mount(target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        fd = os.open("/dev/fuse", os.O_RDWR)
        options = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
        if libc.mount(b"hung", os.fsencode(target), b"fuse", 0, options) != 0:
            os.close(fd)
            pytest.skip(f"fuse mount refused: {os.strerror(ctypes.get_errno())}")
        made.append((fd, target))

    try:
        yield mount
    finally:
        for fd, target in made:
            os.close(fd)
            subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)
