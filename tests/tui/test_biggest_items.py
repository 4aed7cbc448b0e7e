"""The Overview's biggest items name each folder once. A worktree a session made with `git
worktree add` is judged by the GC (its record) and by the worktree rule: it was listed twice,
taking two of the ten places, once as going and once as kept."""

from __future__ import annotations

from app.core.verdict import Verdict
from app.data.overview import biggest_items


def _verdict(path: str, rule: str, action: str, reason: str) -> Verdict:
    return Verdict(path=path, kind="worktree", action=action, reason=reason, rule=rule, root="/r")  # type: ignore[arg-type]


def test_a_folder_two_rules_judge_is_one_item_shown_kept_when_one_rule_keeps_it() -> None:
    sizes = {"/p/.claude/worktrees/a": 900, "/tmp/b": 500, "/tmp/c": 100}
    rows = [_verdict("/p/.claude/worktrees/a", "gc", "remove", "age"),
            _verdict("/p/.claude/worktrees/a", "worktree", "keep", "dirty"),
            _verdict("/tmp/b", "gc", "remove", "age"), _verdict("/tmp/c", "gc", "keep", "young")]
    shown = biggest_items(rows, lambda v: sizes[v.path], 2)
    assert [(v.path, v.rule, v.reason) for v in shown] == [
        ("/p/.claude/worktrees/a", "worktree", "dirty"), ("/tmp/b", "gc", "age")]
