"""The fast hash is always there: `fnv-c` is a dependency wherever it has wheels (not an
extra), the old `fast` extra still installs, and without the C module the ledger hashes in
Python, silently when it is simply not there and with a log line when it is broken."""

from __future__ import annotations

import platform
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from app.core import fnv
from tests.support import ROOT


def _fnv_requirement(lines: list[str]) -> Requirement:
    found = [Requirement(line) for line in lines if Requirement(line).name == "fnv-c"]
    assert len(found) == 1, lines
    return found[0]


def test_pyproject_makes_fnv_c_a_dependency_and_keeps_fast_as_an_empty_alias() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    req = _fnv_requirement(project["dependencies"])
    assert req.specifier.contains("0.3.1") and not req.specifier.contains("0.3.0")
    assert project["optional-dependencies"]["fast"] == []
    assert req.marker is not None
    # the platforms fnv-c 0.3.1 publishes wheels for; elsewhere (macOS on Intel, other CPUs)
    # pip would need a compiler, so the marker leaves it out and the Python loop hashes
    wheel_platforms = [("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64")]
    for system, machine in wheel_platforms:
        assert req.marker.evaluate({"sys_platform": system, "platform_machine": machine})
    for system, machine in [("darwin", "x86_64"), ("linux", "riscv64"), ("linux", "armv7l")]:
        assert not req.marker.evaluate({"sys_platform": system, "platform_machine": machine})


def test_the_c_hash_is_in_use_wherever_the_dependency_applies() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    req = _fnv_requirement(project["dependencies"])
    if not req.marker or not req.marker.evaluate():
        pytest.skip(f"no fnv-c wheel for {sys.platform} {platform.machine()}")
    assert req.specifier.contains(metadata.version("fnv-c"))
    assert fnv.c_available()


_PROBE = """
import sys
{block}
from app.core import fnv
data = bytes(range(256)) * 64
assert len(data) >= fnv.FAST_MIN_BYTES
print(fnv.c_available(), fnv.hex64(fnv.fnv1a_64(data)) == fnv.hex64(fnv.fnv1a_64_py(data)))
"""


def _probe(block: str, *flags: str) -> str:
    done = subprocess.run([sys.executable, *flags, "-c", _PROBE.format(block=block)], cwd=ROOT,
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.strip()


def _logs(sandbox_tmp: Path) -> str:
    return "".join(p.read_text() for p in sandbox_tmp.rglob("*.log"))


def test_without_fnv_c_python_hashes_the_same_and_logs_nothing(tmp_path: Path) -> None:
    # no site-packages at all: fnv_c is simply not there, as on a platform without a wheel
    assert _probe(f"sys.path.insert(0, {str(ROOT)!r})", "-I", "-S") == "False True"
    assert "fnv" not in _logs(tmp_path)


def test_a_broken_fnv_c_is_logged_and_python_hashes_the_same(tmp_path: Path) -> None:
    if not fnv.c_available():
        pytest.skip("fnv-c is not installed")
    assert _probe("sys.modules['_cffi_backend'] = None", "-P") == "False True"
    assert "fnv-c is installed but cannot be loaded" in _logs(tmp_path)
