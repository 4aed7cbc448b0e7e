"""The per-repository git questions of app/core/unique_work.py (which walks a folder, finds
its repositories and asks these of each): is a checkout dirty, does a repository or a linked
worktree hold a commit no remote has, is a worktree locked. Each takes one `Repository`, runs
git with its explicit `--git-dir` (and `--work-tree`), and raises GitFailed when git cannot
answer: the caller keeps the folder then.

And the other side, for the output GC (app/core/gc_records.py `OutsideNames`): what outside a
folder needs it though nothing in it is unique, read from files without running git, in the
places the user keeps projects (`gc_records.user_places`, `outside_names`): a repository
borrowing its objects (`borrowers`), a path its git config names (`git_urls`), a link into it
(`links_in`), a venv importing from it (`installs_in`), a set-up file naming it
(`setup_files.startup_paths`).
"""

from __future__ import annotations

import os

from app.core import unique_refs as refs
from app.core.git import GitFailed, status_entries
from app.core.git import output as git
from app.core.git import run as git_run
from app.core.gone_remotes import held_remotes
from app.core.main_copy import copy_of_main
from app.core.secret_files import SECRET_PATTERNS
from app.core.secret_files import installed as _installed
from app.core.swallowed_source import swallowed_source
from app.core.untracked_output import output_folder, untracked_output

# Hook code may import this module: no dataclasses, typing or collections at run time.

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

REGENERABLE = frozenset({"node_modules", ".venv", "__pycache__", "dist", "build", "target", ".next", "coverage"})


class Repository:
    """One repository found in a folder: `kind` is `repo` (its own `.git` folder, or a
    `.git` file naming a full git dir: a submodule), `worktree` (a linked worktree) or
    `bare`; `work_tree` is None for a bare one."""

    __slots__ = ("folder", "git_dir", "work_tree", "kind")

    def __init__(self, folder: str, git_dir: str, work_tree: str | None, kind: str) -> None:
        self.folder = folder
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.kind = kind


def read_pointer(path: str, prefix: str = "") -> str:
    """The one path a git pointer file holds (`gitdir: X` in a `.git` file, a plain path in
    `worktrees/<id>/gitdir`)."""
    try:
        with open(path, "rb") as fh:
            text = os.fsdecode(fh.read(65536)).strip()
    except OSError as exc:
        raise GitFailed(f"{path}: {exc.strerror}") from None
    if not text.startswith(prefix) or not text[len(prefix):].strip():
        raise GitFailed(f"{path} is not a git pointer")
    return text[len(prefix):].strip()


# --- a checkout: dirty -----------------------------------------------------------------------


def checkout_dirty(repo: Repository) -> bool:
    """A changed or staged file; an untracked or ignored one outside the regenerable folders; a
    secret-looking one anywhere; or a present file git status does not look at. Raises GitFailed."""
    if repo.work_tree is None:
        return False
    status = _status(repo)  # lists every untracked and ignored entry: none, no secret either
    return (status == "dirty" or (status == "ignored" and _secret_ignored(repo)) or _hidden_from_status(repo)
            or refs.operation_in_progress(repo.git_dir))


#: What git status says, and goes on, when it cannot open a folder (a path deeper than the
#: system allows, a folder it may not read): files in there are in no list it prints.
_BLIND = "could not open directory '"
_UNTRANSLATED = {"LC_ALL": "C"}


def _blind_only_to_output(work_tree: str, said: str) -> bool:
    """Whether every folder git status said it could not open lies in a regenerable folder
    (a recursive copy into itself inside `node_modules`): what it holds does not count. Git
    cuts a message at 4,095 characters, the path's end and its closing quote with it."""
    for line in said.splitlines():
        named = line.partition(_BLIND)[2]
        parts = [p for p in (named.rpartition("'")[0] or named).split("/") if p] if _BLIND in line else None
        if parts is not None and not any(p in REGENERABLE or tagged_cache(os.path.join(work_tree, *parts[:n + 1]))
                                         for n, p in enumerate(parts[:64])):
            return False
    return True


def _status(repo: Repository) -> str:
    """`dirty`; else `ignored` when git status lists ignored or untracked entries (all regenerable)."""
    assert repo.work_tree is not None
    # A submodule's own files are judged with the submodule (a repository the walk found); here
    # only its recorded commit counts (once moved aside, git could not look inside it anyway).
    done = git_run(["status", "--porcelain=v1", "-z", "--ignored=traditional", "--untracked-files=normal",
                    "--ignore-submodules=dirty"], git_dir=repo.git_dir, work_tree=repo.work_tree, env=_UNTRANSLATED)
    if not done.ok or not _blind_only_to_output(repo.work_tree, done.stderr):
        raise GitFailed(done.error)  # a folder git could not open (too deep, unreadable): unsure
    entries = status_entries(done.text)
    for code, entry in entries:  # a wholly untracked regenerable folder is output too
        if not (code == "!!" and (ignored_ok(repo.work_tree, entry) or copy_of_main(repo.git_dir, repo.work_tree, entry))
                or code == "??" and untracked_output(repo.work_tree, entry)):
            return "dirty"
    nested = [entry for code, entry in entries if code == "!!" and "/" in entry.rstrip("/")]  # source named like output?
    return "dirty" if nested and swallowed_source(repo.git_dir, repo.work_tree, nested) else "ignored" if entries else ""


def ignored_ok(work_tree: str, entry: str) -> bool:
    """Whether one git-ignored entry (`!!` of git status) lies inside a regenerable folder.

    A wholly ignored folder that is not itself regenerable is walked: it is fine only when
    every file in it lies inside a regenerable folder. (Secret-looking files inside
    regenerable folders are found by `_secret_ignored`.)"""
    parts = [p for p in entry.rstrip("/").split("/") if p]
    if not parts:
        return False
    if any(p in REGENERABLE for p in parts[:-1]):
        return True
    full = os.path.join(work_tree, *parts)
    if output_folder(work_tree, parts):  # not a package of source so named
        return True
    if any(tagged_cache(os.path.join(work_tree, *parts[:n])) for n in range(1, len(parts) + 1)):
        return True
    if os.path.islink(full) or not os.path.isdir(full):
        return False
    for top, dirs, files in os.walk(full):
        if files:
            return False
        below = os.path.relpath(top, work_tree).split(os.sep)
        dirs[:] = [d for d in dirs if not output_folder(work_tree, [*below, d]) and not tagged_cache(os.path.join(top, d))]
        # os.walk lists symlinks to folders among dirs but never enters them: content.
        if any(os.path.islink(os.path.join(top, d)) for d in dirs):
            return False
    return True


#: The Cache Directory Tagging Specification's signature, the first bytes of a CACHEDIR.TAG
CACHEDIR_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"


def tagged_cache(folder: str) -> bool:
    """Whether `folder` (not a symlink) holds a CACHEDIR.TAG with the standard's signature: the
    tool that made it declared it a cache (pytest's, mypy's and ruff's caches do), as
    regenerable as the folders by name. A secret-looking file inside still counts."""
    try:
        if os.path.islink(folder):
            return False
        fd = os.open(os.path.join(folder, "CACHEDIR.TAG"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return os.read(fd, len(CACHEDIR_SIGNATURE)) == CACHEDIR_SIGNATURE
    except OSError:
        return False
    finally:
        os.close(fd)


def _secret_ignored(repo: Repository) -> bool:
    """A git-ignored or untracked file that looks like a secret, wherever it lies (inside
    regenerable folders too), except inside installed packages. Git walks the folders itself."""
    assert repo.work_tree is not None
    specs = [f":(glob,icase)**/{pattern}" for pattern in SECRET_PATTERNS]
    out = git(["ls-files", "-z", "--others", "--", *specs],  # no excludes: ignored and untracked
              git_dir=repo.git_dir, work_tree=repo.work_tree)
    # an entry ending in `/`: a nested repository git does not look into, judged on its own
    return any(name and not name.endswith("/") and not _installed(name.split("/"))
               and not copy_of_main(repo.git_dir, repo.work_tree, name) for name in out.split("\0"))


def _hidden_from_status(repo: Repository) -> bool:
    """Whether a tracked file marked skip-worktree or assume-unchanged is present: git
    status does not look at it, so an edit there would be invisible and lost. (A sparse
    checkout marks the files it leaves out the same way; those are not on disk.)"""
    assert repo.work_tree is not None
    listing = git(["ls-files", "-v", "-z"], git_dir=repo.git_dir, work_tree=repo.work_tree)
    hidden = (item[2:] for item in listing.split("\0") if item[:1] == "S" or item[:1].islower())
    return any(os.path.lexists(os.path.join(repo.work_tree, name)) for name in hidden)


# --- a repository or a linked worktree: commits no remote has ----------------------------------


def repo_unmerged(repo: Repository) -> bool:
    """A commit of HEAD, of any ref but a tag (a branch, a stash, notes, replace refs,
    filter-branch backups), of ORIG_HEAD, dropped by a reset (a reflog still names it) or
    left behind on a detached HEAD that no remote-tracking branch holds; tags are judged
    apart. A bare repository has no remote-tracking branches: any commit counts (it may be
    the folder others push to, the only copy). Raises GitFailed."""
    out = git(["rev-list", "--max-count=1", "--ignore-missing", *refs.NOT_OURS, "--all", "--not",
               *held_remotes(repo.git_dir)], git_dir=repo.git_dir)  # a gone local remote holds nothing
    return bool(out.strip()) or refs.tag_unmerged(repo.git_dir) or refs.held_only_here(repo.git_dir)


def worktree_unmerged(repo: Repository, *, modules: bool = True, head: bool = True) -> bool:
    """THE worktree rule for a linked worktree: a commit of its HEAD (`head` False: its branch stays) (or of its
    own refs, ORIG_HEAD and reflog, which go with it) on no branch but its own and on no remote. An unborn HEAD
    counts as unmerged. Its submodules' git dirs (`<its git dir>/modules/...`) go with it too
    when git forgets it, even once its folder is gone: a commit only one of them holds counts
    (`modules` False: the caller judges them itself). Raises GitFailed."""
    if head and unmerged_commit("HEAD", _own_branch(repo), git_dir=repo.git_dir) or refs.held_only_here(repo.git_dir):
        return True
    return modules and any(repo_unmerged(Repository(d, d, None, "repo")) for d in refs.module_dirs(repo.git_dir))


def _own_branch(repo: Repository) -> str:
    """The branch HEAD names, read from the HEAD file (one git process fewer per worktree a
    sweep judges); git's answer when it names none (detached, a reftable `.invalid` stub)."""
    try:
        name = read_pointer(os.path.join(repo.git_dir, "HEAD"), "ref: refs/heads/")
    except GitFailed:
        name = ""
    if name and not name.startswith(".") and "\n" not in name:
        return name
    return git(["rev-parse", "--abbrev-ref", "HEAD"], git_dir=repo.git_dir).strip()


def unmerged_commit(rev: str, own_branch: str | None, *, git_dir: str | None = None,
                    cwd: str | None = None) -> bool:
    """Whether `rev` has a commit on no branch but `own_branch` and on no remote (the
    repository named by `git_dir`, or the one `cwd` is in). Raises GitFailed."""
    args = ["rev-list", "--max-count=1", rev, *(refs.OWN_REFS if rev == "HEAD" else ()), "--not"]
    if own_branch and own_branch != "HEAD":
        args.append(f"--exclude={own_branch}")
    args += ["--branches", *(held_remotes(git_dir) if git_dir else ["--remotes"])]
    return bool(git(args, git_dir=git_dir, cwd=cwd).strip())


def locked(repo: Repository) -> bool:
    """Whether a linked worktree is locked (`<its git dir>/locked`)."""
    return repo.kind == "worktree" and os.path.lexists(os.path.join(repo.git_dir, "locked"))


# --- repositories outside an output that need it -------------------------------------------------

#: Folders of the home listed for repositories that borrow objects, at most (a few ms).
_MAX_HOME_FOLDERS = 5_000
#: The real folders directly in a folder (none when it cannot be listed): the same listing
#: app/core/unique_refs.py asks the home's folders with.
folders = refs._subfolders


def borrowers(places: list[str], *, home: bool = True) -> list[tuple[str, str]]:
    """(git dir, object store it borrows from: `objects/info/alternates`) of the repositories in
    and beside `places` and (`home`) in the home to three levels (`~/p`, `~/src/p`,
    `~/work/team/p`), at most `_MAX_HOME_FOLDERS` folders of the home listed: where people keep
    their clones."""
    from app.core import paths

    found: list[tuple[str, str]] = []
    asked = [*places, *(f for parent in dict.fromkeys(map(os.path.dirname, places)) for f in folders(parent))]
    level, budget = folders(paths.home_str()) if home else [], _MAX_HOME_FOLDERS
    asked += level
    for _ in range(2):  # never into a repository, a hidden or a regenerable folder
        level = [f for top in level[:budget] if not os.path.lexists(os.path.join(top, ".git"))
                 and not os.path.basename(top).startswith(".") and os.path.basename(top) not in REGENERABLE
                 for f in folders(top)]
        budget -= len(level)
        asked += level
    for objects in (os.path.join(f, *inner) for f in dict.fromkeys(asked) for inner in ((".git", "objects"), ("objects",))):
        lines = small_text(os.path.join(objects, "info", "alternates")).splitlines()  # a bare one's too
        found += [(os.path.dirname(objects), os.path.realpath(os.path.join(objects, line.strip())))
                  for line in lines if line.strip() and not line.startswith("#")]
    return found


def git_urls(place: str, found: list[tuple[str, str]]) -> None:
    """The local paths a repository's config and `.gitmodules` name: a submodule's url (every
    clone of the project fetches it from there), `core.hooksPath`, an `include.path`, an
    excludes or attributes file, a program a value runs (`core.sshCommand`, a credential helper).
    A remote's url is not counted: what was pushed there is judged by git's rules (a branch on
    none of its remotes), and what was fetched from there the repository holds."""
    import re

    for file in (os.path.join(place, ".git", "config"), os.path.join(place, ".gitmodules")):
        section = ""
        for line in small_text(file).splitlines():
            key, _, value = line.strip().partition("=")
            section = key.split()[0].lower() if key.startswith("[") and key.split() else section
            value = value.strip().strip('"').removeprefix("file://")
            if section in ("[remote", "[remote]", "[branch"):
                continue
            named = [value] if key.strip().lower() in _GIT_PATH_KEYS and value[:1] == "/" else []
            # and what a command of it runs or reads: `core.sshCommand = ssh -i /tmp/x/deploy_key`
            found += [(file, os.path.realpath(p)) for p in dict.fromkeys([*named, *re.findall(PATH_WORD, value)])]


#: An absolute path as a word of a set-up file or a command (`PATH=/tmp/x/bin`, `ssh -i /tmp/x/key`).
PATH_WORD = r"(?<![\w$.~/])/[^\s:;,'\"=()`|&<>\\]+"
#: The keys of a git config whose value is a path git reads or runs from.
_GIT_PATH_KEYS = frozenset({"url", "hookspath", "path", "excludesfile", "attributesfile", "worktree", "template"})


def links_in(folder: str, found: list[tuple[str, str]], budget: list[int]) -> list[str]:
    """Each symlink directly in `folder`: where it leads (through every link on the way) and
    what it says, into `found`. Returns the names of the real folders in it."""
    names: list[str] = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                budget[0] -= 1
                if budget[0] < 0:
                    break
                if entry.is_symlink():
                    said = os.path.normpath(os.path.join(folder, os.readlink(entry.path)))
                    found += [(entry.path, said), (entry.path, os.path.realpath(entry.path))]
                elif entry.is_dir(follow_symlinks=False):
                    names.append(entry.name)
    except OSError:
        pass
    return names


def installs_in(venv: str, found: list[tuple[str, str]]) -> None:
    """The folders a venv imports from elsewhere: the absolute paths its `site-packages` `.pth`
    and `.egg-link` files list and its `__editable__` finders name (`pip install -e`)."""
    import re

    lib = os.path.join(venv, "lib")
    for site in (os.path.join(f, "site-packages") for f in folders(lib) if os.path.basename(f).startswith("python")):
        names = [n for n in _names(site) if n.endswith((".pth", ".egg-link"))
                 or n.startswith("__editable__") and n.endswith(".py")]
        found += paths_named([os.path.join(site, name) for name in names],
                             re.compile(r"""^(/[^\n]*)|['"](/[^'"\n]+)['"]""", re.M))


def _names(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except (OSError, ValueError):
        return []


#: Folders of environments (each a venv); where a place keeps links to and installs of others.
_ENVS = (".virtualenvs", ".pyenv/versions", ".conda/envs", "miniconda3/envs", "anaconda3/envs")
_VENVS = ("/.venv", "/venv", "/env", "/.local", *_ENVS)
_LINKING = (".venv", "venv", "env", "node_modules", ".local", ".local/bin", "bin", ".npm-global/bin",
            ".npm-global/lib/node_modules", *_ENVS)
_MAX_NAMES = 50_000  # entries of one place looked at for links, at most (a few ms)


def outside_names(places: list[str]) -> list[tuple[str, str]]:
    """(file, path it names) for every link, editable install and submodule url in `places`
    and in their `_LINKING` folders (and in each environment of `_ENVS`, each `@scope` of
    `node_modules`), and every path their shell startup files name."""
    from app.core import paths
    from app.core.setup_files import startup_paths

    found: list[tuple[str, str]] = []
    budget, home = [_MAX_NAMES], os.path.realpath(paths.home_str())
    for place in places:
        present = set(links_in(place, found, budget))
        for folder in (os.path.join(place, sub) for sub in _LINKING if sub.partition("/")[0] in present):
            subs = [os.path.join(folder, name) for name in links_in(folder, found, budget)]
            deeper = subs[:1000] if folder.endswith(_ENVS) else [f for f in subs if f.rpartition("/")[2][:1] == "@"]
            for inner in deeper:  # each environment, each `@scope` of node_modules
                links_in(inner, found, budget)
            for venv in [folder, *deeper] if folder.endswith(_VENVS) else ():
                installs_in(venv, found)
        git_urls(place, found)
        startup_paths(place, found, home=place == home)  # app/core/setup_files.py
    return found


def paths_named(files: list[str], pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """(file, path) for each absolute path `pattern` finds (in its one group that matched, or
    whole) in the first MiB of each file that can be read: as written (normalised) and real.
    Both: a venv's `bin/python` named in a git hook is a link to the Python it was made from,
    and only as written does it lie in the venv's folder."""
    found: list[tuple[str, str]] = []
    for file in files:
        for match in pattern.finditer(small_text(file)):
            word = next((g for g in match.groups() if g), match.group())
            found += [(file, os.path.normpath(word)), (file, os.path.realpath(word))]
    return found


def small_text(path: str, limit: int = 1 << 20) -> str:
    """The first `limit` bytes of a regular file (through links), as text without NUL; "" for
    anything else: missing, unreadable, a folder, a FIFO named `.env` (never waited for)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return ""
    try:
        return os.fsdecode(os.read(fd, limit)).replace("\0", "") if stat.S_ISREG(os.fstat(fd).st_mode) else ""
    except OSError:
        return ""
    finally:
        os.close(fd)
