"""A small Chat Completions client over httpx, for any OpenAI-compatible server
(Jan's local server, Ollama, llama.cpp, vLLM, OpenAI itself).

:meth:`ChatClient.complete` returns the assistant message as a dict
(``role``, ``content``, ``tool_calls``), whether the server answered in one
JSON body or, with ``stream=True``, as server-sent events. A request answered
with HTTP 429, 502, 503 or 504 is sent again (``ChatConfig.retries`` times,
after ``Retry-After`` or 1, 2, 4... seconds); every other failure is a
:class:`ChatError`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio
import httpx

from ..errors import LMCError

__all__ = ["ChatClient", "ChatConfig", "ChatError", "TextCallback"]

#: Called with each piece of text as a streamed answer arrives.
TextCallback = Callable[[str], None]

DEFAULT_BASE_URL = "http://localhost:1337/v1"  # Jan's local API server
_RETRIED = frozenset({429, 502, 503, 504})


class ChatError(LMCError):
    """The chat endpoint failed or answered something that is not a chat completion."""


@dataclass(frozen=True)
class ChatConfig:
    """Where the model is: ``base_url`` (ending in ``/v1``), ``model`` and ``api_key``."""

    base_url: str = DEFAULT_BASE_URL
    model: str = ""
    api_key: str | None = None
    timeout: float = 600.0
    #: How many times a request is sent again after HTTP 429, 502, 503 or 504.
    retries: int = 2
    #: The longest wait before a retry, whatever ``Retry-After`` says (seconds).
    max_retry_wait: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> ChatConfig:
        """Read ``LMC_BASE_URL``/``OPENAI_BASE_URL``, ``LMC_MODEL``/``OPENAI_MODEL`` and
        ``LMC_API_KEY``/``OPENAI_API_KEY``; ``overrides`` that are not None win."""
        env = os.environ if env is None else env

        def pick(*names: str) -> str | None:
            return next((env[n] for n in names if env.get(n)), None)

        config = cls(
            base_url=pick("LMC_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL,
            model=pick("LMC_MODEL", "OPENAI_MODEL") or "",
            api_key=pick("LMC_API_KEY", "OPENAI_API_KEY"),
        )
        return replace(config, **{k: v for k, v in overrides.items() if v is not None})


class ChatClient:
    """An async Chat Completions client. Use ``async with`` or call :meth:`aclose`."""

    def __init__(self, config: ChatConfig, *, stream: bool = False) -> None:
        if not config.model:
            raise ChatError("no model given: pass --model or set LMC_MODEL")
        self.config = config
        self.stream = stream
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._http = httpx.AsyncClient(
            base_url=config.base_url.rstrip("/") + "/", headers=headers, timeout=config.timeout
        )

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] = (),
        *,
        on_text: TextCallback | None = None,
    ) -> dict[str, Any]:
        """The model's next assistant message for ``messages``."""
        body: dict[str, Any] = {"model": self.config.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        for attempt in range(self.config.retries + 1):
            try:
                return await self._complete_once(body, on_text)
            except _Retry as retry:
                if attempt == self.config.retries:
                    raise ChatError(str(retry)) from None
                await anyio.sleep(min(retry.wait(attempt), self.config.max_retry_wait))
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _complete_once(
        self, body: dict[str, Any], on_text: TextCallback | None
    ) -> dict[str, Any]:
        try:
            if self.stream:
                return await self._streamed({**body, "stream": True}, on_text)
            response = await self._http.post("chat/completions", json=body)
            _check(response)
            return _message_of(response.json())
        except httpx.HTTPError as exc:
            raise ChatError(f"the chat endpoint failed: {exc!r}") from exc
        except ValueError as exc:
            raise ChatError(f"the chat endpoint answered something unreadable: {exc}") from exc

    async def _streamed(self, body: dict[str, Any], on_text: TextCallback | None) -> dict[str, Any]:
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        async with self._http.stream("POST", "chat/completions", json=body) as response:
            if response.status_code >= 400:
                await response.aread()
            _check(response)
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                delta = _delta(json.loads(data))
                if delta.get("content"):
                    text.append(delta["content"])
                    if on_text is not None:
                        on_text(delta["content"])
                for part in delta.get("tool_calls") or []:
                    _merge_call(calls.setdefault(int(part.get("index", 0)), {}), part)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        return message


def _merge_call(call: dict[str, Any], part: Mapping[str, Any]) -> None:
    """Add one streamed tool-call delta to the call being assembled."""
    if part.get("id"):
        call["id"] = part["id"]
    call["type"] = "function"
    function = call.setdefault("function", {"name": "", "arguments": ""})
    delta = part.get("function") or {}
    function["name"] += delta.get("name") or ""
    function["arguments"] += delta.get("arguments") or ""


class _Retry(Exception):
    """An answer worth asking again for (rate limited, or the server briefly down)."""

    def __init__(self, text: str, retry_after: str | None) -> None:
        super().__init__(text)
        self.retry_after = retry_after

    def wait(self, attempt: int) -> float:
        """Seconds to wait: ``Retry-After`` (in seconds) if given, else 1, 2, 4..."""
        try:
            return max(0.0, float(self.retry_after or ""))
        except ValueError:
            return float(2**attempt)


def _check(response: httpx.Response) -> None:
    if response.status_code >= 400:
        text = f"the chat endpoint answered HTTP {response.status_code}: {response.text[:500]}"
        if response.status_code in _RETRIED:
            raise _Retry(text, response.headers.get("retry-after"))
        raise ChatError(text)


def _delta(event: Any) -> dict[str, Any]:
    """The ``delta`` of one streamed chunk; ChatError for an error event."""
    if not isinstance(event, dict):
        raise ChatError(f"not a chat completion chunk: {str(event)[:500]}")
    if event.get("error"):
        raise ChatError(f"the chat endpoint reported an error: {str(event['error'])[:500]}")
    choices = event.get("choices") or [{}]
    first = choices[0] if isinstance(choices, list) and isinstance(choices[0], dict) else {}
    delta = first.get("delta") or {}
    return delta if isinstance(delta, dict) else {}


def _message_of(payload: Any) -> dict[str, Any]:
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ChatError(f"not a chat completion: {str(payload)[:500]}") from exc
    if not isinstance(message, dict):
        raise ChatError(f"not a chat completion message: {message!r}")
    return message
