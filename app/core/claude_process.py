"""The Claude process a hook runs for, so an output record outlives a session id.

Claude gives a running session a new id on `/clear` and `/resume` (current versions rewrite
`sessionId` in `sessions/<pid>.json`), yet the outputs recorded under the old id are still
that process's work. So each record also names the Claude process that made it: its pid and
its start time, a guard against pid reuse, in the form Claude writes as `procStart` (field
22 of /proc/<pid>/stat; without /proc, the text of `ps -o lstart= -p <pid>`).

Claude runs a command hook through a shell, so its process is one to three levels above the
hook. The walk goes up from the hook's parent and takes the first ancestor that has a
sessions file in Claude's config folder (`sessions/<pid>.json`, or the older
`pid-<pid>.json`) whose `procStart`, when it has one, is that process's (a file a crashed
Claude left behind can name a pid that is now some other program). It stops at pid 1 or
after `MAX_LEVELS`; no such ancestor (a hook run by hand, an old Claude that writes no
sessions file) gives None.

Stdlib only and a few small reads: the recorder calls it on the hot path, but only for a
call that made an output. Only a system without /proc runs `ps` (through subprocess).
"""

from __future__ import annotations

import os

from app.core import paths

#: Claude is 1-3 levels above the hook; past this many, the hook was not started by Claude.
MAX_LEVELS = 8
#: How much of a process's environment is read: a few KiB as a rule.
_ENVIRON_MAX = 1 << 20
#: A sessions file is a few hundred bytes: anything bigger is not one, and is not read whole.
_MAX_FILE = 64 * 1024


def _has_proc() -> bool:
    return os.path.exists("/proc/self/stat")


def proc_stat(pid: int) -> tuple[str, int, str] | None:
    """THE parse of /proc/<pid>/stat: (state, parent pid, start time), its fields 3, 4 and
    22; the start in clock ticks, as Claude writes `procStart` on Linux. None when the file
    does not parse; raises OSError when it cannot be read (FileNotFoundError: no such
    process, or no /proc)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        data = fh.read()
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(b")") + 2 :].split()
    if len(rest) <= 19:  # rest[0] is field 3 (state): field 4 is rest[1], field 22 rest[19]
        return None
    try:
        return rest[0].decode(), int(rest[1]), rest[19].decode()
    except (ValueError, UnicodeDecodeError):
        return None


def signalable(pid: int) -> bool:
    """Whether `pid` names a process (this user's or another's)."""
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (OSError, OverflowError, ValueError):
        return False  # ProcessLookupError among them: no such process
    return True


def proc_family(pid: int) -> tuple[int | None, int, bytes]:
    """(parent pid, number of threads, state) of `pid`, fields 4, 20 and 3 of its stat;
    (None, 1, b"") when it cannot be read. One read: a sweep asks it of every process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            rest = fh.read().rpartition(b")")[2].split()  # rest[0] is field 3
        return int(rest[1]), int(rest[17]), rest[0]
    except (OSError, ValueError, IndexError):
        return None, 1, b""


def ancestors(pid: int) -> list[int]:
    """The parent of `pid`, its parent and so on, nearest first, up to pid 1 (not included)."""
    found: list[int] = []
    parent = proc_family(pid)[0]
    while parent is not None and parent > 1 and parent not in found and len(found) < 64:
        found.append(parent)
        parent = proc_family(parent)[0]
    return found


def callers(pid: int) -> list[int]:
    """The ancestors of `pid` (this process) below the Claude it runs for, all of them when
    none: the shells and launchers that asked it to act (`uv run claudetto release PATH`)
    name what they asked for. Claude's own command line names folders it works in as it
    goes, holding nothing open (`claude --add-dir <folder>`), as do the programs above it."""
    found = ancestors(pid)
    claude = claude_process(found[0]) if found else None
    return found[:found.index(claude[0])] if claude is not None and claude[0] in found else found


def uids_of(pid: int, known: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    """The real, effective, saved and file-system uids of `pid` (its `status`, readable by
    every user, also for a process that hides the rest), () when gone; kept in `known`."""
    if pid not in known:
        known[pid] = ()
        try:
            with open(f"/proc/{pid}/status", "rb") as fh:
                line = next((line for line in fh if line.startswith(b"Uid:")), b"")
            known[pid] = tuple(int(v) for v in line.split()[1:])
        except (OSError, ValueError):
            pass
    return known[pid]


def another_users_started_here(pid: int, owners: dict[int, tuple[int, ...]]) -> bool:
    """Whether a process whose folders cannot be read runs as another user (`sudo`, a
    setuid program) yet was started by one of this user's processes (`sudo -s` in a
    worktree) or, its terminal gone, by a parent of this user's login (`sudo server &`:
    `login_uid`; a login's first process, sshd's, has a parent of no login). Its folders are
    unknown: all unsure. One of ours that hides itself (ssh-agent), another user's daemon no
    login of ours started: passed over (counted, they would keep everything for ever)."""
    from app.core.login_uid import login_uid

    me = os.getuid()
    if set(uids_of(pid, owners)) <= {me}:
        return False
    above = ancestors(pid)
    return any(uids_of(p, owners)[:1] == (me,) for p in above) or login_uid(pid) == login_uid(above[0] if above else 1) == me


def _proc_stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time) of `pid`, or None when it is gone."""
    try:
        found = proc_stat(pid)
    except OSError:
        return None
    return (found[1], found[2]) if found is not None else None


def ps_field(field: str, pid: int) -> str | None:
    """One `ps -o FIELD= -p PID` value, its runs of blanks made one space (as
    app/core/sessions.py compares `procStart`); None when ps fails or prints nothing."""
    import subprocess

    try:
        done = subprocess.run(["ps", "-o", f"{field}=", "-p", str(pid)], capture_output=True, text=True,
                              timeout=5, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    value = " ".join(done.stdout.split())
    return value if done.returncode == 0 and value else None


def start_of(pid: int) -> str | None:
    """The start time of `pid` as Claude writes it in `procStart`, or None when it is gone.
    Comparing it with a recorded value tells the same process from a reused pid."""
    if pid <= 0:
        return None
    if _has_proc():
        found = _proc_stat(pid)
        return found[1] if found else None
    return ps_field("lstart", pid)


def _parent_and_start(pid: int) -> tuple[int, str | None] | None:
    if _has_proc():
        return _proc_stat(pid)
    parent = ps_field("ppid", pid)
    if parent is None or not parent.isdigit():
        return None
    return int(parent), None  # the start is asked for only once the right process is found


def _session_file_start(folder: str, pid: int) -> tuple[bool, str | None]:
    """(whether `pid` has a sessions file, the `procStart` it names or None)."""
    for name in (f"{pid}.json", f"pid-{pid}.json"):
        try:  # never blocking on a FIFO put in its place
            fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            raw = os.read(fd, _MAX_FILE)
        except OSError:
            continue  # a folder of that name: no file Claude wrote
        finally:
            os.close(fd)
        from app.core import fastjson

        try:
            data = fastjson.loads(raw)
        except ValueError:
            return True, None  # being rewritten, or not Claude's format: the name is the evidence
        value = data.get("procStart") if isinstance(data, dict) else None
        if isinstance(value, bool) or not isinstance(value, str | int):
            return True, None
        return True, " ".join(str(value).split()) or None
    return False, None


def claude_process(first: int | None = None) -> tuple[int, str | None] | None:
    """(pid, start time) of the nearest ancestor of this process (from `first`, by default
    the parent) that is a running Claude with a sessions file; None when there is none.
    The start is None when it cannot be read."""
    folder = os.path.join(paths.config_dir_str(), "sessions")
    if not os.path.isdir(folder):
        return None
    pid = os.getppid() if first is None else first
    for _ in range(MAX_LEVELS):
        if pid <= 1:
            return None
        found = _parent_and_start(pid)
        has_file, written = _session_file_start(folder, pid)
        if has_file:
            start = found[1] if found and found[1] is not None else start_of(pid)
            if written is None or start is None or written == start:
                return pid, start
        if found is None:
            return None  # gone while we looked, or ps cannot say: no way further up
        pid = found[0]
    return None


#: What marks a Claude that keeps no sessions file on its command line: a teammate of an agent
#: team (tmux panes start `claude --agent-id <name@team> --parent-session-id <lead> ...`).
_FILELESS_MARKS = (b"--agent-id", b"--parent-session-id")
#: ... and a headless run (`claude -p`, `claude --print`, or the print-mode-only formats the
#: Agent SDK starts Claude with), on the command line of a program that is Claude itself
#: (`claude`, or node or bun running Claude's `cli.js`).
_HEADLESS_MARKS = (b"-p", b"--print", b"--output-format", b"--input-format")


def fileless_claude(first: int | None = None) -> tuple[int, str] | None:
    """(pid, start time) of the Claude that keeps no sessions file and runs this hook: a
    teammate (`_FILELESS_MARKS`) or a headless run (`_HEADLESS_MARKS`), one to three levels
    above it (from `first`, by default the parent). None when there is none, or its start
    cannot be read. A program merely called `claude` is not taken for one: the hook run by
    hand, or a test suite run by a Claude's Bash tool, has one above it too."""
    pid = os.getppid() if first is None else first
    for _ in range(3):
        if pid <= 1:
            return None
        args = (cmdline(pid) or b"").split(b"\0")
        if any(a.split(b"=", 1)[0] in _FILELESS_MARKS for a in args[1:]) or _headless(args):
            start = start_of(pid)
            return (pid, start) if start else None
        found = _parent_and_start(pid)
        if found is None:
            return None
        pid = found[0]
    return None


def _headless(args: list[bytes]) -> bool:
    """Whether a command line is Claude's own in print mode: `claude -p`, `node .../cli.js
    --print`, the SDK's `--output-format stream-json`. Only Claude's program counts: `-p`
    means something else to every other one."""
    program = _claude_program(args)
    return program is not None and any(a.split(b"=", 1)[0] in _HEADLESS_MARKS for a in args[program + 1:])


def _claude_program(args: list[bytes]) -> int | None:
    """Where Claude's program is on a command line (`claude`, or node or bun running
    Claude's `cli.js`): 0 or 1, None when it is not Claude's."""
    return next((i for i, arg in enumerate(args[:2]) if os.path.basename(arg) == b"claude"
                 or (os.path.basename(arg) in (b"cli.js", b"cli.mjs") and b"claude" in arg)), None)


def git_run_by(pid: int, runner: int) -> bool:
    """Whether `pid` is a git that process `runner` (claudetto) runs, or a process that git
    started: its environment carries `git.HELPER_MARK` with `runner`'s pid."""
    from app.core.git import HELPER_MARK

    data = read_environ(f"/proc/{pid}/environ")
    return data is not None and f"\0{HELPER_MARK}={runner}\0".encode() in b"\0" + data + b"\0"


def read_environ(environ: str) -> bytes | None:
    """At most `_ENVIRON_MAX` bytes of `/proc/<pid>/environ`, in small reads: a 1 MiB
    buffer for each process (most hold a few KiB) would cost more than all the rest."""
    try:
        fd = os.open(environ, os.O_RDONLY)
    except OSError:
        return None
    parts: list[bytes] = []
    size = 0
    try:
        while size < _ENVIRON_MAX:
            chunk = os.read(fd, min(1 << 16, _ENVIRON_MAX - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(parts)


def cmdline(pid: int) -> bytes | None:
    """The NUL-separated command line of `pid`, or None when it is gone or hidden."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return None


def runs_in_a_pid_namespace(pid: int, start: str) -> bool:
    """Whether the process started at `start` (field 22 of its stat) runs as `pid` in a pid
    namespace of its own: a Claude in a container writes the pid it sees there (1, 7) and
    runs here under another, given by the last of its `NSpid` numbers. One stat read per
    process, asked only of a file with no `pidDomain` whose pid is not that process here."""
    for here in running_pids():
        found = _proc_stat(here)
        if found is None or found[1] != start or here == pid:
            continue
        try:
            with open(f"/proc/{here}/status", "rb") as fh:
                numbers = next((line for line in fh if line.startswith(b"NSpid:")), b"").split()[1:]
        except OSError:
            continue
        if len(numbers) > 1 and numbers[-1] == str(pid).encode():
            return True
    return False


def running_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []  # no /proc: nothing is known to be in use by another process


def config_dirs_of_processes(home: str | None, temp_root: str | None = None) -> set[str]:
    """The config folder of each running process that may be a Claude beside this one, from
    its environment as it began (`/proc/<pid>/environ`): the `CLAUDE_CONFIG_DIR` it was
    started with (a second account's: `CLAUDE_CONFIG_DIR=~/.claude-work claude`), or for
    Claude's own program started under another home (`HOME=~/claude-home claude`), that
    home's `.claude`. Counted when its home is `home`, or when it uses the Claude temp root
    `temp_root` (real path): one uid and one TMPDIR make one `claude-<uid>` folder, where
    its session folders lie beside ours, whatever home it has. A relative value (`.claude-work`
    typed in the home, a `~` no shell expanded) is Claude's from its own folder, as node
    makes a path absolute."""
    found: set[str] = set()
    ours = b"\0HOME=" + os.fsencode(home) + b"\0" if home else None
    for pid in running_pids():
        data = read_environ(f"/proc/{pid}/environ")
        if data is None:
            continue
        if b"CLAUDE_CONFIG_DIR=" not in data and (
                temp_root is None or (ours is not None and ours in b"\0" + data + b"\0")
                or _claude_program((cmdline(pid) or b"").split(b"\0")) is None):
            continue  # no Claude, or one of this home: its `~/.claude` is read anyway
        config = _config_of(pid, data, home, temp_root)
        if config is not None:
            found.add(config)
    return found


def _config_of(pid: int, data: bytes, home: str | None, temp_root: str | None) -> str | None:
    """The config folder of process `pid` by its environment `data`, when it has `home` or
    `temp_root`; None otherwise."""
    env = dict(item.split(b"=", 1) for item in data.split(b"\0") if b"=" in item)
    theirs = env.get(b"HOME", b"")
    config = env.get(b"CLAUDE_CONFIG_DIR") or (theirs + b"/.claude" if theirs.startswith(b"/") else b"")
    if not config or not ((home and os.fsdecode(theirs) == home) or (temp_root and _temp_root(env) == temp_root)):
        return None
    if not config.startswith(b"/"):
        try:
            config = os.path.join(os.fsencode(os.readlink(f"/proc/{pid}/cwd")), config)
        except OSError:
            return None  # gone meanwhile, or another user's
    return os.path.normpath(os.fsdecode(config))


def _temp_root(env: dict[bytes, bytes]) -> str:
    """The Claude temp root a process of environment `env` uses (Linux), as Claude picks it; one
    on a remote mount that does not answer as written (a look there would wait for ever)."""
    from app.core.hung_mounts import real_paths

    root = next((env[k] for k in (b"CLAUDE_CODE_TMPDIR", b"TMPDIR", b"TMP", b"TEMP") if env.get(k)), b"/tmp")
    return real_paths([os.fsdecode(root)])[0]


_kcmp = None  # kcmp(2) through libc, once it is first needed
KCMP_FILES, KCMP_FS = 2, 3


def shares(pid: int, tid: int, kind: int) -> bool | None:
    """Whether thread `tid` shares its process's open files (`kind` 2) or working folder
    (3), by the kernel's `kcmp`: one call, cheaper than reading either. None: unknown."""
    global _kcmp
    if _kcmp is None:
        import ctypes
        import platform

        number = {"x86_64": 312, "aarch64": 272}.get(platform.machine())
        syscall = ctypes.CDLL(None).syscall
        _kcmp = (lambda a, b, k: syscall(number, a, b, k, 0, 0)) if number else (lambda a, b, k: -1)
    found = _kcmp(pid, tid, kind)
    return None if found < 0 else found == 0
