"""The mount table is read once and again whenever the kernel marks it changed: a mount or an
unmount made after a read is seen by the next question, in this process and in a forked child,
and a bind mount made after the read keeps its folder. Each case runs in a mount namespace of
its own (`unshare -rm`), so nothing here mounts anything on the machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, os, subprocess, sys
from app.core import mounts
base = sys.argv[1]
seen = {}
def mount(*args):
    subprocess.run(["mount", *args], check=True)
a, b, data = (os.path.join(base, n) for n in ("a", "b", "data"))
seen["before"] = a in mounts.mount_points()
mount("-t", "tmpfs", "none", a)
seen["mounted"] = a in mounts.mount_points()
seen["crossed"] = mounts.mounts_crossed(base, a) == [a]
subprocess.run(["umount", a], check=True)
seen["unmounted"] = a in mounts.mount_points()
mounts.mount_points()  # the parent's table read and kept
pid = os.fork()
if pid == 0:
    mount("-t", "tmpfs", "none", b)  # the child mounts; the child asks first
    os._exit(0 if b in mounts.mount_points() else 3)
_, status = os.waitpid(pid, 0)
seen["child"] = os.waitstatus_to_exitcode(status)
seen["parent_after_child"] = b in mounts.mount_points()
sources_before = data in mounts.mount_sources()
mount("--bind", data, a)
seen["bind_source"] = (sources_before, data in mounts.mount_sources())
print(json.dumps(seen))
"""


def test_a_mount_made_after_the_table_was_read_is_seen_next_time(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    for name in ("a", "b", "data"):
        (tmp_path / name).mkdir()
    done = subprocess.run(["unshare", "-rm", sys.executable, "-P", "-c", PROBE, str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0 and "mount" in done.stderr and "Traceback" not in done.stderr:
        pytest.skip(f"no mounts here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "before": False, "mounted": True, "crossed": True, "unmounted": False,
        "child": 0, "parent_after_child": True, "bind_source": [False, True],
    }
