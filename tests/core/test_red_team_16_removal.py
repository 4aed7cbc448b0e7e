"""Red team, round sixteen: the removal core, as a user who is not root.

Left open (strict xfail): an old session folder holding a folder of another user's that this
user may not write (`docker run -v "$PWD":/app node npm install` in a scratchpad leaves a
`node_modules/` of root's) is half deleted: moved to the trash and journaled, the user's own
files in it go, the other user's stay in the trash for good (each purge tries again, `left`
in the journal) and `clean` counts the folder as removed. All or nothing would keep it whole
where it was, with a reason.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.core.test_red_team_16_cleanup import NOBODY, _clean_as_nobody, as_nobody
from tests.core.test_red_team_16_cleanup import nobody_sandbox as nobody_sandbox  # the fixture
from tests.support import SandboxEnv, set_mtime

DAY = 86_400


@as_nobody
@pytest.mark.xfail(strict=True, reason="a folder this user cannot empty is found only by the purge, after the move")
def test_an_old_session_folder_holding_another_users_folder_is_not_half_deleted(
        nobody_sandbox: tuple[SandboxEnv, dict[str, str]]) -> None:
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
