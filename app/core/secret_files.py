"""THE one list of secret-looking file names, and the search for them, and for any work,
where git cannot look. A file matching SECRET_PATTERNS (a private key, an `.env`,
credentials) is never regenerable: a folder holding one is kept (`dirty`). Inside a
repository git finds them (app/core/unique_work.py asks `ls-files`); `first_secret` finds
them in the rest of a folder: a key generated in a temp folder is as lost as an uncommitted
edit once it goes. Inside a checkout, `unseen_changes` finds the work git status is blind
to: a submodule's folder filled by hand, a name differing only in case, what a clean filter
drops. git's own files are read never waiting on a FIFO put in their place.
"""

from __future__ import annotations

import os
import stat

from app.core.state import open_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# Files that hold secrets or local configuration: never regenerable, wherever they lie. A signing
# keystore (`keytool -genkey -keystore build/release.keystore`, a `.p12` in `dist/`) is the only copy
# of a key no build makes again; so is a password database, a PuTTY key, a token file (`.npmrc`,
# `.pypirc`, `.netrc`), a key downloaded once (App Store Connect's `AuthKey_*.p8`, a `service-account*.json`),
# Android's `*.pk8`, Terraform's state, `ssh-keygen -f deploy_key` (or `work_rsa`).
SECRET_PATTERNS = (".env*", "*.pem", "*.key", "id_*", "credentials*", ".credentials*", "*.local.*",
                   "*.keystore", "*.jks", "*.p12", "*.pfx", "*.kdbx", "*.ppk", ".npmrc", ".pypirc", ".netrc",
                   "*.p8", "*.pk8", "service-account*", "*.tfstate*", "*_key", "*_ed25519", "*_ecdsa", "*_rsa", "*_dsa")

# Folders that package managers fill from a registry: a CA bundle (`certifi/cacert.pem`, in
# every virtualenv that has pip) or a test key shipped inside a package is no user's secret.
INSTALLED = frozenset({"site-packages", "dist-packages"})

_BARE_MARKS = ("HEAD", "objects", "refs")


def _shapes() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """SECRET_PATTERNS sorted by shape (`X*`, `*X`, `*X*`, any other), so that a name is
    matched by a few string methods: a walk asks about every name of a tree."""
    prefixes, suffixes, infixes, others = [], [], [], []
    for pattern in SECRET_PATTERNS:
        core = pattern.strip("*")
        if "*" in core or not core:
            others.append(pattern)
        elif pattern == f"{core}*":
            prefixes.append(core)
        elif pattern == f"*{core}":
            suffixes.append(core)
        elif pattern == f"*{core}*":
            infixes.append(core)
        else:
            others.append(pattern)
    return tuple(prefixes), tuple(suffixes), tuple(infixes), tuple(others)


_PREFIXES, _SUFFIXES, _INFIXES, _OTHERS = _shapes()


def looks_secret(name: str) -> bool:
    """Whether a file name matches SECRET_PATTERNS (case-insensitive; `*` is any text)."""
    lowered = name.lower()
    return (lowered.startswith(_PREFIXES) or lowered.endswith(_SUFFIXES)
            or any(infix in lowered for infix in _INFIXES)
            or any(_glob(lowered, pattern) for pattern in _OTHERS))


def _glob(name: str, pattern: str) -> bool:
    parts = pattern.split("*")
    if len(parts) == 1:
        return name == pattern
    first, last = parts[0], parts[-1]
    if not name.startswith(first) or len(name) < len(first) + len(last) or not name.endswith(last):
        return False
    at, end = len(first), len(name) - len(last)
    for middle in parts[1:-1]:
        found = name.find(middle, at, end)
        if found < 0:
            return False
        at = found + len(middle)
    return True


def installed(parts: list[str]) -> bool:
    """Whether a relative path lies inside an installed package (below `site-packages`, or
    below a package folder of `node_modules`)."""
    for i, part in enumerate(parts[:-1]):
        if part in INSTALLED or (part == "node_modules" and i + 2 < len(parts)):
            return True
    return False


def first_secret(top: str, parts: list[str]) -> str | None:
    """THE search for a secret where git cannot look: the first secret-looking regular file at
    or below `top` outside every repository and installed package, as a path relative to what
    `parts` names (`top`'s own place: its name in a checkout, or an output's name; `top` may
    be where it was moved for removal, so its own name says nothing). None when there is none.

    A repository is left to git's rules (a tracked `.env.example` is committed, not lost); no
    symlink is followed (deleting a link loses no content) and no installed package entered,
    so the walk reads names only. A folder it cannot list is named: unsure, keep."""
    try:
        own = os.lstat(top)
    except OSError:
        return None
    if not stat.S_ISDIR(own.st_mode):
        secret = stat.S_ISREG(own.st_mode) and looks_secret(parts[-1]) and not installed(parts)
        return "/".join(parts) if secret else None
    stack = [(top, parts)]
    while stack:
        folder, where = stack.pop()
        try:
            entries = _listed(top, folder)
        except FileNotFoundError:
            continue
        except OSError:
            return "/".join(where)
        names = {e.name for e in entries}
        if ".git" in names or all(m in names for m in _BARE_MARKS):
            continue  # a repository: git's rules judge it
        for entry in entries:
            child = [*where, entry.name]
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not installed([*child, ""]):
                        stack.append((f"{folder}/{entry.name}", child))
                elif looks_secret(entry.name) and entry.is_file(follow_symlinks=False) and not installed(child):
                    return "/".join(child)
            except OSError:
                return "/".join(child)
    return None


def _listed(top: str, folder: str) -> list[os.DirEntry[str]]:
    """The entries of `folder`; one deeper than the system's path limit is opened from `top`
    down a part at a time (an output thousands of folders deep is still judged, not kept
    for ever as unlistable)."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError as exc:
        from app.core.scan_walk import open_long

        fd = open_long(top, folder, exc)
        if fd < 0:
            raise
    try:
        with os.scandir(fd) as it:
            return list(it)
    finally:
        os.close(fd)


# --- work in a checkout that git status does not show ---------------------------------------


def unseen_changes(git_dir: str, work_tree: str) -> str | None:
    """Work in a checkout that git status, however asked, does not show, said in a few words
    for the log (the user's `git status` is clean, and must learn what is kept): anything in
    the folder of a submodule that is not checked out (`filled_submodule_folder`), a file
    whose name differs only in case from a tracked one while the repository says names ignore
    case (`_case_blind`), or what a clean filter keeps out of git (`filtered_away`). None when
    there is none. Raises GitFailed."""
    found = filled_submodule_folder(git_dir, work_tree)
    if found is not None:
        return f"{found}: files in the folder of a submodule that is not checked out"
    if not _may_set_either(git_dir):
        return None
    ignore_case, dropping = _status_settings(git_dir)
    found = _case_blind(git_dir, work_tree) if ignore_case and not _disk_ignores_case(work_tree) else None
    if found is not None:
        return f"{found}: a name git takes for a tracked one (core.ignoreCase)"
    found = filtered_away(git_dir, work_tree, dropping) if dropping else None
    if found is not None:
        return f"{found}: content a clean filter keeps out of git"
    from app.core.stat_blind import stat_blind

    found = stat_blind(git_dir, work_tree)
    return None if found is None else f"{found}: an edit git's stat check misses (core.trustctime, core.checkStat)"


def _disk_ignores_case(work_tree: str) -> bool:
    """Whether the disk itself takes `.GIT` for `.git` (macOS, Windows): then no two names
    differ in case only, and `core.ignoreCase` hides nothing (no second git status)."""
    try:
        return os.path.samestat(os.lstat(os.path.join(work_tree, ".git")), os.lstat(os.path.join(work_tree, ".GIT")))
    except OSError:
        return False


#: The settings that make git status blind: `core.ignoreCase`, a filter driver's commands, and
#: a stat check weakened (app/core/stat_blind.py).
_BLINDING = r"^(filter\..*\.(clean|smudge|process)|core\.(ignorecase|trustctime|checkstat))$"
_OUTSIDE_S = 30.0  # how long the user's and the system's answer is trusted (a sweep asks once)
_outside: dict[tuple[str | None, ...], tuple[float, bool]] = {}
_WORDS = (b"filter", b"ignorecase", b"include", b"trustctime", b"checkstat")


def _may_set_either(git_dir: str) -> bool:
    """Whether a blinding setting may apply to this repository: its own config files name a
    filter or `ignorecase` (or include another file), or the user's or the system's config
    sets one. No git process for the many repositories where none is set."""
    from app.core.git import common_dir

    common = common_dir(git_dir)
    for path in (os.path.join(common, "config"), os.path.join(git_dir, "config.worktree")):
        try:
            with os.fdopen(open_regular(path), "rb") as fh:
                text = fh.read(1 << 20).lower()
        except FileNotFoundError:
            continue
        except OSError:
            return True
        if len(text) >= 1 << 20 or any(word in text for word in _WORDS):
            return True
    return _outside_sets_either()


def _outside_sets_either() -> bool:
    """Whether the user's or the system's git config sets a blinding setting: git asked with
    no repository, again after `_OUTSIDE_S` or once the variables naming those files change."""
    import time

    from app.core.git import run

    key = tuple(os.environ.get(name) for name in ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL",
                                                  "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"))
    asked, answer = _outside.get(key, (float("-inf"), True))
    if time.monotonic() - asked > _OUTSIDE_S:
        # a git dir that cannot exist: git reads only the user's and the system's files
        done = run(["config", "-z", "--get-regexp", _BLINDING], git_dir=os.path.join(os.devnull, "none"), work_tree="/")
        answer = done.returncode != 1  # 1: none set; any failure: unsure
        _outside.clear()
        _outside[key] = (time.monotonic(), answer)
    return answer


def _status_settings(git_dir: str) -> tuple[bool, list[str]]:
    """(`core.ignoreCase` is on, the filter drivers that may drop content: a `clean` command
    with no smudge but `cat`, no long-running `process`), in one git process."""
    from app.core.git import GitFailed, run

    config = run(["config", "-z", "--get-regexp", _BLINDING], git_dir=git_dir)
    if config.returncode not in (0, 1):  # 1: none of them is set
        raise GitFailed(config.error)
    drivers: dict[str, dict[str, str]] = {}
    ignore_case = False
    for item in config.text.split("\0"):
        key, _, value = item.partition("\n")
        if key.lower() == "core.ignorecase":
            ignore_case = value.strip().lower() in ("true", "yes", "on", "1", "")
        elif key.startswith("filter."):
            name, _, var = key[len("filter."):].rpartition(".")
            drivers.setdefault(name, {})[var.lower()] = value.strip()
    return ignore_case, [n for n, d in drivers.items() if "clean" in d and "process" not in d
                         and d.get("smudge", "cat") == "cat"]


def _case_blind(git_dir: str, work_tree: str) -> str | None:
    """The first file git hid as a tracked one of the same name in another case (`Notes.txt`
    beside `notes.txt`), or None: `core.ignoreCase` comes with a repository made or copied on
    a disk that ignores case, and this one does not. Git asked with the setting off lists it
    untracked; only such a name counts (an ignore pattern in another case, which the setting
    also bends, is the user's git status's business: what it ignores was judged already)."""
    from app.core.git import output, status_entries

    out = output(["-c", "core.ignoreCase=false", "status", "--porcelain=v1", "-z", "--untracked-files=all",
                  "--ignore-submodules=all"], git_dir=git_dir, work_tree=work_tree)
    untracked = [entry for code, entry in status_entries(out) if code == "??"]
    if not untracked:
        return None
    tracked = {name.casefold() for name in output(["ls-files", "-z"], git_dir=git_dir, work_tree=work_tree).split("\0")}
    return next((entry for entry in untracked if entry.casefold() in tracked), None)


def filtered_away(git_dir: str, work_tree: str, drivers: list[str]) -> str | None:
    """Whether a tracked file differs from its staged content while git status calls it clean:
    a clean filter (one of `drivers`) took the difference out before git compared. nbstripout
    drops a notebook's outputs, a `sed` filter a local token in a tracked config; after a `git
    add` git sees nothing, and the file alone holds them. A file is fine when it is what a
    checkout writes: its staged bytes, or those through the smudge and line-end conversion
    (`git cat-file --filters`, asked only of a file whose bytes differ). A driver whose name no
    pathspec can spell counts as a difference (when unsure, keep). The file (relative), or
    None. Raises GitFailed."""
    from app.core.git import output

    odd = [name for name in drivers if not name or not all(c.isalnum() or c in "._-" for c in name)]
    if odd:
        return f"(files of the filter {odd[0]!r})"
    listing = output(["ls-files", "-s", "-z", "--", *(f":(attr:filter={name})" for name in drivers)],
                     git_dir=git_dir, work_tree=work_tree)
    return changed_behind_status(git_dir, work_tree, present_files(listing, work_tree))


def changed_behind_status(git_dir: str, work_tree: str, staged: list[tuple[str, str]]) -> str | None:
    """The first of `staged` ((blob, name) of a clean checkout) whose file is not what a checkout
    writes (its blob, or that through the smudge and line-end conversion), or None."""
    from app.core.git import GitFailed, run

    if not staged:
        return None
    done = run(["cat-file", "--batch"], git_dir=git_dir, input="".join(f"{sha}\n" for sha, _ in staged).encode())
    if not done.ok:
        raise GitFailed(done.error)
    for name, file in _differing(done.stdout, work_tree, [name for _, name in staged]):
        # git status was clean: the index is HEAD's, and HEAD:<name> names the path for the filters
        written = run(["cat-file", "--filters", f"HEAD:{name}"], git_dir=git_dir, work_tree=work_tree)
        if not written.ok or written.stdout != file:
            return name
    return None


def present_files(listing: str, work_tree: str) -> list[tuple[str, str]]:
    """(blob, name) of each entry of `git ls-files -s -z` whose file is there, a regular one."""
    found: list[tuple[str, str]] = []
    for item in listing.split("\0"):
        head, _, name = item.partition("\t")
        fields = head.split()
        path = os.path.join(work_tree, name)
        if len(fields) == 3 and fields[2] == "0" and os.path.isfile(path) and not os.path.islink(path):
            found.append((fields[1], name))
    return found


def _differing(batch: bytes, work_tree: str, names: list[str]) -> Iterator[tuple[str, bytes]]:
    """(name, file's bytes) of each of `names` whose file differs from its blob in `batch`
    (`git cat-file --batch` output, one blob per name in order). Raises GitFailed."""
    from app.core.git import GitFailed

    at = 0
    for name in names:
        end = batch.find(b"\n", at)
        header = batch[at:end].split()
        if end < 0 or len(header) != 3 or not header[2].isdigit():
            raise GitFailed(f"git cat-file said {batch[at:at + 100]!r}")  # a blob missing
        size = int(header[2])
        blob, at = batch[end + 1:end + 1 + size], end + 2 + size
        try:
            with open(os.path.join(work_tree, name), "rb") as fh:
                file = fh.read(_FILE_MAX + 1)
        except OSError as exc:
            raise GitFailed(f"{name}: {exc.strerror}") from None
        if file != blob:
            yield name, file


_FILE_MAX = 1 << 30  # a filtered file bigger than this is compared by its first GiB only


#: A submodule's mode in the index (a gitlink, 0o160000), a 32-bit big-endian field of each entry.
_GITLINK_MODE = b"\x00\x00\xe0\x00"
_INDEX_SCAN_MAX = 64 << 20  # past this many bytes of index, git is asked instead


def filled_submodule_folder(git_dir: str, work_tree: str) -> str | None:
    """Whether the folder of a submodule that is not checked out holds anything. Git makes
    such a folder empty (a new worktree, a clone without `--recursive`) and never looks into
    it again: git status is silent about files written there by hand (copied sources, a fix in
    progress), and the walk finds no repository in it. A checked-out one (its own `.git`) is a
    repository judged on its own. The folder (relative), or None. Raises GitFailed."""
    from app.core.git import GitFailed, output

    if not _may_hold_gitlink(git_dir, work_tree):
        return None
    for item in output(["ls-files", "-s", "-z"], git_dir=git_dir, work_tree=work_tree).split("\0"):
        if not item.startswith("160000 "):
            continue
        name = item.partition("\t")[2]
        folder = os.path.join(work_tree, name)
        if os.path.islink(folder) or not os.path.isdir(folder) or os.path.lexists(os.path.join(folder, ".git")):
            continue  # gone, or not a folder (git status names those), or a checkout of its own
        try:
            if os.listdir(folder):
                return name
        except OSError as exc:
            raise GitFailed(f"{folder}: {exc.strerror}") from None
    return None


def _may_hold_gitlink(git_dir: str, work_tree: str) -> bool:
    """Whether the index may record a submodule: a `.gitmodules`, or the gitlink mode among
    the bytes of the index (and of the shared index a split index names). No false no: read
    whole, or else git is asked. Saves a git process for the many repositories without one."""
    if os.path.lexists(os.path.join(work_tree, ".gitmodules")):
        return True
    try:
        names = ["index", *(n for n in os.listdir(git_dir) if n.startswith("sharedindex."))]
    except OSError:
        return True
    for name in names:
        try:
            with os.fdopen(open_regular(os.path.join(git_dir, name)), "rb") as fh:
                data = fh.read(_INDEX_SCAN_MAX + 1)
        except FileNotFoundError:
            continue
        except OSError:
            return True
        if len(data) > _INDEX_SCAN_MAX or _GITLINK_MODE in data:
            return True
    return False
