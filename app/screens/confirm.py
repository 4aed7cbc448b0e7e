"""A confirmation that only asks (STYLE rule 10): what goes, how much, what is kept and why.

The caller decides what to do with the answer. Default is No: No has the focus, escape
and `n` say no, and only `y` or the Yes button say yes.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from app.widgets.plain import visible


class ConfirmModal(ModalScreen[bool]):
    """Ask one yes/no question about a removal; dismisses with True only on an explicit yes."""

    DEFAULT_CSS = """
    ConfirmModal { align: center middle; }
    ConfirmModal > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    ConfirmModal #title { text-style: bold; width: 100%; padding: 0 0 1 0; }
    ConfirmModal VerticalScroll { height: auto; max-height: 20; }
    ConfirmModal #buttons { height: auto; align-horizontal: right; padding-top: 1; }
    ConfirmModal Button { margin-left: 2; min-width: 10; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm-yes", tooltip="Go ahead"),
        Binding("n,escape", "answer(False)", "No", id="confirm-no", tooltip="Change nothing"),
    ]

    @staticmethod
    def body_width(screen_width: int) -> int:
        """Cells a body line has in this modal on a screen that wide (90%, at most 110, less
        the border, the padding and the scrollbar)."""
        return min(110, screen_width * 9 // 10) - 6

    def __init__(self, title: str, body: str | Callable[[int], str], *, yes: str = "Remove") -> None:
        """`body`: the text, or what makes it for a width in cells (`body_width`), made again
        when the terminal is resized: a list of paths made for 104 cells and wrapped into 48
        puts a path's tail on a line of its own, which reads as one more thing going."""
        super().__init__()
        self.title_text = title
        self.make_body = body if callable(body) else None
        self.body = body if isinstance(body, str) else body(self.body_width(self.app.size.width))
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(visible(self.title_text)), id="title")
            with VerticalScroll():
                yield Static(visible(self.body, lines=True), id="body", markup=False)
            with Horizontal(id="buttons"):
                yield Button(f"{self.yes} (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()
        self.fit_height(self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self.fit_height(event.size.height)
        if self.make_body is not None:
            body = self.make_body(self.body_width(event.size.width))
            if body != self.body:
                self.body = body
                self.query_one("#body", Static).update(visible(body, lines=True))

    def fit_height(self, height: int) -> None:
        """The list scrolls; the title and the buttons always show (11 rows: border, title,
        buttons and the screen's margin)."""
        self.query_one(VerticalScroll).styles.max_height = max(3, min(20, height - 11))

    @on(Button.Pressed, "#yes")
    def said_yes(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(True)

    @on(Button.Pressed, "#no")
    def said_no(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(False)

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
