"""The calibration corpus (tests/data/memory/): real repositories and the memory Claude wrote
for them, every rot and every trap labelled. Precision first: no trap line may be reported."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.support import ROOT, SandboxEnv


def scorer() -> ModuleType:
    """bench/memory_precision.py, the one scorer of the corpus (bench/ is no package)."""
    if "memory_precision" in sys.modules:
        return sys.modules["memory_precision"]
    spec = importlib.util.spec_from_file_location("memory_precision", ROOT / "bench" / "memory_precision.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_precision"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_corpus_meets_the_targets(tmp_path: Path, sandbox: SandboxEnv) -> None:
    score = scorer().evaluate(tmp_path)
    assert len(score.repos) >= 3 and sum(len(r.texts) for r in score.repos) >= 30
    assert score.traps >= len(score.rot) >= 30
    kinds = {kind for _, _, kind in score.rot}
    assert kinds == {"vanished_artifact", "stale_version_pin", "stale_sequence", "index_missing_file",
                     "index_unlisted_file"}
    assert score.precision >= 0.95, sorted(score.false_positives, key=str)
    assert score.recall >= 0.9, sorted(score.missed, key=str)


def test_no_trap_line_is_reported(tmp_path: Path, sandbox: SandboxEnv) -> None:
    score = scorer().evaluate(tmp_path)
    traps = {(f"{repo.name}/{file}", line) for repo in score.repos for file, line, _ in repo.traps}
    assert {(file, line) for file, line, _ in score.found} & traps == set()


def test_the_labels_are_cut_before_the_sweep_reads(tmp_path: Path, sandbox: SandboxEnv) -> None:
    score = scorer().evaluate(tmp_path)
    for repo in score.repos:
        for name, text in repo.texts.items():
            assert "<!-- rot" not in text and "<!-- trap" not in text, name
            assert (Path(repo.memory) / name).read_text() == text
