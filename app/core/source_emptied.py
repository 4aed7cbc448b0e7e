"""A copy whose source still exists but no longer holds what the copy holds.

`cp -r ~/notes "$TMPDIR/notes-bak"` before a reorganisation, then `rm -rf ~/notes && mkdir
~/notes` (or `rm -rf ~/notes/*`) a call later: the source path exists, yet the backup holds the
only copy of what was there. An output whose source is gone is kept (`gc_records.lost_source`);
so is one whose source folder lacks a name the copy has had at its top since it was made.
What the session added to the copy later (a `build/` of its own) is no loss: a name is taken
as copied when it was born no later than the newest-born name both still share (the copy was
whole by then), or when they share none. Only the top is compared: a listing of each,
whatever their size. A source that dropped a file deeper down is not seen (docs/gc.md); a copy
kept so stays until its source holds those names again. Where the file system tells no birth
time, a missing name keeps the copy: when unsure, keep.

A clone of a local repository (`git clone ~/srv/tool.git "$TMPDIR/tool"`) is no copy of the
source's top: a bare source has no `.git` and no work tree, and a project that removed a file in
a commit since lacks a name its clone still checks out. What a clone can lose is commits, so its
source counts as whole while its branches still reach every commit the clone's refs name
(`clone_held`).
"""

from __future__ import annotations

import os
import stat


def gone_from_source(copy: str, source: str) -> str | None:
    """The first name at the top of the folder `copy` that was copied (see the module) and
    that the folder `source` no longer has, as a path in the source (or the source itself,
    when it is no folder now); None when there is none, or when the copy is no folder (a
    file's copy: its source's presence is all that is asked)."""
    from app.core.copy_compare import plain_regenerable
    from app.core.created import birth_time
    from app.core.output_shape import SLACK_S  # file systems round times (FAT: 2 s)

    try:
        if not stat.S_ISDIR(os.lstat(copy).st_mode):
            return None
        if not os.path.isdir(source):
            return source
        theirs = set(os.listdir(source))
        mine = sorted(os.listdir(copy))
    except OSError:
        return None  # a copy moved or gone meanwhile: the removal finds it; the rest judge it
    held = clone_held(copy, source)
    if held is not None:
        return None if held else source
    # a build's output the copy made (`dist/`, `node_modules/`) is no name the source lost
    missing = in_no_commit(copy, source, [name for name in mine if name not in theirs
                                          and not plain_regenerable(os.path.join(copy, name))])
    if not missing:
        return None
    shared = [birth_time(os.path.join(copy, name)) for name in mine if name in theirs]
    whole_by = None if not shared or None in shared else max(b for b in shared if b is not None)
    for name in missing:
        born = birth_time(os.path.join(copy, name))
        if whole_by is None or born is None or born <= whole_by + SLACK_S:
            return os.path.join(source, name)
    return None


def clone_held(copy: str, source: str) -> bool | None:
    """None when `copy` is no clone of `source` (no `.git` folder at its top, or neither its
    origin nor its first reflog line names the source: a `cp -r` of a project keeps the
    project's own remote and reflog); else whether the
    repository at `source` still reaches every commit a ref of the clone names (git failing: no)."""
    from app.core import git

    own = os.path.join(copy, ".git")
    if os.path.islink(own) or not os.path.isdir(own):
        return None
    origin = git.run(["config", "--get", "remote.origin.url"], git_dir=own)
    urls = [origin.text.strip() if origin.ok else "", _cloned_from(own)]
    urls = [url[len("file://"):] if url.startswith("file://") else url for url in urls]
    if not any(url.startswith("/") and os.path.realpath(url) == os.path.realpath(source) for url in urls):
        return None
    theirs = repository_of(source)
    refs = git.run(["for-each-ref", "--format=%(objectname)"], git_dir=own)
    if not refs.ok:
        return False
    tips = list(dict.fromkeys(refs.text.split()))
    if not tips:
        return True  # a clone of an empty repository holds no commit
    # reachable from the source's refs: a commit its branch dropped (a reset) goes at its next `git gc`
    lost = git.run(["rev-list", "--max-count=1", *tips, "--not", "--all"], git_dir=theirs)
    return lost.ok and not lost.text.strip()


def in_no_commit(copy: str, source: str, names: list[str]) -> list[str]:
    """The `names` at the top of a copied checkout that its source's repository does not hold: a
    `cp -r ~/proj "$TMPDIR/p"` whose source then removed `old.py` in a commit (`git rm`) still
    holds it, tracked at a commit the source reaches, unchanged, nothing untracked or ignored in
    it: git keeps it in the source's history, and the copy is no only copy. All of `names` when
    the copy is no checkout, its HEAD is no commit the source reaches, or git fails."""
    from app.core import git

    own = os.path.join(copy, ".git")
    if not names or os.path.islink(own) or not os.path.isdir(own):
        return names
    head = git.run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], git_dir=own)
    if not head.ok or not head.text.strip():
        return names
    lost = git.run(["rev-list", "--max-count=1", head.text.strip(), "--not", "--all"], git_dir=repository_of(source))
    if not lost.ok or lost.text.strip():
        return names
    specs = [":(literal)" + name for name in names]
    tracked = git.run(["ls-tree", "-z", "--name-only", "HEAD", "--", *specs], git_dir=own)
    changed = git.run(["status", "--porcelain=v1", "-z", "--ignored=traditional", "--untracked-files=all",
                       "--", *specs], git_dir=own, work_tree=copy)
    if not tracked.ok or not changed.ok:
        return names
    # a rename's second entry has no status letters: each entry counts both ways (more kept, never less)
    touched = {cut.split("/", 1)[0] for entry in changed.text.split("\0") for cut in (entry, entry[3:]) if cut}
    held = set(tracked.text.split("\0")) - touched
    return [name for name in names if name not in held]


def _cloned_from(git_dir: str) -> str:
    """Where git cloned the repository from, as the first line of its HEAD reflog says
    (`clone: from /srv/tool.git`, made absolute by git), or "": the origin's url may have been
    pointed elsewhere since (`git remote set-url origin git@host:team/tool.git` after cloning a
    local mirror for speed) or the remote renamed, and the clone is still the source's."""
    from app.core.repository_rules import small_text

    first = small_text(os.path.join(git_dir, "logs", "HEAD"), 4096).partition("\n")[0]
    said = first.partition("\t")[2]
    return said[len("clone: from "):].strip() if said.startswith("clone: from ") else ""


def repository_of(source: str) -> str:
    """The repository of the folder `source`: its `.git` folder, the one its `.git` file names (a
    linked worktree, a submodule, `--separate-git-dir`), or the folder itself (bare)."""
    own = os.path.join(source, ".git")
    if os.path.isdir(own):
        return own
    try:
        with open(own, encoding="utf-8", errors="replace") as file:
            line = file.read(4096).strip()
    except OSError:
        return source
    named = line[len("gitdir:"):].strip() if line.startswith("gitdir:") else ""
    return os.path.normpath(os.path.join(source, named)) if named else source
