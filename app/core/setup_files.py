"""The set-up files of the user's places that name an output: what runs from it at a login, in
a shell, at a commit or when a tool starts, though nothing in it is unique.

Part of what outside an output needs it (app/core/repository_rules.py `outside_names`, asked by
`gc_records.OutsideNames`): a place's tool set-up files (direnv, `.env`, MCP, its Claude
settings' hooks and status line) and its git hooks (`pre-commit install` run from a temp venv
writes `INSTALL_PYTHON=$d/venv/bin/python` into `.git/hooks/pre-commit`: every commit fails once
the venv is gone); in the home, also what a shell, a login, git, ssh, pip, conda or go read at
start, and what starts programs at login, whose entries may be links into the output
(`systemctl --user link "$d/web.service"` names nothing of the folder inside the unit), and
what Claude itself starts or loads in every later session: the MCP servers `claude mcp add`
registered in `.claude.json`, the hooks and plugin marketplaces of the user's settings, the
skills, commands and agents linked into a `.claude` folder, the files a `CLAUDE.md` imports,
wherever `CLAUDE_CONFIG_DIR` put them.
"""

from __future__ import annotations

import os

from app.core.repository_rules import PATH_WORD, _names, links_in, paths_named, small_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

#: The files a login or interactive shell, git, ssh, a package or build tool, the X session,
#: tmux or an editor reads at start, in the home.
STARTUP_FILES = (".bashrc", ".bash_profile", ".bash_login", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
                 ".zprofile", ".zlogin", ".zshrc.local", ".config/fish/config.fish", ".pam_environment",
                 ".gitconfig", ".config/git/config", ".ssh/config", ".config/pip/pip.conf", ".pip/pip.conf",
                 ".condarc", ".config/go/env", ".gradle/gradle.properties", ".xprofile", ".xsessionrc",
                 ".tmux.conf", ".vimrc", ".config/nvim/init.vim", ".config/nvim/init.lua",
                 # R's library paths, kubectl's certificates, AWS's credential helpers, Maven's
                 # repository, IPython's and Julia's start-up code: each read at every start
                 ".Rprofile", ".Renviron", ".kube/config", ".aws/config", ".m2/settings.xml",
                 ".ipython/profile_default/ipython_config.py", ".julia/config/startup.jl",
                 # the MCP servers other clients start (an MCP server built for Claude Desktop) and
                 # the user's editor settings (its interpreter)
                 ".config/Claude/claude_desktop_config.json",
                 "Library/Application Support/Claude/claude_desktop_config.json", ".config/Code/User/mcp.json",
                 ".config/Code/User/settings.json", ".codeium/windsurf/mcp_config.json", ".gemini/settings.json")
#: In the home, what starts programs at login: systemd user units and their login environment,
#: podman's quadlets, desktop autostart entries, macOS's launch agents (`launchctl load`), fish's
#: snippets.
STARTUP_FOLDERS = (".config/systemd/user", ".config/environment.d", ".config/containers/systemd",
                   ".config/autostart", "Library/LaunchAgents", ".config/fish/conf.d",
                   # the snippets Fedora's `.bashrc` and oh-my-zsh source at every shell's start
                   ".bashrc.d", ".oh-my-zsh/custom")
#: In the home, the user's own commands: a script there may run from anywhere (pip writes a
#: console script's venv python as its `#!` line; a wrapper `exec`s a tool built elsewhere).
_SCRIPTS = (".local/bin", "bin")
#: The files of a project (and of the home) that set up its tools: direnv, environment, MCP
#: (Claude's, Cursor's, VS Code's).
PROJECT_FILES = (".envrc", ".env", ".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json")
#: Beside `.env`, the environment files of a mode or of this machine (`.env.local`,
#: `.env.development`: Next.js, Vite, dotenv-flow), read at most this many per place.
_MAX_ENV_FILES = 20
#: The keys of Claude's settings whose commands or paths Claude runs or reads at every start:
#: its hooks and status line, the helpers that give it its keys, the environment it starts with,
#: the plugin marketplaces it loads (a `directory` source: `/plugin marketplace add "$d"`).
_RUN_BY_CLAUDE = ("hooks", "statusLine", "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport",
                  "otelHeadersHelper", "env", "extraKnownMarketplaces")
#: The folders of a `.claude` (a place's, and Claude's config folder) whose entries Claude loads
#: in every session: a skill, command, agent or output style linked there from a temp folder
#: (`ln -s "$d/my-skill" ~/.claude/skills/`) is read from it at every start.
_CLAUDE_FOLDERS = ("skills", "commands", "agents", "output-styles")
#: Entries of one folder of set-up files read at most.
_MAX_ENTRIES = 200


def startup_paths(place: str, found: list[tuple[str, str]], *, home: bool) -> None:
    """The absolute paths a place's tool set-up files name (`PROJECT_FILES`, its git hooks; in
    the home, its `STARTUP_FILES` and `STARTUP_FOLDERS` too, and where a link among the latter
    leads, the scripts of its `_SCRIPTS` folders, the user's Claude settings in Claude's config
    folder and the MCP servers `.claude.json` registers) and what its Claude settings run
    (`_RUN_BY_CLAUDE`): `PATH=/tmp/x/bin:$PATH` in `~/.bashrc`, `DATA_DIR=/tmp/x/data` in `.env`,
    `ExecStart=/tmp/x/server` in a user unit, a hook running `/tmp/x/check.sh`. (A settings
    file's `additionalDirectories` is no such use: it keeps nothing once its sessions end.)"""
    import json
    import re

    word = re.compile(PATH_WORD)
    found += paths_named(_set_up_files(place, found, home=home), word)
    found += paths_named(_memory_files(place, home=home), re.compile(f"@({PATH_WORD})"))
    for folder in (os.path.join(place, f) for f in _SCRIPTS if home):
        for script in (os.path.join(folder, n) for n in _names(folder)[:_MAX_ENTRIES]):
            text = "" if os.path.islink(script) else small_text(script, 1 << 16)  # a link: `links_in`
            found += _said(script, text, word) if text[:2] == "#!" else []
    settings = [os.path.join(place, ".claude", name) for name in ("settings.json", "settings.local.json")]
    for file in [*settings, *(_users_settings() if home else ())]:
        try:
            data = json.loads(small_text(file) or "null")
        except (ValueError, RecursionError):
            continue
        commands = json.dumps([data.get(key) for key in _RUN_BY_CLAUDE], ensure_ascii=False) if isinstance(
            data, dict) else ""
        found += _said(file, commands, word)
    if home:
        file, servers = _mcp_servers()
        found += _said(file, json.dumps(servers, ensure_ascii=False), word)


def _set_up_files(place: str, found: list[tuple[str, str]], *, home: bool) -> list[str]:
    """The set-up files of a place to read for paths; where a link among the home's
    `STARTUP_FOLDERS` leads goes into `found` (a unit `systemctl --user link` made)."""
    files = [os.path.join(place, name) for name in (*PROJECT_FILES, *(STARTUP_FILES if home else ()))]
    files += [os.path.join(place, n) for n in sorted(n for n in _names(place) if n.startswith(".env."))[:_MAX_ENV_FILES]]
    hooks = os.path.join(place, ".git", "hooks")  # a git hook runs at every commit, checkout, push
    files += [os.path.join(hooks, n) for n in _names(hooks)[:_MAX_ENTRIES] if not n.endswith(".sample")]
    budget = [_MAX_ENTRIES * len(STARTUP_FOLDERS)]
    for folder in (os.path.join(place, f) for f in STARTUP_FOLDERS if home):
        names = _names(folder)[:_MAX_ENTRIES]
        files += [os.path.join(folder, name) for name in names]
        # a unit's drop-ins: `systemctl --user edit web` writes `web.service.d/override.conf`
        files += [os.path.join(folder, d, name) for d in names if d.endswith(".d")
                  for name in _names(os.path.join(folder, d))[:_MAX_ENTRIES]]
        links_in(folder, found, budget)
    claude = [os.path.join(place, ".claude"), *(_config_dir() if home else ())]
    budget = [_MAX_ENTRIES * len(_CLAUDE_FOLDERS) * len(claude)]
    for folder in (os.path.join(c, f) for c in dict.fromkeys(claude) for f in _CLAUDE_FOLDERS):
        links_in(folder, found, budget)
    # the marketplaces Claude registered (`claude plugin marketplace add "$d"`), each read at start
    files += [os.path.join(c, "plugins", "known_marketplaces.json") for c in claude[1:]]
    return files


#: The memory files Claude loads into every session of a place (and, from its config folder, of
#: every place); an `@/abs/path` line there imports that file too.
_MEMORY_FILES = ("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md")


def _memory_files(place: str, *, home: bool) -> list[str]:
    """The memory files of a place (and of Claude's config folder) whose `@` imports Claude
    follows at every start: `@/tmp/x/guide.md` written there reads the guide from the output."""
    files = [os.path.join(place, name) for name in _MEMORY_FILES]
    return files + [os.path.join(folder, "CLAUDE.md") for folder in _config_dir() if home]


def _said(file: str, text: str, word: re.Pattern[str]) -> list[tuple[str, str]]:
    """(file, path) for each absolute path in `text`, as written (normalised) and real."""
    return [(file, spelled) for match in word.finditer(text)
            for spelled in (os.path.normpath(match.group()), os.path.realpath(match.group()))]


def _users_settings() -> list[str]:
    """The user's Claude settings in Claude's config folder, wherever `CLAUDE_CONFIG_DIR` put it
    (`~/.claude` is read as a folder of the home already)."""
    return [os.path.join(folder, "settings.json") for folder in _config_dir()]


def _config_dir() -> list[str]:
    """Claude's config folder, wherever `CLAUDE_CONFIG_DIR` put it."""
    from app.core import paths

    return [paths.config_dir_str()]


def _mcp_servers() -> tuple[str, list[object]]:
    """`.claude.json` and the MCP servers it registers: the user's (`mcpServers`) and each
    project's (`projects[<path>].mcpServers`, what `claude mcp add` writes by default). Claude
    starts each from its `command`, `args`, `env` and `cwd` in every later session."""
    from app.core import paths
    from app.core.settings import read_settings

    file = os.fspath(paths.claude_json())
    try:  # bounded as Claude's own read (it keeps a history per project)
        data = read_settings(paths.claude_json(), limit=1 << 30)
    except (OSError, ValueError, RecursionError):
        return file, []
    if not isinstance(data, dict):
        return file, []
    projects = data.get("projects")
    servers = [data.get("mcpServers")]
    servers += [p.get("mcpServers") for p in projects.values() if isinstance(p, dict)] if isinstance(
        projects, dict) else []
    return file, [s for s in servers if isinstance(s, dict)]
