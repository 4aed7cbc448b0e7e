"""Red team, round eleven: memory hygiene (seed 003) and the edit ledger (seed 000), both ways.

Misses: a pin the build states only in a Gradle version catalog, a Pipfile, composer.json or
setup.cfg, or that memory keeps in a table row; a `::`-scoped symbol renamed away; a write
into memory named `~/…`. False findings and refusals: the next migration named by its file
(not made yet, so not "vanished"), a relative-date word inside an address. Losses that held
are kept as tests too: a supersede through a symlinked memory file with tabs and a very long
line keeps every other byte, a ledger file replaced by a FIFO or grown into a 2 GB sparse
file is told once, within the hook's budget.

The sweep's checks run in-process on one repository shared by the module (read only);
hooks run as Claude runs them only where the hook's own path handling is the point."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from app.core import ledger
from app.core.memory import (
    IndexRefused,
    SupersedeRefused,
    add_to_index,
    check_texts,
    supersede,
    sweep,
)
from app.core.memory_lint import frontmatter_problems, relative_dates
from tests.core.test_memory import FRONT, memory_folder, write_memory
from tests.support import SandboxEnv, git, make_repo, run_hook

CATALOG = """[versions]
java = "17"
okhttp = "4.12.0"
ktor = { strictly = "2.3.7" }
[libraries]
okhttp = { module = "com.squareup.okhttp3:okhttp", version.ref = "okhttp" }
ktor-core = { module = "io.ktor:ktor-server-core", version.ref = "ktor" }
guava = "com.google.guava:guava:33.0.0-jre"
retrofit = { group = "com.squareup.retrofit2", name = "retrofit", version = "2.11.0" }
"""
TREE = {
    "build.gradle.kts": 'dependencies {\n    implementation("org.jhelm:jhelm:1.5.2")\n    implementation(libs.okhttp)\n}\n',
    "gradle/libs.versions.toml": CATALOG,
    "Pipfile": '[packages]\nrequests = "==2.31.0"\nflask = {version = ">=3.0", extras = ["async"]}\n',
    "composer.json": json.dumps({"require": {"php": ">=8.1", "monolog/monolog": "^3.5",
                                             "guzzlehttp/guzzle": "~7.8"}}),
    "setup.cfg": "[metadata]\nname = app\n\n[options]\ninstall_requires =\n    click==8.1.7\n    attrs>=23\n",
    "web/package.json": json.dumps({"dependencies": {"react": "18.2.0", "zod": "catalog:", "vue": "3.4.21"},
                                    "devDependencies": {"typescript": "^5.6.2"}}),
    "pnpm-workspace.yaml": "packages:\n  - 'web'\ncatalog:\n  zod: 3.22.4\ncatalogs:\n  legacy:\n    '@types/node': ^20.11.0\n",
    "legacy/build.gradle": ("ext {\n    slf4jVersion = '2.0.12'\n}\ndef langVersion = \"3.14.0\"\ndependencies {\n"
                            "    implementation \"org.slf4j:slf4j-api:$slf4jVersion\"\n"
                            "    implementation group: 'org.apache.commons', name: 'commons-lang3', version: \"${langVersion}\"\n"
                            "    implementation group: 'commons-io', name: 'commons-io', version: '2.15.1'\n}\n"),
    "legacy/pom.xml": ("<project><build><plugins><plugin><groupId>org.apache.maven.plugins</groupId>"
                       "<artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>"
                       "</plugins></build></project>\n"),
    "svc/pom.xml": ("<project><dependencies><dependency><groupId>org.yaml</groupId><artifactId>snakeyaml</artifactId>"
                    "<version>2.2</version><exclusions><exclusion><groupId>commons-logging</groupId>"
                    "<artifactId>commons-logging</artifactId></exclusion></exclusions></dependency></dependencies>"
                    "<build><plugins><plugin><artifactId>maven-compiler-plugin</artifactId><version>3.11.0</version>"
                    "<dependencies><dependency><groupId>org.projectlombok</groupId><artifactId>lombok</artifactId>"
                    "<version>1.18.30</version></dependency></dependencies></plugin></plugins></build></project>\n"),
    "requirements/base.txt": "django==4.2.11\n",
    "requirements/README.txt": "Django 3.2.25 was the version before the upgrade.\n",
    "test-requirements.txt": "pytest==8.1.1\n",
    "tools/pyproject.toml": ('[project]\nname = "tools"\n[tool.uv]\ndev-dependencies = ["ruff==0.4.0"]\n'
                             '[tool.pdm.dev-dependencies]\nlint = ["mypy==1.10.0"]\n'),
    "infra/package.json": json.dumps({"dependencies": {"redis": "^4.6.0", "mongodb": "^6.3.0"}}),
    "infra/requirements.txt": "kubernetes==29.0.0\ndocker==7.0.0\n",
    "src/router.rs": "pub struct Router;\nimpl Router {\n    pub fn new() -> Self { Router }\n}\n",
    "db/migration/V27__add_users.sql": "create table users ();\n",
    "shop/migrations/0012_add_users.py": "# migration\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One repository for every sweep of the module: the checks only read it."""
    return str(make_repo(tmp_path_factory.mktemp("r11") / "app", files=TREE))


def findings(tree: str, body: str) -> dict[int, list[tuple[str, str]]]:
    """line -> [(kind, token)] for one topic file holding FRONT and then `body`."""
    found: dict[int, list[tuple[str, str]]] = {}
    for f in check_texts({"facts.md": FRONT + body}, tree, ""):
        found.setdefault((f.line or 0) - FRONT.count("\n"), []).append((f.kind, f.token))
    return found


# --- misses: pins the build states outside the first set of build files ----------------------


def test_a_pin_only_a_version_catalog_pipfile_composer_or_setup_cfg_states_goes_stale(tree: str) -> None:
    body = ("- okhttp 3.14.9 is the http client.\n"          # catalog, by version.ref
            "- ktor 1.6.8 serves the API.\n"                  # catalog [versions] key, a rich version
            "- guava 31.1 for collections.\n"                 # catalog string form
            "- retrofit 2.9.0 calls the backend.\n"           # catalog group + name
            "- requests 2.28.0 is the client.\n"              # Pipfile
            "- flask 2.3.3 serves pages.\n"                   # Pipfile table form
            "- monolog 2.9.1 logs.\n"                         # composer, by its package's last segment
            "- guzzle 6.5.8 is the PHP client.\n"             # composer `~7.8` is >=7.8,<8
            "- click 7.1.2 parses the CLI.\n")                # setup.cfg install_requires
    got = findings(tree, body)
    assert sorted(got) == list(range(1, 10)), got
    assert all(kinds == [("stale_version_pin", kinds[0][1])] for kinds in got.values())
    assert got[1] == [("stale_version_pin", "okhttp 3.14.9")]


def test_a_pin_a_manifest_agrees_with_or_that_names_the_runtime_stays_silent(tree: str) -> None:
    body = ("- okhttp 4.12.0 is the http client.\n"
            "- ktor 2.3.7 serves the API.\n"
            "- monolog 3.6.0 logs.\n"
            "- guzzle 7.9.2 is the PHP client.\n"
            "- php 7.4 runs it.\n"                            # the runtime, as python is for pip
            "- Java 17.0.9 builds it.\n"                      # the catalog's `java = "17"` is a level
            "- attrs 23.2.0 for classes.\n"
            "- Kotlin 4.1.x for the DSL.\n")
    assert findings(tree, body) == {}


def test_a_pin_in_a_table_row_goes_stale_and_a_row_of_two_versions_is_silent(tree: str) -> None:
    body = ("| dependency | version |\n"
            "|---|---|\n"
            "| jhelm | 1.3.1 |\n"
            "| react | 18.2.0 |\n"
            "| jhelm | 1.3.1 | 1.5.2 |\n")                    # a row of a change: from, to
    assert findings(tree, body) == {3: [("stale_version_pin", "jhelm 1.3.1")]}
    # the token is the claim as written, without an opening parenthesis left unbalanced
    assert findings(tree, "- jhelm (1.3.1) renders the charts.\n") == {1: [("stale_version_pin", "jhelm 1.3.1")]}


def test_a_version_kept_in_a_gradle_variable_a_map_a_maven_plugin_or_a_pnpm_catalog_is_the_builds(tree: str) -> None:
    body = ("- slf4j-api 1.7.36 logs.\n"                      # "org.slf4j:slf4j-api:$slf4jVersion"
            "- commons-lang3 3.12.0 for strings.\n"           # map notation, version: "${langVersion}"
            "- commons-io 2.11.0 for files.\n"                # map notation
            "- maven-surefire-plugin 2.22.2 runs the tests.\n"
            "- zod 3.20.0 validates input.\n"                 # "zod": "catalog:" -> pnpm-workspace.yaml
            "- @types/node 18.19.0 types.\n"                  # a named catalog
            "- slf4j-api 2.0.12 logs.\n"                      # what the build says: silent
            "- zod 3.22.4 validates input.\n")
    got = findings(tree, body)
    assert sorted(got) == [1, 2, 3, 4, 5, 6], got
    assert got[5] == [("stale_version_pin", "zod 3.20.0")]


def test_a_pom_dependency_with_exclusions_keeps_its_own_name_and_version(tree: str) -> None:
    """An exclusion's artifactId was paired with the dependency's version: the dependency was
    never checked, and the excluded artifact got a version it does not have."""
    body = ("- snakeyaml 1.33 parses the config.\n"
            "- commons-logging 1.2 logs.\n"                   # excluded: the build gives it no version
            "- lombok 1.18.30 makes the getters.\n"           # a plugin's own dependency, as the build has it
            "- maven-compiler-plugin 3.8.1 compiles.\n")
    assert findings(tree, body) == {1: [("stale_version_pin", "snakeyaml 1.33")],
                                    4: [("stale_version_pin", "maven-compiler-plugin 3.8.1")]}


def test_requirements_as_projects_lay_them_out_and_uv_and_pdm_dev_groups_are_read(tree: str) -> None:
    body = ("- django 3.2.25 serves the shop.\n"             # requirements/base.txt
            "- pytest 7.4.4 runs the tests.\n"               # test-requirements.txt
            "- ruff 0.3.0 lints.\n"                          # [tool.uv] dev-dependencies
            "- mypy 1.8.0 checks types.\n"                   # [tool.pdm.dev-dependencies]
            "- django 4.2.11 serves the shop.\n")            # as the build says (the README is no build file)
    assert findings(tree, body) == {1: [("stale_version_pin", "django 3.2.25")],
                                    2: [("stale_version_pin", "pytest 7.4.4")],
                                    3: [("stale_version_pin", "ruff 0.3.0")],
                                    4: [("stale_version_pin", "mypy 1.8.0")]}


def test_a_servers_version_is_no_pin_of_its_client_package_unless_the_line_says_client(tree: str) -> None:
    """"Redis 7.2" is the server the project runs; the build's `redis ^4.6.0` is the client."""
    body = ("- We run Redis 7.2 in docker-compose.\n"
            "- MongoDB 7.0 is the database.\n"
            "- The cluster runs Kubernetes 1.28.\n"
            "- CI runners use Docker 24.0.7.\n"
            "- The redis 4.5.0 client talks to it.\n"          # the client: a pin
            "- mongodb 5.9.2 driver.\n"
            "- kubernetes 28.1.0 Python package drives the cluster.\n")
    assert findings(tree, body) == {5: [("stale_version_pin", "redis 4.5.0")],
                                    6: [("stale_version_pin", "mongodb 5.9.2")],
                                    7: [("stale_version_pin", "kubernetes 28.1.0")]}


def test_bold_names_a_plus_between_names_and_a_colon_in_code_read_as_written(tree: str) -> None:
    body = ("- **TypeScript** 5.3 compiles the web app.\n"    # bold, as Claude writes a stack
            "- Vue 3.3 + Vite for the admin.\n"             # `3.3 + Vite`: a list, not 3.3 or later
            "- Vue 3.4+ for the admin.\n"                   # `3.4+`: or later, the build's 3.4.21 in it
            "- `typescript`: `5.3.3`\n")
    assert findings(tree, body) == {1: [("stale_version_pin", "TypeScript 5.3")],
                                    2: [("stale_version_pin", "Vue 3.3")],
                                    4: [("stale_version_pin", "typescript: 5.3.3")]}


# --- misses and false findings of vanished artifacts -----------------------------------------


def test_a_scoped_symbol_renamed_away_is_vanished_and_one_still_there_is_not(tree: str) -> None:
    body = ("- The router is `crate::router::LegacyRouter`.\n"
            "- Build it with `LegacyRouter::new()`.\n"
            "- Build it with `Router::new()`.\n"
            "- The service listens on `localhost:8080`.\n")
    assert findings(tree, body) == {1: [("vanished_artifact", "crate::router::LegacyRouter")],
                                    2: [("vanished_artifact", "LegacyRouter::new()")]}


def test_the_next_migration_named_by_its_file_is_no_vanished_artifact(tree: str) -> None:
    body = ("- The next migration is `V28__add_orders.sql`.\n"
            "- Next migration: `db/migration/V28__add_orders.sql`\n"
            "- The next shop migration is `0013_add_orders.py`.\n"
            "- The latest migration is `V27__add_users.sql`.\n"
            "- The latest migration is `V26__add_carts.sql`.\n"   # named as there, and it is gone
            "- Next step: edit `src/old_router.rs`.\n")
    assert findings(tree, body) == {5: [("vanished_artifact", "V26__add_carts.sql"), ("stale_sequence", "V26")],
                                    6: [("vanished_artifact", "src/old_router.rs")]}


def test_a_path_written_from_the_main_checkouts_root_is_judged_from_a_worktree_too(tmp_path: Path) -> None:
    """Claude writes absolute paths into memory from the main checkout; a session in a
    worktree (`claude --worktree`) reads the same memory. The worktree skipped such a path
    (rooted outside it) and kept only findings the main checkout also had: it was lost."""
    repo = make_repo(tmp_path / "app", files={"src/router.py": "class Router:\n    pass\n"})
    worktree = repo / ".claude" / "worktrees" / "w"
    git(repo, "worktree", "add", "-q", "-b", "w", str(worktree))
    write_memory(repo, {"notes.md": f"- The router is `{repo}/src/legacy_router.py`.\n"
                                            f"- The router class is `{repo}/src/router.py`.\n"
                                            f"- `LegacyRouter` lives in `{repo}/src/router.py`.\n"})
    first = FRONT.count("\n") + 1
    for where in (repo, worktree):
        assert [(f.line, f.kind, f.token) for f in sweep(str(where), remember=False)] == [
            (first, "vanished_artifact", f"{repo}/src/legacy_router.py"),
            (first + 2, "vanished_artifact", "LegacyRouter")]
    assert {f.project for f in sweep(str(worktree), remember=False)} == {str(worktree)}


# --- the write lint ---------------------------------------------------------------------------


def pre_tool(payload_input: dict[str, str], cwd: Path) -> str | None:
    done = run_hook({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": str(cwd),
                     "transcript_path": "/t", "tool_name": "Write", "tool_use_id": "t",
                     "tool_input": payload_input})
    assert done.returncode == 0 and not done.stderr, done.stderr
    if not done.stdout:
        return None
    return json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_write_into_memory_named_from_the_home_is_linted(sandbox: SandboxEnv, tmp_path: Path) -> None:
    folder = memory_folder(tmp_path)
    spelled = "~/" + os.path.relpath(folder, sandbox.home) + "/notes.md"
    reason = pre_tool({"file_path": spelled, "content": "We moved the API yesterday.\n"}, tmp_path)
    assert reason is not None and "there is no frontmatter" in reason and '"yesterday"' in reason
    (sandbox.home / "notes").symlink_to(folder)  # a link from the home into memory
    reason = pre_tool({"file_path": "~/notes/deploy.md", "content": "We moved the API yesterday.\n"}, tmp_path)
    assert reason is not None and "there is no frontmatter" in reason
    assert pre_tool({"file_path": "~/notes.md", "content": "yesterday\n"}, tmp_path) is None


def test_a_relative_date_word_inside_an_address_is_no_relative_date() -> None:
    assert relative_dates("- Errors: https://grafana.example.com/d/today-errors?from=yesterday") == []
    assert relative_dates("- Standup notes: [notes](standup-today.md), see www.example.com/today") == []
    assert relative_dates("- [Today's errors](https://grafana.example.com/d/x) moved yesterday") == [
        "Today", "yesterday"]


def test_frontmatter_nulls_are_empty_and_a_comment_after_metadata_keeps_the_nested_type() -> None:
    assert frontmatter_problems("---\nname: # TODO\ndescription: ~\nmetadata:\n  type: project\n---\n") == [
        "`name:` is missing or empty", "`description:` is missing or empty"]
    assert frontmatter_problems("---\nname: deploy\ndescription: null\ntype: project\n---\n") == [
        "`description:` is missing or empty"]
    # `metadata:  # Claude's own keys` opens the nested block; its type is there
    assert frontmatter_problems("---\nname: deploy\ndescription: how we ship\nmetadata:  # nested\n"
                                "  type: project\n---\n") == []
    assert frontmatter_problems('---\nname: "#1 rule"\ndescription: the first rule\ntype: feedback\n---\n') == []


def test_vague_past_phrases_are_relative_dates() -> None:
    assert relative_dates("We fixed it a while ago; some time ago the API moved, not long ago.") == [
        "a while ago", "some time ago", "not long ago"]
    assert relative_dates("The job waits a while and retries; it took some time.") == []


# --- supersede: what held, and a refusal of one readable line ---------------------------------


def test_a_supersede_through_a_symlinked_file_keeps_the_link_and_every_other_byte(tmp_path: Path) -> None:
    folder = memory_folder(tmp_path)
    (folder / "real").mkdir()
    long_line = b"- " + b"x" * 70_000 + b"\n"
    body = (FRONT.encode() + b"\tThe router is `src/legacy_router.py`.\r\n" + long_line + b"- dup\n- dup\n"
            + b"\tno final newline")
    (folder / "real" / "b.md").write_bytes(body)
    (folder / "a.md").symlink_to("real/b.md")
    line = FRONT.count("\n") + 1
    done = supersede(str(folder / "a.md"), line, "The router is `src/router.py`.", today="2026-12-01")
    assert os.readlink(folder / "a.md") == "real/b.md"
    after = (folder / "real" / "b.md").read_bytes()
    assert after == body.replace(b"\tThe router is `src/legacy_router.py`.\r\n",
                                 b"\t~~The router is `src/legacy_router.py`.~~\r\n"
                                 b"\tCorrection (2026-12-01): The router is `src/router.py`.\r\n")
    assert done.correction_line == line + 1


def test_a_refusal_quotes_a_very_long_line_cut_to_one_readable_line(tmp_path: Path) -> None:
    folder = memory_folder(tmp_path)
    path = folder / "long.md"
    path.write_text(FRONT + "- " + "y" * 70_000 + "\n")
    with pytest.raises(SupersedeRefused) as refused:
        supersede(str(path), FRONT.count("\n") + 1, "fixed", expect="- something else")
    message = str(refused.value)
    assert len(message) < 1000 and "\n" not in message and "\u2026" in message
    assert path.read_text() == FRONT + "- " + "y" * 70_000 + "\n"


@pytest.mark.parametrize("tail", ["```\nexample\n", "<!-- old pointers\n- [Old](old.md)\n"])
def test_an_index_ending_inside_an_open_code_block_or_comment_gets_no_line_that_lists_nothing(
        tmp_path: Path, tail: str) -> None:
    """The line went in after the open block: code (or a note), no pointer, and the sweep went
    on calling the topic unlisted (a second `i` would add it again)."""
    repo = make_repo(tmp_path / "app")
    folder = memory_folder(repo)
    index = folder / "MEMORY.md"
    raw = ("# Memory\n- [Notes](notes.md) — project notes\n\n" + tail).encode()
    index.write_bytes(raw)
    (folder / "notes.md").write_text(FRONT + "- hi\n")
    (folder / "deploy.md").write_text(FRONT.replace("name: notes", "name: deploy") + "- ship\n")
    with pytest.raises(IndexRefused, match="would not list deploy.md"):
        add_to_index(str(folder / "deploy.md"))
    assert index.read_bytes() == raw
    index.write_bytes(raw + (b"```\n" if tail.startswith("`") else b"-->\n"))
    add_to_index(str(folder / "deploy.md"))
    assert [f.token for f in sweep(str(repo), remember=False) if f.kind == "index_unlisted_file"] == []


def test_a_topic_listed_only_past_what_claude_loads_is_invisible_to_recall(tmp_path: Path) -> None:
    """Claude loads the first 200 lines (or 25 KB) of MEMORY.md: a pointer below that is
    never recalled, the very thing index drift is about. The index writer will not add a
    second line for it (that one would be further down still): it says to move it up."""
    repo = make_repo(tmp_path / "app")
    filler = {f"t{i}.md": "- note\n" for i in range(198)}
    index = "# Memory\n" + "".join(f"- [T{i}](t{i}.md) — note {i}\n" for i in range(198))
    folder = write_memory(repo, {**filler, "late.md": "- late\n", "early.md": "- early\n",
                                 "MEMORY.md": index + "- [Late](late.md) — past the cap\n- see early.md\n"})
    (folder / "MEMORY.md").write_text("- [Early](early.md)\n" + (folder / "MEMORY.md").read_text())
    unlisted = [(f.token, f.message) for f in sweep(str(repo), remember=False) if f.kind == "index_unlisted_file"]
    assert unlisted == [("late.md", "`late.md` is invisible to recall: MEMORY.md lists it only at line 201, past the "
                                    "first 200 lines Claude loads (at most 200 lines, 25 KB); move that line up")]
    with pytest.raises(IndexRefused, match="already lists late.md at line 201, past what Claude loads"):
        add_to_index(str(folder / "late.md"))
    # 25 KB come before 200 lines when the lines are long
    (folder / "MEMORY.md").write_text("".join(f"- [T{i}](t{i}.md) — {'x' * 300}\n" for i in range(100))
                                      + "- [Late](late.md)\n- [Early](early.md)\n")
    late = {f.token for f in sweep(str(repo), remember=False) if f.kind == "index_unlisted_file"}
    assert {"early.md", "late.md", "t99.md"} <= late and "t70.md" not in late


def test_an_index_link_written_from_the_home_points_at_its_file(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """`[Deploy](~/.claude/projects/<slug>/memory/deploy.md)` was joined to the memory folder
    as it is: a false `index_missing_file`, and the file it lists called unlisted."""
    repo = make_repo(tmp_path / "app")
    folder = memory_folder(repo)
    home_path = "~/" + os.path.relpath(folder / "deploy.md", sandbox.home)
    write_memory(repo, {"deploy.md": "- ship on Fridays\n", "MEMORY.md": f"- [Deploy]({home_path}) — how we ship\n"})
    assert [(f.kind, f.token) for f in sweep(str(repo), remember=False)] == []
    (folder / "deploy.md").unlink()
    assert [(f.kind, f.token) for f in sweep(str(repo), remember=False)] == [("index_missing_file", home_path)]


# --- the ledger: a FIFO and a 2 GB sparse file in place of edited files (held) ----------------


def test_a_file_replaced_by_a_fifo_or_grown_sparse_to_2_gb_is_told_once_and_fast(tmp_path: Path) -> None:
    fifo_file, sparse_file = tmp_path / "fifo.txt", tmp_path / "sparse.txt"
    for path in (fifo_file, sparse_file):
        path.write_text("edited\n")
        assert ledger.record_edit({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Write",
                                   "cwd": str(tmp_path), "tool_input": {"file_path": str(path), "content": "x"},
                                   "tool_response": {"type": "create"}})
    fifo_file.unlink()
    os.mkfifo(fifo_file)  # nobody writes to it: a read would hang the hook
    os.truncate(sparse_file, 2 * 1024 ** 3)
    prompt = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(tmp_path), "prompt": "go on"}
    started = time.monotonic()
    first = run_hook(prompt, timeout=20)
    assert time.monotonic() - started < 10
    told = json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"].split("\n")
    assert sorted(told) == sorted(f"The user or a tool changed `{p}` after the last edit of `main`."
                                  for p in (fifo_file, sparse_file))
    assert run_hook(prompt).stdout == b""


def test_a_file_or_its_folder_made_a_symlink_loop_is_told_once_as_gone(tmp_path: Path) -> None:
    """A loop was read as "cannot read": never told, and logged again at every prompt."""
    (tmp_path / "sub").mkdir()
    loop, inside = tmp_path / "loop.txt", tmp_path / "sub" / "x.txt"
    for path in (loop, inside):
        path.write_text("edited\n")
        assert ledger.record_edit({"session_id": "s1", "tool_name": "Edit", "cwd": str(tmp_path),
                                   "tool_input": {"file_path": str(path)}, "tool_response": {}})
    loop.unlink()
    loop.symlink_to("loop.txt")
    (tmp_path / "sub" / "x.txt").unlink()
    (tmp_path / "sub").rmdir()
    (tmp_path / "sub").symlink_to("sub")
    assert sorted(ledger.check_session("s1")) == sorted(
        f"The user or a tool changed `{p}` after the last edit of `main`." for p in (loop, inside))
    assert ledger.check_session("s1") == []
    assert {(f.path, f.changed, f.deleted) for f in ledger.ledger_files()} == {(str(loop), True, True),
                                                                              (str(inside), True, True)}
