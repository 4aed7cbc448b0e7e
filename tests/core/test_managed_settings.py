"""`cleanupPeriodDays` from Claude's managed (policy) settings too, the layer nothing
overrides: managed > project local > project > user. The file's place is
CLAUDETTO_MANAGED_SETTINGS here, so no test ever reads the machine's /etc."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app.core import paths, settings
from app.core.log import current_log
from tests.support import SandboxEnv


@pytest.fixture(autouse=True)
def managed(sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> Path:
    file = sandbox.root / "policy" / "managed-settings.json"
    file.parent.mkdir()
    monkeypatch.setenv("CLAUDETTO_MANAGED_SETTINGS", str(file))
    return file


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    (folder / ".claude").mkdir(parents=True)
    return folder


def write(file: Path, days: object) -> None:
    file.write_text(json.dumps({"cleanupPeriodDays": days}))


def test_the_managed_file_is_the_last_layer(managed: Path, project: Path, sandbox: SandboxEnv) -> None:
    assert settings.settings_files(project) == [
        sandbox.config / "settings.json",
        project / ".claude" / "settings.json",
        project / ".claude" / "settings.local.json",
        managed,
    ]
    assert settings.settings_files() == [sandbox.config / "settings.json", managed]


def test_managed_wins_over_every_other_layer(managed: Path, project: Path, sandbox: SandboxEnv) -> None:
    write(sandbox.config / "settings.json", 10)
    write(project / ".claude" / "settings.json", 5)
    write(project / ".claude" / "settings.local.json", 2)
    assert settings.cleanup_period_days(project) == 2
    write(managed, 90)
    assert settings.cleanup_period_days(project) == 90
    assert settings.cleanup_period_days() == 90  # no project: user, then managed
    assert settings.cleanup_period_seconds(project) == 90 * 86400


def test_managed_alone_applies(managed: Path) -> None:
    write(managed, 3)
    assert settings.cleanup_period_days() == 3


def test_a_managed_file_without_the_key_leaves_the_lower_layers(managed: Path, project: Path,
                                                              sandbox: SandboxEnv) -> None:
    managed.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    write(project / ".claude" / "settings.local.json", 4)
    assert settings.cleanup_period_days(project) == 4


@pytest.mark.parametrize("bad", [0, -3, 1.5, "7", True, None, [7], {"days": 7}])
def test_a_bad_managed_value_is_ignored_and_logged(managed: Path, project: Path, sandbox: SandboxEnv,
                                                   bad: object) -> None:
    write(sandbox.config / "settings.json", 12)
    write(managed, bad)
    assert settings.cleanup_period_days(project) == 12
    assert f"{managed} cleanupPeriodDays=" in current_log().read_text()


@pytest.mark.parametrize("text", ['{"cleanupPeriodDays": NaN}', '{"cleanupPeriodDays": -1e999}'])
def test_non_finite_managed_values_are_ignored(managed: Path, sandbox: SandboxEnv, text: str) -> None:
    write(sandbox.config / "settings.json", 12)
    managed.write_text(text)
    assert settings.cleanup_period_days() == 12


@pytest.mark.parametrize("text", ['{"cleanupPeriodDays": 100000001}', '{"cleanupPeriodDays": 2147483648}',
                                  '{"cleanupPeriodDays": ' + str(10**400) + '}', '{"cleanupPeriodDays": 1e999}',
                                  '{"cleanupPeriodDays": Infinity}'])
def test_a_period_past_any_date_keeps_everything(managed: Path, sandbox: SandboxEnv, text: str) -> None:
    """Claude's cut-off for such a period is no date (JavaScript dates span 10^8 days), so it
    removes nothing: it counts as the longest period, not as no setting (30 days)."""
    write(sandbox.config / "settings.json", 12)
    managed.write_text(text)
    assert settings.cleanup_period_days() == settings.MAX_CLEANUP_PERIOD_DAYS


def test_large_but_real_periods_are_kept(managed: Path) -> None:
    write(managed, 99999)  # the usual "keep forever"
    assert settings.cleanup_period_days() == 99999
    write(managed, settings.MAX_CLEANUP_PERIOD_DAYS)
    assert settings.cleanup_period_days() == settings.MAX_CLEANUP_PERIOD_DAYS
    write(managed, 45.0)  # a whole number written as a float
    assert settings.cleanup_period_days() == 45


def test_an_unreadable_or_broken_managed_file_is_logged_and_skipped(managed: Path, sandbox: SandboxEnv) -> None:
    write(sandbox.config / "settings.json", 12)
    managed.mkdir()  # a folder where the file should be: reading it fails
    assert settings.cleanup_period_days() == 12
    assert f"cannot read {managed}" in current_log().read_text()
    managed.rmdir()
    managed.write_text("{broken")
    assert settings.cleanup_period_days() == 12
    assert f"{managed} is not JSON" in current_log().read_text()


def test_a_missing_managed_file_is_silent(managed: Path, sandbox: SandboxEnv) -> None:
    write(sandbox.config / "settings.json", 12)
    assert not managed.exists()
    assert settings.cleanup_period_days() == 12
    assert not current_log().exists() or str(managed) not in current_log().read_text()


@pytest.mark.parametrize(("platform", "expected"), [
    ("linux", "/etc/claude-code/managed-settings.json"),
    ("darwin", "/Library/Application Support/ClaudeCode/managed-settings.json"),
])
def test_the_managed_file_is_where_claude_reads_it_unless_overridden(monkeypatch: pytest.MonkeyPatch,
                                                                     platform: str, expected: str) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    for unset in ("", None):  # empty counts as unset
        if unset is None:
            monkeypatch.delenv("CLAUDETTO_MANAGED_SETTINGS")
        else:
            monkeypatch.setenv("CLAUDETTO_MANAGED_SETTINGS", unset)
        assert paths.managed_settings() == Path(expected)  # the path only: nothing under /etc is read here
    monkeypatch.setenv("CLAUDETTO_MANAGED_SETTINGS", "/somewhere/policy.json")
    assert paths.managed_settings() == Path("/somewhere/policy.json")
