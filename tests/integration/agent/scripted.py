"""A scripted OpenAI-compatible chat-completions server on loopback.

It answers each POST to ``/v1/chat/completions`` with the next scripted
assistant message (as one JSON body, or as server-sent events when the request
asks for ``stream``), and records every request so tests can check what the
client sent. A script entry ``{"status": 429, "retry_after": "0"}`` answers
with that HTTP error instead; ``{"events": [...]}`` streams those raw SSE data
lines. With ``split=True`` every streamed event is written a few bytes at a
time, so events arrive cut anywhere.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: list[dict[str, Any]], *, split: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = list(script)
        self.split = split
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any] | None:
        with self.lock:
            self.requests.append(body)
            self.headers_seen.append(headers)
            return self.script.pop(0) if self.script else None


def _chunks(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The message as streamed deltas: text in pieces, tool-call arguments in pieces."""
    yield {"role": "assistant"}
    text = message.get("content") or ""
    for start in range(0, len(text), 5):
        yield {"content": text[start : start + 5]}
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        yield {
            "tool_calls": [
                {
                    "index": index,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["function"]["name"], "arguments": ""},
                }
            ]
        }
        for start in range(0, len(arguments), 7):
            piece = arguments[start : start + 7]
            yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def _send(self, data: bytes) -> None:
        step = 3 if self.server.split else len(data)
        for start in range(0, len(data), step):
            self.wfile.write(data[start : start + step])
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        reply = self.server.next_reply(body, dict(self.headers))
        if reply is None:
            self.send_error(500, "the script has no more replies")
            return
        if "status" in reply:
            self.send_response(reply["status"])
            if "retry_after" in reply:
                self.send_header("Retry-After", reply["retry_after"])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            events = reply.get("events") or [
                json.dumps(
                    {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
                )
                for delta in _chunks(reply)
            ]
            for event in [*events, "[DONE]"]:
                self._send(f"data: {event}\n\n".encode())
            return
        payload = json.dumps(
            {
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
