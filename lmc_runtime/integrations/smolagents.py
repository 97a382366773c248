"""smolagents: :class:`LmcExecutor`, a Python executor for ``CodeAgent`` on a computer.

It plugs in as smolagents' E2B and Docker executors do, and shares their
semantics (it is a ``RemotePythonExecutor``): ``send_tools`` defines the agent's
tools in the computer's Python kernel from their source, so the code calls them
there; ``send_variables`` sends the agent's state, serialized safely (or
pickled, with ``allow_pickle=True``); ``final_answer(...)`` ends the run and its
value comes back as the step's final answer. Unlike the local executor, the code
runs in a real interpreter, with every import allowed::

    from smolagents import CodeAgent
    from lmc_runtime import Computer
    from lmc_runtime.integrations.smolagents import LmcExecutor

    agent = CodeAgent(tools=[...], model=model, executor=LmcExecutor(Computer()))

Needs the ``[smolagents]`` extra.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..errors import MissingExtra
from ._runs import ComputerLike, Outcome, collect

try:
    from smolagents.local_python_executor import (  # type: ignore[import-untyped]
        CodeOutput,
    )
    from smolagents.monitoring import AgentLogger, LogLevel  # type: ignore[import-untyped]
    from smolagents.remote_executors import (  # type: ignore[import-untyped]
        RemotePythonExecutor,
    )
    from smolagents.serialization import SerializationError  # type: ignore[import-untyped]
    from smolagents.utils import AgentError  # type: ignore[import-untyped]
except ModuleNotFoundError as exc:
    what = "lmc_runtime.integrations.smolagents"
    raise MissingExtra(what, "smolagents", missing=exc.name) from exc

__all__ = ["LmcExecutor"]

#: How the final answer's exception ends the traceback: ``<name>: <value>``.
_FINAL = RemotePythonExecutor.FINAL_ANSWER_EXCEPTION

#: Prints which of ``wanted`` (normalized distribution names) are not installed,
#: as JSON, leaving no name behind in the kernel.
_MISSING = (
    "print(__import__('json').dumps(sorted(set({wanted!r}) - {{"
    "__import__('re').sub(r'[-_.]+', '-', d.metadata['Name'] or '').lower() "
    "for d in __import__('importlib.metadata').metadata.distributions()}})))"
)


def _normal(name: str) -> str:
    """A distribution's normalized name (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


class LmcExecutor(RemotePythonExecutor):  # type: ignore[misc]
    """Runs ``CodeAgent``'s code actions in the Python interpreter of ``computer``
    (a :class:`~lmc_runtime.Computer` or a :class:`~lmc_runtime.remote.RemoteComputer`).

    ``additional_imports`` are installed in that interpreter's environment with
    ``%pip`` first. ``timeout`` bounds each action, in seconds (None: the
    computer's own); a timed-out action is an error the agent sees. ``logger`` is
    smolagents' (by default an ``AgentLogger`` at ``INFO``). The computer belongs
    to the caller, who closes it.
    """

    def __init__(
        self,
        computer: ComputerLike,
        additional_imports: Sequence[str] = (),
        logger: AgentLogger | None = None,
        *,
        allow_pickle: bool = False,
        timeout: float | None = None,
    ) -> None:
        super().__init__(
            list(additional_imports), logger or AgentLogger(level=LogLevel.INFO), allow_pickle
        )
        self.computer = computer
        self.timeout = timeout
        self.installed_packages = self.install_packages(list(additional_imports))

    def install_packages(self, additional_imports: list[str]) -> list[str]:
        """Install the packages the kernel's environment lacks, with its own pip
        (``%pip``, not a ``pip`` on PATH); those it has are left as they are."""
        missing = self._missing(additional_imports)
        if missing:
            output = self.run_code_raise_errors(f"%pip install -q {' '.join(missing)}")
            self.logger.log(output.logs)
        return additional_imports

    def _missing(self, packages: list[str]) -> list[str]:
        """The distributions among ``packages`` the kernel's environment does not have."""
        if not packages:
            return []
        wanted = sorted({_normal(name) for name in packages})
        output = self.run_code_raise_errors(_MISSING.format(wanted=wanted))
        missing = json.loads(output.logs.strip().splitlines()[-1])
        return [str(name) for name in missing]

    def run_code_raise_errors(self, code: str) -> CodeOutput:
        """Run ``code``; a ``final_answer`` call gives its value as the final answer,
        any other end but ``ok`` raises ``AgentError`` with the output and why."""
        outcome = collect(self.computer, "python", code, timeout=self.timeout)
        final = next((m for m in outcome.messages if (m.extras or {}).get("error") == _FINAL), None)
        if final is not None:
            logs = "".join(
                m.content
                for m in outcome.messages
                if m is not final and m.type == "console" and m.format == "output"
            )
            value = self._final_value(final.content)
            return CodeOutput(output=value, logs=logs, is_final_answer=True)
        if not outcome.ok:
            raise AgentError(_failure(outcome), self.logger)
        return CodeOutput(output=None, logs=outcome.text, is_final_answer=False)

    def _final_value(self, traceback: str) -> Any:
        """The value the patched ``final_answer`` serialized into its exception, read
        from the traceback's last line (``FinalAnswerException: safe:...``)."""
        _, marker, encoded = traceback.rpartition(f"{_FINAL}: ")
        if not marker:
            raise AgentError(f"final_answer's value is missing from:\n{traceback}", self.logger)
        try:
            return self._deserialize_final_answer(encoded.rstrip("\n"), self.allow_pickle)
        except (ValueError, SerializationError) as exc:  # cut by the output budget, say
            raise AgentError(f"final_answer's value could not be read: {exc}", self.logger) from exc


def _failure(outcome: Outcome) -> str:
    return (
        f"{outcome.text}\nExecuting code yielded an error "
        f"(status {outcome.status}, exit code {outcome.exit_code})"
    )
