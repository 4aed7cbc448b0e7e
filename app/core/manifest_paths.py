"""The folders a project's dependency manifests take code from by absolute path.

To try a fix in a library, a session clones it into a temp folder and points the project at
the clone: `go mod edit -replace example.com/lib=/tmp/tmp.X/lib`, `npm install /tmp/tmp.X/lib`
(`"file:/tmp/tmp.X/lib"` in `package.json`), a Cargo or uv path dependency, `-e /tmp/tmp.X/lib`
in `requirements.txt`. Nothing in the temp folder is unique and nothing runs from it, yet the
project builds from it: removed, the next build fails. So does a project whose containers
bind-mount a folder of it (`volumes: - /tmp/tmp.X/pgdata:/var/lib/postgresql/data` in
`compose.yaml`: the database lives there, and its processes are another user's, unseen by
rule 4) or whose editor runs its interpreter (`python.defaultInterpreterPath`). So the GC reads the manifests at the top
of the user's places (the home's folders, the known projects, the recording sessions' projects)
and keeps an output any absolute path in them leads into (`gc_records.OutsideNames`, `in_use`).
A path that climbs out of the project (`../../tmp/tmp.X/lib`) counts as well, taken from the
project's top: `npm install /tmp/tmp.X/lib` and `cargo add --path /tmp/tmp.X/lib` write the
path relative to the project (`"file:../../tmp/tmp.X/lib"`), never as it was typed.
"""

from __future__ import annotations

import os

#: The files that name where a project's dependencies come from, at the top of a project.
MANIFESTS = ("go.mod", "go.work", "package.json", "Cargo.toml", ".cargo/config.toml", "pyproject.toml",
             "requirements.txt", "requirements-dev.txt", "Pipfile", "Gemfile", "composer.json",
             "pubspec.yaml", "settings.gradle", "settings.gradle.kts", ".npmrc",
             # what runs the project: its containers' bind mounts, its editor's interpreter
             "compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml", ".vscode/settings.json",
             # what compose reads beside them by default: the local run's own bind mounts
             "compose.override.yaml", "compose.override.yml", "docker-compose.override.yml",
             "docker-compose.override.yaml")
#: An absolute path, or one climbing out of the project (`../`), as a word of a manifest: after
#: a space, a quote, `=>`, `file:` or `link:`.
_WORD = r"(?<![\w$.~/])(?:/|(?:\./)?(?:\.\./)+)[^\s:;,'\"=()`|&<>\\{}\[\]]+"


def manifest_paths(place: str) -> list[tuple[str, str]]:
    """(manifest, real path) for each absolute path the dependency manifests at the top of
    `place` name (`MANIFESTS`; a file missing or unreadable names none)."""
    import re  # not at the top: gc_records, which imports this, is read by a hook now and then

    from app.core.repository_rules import small_text

    pattern = re.compile(_WORD)
    found: list[tuple[str, str]] = []
    for file in (os.path.join(place, name) for name in MANIFESTS):
        for match in pattern.finditer(small_text(file)):
            word = os.path.join(place, match.group())  # an absolute path stays itself
            found += [(file, os.path.normpath(word)), (file, os.path.realpath(word))]
    return found
