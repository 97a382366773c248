"""The way into a run: which languages and messages may run, and the session's own messages.

Whatever goes wrong on the way (the language fails to start, its backend
breaks, an interrupt comes before it started) ends the stream with a notice and
a final ``active_line`` null like any other run, never with an exception.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Container, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from . import replies
from .backends.base import ExecutionOptions
from .backends.registry import Registry
from .config import InputCallback, Limits, Timeouts
from .errors import BackendError
from .filters import FilterHost, Run
from .intake import MessageInput, Rejected, Request, accept
from .language_status import LanguageStatus
from .messages import Message
from .replies import Status
from .sessions import Sessions

__all__ = ["RunHost", "admit", "language_statuses", "prepare", "session_messages"]

logger = logging.getLogger(__name__)


def language_statuses(registry: Registry) -> dict[str, LanguageStatus]:
    """Every language ``registry`` knows, whether it can run here, and if not, why."""
    result = {}
    for name in registry:
        availability = registry.availability(name)
        result[name] = LanguageStatus(
            name, availability.available, availability.reason, registry.entry(name).aliases
        )
    return result


def admit(
    message: MessageInput, code: str | None, registry: Registry, running: Container[str]
) -> Request | Message:
    """The request in ``message``, or the one reply it gets when it cannot run:
    malformed, not code, an unknown language, or one that is not available here
    (a language ``running`` already needs no second look)."""
    try:
        request = accept(message, code, registry)
    except Rejected as rejected:
        return rejected.reply
    name = request.language
    if name not in running:
        availability = registry.availability(name)
        if not availability.available:
            return replies.not_understood(
                f"{name} is not available here: {availability.reason}",
                request.reply_to,
                status=Status.UNAVAILABLE,
            )
    return request


class RunHost(FilterHost, Protocol):
    """What :func:`prepare` reads of the Computer a run is for: its settings as
    they are now, and the methods its filters may call."""

    @property
    def timeouts(self) -> Timeouts: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def on_input(self) -> InputCallback | None: ...

    @property
    def track_active_line(self) -> bool: ...

    @property
    def spill_dir(self) -> Path | None: ...


def prepare(
    request: Request,
    computer: RunHost,
    task_group: TaskGroup,
    timeout: float | None,
    env: Mapping[str, str] | None = None,
) -> Run:
    """The run of ``request`` on ``computer``, with its settings as they are now;
    ``env`` adds to (and overrides) the message's ``extras.env``."""
    timeouts = computer.timeouts
    options = ExecutionOptions(
        reply_to=request.reply_to,
        timeout=timeout if timeout is not None else timeouts.execution,
        interrupt_grace=timeouts.interrupt_grace,
        input_timeout=timeouts.input,
        on_input=computer.on_input,
        track_lines=computer.track_active_line,
        env={**request.env, **(env or {})},
    )
    return Run(
        request.language,
        request.code,
        request.reply_to,
        options,
        replace(computer.limits, spill_dir=computer.spill_dir),
        computer,
        task_group,
    )


async def session_messages(sessions: Sessions, run: Run) -> AsyncGenerator[Message, None]:
    """The session's own messages for ``run``; a failure becomes a notice and a
    final ``active_line``, never an exception."""
    name, reply_to = run.language, run.reply_to
    try:
        session = await sessions.get(name)
        if session is None:
            yield replies.notice(
                "Execution was interrupted before it started; nothing ran.",
                Status.INTERRUPTED,
                reply_to,
                state_lost=False,
            )
            yield replies.active_line(None, reply_to, status=Status.INTERRUPTED, state_lost=False)
            return
        outs = session.execute(run.code, run.options)
        try:
            async for out in outs:
                yield out
        finally:
            # At once, also when the run is stopped early: closing stops the code.
            aclose = getattr(outs, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
    except BackendError as exc:
        yield replies.notice(f"the {name} backend failed: {exc}", Status.BACKEND_ERROR, reply_to)
        yield replies.active_line(None, reply_to, status=Status.BACKEND_ERROR)
    except Exception as exc:
        logger.exception("internal error while running %s code", name)
        yield replies.notice(
            f"internal error in lmc-runtime: {exc!r}", Status.BACKEND_ERROR, reply_to
        )
        yield replies.active_line(None, reply_to, status=Status.BACKEND_ERROR)
