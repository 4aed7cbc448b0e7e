"""The header line every screen shows: which screen, live sessions, reclaimable and kept bytes,
and what is marked. It listens to the store's signals, so it never polls on its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from app import format as fmt

if TYPE_CHECKING:
    from app.widgets.store import OutputStore


class TotalsBar(Static):
    """`claudetto  1 Sessions  2 Outputs   ● 2 live ○ 1 stale   reclaimable 50 MiB   kept 9 MiB`."""

    DEFAULT_CSS = """
    TotalsBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, current: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.current = current

    @property
    def store(self) -> OutputStore:
        return self.app.store  # type: ignore[attr-defined, no-any-return]

    def on_mount(self) -> None:
        for signal in (self.store.changed, self.store.sized, self.store.sessions_changed):
            signal.subscribe(self, lambda _data: self.show_totals())
        self.show_totals()

    def on_resize(self) -> None:
        self.show_totals()

    def show_totals(self) -> None:
        """One line; below 100 columns without the name and with narrower gaps, so the
        totals and the marks still fit 80 columns."""
        store = self.store
        narrow = self.app.size.width < 100
        gap = "  " if narrow else "   "
        text = Text()
        if not narrow:
            text.append("claudetto ", style="bold")
        for key, name in (("1", "Sessions"), ("2", "Outputs")):
            style = "reverse bold" if name.lower() == self.current else "dim"
            text.append(f" {key} {name} ", style=style)
        live = sum(1 for s in store.sessions if s.live)
        stale = len(store.sessions) - live
        text.append(f"{gap}● {live} live", style="green bold")
        text.append(f" ○ {stale} stale", style="dim")
        if store.judged:
            text.append(f"{gap}{'to free' if narrow else 'reclaimable'} ", style="dim")
            text.append(fmt.size(store.total("remove")), style="bold yellow")
            text.append("  kept ", style="dim")
            text.append(fmt.size(store.total("keep")), style="bold")
        else:
            text.append(f"{gap}judging…", style="dim")
        if store.marked:
            text.append(f"{gap}marked {len(store.marked)} · {fmt.size(store.marked_total())}", style="bold magenta")
        if getattr(self.app, "read_only", False):
            text.append(f"{gap}READ-ONLY", style="bold red")
        self.update(text)
