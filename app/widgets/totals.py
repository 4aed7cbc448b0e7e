"""The header line every screen shows: the screens (the current one named), live sessions,
reclaimable and kept bytes, and what is marked. It listens to the store's signals, so it
never polls on its own.

Parts are dropped by priority until the line fits: the marked count and total, and the
reclaimable total, always stay (a user who marked rows must see what is about to go); the
tabs give way before them, the current screen's name last.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from app import format as fmt
from app.screens.base import claudetto

Part = tuple[int, Text]  # (priority: higher stays longer, text)
TABS = 6  # the tabs' priority: below what is reclaimable and what is marked


class TotalsBar(Static):
    """`claudetto  1 2 3 Outputs 4 5 6  ● 2 live ○ 1 stale  reclaimable 50 MiB  kept 9 MiB`,
    docked on the first row: a screen scrolled to show its table's cursor never hides it."""

    DEFAULT_CSS = """
    TotalsBar { dock: top; height: 1; background: $panel; color: $text; padding: 0 1; link-style: none; }
    """

    def __init__(self, current: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.current = current

    def on_mount(self) -> None:
        store = claudetto(self.app).store
        for signal in (store.changed, store.sized, store.sessions_changed):
            signal.subscribe(self, lambda _data: self.show_totals())
        self.show_totals()

    def on_resize(self) -> None:
        self.show_totals()

    def parts(self, wide: bool, named: bool = True, others: bool = True) -> list[Part]:
        """The line's parts; `wide`: long words, `named`: every screen's name in the tabs,
        `others`: the tabs of the screens not shown."""
        app = claudetto(self.app)
        store = app.store
        tabs = Text()
        for key, mode, title in [tab for tab in app.tabs if others or tab[1] == self.current]:
            # a click on a tab shows its screen: a person with a mouse needs no key for it
            click = Style.from_meta({"@click": f"app.switch_mode({mode!r})"})
            if mode == self.current:
                tabs.append(f" {key} {title} ", style=Style.parse("reverse bold") + click)
            else:
                tabs.append(f" {key}{' ' + title if named else ''} ", style=Style(dim=True) + click)
        parts: list[Part] = [(TABS, tabs)]
        if wide:
            parts.insert(0, (1, Text("claudetto", style="bold")))
        live = sum(1 for s in store.sessions if s.live)
        sessions = Text()
        sessions.append(f"● {live}{' live' if wide else ''}", style="green bold")
        sessions.append(f" ○ {len(store.sessions) - live}{' stale' if wide else ''}", style="dim")
        parts.append((5, sessions))
        if store.judged:
            parts.append((7, Text.assemble(("reclaimable " if wide else "free ", "dim"),
                                           (fmt.size(store.total("remove")), "bold yellow"))))
            parts.append((3, Text.assemble(("kept ", "dim"), (fmt.size(store.total("keep")), "bold"))))
        else:
            parts.append((7, Text("judging…", style="dim")))
        if store.marked:
            parts.append((8, Text(f"marked {len(store.marked_paths())} · {fmt.size(store.marked_total())}",
                                  style="bold magenta")))
        if app.read_only:
            parts.append((10, Text("READ-ONLY", style="bold red")))
        return parts

    def show_totals(self) -> None:
        """One line that fits: the full form when it does, else short words, then the parts
        with the lowest priority go first."""
        width = max(10, self.size.width or self.app.size.width - 2)
        line = Text("   ").join(text for _p, text in self.parts(wide=True))
        if len(line) > width:
            line = Text("   ").join(text for _p, text in self.parts(wide=True, named=False))
        if len(line) > width:
            parts = self.parts(wide=False, named=False)
            while len(parts) > 1 and len(Text("  ").join(text for _p, text in parts)) > width:
                lowest = min(parts, key=lambda part: part[0])
                if lowest[0] == TABS and len(lowest[1]) > len(shown := self.parts(False, others=False)[0][1]):
                    parts[parts.index(lowest)] = (TABS, shown)  # the current screen's tab alone, before none
                else:
                    parts.remove(lowest)
            line = Text("  ").join(text for _p, text in parts)
        self.update(line)
