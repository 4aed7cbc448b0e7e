"""THE adapter to git: every git command claudetto runs goes through `run` (or `output`).

Git is the outside tool claudetto trusts least with a user's work, so it is always started
the same careful way: by name from PATH as a subprocess (never a shell, never GitPython),
stdin closed, a timeout, and an environment without the `GIT_*` variables that would point
it at another repository, index or object store (only the config-file ones are kept). It
takes no optional lock (a sweep must not block the user's own git), asks for no password,
and ignores replace refs (a commit is judged for what it is).

The repository is named explicitly, one of two ways:

- `git_dir=` (and `work_tree=`): `--git-dir`/`--work-tree`, so a folder without its own
  `.git` never makes git climb to a parent repository, and a folder moved aside before its
  removal is judged where it now is (app/core/unique_work.py);
- `cwd=`: `git -C <folder>`, for the repository a user works in (its worktrees, branches).

A command that judges or lists runs no hook and no fsmonitor. Only the commands that make a
checkout as Claude's own creation would (`hooks=True`: `git worktree add` and its sparse
checkout) run the repository's hooks and keep its fsmonitor.

Here too: the one parser of `git worktree list` and the one way git forgets a removed
worktree (`forget_worktree`). Hook code imports this module (WorktreeCreate): subprocess
is imported only when git runs.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

GIT_TIMEOUT_S = 120.0

#: The `GIT_*` variables passed on: where git reads its configuration, and where it lives.
GIT_ENV_KEPT = frozenset({"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_EXEC_PATH"})

#: Configuration for every judging command: no hook, no fsmonitor, paths never quoted.
_CAREFUL = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false")


class GitFailed(Exception):
    """Git could not answer (it failed, timed out or is missing): the caller keeps the folder."""


class Done:
    """What one git command did. `returncode` is None when git did not run to its end
    (it could not start, or ran out of time or waited on a FIFO: `timed_out`)."""

    __slots__ = ("returncode", "stdout", "stderr", "timed_out")

    def __init__(self, returncode: int | None, stdout: bytes, stderr: str, timed_out: bool = False) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def started(self) -> bool:
        """Whether git ran at all (it may be missing, or the folder to run in gone)."""
        return self.returncode is not None or self.timed_out

    @property
    def text(self) -> str:
        """stdout as text: bytes that are not UTF-8 kept as surrogate escapes (a file name)."""
        return os.fsdecode(self.stdout)

    @property
    def error(self) -> str:
        """Why it failed, on one line (git's own last words, or how it ended)."""
        message = " ".join(self.stderr.split())[:300]
        if message:
            return message
        if self.timed_out:
            return "git ran out of time"
        return f"git exited with {self.returncode}"


#: set in the environment of every git claudetto runs, to the pid that runs it: the scan of
#: processes (app/core/processes.py) does not take claudetto's own `git status` in a worktree,
#: run by another thread of the same dashboard, for someone using that worktree
HELPER_MARK = "CLAUDETTO_GIT_FOR"


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment for git: without the `GIT_*` variables that would point it elsewhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in GIT_ENV_KEPT}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_NO_REPLACE_OBJECTS="1")
    env[HELPER_MARK] = str(os.getpid())
    if extra:
        env.update(extra)
    return env


def command(args: Iterable[str], *, git_dir: str | None = None, work_tree: str | None = None,
            cwd: str | None = None, hooks: bool = False) -> list[str]:
    """The argument list of one git command (see the module's docstring for the two ways)."""
    line = ["git", "--no-optional-locks"]
    if not hooks:
        line += _CAREFUL
    if git_dir is not None:
        # A work tree is always named (the git dir itself for a command that needs none): a
        # git dir's own `core.worktree` (a submodule's, relative) names a place that is gone
        # once the folder is moved aside, and git refuses to start when it cannot go there.
        line += [f"--git-dir={git_dir}", f"--work-tree={work_tree or git_dir}"]
    elif cwd is not None:
        line += ["-C", cwd]
    return [*line, *args]


def run(args: Iterable[str], *, git_dir: str | None = None, work_tree: str | None = None,
        cwd: str | None = None, hooks: bool = False, input: bytes | None = None,
        timeout: float | None = GIT_TIMEOUT_S, env: Mapping[str, str] | None = None) -> Done:
    """Run one git command and say what it did; never raises (see `Done`)."""
    import subprocess

    line = command(args, git_dir=git_dir, work_tree=work_tree, cwd=cwd, hooks=hooks)
    if git_dir is not None:
        # git goes into the work tree itself, after exec: a child that changed folder before it
        # (subprocess's `cwd`) sat there for a moment as a python process without HELPER_MARK,
        # and a scan of processes at that moment took it for someone using the checkout
        line[1:1] = ["-C", work_tree or git_dir]
    from app.core.git_wait import communicate

    try:
        with subprocess.Popen(line, cwd="/" if git_dir is not None else None, env=environment(env),
                              stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            out, err, stopped = communicate(proc, input, timeout, watch=not hooks)  # stopped on a FIFO
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        return Done(None, b"", f"{type(exc).__name__}: {exc}")
    if stopped is not None:
        return Done(None, b"", "" if stopped == "timeout" else stopped, timed_out=True)
    return Done(proc.returncode, out, os.fsdecode(err))


def check_ignore(paths: list[str], *, no_index: bool = False, git_dir: str | None = None,
                 work_tree: str | None = None, cwd: str | None = None) -> list[str] | None:
    """Which of `paths` (relative to the top) git's ignore rules name, in git's order; None
    when git failed. check-ignore reads its paths as pathspecs and refuses the literal mode, so
    each goes in behind `./`: a folder named `:(top)x` or `:!x` is that folder, not magic that
    points elsewhere (its answer would have been another path's)."""
    if not paths:
        return []
    line = ["check-ignore", *(["--no-index"] if no_index else []), "-z", "--stdin"]
    done = run(line, git_dir=git_dir, work_tree=work_tree, cwd=cwd,
               input=b"".join(b"./" + os.fsencode(path) + b"\0" for path in paths))
    if done.returncode not in (0, 1):  # 1: none is ignored
        return None
    return [name.removeprefix("./") for name in done.text.split("\0") if name]


def output(args: Iterable[str], *, git_dir: str | None = None, work_tree: str | None = None,
           cwd: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The stdout of a judging git command that must succeed; raises GitFailed when it
    does not (failed, timed out, missing)."""
    done = run(args, git_dir=git_dir, work_tree=work_tree, cwd=cwd, env=env)
    if not done.ok:
        raise GitFailed(done.error)
    return done.text


# --- worktrees ------------------------------------------------------------------------------


class GitWorktree:
    """One entry of `git worktree list --porcelain` (a worktree git knows)."""

    __slots__ = ("path", "head", "branch", "locked", "prunable")

    def __init__(self, path: str, head: str | None, branch: str | None, locked: bool, prunable: bool) -> None:
        self.path = path  # real path
        self.head = head
        self.branch = branch  # short name (`worktree-foo`), None when detached
        self.locked = locked
        self.prunable = prunable

    def __repr__(self) -> str:
        return f"GitWorktree({self.path!r}, branch={self.branch!r})"


def worktree_list(repo: str | os.PathLike[str]) -> dict[str, GitWorktree]:
    """The worktrees git lists for `repo` (the main one too, not a bare one), keyed by real
    path; empty when git fails on it. Raises GitFailed when git cannot run at all: nothing
    can be judged then. Read NUL-separated (git 2.36+), so a folder name with a newline is
    still one entry; an older git is asked for the line form."""
    where = os.fspath(repo)
    done = run(["worktree", "list", "--porcelain", "-z"], cwd=where)
    sep = "\0"
    if not done.started:
        raise GitFailed(done.error)
    if not done.ok:
        done, sep = run(["worktree", "list", "--porcelain"], cwd=where), "\n"
        if not done.ok:
            return {}
    return parse_worktree_list(done.text, sep)


def parse_worktree_list(text: str, sep: str = "\0") -> dict[str, GitWorktree]:
    """`git worktree list --porcelain` output (fields ended by `sep`, entries by two)."""
    found: dict[str, GitWorktree] = {}
    for block in text.split(sep + sep):
        fields: dict[str, str] = {}
        for line in block.split(sep):
            if line:
                key, _, value = line.partition(" ")
                fields[key] = value
        if "worktree" not in fields or "bare" in fields:
            continue
        branch = fields.get("branch")
        if branch is not None and branch.startswith("refs/heads/"):
            branch = branch[len("refs/heads/"):]
        real = os.path.realpath(fields["worktree"])
        # Two entries naming one folder: `git worktree remove` would forget the first it finds,
        # not necessarily the one the folder's `.git` names and the rules judged. Neither is
        # taken for the folder's (prunable: the worktree rules keep it, `not_a_worktree`).
        twice = real in found
        found[real] = GitWorktree(real, fields.get("HEAD"), branch, "locked" in fields,
                                  twice or "prunable" in fields)
    return found


def forget_worktree(repo: str | os.PathLike[str], path: str) -> bool:
    """Git forgets the one worktree at `path`, whose folder claudetto just removed (or found
    gone): `git worktree remove` on the missing folder deletes only its administrative entry.

    Never `git worktree prune`: with no expiry it forgets at once every worktree whose folder
    is away at that moment (on a drive not mounted today), with its index (the staged work)
    and the commits only its detached HEAD holds. A folder still (or again) there is left to
    the worktree rules: git would delete it. A locked worktree stays known (git refuses
    without `-f -f`). A failure is logged; True when git forgot it."""
    from app.core.log import log

    where = os.fspath(repo)
    if not os.path.isabs(path) or os.path.lexists(path):
        log(f"git: worktree {path} of {where} not forgotten: its folder is there")
        return False
    done = run(["worktree", "remove", path], cwd=where, timeout=60)
    if not done.ok:
        log(f"git: worktree {path} of {where} not forgotten: {done.error}")
    return done.ok


# --- status -----------------------------------------------------------------------------------


class StatusCounts:
    """What git says of a checkout, in counts: its changed, untracked and ignored entries, and
    the commits of its HEAD on no other branch and no remote (the work a removal would lose).
    `error` says why git could not answer; the counts then mean nothing."""

    __slots__ = ("changed", "untracked", "ignored", "unmerged", "error")

    def __init__(self, changed: int = 0, untracked: int = 0, ignored: int = 0, unmerged: int = 0,
                 error: str = "") -> None:
        self.changed = changed
        self.untracked = untracked
        self.ignored = ignored
        self.unmerged = unmerged
        self.error = error

    def _values(self) -> tuple[int, int, int, int, str]:
        return (self.changed, self.untracked, self.ignored, self.unmerged, self.error)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StatusCounts) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "StatusCounts(changed={}, untracked={}, ignored={}, unmerged={}, error={!r})".format(*self._values())


def status_counts(worktree: str) -> StatusCounts:
    """`git status --ignored` of the checkout `worktree` in counts, and its commits on no other
    branch or remote. Never raises: a folder that is gone or holds no checkout of its own (git
    is never let climb to a parent repository), or a git that fails, gives `error`."""
    from app.core.unique_work import locate

    try:
        repo = locate(os.path.realpath(worktree))
        if repo is None or repo.work_tree is None:
            return StatusCounts(error="no git checkout here")
        status = output(["status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=normal"],
                        git_dir=repo.git_dir, work_tree=repo.work_tree)
        unmerged = commits_on_no_other_branch(repo.git_dir)
    except GitFailed as exc:
        return StatusCounts(error=str(exc) or "git failed")
    changed = untracked = ignored = 0
    for code, _path in status_entries(status):
        if code == "??":
            untracked += 1
        elif code == "!!":
            ignored += 1
        else:
            changed += 1
    return StatusCounts(changed, untracked, ignored, unmerged)


def status_entries(text: str) -> list[tuple[str, str]]:
    """(two-letter code, path) of each entry of `git status --porcelain=v1 -z`; a rename's or
    copy's second field (where it came from) is no entry of its own."""
    entries: list[tuple[str, str]] = []
    fields = iter(text.split("\0"))
    for field in fields:
        if len(field) < 4:
            continue
        code = field[:2]
        entries.append((code, field[3:]))
        if code[0] in "RC":
            next(fields, None)
    return entries


def commits_on_no_other_branch(git_dir: str) -> int:
    """How many commits of HEAD no other local branch and no remote-tracking branch has: 0
    for a HEAD with no commit yet. Raises GitFailed when git cannot say."""
    own = run(["symbolic-ref", "-q", "--short", "HEAD"], git_dir=git_dir)
    if not own.started:
        raise GitFailed(own.error)
    exclude = [f"--exclude={own.text.strip()}"] if own.ok and own.text.strip() else []
    done = run(["rev-list", "--count", "HEAD", "--not", *exclude, "--branches", "--remotes"], git_dir=git_dir)
    if done.ok:
        try:
            return int(done.text.strip() or 0)
        except ValueError:
            raise GitFailed(f"git rev-list said {done.text.strip()!r}") from None
    if own.ok and done.started and not run(["rev-parse", "-q", "--verify", "HEAD"], git_dir=git_dir).ok:
        return 0  # HEAD names a branch not born yet: nothing committed, nothing to lose
    raise GitFailed(done.error)


def common_dir(git_dir: str) -> str:
    """The git dir holding the branches, objects and main config: a linked worktree's
    `commondir` (relative to its own git dir, as git writes it), else `git_dir` itself (also
    when it is no regular file: a FIFO in its place is never waited on)."""
    from app.core.state import open_regular

    try:
        with os.fdopen(open_regular(os.path.join(git_dir, "commondir")), "rb") as fh:
            return os.path.join(git_dir, os.fsdecode(fh.read(4096)).strip())
    except (OSError, ValueError):
        return git_dir
