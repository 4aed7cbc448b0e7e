"""Stale sequences: "the latest migration is V27" once `V28__*.sql` exists, "next is V28"
once V28 exists, in Flyway-style and numbered migration folders.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.core.memory.facts import CODE_SPAN, FactLine
from app.core.memory.versions import Version, pad
from app.core.memory_lint import frontmatter

_FLYWAY_FILE = re.compile(r"^V(\d+(?:[._]\d+)*)__.+")
_NUMBERED_FILE = re.compile(r"^(\d+)(?:[_-].*)?\.[A-Za-z]+$")
#: Prisma keeps each migration as `migrations/<timestamp>_<name>/migration.sql`
_NUMBERED_FOLDER = re.compile(r"^(\d+)_[\w-]+$")


@dataclass(frozen=True)
class Series:
    """One folder of migrations: Flyway-style (`V28__add_index.sql`) or numbered (`0028_x.py`)."""

    kind: str  # "flyway" or "numbered"
    folder: str  # relative to the root
    versions: dict[Version, str]  # version -> file name

    @property
    def newest(self) -> tuple[Version, str]:
        top = max(self.versions)
        return top, self.versions[top]


def migration_series(files: Iterable[str]) -> list[Series]:
    """The migration folders of a tree: any `V<n>__*` file, and numbered files in a folder
    whose path says migrations (`migrations/`, `db/migrate/`, alembic)."""
    found: dict[tuple[str, str], dict[Version, str]] = {}
    for relative in files:
        folder, _, name = relative.rpartition("/")
        flyway = _FLYWAY_FILE.match(name)
        if flyway:
            key = ("flyway", folder)
            numbers = [int(n) for n in re.split(r"[._]", flyway.group(1))]
        else:
            numbered = _NUMBERED_FILE.match(name)
            if numbered is None and name == "migration.sql":  # Prisma: one folder per migration
                folder, _, name = folder.rpartition("/")
                numbered = _NUMBERED_FOLDER.match(name)
            if numbered is None or not re.search(r"migrat|alembic", folder, re.IGNORECASE):
                continue
            key = ("numbered", folder)
            numbers = [int(numbered.group(1))]
        found.setdefault(key, {})[pad(numbers)] = name
    return [Series(kind, folder, versions) for (kind, folder), versions in sorted(found.items())]


@dataclass(frozen=True)
class SequenceClaim:
    """"The latest migration is V27" or "the next one is V28" in a memory line."""

    line: int
    which: str  # "latest" or "next"
    kind: str  # "flyway" or "numbered"
    ref: str  # as written
    version: Version
    context: str  # the line, to narrow down which folder it means


_MIGRATION_CONTEXT = re.compile(r"migrat|flyway|liquibase|alembic|schema|\.sql\b|\bV\d+(?:[._]\d+)*__", re.IGNORECASE)
_REF = (r"`?(?:(?P<flyway>(?-i:V)\d+(?:[._]\d+)*)(?:__[\w.-]*)?|(?P<numbered>0\d+|\d+(?=[_-][A-Za-z])|(?<=migration )\d+"
        r"|(?<=migration #)\d+)(?:[_-][\w.-]*)?)`?")
_LATEST = r"latest|last|newest|most recent|highest|current|head"
_NEXT = r"next|upcoming"
#: the bare claim ("latest is `V27`", "next is V28."), no noun saying what is latest: a Flyway
#: version ending the clause can only be a migration, and it still needs a Flyway folder to fire.
#: "the latest is V2 of the API" goes on past the version and stays silent.
_BARE_CLAIM = re.compile(rf"\b(?:{_LATEST}|{_NEXT})\s+(?:one\s+)?is\s+`?(?-i:V)\d+(?:[._]\d+)*(?:__[\w.-]*)?`?"
                         r"(?=\s*(?:[.;,!?(—]|$))", re.IGNORECASE)
_FORWARD = re.compile(rf"\b(?P<word>{_LATEST}|{_NEXT})\b[^.;!?\n\d]{{0,60}}?{_REF}", re.IGNORECASE)
_BACKWARD = re.compile(rf"{_REF}[^.;!?\n\d]{{0,30}}?\b(?:is|as)\s+(?:now\s+|still\s+)?(?:the\s+)?"
                       rf"(?P<word>{_LATEST}|{_NEXT})\b", re.IGNORECASE)




def about_migrations(text: str) -> bool:
    """Whether a memory file as a whole is about migrations (its frontmatter name or description)."""
    found = frontmatter(text)
    return found is not None and bool(_MIGRATION_CONTEXT.search(f"{found[0].get('name')} {found[0].get('description')}"))


def sequence_claims_of(facts: Iterable[FactLine], about: bool) -> list[SequenceClaim]:
    claims: list[SequenceClaim] = []
    for fact in facts:
        bare = not (about or _MIGRATION_CONTEXT.search(fact.text))
        if (bare and not _BARE_CLAIM.search(fact.text)) or fact.has("example", "past"):
            continue
        if re.search(r"\b(?:if|unless|suppose|assuming)\b", CODE_SPAN.sub(" ", fact.text), re.IGNORECASE):
            continue
        line = fact.text
        for match in (*_FORWARD.finditer(line), *_BACKWARD.finditer(line)):
            which = "next" if re.fullmatch(_NEXT, match.group("word"), re.IGNORECASE) else "latest"
            flyway, numbered = match.group("flyway"), match.group("numbered")
            if flyway:
                version = pad([int(n) for n in re.split(r"[._]", flyway[1:])])
                claims.append(SequenceClaim(fact.number, which, "flyway", flyway, version, line))
            elif numbered and not bare:
                claims.append(SequenceClaim(fact.number, which, "numbered", numbered, pad([int(numbered)]), line))
    unique = {(c.line, c.which, c.kind, c.version): c for c in claims}
    return list(unique.values())


#: folder names too common to tell one migration folder from another
_COMMON_FOLDERS = frozenset({"", "src", "main", "resources", "db", "migrations", "migration", "migrate", "app",
                             "apps", "sql", "versions", "alembic", "database", "schema"})


def stale_sequences(claims: Sequence[SequenceClaim], series: Sequence[Series],
                    judged: list[SequenceClaim] | None = None) -> list[tuple[SequenceClaim, str]]:
    """Each claim that every migration folder it may mean contradicts: a newer migration
    than "the latest" exists, or "the next" one exists already. `judged` gets every claim
    some migration folder of the tree may mean, held or stale."""
    stale = []
    for claim in claims:
        candidates = [s for s in series if s.kind == claim.kind]
        named = [s for s in candidates if _names_folder(claim.context, s.folder)]
        if not named and _of_a_topic(claim.context):
            continue  # "the latest orders migration": the latest of a topic no folder is named for
        candidates = named or candidates
        if not candidates:
            continue
        if judged is not None:
            judged.append(claim)
        if claim.which == "latest":
            if all(s.newest[0] > claim.version for s in candidates):
                newest = max(candidates, key=lambda s: s.newest[0]).newest[1]
                stale.append((claim, f"memory says the latest migration is {claim.ref}, but {newest} exists"))
        elif all(s.newest[0] >= claim.version for s in candidates):
            same = next((s.versions[claim.version] for s in candidates if claim.version in s.versions), None)
            newest = max(candidates, key=lambda s: s.newest[0]).newest[1]
            what = f"{same} already exists" if same else f"migrations up to {newest} exist"
            stale.append((claim, f"memory says the next migration is {claim.ref}, but {what}"))
    return stale


#: a word narrowing "migration" to a topic: "the latest orders migration", "the latest
#: migration touching orders"; words that only say which kind of migration are no topic
_TOPIC = re.compile(r"\b(?P<a>[A-Za-z][\w-]*)\s+(?=migration\b)|\bmigration\s+(?:touching|for|on|of|about|affecting"
                    r"|that\s+touch(?:es|ed)|changing|in)\s+(?:the\s+)?(?P<b>[A-Za-z][\w-]*)", re.IGNORECASE)
_NO_TOPIC = frozenset({"the", "a", "an", "our", "its", "their", "latest", "last", "newest", "recent", "current", "head",
                       "highest", "next", "upcoming", "new", "applied", "db", "database", "sql", "schema", "flyway",
                       "django", "rails", "alembic", "prisma", "knex", "liquibase", "data", "this", "that", "one", "is"})


def _of_a_topic(context: str) -> bool:
    return any((m.group("a") or m.group("b")).lower() not in _NO_TOPIC for m in _TOPIC.finditer(CODE_SPAN.sub(" ", context)))


def _names_folder(context: str, folder: str) -> bool:
    """Whether a line names one migration folder: by a name of its own (`orders`), or by its
    whole path (`db/migration`, which in a monorepo is no less a name for being common words)."""
    if "/" in folder and re.search(rf"(?<![\w/.-]){re.escape(folder)}(?![\w-])", context):
        return True
    return any(re.search(rf"(?<![\w-]){re.escape(part)}(?![\w-])", context, re.I)
               for part in folder.split("/") if part.lower() not in _COMMON_FOLDERS)
