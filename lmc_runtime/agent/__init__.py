"""An agent loop against any OpenAI-compatible chat endpoint.

:class:`ChatClient` talks Chat Completions over HTTP (plain or streamed);
:class:`Agent` drives a :class:`~lmc_runtime.Computer` through the ``execute``
tool until the model answers in plain text.
"""

from __future__ import annotations

from .client import ChatClient, ChatConfig, ChatError
from .loop import Agent

__all__ = ["Agent", "ChatClient", "ChatConfig", "ChatError"]
