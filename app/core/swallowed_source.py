"""Is an ignored file inside a folder named like build output the project's own source?

The worktree rule (seed 000) lets the files of the folders a tool makes again (node_modules,
.venv, __pycache__, dist, build, target, .next, coverage) go with their checkout, whether git
ignores them or not. A `build`, `dist`, `target` or `coverage` folder holding tracked files is
not one a tool makes: it is part of the project, which an ignore pattern written for build
output names too. (A node_modules with a patched package force-added is still npm's.) Maven's
`target/` in `.gitignore` also ignores the Java package `src/main/java/acme/target/`, whose
classes were added with `git add -f`; a new class a session writes there is ignored, `git
status` calls the checkout clean, and the class would go with it. Such a file is work: the
checkout stays `dirty`.

Only a folder the pattern ignores whole counts so. One that holds a tracked placeholder and
ignores what lies beside it (`build/*` with `!build/.gitkeep`) is not ignored itself: its
ignored files are the build's output and go. A folder holding no tracked file is output
whatever its name's pattern (git lists it whole then: `!! build/`), and so is one whose only
tracked files are placeholders (`.gitkeep` added with `git add -f` under a `build/` pattern).
"""

from __future__ import annotations

#: Pathspecs taken literally: a folder named `[a]` is that folder, not a pattern.
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}
_BATCH = 500  # folders named in one git command line
#: Files tracked only to keep a folder of output in every clone (`git add -f build/.gitkeep`
#: under a `build/` pattern): no source of the project.
PLACEHOLDERS = frozenset({".gitkeep", ".keep", ".gitignore", ".gitattributes", ".placeholder", ".empty"})


def swallowed_source(git_dir: str, work_tree: str, entries: list[str]) -> str | None:
    """The first of `entries` (ignored ones `git status` listed, relative) that lies only in
    regenerable-named folders which an ignore pattern names whole and which hold tracked
    files; None when there is none. Two git processes at most, none without such a folder.
    Raises GitFailed."""
    from app.core.repository_rules import REGENERABLE
    from app.core.untracked_output import SHARED_NAMES

    homes: dict[str, list[str]] = {}
    for entry in entries:
        parts = [p for p in entry.rstrip("/").split("/") if p]
        # node_modules, .venv, __pycache__, .next are a tool's whatever was force-added inside
        tools = any(part in REGENERABLE - SHARED_NAMES for part in parts[:-1])
        homes[entry] = [] if tools else ["/".join(parts[:n + 1]) for n, p in enumerate(parts[:-1]) if p in SHARED_NAMES]
    folders = sorted({folder for found in homes.values() for folder in found})
    if not folders:
        return None
    swallowed = _ignored_whole(git_dir, work_tree, _holding_tracked(git_dir, work_tree, folders))
    source = next((entry for entry, found in homes.items() if found and all(f in swallowed for f in found)), None)
    if source is not None:  # the user's own git status is clean: say what keeps the checkout
        from app.core.log import log

        log(f"unique work: {work_tree} is dirty: {source}: ignored, in a folder named like build output"
            " that holds tracked files (an ignore pattern names the project's own folder)")
    return source


def _holding_tracked(git_dir: str, work_tree: str, folders: list[str]) -> list[str]:
    """Which of `folders` hold a file git tracks, placeholders aside."""
    from app.core.git import output

    held: set[str] = set()
    for start in range(0, len(folders), _BATCH):
        batch = folders[start:start + _BATCH]
        listed = output(["ls-files", "-z", "--", *batch], git_dir=git_dir, work_tree=work_tree, env=_LITERAL)
        wanted = set(batch)
        for name in (n for n in listed.split("\0") if n and n.rpartition("/")[2] not in PLACEHOLDERS):
            parts = name.split("/")
            held.update(prefix for n in range(1, len(parts)) if (prefix := "/".join(parts[:n])) in wanted)
    return sorted(held)


def _ignored_whole(git_dir: str, work_tree: str, folders: list[str]) -> set[str]:
    """Which of `folders` an ignore pattern names itself (or a folder above it), tracked
    files inside or not (`--no-index`: git would otherwise skip a folder holding them)."""
    if not folders:
        return set()
    from app.core.git import GitFailed, check_ignore

    # --no-index: git would otherwise skip a folder holding tracked files
    ignored = check_ignore(folders, no_index=True, git_dir=git_dir, work_tree=work_tree)
    if ignored is None:
        raise GitFailed(f"git check-ignore failed in {work_tree}")
    return set(ignored)
