from __future__ import annotations

import json
from pathlib import Path

from app.core import bounds, settings
from tests.support import SandboxEnv


def test_cleanup_period_defaults_to_30(sandbox: SandboxEnv) -> None:
    assert settings.cleanup_period_days() == 30


def test_cleanup_period_is_layered_user_project_local(sandbox: SandboxEnv, tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    (sandbox.config / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 10}))
    assert settings.cleanup_period_days(project) == 10
    (project / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 5}))
    assert settings.cleanup_period_days(project) == 5
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"cleanupPeriodDays": 2}))
    assert settings.cleanup_period_days(project) == 2
    assert settings.cleanup_period_seconds(project) == 2 * 86400


def test_invalid_values_fall_back_and_are_logged(sandbox: SandboxEnv, tmp_path: Path) -> None:
    from app.core.log import current_log

    for bad in ("{broken", json.dumps({"cleanupPeriodDays": 0}), json.dumps({"cleanupPeriodDays": "7"}),
                json.dumps({"cleanupPeriodDays": True}), json.dumps({"cleanupPeriodDays": 1.5}), json.dumps([1])):
        (sandbox.config / "settings.json").write_text(bad)
        assert settings.cleanup_period_days() == 30
    text = current_log().read_text()
    assert "not JSON" in text and "invalid" in text


def test_bounds_defaults_and_overrides(monkeypatch) -> None:
    assert bounds.bound("GC_MAX_BYTES") == 5 * 1024**3
    assert bounds.bound("PROBE_MAX_AGE_MIN") == 60
    monkeypatch.setenv("CLAUDETTO_PROBE_MAX_AGE_MIN", "5")
    assert bounds.bound("PROBE_MAX_AGE_MIN") == 5
    for bad in ("-1", "lots", ""):
        monkeypatch.setenv("CLAUDETTO_GC_MAX_AGE_DAYS", bad)
        assert bounds.bound("GC_MAX_AGE_DAYS") == 7
    assert set(bounds.all_bounds()) == {
        "PROBE_MAX_AGE_MIN", "SWEEP_TIMEOUT_MS", "LEDGER_MAX_FILES",
        "LEDGER_WRITE_TRIES", "GC_MAX_AGE_DAYS", "GC_MAX_BYTES",
    }


def test_nan_or_negative_infinite_cleanup_period_is_ignored_and_infinite_keeps_everything(sandbox: SandboxEnv) -> None:
    for bad in ('{"cleanupPeriodDays": NaN}', '{"cleanupPeriodDays": -Infinity}'):
        (sandbox.config / "settings.json").write_text(bad)
        assert settings.cleanup_period_days() == 30
    (sandbox.config / "settings.json").write_text('{"cleanupPeriodDays": 1e999}')
    assert settings.cleanup_period_days() == settings.MAX_CLEANUP_PERIOD_DAYS
