"""The REPL loop: read an input, run it on the Computer, show what comes back.

Everything runs in one AnyIO event loop: the prompt (prompt_toolkit's
``prompt_async``), the Computer's sessions and a signal watcher. While code
runs the terminal is in normal mode, so Ctrl-C arrives as SIGINT; the watcher
turns it into ``Computer.ainterrupt`` for the running language and the run
goes on to its end (the runtime's notice says where it stopped and whether
state was lost). At the prompt Ctrl-C is a key that clears the line. SIGTERM
and SIGHUP end the REPL the way Ctrl-D does: every interpreter shut down.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..computer import Computer
from ..computer_like import ComputerLike
from ..errors import MessageError, RemoteError, UsageError
from ..messages import Message, new_id, parse_message
from ..options.timeouts import execution_timeouts
from .commands import (
    Code,
    Command,
    RawMessage,
    classify,
    help_text,
    languages_text,
    save_transcript,
)
from .lines import Reader
from .options import ReplOptions
from .tty import quiet_typeahead
from .view import RunDisplay, View

__all__ = ["InputCancelled", "Repl"]

logger = logging.getLogger(__name__)


class InputCancelled(Exception):
    """The person at the terminal declined to answer the code's ``input()``."""


@dataclass(frozen=True)
class _Running:
    language: str
    display: RunDisplay


class Repl:
    """One interactive session: a prompt, a view and a Computer."""

    def __init__(
        self, options: ReplOptions, view: View, prompt: Reader, terminal_fd: int | None = None
    ) -> None:
        self.options = options
        #: The terminal typed on, whose echo is off while code runs.
        self.terminal_fd = terminal_fd
        self.view = view
        self.prompt = prompt
        #: Every message of the session, assistant and computer, for ``%save``.
        self.transcript: list[dict[str, Any]] = []
        self._computer: ComputerLike | None = None
        self._running: _Running | None = None
        self._leaving = False
        self._echo: str | None = None
        self._commands: dict[str, Callable[[str], Awaitable[None]]] = {
            "restart": self._cmd_restart,
            "languages": self._cmd_languages,
            "save": self._cmd_save,
            "help": self._cmd_help,
            "exit": self._cmd_exit,
        }

    @property
    def computer(self) -> ComputerLike:
        assert self._computer is not None, "the REPL is not serving"
        return self._computer

    def _new_computer(self) -> ComputerLike:
        """The Computer, or with ``--remote`` a RemoteComputer (whose code gets no input)."""
        if self.options.remote is not None:
            from ..options.remote import remote_computer

            args = self.options.remote
            if self.options.language not in args.languages:
                args.languages = [*args.languages, self.options.language]
            return remote_computer(args)
        return Computer(
            timeouts=execution_timeouts(self.options.timeout),
            on_input=self._answer_input,
            **self.options.interpreters,
        )

    async def serve(self) -> int:
        """Run until Ctrl-D, ``%exit``, SIGTERM or SIGHUP; every interpreter is shut down."""
        computer = self._new_computer()
        # Received until every interpreter is shut down: a second SIGHUP while the
        # Computer closes (a closing terminal sends more than one) must not kill the
        # REPL with its interpreters still running.
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            try:
                await computer.__aenter__()  # a remote one knows its languages once open
            except RemoteError as exc:
                self.view.error(str(exc))
                return 2
            name = computer.resolve(self.options.language)
            if name is None:
                known = ", ".join(computer.languages)
                self.view.error(f"unknown language {self.options.language!r}; known: {known}")
                await computer.aclose()
                return 2
            self.prompt.language = name
            try:
                async with anyio.create_task_group() as tg:
                    self._computer = computer
                    try:
                        with anyio.CancelScope() as scope:
                            tg.start_soon(self._watch_signals, signals, tg, scope)
                            self._greet(name)
                            await self._loop()
                    finally:
                        tg.cancel_scope.cancel()
                        self._computer = None
            finally:
                await computer.aclose()
        return 0

    def _greet(self, name: str) -> None:
        status = self.computer.languages[name]
        self.view.info(f"lmc repl · {name} · %help for help · Ctrl-D exits")
        if not status.available:
            self.view.error(f"{name} is not available here: {status.reason}")

    async def _watch_signals(
        self, signals: AsyncIterator[int], tg: TaskGroup, scope: anyio.CancelScope
    ) -> None:
        async for signum in signals:
            if signum != signal.SIGINT:
                scope.cancel()
                return
            running = self._running
            if running is not None:
                running.display.note("Interrupting… (Ctrl-C again if it does not stop)")
                tg.start_soon(self._interrupt, running.language)

    async def _interrupt(self, language: str) -> None:
        try:
            await self.computer.ainterrupt(language)
        except (UsageError, RemoteError) as exc:  # a raw message in a language that never started
            logger.info("nothing to interrupt: %s", exc)

    async def _loop(self) -> None:
        while not self._leaving:
            try:
                text = await self.prompt.read()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return
            await self.handle(text)

    async def handle(self, text: str) -> None:
        """Act on one input: a command, a raw LMC message or code."""
        item = classify(text)
        if isinstance(item, Command):
            await self._command(item)
        elif isinstance(item, RawMessage):
            await self._raw(item)
        elif isinstance(item, Code):
            await self.run_code(item.text)

    # -- commands ------------------------------------------------------------------

    async def _command(self, command: Command) -> None:
        builtin = self._commands.get(command.name)
        if builtin is not None:
            await builtin(command.argument)
            return
        name = self.computer.resolve(command.name)
        if name is None:  # not ours: the language decides (IPython magics, say)
            await self.run_code(f"%{command.name} {command.argument}".rstrip())
            return
        status = self.computer.languages[name]
        if not status.available:
            self.view.error(f"{name} is not available here: {status.reason}")
            return
        self.prompt.language = name
        self.view.info(f"switched to {name}")

    async def _cmd_restart(self, argument: str) -> None:
        target = argument or self.prompt.language
        try:
            await self.computer.arestart(target)
        except (UsageError, RemoteError) as exc:
            self.view.error(str(exc))
            return
        self.view.info(f"{self.computer.resolve(target)} restarted; its state is gone")

    async def _cmd_languages(self, argument: str) -> None:
        self.view.info(languages_text(self.prompt.language, self.computer.languages.values()))

    async def _cmd_save(self, argument: str) -> None:
        if not argument:
            self.view.error("usage: %save FILE")
            return
        path = Path(argument).expanduser()
        try:
            count = save_transcript(path, self.transcript)
        except OSError as exc:
            self.view.error(f"could not write {path}: {exc.strerror or exc}")
            return
        self.view.info(f"saved {count} messages to {path}")

    async def _cmd_help(self, argument: str) -> None:
        self.view.info(help_text(self.prompt.language, self.computer.languages.values()))

    async def _cmd_exit(self, argument: str) -> None:
        self._leaving = True

    # -- running -------------------------------------------------------------------

    async def _raw(self, raw: RawMessage) -> None:
        if raw.problem is not None:
            self.view.error(
                f"that line is not an LMC message: it is not valid JSON ({raw.problem})"
            )
            return
        data = raw.data
        if isinstance(data, dict) and "id" not in data:
            data = {**data, "id": new_id()}
        language, code = self.prompt.language, ""
        if isinstance(data, dict):
            fmt, content = data.get("format"), data.get("content")
            if isinstance(fmt, str):
                language = self.computer.resolve(fmt) or fmt
            code = content if isinstance(content, str) else ""
        await self._execute(data, language, code)

    async def run_code(self, code: str) -> None:
        """Run ``code`` in the current language, showing the run as it goes."""
        language = self.prompt.language
        request = {"role": "assistant", "type": "code", "format": language, "content": code}
        await self._execute({**request, "id": new_id()}, language, code)

    async def _execute(self, request: Any, language: str, code: str) -> None:
        # A malformed request is left out; the computer's "not understood" reply is kept.
        with contextlib.suppress(MessageError):
            self.transcript.append(parse_message(request).to_dict())
        display = self.view.begin(request if isinstance(request, dict) else {}, language, code)
        self._running = _Running(language, display)
        try:
            with quiet_typeahead(self.terminal_fd):
                async for message in self.computer.arun(request):
                    self.transcript.append(message.to_dict())
                    if not self._is_echo(message):
                        display.add(message)
        except RemoteError as exc:  # the server refused, or the connection was lost
            self.view.error(str(exc))
        finally:
            self._running = None
            with contextlib.suppress(OSError):  # a terminal that hung up takes no more
                display.close()

    def _is_echo(self, message: Message) -> bool:
        """Whether ``message`` repeats an answer the terminal already shows."""
        if self._echo is None or message.format != "output" or message.content != self._echo:
            return False
        self._echo = None
        return True

    async def _answer_input(self, question: str) -> str:
        running = self._running
        if running is not None:
            running.display.suspend()
        try:
            answer = await self.prompt.ask(question)
        except KeyboardInterrupt as exc:
            raise InputCancelled("Ctrl-C at the input prompt") from exc
        except EOFError as exc:
            raise InputCancelled("Ctrl-D at the input prompt") from exc
        finally:
            if running is not None:
                running.display.resume()
        if self.terminal_fd is not None and self.options.mode != "jsonl":
            self._echo = f"{question}{answer}\n"  # the prompt left it on screen already
        return answer
