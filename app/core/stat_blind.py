"""An edit `git status` cannot see because the user weakened git's stat check.

Git takes a tracked file for unchanged when its stat fields match the index. With the user's
`core.trustctime=false` (advised where backup or indexing tools touch ctime) or
`core.checkStat=minimal`, a tool that rewrote a file keeping its size and putting its mtime
back (`touch -r`, an editor or sync tool restoring times) leaves it "clean", and the user's
own next `git status` records the new stat in the index: from then on no git command run
with any setting sees the edit. Only the content tells, so in such a repository every
tracked file is compared with its staged blob (`secret_files.changed_behind_status`), in
batches; a repository with git's default check costs one config question, and none at all
when no config file names either setting (`secret_files._may_set_either`).
"""

from __future__ import annotations

import os

from app.core.git import GitFailed, output, run

_WEAKENING = r"^core\.(trustctime|checkstat)$"
_FALSE = ("false", "no", "off", "")
_TRUE = ("true", "yes", "on")
_BATCH = 512  # files compared per `git cat-file --batch`
# ...and at most this many bytes of them: the blobs of a batch are held in memory at once, and
# a checkout of large tracked files (data, media) would otherwise hold 512 of them
_BATCH_BYTES = 64 << 20


def stat_blind(git_dir: str, work_tree: str) -> str | None:
    """The first tracked file (relative) whose content differs from its staged blob while git
    status calls the checkout clean, when the repository's stat check is weakened; else None.
    Call it only for a checkout git status called clean. Raises GitFailed."""
    if not _weakened(git_dir):
        return None
    from app.core.secret_files import changed_behind_status, present_files

    staged = present_files(output(["ls-files", "-s", "-z"], git_dir=git_dir, work_tree=work_tree), work_tree)
    for batch in batches(work_tree, staged):
        found = changed_behind_status(git_dir, work_tree, batch)
        if found is not None:
            return found
    return None


def batches(work_tree: str, staged: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """`staged` ((blob, name)) cut into runs of at most `_BATCH` files and `_BATCH_BYTES` bytes
    as the files are on disk (a clean file is its blob's size, give or take a filter); a file
    larger than that alone is a run of its own."""
    runs: list[list[tuple[str, str]]] = [[]]
    held = 0
    for item in staged:
        try:
            size = os.lstat(os.path.join(work_tree, item[1])).st_size
        except OSError:
            size = 0  # gone meanwhile: the comparison says so
        if runs[-1] and (len(runs[-1]) >= _BATCH or held + size > _BATCH_BYTES):
            runs.append([])
            held = 0
        runs[-1].append(item)
        held += size
    return [run for run in runs if run]


def _weakened(git_dir: str) -> bool:
    """Whether git's settings for this repository (the last value of each wins) skip ctime or
    compare only part of the stat."""
    config = run(["config", "-z", "--get-regexp", _WEAKENING], git_dir=git_dir)
    if config.returncode == 1:
        return False  # neither is set
    if not config.ok:
        raise GitFailed(config.error)
    values: dict[str, str | None] = {}
    for item in config.text.split("\0"):
        key, has_value, value = item.partition("\n")
        if key:
            values[key.lower()] = value.strip().lower() if has_value else None
    return _git_false(values.get("core.trustctime", "true")) or values.get("core.checkstat", "default") == "minimal"


def _git_false(value: str | None) -> bool:
    """Whether git reads a boolean setting as false. As git does: a key with no `=` is true, an
    empty value (`trustctime =`) false, a number false when it is 0 (`0`, `0x0`, `0k`). A value
    git cannot read makes git itself fail; taken as false, the content is looked at."""
    if value is None or value in _TRUE:
        return False
    if value in _FALSE:
        return True
    try:
        return int(value[:-1] if value[-1:] in ("k", "m", "g") else value, 0) == 0
    except ValueError:
        return True
