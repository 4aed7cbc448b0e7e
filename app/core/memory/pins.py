"""Build files and the dependency specs they state (`Pin`s), and the version claims of memory
lines checked against them: "jhelm 1.3.1" where every parseable build-file spec of jhelm
excludes it (`stale_version_pins`). Release lines (`4.1.x`), ranges that admit the build's
version, examples and history stay silent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.core.memory.facts import CODE_SPAN, FactLine, line_marks
from app.core.memory.manifests import (
    gradle_map_entries,
    gradle_resolved,
    is_manifest,
    is_requirements,
    manifest_entries,
    requirement_includes,
)
from app.core.memory.services import may_mean_the_service
from app.core.memory.tree import PRUNED, Tree, read_text
from app.core.memory.versions import (
    WIDTH,
    Interval,
    Spec,
    caret,
    compare,
    compatible,
    disjoint,
    exact,
    parse_spec,
    release_line,
    tilde,
)

BUILD_FILES_MAX = 300
BUILD_FILE_BYTES_MAX = 2 * 1024 * 1024

#: build files read for version specs, by file name (`requirements*.txt` by pattern)
BUILD_FILES = ("pyproject.toml", "package.json", "Cargo.toml", "go.mod", "pom.xml", "build.gradle",
               "build.gradle.kts", "Gemfile.lock", "Gemfile")


@dataclass(frozen=True)
class Pin:
    """One dependency spec of one build file."""

    file: str  # relative to the root
    name: str  # as the build file writes it
    text: str  # the spec as written
    versions: Spec


def dependency_key(name: str) -> str:
    """A dependency name as compared: lowercase, runs of `-`, `_`, `.` as one `-` (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name.strip().lower())


def is_build_file(relative: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    if any(part in PRUNED or part == "vendor" for part in relative.split("/")[:-1]):
        return False
    return name in BUILD_FILES or is_requirements(relative) or is_manifest(name)


def build_pins(relative: str, text: str) -> list[Pin]:
    """Every dependency spec a build file states, with the ones that cannot be read left out."""
    name = relative.rsplit("/", 1)[-1]
    if name == "pyproject.toml":
        entries = _pyproject(text)
    elif name == "package.json":
        entries = _package_json(text)
    elif name == "Cargo.toml":
        entries = _cargo(text)
    elif name == "go.mod":
        entries = _go_mod(text)
    elif name == "pom.xml":
        entries = _pom(text)
    elif name.startswith("build.gradle"):
        entries = _gradle(text)
    elif name == "Gemfile.lock":
        entries = [(m.group(1), m.group(2), "exact")
                   for m in re.finditer(r"^    ([A-Za-z0-9_.-]+) \(([^)\s,]+)\)\s*$", text, re.MULTILINE)]
    elif name == "Gemfile":
        entries = _gemfile(text)
    elif is_manifest(name):
        entries = manifest_entries(name, text, _pep508)
    else:
        entries = [e for line in _logical_lines(text) if (e := _pep508(line)) is not None]
    pins = []
    for dep, spec_text, flavour in entries:
        versions = parse_spec(spec_text, flavour)
        if versions is not None and dep and dependency_key(dep) != "python":
            pins.append(Pin(relative, dep, spec_text, versions))
    return pins


_PEP508 = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?\s*([^;()@]*?)\s*\)?\s*(?:;.*)?$")


def _pep508(line: str) -> tuple[str, str, str] | None:
    line = re.split(r"\s#|\s+--?[a-z]", line, maxsplit=1)[0].strip()  # a comment, per-line options (--hash)
    if not line or line.startswith(("-", "#")) or "://" in line or re.search(r"\s@\s", line):
        return None
    match = _PEP508.match(line)
    return (match.group(1), match.group(2), "pep") if match else None


def _logical_lines(text: str) -> list[str]:
    return text.replace("\\\n", " ").splitlines()


def _toml(text: str) -> dict[str, object]:
    import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):  # a build file nested too deeply pins nothing
        return {}


def _table(data: object, *keys: str) -> dict[str, object]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _pyproject(text: str) -> list[tuple[str, str, str]]:
    data = _toml(text)
    project = _table(data, "project")
    listed = project.get("dependencies")
    lines: list[object] = list(listed) if isinstance(listed, list) else []
    for group in (*_table(project, "optional-dependencies").values(), *_table(data, "dependency-groups").values(),
                  _table(data, "tool", "uv").get("dev-dependencies"), *_table(data, "tool", "pdm", "dev-dependencies").values()):
        if isinstance(group, list):
            lines += group
    entries = [e for line in lines if isinstance(line, str) and (e := _pep508(line)) is not None]
    poetry = _table(data, "tool", "poetry")
    tables = [_table(poetry, "dependencies"), _table(poetry, "dev-dependencies")]
    tables += [_table(group, "dependencies") for group in _table(poetry, "group").values()]
    for table in tables:
        for dep, value in table.items():
            for item in value if isinstance(value, list) else [value]:
                spec = item.get("version") if isinstance(item, dict) else item
                if isinstance(spec, str):
                    entries.append((dep, spec, "poetry"))
    return entries


def _package_json(text: str) -> list[tuple[str, str, str]]:
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # nested too deeply: no package.json npm would read either
        return []
    entries = []
    for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
        for dep, spec in _table(data, key).items():
            if isinstance(spec, str) and not re.match(r"[\w+-]+:|\.{1,2}/|~/|\S*/", spec.strip()):
                entries.append((dep, spec, "npm"))
    return entries


def _cargo(text: str) -> list[tuple[str, str, str]]:
    data = _toml(text)
    tables = [_table(data, key) for key in ("dependencies", "dev-dependencies", "build-dependencies")]
    tables.append(_table(data, "workspace", "dependencies"))
    for target in _table(data, "target").values():
        tables += [_table(target, key) for key in ("dependencies", "dev-dependencies", "build-dependencies")]
    entries = []
    for table in tables:
        for dep, value in table.items():
            spec = value.get("version") if isinstance(value, dict) else value
            if isinstance(spec, str):
                real = value.get("package") if isinstance(value, dict) else None
                entries.append((real if isinstance(real, str) else dep, spec, "cargo"))
    return entries


def _go_mod(text: str) -> list[tuple[str, str, str]]:
    entries = []
    block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("require ("):
            block = True
            continue
        if block and line == ")":
            block = False
            continue
        match = re.fullmatch(r"(?:require\s+)?(\S+)\s+(v\d\S*)", line) if (block or line.startswith("require ")) else None
        if match is None or re.search(r"-\d{14}-[0-9a-f]{12}", match.group(2)):
            continue  # a pseudo-version names a commit, not a release
        module, version = match.group(1), match.group(2).replace("+incompatible", "")
        entries.append((module, version, "exact"))
        short = re.sub(r"/v\d+$", "", module).rsplit("/", 1)[-1]
        if short != module:
            entries.append((short, version, "exact"))
    return entries


def _pom(text: str) -> list[tuple[str, str, str]]:
    properties = dict(re.findall(r"<([\w.-]+)>\s*([^<\s]+)\s*</\1>", _between(text, "<properties>", "</properties>")))
    entries = []
    # a block's own fields end where a nested list begins: an exclusion's or a plugin's
    # dependency names another artifact, and would be paired with this block's version
    for block in re.findall(r"<(?:dependency|plugin|parent)>(.*?)(?=</?(?:dependency|plugin|parent|dependencies|"
                            r"exclusions|configuration|executions)>)", text, re.DOTALL):
        fields = dict(re.findall(r"<(groupId|artifactId|version)>\s*([^<]*?)\s*</\1>", block))
        version = fields.get("version", "")
        version = re.sub(r"\$\{([\w.-]+)\}", lambda m: properties.get(m.group(1), m.group(0)), version)
        if not version or "$" in version or "artifactId" not in fields:
            continue
        entries.append((fields["artifactId"], version, "maven"))
        if "groupId" in fields:
            entries.append((f"{fields['groupId']}:{fields['artifactId']}", version, "maven"))
    return entries


def _between(text: str, start: str, end: str) -> str:
    at = text.find(start)
    return text[at: text.find(end, at)] if at >= 0 else ""


def _gradle(text: str) -> list[tuple[str, str, str]]:
    text = gradle_resolved(text)
    entries = gradle_map_entries(text)
    for group, artifact, version in re.findall(r"[\"']([\w.-]+):([\w.-]+):([\w.+\[\](),-]+)[\"']", text):
        flavour = "maven" if version[:1] in "[(" else "exact"
        entries += [(artifact, version, flavour), (f"{group}:{artifact}", version, flavour)]
    for plugin, version in re.findall(r"\bid\s*\(?\s*[\"']([\w.-]+)[\"']\s*\)?\s+version\s*\(?\s*[\"']([^\"'$]+)[\"']", text):
        entries.append((plugin, version, "exact"))
    return entries


def _gemfile(text: str) -> list[tuple[str, str, str]]:
    entries = []
    for match in re.finditer(r"^\s*gem\s+[\"']([^\"']+)[\"']((?:\s*,\s*[\"'][^\"']*[\"'])*)", text, re.MULTILINE):
        specs = [s for s in re.findall(r"[\"']([^\"']*)[\"']", match.group(2)) if re.match(r"\s*[~<>=!\d]", s)]
        entries.append((match.group(1), ",".join(specs), "ruby"))
    return entries


@dataclass(frozen=True)
class VersionClaim:
    """A dependency and version a memory line states ("jhelm 1.3.1", "`requests>=2.31`")."""

    line: int
    name: str
    text: str  # as written
    versions: Spec


_VERSION = re.compile(r"(?<![\w.+-])[vV]?(\d+(?:\.\d+)+)(?!\d)([\w.+*-]*)")
_BEFORE = re.compile(
    r"(?<![\w@/.-])(?P<name>@?[A-Za-z](?:[\w.-]*[A-Za-z0-9])?(?:/[\w.-]*[A-Za-z0-9])*)"
    r"\s*(?P<sep>===|==|~=|~>|>=|<=|>|<|=|@|:|\^|~|\|)?\s*"
    r"(?P<words>(?:(?:is|are|at|on|now|currently|pinned|locked|to|version|ver\.?|uses|using|runs|of|stays|"
    r"remains|least|[(])\s*)*)"
    r"(?P<op>\^|~>|~=|~|>=|<=|>|<|==|=)?\s*$", re.IGNORECASE)
_DIGIT_DOT = re.compile(r"\d\.\d")
_BARS = str.maketrans("|(", "  ")
#: `1.2+` is "or later" only written on the number: `Vue 3.3 + Vite` is a list
_OR_LATER = re.compile(r"(?:\+|\s*(?:or (?:later|newer|higher|above|greater)|and (?:up|above|later|newer)|onwards))",
                       re.IGNORECASE)
#: what follows a number that makes it no version of the name before it: a quantity
#: ("requests: 2.5 s timeout") or the version of an API, protocol or format ("requests 2.0 API")
_NOT_A_RELEASE = re.compile(
    r"\s*(?:%|×|°|(?:x|s|ms|us|ns|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?|weeks?|k|m|b|kb|mb|gb|tb|"
    r"kib|mib|gib|tib|times|px|em|rem|pt|fps|hz|khz|mhz|ghz|cores?|cpus?|gpus?|"
    r"api|apis|spec|specs|specification|protocol|endpoints?|schema|format|standard|rfc|flow|profile|dialect|"
    r"syntax|grammar|wire|docs?|documentation|changelog|manual|(?:migration|upgrade)\s+guide|release\s+notes)\b)",
    re.IGNORECASE)
_CHANGED_TO = re.compile(r"\s*(?:->|=>|\u2192|\u21d2|\u27f6|to)\s*[vV]?\d+(?:\.\d+)+")
#: a changelog entry: the line opens with a version heading or label (`## 1.2.0`, `v1.2.0:`,
#: `[1.2.0] -`); what it says was true then, it is history
_VERSION_LABEL = re.compile(r"\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:#+\s*\[?v?\d+\.\d|\[?v?\d+(?:\.\d+)+\]?\s*(?::|\(|[-—–]\s))")
#: a line opening with a date: one such line is a dated fact (the write lint asks for absolute
#: dates), several make a log whose entries were true when written
_DATED = re.compile(r"\s*(?:[-*+]\s+|\d+[.)]\s+)?\[?\d{4}-\d{2}-\d{2}\b")
_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")


def version_claims_of(facts: Iterable[FactLine]) -> list[VersionClaim]:
    facts = list(facts)
    dated = {fact.number for fact in facts if _DATED.match(fact.text)}
    log = dated if len(dated) >= 2 else set()
    claims: list[VersionClaim] = []
    for fact in facts:
        if fact.number not in log and not _VERSION_LABEL.match(fact.text) and _states_versions(fact):
            line = fact.text.replace("`", " ").replace("**", " ")  # code and bold marks: `**React** 18.2`
            claims += [claim for match in _VERSION.finditer(line)
                       if (claim := _claim(fact.number, line, match)) is not None
                       and not may_mean_the_service(claim.name, line)]
    return claims


def _states_versions(fact: FactLine) -> bool:
    """Whether a line may state versions as facts: a dotted number, and none of the words of
    an example, history, a negation, a plan, an upstream release or a URL ("5.3 or later"
    is a range, not a plan)."""
    if not _DIGIT_DOT.search(fact.text):
        return False
    marks = fact.marks
    if "future" in marks and _OR_LATER.search(fact.text):
        marks = line_marks(_OR_LATER.sub(" ", CODE_SPAN.sub(" ", fact.text))) | (marks & {"url"})
    return marks.isdisjoint(("example", "past", "negation", "future", "upstream", "url"))


def _claim(number: int, line: str, match: re.Match[str]) -> VersionClaim | None:
    """The claim one version of a line makes of the name right before it; None for a
    release line (`4.1.x`), an address (`10.0.0.5`, `host:1.2.3.4:6379`) or no name."""
    if re.match(r"\.?[xX*]", match.group(2)):
        return None
    if match.group(1).count(".") == 3 or line.startswith(":", match.end()):
        return None
    if _NOT_A_RELEASE.match(match.group(2)) or _NOT_A_RELEASE.match(line, match.end()):
        return None
    if _CHANGED_TO.match(line, match.end()):  # `jhelm 1.3.1 -> 1.5.2`: a change, as a row of two versions
        return None
    before = _BEFORE.search(line[max(0, match.start() - 80): match.start()])
    if before is None:
        return None
    numbers = [int(n) for n in match.group(1).split(".")][:WIDTH]
    row = before.group("sep") == "|"  # a table row, `| jhelm | 1.3.1 |`: one version, or the row is a change
    if row and len(_VERSION.findall(line)) > 1:
        return None
    op = before.group("op") or ("" if row else before.group("sep")) or ""
    if "least" in before.group("words").lower() or (not op and _OR_LATER.match(line, match.end(1))):
        op = ">="
    # as written, less a table's bars and an opening parenthesis (`jhelm (1.3.1)`, `| jhelm | 1.3.1 |`)
    written = " ".join(line[match.start() - len(before.group(0)): match.end(1)].translate(_BARS).split())
    written = re.sub(r" (?=[:@])", "", written)  # `react`: `18.2.0` reads react: 18.2.0
    return VersionClaim(number, before.group("name"), written, [_claimed(op, numbers)])


def _claimed(op: str, numbers: list[int]) -> Interval:
    """The versions a claim admits: its operator's reading, an exact version for three
    numbers or more, else the release line (`jhelm 1.3` is any 1.3.x)."""
    if op in (">=", ">", "<=", "<"):
        return compare(op, numbers)
    if op in ("~=", "~>"):
        return compatible(numbers)
    if op == "^":
        return caret(numbers)
    if op == "~":
        return tilde(numbers)
    if op in ("==", "===") or len(numbers) >= 3:
        return exact(numbers)
    return release_line(numbers)


def stale_version_pins(claims: Sequence[VersionClaim], pins: dict[str, list[Pin]],
                       judged: list[VersionClaim] | None = None) -> list[tuple[VersionClaim, str]]:
    """Each claim that every parseable build-file spec of its dependency contradicts.
    `judged` gets every claim whose dependency the build files name, held or stale."""
    stale = []
    for claim in claims:
        specs = pins.get(dependency_key(claim.name))
        if specs and judged is not None:
            judged.append(claim)
        if not specs or not all(disjoint(claim.versions, pin.versions) for pin in specs):
            continue
        version = re.search(r"\d[\d.]*$", claim.text)
        if version and _YEAR.match(version.group()) and not any(_YEAR.search(p.text) for p in specs):
            continue  # "jhelm 2024.01.05" is a date beside a name; a calendar-versioned build would say so
        shown = "; ".join(f"{pin.file} has `{pin.name}{'' if pin.text[:1] in '=<>!' else ' '}{pin.text}`"
                          for pin in specs[:3])
        more = f" (and {len(specs) - 3} more specs)" if len(specs) > 3 else ""
        stale.append((claim, f"memory says `{claim.text}`, but {shown}{more}"))
    return stale


def read_pins(tree: Tree) -> dict[str, list[Pin]]:
    """Every build file's specs in the tree, by dependency key."""
    names = tree.files if tree.files is not None else [n for n in BUILD_FILES if os.path.isfile(os.path.join(tree.root, n))]
    pins: dict[str, list[Pin]] = {}
    queue = [n for n in names if is_build_file(n)][:BUILD_FILES_MAX]
    read = set(queue)
    for relative in queue:  # grows by the files a requirements file takes in (`-r dev.txt`)
        text = read_text(os.path.join(tree.root, relative), BUILD_FILE_BYTES_MAX)
        if text is None:
            continue
        for pin in build_pins(relative, text):
            pins.setdefault(dependency_key(pin.name), []).append(pin)
        if relative.endswith((".txt", ".in")) and len(read) < BUILD_FILES_MAX:
            more = [n for n in requirement_includes(relative, text) if n not in read
                    and not any(part in PRUNED or part == "vendor" for part in n.split("/")[:-1])]
            read.update(more)
            queue += more
    return pins
