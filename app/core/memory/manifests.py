"""Build files beyond the first set that `pins` reads: the places where a project's
dependency versions live when its main build file names no version.

A Gradle build that uses a version catalog writes `implementation(libs.okhttp)`: the
version is in `gradle/libs.versions.toml`, and a memory saying "okhttp 3.14.9" is grounded
only there. Pipenv keeps its specs in `Pipfile`, Composer in `composer.json`, setuptools in
`setup.cfg`. Left unread, a pin in such a project could never go stale, whatever the build
says. Each function returns `(name, spec, flavour)` entries for `versions.parse_spec`; a
spec it cannot read is left out, as `pins` does.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

#: (dependency name as written, its spec, the flavour `versions.parse_spec` reads it in)
Entry = tuple[str, str, str]

#: file names read here (a Gradle catalog by its suffix: `libs.versions.toml` and the like)
MANIFEST_FILES = ("Pipfile", "composer.json", "setup.cfg", "pnpm-workspace.yaml")
CATALOG_SUFFIX = ".versions.toml"
#: Composer's platform entries are the runtime and its extensions, as `python` is for pip
_PLATFORM = re.compile(r"^(?:php(?:-64bit|-ipv6|-zts|-debug)?|hhvm|ext-.+|lib-.+|composer(?:-.+)?)$", re.IGNORECASE)


def is_requirements(relative: str) -> bool:
    """A pip requirements file: `requirements*.txt` and the names projects give them beside
    it (`requirements-dev.txt`, `test-requirements.txt`, pip-tools' `requirements.in`,
    `constraints.txt`), and every `.txt`/`.in` file of a `requirements/` folder
    (`requirements/base.txt`, as Django project templates lay them out)."""
    folder, _, name = relative.rpartition("/")
    stem, dot, ext = name.rpartition(".")
    if not dot or ext not in ("txt", "in") or stem.lower() in ("readme", "license", "notes"):
        return False
    return "requirements" in stem or stem.startswith("constraints") or folder.rsplit("/", 1)[-1] == "requirements"


def requirement_includes(relative: str, text: str) -> list[str]:
    """The files a requirements file takes in (`-r dev.txt`, `-c constraints.txt`, pip's
    long forms too), relative to the tree as pip reads them: from the including file's
    folder. Their specs are the build's as much as the including file's."""
    folder = relative.rpartition("/")[0]
    found = []
    for match in re.finditer(r"^[ \t]*(?:-[rc]|--requirement|--constraint)(?:[ \t]*=[ \t]*|[ \t]+|(?=[^\s=-]))(\S+)",
                             text, re.MULTILINE):
        target = posixpath.normpath(posixpath.join(folder, match.group(1)))
        if not target.startswith(("../", "/")) and target != "..":
            found.append(target)
    return found


def is_manifest(name: str) -> bool:
    return name in MANIFEST_FILES or (name.endswith(CATALOG_SUFFIX) and len(name) > len(CATALOG_SUFFIX))


def manifest_entries(name: str, text: str, pep508: Callable[[str], Entry | None]) -> list[Entry]:
    """The dependency specs a manifest states, by its file name (`pep508` reads one PEP 508
    line, as `pins` reads requirements files)."""
    if name.endswith(CATALOG_SUFFIX):
        return _catalog(text)
    if name == "Pipfile":
        return _pipfile(text)
    if name == "composer.json":
        return _composer(text)
    if name == "pnpm-workspace.yaml":
        return _pnpm_catalogs(text)
    return _setup_cfg(text, pep508)


def _toml(text: str) -> dict[str, object]:
    import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):
        return {}


def _table(data: object, key: str) -> dict[str, object]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _catalog_version(value: object, versions: dict[str, object]) -> str | None:
    """A catalog entry's version: a string, `version.ref`, or a rich version (`strictly`,
    `require`); None when it names none that can be read."""
    if isinstance(value, dict):
        if isinstance(value.get("ref"), str):
            value = versions.get(value["ref"])
        else:
            value = value.get("strictly") or value.get("require")
    if isinstance(value, dict):  # a rich version in [versions]
        value = value.get("strictly") or value.get("require")
    return value if isinstance(value, str) else None


def _gradle_flavour(spec: str) -> str:
    return "maven" if spec[:1] in "[(" else "exact"


def _catalog(text: str) -> list[Entry]:
    """A Gradle version catalog: `[versions]` by their key (`ktor = "2.3.7"`: what the
    project calls the dependency), `[libraries]` by artifact and `group:artifact`,
    `[plugins]` by id."""
    data = _toml(text)
    versions = _table(data, "versions")
    entries = []
    for key in versions:
        spec = _catalog_version(versions[key], versions)
        if spec and "." in spec:  # `java = "17"`, `compileSdk = "34"`: a level, not a release
            entries.append((key, spec, _gradle_flavour(spec)))
    for value in _table(data, "libraries").values():
        module, spec = _library(value, versions)
        if module and spec:
            entries += [(module.rsplit(":", 1)[-1], spec, _gradle_flavour(spec)), (module, spec, _gradle_flavour(spec))]
    for value in _table(data, "plugins").values():
        plugin, spec = _library(value, versions, key="id")
        if plugin and spec:
            entries.append((plugin, spec, _gradle_flavour(spec)))
    return list(dict.fromkeys(entries))  # a version key and its library often say the same


def _library(value: object, versions: dict[str, object], key: str = "module") -> tuple[str | None, str | None]:
    """(`group:artifact` or plugin id, version) of one catalog entry, in its string form
    (`"g:a:1.2"`, `"id:1.2"`) or its table form (`module`/`group`+`name`/`id`, `version`,
    `version.ref`)."""
    if isinstance(value, str):
        head, _, spec = value.rpartition(":")
        return (head, spec) if head else (None, None)
    if not isinstance(value, dict):
        return None, None
    name = value.get(key)
    if key == "module" and name is None and isinstance(value.get("group"), str) and isinstance(value.get("name"), str):
        name = f"{value['group']}:{value['name']}"
    version = value.get("version")
    return (name if isinstance(name, str) else None), (version if isinstance(version, str)
                                                        else _catalog_version(version, versions))


def _pipfile(text: str) -> list[Entry]:
    data = _toml(text)
    entries = []
    for section in ("packages", "dev-packages"):
        for dep, value in _table(data, section).items():
            spec = value.get("version") if isinstance(value, dict) else value
            if isinstance(spec, str):
                entries.append((dep, spec, "pep"))
    return entries


def _composer(text: str) -> list[Entry]:
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    entries = []
    for section in ("require", "require-dev"):
        for dep, spec in _table(data, section).items():
            if not isinstance(spec, str) or _PLATFORM.match(dep):
                continue
            # Composer's `~1.2` is `>=1.2,<2.0` (PEP 440's `~=`), and a single `|` is an "or"
            spec = re.sub(r"(?<![~|])\|(?!\|)", "||", re.sub(r"~(?!>)", "~=", spec))
            entries.append((dep, spec, "npm"))
            if "/" in dep:
                entries.append((dep.rsplit("/", 1)[-1], spec, "npm"))
    return entries


def _setup_cfg(text: str, pep508: Callable[[str], Entry | None]) -> list[Entry]:
    """`[options] install_requires` and `[options.extras_require]`, one PEP 508 line each."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    lines = parser.get("options", "install_requires", fallback="").splitlines()
    if parser.has_section("options.extras_require"):
        for _, value in parser.items("options.extras_require"):
            lines += value.splitlines()
    return [entry for line in lines if (entry := pep508(line)) is not None]


def _pnpm_catalogs(text: str) -> list[Entry]:
    """pnpm's catalogs (`catalog:` and the named ones under `catalogs:`): a package.json
    that says `"react": "catalog:"` takes its version from here."""
    entries = []
    top = ""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            top = line.split(":", 1)[0].strip()
            continue
        match = re.fullmatch(r"\s*(['\"]?)(@?[\w./-]+)\1\s*:\s*(['\"]?)([^'\"#]+?)\3\s*(?:#.*)?", line)
        in_catalog = (top == "catalog" and indent <= 4) or (top == "catalogs" and indent > 2)
        if match and in_catalog and match.group(4).strip():
            entries.append((match.group(2), match.group(4).strip(), "npm"))
    return entries


#: `def v = "1.2"`, `val v = "1.2"`, `ext.v = '1.2'`, `v = '1.2'` in an `ext { }` block
_GRADLE_VARIABLE = re.compile(r"^\s*(?:def\s+|val\s+|var\s+|ext\.|set\(\s*)?[\"']?(\w+)[\"']?\s*[=,]\s*"
                              r"[\"']([\w.+-]+)[\"']\s*\)?\s*$", re.MULTILINE)


def gradle_resolved(text: str) -> str:
    """A Gradle build with its version variables put in (`"org.x:y:$yVersion"`, `${yVersion}`),
    as Maven's `${property}` is: a version kept in a variable is still the build's spec. A
    variable not set in the same file stays, and that spec is left out."""
    values = dict(_GRADLE_VARIABLE.findall(text))
    if not values:
        return text
    return re.sub(r"\$\{?(\w+)\}?", lambda m: values.get(m.group(1), m.group(0)), text)


def gradle_map_entries(text: str) -> list[Entry]:
    """Gradle's map notation: `implementation group: 'g', name: 'a', version: '1.2'`."""
    entries = []
    pattern = (r"group\s*[:=]\s*[\"']([\w.-]+)[\"']\s*,\s*name\s*[:=]\s*[\"']([\w.-]+)[\"']\s*,\s*"
               r"version\s*[:=]\s*[\"']([\w.+\[\](),-]+)[\"']")
    for group, artifact, version in re.findall(pattern, text):
        entries += [(artifact, version, _gradle_flavour(version)), (f"{group}:{artifact}", version, _gradle_flavour(version))]
    return entries
