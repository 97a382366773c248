"""Asking the caller's input callback for a line, for every backend."""

from __future__ import annotations

import inspect
from typing import Any

import anyio

from ..config import InputCallback

__all__ = ["call_input"]


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
