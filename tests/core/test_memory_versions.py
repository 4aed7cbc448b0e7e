"""Stale version pins: every build file format, the spec semantics of each tool, and the
filters that keep release lines, admitting ranges, examples and struck lines silent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.core import memory
from app.core.memory import exact, parse_spec, release_line
from tests.core.test_memory import write_memory
from tests.support import SandboxEnv, make_repo

# each build file pins jhelm at 1.5.2, the way that tool writes it
BUILD_FILES = {
    "pyproject (PEP 621)": {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["jhelm==1.5.2", "other>=1"]\n'},
    "pyproject (optional deps)": {"pyproject.toml": '[project]\nname = "x"\n[project.optional-dependencies]\n'
                                                    'tpl = ["jhelm[fast] == 1.5.2 ; python_version >= \\"3.11\\""]\n'},
    "pyproject (Poetry)": {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.11"\njhelm = "1.5.2"\n'},
    "pyproject (Poetry group, table)": {"pyproject.toml": '[tool.poetry.group.dev.dependencies]\n'
                                                          'jhelm = { version = "~1.5.2", optional = true }\n'},
    "requirements.txt": {"requirements.txt": "# pins\n-r base.txt\nJhelm==1.5.2  # templates\n"},
    "requirements-dev.txt": {"requirements-dev.txt": "jhelm>=1.5,<1.6 \\\n    --hash=sha256:abc\n"},
    "package.json": {"package.json": json.dumps({"dependencies": {"jhelm": "^1.5.2"}})},
    "package.json (dev)": {"package.json": json.dumps({"devDependencies": {"jhelm": "1.5.x"}})},
    "Cargo.toml": {"Cargo.toml": '[package]\nname = "x"\n[dependencies]\njhelm = "1.5.2"\n'},
    "Cargo.toml (table)": {"Cargo.toml": '[dev-dependencies]\njhelm = { version = "=1.5.2", features = ["x"] }\n'},
    "go.mod": {"go.mod": "module example.com/x\n\ngo 1.22\n\nrequire (\n\tgithub.com/acme/jhelm v1.5.2 // indirect\n)\n"},
    "go.mod (one line)": {"go.mod": "module example.com/x\n\nrequire github.com/acme/jhelm/v1 v1.5.2\n"},
    "pom.xml": {"pom.xml": "<project><properties><jhelm.version>1.5.2</jhelm.version></properties><dependencies>"
                           "<dependency><groupId>io.jhelm</groupId><artifactId>jhelm</artifactId>"
                           "<version>${jhelm.version}</version></dependency></dependencies></project>"},
    "pom.xml (range)": {"pom.xml": "<project><dependencies><dependency><artifactId>jhelm</artifactId>"
                                   "<version>[1.5,1.6)</version></dependency></dependencies></project>"},
    "build.gradle": {"build.gradle": "dependencies {\n    implementation 'io.jhelm:jhelm:1.5.2'\n}\n"},
    "build.gradle.kts": {"build.gradle.kts": 'dependencies {\n    implementation("io.jhelm:jhelm:1.5.2")\n}\n'},
    "Gemfile.lock": {"Gemfile.lock": "GEM\n  remote: https://rubygems.org/\n  specs:\n    jhelm (1.5.2)\n"
                                     "      rake (>= 12)\n\nDEPENDENCIES\n  jhelm\n"},
    "Gemfile": {"Gemfile": "source 'https://rubygems.org'\ngem 'jhelm', '~> 1.5.2'\n"},
}


def pinned_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    return make_repo(tmp_path / "proj", files={**files, "README.md": "x\n"})


def pins(repo: Path, body: str) -> list[tuple[int | None, str]]:
    write_memory(repo, {"deps.md": body})
    return [(f.line, f.token) for f in memory.sweep(str(repo)) if f.kind == "stale_version_pin"]


@pytest.mark.parametrize("files", BUILD_FILES.values(), ids=BUILD_FILES.keys())
def test_each_build_file_format_grounds_a_pin(files: dict[str, str], tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, files)
    found = pins(repo, "- We pin jhelm 1.3.1 for templates.\n- jhelm 1.5.2 renders the pages.\n")
    assert found == [(7, "jhelm 1.3.1")]


def test_the_message_names_the_build_file_and_its_spec(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"sub/requirements.txt": "jhelm==1.5.2\n"})
    write_memory(repo, {"deps.md": "- `jhelm==1.3.1` is the pin.\n"})
    [finding] = memory.sweep(str(repo))
    assert finding.message == "memory says `jhelm==1.3.1`, but sub/requirements.txt has `jhelm==1.5.2`"


SILENT = [
    ("a release line", "jhelm 1.3.x is the line we use."),
    ("a release line with a star", "jhelm 1.3.* works."),
    ("a range that admits the pin", "We need `jhelm>=1.4` for filters."),
    ("a caret range that admits", "jhelm ^1.5.0 in the docs."),
    ("an or-later range", "jhelm 1.4 or later."),
    ("a release line that admits", "jhelm 1.5 renders pages."),
    ("an example", "For example `jhelm==1.3.1`."),
    ("history", "jhelm was 1.3.1 before the upgrade."),
    ("an upgrade", "We upgraded jhelm from 1.3.1 to 1.5.2."),
    ("upstream talk", "The latest jhelm is 2.0.1."),
    ("a known bug", "jhelm 1.4.0 has a known bug with tables."),
    ("a negation", "Do not use jhelm 1.4.0."),
    ("a plan", "We will move to jhelm 2.0.0 next quarter."),
    ("a URL", "Notes: https://jhelm.dev/1.3.1/changes"),
    ("a struck line", "~~jhelm 1.3.1 renders pages~~"),
    ("an address", "jhelm at 10.0.0.12 serves the preview."),
    ("another name", "helm 1.3.1 deploys the chart."),
]


@pytest.mark.parametrize(("why", "line"), SILENT, ids=[s[0] for s in SILENT])
def test_what_stays_silent_while_the_check_still_runs(why: str, line: str, tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"requirements.txt": "jhelm==1.5.2\n"})
    assert pins(repo, f"- {line}\n- Control: jhelm 1.2.0.\n") == [(8, "jhelm 1.2.0")], why


def test_a_fenced_command_is_an_example(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"requirements.txt": "jhelm==1.5.2\n"})
    assert pins(repo, "```sh\npip install jhelm==1.3.1\n```\n- `pip install jhelm==1.3.1` once.\n") == [
        (10, "jhelm==1.3.1")]


def test_a_range_that_excludes_the_pin_is_stale(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"package.json": json.dumps({"dependencies": {"jhelm": "1.5.2"}})})
    assert pins(repo, "- jhelm >= 1.6 is needed.\n- `jhelm<1.5` only.\n- jhelm at least 1.5.\n") == [
        (7, "jhelm >= 1.6"), (8, "jhelm<1.5")]


def test_every_parseable_spec_must_contradict(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"requirements.txt": "jhelm==1.5.2\n", "web/package.json":
                                  json.dumps({"dependencies": {"jhelm": "^1.3.0", "other": "latest"}})})
    assert pins(repo, "- jhelm 1.3.1 in the web part.\n- jhelm 1.2.9 nowhere.\n") == [(8, "jhelm 1.2.9")]


def test_a_spec_that_cannot_be_read_is_left_out(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"package.json": json.dumps({"dependencies": {
        "jhelm": "latest", "tool": "github:acme/tool", "lib": "file:../lib", "ws": "workspace:*"}}),
        "requirements.txt": "jhelm==1.5.2\ntool @ https://example.org/tool.whl\n"})
    assert pins(repo, "- jhelm 1.3.1.\n- tool 1.0.0 and lib 2.0.0 and ws 3.0.0.\n") == [(7, "jhelm 1.3.1")]


def test_an_unpinned_dependency_never_contradicts(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"requirements.txt": "jhelm\nother==1.0.0\n"})
    assert pins(repo, "- jhelm 1.3.1.\n- other 0.9.0.\n") == [(8, "other 0.9.0")]


def test_names_compare_as_the_package_index_does(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"requirements.txt": "Django_Environ==0.11.2\npython-dateutil==2.9.0\n"})
    assert pins(repo, "- django-environ 0.10.0 and python_dateutil 2.8.2.\n") == [
        (7, "django-environ 0.10.0"), (7, "python_dateutil 2.8.2")]


def test_python_itself_is_not_a_dependency(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.12"\nx = "1.0.0"\n'})
    assert pins(repo, "- Python 3.10 locally.\n- x 0.5.0.\n") == [(8, "x 0.5.0")]


def test_a_go_module_by_its_last_path_segment(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"go.mod": "module x\n\nrequire (\n\tgithub.com/go-chi/chi/v5 v5.0.12\n"
                                            "\tgolang.org/x/tools v0.0.0-20240101120000-0123456789ab\n)\n"})
    assert pins(repo, "- chi v5.0.8 routes.\n- tools 0.1.0.\n") == [(7, "chi v5.0.8")]


def test_build_files_in_regenerable_folders_are_not_read(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"requirements.txt": "jhelm==1.5.2\n"})
    vendored = repo / "node_modules" / "jhelm"
    vendored.mkdir(parents=True)
    (vendored / "package.json").write_text(json.dumps({"dependencies": {"jhelm": "1.3.1"}}))
    (repo / ".gitignore").write_text("")  # not even ignored: the folder itself is never build input
    assert pins(repo, "- jhelm 1.3.1.\n") == [(7, "jhelm 1.3.1")]


def test_broken_build_files_are_skipped(tmp_path: Path, sandbox: SandboxEnv) -> None:
    repo = pinned_repo(tmp_path, {"pyproject.toml": "[project\nbroken", "package.json": "{not json",
                                  "Cargo.toml": "= =", "requirements.txt": "jhelm==1.5.2\n"})
    os.mkfifo(repo / "requirements-fifo.txt")
    assert pins(repo, "- jhelm 1.3.1.\n") == [(7, "jhelm 1.3.1")]


# --- what each tool's spec means -----------------------------------------------------------

SPECS = [
    # (spec, flavour, admitted, excluded)
    (">=2.31,<3", "pep", ["2.31.0", "2.99"], ["2.30.9", "3.0.0"]),
    ("~=1.4.2", "pep", ["1.4.9"], ["1.5.0", "1.4.1"]),
    ("~=1.4", "pep", ["1.9"], ["2.0"]),
    ("==1.2.*", "pep", ["1.2.7"], ["1.3.0"]),
    ("!=1.3.0", "pep", ["1.3.0", "9"], []),  # an exclusion is read as no limit: never a contradiction
    ("^1.2.3", "npm", ["1.9.0"], ["2.0.0", "1.2.2"]),
    ("^0.2.3", "npm", ["0.2.9"], ["0.3.0"]),
    ("^0.0.3", "npm", ["0.0.3"], ["0.0.4"]),
    ("~1.2.3", "npm", ["1.2.9"], ["1.3.0"]),
    ("~1", "npm", ["1.9.9"], ["2.0.0"]),
    ("1.2", "npm", ["1.2.5"], ["1.3.0"]),
    (">=1.2.0 <2 || 3.x", "npm", ["1.5.0", "3.1.0"], ["2.5.0", "4.0.0"]),
    ("1.0.0 - 1.4", "npm", ["1.4.9"], ["1.5.0"]),
    ("*", "npm", ["0.0.1", "99"], []),
    ("1.2.3", "cargo", ["1.9.0"], ["2.0.0"]),
    ("=1.2.3", "cargo", ["1.2.3"], ["1.2.4"]),
    ("1.2.3", "poetry", ["1.2.3"], ["1.2.4"]),
    ("^1.2 || ^2.0", "poetry", ["1.5", "2.1"], ["3.0"]),
    ("~> 1.2", "ruby", ["1.9"], ["2.0"]),
    ("~> 1.2.3", "ruby", ["1.2.9"], ["1.3.0"]),
    ("[1.0,2.0)", "maven", ["1.0", "1.9.9"], ["2.0"]),
    ("(,1.0]", "maven", ["0.5", "1.0"], ["1.0.1"]),
    ("[1.2]", "maven", ["1.2.0"], ["1.2.1"]),
    ("1.+", "exact", ["1.9"], ["2.0"]),
]


@pytest.mark.parametrize(("spec", "flavour", "admitted", "excluded"), SPECS, ids=[f"{s[1]}:{s[0]}" for s in SPECS])
def test_spec_semantics(spec: str, flavour: str, admitted: list[str], excluded: list[str]) -> None:
    parsed = parse_spec(spec, flavour)
    assert parsed is not None
    for version in admitted:
        assert not memory.disjoint([exact([int(n) for n in version.split(".")])], parsed), version
    for version in excluded:
        assert memory.disjoint([exact([int(n) for n in version.split(".")])], parsed), version


@pytest.mark.parametrize("spec", ["latest", "next", "${jhelm.version}", "git+https://x", "workspace:^1"])
def test_specs_that_cannot_be_read(spec: str) -> None:
    assert parse_spec(spec, "npm") is None


def test_a_release_line_claim_is_every_version_of_the_line() -> None:
    line = [release_line([4, 1])]
    assert not memory.disjoint(line, parse_spec("==4.1.7", "pep") or [])
    assert memory.disjoint(line, parse_spec("==4.2.0", "pep") or [])
