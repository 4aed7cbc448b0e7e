"""What each screen of the dashboard shows in every state, added to a built sandbox through
the core's own functions (never by writing claudetto's state files by hand):

- checkouts: `live-task` active and held by a live session, `bold-oak-a3f2` active with its
  session gone (releasable: node_modules to delete, `.tmp/` to keep), `calm-river-7c1d`
  released for real, `quiet-fern-2b9e` whose release was cut short; the rest unmanaged;
- the journal: removals on several of the last days, for the Overview's chart;
- the ledger: a file changed after the edit (untold), one changed and already told, one
  deleted, one unchanged;
- memory rot of every kind (the files are written by build.py, the tree's side here);
- a live session whose task output grows while the demo runs (the Overview's sparkline).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.sandbox import build as sandbox

if TYPE_CHECKING:
    from app.sandbox.build import _Builder

#: A live session's stand-in process: it lives while its parent does, and appends to the
#: file named in argv[1] (when it exists) every 2 s, up to argv[2] bytes: an output that grows.
CHILD = """import os, sys, time
parent = os.getppid()
grow, cap = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 2 else (None, 0)
block = bytes(range(256)) * 1024
while os.getppid() == parent:
    time.sleep(2)
    try:
        if grow and os.path.getsize(grow) < cap:
            with open(grow, "ab") as fh:
                fh.write(block)
    except OSError:
        pass
"""


def growing_output(builder: _Builder, session: str) -> list[str]:
    """The arguments of CHILD for `session`: LIVE_BUSY's task output grows to 64 MiB (scaled)."""
    if session != sandbox.LIVE_BUSY:
        return []
    from app.core.paths import project_slug

    output = builder.box.claude_tmp / project_slug(builder.box.project) / sandbox.LIVE_BUSY / "tasks" / "b1.output"
    return [str(output), str(int(64 * sandbox.MIB * builder.scale))]


def repository_files(builder: _Builder, repo: Path) -> None:
    """What the memory rot is checked against: a pinned dependency and a migration series."""
    builder.file(repo / "pyproject.toml", text='[project]\nname = "webshop"\nversion = "1.0.0"\n'
                                               'dependencies = ["flask>=3.0"]\n')
    for name in ("0001_init.sql", "0002_orders.sql", "0003_refunds.sql"):
        builder.file(repo / "db" / "migrations" / name, text=f"-- {name}\n")


def memory_files(builder: _Builder, memory: Path) -> None:
    """Memory with every kind of rot: a vanished artifact, a stale version pin, a stale
    migration fact, an index line to a file that is gone, a topic file no index line names."""
    builder.file(memory / "MEMORY.md", text="- [Build](build.md) — how the shop builds\n"
                                            "- [Deploy](deploy.md) — the deploy steps\n"
                                            "- [Stack](stack.md) — what the shop runs on\n")
    builder.file(memory / "build.md", text="---\nname: Build\ndescription: how the shop builds\n"
                                           "metadata:\n  type: project\n---\n"
                                           "The router lives in `src/legacy_router.py`.\n"
                                           "Tests run with `make test`.\n")
    builder.file(memory / "stack.md", text="---\nname: Stack\ndescription: what the shop runs on\n"
                                           "type: project\n---\n"
                                           "The shop runs on Flask 2.2.5.\n"
                                           "The latest migration is 0002_orders in db/migrations.\n")
    builder.file(memory / "old-notes.md", text="---\nname: Old notes\ndescription: unlisted\n"
                                               "type: reference\n---\nNothing indexes this file.\n")


def checkouts(builder: _Builder) -> None:
    """Session checkouts in every state, made and released by the core."""
    from app.core import checkouts as registry
    from app.core.release import CUT_SHORT, release_checkout

    repo = builder.box.project
    trees = repo / ".claude" / "worktrees"
    live = registry.Checkout(str(trees / "live-task"), str(repo), "live-task", "worktree-live-task", "session")
    registry.register(live, sandbox.LIVE_BUSY)
    made = {}
    for name, session in (("bold-oak-a3f2", sandbox.OLD_GONE), ("calm-river-7c1d", sandbox.YOUNG_GONE), ("quiet-fern-2b9e", sandbox.OLD_GONE)):
        made[name] = registry.create_checkout(str(repo), name, session)
        path = Path(made[name].path)
        builder.file(path / "node_modules" / "react" / "index.js", 2 * sandbox.MIB)
        builder.file(path / ".tmp" / "notes.md", text=f"what {name} was doing\n")
    release_checkout(made["calm-river-7c1d"].path)
    cut = made["quiet-fern-2b9e"].path

    def cut_short(records: dict[str, Any]) -> None:
        records[cut]["state"] = "cut_short"
        records[cut]["cut_short"] = {"time": builder.box.now - 3600, "pid": sandbox.STALE_PID, "proc_start": "1",
                                     "session": sandbox.OLD_GONE, "failure": CUT_SHORT, "planned": ["node_modules"]}

    registry.edit_registry(cut_short)


def journal(builder: _Builder) -> None:
    """Removals on several of the last twelve days (UTC dates), as the GC journals them."""
    from app.core.journal import append

    for days, size, kind in ((1, 120, "temp"), (2, 40, "worktree"), (4, 310, "session_folder"), (5, 16, "copy"),
                             (8, 64, "temp"), (9, 900, "worktree"), (12, 75, "session_folder")):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(builder.box.now - days * sandbox.DAY))
        append({"time": stamp, "path": str(builder.box.user_tmp / f"tmp.gone{days:02d}"), "kind": kind,
                "bytes": size * sandbox.MIB, "rule": "gc", "session": sandbox.STALE, "result": "removed"})


def ledger(builder: _Builder) -> None:
    """Edits by the main thread and a subagent, then what happened to the files after."""
    from app.core.ledger import prompt_lines, record_edit

    project = builder.box.project
    cart, app_py = project / "src" / "cart.py", project / "src" / "app.py"
    readme, views = project / "README.md", project / "src" / "old_views.py"
    builder.file(cart, text="def total(items):\n    return sum(items)\n")
    builder.file(views, text="def index():\n    return 'old'\n")

    def edit(path: Path, agent: str | None = None) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "session_id": sandbox.LIVE_WAITING, "cwd": str(project), "hook_event_name": "PostToolUse",
            "transcript_path": str(builder.box.config / "projects" / f"{sandbox.LIVE_WAITING}.jsonl"), "tool_name": "Edit",
            "tool_input": {"file_path": str(path), "old_string": "a", "new_string": "b"},
            "tool_response": {"filePath": str(path)}}
        if agent:
            payload.update(agent_type=agent, agent_id="a1b2c3")
        record_edit(payload)
        return payload

    prompt = edit(cart)
    cart.write_text("def total(items):\n    return round(sum(items), 2)\n", encoding="utf-8")
    prompt_lines({**prompt, "hook_event_name": "UserPromptSubmit", "prompt": "go on"})  # told now
    for path, agent in ((app_py, None), (readme, "general-purpose"), (views, "Explore")):
        edit(path, agent)
    app_py.write_text("def main():\n    return 'shop, changed by the user'\n", encoding="utf-8")
    os.unlink(views)
