"""One mount table per GC sweep: the sweep reads the kernel's list once and every scan of
the sweep uses it, and a mount point inside a recorded folder is still never counted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import gc, gc_rules, mounts, paths
from app.core.state import write_json_atomic
from tests.support import SandboxEnv, set_mtime

OLD = 8 * 86_400  # past GC_MAX_AGE_DAYS


def _record_old(sandbox: SandboxEnv, name: str, files: int = 3) -> Path:
    folder = sandbox.user_tmp / name
    folder.mkdir()
    for i in range(files):
        (folder / f"f{i}").write_bytes(b"x" * 5000)
    set_mtime(folder, OLD)
    file = paths.gc_records_file("s1")
    records: list[dict[str, object]] = json.loads(file.read_text())["records"] if file.exists() else []
    records.append({"path": str(folder), "kind": "temp", "session": "s1", "time": 1.0, "cwd": "/nowhere"})
    write_json_atomic(file, {"session": "s1", "records": records})
    return folder


def test_a_sweep_reads_the_mount_table_once_whatever_it_measures(
        sandbox: SandboxEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = [_record_old(sandbox, f"tmp.mounts{i:04d}") for i in range(4)]
    reads: list[int] = []
    real = mounts.mount_points

    def counted() -> frozenset[str]:
        reads.append(1)
        return real()

    facts = gc_rules.Facts(None, None, None, None)
    monkeypatch.setattr(mounts, "mount_points", counted)
    items = gc_rules.judge(facts)
    assert sorted(i.path for i in items if i.action == "remove") == sorted(map(str, folders))
    assert all(i.tree is not None and i.tree.disk >= 3 * 4096 for i in items)  # each tree measured
    assert reads == []  # the four scans used the sweep's table
    report = gc.plan()
    assert [e.status for e in report.entries] == ["would_remove"] * 4
    # once for the judgement, and once for each removal's own check at its moment
    assert len(reads) == 1 + 4


def test_the_sweeps_table_keeps_a_bind_mount_out_of_the_size(sandbox: SandboxEnv, tmp_path: Path) -> None:
    """A bind mount keeps its parent's device: only the table the sweep read tells it apart."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    data = tmp_path / "precious"
    data.mkdir()
    (data / "big").write_bytes(b"d" * 400_000)
    temp = _record_old(sandbox, "tmp.bound00001", files=1)
    (temp / "mnt").mkdir()
    set_mtime(temp, OLD)
    probe = ("import json; from app.core import gc; r = gc.plan(); "
             "print(json.dumps([(e.path, e.status, e.reason, e.size) for e in r.entries]))")
    script = f"mount --bind {data} {temp / 'mnt'} && exec {sys.executable} -P -c '{probe}'"
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, check=False,
                          cwd=Path(__file__).resolve().parents[2])
    if done.returncode != 0 and "mount" in done.stderr:
        pytest.skip(f"no bind mount here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    [(path, status, reason, size)] = json.loads(done.stdout)
    assert (path, status, reason) == (str(temp), "kept", "in_use")
    assert os.lstat(data).st_dev == os.lstat(temp).st_dev  # the same device: only the table tells
    assert 0 < size < 400_000  # the folder, its file and the mount point's own entry; not `big`
    assert (data / "big").stat().st_size == 400_000
