"""Red team, round sixteen: the removal core, as a user who is not root.

Found and fixed: an old session folder holding a folder of another user's that this user may
not write (`docker run -v "$PWD":/app node npm install` in a scratchpad leaves a
`node_modules/` of root's) was half deleted: moved to the trash and journaled, the user's own
files in it went, the other user's stayed in the trash for good (each purge tried again, `left`
in the journal) and `clean` counted the folder as removed. The cleanup's last look now keeps
it whole where it was (`not_removed`, logged; app/core/cleanup_guard.py).
"""

from __future__ import annotations

import os
import uuid

from tests.core.test_red_team_16_cleanup import NOBODY, _clean_as_nobody, as_nobody
from tests.core.test_red_team_16_cleanup import nobody_sandbox as nobody_sandbox  # the fixture
from tests.support import SandboxEnv, set_mtime

DAY = 86_400


@as_nobody
def test_an_old_session_folder_holding_another_users_folder_is_not_half_deleted(
        nobody_sandbox: tuple[SandboxEnv, dict[str, str]]) -> None:
    """LOSS (fixed): see the module's docstring. Once the other user's folder is emptied (or
    the user may write it), the old folder goes as any other."""
    env, variables = nobody_sandbox
    folder = env.root / "ctmp" / f"claude-{NOBODY}" / "-work-proj" / str(uuid.uuid4())
    (folder / "scratchpad").mkdir(parents=True)
    for path in (folder.parent.parent, folder.parent, folder, folder / "scratchpad"):
        os.chown(path, NOBODY, NOBODY)
    notes = folder / "scratchpad" / "notes.md"
    notes.write_text("the plan\n")
    os.chown(notes, NOBODY, NOBODY)
    package = folder / "scratchpad" / "node_modules" / "left-pad"  # root's, as a container made it
    package.mkdir(parents=True)
    (package / "index.js").write_text("module.exports = 1\n")
    for path in (folder / "scratchpad", folder):
        set_mtime(path, 40 * DAY)
    report = _clean_as_nobody(variables)
    assert notes.exists() and (package / "index.js").exists(), report
    assert report["cleaned"]["folders"] == 0  # type: ignore[index]
    for path in (package.parent, package):  # writable by this user: their entries can go
        os.chmod(path, 0o777)
    report = _clean_as_nobody(variables)
    assert not folder.exists(), report
