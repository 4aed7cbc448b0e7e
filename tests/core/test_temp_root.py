"""Claude's temp folder, found as Claude finds it: CLAUDE_CODE_TMPDIR, else (Linux) TMPDIR,
TMP, TEMP, else /tmp; macOS: CLAUDE_CODE_TMPDIR, else /tmp. Empty values count as unset.
And the exact folder a hook payload's `scratchpad_dir` names."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from app.core import paths
from tests.support import SandboxEnv

UID = os.getuid()
VARIABLES = ("CLAUDE_CODE_TMPDIR", "TMPDIR", "TMP", "TEMP")


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A real folder for each variable, every variable unset to begin with."""
    found = {}
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
        found[name] = tmp_path / f"root-{name.lower()}"
        found[name].mkdir()
    return found


# (variables set, empty ones, the one that wins: None is /tmp)
LINUX_CASES = [
    (VARIABLES, (), "CLAUDE_CODE_TMPDIR"),
    (("TMPDIR", "TMP", "TEMP"), (), "TMPDIR"),
    (("TMP", "TEMP"), (), "TMP"),
    (("TEMP",), (), "TEMP"),
    ((), (), None),
    (("TMPDIR", "TMP", "TEMP"), ("CLAUDE_CODE_TMPDIR",), "TMPDIR"),
    (("TMP",), ("CLAUDE_CODE_TMPDIR", "TMPDIR"), "TMP"),
    (("TEMP",), ("CLAUDE_CODE_TMPDIR", "TMPDIR", "TMP"), "TEMP"),
    ((), VARIABLES, None),
    (("CLAUDE_CODE_TMPDIR",), ("TMPDIR",), "CLAUDE_CODE_TMPDIR"),
]


@pytest.mark.parametrize(("set_", "empty", "winner"), LINUX_CASES)
def test_claude_temp_root_on_linux(roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                   set_: tuple[str, ...], empty: tuple[str, ...], winner: str | None) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    for name in set_:
        monkeypatch.setenv(name, str(roots[name]))
    for name in empty:
        monkeypatch.setenv(name, "")
    expected = os.path.realpath(roots[winner] if winner else "/tmp")
    assert paths.claude_tmp_root_str() == expected
    assert paths.claude_tmp_root() == Path(expected)
    assert paths.claude_tmp_dir_str() == os.path.join(expected, f"claude-{UID}")
    assert paths.claude_tmp_dir() == Path(expected) / f"claude-{UID}"
    assert paths.log_root() == Path(expected) / "claudetto"  # claudetto's logs live beside Claude's folder


@pytest.mark.parametrize(("set_", "empty", "winner"), [
    (VARIABLES, (), "CLAUDE_CODE_TMPDIR"),
    (("TMPDIR", "TMP", "TEMP"), (), None),  # macOS Claude ignores TMPDIR (a per-user /var/folders path)
    (("TMPDIR",), ("CLAUDE_CODE_TMPDIR",), None),
])
def test_claude_temp_root_on_macos(roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                   set_: tuple[str, ...], empty: tuple[str, ...], winner: str | None) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    for name in set_:
        monkeypatch.setenv(name, str(roots[name]))
    for name in empty:
        monkeypatch.setenv(name, "")
    assert paths.claude_tmp_root_str() == os.path.realpath(roots[winner] if winner else "/tmp")


def test_the_root_is_realpathd(roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    link = tmp_path / "tmp-link"
    link.symlink_to(roots["TMPDIR"])
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("TMPDIR", str(link))
    assert paths.claude_tmp_dir_str() == os.path.join(str(roots["TMPDIR"]), f"claude-{UID}")


@pytest.mark.parametrize(("value", "expected"), [(None, "/tmp"), ("", "/tmp"), ("TMPDIR", "TMPDIR")])
def test_the_users_temp_folder_stays_tmpdir_or_tmp(roots: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                   value: str | None, expected: str) -> None:
    # The GC root is the user's temp folder, not Claude's: TMP and TEMP play no part in it.
    monkeypatch.setenv("TMP", str(roots["TMP"]))
    monkeypatch.setenv("CLAUDE_CODE_TMPDIR", str(roots["CLAUDE_CODE_TMPDIR"]))
    if value is not None:
        monkeypatch.setenv("TMPDIR", str(roots["TMPDIR"]) if value else "")
    want = os.path.realpath(roots["TMPDIR"] if expected == "TMPDIR" else "/tmp")
    assert paths.user_tmp_str() == want
    assert paths.user_tmp() == Path(want)


# --- the folder a hook payload's scratchpad_dir names -------------------------------------


def make_claude_folder(root: Path, uid: int = UID) -> tuple[Path, str]:
    """A real claude-<uid> folder with a session's scratchpad, as Claude lays it out."""
    folder = root / f"claude-{uid}"
    scratchpad = folder / "-work-proj" / "0b6e1c9a-6d0e-4a59-9c43-5f1f0f6f7c11" / "scratchpad"
    scratchpad.mkdir(parents=True)
    return folder, str(scratchpad)


def test_scratchpad_names_the_exact_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    elsewhere = tmp_path / "private-tmp"  # not where the hook's environment points
    folder, scratchpad = make_claude_folder(elsewhere)
    assert paths.claude_tmp_dir_of_scratchpad(scratchpad) == str(folder)
    assert paths.claude_tmp_dir_of_scratchpad(scratchpad + "/") == str(folder)
    assert paths.claude_tmp_dir_for(scratchpad) == str(folder)
    assert paths.claude_tmp_dir_for(None) == str(sandbox.claude_tmp)  # no payload value: the environment's


def test_scratchpad_that_does_not_exist_yet_still_names_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / f"claude-{UID}"
    folder.mkdir()
    assert paths.claude_tmp_dir_of_scratchpad(f"{folder}/-p/sess/scratchpad") == str(folder)


def test_scratchpad_folder_is_realpathd(tmp_path: Path) -> None:
    folder, _ = make_claude_folder(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    spelled = f"{tmp_path}/link/claude-{UID}/-work-proj/sess/scratchpad"
    assert paths.claude_tmp_dir_of_scratchpad(spelled) == str(folder)


def test_scratchpad_is_refused_unless_it_names_a_real_folder_of_this_uid(sandbox: SandboxEnv, tmp_path: Path) -> None:
    other, other_pad = make_claude_folder(tmp_path / "o", uid=UID + 1)  # another uid's name
    assert paths.claude_tmp_dir_of_scratchpad(other_pad) is None
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / f"claude-{UID}").write_text("not a folder")
    assert paths.claude_tmp_dir_of_scratchpad(f"{tmp_path}/f/claude-{UID}/-p/s/scratchpad") is None
    assert paths.claude_tmp_dir_of_scratchpad(f"{tmp_path}/missing/claude-{UID}/-p/s/scratchpad") is None
    target = tmp_path / "somewhere"
    target.mkdir()
    (tmp_path / "l").mkdir()
    (tmp_path / "l" / f"claude-{UID}").symlink_to(target)  # realpath'd: named "somewhere"
    assert paths.claude_tmp_dir_of_scratchpad(f"{tmp_path}/l/claude-{UID}/-p/s/scratchpad") is None
    assert paths.claude_tmp_dir_for(other_pad) == str(sandbox.claude_tmp)


@pytest.mark.parametrize("value", [
    None, 7, ["/tmp/claude-0/-p/s/scratchpad"], "", "relative/claude-{uid}/-p/s/scratchpad",
    "/claude-{uid}/-p/s", "/x/claude-{uid}/-p/../s/scratchpad", "/x/claude-{uid}/-p/./s/scratchpad",
    "/x/claude-{uid}//-p/s/scratchpad", "/x/claude-{uid}/-p/s/scratch\x00pad",
])
def test_scratchpad_values_of_another_shape_give_none(tmp_path: Path, value: object) -> None:
    (tmp_path / "x" / f"claude-{UID}").mkdir(parents=True)
    if isinstance(value, str) and value.startswith("/x/"):
        value = str(tmp_path) + value
    if isinstance(value, str):
        value = value.replace("{uid}", str(UID))
    assert paths.claude_tmp_dir_of_scratchpad(value) is None


def test_scratchpad_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if UID != 0:
        pytest.skip("only root can give a folder to another user")
    folder, scratchpad = make_claude_folder(tmp_path)
    os.chown(folder, 12345, 12345)
    assert paths.claude_tmp_dir_of_scratchpad(scratchpad) is None
