"""Charts drawn in text: the space freed per day as vertical bars (the Overview screen)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from app import format as fmt

EIGHTHS = " ▁▂▃▄▅▆▇█"


class DayBars(Static):
    """One bar per day, `height` rows tall in eighths of a row, the day of month below each
    and the tallest day's size on the left; an empty journal says so instead."""

    DEFAULT_CSS = """
    DayBars { height: auto; width: 100%; }
    """

    def __init__(self, height: int = 6, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.rows = height
        self.days: list[tuple[str, int]] = []

    def show(self, days: list[tuple[str, int]]) -> None:
        self.days = days
        self.update(self.chart())

    def chart(self) -> Text:
        if not self.days:
            return Text("reading the journal…", style="dim")
        top = max(size for _day, size in self.days)
        if top == 0:
            return Text(f"nothing removed in the last {len(self.days)} days (the journal is empty)", style="dim")
        label_width = 10
        cell = 3 if len(self.days) * 4 + label_width > max(40, self.size.width) else 4
        lines = Text()
        for row in range(self.rows, 0, -1):
            label = fmt.size(top) if row == self.rows else ""
            lines.append(f"{label:>{label_width - 1}} ", style="dim")
            for _day, size in self.days:
                eighths = round(size / top * self.rows * 8)
                filled = min(8, max(0, eighths - (row - 1) * 8))
                lines.append((EIGHTHS[filled] * (cell - 1)).ljust(cell), style="green")
            lines.append("\n")
        lines.append(" " * label_width)
        for day, _size in self.days:
            lines.append(day[-2:].ljust(cell), style="dim")
        total = sum(size for _day, size in self.days)
        lines.append(f"\n{'':>{label_width}}{fmt.size(total)} freed in {len(self.days)} days", style="bold")
        return lines

    def on_resize(self) -> None:
        if self.days:
            self.update(self.chart())
