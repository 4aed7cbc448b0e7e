"""The pane below a screen's table that tells the highlighted row in full.

Before the screen's data first comes it says what is being read; once read, with no row
highlighted, why the table is empty; after a read that failed, the problem, until a read
succeeds. A screen names its pane (`DetailPlan`) beside its table (`TablePlan`), and the
base screen composes it and shows the highlighted row in it (app/screens/base.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static


@dataclass(frozen=True)
class DetailPlan:
    """A screen's detail pane: where it is, what it says while the data is read, and what it
    says when the data came and no row is highlighted."""

    selector: str
    reading: str
    empty: str


class DetailPane(Static):
    """The highlighted row told in full, or why there is none."""

    DEFAULT_CSS = """
    DetailPane { height: auto; min-height: 5; padding: 0 1; background: $boost; }
    """

    def __init__(self, plan: DetailPlan) -> None:
        super().__init__(plan.reading, id=plan.selector.removeprefix("#"))
        self.plan = plan
        self.read = False  # the screen's data came at least once
        self.problem = ""  # why the last read failed; shown in place of any row

    def loaded(self) -> None:
        """The screen's data came: no row highlighted now means an empty table."""
        self.read, self.problem = True, ""

    def failed(self, problem: str) -> None:
        """The read failed: say so in place of any row until a read succeeds."""
        self.read, self.problem = True, problem
        self.show(None)

    def show(self, text: Text | None) -> None:
        """Show the highlighted row (`text`), or None: no row is highlighted."""
        if self.problem:
            self.update(Text(self.problem, style="bold red"))
        elif text is None:
            self.update(self.plan.empty if self.read else self.plan.reading)
        else:
            self.update(text)
