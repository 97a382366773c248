"""Asking the caller's input callback for a line, for every backend."""

from __future__ import annotations

import inspect
import logging
from typing import TYPE_CHECKING, Any

import anyio

from ..config import InputCallback

if TYPE_CHECKING:
    from .base import ExecutionOptions

__all__ = ["ask_input", "call_input", "unanswered_input"]

logger = logging.getLogger(__name__)


async def call_input(callback: InputCallback, prompt: str) -> str:
    """Ask ``callback`` for a line: awaited if async, in a worker thread if not."""
    if inspect.iscoroutinefunction(callback):
        value: Any = await callback(prompt)
    else:
        value = await anyio.to_thread.run_sync(callback, prompt, abandon_on_cancel=True)
        if inspect.isawaitable(value):
            value = await value
    if not isinstance(value, str):
        raise TypeError(f"the input callback returned {type(value).__name__}, not str")
    return value


async def ask_input(options: ExecutionOptions, prompt: str) -> tuple[str | None, str | None]:
    """``(line, None)``: the run's input callback answered ``prompt`` with UTF-8 text
    within ``options.input_timeout``; else ``(None, why not)``, for the notice that
    tells the caller why the code's read got no answer."""
    callback = options.on_input
    if callback is None:
        return None, "nothing answers input here"
    try:
        with anyio.fail_after(options.input_timeout):
            value = await call_input(callback, prompt)
        value.encode("utf-8")
    except TimeoutError:
        return None, "no answer in time"
    except Exception as exc:  # the caller's callback: any failure of it is told
        logger.debug("the input callback failed", exc_info=True)
        return None, repr(exc)
    return value, None


def unanswered_input(reading: str = "input()") -> str:
    """The note for code that read input with no callback to answer it (``reading`` is
    what it called): how to answer it next time."""
    return (
        f"{reading} was called, but nothing answers input here: pass on_input= to "
        "Computer (lmc repl answers it at its prompt)"
    )
