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

from app.core.git import GitFailed, output, run

_WEAKENING = r"^core\.(trustctime|checkstat)$"
_FALSE = ("false", "no", "off", "0")
_BATCH = 512  # files compared per `git cat-file --batch`: the blobs are held in memory


def stat_blind(git_dir: str, work_tree: str) -> str | None:
    """The first tracked file (relative) whose content differs from its staged blob while git
    status calls the checkout clean, when the repository's stat check is weakened; else None.
    Call it only for a checkout git status called clean. Raises GitFailed."""
    if not _weakened(git_dir):
        return None
    from app.core.secret_files import changed_behind_status, present_files

    staged = present_files(output(["ls-files", "-s", "-z"], git_dir=git_dir, work_tree=work_tree), work_tree)
    for start in range(0, len(staged), _BATCH):
        found = changed_behind_status(git_dir, work_tree, staged[start:start + _BATCH])
        if found is not None:
            return found
    return None


def _weakened(git_dir: str) -> bool:
    """Whether git's settings for this repository (the last value of each wins) skip ctime or
    compare only part of the stat."""
    config = run(["config", "-z", "--get-regexp", _WEAKENING], git_dir=git_dir)
    if config.returncode == 1:
        return False  # neither is set
    if not config.ok:
        raise GitFailed(config.error)
    values: dict[str, str] = {}
    for item in config.text.split("\0"):
        key, _, value = item.partition("\n")
        if key:
            values[key.lower()] = value.strip().lower()
    return values.get("core.trustctime", "true") in _FALSE or values.get("core.checkstat", "default") == "minimal"
