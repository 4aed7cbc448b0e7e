"""The dashboard's tables: a DataTable that repaints when its column widths move, and a
column plan that fits a terminal's width.

Textual's DataTable (8.x) keys its line, row and cell render caches on an update counter,
but when it measures new rows or updated cells on idle (`_update_dimensions`,
`_update_column_widths`) it widens the columns without moving that counter. A line painted
between `add_row` and the next idle (the cursor row, right after start) is then served from
the cache at the old, narrow widths until something else bumps the counter (Textual issue
#3533). `Table` moves the counter whenever a width moved, so every cache misses once.

`fit()` chooses the columns for a width: every column has a fixed width except the one
that takes the rest (a path, cut from the left); optional columns go first, in their
`drop` order, until the rest is at least `min_rest` cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from textual.widgets import DataTable

PADDING = 1  # DataTable's default cell_padding, on each side of a cell
SCROLLBAR = 1  # app/tui.tcss: scrollbar-size-vertical: 1 (always kept free)


@dataclass(frozen=True)
class Col:
    """One column: `width` cells (0: it takes what is left); `drop` > 0 may go when narrow
    (1 goes first)."""

    key: str
    label: str
    width: int = 0
    drop: int = 0


@dataclass(frozen=True)
class Fit:
    """The columns chosen for one width, and the width of the one that takes the rest."""

    columns: tuple[Col, ...]
    rest: int

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(col.key for col in self.columns)


def fit(columns: Sequence[Col], width: int, min_rest: int) -> Fit:
    """The columns that fit `width` cells, dropping optional ones until the rest has `min_rest`."""
    chosen = list(columns)

    def rest() -> int:
        used = sum(col.width + 2 * PADDING for col in chosen if col.width) + 2 * PADDING
        return width - SCROLLBAR - used

    for col in sorted((c for c in columns if c.drop), key=lambda c: c.drop):
        if rest() >= min_rest:
            break
        chosen.remove(col)
    return Fit(tuple(chosen), max(min_rest // 2, rest()))


class Table(DataTable[Any]):
    """A DataTable whose painted lines always follow its column widths (see the module doc)."""

    def _widths(self) -> tuple[int, ...]:
        return tuple(column.get_render_width(self) for column in self.columns.values()) + (
            self._label_column.content_width,)

    def _update_column_widths(self, updated_cells: Any) -> None:
        before = self._widths()
        super()._update_column_widths(updated_cells)
        if self._widths() != before:
            self._widths_moved()

    def _update_dimensions(self, new_rows: Iterable[Any]) -> None:
        if self.columns and not any(column.auto_width for column in self.columns.values()):
            # fixed widths, one line a row, no labels: measuring each new cell (~40% of
            # the first paint of 2,000 rows) would change nothing
            rows = self.rows
            if all(rows[key].label is None and not rows[key].auto_height for key in new_rows if key in rows):
                new_rows = ()
        before = self._widths()
        super()._update_dimensions(new_rows)
        if self._widths() != before:
            self._widths_moved()

    def _widths_moved(self) -> None:
        self._update_count += 1  # every render cache is keyed on it: each misses once
        self.refresh()

    def set_columns(self, plan: Fit) -> None:
        """Replace the columns with `plan`'s (fixed widths; the rest-taker gets `plan.rest`).
        Rows go too: the caller adds them again."""
        self.clear(columns=True)
        for col in plan.columns:
            self.add_column(col.label, key=col.key, width=col.width or plan.rest)
