"""What the dashboard says when it finds no Claude Code data: where it looked, and the demo."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from app.core import paths
from app.widgets.plain import visible


class EmptyState(Static):
    """Shown in place of an empty table: the resolved paths that were searched."""

    DEFAULT_CSS = """
    EmptyState {
        display: none; border: round $accent; padding: 0 1; margin: 1 2; height: auto;
        max-height: 60%; overflow-y: auto; scrollbar-size-vertical: 1;
    }
    """

    def on_mount(self) -> None:
        self.update(Text(visible(self.message(), lines=True)))  # the paths as they are: no markup

    @staticmethod
    def message() -> str:
        looked = [
            ("session files", paths.sessions_dir()),
            ("Claude's temp folder", paths.claude_tmp_dir()),
            ("the user's temp folder", paths.user_tmp()),
            ("claudetto's gate logs", paths.log_root()),
            ("claudetto's records", paths.gc_dir()),
            ("projects", paths.projects_dir()),
        ]
        # the way out first: on a small terminal the box scrolls, and its top is what shows
        lines = ["No Claude Code data found. `claudetto --demo` (`make demo`) shows every screen on a "
                 "generated sandbox.", "", "claudetto looked in:"]
        lines += [f"  {what:<24} {where}" for what, where in looked]
        lines += ["", "Set CLAUDE_CONFIG_DIR, CLAUDE_CODE_TMPDIR or TMPDIR if Claude keeps them elsewhere."]
        return "\n".join(lines)
