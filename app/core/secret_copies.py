"""A secret-looking file in an output that is only a copy of one still at its source.

A secret-looking file outside every repository keeps an output (`dirty`, app/core/secret_files.py
`first_secret`): a key generated in a temp folder is lost with it. But the usual reason a temp
folder holds an `.env` is that the session copied the project's into it, so a tool run there
finds its settings (`d=$(mktemp -d) && cp .env "$d/" && cd "$d" && ...`). The project still
holds that file, byte for byte; the copy is no loss, and keeping the folder for it kept plain
garbage for good. The recorder stores what a call copied with its outputs (`evidence.source`,
`evidence.sources`), so the sweep can compare: an output goes past this rule only when every
secret-looking file in it is, at the same place below a recorded source (or, for a file source,
under its own name), an identical regular file now. Unsure (a folder that cannot be listed, too
many entries, a file too big to compare, a source changed since) keeps it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.core.gc_records import OutputRecord

#: Entries of an output looked at for its secret-looking files, at most.
MAX_ENTRIES = 20_000
#: A secret-looking file bigger than this is not compared (kept).
MAX_BYTES = 1 << 20


def unique_secret(top: str, parts: list[str], records: list[OutputRecord]) -> str | None:
    """`secret_files.first_secret`, unless every secret-looking file below `top` (outside
    repositories and installed packages) is a copy of a recorded source that still holds it."""
    from app.core.hung_mounts import reachable
    from app.core.paths import inside
    from app.core.secret_files import first_secret

    found = first_secret(top, parts)
    if found is None or not os.path.isdir(top) or os.path.islink(top):
        return found
    outputs = [os.path.realpath(top), *(os.path.realpath(r.path) for r in records)]
    # a source inside the output is no copy elsewhere (`cp "$d/.env" "$d/.env.bak"`), one on a mount
    # that does not answer cannot be asked (a look would wait for ever): never counted
    sources = [s for s in local_sources(records) if reachable(s) and not any(inside(os.path.realpath(s), o) for o in outputs)]
    secrets = _secrets(top) if sources else None
    if secrets is None or not all(_copied(os.path.join(top, rel), rel, sources) for rel in secrets):
        return found
    return None


def local_sources(records: list[OutputRecord]) -> list[str]:
    """The absolute local paths the calls that made or filled the output copied from, but for
    those in the temp folder or a worktrees folder that the hook did not find to be the user's
    (`evidence.user_sources`): another output, which may go in the same sweep (two temp folders
    that copied a secret back and forth would each count the other as its source). The one
    reading of them (`gc_records.lost_source` asks them too)."""
    from app.core import paths

    tmp = paths.user_tmp_str()
    found: list[str] = []
    for record in records:
        evidence = record.evidence if isinstance(record.evidence, dict) else {}
        more, theirs = evidence.get("sources"), evidence.get("user_sources")
        found += [s for s in [evidence.get("source"), *(more if isinstance(more, list) else ())]
                  if isinstance(s, str) and s.startswith("/") and "\0" not in s and (
                      isinstance(theirs, list) and s in theirs
                      or not paths.inside(s, tmp) and "/.claude/worktrees/" not in s)]
    return list(dict.fromkeys(found))


def _secrets(top: str) -> list[str] | None:
    """The secret-looking regular files below `top` (relative paths) that `first_secret` would
    count, or None when unsure: a folder that cannot be listed, a link or special file of a
    secret's name, past MAX_ENTRIES."""
    from app.core.secret_files import _BARE_MARKS, installed, looks_secret

    found: list[str] = []
    pending, budget = [""], MAX_ENTRIES
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(os.path.join(top, rel)) as listing:
                entries = list(listing)
        except OSError:
            return None
        budget -= len(entries)
        names = {e.name for e in entries}
        if budget < 0:
            return None
        if ".git" in names or all(mark in names for mark in _BARE_MARKS):
            continue  # a repository: git's rules judge it
        for entry in entries:
            inner = os.path.join(rel, entry.name) if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                pending += [] if installed([*inner.split("/"), ""]) else [inner]
            elif looks_secret(entry.name) and not installed(inner.split("/")):
                if not entry.is_file(follow_symlinks=False):
                    return None
                found.append(inner)
    return found


def _copied(mine: str, rel: str, sources: list[str]) -> bool:
    """Whether the file `mine` (at `rel` in the output) is identical to the file at its place
    below a recorded source: `source/<rel>` (its content copied into the output's top, `rsync -a
    src/ "$d"/`, or the output a copy of it), `source/<rest>` where the source's name is a part
    of `rel`, or the source itself when it is a file of the same name."""
    parts = rel.split("/")
    for source in sources:
        name = os.path.basename(source.rstrip("/"))
        places = [os.path.join(source, rel)]
        places += [os.path.join(source, *parts[i + 1:]) for i, part in enumerate(parts[:-1]) if part == name]
        places += [source] if name == parts[-1] else []
        if any(_same_file(mine, theirs) for theirs in places):
            return True
    return False


def _same_file(mine: str, theirs: str) -> bool:
    import filecmp
    import stat

    try:
        a, b = os.lstat(mine), os.lstat(theirs)
    except OSError:
        return False
    if not (stat.S_ISREG(a.st_mode) and stat.S_ISREG(b.st_mode)) or a.st_size != b.st_size or a.st_size > MAX_BYTES:
        return False
    try:
        return filecmp.cmp(mine, theirs, shallow=False)
    except OSError:
        return False
