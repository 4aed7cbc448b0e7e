"""The dashboard's tables: a DataTable that repaints when its column widths move, and a
column plan that fits a terminal's width.

Textual's DataTable (8.x) keys its line, row and cell render caches on an update counter,
but when it measures new rows or updated cells on idle (`_update_dimensions`,
`_update_column_widths`) it widens the columns without moving that counter. A line painted
between `add_row` and the next idle (the cursor row, right after start) is then served from
the cache at the old, narrow widths until something else bumps the counter (Textual issue
#3533). `Table` moves the counter whenever a width moved, so every cache misses once.

`Table.sync(rows, cells)` is the one keyed update of every live table (STYLE rule 12):
rows gone are removed, rows whose source changed get only their changed cells updated, new
rows are added, all inside one batch; a row whose source is unchanged costs one compare.
`Table.order(by)` sorts by row key and keeps the cursor on the row it was on.

`fit()` chooses the columns for a width: every column has a fixed width except the one
that takes the rest (a path, cut from the left); optional columns go first, in their
`drop` order, until the rest is at least `min_rest` cells.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual._two_way_dict import TwoWayDict
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, ColumnKey, RowKey

from app.widgets.plain import plain

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


@dataclass(frozen=True)
class TablePlan:
    """A screen's main table: where it is, its columns, and the cells the rest-taker keeps."""

    selector: str
    columns: tuple[Col, ...]
    min_rest: int = 24


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


@dataclass(frozen=True)
class Synced:
    """What one `Table.sync` did: rows added and removed, and the columns whose cells moved."""

    added: int = 0
    removed: int = 0
    columns: frozenset[str] = frozenset()

    def moved(self, *columns: str) -> bool:
        """Whether the rows' order may have changed: a row came or a cell of `columns` moved."""
        return bool(self.added) or bool(self.columns.intersection(columns))


_UNSEEN = object()


class Table(DataTable[Any]):
    """A DataTable with keyed updates and painted lines that follow its column widths."""

    BINDINGS = [
        Binding("home", "scroll_top", "First row", show=False, id="first-row", tooltip="Move the cursor to the first row"),
        Binding("end", "scroll_bottom", "Last row", show=False, id="last-row", tooltip="Move the cursor to the last row"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._sources: dict[str, object] = {}  # row key -> what its cells were made from

    def add_row(self, *cells: Any, height: int | None = 1, key: str | None = None,
                label: Any = None) -> RowKey:
        """A row whose cells show what they hold (app/widgets/plain.py): a name is never
        read as markup, and a newline or an escape in it is drawn, not obeyed."""
        return super().add_row(*(plain(cell) for cell in cells), height=height, key=key, label=label)

    def update_cell(self, row_key: RowKey | str, column_key: ColumnKey | str, value: Any, *,
                    update_width: bool = False) -> None:
        super().update_cell(row_key, column_key, plain(value), update_width=update_width)

    def clear(self, columns: bool = False) -> Table:
        self._sources.clear()
        super().clear(columns)
        return self

    def sync(self, rows: Mapping[str, object], cells: Callable[[str, Any], Sequence[Any]]) -> Synced:
        """Make the table show `rows` (row key -> the source its cells are made from, compared
        with ==); `cells(key, source)` makes one row's cells, called only for a new or changed
        source. New rows go to the end: the caller orders them when `Synced.moved`."""
        keys = [column.value or "" for column in self.columns]
        added = removed = 0
        moved: set[str] = set()
        current = self.cursor_key()  # a row gone above it must not slide another under it
        with self.app.batch_update():
            gone = [k for k in self.rows if k.value not in rows]
            self._remove_rows(gone)
            removed = len(gone)
            for key, source in rows.items():
                if key not in self.rows:
                    self.add_row(*cells(key, source), key=key)
                    added += 1
                elif self._sources.get(key, _UNSEEN) != source:
                    for column, value, before in zip(keys, map(plain, cells(key, source)), self.get_row(key),
                                                     strict=True):
                        if value != before:
                            self.update_cell(key, column, value)
                            moved.add(str(column))
                self._sources[key] = source
        if removed and current in rows:
            self.move_to(current)
        return Synced(added, removed, frozenset(moved))

    def _remove_rows(self, gone: list[RowKey]) -> None:
        """`remove_row` for many rows in one pass: DataTable renumbers every row left at each
        removal, and a filter that took 5,000 rows down to one cost 13 s of CPU."""
        if not gone:
            return
        going = set(gone)
        for row_key in gone:
            for column_key in self._data.get(row_key, {}):
                self._updated_cells.discard(CellKey(row_key, column_key))
            del self.rows[row_key]
            del self._data[row_key]
            self._sources.pop(row_key.value or "", None)
        left = sorted((k for k in self._row_locations if k not in going), key=lambda k: self._row_locations.get(k) or 0)
        self._row_locations = TwoWayDict({row_key: index for index, row_key in enumerate(left)})
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate  # clamped to the rows left
        self.hover_coordinate = self.hover_coordinate
        self._update_count += 1
        self.check_idle()
        self.refresh(layout=True)

    def order(self, by: Callable[[str], Any], reverse: bool = False, *, stay: bool = False) -> None:
        """Sort the rows by `by(row key)`; the cursor stays on the row it was on, except on the
        first row, which it keeps (a list still filling in starts at its top) unless `stay`
        (a list the person has read: the row they look at is the row their next key acts on)."""
        current = self.cursor_key() if stay or self.cursor_row > 0 else None
        ordered = sorted(self._data, key=lambda row_key: by(row_key.value or ""), reverse=reverse)
        self._row_locations = TwoWayDict({row_key: index for index, row_key in enumerate(ordered)})
        self._update_count += 1
        self.refresh()
        if not self.move_to(current):
            self.move_cursor(row=0, animate=False)

    def move_to(self, key: str | None) -> bool:
        """Put the cursor on the row `key` when there is one; whether it moved."""
        if key is None or key not in self.rows:
            return False
        self.move_cursor(row=self.get_row_index(key), animate=False)
        return True

    def cursor_key(self) -> str | None:
        """The key of the row under the cursor, or None in an empty table."""
        if self.row_count == 0:
            return None
        key: RowKey | None = self._row_locations.get_key(min(self.cursor_row, self.row_count - 1))
        return key.value if key is not None else None

    def keys_in_order(self) -> list[str]:
        """Every row key, top to bottom."""
        keys = (self._row_locations.get_key(i) for i in range(self.row_count))
        return [key.value or "" for key in keys if key is not None]

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
