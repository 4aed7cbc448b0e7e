"""What a Bash record names is the very object the call made: an unprinted mktemp path is
guessed only when the guess is exact, and a record keeps the identity (device, inode, birth)
of what it saw, so a name another folder took since is not the output any more. Real mktemp
runs, real folders, the recorder as the hook calls it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.core import paths
from app.core.created import birth_time, why_unproven
from app.core.gc_records import read_records
from app.core.gc_rules import Item, replaced
from app.core.recorder import record_outputs
from tests.support import SandboxEnv, add_record

SESSION = "s1"


def run_bash(command: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True,
                          env=dict(os.environ)).stdout


def post(command: str, cwd: Path, stdout: str = "", session: str = SESSION) -> dict[str, object]:
    return {"hook_event_name": "PostToolUse", "session_id": session, "cwd": str(cwd), "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}, "duration_ms": 500}


def ran_and_recorded(command: str, cwd: Path, session: str = SESSION) -> list[str]:
    record_outputs(post(command, cwd, run_bash(command, cwd), session))
    return [r.path for r in read_records(session)]


def tmp(sandbox: SandboxEnv) -> Path:
    return Path(os.path.realpath(sandbox.user_tmp))


def log_text() -> str:
    return "".join(p.read_text() for p in Path(paths.log_root()).rglob("*.log"))


def raw_records(session: str = SESSION) -> list[dict[str, object]]:
    return json.loads(Path(paths.gc_records_file_str(session)).read_text())["records"]


# --- an unprinted mktemp path: guessed only when the guess is exact ------------------------


@pytest.mark.parametrize("removal", ['rm -rf "$d"', "rm -r -- ${d:?}", "trap 'rm -rf \"$d\"' EXIT",
                                     'rm -f "$d/out" && rmdir "$d"', 'mv "$d" "$d.old"'])
def test_a_folder_the_command_removes_or_moves_is_not_guessed(sandbox: SandboxEnv, tmp_path: Path,
                                                              removal: str) -> None:
    theirs = tmp(sandbox) / "tmp.TheirsAbCd"
    theirs.mkdir()  # fresh and fitting: a guess would take it
    found = ran_and_recorded(f'd=$(mktemp -d) && cd "$d" && echo x > out && cd / && {removal}', tmp_path)
    assert found == []
    assert "removes or moves its variable" in log_text()


def test_removing_a_file_inside_the_folder_is_not_removing_the_folder(sandbox: SandboxEnv, tmp_path: Path) -> None:
    command = 'd=$(mktemp -d) && echo x > "$d/a" && rm -f "$d/a"'
    (made,) = ran_and_recorded(command, tmp_path)
    assert Path(made).parent == tmp(sandbox) and Path(made).is_dir()


def test_another_variable_removed_does_not_stop_the_guess(sandbox: SandboxEnv, tmp_path: Path) -> None:
    command = 'e=$(date +%s) && d=$(mktemp -d) && rm -f "$e"'
    (made,) = ran_and_recorded(command, tmp_path)
    assert Path(made).name.startswith("tmp.")


def test_more_candidates_than_calls_record_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    (tmp(sandbox) / "tmp.OtherAbCd0").mkdir()
    assert ran_and_recorded('d=$(mktemp -d) && cd "$d"', tmp_path) == []
    assert "2 entries" in log_text() and "1 unprinted call" in log_text()


def test_as_many_candidates_as_calls_are_all_recorded(sandbox: SandboxEnv, tmp_path: Path) -> None:
    found = ran_and_recorded("a=$(mktemp -d); b=$(mktemp -d); c=$(mktemp -d)", tmp_path)
    assert sorted(found) == sorted(str(p) for p in tmp(sandbox).iterdir()) and len(found) == 3


def test_fewer_candidates_than_calls_record_nothing(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # the second call's folder went by other means (its name, not its variable): which is left is unknown
    command = ('a=$(mktemp -d); b=$(mktemp -d); python3 -c "import glob, shutil; '
               'shutil.rmtree(sorted(glob.glob(\'$TMPDIR/tmp.*\'))[-1])"')
    assert ran_and_recorded(command, tmp_path) == []
    assert "1 entries" in log_text()


def test_a_removal_through_xargs_stops_the_search(sandbox: SandboxEnv, tmp_path: Path) -> None:
    # what `xargs rm` removes cannot be told: no call is looked for
    command = 'a=$(mktemp -d); b=$(mktemp -d); ls -d "$TMPDIR"/tmp.* | tail -1 | xargs rm -rf'
    assert ran_and_recorded(command, tmp_path) == []
    assert "not looked for" in log_text()


def test_another_sessions_record_does_not_hide_a_candidate(sandbox: SandboxEnv, tmp_path: Path) -> None:
    printed = run_bash("mktemp -d", tmp_path).strip()
    record_outputs(post("mktemp -d", tmp_path, printed + "\n", session="other"))
    assert [r.path for r in read_records("other")] == [printed]
    assert ran_and_recorded('d=$(mktemp -d) && cd "$d"', tmp_path) == []  # two fit, one call: no guess


def test_this_sessions_own_record_is_not_a_candidate_again(sandbox: SandboxEnv, tmp_path: Path) -> None:
    printed = run_bash("mktemp -d", tmp_path).strip()
    record_outputs(post("mktemp -d", tmp_path, printed + "\n"))
    found = ran_and_recorded('d=$(mktemp -d) && cd "$d"', tmp_path)
    (new,) = {str(p) for p in tmp(sandbox).iterdir()} - {printed}
    assert sorted(found) == sorted([printed, new])


# --- the identity of what the call made -----------------------------------------------------


def test_a_bash_record_stores_the_identity_of_what_it_made(sandbox: SandboxEnv, tmp_path: Path) -> None:
    printed = run_bash("mktemp -d", tmp_path).strip()
    record_outputs(post("mktemp -d", tmp_path, printed + "\n"))
    (raw,) = raw_records()
    st = os.lstat(printed)
    evidence = raw["evidence"]
    assert isinstance(evidence, dict)
    assert (evidence["dev"], evidence["ino"]) == (st.st_dev, st.st_ino)
    assert evidence.get("born") == birth_time(printed)


def test_a_name_another_folder_took_is_passed_over(sandbox: SandboxEnv, tmp_path: Path) -> None:
    printed = Path(run_bash("mktemp -d", tmp_path).strip())
    record_outputs(post("mktemp -d", tmp_path, f"{printed}\n"))
    printed.rmdir()
    printed.mkdir()  # the same name, often the same inode number: a new birth time tells them apart
    assert read_records(SESSION) == []
    (raw,) = raw_records()  # the record stays in its file until the name is gone
    assert why_unproven(str(printed), raw["evidence"]) is not None


def test_without_a_birth_time_another_inode_is_still_told_apart(sandbox: SandboxEnv, tmp_path: Path) -> None:
    printed = Path(run_bash("mktemp -d", tmp_path).strip())
    record_outputs(post("mktemp -d", tmp_path, f"{printed}\n"))
    (raw,) = raw_records()
    keep = tmp_path / "held"
    keep.mkdir()  # holds an inode so the new folder cannot get the old number back
    printed.rename(tmp_path / "moved-away")
    printed.mkdir()
    assert why_unproven(str(printed), raw["evidence"], use_birth=False) is not None
    assert why_unproven(str(tmp_path / "moved-away"), raw["evidence"], use_birth=False) is None


def test_the_guard_follows_a_folder_moved_aside_for_removal(sandbox: SandboxEnv, tmp_path: Path) -> None:
    printed = Path(run_bash("mktemp -d", tmp_path).strip())
    record_outputs(post("mktemp -d", tmp_path, f"{printed}\n"))
    (record,) = read_records(SESSION)
    assert record.evidence is not None
    item = Item(str(printed), [record])
    aside = tmp(sandbox) / ".claudetto-removing"
    printed.rename(aside)  # as the removal core moves it before its last check
    assert replaced(item, str(aside)) is None
    other = tmp(sandbox) / "other"
    other.mkdir()
    assert replaced(item, str(other)) == "in_use"


def test_a_record_without_evidence_still_counts(sandbox: SandboxEnv, tmp_path: Path) -> None:
    folder = tmp(sandbox) / "tmp.OlderVersn"
    folder.mkdir()
    add_record(SESSION, folder, "temp", cwd=tmp_path)
    assert [r.path for r in read_records(SESSION)] == [str(folder)]


def test_a_path_made_again_by_a_later_call_gets_the_new_identity(sandbox: SandboxEnv, tmp_path: Path) -> None:
    target = tmp(sandbox) / "copy"
    (tmp_path / "src").mkdir()
    command = f"cp -r {tmp_path / 'src'} {target}"
    ran_and_recorded(command, tmp_path)
    first = raw_records()[0]["evidence"]
    run_bash(f"rm -rf {target}", tmp_path)
    assert ran_and_recorded(command, tmp_path) == [str(target)]
    (raw,) = raw_records()
    assert raw["evidence"] != first and why_unproven(str(target), raw["evidence"]) is None
