"""An agent loop against any OpenAI-compatible chat endpoint.

:class:`ChatClient` talks Chat Completions over HTTP (plain or streamed);
:class:`Agent` drives a :class:`~lmc_runtime.Computer` through the ``execute``
tool until the model answers in plain text. It needs the ``[agent]`` extra
(``pip install 'lmc-runtime[agent]'``); without it, importing this package raises
:class:`~lmc_runtime.errors.MissingExtra`.
"""

from __future__ import annotations

from ..errors import MissingExtra

try:
    import httpx  # noqa: F401  (the [agent] extra)
except ModuleNotFoundError as exc:
    raise MissingExtra("lmc_runtime.agent", "agent", missing=exc.name) from exc

from .client import ChatClient, ChatConfig, ChatError
from .loop import Agent

__all__ = ["Agent", "ChatClient", "ChatConfig", "ChatError"]
