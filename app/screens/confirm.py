"""A confirmation that only asks (STYLE rule 10): what goes, how much, what is kept and why.

The caller decides what to do with the answer. Default is No: No has the focus, escape
and `n` say no, and only `y` or the Yes button say yes.

A question is read before it is answered (`GuardedModal`): a question that comes after
background work can appear while the person is typing, and a key meant for what was on
screen a moment ago (a `y` for another question, the second Enter of a double press, a held
key's repeats) would answer one nobody read. So a key or a click made before the question
was painted, or within `GUARD_S` of it, is not an answer; nor is one within `GUARD_S` of
another such key (a held key goes on repeating). The dialog says so: "Read first: press y
again".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeVar

from rich.cells import cell_len
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from app.widgets.plain import visible

#: Seconds a question takes no answer once it is painted (and after each input it took
#: none from): long enough for a key already on its way (a double press, a key typed for
#: what was on screen) to arrive, short enough to go unnoticed by someone reading it.
#: The app's `confirm_guard_s` overrides it (tests).
GUARD_S = 0.5
#: Terminal rows under which a question's buttons go compact (one row each).
SHORT_ROWS = 16

Answer = TypeVar("Answer")


class GuardedModal(ModalScreen[Answer]):
    """A dialog whose answer must follow its being read: keys and clicks (on an
    `AnswerButton`) too early for that are dropped, and the dialog says so."""

    DEFAULT_CSS = """
    GuardedModal #too-soon { display: none; color: $text-warning; width: 100%; padding-top: 1; }
    GuardedModal #too-soon.-said { display: block; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.guard_s: float = getattr(self.app, "confirm_guard_s", GUARD_S)
        # Textual stamps every input event with `time.monotonic()` (perf_counter on Windows)
        self.shown_at: float | None = None  # when the dialog was last painted; None until it is
        self.last_early = -math.inf  # the last input dropped as too early
        self.said = ""  # what the dialog says of the last input dropped

    def too_soon_note(self) -> Static:
        """Where the dialog says an input came too soon (hidden until one did)."""
        return Static(self.said, id="too-soon", markup=False, classes="-said" if self.said else "")

    @on(events.ScreenResume)
    def guard_again(self) -> None:
        """Shown (or shown again from under another screen): no answer until it is painted,
        and `guard_s` after that."""
        self.shown_at = None
        self.call_after_refresh(self.painted)

    def painted(self) -> None:
        self.shown_at = time.monotonic() if self.is_current else None

    def too_soon(self, at: float) -> bool:
        """Whether an input made at `at` is too soon to answer: before the dialog was
        painted, within `guard_s` of it, or within `guard_s` of the last one dropped."""
        if self.shown_at is not None and at >= max(self.shown_at, self.last_early) + self.guard_s:
            return False
        self.last_early = max(self.last_early, at)
        return True

    def on_mount(self) -> None:  # a subclass's own on_mount runs too (Textual calls each class's)
        self.fit_height(self.app.size.height)

    def on_resize(self, event: events.Resize) -> None:
        self.fit_height(event.size.height)

    def fit_height(self, height: int) -> None:
        """Fit the dialog to a terminal `height` rows high (a subclass with more to fit says how)."""
        self.compact_answers(height)

    def compact_answers(self, height: int) -> bool:
        """Whether a terminal `height` rows high is short (under SHORT_ROWS); then the answer
        buttons take one row each, else their borders push them below the dialog's last row."""
        short = height < SHORT_ROWS
        for button in self.query(AnswerButton):
            button.compact = short
        return short

    def answerable(self) -> bool:
        """Whether an input made now would answer."""
        return self.shown_at is not None and time.monotonic() >= max(self.shown_at, self.last_early) + self.guard_s

    def early(self, again: str, at: float | None = None) -> bool:
        """Whether an answer given now, by an input made at `at`, is too soon (said in the
        dialog: "Read first: `again` again"). Every answer of the dialog asks: a key typed on
        the screen below, a moment before the dialog came, reaches the dialog's bindings
        without passing through it (Textual matches a key to the bindings of the screen on
        top when it gets to it), so the time it is acted on counts too."""
        now = time.monotonic()
        if not self.too_soon(now if at is None else min(at, now)):
            return False
        self.said = f"Read first: {again} again. The last one came before the question could be read."
        try:
            note = self.query_one("#too-soon", Static)
        except NoMatches:  # not composed yet (the key came with the question): said once it is
            return True
        note.update(self.said)
        note.add_class("-said")
        self.noted()
        return True

    def noted(self) -> None:
        """The note of an early input was shown (a dialog that fits its height to the screen
        makes room for it)."""

    def on_key(self, event: events.Key) -> None:
        """Drop a key too early to be an answer before any binding sees it (`y`, `n`, escape,
        a button's enter). Printable keys typed into a text box are the box's (harmless:
        shown there) and never reach here."""
        key = event.character if event.is_printable and event.character and event.character.strip() else event.key
        if self.early(f"press {key}", event.time):
            event.stop()
            event.prevent_default()


class AnswerButton(Button):
    """A button of a `GuardedModal`: a click too early to be an answer presses nothing."""

    def on_click(self, event: events.Click) -> None:
        screen = self.screen
        if isinstance(screen, GuardedModal) and screen.early("click", event.time):
            event.stop()
            event.prevent_default()  # Button's own handler would press it


def cut_left(line: str, width: int) -> str:
    """`line` in at most `width` cells, cut from the left behind an ellipsis when wider."""
    if cell_len(line) <= width:
        return line
    start = 0
    while cell_len(line[start:]) > width - 1:
        start += 1
    return "…" + line[start:]


class ConfirmModal(GuardedModal[bool]):
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
                yield Static(self.shown(self.app.size.width), id="body", markup=False)
            with Horizontal(id="buttons"):
                yield AnswerButton(f"{self.yes} (y)", variant="error", id="yes")
                yield AnswerButton("No (n)", variant="primary", id="no")
            yield self.too_soon_note()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_resize(self, event: events.Resize) -> None:  # the dialog's height: GuardedModal's on_resize
        if self.make_body is not None:
            self.body = self.make_body(self.body_width(event.size.width))
        self.query_one("#body", Static).update(self.shown(event.size.width))

    def shown(self, screen_width: int) -> str:
        """The body as drawn on a screen that wide: each listed item (a line indented two
        spaces) kept to one line, cut from the left when wider (the end of its path, which
        names it, stays): wrapped, a path's tail would be a line of its own, which reads as
        one more thing going. Prose lines wrap."""
        width = max(4, self.body_width(screen_width))
        return "\n".join(cut_left(line, width) if line.startswith("  ") else line
                         for line in visible(self.body, lines=True).split("\n"))

    def fit_height(self, height: int) -> None:
        """The list scrolls; the title, the buttons and the note of an early key always show
        (11 rows: border, title, buttons and the screen's margin; 3 more with the note). On a
        short terminal the buttons take one row each (their borders went below the dialog's
        last row, and their labels with them: nothing said how to answer)."""
        short = self.compact_answers(height)
        rest = (14 if self.query_one("#too-soon").has_class("-said") else 11) - (2 if short else 0)
        self.query_one(VerticalScroll).styles.max_height = max(3, min(20, height - rest))

    def noted(self) -> None:
        self.fit_height(self.app.size.height)

    @on(Button.Pressed, "#yes")
    def said_yes(self, event: Button.Pressed) -> None:
        event.stop()
        if not self.early("press enter", event.time):
            self.dismiss(True)

    @on(Button.Pressed, "#no")
    def said_no(self, event: Button.Pressed) -> None:
        event.stop()
        if not self.early("press enter", event.time):
            self.dismiss(False)

    def action_answer(self, answer: bool) -> None:
        if not self.early("press y" if answer else "press n"):
            self.dismiss(answer)
