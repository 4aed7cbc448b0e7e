"""The global packages of the home's Node installations that link into elsewhere.

`npm install -g "$d/tool"` (or `npm link` in it, `pnpm link --global`, `bun link`) installs a
folder as a link: `<prefix>/lib/node_modules/tool -> /tmp/tmp.X/tool`, and the command in
`<prefix>/bin` leads through it. With a version manager the prefix lies deep in the home
(`~/.nvm/versions/node/v20.11.0`), where the places' own links are never looked for: removing the
temp folder breaks the user's command. So the GC reads these global `node_modules` folders (and
each `@scope` in them) for links (`gc_records.OutsideNames`, `in_use`).
"""

from __future__ import annotations

import os

#: (folder of one prefix per entry, the global node_modules inside each prefix), in the home.
_PREFIXES = ((".nvm/versions/node", "lib/node_modules"),
             (".local/share/fnm/node-versions", "installation/lib/node_modules"),
             (".local/share/pnpm/global", "node_modules"))
#: Global node_modules folders of the home that are one folder.
_ONE = (".bun/install/global/node_modules", ".local/share/pnpm/node_modules", ".local/lib/node_modules",
        ".npm-packages/lib/node_modules")
#: Prefixes of one manager read at most.
_MAX_PREFIXES = 100


def node_globals(place: str) -> list[tuple[str, str]]:
    """(link, path it names or leads to) for each link in the global node_modules of the Node
    installations kept in `place` (the home), and in each `@scope` folder there."""
    from app.core.repository_rules import _MAX_NAMES, folders, links_in

    modules = [os.path.join(place, one) for one in _ONE]
    modules += [os.path.join(prefix, inner) for sub, inner in _PREFIXES
                for prefix in folders(os.path.join(place, sub))[:_MAX_PREFIXES]]
    found: list[tuple[str, str]] = []
    budget = [_MAX_NAMES]
    for folder in modules:
        for name in links_in(folder, found, budget):
            if name.startswith("@"):
                links_in(os.path.join(folder, name), found, budget)
    return found
