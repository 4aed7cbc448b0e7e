"""What a memory sweep knows of the checkout: one listing and ONE batched `git grep` per
sweep (never one process per name), through the git adapter (app/core/git.py): an explicit
`--git-dir`, so git never climbs to a parent repository, no hooks, no fsmonitor.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from app.core.log import log

GIT_TIMEOUT_S = 60.0
TOKENS_MAX = 5000
WALK_MAX = 50_000
PRUNED = frozenset({".git", "node_modules", ".venv", "__pycache__", "dist", "build", "target", ".next", "coverage"})


class Tree:
    """What a sweep knows of one checkout: its files (tracked and untracked, not ignored;
    None when unknown) and which probes `git grep` found in their content (None when git
    could not answer: then nothing is claimed vanished)."""

    def __init__(self, root: str, files: list[str] | None, found: str | None) -> None:
        self.root = root
        self.files = files
        self._found = found  # every matched text, lowercased, one per line
        self.suffixes: set[str] = set()  # every trailing run of components of every file and folder
        self.components: set[str] = set()  # every folder name
        self._names = ""
        self.folders_had: set[str] = set()  # first folders gone from the tree that its history holds
        if files is not None:
            for name in files:
                parts = name.split("/")
                for i in range(len(parts)):
                    self.suffixes.add("/".join(parts[i:]))
                    if i < len(parts) - 1:
                        self.suffixes.add("/".join(parts[i:-1]))
                self.components.update(parts[:-1])
            self._names = "\n".join(files).lower()

    @property
    def grepped(self) -> bool:
        return self._found is not None

    def settles(self, probe: str) -> bool:
        """Whether the listing alone shows `probe`: a file or folder at that path, or a file
        or folder name that holds it (case-insensitive). Such a probe is not grepped."""
        return self.has_path(probe) or probe.lower() in self._names

    def mentions(self, probe: str) -> bool:
        """Whether `probe` is in the tree: settled by the listing, or found by git grep in
        the content of some file (case-insensitive)."""
        return self.settles(probe) or (self._found is not None and probe.lower() in self._found)

    def has_path(self, relative: str) -> bool:
        """Whether a file or folder at `relative` exists on disk under the root, or the tree
        holds one whose path ends with it (a path written relative to a sub-project)."""
        relative = relative.rstrip("/")
        return relative in self.suffixes or os.path.lexists(os.path.join(self.root, relative))

    def knows_folder(self, name: str) -> bool:
        """Whether the tree has, or once had, a folder of that name at its root: a path under
        a folder it never had points elsewhere, one under a folder deleted since has vanished."""
        return name in self.components or os.path.isdir(os.path.join(self.root, name)) or name in self.folders_had


#: up to this many names, one `-F -e` per name; past it git's cost per pattern (each is its
#: own matcher, tried on every line) dominates, and the names go as escaped alternations
GREP_FIXED_MAX = 64
_GREP_CHUNK = 32_000  # characters per alternation: one argument stays far below Linux's 128 KiB


def read_tree(root: str, probes: Iterable[str] = (), timeout_s: float = GIT_TIMEOUT_S) -> Tree:
    """The tree at `root`: one `git ls-files`, then ONE batched `git grep` for every probe
    the listing does not settle already (never one process per name). Git gets an explicit
    `--git-dir` (so it never climbs to a parent repository), no hooks, no fsmonitor, no
    optional locks. Without a `.git` the files come from a bounded walk and nothing is
    grepped (so nothing is claimed vanished)."""
    import time

    probes = list(probes)
    if not os.path.lexists(os.path.join(root, ".git")):
        return Tree(root, _walk(root), None)
    deadline = time.monotonic() + timeout_s
    args = ["ls-files", "-z", "-t", "--cached", "--deleted", "--others", "--exclude-standard"]
    out = _git(root, args, "ls-files", deadline, (0,))
    files = on_disk(os.fsdecode(out)) if out is not None else None
    sparse = {e[2:] for e in os.fsdecode(out).split("\0") if e[:2] == "S "} if out is not None else set()
    nested = files is not None and os.path.isfile(os.path.join(root, ".gitmodules"))
    if nested and files is not None:
        files = _with_submodules(root, files, deadline)
    tree = Tree(root, files, None)
    if files is None:
        return tree
    unique: dict[str, str] = {}
    for probe in probes:
        if probe.lower() not in unique and not tree.settles(probe):
            unique[probe.lower()] = probe
    wanted = list(unique.values())[:TOKENS_MAX]
    if not wanted:
        tree._found = ""
    else:
        found = _git(root, grep_args(wanted), "grep", deadline, (0, 1))
        tree._found = os.fsdecode(found).lower() if found is not None else None
        if nested and tree._found is not None:
            _grep_submodules(tree, wanted, deadline)
        if sparse and tree._found is not None:
            _grep_sparse(tree, wanted, sparse, deadline)
        if tree._found is not None:
            _look_on_branches(tree, wanted, deadline)
    _read_folders_had(tree, probes, deadline)
    return tree


def on_disk(listing: str) -> list[str]:
    """The files of a tagged `git ls-files -t` listing, less those deleted from the working
    tree (tag `R`) and not committed yet: a migration or a file removed from disk is gone
    ("exists on disk", "isn't on disk"), though the index still lists it."""
    tagged = [entry.split(" ", 1) for entry in listing.split("\0") if entry[1:2] == " "]
    deleted = {name for tag, name in tagged if tag == "R"}
    return sorted({name for _tag, name in tagged if name not in deleted})


#: at most this many gone first folders are looked up in the history, in one `git log`
HISTORY_FOLDERS_MAX = 200


def _read_folders_had(tree: Tree, probes: Sequence[str], deadline: float) -> None:
    """Which first folders of the probed paths, absent from the tree now, its history once
    held: ONE `git log` of deletions limited to those folders (git prunes the walk by the
    top-level tree, so it stays cheap), only when some path needs it. When git cannot
    answer, the folders read as never had: the paths under them stay silent."""
    firsts = sorted({p.split("/", 1)[0] for p in probes if "/" in p.strip("/")} - {""})
    gone = [f for f in firsts if f not in PRUNED and not tree.knows_folder(f)][:HISTORY_FOLDERS_MAX]
    if not gone or not tree.grepped:
        return
    args = ["log", "--format=", "--name-only", "-z", "--no-renames", "--diff-filter=D", "--",
            *(f":(literal){f}/" for f in gone)]
    out = _git(tree.root, args, "log of deleted folders", deadline, (0,))
    if out is not None:
        deleted = {n.lstrip("\n").split("/", 1)[0] for n in os.fsdecode(out).split("\0") if n.strip()}
        tree.folders_had = deleted & set(gone)


# git stops at a submodule unless told; its files are the tree's too (tracked only: git
# offers no untracked listing or grep across submodules)


def _with_submodules(root: str, files: list[str], deadline: float) -> list[str]:
    inner = _git(root, ["ls-files", "-z", "--cached", "--recurse-submodules"], "ls-files of submodules",
                 deadline, (0,))
    return files if inner is None else sorted(set(files) | {n for n in os.fsdecode(inner).split("\0") if n})


def _grep_submodules(tree: Tree, wanted: list[str], deadline: float) -> None:
    """A second grep, only for a tree with submodules and for the names still unseen; when
    it fails nothing is claimed vanished."""
    assert tree._found is not None
    rest = [p for p in wanted if p.lower() not in tree._found]
    if not rest:
        return
    args = [a if a != "--untracked" else "--recurse-submodules" for a in grep_args(rest)]
    more = _git(tree.root, args, "grep of submodules", deadline, (0, 1))
    tree._found = None if more is None else f"{tree._found}\n{os.fsdecode(more).lower()}"


def _grep_sparse(tree: Tree, wanted: list[str], sparse: set[str], deadline: float) -> None:
    """A second grep, only for a sparse checkout and for the names still unseen: the files it
    leaves out of the working tree (a monorepo's other folders) are the repository's, but
    git grep reads the working tree only. Their staged content is searched, and a match counts
    in those files alone (one deleted from the working tree is gone, as `on_disk` reads it).
    When it fails nothing is claimed vanished."""
    assert tree._found is not None
    rest = [p for p in wanted if p.lower() not in tree._found]
    if not rest:
        return
    args = ["--cached" if a == "--untracked" else "-z" if a == "-h" else a for a in grep_args(rest)]
    more = _git(tree.root, args, "grep of the files a sparse checkout leaves out", deadline, (0, 1))
    if more is None:
        tree._found = None
        return
    rows = (row.split("\0", 1) for row in os.fsdecode(more).split("\n"))
    tree._found += "\n" + "\n".join(row[1] for row in rows if len(row) == 2 and row[0] in sparse).lower()


#: at most this many other local branches, the last committed to first, are asked about names
#: the checkout does not have
BRANCHES_MAX = 10


def _look_on_branches(tree: Tree, wanted: list[str], deadline: float) -> None:
    """The names still unseen, looked for at the tips of the other local branches: a file or
    a class the session made on `feature` is no rot once the user switched the checkout back
    to main (the work goes on there, and the memory is the project's). One `git grep` over
    the tips for mentions, one `git cat-file --batch-check` for paths; only when some name is
    unseen and another branch exists. When git cannot answer, the names stay unseen."""
    assert tree._found is not None
    rest = [p for p in wanted if p.lower() not in tree._found]
    if not rest or not _may_have_branches(tree.root):
        return
    refs = _git(tree.root, ["for-each-ref", "--sort=-committerdate", f"--count={BRANCHES_MAX + 1}",
                            "--format=%(HEAD)%(refname)", "refs/heads/"], "list of branches", deadline, (0,))
    tips = [line[1:] for line in os.fsdecode(refs or b"").splitlines() if line[:1] == " "][:BRANCHES_MAX]
    if not tips:
        return
    found = _git(tree.root, [a for a in grep_args(rest) if a != "--untracked"] + tips, "grep of other branches",
                 deadline, (0, 1))
    if found is not None:
        tree._found += "\n" + os.fsdecode(found).lower()
    paths = [p.strip("/") for p in rest if "/" in p.strip("/") and "\n" not in p]
    if paths:
        tree.suffixes.update(_on_branches(tree.root, paths, tips, deadline))


def _on_branches(root: str, paths: list[str], tips: list[str], deadline: float) -> list[str]:
    """The `paths` (relative to the root) that a file or folder holds at one of `tips`."""
    asked = "".join(f"{tip}:{path}\n" for path in paths for tip in tips).encode()
    held = _git(root, ["cat-file", "--batch-check=%(objecttype)"], "paths on other branches", deadline, (0,),
                stdin=asked)
    kinds = os.fsdecode(held or b"").splitlines()
    if len(kinds) != len(paths) * len(tips):
        return []
    return [path for n, path in enumerate(paths)
            if any(not kind.endswith("missing") for kind in kinds[n * len(tips):(n + 1) * len(tips)])]


def _may_have_branches(root: str) -> bool:
    """Whether the repository may have a local branch besides one: no git process for the
    many with a single branch (a loose ref and no packed one); unsure is yes."""
    dot_git = os.path.join(root, ".git")
    if not os.path.isdir(dot_git):
        return True  # a worktree: its refs are in the main repository's folder
    try:
        loose = sum(len(names) for _here, _dirs, names in os.walk(os.path.join(dot_git, "refs", "heads")))
        with open(os.path.join(dot_git, "packed-refs"), "rb") as fh:
            packed = fh.read(1 << 20).count(b" refs/heads/")
    except FileNotFoundError:
        packed = 0
    except OSError:
        return True
    return loose + packed > 1


def grep_args(probes: Sequence[str]) -> list[str]:
    """The arguments of the one `git grep` of a sweep: every probe a fixed string (escaped
    when batched as alternations), case-insensitive, tracked and untracked files, text only,
    each match printed alone (`-o -h`) so the caller sees which probes matched."""
    args = ["grep", "-I", "-i", "-o", "-h", "--untracked", "--no-color"]
    if len(probes) <= GREP_FIXED_MAX:
        args.append("-F")
        for probe in probes:
            args += ["-e", probe]
        return args
    args.append("-E")
    chunk: list[str] = []
    size = 0
    for probe in probes:
        escaped = re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", probe)
        if chunk and size + len(escaped) + 1 > _GREP_CHUNK:
            args += ["-e", "|".join(chunk)]
            chunk, size = [], 0
        chunk.append(escaped)
        size += len(escaped) + 1
    args += ["-e", "|".join(chunk)]
    return args


def _git(root: str, args: list[str], what: str, deadline: float, ok: Sequence[int],
         stdin: bytes | None = None) -> bytes | None:
    """The stdout of one git command on the checkout at `root`, or None (logged) when it
    failed or ran out of time (`deadline`, a time.monotonic() value)."""
    import time

    from app.core import git

    done = git.run(args, git_dir=os.path.join(root, ".git"), work_tree=root, input=stdin,
                   timeout=max(deadline - time.monotonic(), 0.01), env={"LC_ALL": "C"})
    if done.timed_out:
        log(f"memory: git {what} ran out of time; the checks that need it stay silent")
        return None
    if done.returncode not in ok:
        log(f"memory: git {what} in {root} failed ({done.returncode}): {done.error}")
        return None
    return done.stdout


def _walk(root: str) -> list[str] | None:
    """The files under `root` (not in .git or regenerable folders), relative; None past WALK_MAX."""
    files: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in PRUNED)
        relative = os.path.relpath(folder, root)
        for name in names:
            files.append(name if relative == "." else f"{relative}/{name}")
        if len(files) > WALK_MAX:
            return None
    return sorted(files)


def read_text(path: str, limit: int) -> str | None:
    """A file's text (undecodable bytes replaced), never blocking on a FIFO; None when it
    cannot be read or is longer than `limit`."""
    from app.core.state import read_regular

    try:
        return read_regular(path, limit=limit).decode("utf-8", "replace")
    except OSError:
        return None
