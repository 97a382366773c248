"""AutoGen: :class:`LmcCodeExecutor`, an ``autogen_core`` code executor on a computer.

Code blocks run in order, each in its language's interpreter, whose state
persists between blocks and calls (unlike AutoGen's command-line executors,
which start a process per block). A block in a language the computer does not
run, or that fails, ends the call there, as AutoGen's executors do. Cancelling
the ``CancellationToken`` interrupts the running code; the result then says so
(exit code 130)::

    from autogen_agentchat.agents import CodeExecutorAgent
    from lmc_runtime import Computer
    from lmc_runtime.integrations.autogen import LmcCodeExecutor

    executor = LmcCodeExecutor(Computer())
    agent = CodeExecutorAgent("runner", code_executor=executor,
                              supported_languages=executor.supported_languages)

Needs the ``[autogen]`` extra (autogen-core).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import anyio

from ..errors import MissingExtra
from ..messages import Message
from ._runs import AsyncRunner, ComputerLike, Outcome, canonical

try:
    from autogen_core import CancellationToken
    from autogen_core.code_executor import CodeBlock, CodeExecutor, CodeResult
except ModuleNotFoundError as exc:
    raise MissingExtra("lmc_runtime.integrations.autogen", "autogen", missing=exc.name) from exc

__all__ = ["LmcCodeExecutor", "LmcCodeResult"]


@dataclass
class LmcCodeResult(CodeResult):
    """AutoGen's ``CodeResult`` (``exit_code``, ``output``) with the LMC messages
    of every block that ran, and the status of the last one."""

    status: str = "ok"
    messages: list[Message] = field(default_factory=list)


class LmcCodeExecutor(CodeExecutor):
    """Runs AutoGen ``CodeBlock``s on ``computer`` (a :class:`~lmc_runtime.Computer`
    or a :class:`~lmc_runtime.remote.RemoteComputer`); ``timeout`` bounds each
    block, in seconds (None: the computer's own).

    ``start`` and ``stop`` do not open or close the computer, which belongs to
    the caller; ``restart`` restarts every language a block ran in, once each
    whatever names its blocks gave it. A RemoteComputer knows its session's
    languages (``supported_languages``) once it is open.
    """

    def __init__(self, computer: ComputerLike, *, timeout: float | None = None) -> None:
        self.computer = computer
        self._runner = AsyncRunner(computer, timeout=timeout)
        self._used: set[str] = set()

    @property
    def supported_languages(self) -> list[str]:
        """Every name (and alias) of a language that runs on the computer, for
        ``CodeExecutorAgent(supported_languages=...)``."""
        names: list[str] = []
        for status in self.computer.languages.values():
            if status.available:
                names += [status.name, *status.aliases]
        return names

    async def execute_code_blocks(
        self, code_blocks: list[CodeBlock], cancellation_token: CancellationToken
    ) -> LmcCodeResult:
        """Run the blocks in order; stop at the first that does not end ``ok``."""
        messages: list[Message] = []
        outputs: list[str] = []
        status, exit_code = "ok", 0
        for block in code_blocks:
            if cancellation_token.is_cancelled():
                break
            language = block.language.strip().lower()
            outcome = await self._execute(language, block.code, cancellation_token)
            if outcome.ran:
                self._used.add(canonical(self.computer, language))
            messages += outcome.messages
            outputs.append(outcome.text)
            status, exit_code = outcome.status, outcome.exit_code
            if not outcome.ok:
                break
        if cancellation_token.is_cancelled() and status == "ok":
            status, exit_code = "interrupted", 130
        return LmcCodeResult(exit_code, "".join(outputs), status, messages)

    async def _execute(self, language: str, code: str, token: CancellationToken) -> Outcome:
        stop = anyio.Event()
        loop = asyncio.get_running_loop()

        def cancelled() -> None:  # called in whichever thread cancels the token
            loop.call_soon_threadsafe(stop.set)

        token.add_callback(cancelled)
        return await self._runner.run(language, code, stop=stop)

    async def start(self) -> None:
        """Nothing to start: the computer starts each interpreter on first use."""

    async def stop(self) -> None:
        """Nothing to stop: the computer belongs to the caller, who closes it."""

    async def restart(self) -> None:
        """Restart the interpreters of every language a block ran in; their state is lost."""
        for language in sorted(self._used):
            await self._runner.restart(language)
