"""The supersede dialog: the memory line to strike, and the correction to add below it.

It only asks (STYLE rule 10): it returns the correction, or None when cancelled; the caller
writes it through `memory.supersede`. Escape or Cancel change nothing.
"""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, Static

from app.screens.confirm import AnswerButton, GuardedModal
from app.widgets.plain import visible


class CorrectionInput(Input):
    """The correction's one line. A paste of several lines (a note copied from an editor)
    keeps every line, joined by spaces as the core joins them: Input alone keeps the first
    and drops the rest without a word, and the correction written would not be the one given.
    A control character pasted (an escape sequence copied from a terminal, a NUL) is drawn as
    its symbol: the box would show it as nothing (or send it to the terminal), the core
    refuses a correction holding one, and the text the user gave was lost on that refusal."""

    def _on_paste(self, event: events.Paste) -> None:
        joined = visible(" ".join(event.text.split()))
        if joined:
            if self.selection.is_empty:
                self.insert_text_at_cursor(joined)
            else:
                self.replace(joined, *self.selection)
        event.stop()
        event.prevent_default()  # Input's own handler would paste the first line again


class SupersedeModal(GuardedModal[str | None]):
    """Strike line N of a memory file and add a dated correction: asks for the correction.
    An enter or a click too soon after it shows writes nothing (`GuardedModal`): the
    correction may be filled in already (the index fix), and must be read first."""

    DEFAULT_CSS = """
    SupersedeModal { align: center middle; }
    SupersedeModal > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 100%; border: thick $accent; background: $surface;
        padding: 0 1;
    }
    SupersedeModal #struck-box { height: auto; max-height: 15vh; }
    SupersedeModal #supersede-title { text-style: bold; width: 100%; padding-bottom: 1; }
    SupersedeModal #struck { padding: 0 1; background: $boost; width: 100%; }
    SupersedeModal #why { color: $text-muted; padding: 1 0 0 0; }
    SupersedeModal #buttons { height: auto; align-horizontal: right; padding-top: 1; }
    SupersedeModal Button { margin-left: 2; min-width: 10; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="supersede-cancel", tooltip="Change nothing")]

    def __init__(self, file: str, line: int, text: str, evidence: str, correction: str = "",
                 room: int = 2000) -> None:
        super().__init__()
        self.room = room  # the most characters the correction may have (`memory.correction_room`)
        self.file = file
        self.line = line
        self.text = text
        self.evidence = evidence
        self.correction = correction

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(visible(f"Supersede line {self.line} of {self.file}")), id="supersede-title")
            with VerticalScroll(id="struck-box"):  # a long line scrolls: the title and the input stay
                yield Static(visible(self.text), id="struck", markup=False)
            yield Static(f"Why: {visible(self.evidence)}\nThe line is struck (~~…~~), not deleted, and the correction "
                         "goes right below it with today's date.", id="why", markup=False)
            yield CorrectionInput(value=visible(self.correction), placeholder="the correction: what is true now",
                                  id="correction")
            with Horizontal(id="buttons"):
                yield AnswerButton("Supersede (enter)", variant="warning", id="write")
                yield AnswerButton("Cancel (esc)", variant="primary", id="cancel")
            yield self.too_soon_note()

    def on_mount(self) -> None:
        self.query_one("#correction", Input).focus()

    def fit_height(self, height: int) -> None:
        """On a short terminal the box and the buttons take one row each, the title one line,
        and the why (the finding, which the screen behind shows) gives way: else the box and
        the buttons fell below the dialog's last row, and a correction was typed blind."""
        short = self.compact_answers(height)
        self.query_one("#correction", Input).compact = short
        self.query_one("#why").display = not short
        self.query_one("#supersede-title").styles.height = 1 if short else None
        self.query_one("#struck-box").styles.max_height = max(1, height - 9) if short else None

    @on(Input.Submitted, "#correction")
    @on(Button.Pressed, "#write")
    def write(self) -> None:
        if self.early("press enter"):
            return
        correction = " ".join(self.query_one("#correction", Input).value.split())
        if visible(correction) != correction:  # not pasted (a paste draws them): said while the text is here
            self.notify("The correction holds a control character; write it as plain text.", severity="warning")
            return
        if not correction:
            self.notify("Write the correction first: what is true now.", severity="warning")
            return
        if len(correction) > self.room:  # said here, where the text is still there to shorten
            self.notify(f"The correction is {len(correction)} characters; this line takes at most {self.room}. "
                        "Shorten it (a topic file holds the detail).", severity="warning")
            return
        self.dismiss(correction)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        if not self.early("press escape"):
            self.dismiss(None)
