"""Vanished artifacts: a backticked path, file name or code symbol a memory line states as
part of the tree, which the tree no longer has (not on disk, and no tracked or untracked
file mentions it: app/core/memory/tree.py's one batched `git grep`).

Flags, `<placeholders>`, `…`-abbreviated paths, paths rooted outside the tree, and lines
that are examples, history, advice, plans or about generated or outside things are
pointers, not facts about this tree: never checked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.core.memory.facts import CODE_SPAN, URL, FactLine
from app.core.memory.tree import PRUNED, Tree
from app.core.paths import strictly_inside


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: extensions that make a bare `name.ext` a file name (not a dotted module or attribute path)
FILE_EXTENSIONS = _word_set("""
py pyi pyx ipynb js mjs cjs jsx ts tsx mts cts vue svelte astro json jsonc json5 toml yaml yml ini cfg conf
md mdx rst txt csv tsv sql sh bash zsh fish ps1 bat go rs java kt kts scala groovy gradle rb erb rake php cs
fs vb swift m mm c h cc cpp cxx hpp hh hxx proto graphql gql tf tfvars hcl html htm css scss sass less tcss
xml xsd xsl lock env dockerfile mk cmake nix lua pl pm r jl ex exs erl hrl dart zig elm clj cljs edn hs
""")

#: product and tool names written in CamelCase: in backticks they name no symbol of the tree
PRODUCT_NAMES = _word_set("""
GitHub GitLab BitBucket PostgreSQL MySQL MariaDB SQLite MongoDB DynamoDB CockroachDB ClickHouse InfluxDB
CouchDB DuckDB IndexedDB JavaScript TypeScript CoffeeScript NodeJS GraphQL WebSocket WebSockets OAuth
OpenAI ChatGPT YouTube macOS iOS iPadOS watchOS tvOS visionOS iPhone iPad iCloud LinkedIn PayPal WordPress
JetBrains IntelliJ PyCharm WebStorm PhpStorm RubyMine GoLand CLion DataGrip VSCode NeoVim FastAPI NumPy
SciPy PyTorch TensorFlow OpenAPI OpenID CloudFlare CloudFront ElasticSearch OpenSearch RabbitMQ DevOps
DockerHub TestFlight AppStore PlayStation XCode NextJS NuxtJS ReactJS VueJS AngularJS jQuery TailwindCSS
SQLAlchemy PyPI CPython PyPy LaTeX BigQuery gRPC WebAssembly WebGL WebRTC SwiftUI UIKit AppKit CoreData
CMake MSBuild NuGet PowerShell ZooKeeper HashiCorp TeamCity CircleCI TravisCI BuildKite SonarQube
PagerDuty OpsGenie MacBook ChromeOS FreeBSD OpenBSD NetBSD RedHat CentOS OpenSSL LibreSSL OpenSSH MinIO
LocalStack JUnit TestNG PHPUnit RSpec ESLint TSLint StyleLint HuggingFace LangChain LlamaIndex
OpenTelemetry GitOps ArgoCD FluxCD OpenTofu AirFlow PostGIS PgBouncer DBeaver TablePlus OneDrive
SharePoint HomeBrew MacPorts AppVeyor BrowserStack CodeCov SemVer CalVer SageMaker CloudWatch
CloudFormation EventBridge AppSync ClaudeCode JSONSchema DevTools KeyCloak GitKraken SourceTree
""".lower())

#: Claude's own files: they live in its config folders at least as often as in the tree
CLAUDE_FILES = frozenset({"claude.md", "claude.local.md", "memory.md", "settings.json", "settings.local.json",
                          ".claude.json", "keybindings.json"})
_LOCAL_ONLY = re.compile(r"^\.env(\..*)?$|\.local(\.|$)|\.(pem|key|p12)$|^credentials|^secrets?\.", re.IGNORECASE)
_SYMBOL = re.compile(r"^_*[A-Za-z][A-Za-z0-9_]*$")
_LINE_SUFFIX = re.compile(r"(?::\d+(?:[:-]\d+)?|#L\d+(?:-L?\d+)?)$")
#: a name scoped with `::` (Rust, C++, Ruby, PHP): `crate::router::LegacyRouter`, `Foo::bar()`
_SCOPED = re.compile(r"_*[A-Za-z]\w*(?:::_*[A-Za-z]\w*)+(?:\(\))?")
#: a method written as Ruby, Javadoc and JSDoc write it, `LegacyRouter#dispatch`: it names its class
_METHOD_REF = re.compile(r"(_*[A-Za-z]\w*)#_*[A-Za-z]\w*[!?]?(?:\(\))?")
#: a migration file's name (`V28__add_orders.sql`, `0013_add_orders.py`): on a line about the
#: next migration it names a file not made yet, so its absence is the fact, not rot
_MIGRATION_NAME = re.compile(r"V\d+(?:[._]\d+)*__\S*|\d+[_-][A-Za-z]\S*")
_NEXT_WORD = re.compile(r"\b(?:next|upcoming|new)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Artifact:
    """One backticked name a memory line states as part of the tree."""

    line: int
    token: str  # as written in the memory
    kind: str  # "path", "file" (a bare file name) or "symbol"
    probe: str  # what to look for: a relative path, a file name or an identifier


def artifact_of(token: str, root: str) -> tuple[str, str] | None:
    """(kind, probe) for a backticked token that names a path, file or symbol of the tree at
    `root`, or None for anything that is a pointer rather than a fact about the tree."""
    plain = _in_tree(token, root)
    if plain is None:
        return None
    if "/" in plain:
        return _path(plain)
    if _is_file_name(plain):
        # a local secret, a dotfile or Claude's own file lives outside trees as often as in
        local = _LOCAL_ONLY.search(plain) or plain.startswith(".") or plain.lower() in CLAUDE_FILES
        return None if local else ("file", plain)
    name = _symbol_part(plain[:-2] if plain.endswith("()") else plain)
    return ("symbol", name) if name is not None else None


_ODD = "<>{}[]*?$%|=\"',;!&^`\\#"


def _in_tree(token: str, root: str) -> str | None:
    """The token as a name relative to the tree (line suffixes, a decorator's `@`, the
    root's own prefix and `./` taken off), or None for a pointer elsewhere: a flag, a
    placeholder, an abbreviation, a URL, a home or drive path, a path rooted outside the
    tree, a number or a version."""
    token = token.strip()
    if len(token) < 3 or token.startswith("-") or any(c.isspace() for c in token):
        return None
    scoped = _scoped(token)
    if scoped is not None:
        return scoped
    if "…" in token or "..." in token or URL.search(token):
        return None
    if any(c in token for c in _ODD):
        token = _LINE_SUFFIX.sub("", token)
        if any(c in token for c in _ODD):
            return None
    token = _without_stop(_LINE_SUFFIX.sub("", token))
    if token.startswith("@") and "/" not in token and _SYMBOL.match(token[1:]):
        token = token[1:]  # a decorator: the function it names
    if token.startswith(("~", "@", "..")) or re.match(r"^[A-Za-z]:", token) or ":" in token:
        return None
    return _below(token, root)


def _scoped(token: str) -> str | None:
    """A symbol written with its scope or one of its methods: `LegacyRouter::new()` (not a
    `host:port` or a `C:` path), `LegacyRouter#dispatch` (its class)."""
    if _SCOPED.fullmatch(token):
        return token.removesuffix("()")
    method = _METHOD_REF.fullmatch(token)
    return method.group(1) if method else None


def _without_stop(token: str) -> str:
    """A sentence's own punctuation caught inside the backticks (`src/app.py.`, `src/app.py)`)
    is no part of the name: looked for with it, a file that is there reads as gone."""
    if token.endswith(")") and "(" not in token:
        token = token[:-1]
    return token[:-1] if token.endswith(".") and not token.endswith("..") else token


def _below(token: str, root: str) -> str | None:
    """A path rooted in the tree made relative (None when rooted outside it); a number or a
    version is no name."""
    if token.startswith("/"):
        prefix = root.rstrip("/") + "/"
        if not token.startswith(prefix) or len(token) == len(prefix):
            return None  # rooted outside this tree
        token = token[len(prefix):]
    if token.startswith("./"):
        token = token[2:]
    if re.fullmatch(r"v?\d[\d.]*[a-z]?\d*", token, re.IGNORECASE):
        return None  # a number or a version
    return token


def _path(token: str) -> tuple[str, str] | None:
    path = token.rstrip("/")
    if not path or any(part in ("", ".", "..") for part in path.split("/")):
        return None
    if _LOCAL_ONLY.search(path.rsplit("/", 1)[-1]):
        return None
    return ("path", token)


def _is_file_name(token: str) -> bool:
    """`name.ext` with an extension of FILE_EXTENSIONS (not a dotted module or attribute)."""
    stem, dot, ext = token.rpartition(".")
    return bool(dot and stem and ext.lower() in FILE_EXTENSIONS and re.fullmatch(r"[\w.+-]+", token))


def _symbol_part(token: str) -> str | None:
    """The identifier a code-ish token names: `UserService.create()` names `UserService`.
    Only names that cannot be an ordinary word qualify: CamelCase with a hump inside
    (`LegacyRouter`, `getUser`) or snake_case (`parse_args`); not CONSTANT_CASE (mostly
    environment variables set elsewhere), not product names (`PostgreSQL`)."""
    parts = [p for p in re.split(r"\.|::|#", token) if p]
    if not parts or not all(_SYMBOL.match(p) for p in parts):
        return None
    for part in (parts[0], parts[-1]) if len(parts) > 1 else (parts[0],):
        bare = part.strip("_")
        if len(bare) < 4 or bare.upper() == bare or part.lower() in PRODUCT_NAMES:
            continue
        if "_" in bare or re.search(r"[a-z0-9][A-Z]", bare):
            return part
    return None




#: CONSTANT_CASE is mostly an environment variable set outside the tree, so it is silent,
#: unless the line's prose calls it a flag: a feature flag the code no longer reads is rot
_FLAG_WORD = re.compile(r"\b(?:feature[- ])?(?:flag|toggle)s?\b", re.IGNORECASE)
#: a line that also speaks of the environment: its CONSTANT_CASE names are variables after all
_ENV_WORD = re.compile(r"\b(?:env|envs|environment|env[- ]?vars?|variables?|secrets?)\b", re.IGNORECASE)
#: a flag's own name: CONSTANT_CASE, or a flag service's kebab-case key (`new-checkout-flow`),
#: which names no symbol elsewhere; grepped whole, so a `--new-checkout-flow` option still holds it
_FLAG_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:-[a-z0-9]+)+")


def artifacts_in(facts: Iterable[FactLine], root: str) -> list[Artifact]:
    found: list[Artifact] = []
    for fact in facts:
        if fact.has("example", "past", "negation", "future", "outside", "url") or "`" not in fact.text:
            continue
        tokens = [m.group(2) for m in CODE_SPAN.finditer(fact.text)]
        if any(_points_outside(t, root) for t in tokens):
            continue  # a line about something outside the tree: its names are not the tree's
        prose = CODE_SPAN.sub(" ", fact.text)
        flag_line = bool(_FLAG_WORD.search(prose)) and not _ENV_WORD.search(prose)
        if _NEXT_WORD.search(prose):
            tokens = [t for t in tokens if not _MIGRATION_NAME.fullmatch(t.strip().rsplit("/", 1)[-1])]
        for token in tokens:
            if _CONTROL.search(token) or len(token) > TOKEN_MAX:
                continue  # a bad paste (a NUL, an escape, a blob) names no file or symbol, and fails git grep
            if _NODE_ID.fullmatch(token.strip()):
                found.extend(_node_artifacts(fact.number, token.strip(), root))
                continue
            kind_probe = artifact_of(token, root)
            if kind_probe is None and flag_line and _FLAG_NAME.fullmatch(token.strip()):
                kind_probe = ("symbol", token.strip())
            if kind_probe is not None:
                found.append(Artifact(fact.number, token.strip(), *kind_probe))
    return found


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
#: no path is longer (PATH_MAX); git grep refuses a pattern of some 50,000 characters
TOKEN_MAX = 4096

#: a test's node id as pytest prints it: `tests/test_api.py::TestUsers::test_create[sqlite]`
_NODE_ID = re.compile(r"(?P<path>[\w./-]+\.\w+)::(?P<names>_*[A-Za-z]\w*(?:::_*[A-Za-z]\w*)*)(?:\[[^\]`]*\])?")


def _node_artifacts(number: int, token: str, root: str) -> list[Artifact]:
    """A node id names a file and a test in it: the file is checked as a path, and once it is
    on disk, the test's own name as a symbol (a test renamed away is rot like a class)."""
    match = _NODE_ID.fullmatch(token)
    kind_probe = artifact_of(match.group("path"), root) if match else None
    if match is None or kind_probe is None:
        return []
    found = [Artifact(number, token, *kind_probe)]
    relative = kind_probe[1]
    name = _symbol_part(match.group("names").rsplit("::", 1)[-1])
    if name is not None and kind_probe[0] == "path" and os.path.lexists(os.path.join(root, relative)):
        found.append(Artifact(number, token, "symbol", name))
    return found


def _points_outside(token: str, root: str) -> bool:
    token = token.strip()
    if token.startswith(("~/", "$HOME", "../")) or URL.search(token):
        return True
    return token.startswith("/") and not strictly_inside(token, root) and "/" in token[1:]


def vanished_artifacts(items: Sequence[Artifact], tree: Tree,
                       judged: list[Artifact] | None = None) -> list[tuple[Artifact, str]]:
    """Each artifact the tree no longer has, with the reason; nothing when git could not
    grep (a name is vanished only when git grep cannot find it AND it is not on disk).
    `judged` gets every item the tree could judge, there or gone (a path rooted in a folder
    the tree never had is about another tree: this one says nothing of it)."""
    if not tree.grepped:
        return []
    gone: list[tuple[Artifact, str]] = []
    for item in items:
        first = item.probe.split("/", 1)[0]
        if item.kind == "path" and (not tree.knows_folder(first) or first in PRUNED):
            continue  # rooted in a folder this tree never had: a pointer elsewhere
        if judged is not None:
            judged.append(item)
        if item.kind == "path":
            if tree.has_path(item.probe) or tree.mentions(item.probe.rstrip("/")):
                continue
            gone.append((item, f"`{item.token}` is not in the tree: no such file or folder, and git grep "
                               "finds no mention of it"))
        elif item.kind == "file":
            if tree.has_path(item.probe) or tree.mentions(item.probe):
                continue
            gone.append((item, f"`{item.token}` is not in the tree: no file of that name, and git grep "
                               "finds no mention of it"))
        elif not tree.mentions(item.probe):
            gone.append((item, f"`{item.token}` is not in the tree: git grep finds `{item.probe}` in no file"))
    return gone
