"""The rich display: output streams as it comes, the code shows the line now running.

Complete output lines are printed for good as they arrive (stderr and errors
in red, the runtime's notes in yellow). While code runs long enough to report
an active line, a live panel below the output shows the code with that line
highlighted, and the output line still being written; the panel goes away when
the run ends, leaving the output. Images are saved to files whose paths are
printed, then previewed when the run is over.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text

from ..messages import Message
from ..replies import Status
from .images import HalfBlocks, ImageStore, Preview, as_png, kitty_escape
from .view import RunDisplay

__all__ = ["RichRun", "RichView", "code_view", "output_style", "pygments_name"]

logger = logging.getLogger(__name__)

_PYGMENTS = {"shell": "bash", "sh": "bash", "javascript": "javascript", "r": "r"}
_NOTICE_STYLES: dict[str, str] = {
    Status.ERROR: "bold red",
    Status.BACKEND_ERROR: "bold red",
    Status.NOT_UNDERSTOOD: "red",
    Status.MALFORMED: "red",
    Status.UNAVAILABLE: "red",
}
_ACTIVE = Style(bgcolor="grey30", bold=True)
_MARKER = "\u276f"  # heavy right-pointing angle


def pygments_name(language: str) -> str:
    """The Pygments lexer name for a canonical language name."""
    return _PYGMENTS.get(language, language)


def output_style(message: Message) -> str:
    """The style of a console output message: errors red, notes yellow."""
    extras = message.extras or {}
    status = message.status
    if isinstance(message.content, str) and message.content.startswith("[lmc] "):
        return _NOTICE_STYLES.get(str(status), "yellow")
    if extras.get("error") or extras.get("stream") == "stderr" or status == Status.ERROR:
        return "red"
    return "dim" if extras.get("late") else ""


def code_view(code: str, language: str, active: int | None, max_lines: int = 20) -> Text:
    """``code`` with line numbers, syntax colours and the ``active`` line marked."""
    syntax = Syntax(code, pygments_name(language), background_color="default")
    lines = syntax.highlight(code).split("\n", allow_blank=True)[: code.count("\n") + 1]
    first = 0
    if len(lines) > max_lines:
        centre = (active or 1) - 1
        first = min(max(0, centre - max_lines // 2), len(lines) - max_lines)
    width = len(str(len(lines)))
    out = Text()
    for number, line in enumerate(lines[first : first + max_lines], first + 1):
        here = number == active
        gutter = f"{_MARKER if here else ' '} {number:>{width}} "
        out.append(gutter, style="bold yellow" if here else "dim")
        shown = line.copy()
        if here:
            shown.stylize(_ACTIVE)
            shown.pad_right(1)
        out.append_text(shown)
        out.append("\n")
    out.rstrip()
    return out


class RichRun:
    """One execution on the rich display."""

    def __init__(self, view: RichView, language: str, code: str) -> None:
        self.view = view
        self.console = view.console
        self.language = language
        self.code = code
        self.line: int | None = None
        self._note: str | None = None
        self._live: Live | None = None
        self._pending = Text()
        self._carriage_return = False
        self._saved: list[Path] = []
        self._handlers: dict[tuple[str, str | None], Callable[[Message], None]] = {
            ("console", "output"): self._output,
            ("console", "active_line"): self._active_line,
            ("code", "html"): self._html,
        }

    # -- messages ----------------------------------------------------------------

    def add(self, message: Message) -> None:
        handler = self._handlers.get((message.type, message.format))
        if handler is not None:
            handler(message)
        elif message.type == "image":
            self._image(message)
        else:
            self._print(Text(f"[{message.type}/{message.format}] {message.content}"))

    def _output(self, message: Message) -> None:
        self._feed(str(message.content), output_style(message))

    def _active_line(self, message: Message) -> None:
        if message.is_final or not isinstance(message.content, int):
            return
        self.line = message.content
        self._refresh()

    def _image(self, message: Message) -> None:
        try:
            path = self.view.images.save_image(str(message.content), message.format)
        except OSError as exc:
            self._print(Text(f"[image could not be saved: {exc}]", style="red"))
            return
        self._saved.append(path)
        self._print(Text(f"[image] {path}", style="green"))

    def _html(self, message: Message) -> None:
        try:
            path = self.view.images.save_html(str(message.content))
        except OSError as exc:
            self._print(Text(f"[HTML could not be saved: {exc}]", style="red"))
            return
        self._print(Text(f"[html] {path}", style="green"))

    # -- text ---------------------------------------------------------------------

    def _feed(self, text: str, style: str) -> None:
        """Add output; print the lines it completes, keep the unfinished one pending."""
        done: list[Text] = []
        pieces = text.replace("\r\n", "\n").split("\n")
        for index, piece in enumerate(pieces):
            for part_index, part in enumerate(piece.split("\r")):
                if part_index:
                    self._carriage_return = True
                if part:
                    if self._carriage_return:
                        self._pending, self._carriage_return = Text(), False
                    self._pending.append_text(Text.from_ansi(part, style=style))
            if index < len(pieces) - 1:
                done.append(self._pending)
                self._pending, self._carriage_return = Text(), False
        if done:
            self._print(Text("\n").join(done))
        elif self._pending.plain:
            self._refresh()

    def _print(self, renderable: RenderableType) -> None:
        # While the live panel is up, rich prints above it and redraws it below.
        if self._live is not None:
            self._live.update(self._render())
        self.console.print(renderable, soft_wrap=True, highlight=False)

    # -- the live panel ---------------------------------------------------------

    def _render(self) -> RenderableType:
        height = max(3, self.console.height - 8)
        footer = self._note or (
            f"line {self.line} · Ctrl-C interrupts" if self.line else "running · Ctrl-C interrupts"
        )
        panel = Panel(
            code_view(self.code, self.language, self.line, height),
            title=self.language,
            title_align="left",
            border_style="dim",
            expand=False,
        )
        parts: list[RenderableType] = [self._pending] if self._pending.plain else []
        return Group(*parts, panel, Text(footer, style="dim"))

    def _refresh(self) -> None:
        if self._live is None:
            self._live = Live(
                self._render(),
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start(refresh=True)
        else:
            self._live.update(self._render(), refresh=True)

    def note(self, text: str) -> None:
        if text == self._note:  # Ctrl-C pressed again says nothing new
            return
        self._note = text
        if self._live is not None:
            self._refresh()
        else:
            self._print(Text(text, style="yellow"))

    def suspend(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def resume(self) -> None:
        if self.line is not None:
            self._refresh()

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._pending.plain:
            self.console.print(self._pending, soft_wrap=True, highlight=False)
            self._pending = Text()
        for path in self._saved:
            self._show_preview(path)

    def _show_preview(self, path: Path) -> None:
        try:
            if self.view.preview is Preview.KITTY:
                escape = kitty_escape(as_png(path), min(self.console.width - 1, 80))
                self.console.file.write(escape + "\n")
                self.console.file.flush()
            elif self.view.preview is Preview.BLOCKS:
                self.console.print(HalfBlocks(path))
        except (OSError, ValueError) as exc:
            logger.info("no preview for %s: %s", path, exc)


class RichView:
    """The colourful terminal display."""

    def __init__(self, console: Console, images: ImageStore, preview: Preview) -> None:
        self.console = console
        self.images = images
        self.preview = preview

    def begin(self, request: Mapping[str, Any], language: str, code: str) -> RunDisplay:
        return RichRun(self, language, code)

    def info(self, text: str) -> None:
        self.console.print(Text(text, style="cyan"), highlight=False)

    def error(self, text: str) -> None:
        self.console.print(Text(text, style="bold red"), highlight=False)
