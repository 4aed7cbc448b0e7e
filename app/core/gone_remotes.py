"""The remote-tracking branches that still stand for a copy elsewhere.

A commit counts as pushed when a remote-tracking branch holds it (`refs/remotes/origin/main`).
That branch is only git's memory of what the remote had at the last fetch or push: when the
remote is a local path (`git remote add backup ~/backups/notes.git`, a repository made with
`git init` in a temp folder and pushed there) and that path is gone, the memory is all that is
left, and the repository holding it has the only copy of those commits. So the remotes whose url
is a local path that no longer exists, or no longer holds what they say it had (made anew, reset
past it), are left out of "held by a remote" (`held_remotes`); a network url counts as before (a
drive not mounted: its path is gone, and keeping is the safe side).
"""

from __future__ import annotations

import os


def held_remotes(git_dir: str) -> list[str]:
    """The `git rev-list` arguments naming the remote-tracking branches that still hold their
    commits somewhere: `--remotes`, after an `--exclude` for each remote whose url is a local
    path that is gone. Read from the repository's config (its common dir for a linked worktree)."""
    return [*(f"--exclude={name}/*" for name in _gone(git_dir)), "--remotes"]  # relative to refs/remotes/


def _gone(git_dir: str) -> list[str]:
    from app.core.hung_mounts import reachable  # a dead `sshfs` is as good as gone: never waited on
    from app.core.repository_rules import small_text

    common = small_text(os.path.join(git_dir, "commondir"), 4096).strip()
    common_path = os.path.normpath(os.path.join(git_dir, common)) if common else git_dir
    config = os.path.join(common_path, "config")
    gone: list[str] = []
    name = None
    for line in small_text(config).splitlines():
        text = line.strip()
        if text.startswith("["):  # `[remote "backup"]`; any other section ends the remote's
            head, _, rest = text[1:].partition(" ")
            name = rest.rstrip("]").strip().strip('"') if head.lower() == "remote" and rest else None
            continue
        key, eq, value = text.partition("=")
        if name is None or not eq or key.strip().lower() != "url":
            continue
        url = value.strip().strip('"')
        url = url[len("file://"):] if url.startswith("file://") else _absolute(url, common_path)
        if url.startswith("/") and "*" not in name and (not reachable(url) or not os.path.exists(url)
                                                        or not _holds(git_dir, name, url)):
            gone.append(name)
    return gone


def _absolute(url: str, common: str) -> str:
    """A local path written relative (`git remote add backup ../backup.git`: git keeps it so
    and reads it from the top of the checkout it runs in) made absolute from the main
    checkout's top, where such a push is most often run; one under the home (`~/backup.git`:
    git reads `~` as the home) made absolute; a network url (`host:path`, `scheme://`) as it
    is. Resolved wrong, the path is gone or holds less: the safe side."""
    if url.startswith("~"):
        return os.path.expanduser(url)
    if not url or url.startswith("/") or "://" in url or ":" in url.split("/", 1)[0]:
        return url
    top = os.path.dirname(common) if os.path.basename(common) == ".git" else common
    return os.path.normpath(os.path.join(top, url))


def _holds(git_dir: str, name: str, url: str) -> bool:
    """Whether the local repository at `url` still reaches every commit the remote-tracking
    branches of `name` say it had (made anew with `rm -rf` and `git init --bare`, or reset past
    them since: it does not; git failing: it does not)."""
    from app.core import git
    from app.core.source_emptied import repository_of

    tips = git.run(["for-each-ref", "--format=%(objectname)", f"refs/remotes/{name}/"], git_dir=git_dir)
    if not tips.ok:
        return False
    shas = list(dict.fromkeys(tips.text.split()))
    lost = git.run(["rev-list", "--max-count=1", *shas, "--not", "--all"], git_dir=repository_of(url)) if shas else None
    return lost is None or lost.ok and not lost.text.strip()
