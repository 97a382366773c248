"""The input side: a prompt_toolkit session with history, highlighting and key bindings.

Enter runs the input when it is complete for the current language (see
:mod:`.completeness`) and otherwise starts an indented new line; Alt-Enter
runs it whatever it looks like. Ctrl-C clears the line (prompt_toolkit raises
``KeyboardInterrupt``, which the REPL catches), Ctrl-D on an empty line leaves
(``EOFError``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.lexers import DynamicLexer, Lexer, PygmentsLexer
from prompt_toolkit.output import ColorDepth, Output
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from .completeness import indent_after, is_complete
from .display import pygments_name

__all__ = ["ReplPrompt", "key_bindings", "open_history"]

logger = logging.getLogger(__name__)

_INDENT = "    "


def open_history(path: Path) -> History:
    """Persistent history in ``path``; in memory if that place cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError as exc:
        logger.warning("history kept in memory only: %s: %s", path, exc)
        return InMemoryHistory()
    return FileHistory(str(path))


def key_bindings(language: Callable[[], str]) -> KeyBindings:
    """Enter runs complete input in ``language()``, Alt-Enter runs any input."""
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        document = buffer.document
        at_end = not document.text_after_cursor.strip()
        if at_end and is_complete(language(), buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n" + indent_after(language(), document.text_before_cursor))

    def _dedent_and_close(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        line = buffer.document.current_line_before_cursor
        if line and not line.strip() and not buffer.document.current_line_after_cursor.strip():
            buffer.delete_before_cursor(min(len(line), len(_INDENT)))
        buffer.insert_text(event.data)

    for closer in ")]}":
        bindings.add(closer)(_dedent_and_close)

    @bindings.add("escape", "enter")
    def _run_now(event: KeyPressEvent) -> None:
        event.current_buffer.validate_and_handle()

    return bindings


def _lexer_for(language: str) -> Lexer | None:
    try:
        lexer_class = type(get_lexer_by_name(pygments_name(language)))
    except ClassNotFound:
        return None
    return PygmentsLexer(lexer_class)


class ReplPrompt:
    """Reads one input at a time for the current language."""

    def __init__(
        self,
        history: History,
        *,
        colour: bool,
        input: Input | None = None,
        output: Output | None = None,
    ) -> None:
        self.language = "python"
        self._colour = colour
        self._lexers: dict[str, Lexer | None] = {}
        self._session: PromptSession[str] = PromptSession(
            history=history,
            multiline=True,
            key_bindings=key_bindings(lambda: self.language),
            lexer=DynamicLexer(self._lexer) if colour else None,
            color_depth=None if colour else ColorDepth.MONOCHROME,
            prompt_continuation=self._continuation,
            enable_history_search=False,
            input=input,
            output=output,
        )
        self._questions: PromptSession[str] = PromptSession(
            multiline=False,
            color_depth=None if colour else ColorDepth.MONOCHROME,
            input=input,
            output=output,
        )

    def _lexer(self) -> Lexer | None:
        if self.language not in self._lexers:
            self._lexers[self.language] = _lexer_for(self.language)
        return self._lexers[self.language]

    def _message(self) -> str:
        return f"{self.language}> "

    def _continuation(self, width: int, line_number: int, wrap_count: int) -> str:
        return "." * max(0, width - 1) + " "

    async def read(self) -> str:
        """One input; raises ``KeyboardInterrupt`` (Ctrl-C) or ``EOFError`` (Ctrl-D)."""
        text: str = await self._session.prompt_async(self._message(), handle_sigint=False)
        return text

    async def ask(self, question: str) -> str:
        """Answer the running code's ``input(question)``."""
        answer: str = await self._questions.prompt_async(question, handle_sigint=False)
        return answer
