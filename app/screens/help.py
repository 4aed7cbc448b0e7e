"""`?`: every key of the screen below and of the app, with what it does, and where things live."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from app import format as fmt
from app.core import paths
from app.core.bounds import all_bounds


class HelpScreen(ModalScreen[None]):
    """The keys of the screen it covers, then the paths and bounds in force."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 90%; max-width: 100; height: 90%; border: thick $accent;
                            background: $surface; padding: 0 1; }
    HelpScreen #help-title { text-style: bold; padding-bottom: 1; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help-close", tooltip="Back")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("claudetto: keys (escape closes; ctrl+p opens the command palette)", id="help-title")
            with VerticalScroll():
                yield Static(self.keys_text(), id="help-keys", markup=False)

    def keys_text(self) -> str:
        lines: list[str] = []
        stack = self.app.screen_stack
        below = stack[-2] if len(stack) > 1 else None
        seen: set[str] = set()
        for owner in (below, self.app):
            if owner is None:
                continue
            for binding in getattr(owner, "BINDINGS", []):
                if not isinstance(binding, Binding) or binding.id in seen:
                    continue
                seen.add(binding.id or binding.key)
                key = binding.key_display or binding.key.replace("question_mark", "?")
                lines.append(f"  {key:<12} {binding.description:<16} {binding.tooltip}")
        lines += ["", "Where claudetto looks:"]
        for label, path in (("sessions", paths.sessions_dir()), ("Claude temp", paths.claude_tmp_dir()),
                            ("user temp", paths.user_tmp()), ("gate logs", paths.log_root()),
                            ("state", paths.claudetto_home())):
            lines.append(f"  {label:<12} {fmt.short_path(str(path))}")
        lines += ["", "Bounds in force:"]
        lines += [f"  {name:<18} {value}" for name, value in all_bounds().items()]
        return "\n".join(lines)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
