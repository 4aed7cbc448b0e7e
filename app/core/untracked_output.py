"""May an untracked entry of `git status` (`??`) go with its checkout as build output?

The worktree rule (seed 000) says the files in the folders a tool makes again do not count:
node_modules, .venv, __pycache__, dist, build, target, .next, coverage. A project that never
listed them in `.gitignore` (a `python3.12 -m venv .venv`, which writes no `.gitignore` in it,
an `npm install` in a repository without one) has them untracked rather than ignored, yet
they are the same output, and a release deletes them by name already: kept, such a worktree
would stay `dirty` for ever.

Only a folder git lists as wholly untracked counts (`?? web/node_modules/`: nothing in it is
tracked), or a link with such a name (the link goes, what it points at is never followed).
A new file inside a folder that holds tracked files (`?? build/gen.sh` beside a tracked
`build/Makefile`) is the project's source, not output: it keeps the checkout `dirty`. What
such a folder may hold that nothing makes again is judged as for an ignored one: a secret
(`repository_rules._secret_ignored` lists untracked and ignored files alike), a repository of
its own or another system's working copy (the walk in app/core/unique_work.py).

Four of the names are also names people give their own folders: a Python subpackage
`mypkg/build/`, a Java package `acme/target/`, a `coverage/` module. A tool writes its output
folder at the project's top, or beside the file that sets the build up (`packages/web/dist/`
beside `packages/web/package.json`), and never writes source files at its top; a `build/`
deeper, in a folder holding no such file, with an `__init__.py` or a `.java` file in it, is
a package a session wrote (`new_source`): `dirty`, ignored (Python's usual `.gitignore` names
`build/` and `dist/` anywhere) or untracked. A `static/dist/` of bundles still goes.
"""

from __future__ import annotations

import os


def untracked_output(work_tree: str, entry: str) -> bool:
    """Whether the `??` entry is a wholly untracked regenerable folder (or a link so named),
    or a wholly untracked folder whose every file lies inside regenerable ones."""
    from app.core.repository_rules import REGENERABLE, ignored_ok

    parts = [p for p in entry.rstrip("/").split("/") if p]
    if not parts or any(p in REGENERABLE for p in parts[:-1]):
        return False  # inside a folder git tracks files of: the project's own
    if not entry.endswith("/") and not os.path.islink(os.path.join(work_tree, *parts)):
        return False  # a single new file
    return ignored_ok(work_tree, entry)


def output_folder(work_tree: str, parts: list[str]) -> bool:
    """Whether the folder `parts` (below the work tree; or a link so named) is a regenerable
    folder a tool made, ignored or untracked: named like one, and not a package of the
    project's own source (`new_source`)."""
    from app.core.repository_rules import REGENERABLE

    full = os.path.join(work_tree, *parts)
    if parts[-1] not in REGENERABLE or not (os.path.isdir(full) or os.path.islink(full)):
        return False
    return os.path.islink(full) or not new_source(work_tree, parts)


def new_source(work_tree: str, parts: list[str]) -> bool:
    """Whether a folder with a regenerable name is a package of source a session wrote: one of
    the shared names, below the top, beside no file that sets a build up, holding source files
    directly (`__init__.py`, `.java`, `.go`...; no tool writes them there)."""
    if parts[-1] not in SHARED_NAMES or len(parts) < 2 or _beside_setup(work_tree, parts[:-1]):
        return False
    return _holds_source(os.path.join(work_tree, *parts), SOURCE_DEPTH)


#: How deep a package's own folders are looked into for its source (`acme/target/impl/Aim.java`).
SOURCE_DEPTH = 4


def _holds_source(folder: str, depth: int) -> bool:
    """Source files in `folder`, or in a folder of it that holds only folders down to them (a
    package of subpackages), `depth` levels at most."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except OSError:
        return True  # unsure: keep
    if any(e.name.endswith(SOURCE_SUFFIXES) and not e.name.endswith(".d.ts") for e in entries):
        return True
    folders = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
    only_folders = len(folders) == len(entries)
    return depth > 0 and only_folders and any(_holds_source(f, depth - 1) for f in folders)


#: The regenerable names people also give folders of their own source.
SHARED_NAMES = frozenset({"build", "dist", "target", "coverage"})
#: Files that set a build up, beside which tools write those folders.
SETUP_FILES = frozenset({
    "package.json", "pyproject.toml", "setup.py", "setup.cfg", "Cargo.toml", "pom.xml", "build.gradle",
    "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "go.mod", "Makefile", "makefile", "GNUmakefile",
    "CMakeLists.txt", "meson.build", "composer.json", "Gemfile", "mix.exs", "build.sbt", "build.xml", "deno.json",
    "tsconfig.json", "angular.json", "project.clj", "stack.yaml", "dune-project", "build.zig", "pubspec.yaml",
    "Package.swift", "tox.ini", "noxfile.py"})
SETUP_PREFIXES = ("vite.config.", "webpack.config.", "rollup.config.", "next.config.", "nuxt.config.",
                  "svelte.config.", "astro.config.", "jest.config.", "vitest.config.", "karma.conf.", "tsup.config.")
SETUP_SUFFIXES = (".csproj", ".fsproj", ".vbproj", ".sln", ".cabal", ".gemspec")
#: Files people write and build tools read, never write into their output folder's top.
SOURCE_SUFFIXES = (".py", ".pyx", ".java", ".kt", ".scala", ".groovy", ".go", ".rs", ".c", ".h", ".cc", ".cpp",
                   ".hpp", ".rb", ".php", ".swift", ".cs", ".fs", ".ts", ".tsx", ".jsx", ".vue", ".svelte",
                   ".ex", ".exs", ".erl", ".hs", ".ml", ".clj", ".dart", ".zig", ".nim", ".lua", ".jl", ".r")


def _beside_setup(work_tree: str, parent: list[str]) -> bool:
    """Whether the folder `parent` (parts below the work tree) holds a file that sets a build up."""
    try:
        names = os.listdir(os.path.join(work_tree, *parent))
    except OSError:
        return False
    return any(n in SETUP_FILES or n.startswith(SETUP_PREFIXES) or n.endswith(SETUP_SUFFIXES) for n in names)
