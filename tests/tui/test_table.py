"""`Table.sync`: the one keyed update of every live table, and `Table.order`."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from app.widgets.table import Table


class OneTable(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.made: list[str] = []  # the rows whose cells were made, in order

    def compose(self) -> ComposeResult:
        yield Table(id="t", cursor_type="row")

    def cells(self, key: str, source: Any) -> list[str]:
        self.made.append(key)
        name, size = source
        return [name, str(size)]


async def test_sync_adds_updates_and_removes_by_key() -> None:
    app = OneTable()
    async with app.run_test() as pilot:
        table = app.query_one(Table)
        table.add_column("name", key="name")
        table.add_column("size", key="size")
        done = table.sync({"a": ("alpha", 1), "b": ("beta", 2)}, app.cells)
        assert (done.added, done.removed, done.columns) == (2, 0, frozenset())
        assert table.keys_in_order() == ["a", "b"]
        app.made.clear()
        done = table.sync({"a": ("alpha", 1), "b": ("beta", 3), "c": ("gamma", 0)}, app.cells)
        assert app.made == ["b", "c"]  # an unchanged source costs one compare, no cells made
        assert (done.added, done.removed, done.columns) == (1, 0, frozenset({"size"}))
        assert done.moved("name")  # a new row: the order may have changed whatever the column
        assert [str(c) for c in table.get_row("b")] == ["beta", "3"]
        done = table.sync({"a": ("alpha", 1), "b": ("beta", 4), "c": ("gamma", 0)}, app.cells)
        assert done.moved("size") and not done.moved("name")
        done = table.sync({"c": ("gamma", 0)}, app.cells)
        assert (done.added, done.removed) == (0, 2) and table.keys_in_order() == ["c"]
        table.clear()
        app.made.clear()
        table.sync({"c": ("gamma", 0)}, app.cells)
        assert app.made == ["c"]  # a cleared table forgets what its rows were made from
        await pilot.pause()


async def test_order_sorts_by_key_and_keeps_the_cursor_on_its_row() -> None:
    app = OneTable()
    async with app.run_test() as pilot:
        table = app.query_one(Table)
        table.add_column("name", key="name")
        table.add_column("size", key="size")
        sizes = {"a": 5, "b": 9, "c": 7}
        table.sync({k: (k, v) for k, v in sizes.items()}, app.cells)
        assert table.move_to("c")
        table.order(lambda key: -sizes[key])
        assert table.keys_in_order() == ["b", "c", "a"]
        assert table.cursor_key() == "c" and table.cursor_row == 1  # the cursor follows its row
        assert table.move_to("b")
        table.order(lambda key: -sizes[key], reverse=True)
        assert table.keys_in_order() == ["a", "c", "b"]
        assert table.cursor_row == 0  # on the first row it stays there: a list filling in starts at its top
        await pilot.press("end")
        assert table.cursor_key() == "b"
        await pilot.press("home")
        assert table.cursor_key() == "a"
