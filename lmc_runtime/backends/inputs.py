"""Asking the caller's input callback for a line, for every backend."""

from __future__ import annotations

import inspect
from typing import Any

import anyio

from ..config import InputCallback

__all__ = ["call_input", "unanswered_input"]


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


def unanswered_input(reading: str = "input()") -> str:
    """The note for code that read input with no callback to answer it (``reading`` is
    what it called): how to answer it next time."""
    return (
        f"{reading} was called, but nothing answers input here: pass on_input= to "
        "Computer (lmc repl answers it at its prompt)"
    )
