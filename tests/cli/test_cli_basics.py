from __future__ import annotations

import json
import subprocess
import sys

from tests.support import SandboxEnv, run_cli


def test_sessions_json_shape(sandbox: SandboxEnv) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        sandbox.write_session(str(proc.pid), pid=proc.pid, sessionId="a", cwd="/w", status="idle")
        sandbox.write_session("999999999", pid=999999999, sessionId="b", cwd="/v")
        result = run_cli("sessions", "--json")
    finally:
        proc.kill()
        proc.wait()
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    rows = {s["session_id"]: s for s in doc["sessions"]}
    assert rows["a"]["live"] is True and rows["a"]["status"] == "idle" and rows["a"]["pid"] == proc.pid
    assert rows["b"]["live"] is False and rows["b"]["cwd"] == "/v"
    assert set(rows["a"]) >= {"session_id", "pid", "cwd", "status", "live", "file"}


def test_sessions_text_when_empty_names_the_folder(sandbox: SandboxEnv) -> None:
    result = run_cli("sessions")
    assert result.returncode == 0 and str(sandbox.sessions) in result.stdout


def test_usage_error_exits_2() -> None:
    assert run_cli("no-such-command").returncode == 2
    assert run_cli("supersede", "f").returncode == 2


def test_a_path_with_a_newline_stays_on_one_table_row(sandbox: SandboxEnv) -> None:
    sandbox.write_session("1", sessionId="s\nx", cwd="/w/we\nird")
    result = run_cli("sessions")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and "/w/we\\nird" in lines[1] and "s\\nx" in lines[1]
