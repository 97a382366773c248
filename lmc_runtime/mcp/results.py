"""An execution's computer messages as an MCP tool result, and as progress.

Output (stdout, stderr, results, tracebacks, the runtime's ``[lmc]`` notes)
becomes text, in order, consecutive pieces joined; images become image
content; HTML its source text. The final message's ``extras`` give the status:
``structuredContent`` carries it (with ``execution_count``, ``exit_code``,
``state_lost`` when known), and, as the protocol recommends for clients that
read only the content, the last text block repeats it as JSON.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from ..messages import Message

__all__ = ["EXECUTE_OUTPUT_SCHEMA", "Report", "describe", "error_result", "text_result"]

#: The details of the final message that the result carries besides its status.
_DETAILS = ("execution_count", "exit_code", "state_lost")
#: The longest piece of output a progress notification repeats.
_PROGRESS_CHARS = 200

EXECUTE_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {
            "type": "string",
            "description": "how the execution ended: ok, error, timeout, interrupted, "
            "kernel_died, not_understood, unavailable, a sandbox limit...",
        },
        "execution_count": {"type": ["integer", "null"]},
        "exit_code": {"type": ["integer", "null"]},
        "state_lost": {"type": ["boolean", "null"]},
    },
    "required": ["status"],
}


def text_result(text: str, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    """A successful result of one text block (and structured content, if given)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def error_result(text: str) -> types.CallToolResult:
    """A tool error the model can read and act on."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def describe(message: Message) -> str | None:
    """What a progress notification says of ``message`` (None: nothing to say)."""
    if message.is_final:
        return None
    if message.format == "active_line":
        return f"line {message.content}"
    if message.format == "output" and isinstance(message.content, str):
        text = message.content
        return text if len(text) <= _PROGRESS_CHARS else text[: _PROGRESS_CHARS - 1] + "…"
    return f"{message.type} ({message.format})"


class Report:
    """Collects one execution's messages into its tool result."""

    def __init__(self) -> None:
        self.content: list[types.ContentBlock] = []
        self.status: str | None = None
        self.details: dict[str, Any] = {}
        self._text: list[str] = []

    def _flush(self) -> None:
        if self._text:
            self.content.append(types.TextContent(type="text", text="".join(self._text)))
            self._text = []

    def add(self, message: Message) -> None:
        """Take one message of the execution, in the order they came."""
        extras = message.extras or {}
        if message.is_final:
            self.status = message.status or self.status
            self.details = {key: extras[key] for key in _DETAILS if key in extras}
            return
        if message.format == "active_line":
            return
        if message.type == "image" and (message.format or "").startswith("base64."):
            self._flush()
            mime = "image/" + (message.format or "").removeprefix("base64.")
            self.content.append(
                types.ImageContent(type="image", data=str(message.content), mime_type=mime)
            )
            return
        if message.content is None:
            return
        if message.type == "code":  # an HTML display: its source, a block of its own
            self._flush()
            self.content.append(types.TextContent(type="text", text=str(message.content)))
            return
        # A message that cannot run is its only reply, with no final message.
        if message.status in ("not_understood", "malformed", "unavailable"):
            self.status = message.status
        self._text.append(str(message.content))

    @property
    def structured(self) -> dict[str, Any]:
        return {"status": self.status or "ok", **self.details}

    def result(self) -> types.CallToolResult:
        """The tool result: the content, then the status as JSON text; an error
        result unless the code ran and ended ``ok``."""
        self._flush()
        structured = self.structured
        summary = types.TextContent(type="text", text=json.dumps(structured))
        return types.CallToolResult(
            content=[*self.content, summary],
            structured_content=structured,
            is_error=structured["status"] != "ok",
        )
