"""WorktreeCreate's git work: a checkout made as Claude's own creation would make it.

While any WorktreeCreate hook is configured, Claude hands ALL worktree creation to it, so
the checkout must match Claude's own: a name Claude accepts, the folder
`<repo>/.claude/worktrees/<name with / as +>` on branch `worktree-<same>`, branched from the
base Claude would use (`worktree.baseRef`), with `worktree.sparsePaths` applied and the
git-ignored files `.worktreeinclude` lists copied in. app/core/checkouts.py records it.

Git runs through app/core/git.py; `git worktree add` and its sparse checkout run the
repository's hooks (`hooks=True`), as Claude's own `git worktree add` would.
"""

from __future__ import annotations

import os
import re

from app.core import git
from app.core.fd_removal import DIR_FLAGS, open_down
from app.core.log import log

# Claude's own rule for a worktree name (its --worktree flag, EnterWorktree, WorktreeCreate):
# at most 64 characters, `/`-separated segments of these characters, none `.`, `..`, `.git`.
NAME_MAX = 64
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
_FORBIDDEN_SEGMENTS = (".", "..", ".git")

#: `worktree.baseRef` values Claude accepts; "fresh" is its default.
BASE_REFS = ("fresh", "head")


class CheckoutError(Exception):
    """A checkout that cannot be made; WorktreeCreate reports it and fails loud."""


def name_problem(name: object) -> str | None:
    """Why Claude would refuse `name` as a worktree name, or None when it accepts it."""
    if not isinstance(name, str) or not name:
        return "it is empty"
    if len(name) > NAME_MAX:
        return f"it is longer than {NAME_MAX} characters"
    for segment in name.split("/"):
        if not segment:
            return "it has an empty segment"
        if not _SEGMENT.fullmatch(segment):
            return "only letters, digits, '.', '_', '-' and '/' between segments are allowed"
        if segment in _FORBIDDEN_SEGMENTS:
            return f"a segment may not be {segment!r}"
    return None


def folder_name(name: str) -> str:
    """The checkout's folder (and branch suffix) for a worktree name: `/` becomes `+`, as in
    Claude's own creation (`feature/login` -> `feature+login`)."""
    return name.replace("/", "+")


def worktree_settings(project: str) -> tuple[str, list[str]]:
    """(`worktree.baseRef`, `worktree.sparsePaths`) from Claude's layered settings of
    `project`, the last layer that sets a valid value winning; ("fresh", []) by default.
    An unreadable file or an invalid value is logged and skipped."""
    from app.core import settings

    base, sparse = "fresh", list[str]()
    try:
        files = settings.settings_files(project)
    except Exception as exc:  # noqa: BLE001 - a checkout is still made, as Claude's default would be
        log(f"checkouts: Claude's settings files cannot be listed ({type(exc).__name__}: {exc}); defaults used")
        return base, sparse
    for file in files:
        try:
            data = settings.read_settings(file)  # a FIFO in its place must not hang every worktree
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            log(f"checkouts: cannot read {file} ({exc}); its worktree settings are skipped")
            continue
        worktree = data.get("worktree") if isinstance(data, dict) else None
        if isinstance(worktree, dict):
            base = _base_ref(worktree.get("baseRef"), base, file)
            sparse = _sparse_paths(worktree.get("sparsePaths"), sparse, file)
    return base, sparse


def _base_ref(ref: object, before: str, file: object) -> str:
    if ref in BASE_REFS:
        return str(ref)
    if ref is not None:
        log(f"checkouts: {file} worktree.baseRef={ref!r} is neither 'fresh' nor 'head'; skipped")
    return before


def _sparse_paths(given: object, before: list[str], file: object) -> list[str]:
    if isinstance(given, list) and all(isinstance(p, str) and p.strip() for p in given):
        return [p.strip() for p in given]
    if given is not None:
        log(f"checkouts: {file} worktree.sparsePaths is not a list of paths; skipped")
    return before


def default_branch_ref(repo: str) -> str | None:
    """`origin/<default branch>` when that remote-tracking branch exists: the one
    `origin/HEAD` names, else `origin/main` or `origin/master`. Nothing is fetched: a hook
    must not wait on the network."""
    named = git.run(["symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD"], cwd=repo)
    candidates = [named.text.strip()] if named.ok and named.text.strip() else []
    candidates += ["origin/main", "origin/master"]
    for ref in candidates:
        if git.run(["rev-parse", "--verify", "-q", f"refs/remotes/{ref}^{{commit}}"], cwd=repo).ok:
            return ref
    return None


def base_for(repo: str, here: str, base_ref: str) -> str:
    """The start point Claude's creation would use: "fresh" is `origin/<default branch>`
    when it exists, else HEAD; "head" is the local HEAD of the checkout Claude runs in."""
    if base_ref == "fresh":
        found = default_branch_ref(repo)
        if found is not None:
            return found
    head = git.run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], cwd=here)
    return head.text.strip() if head.ok and head.text.strip() else "HEAD"


def _failed(what: str, done: git.Done) -> CheckoutError:
    detail = (done.stderr or done.text).strip().splitlines()
    return CheckoutError(f"claudetto: {what} failed: {detail[-1] if detail else done.returncode}")


def add_worktree(repo: str, here: str, target: str, branch: str) -> None:
    """`git worktree add` as Claude's creation does it: its base, its sparse paths."""
    base_ref, sparse = worktree_settings(here)
    has_branch = git.run(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], cwd=repo).ok
    args = ["worktree", "add"] + (["--no-checkout"] if sparse else [])
    if has_branch:  # a resumed session whose checkout went: its branch holds its work
        args += [target, branch]
    else:
        args += ["--no-track", "-b", branch, target, base_for(repo, here, base_ref)]
    done = git.run(args, cwd=repo, hooks=True, timeout=None)
    if not done.ok:
        raise _failed("git worktree add", done)
    if not sparse:
        return
    for step in (["sparse-checkout", "set", "--cone", "--", *sparse], ["read-tree", "-mu", "HEAD"]):
        done = git.run(step, cwd=target, hooks=True, timeout=None)
        if not done.ok:
            # just made, nothing of anyone's inside: take it back so a retry starts clean
            git.run(["worktree", "remove", "--force", target], cwd=repo)
            if not has_branch:
                git.run(["branch", "-D", branch], cwd=repo)
            raise _failed(f"git {step[0]} (worktree.sparsePaths)", done)


# Every folder on the way is opened relative to the one above and never through a symlink:
# checking a path and then writing to it would leave a window in which a parent is swapped
# for a link, and a tracked symlink in the new checkout must never carry a copy (or even an
# empty folder) into the user's folders outside it.


def copy_included(repo: str, target: str) -> int:
    """Copy into `target` the git-ignored files of `repo` that its `.worktreeinclude`
    (gitignore syntax) lists, as Claude's creation does; existing files are never
    overwritten and nothing leaves `target`. Returns the number copied; failures are logged."""
    include = os.path.join(repo, ".worktreeinclude")
    if not os.path.isfile(include):
        return 0
    listed = git.run(["ls-files", "-z", "--others", "--ignored", f"--exclude-from={include}"], cwd=repo)
    if not listed.ok:
        log(f"checkouts: .worktreeinclude of {repo} cannot be read by git; nothing copied")
        return 0
    candidates = [p for p in listed.text.split("\0") if p]
    if not candidates:
        return 0
    ignored = git.check_ignore(candidates, cwd=repo) or []
    try:
        top = os.open(target, DIR_FLAGS)
    except OSError as exc:
        log(f"checkouts: .worktreeinclude: cannot open the checkout {target} ({exc}); nothing copied")
        return 0
    try:
        return sum(_copy_one(repo, top, rel) for rel in ignored)
    finally:
        os.close(top)


def _copy_one(repo: str, top: int, rel: str) -> bool:
    """One ignored file (or symlink) copied to the same place under the checkout open as
    `top`, never written through a parent that is a symlink; True when copied."""
    *folders, name = rel.split("/")
    if any(part in ("", ".", "..") for part in (*folders, name)):
        log(f"checkouts: .worktreeinclude: {rel!r} is not a plain relative path; skipped")
        return False
    source = os.path.join(repo, rel)
    try:
        parent = open_down(top, folders, make=True)
    except OSError as exc:
        log(f"checkouts: .worktreeinclude: {rel} skipped: a folder on its way in the checkout "
            f"is a symlink or not a folder ({exc.strerror}); nothing is written through it")
        return False
    try:
        if os.path.islink(source):
            os.symlink(os.readlink(source), name, dir_fd=parent)
            return True
        return _copy_file(source, parent, name)
    except FileExistsError:
        return False  # the checkout has its own: never overwritten
    except OSError as exc:
        log(f"checkouts: .worktreeinclude: cannot copy {rel}: {exc}")
        return False
    finally:
        os.close(parent)



def _copy_file(source: str, parent: int, name: str) -> bool:
    """The regular file `source` copied as `name` in the folder `parent`, with its mode and
    times; the name is created anew (O_EXCL, never through a link) and a partial copy is
    taken back. False when `source` is not a regular file (a FIFO is never waited on)."""
    import stat

    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode):
            return False
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        dst = os.open(name, flags, 0o600, dir_fd=parent)
        try:
            _copy_data(src, dst, info.st_size)
            os.chmod(dst, stat.S_IMODE(info.st_mode))
            os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
        except BaseException:
            os.unlink(name, dir_fd=parent)
            raise
        finally:
            os.close(dst)
    finally:
        os.close(src)
    return True


def _copy_data(src: int, dst: int, size: int) -> None:
    """The first `size` bytes of `src` into `dst`, holes kept as holes: a sparse file (a disk
    image, a database's preallocated file) of gigabytes holding a few megabytes must not
    become gigabytes of zeros in every new checkout, filling the disk Claude works on."""
    import errno

    offset = 0
    while offset < size:
        try:
            start = os.lseek(src, offset, os.SEEK_DATA)
            end = min(os.lseek(src, start, os.SEEK_HOLE), size)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # nothing but a hole from here to the end
                break
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                raise
            start, end = offset, size  # a file system that cannot tell holes: all of it is data
        if not _copy_range(src, dst, start, end):
            break
        offset = end
    os.ftruncate(dst, size)


def _copy_range(src: int, dst: int, start: int, end: int) -> bool:
    """Bytes `start` to `end` of `src` to the same place in `dst`; False when `src` ended
    before (cut short while being copied: what was there is copied)."""
    while start < end:
        chunk = os.pread(src, min(end - start, 1 << 20), start)
        if not chunk:
            return False
        view = memoryview(chunk)
        while view:
            written = os.pwrite(dst, view, start)
            view, start = view[written:], start + written
    return True


def _never_checked_out(target: str) -> bool:
    """Whether the making of the worktree `target` was cut short (the hook killed at its timeout
    in a big repository's checkout, in `git worktree add` or in the sparse `read-tree` after
    it): no index was ever written (git writes one for any tree checked out, an empty one
    too). Handed over, every tracked file would read deleted, and a commit there would delete
    them on its branch."""
    from app.core.checkout_identity import admin_id

    admin = admin_id(target)
    return admin is not None and not os.path.lexists(os.path.join(admin, "index"))


def make_checkout(cwd: str, folder: str) -> tuple[str, str, str, bool]:
    """(repository, checkout, branch, made here) of the checkout `folder` of the repository
    that holds `cwd`: made as Claude's creation would, or found again (made here False) when
    git lists it already. Raises CheckoutError for anything that is not safe to make or to
    take as it is."""
    from app.core import paths

    repo = paths.main_repo_root(cwd) if cwd else None
    if repo is None:
        raise CheckoutError(f"claudetto: {cwd!r} is not inside a git repository")
    target = repo / ".claude" / "worktrees" / folder
    branch = f"worktree-{folder}"
    if "\n" in str(target) or "\r" in str(target):
        raise CheckoutError("claudetto: the repository path holds a newline; Claude could not read the checkout's path")
    if any(os.path.islink(p) for p in (repo / ".claude", target.parent, target)):
        raise CheckoutError(f"claudetto: {target} is reached through a symlink; no checkout made")
    made = not (target / ".git").exists()
    if not made:
        if os.path.realpath(target) not in git.worktree_list(repo):
            raise CheckoutError(f"claudetto: {target} has a .git but git does not list it as a worktree; not touched")
        if _never_checked_out(str(target)):
            raise CheckoutError(f"claudetto: {target} is a worktree git began to make and never finished (its creation "
                                f"was cut short): nothing is checked out; `git worktree remove --force --force {target}`,"
                                " then ask again")
    else:
        if os.path.lexists(target):
            raise CheckoutError(f"claudetto: {target} exists and is not a worktree; not touched")
        if os.path.realpath(target) in git.worktree_list(repo):  # its folder deleted by hand (`rm -rf`)
            from app.core.worktree_remove import forget_gone

            if not forget_gone(str(repo), str(target), f"refs/heads/{branch}"):
                raise CheckoutError(f"claudetto: git keeps an entry for {target} holding work (a checkout moved away?): "
                                    "`git worktree repair` in the moved folder, or `git worktree remove` it")
        target.parent.mkdir(parents=True, exist_ok=True)
        add_worktree(str(repo), paths.git_root_str(cwd) or str(repo), str(target), branch)
        copy_included(str(repo), str(target))
    return str(repo), str(target), branch, made
