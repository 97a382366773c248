"""An execution's LMC messages as the events of E2B's ``POST /execute`` stream.

Each event is one JSON line: ``stdout`` and ``stderr`` (``text``,
``timestamp``), ``result`` (a display: one field per format, ``is_main_result``
for the value of the cell's last expression), ``error`` (``name``, ``value``,
``traceback``), ``number_of_executions`` and, last, ``end_of_execution``.

A display's whole MIME bundle comes in its first message's ``extras.display``
(see :func:`~lmc_runtime.backends.jupyter.translate.mark_display`); the
display's other messages are parts of it and send nothing. A run that the
runtime stopped (its timeout, a limit, an interrupt) ends with an ``error``
naming why, as E2B's own server tells a kernel's end.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from ...backends.jupyter.translate import CHART_MIME, DISPLAY_KEY, TABLE_MIME
from ...messages import Message

__all__ = ["Events", "end_of_execution", "error_event", "result_event"]

#: E2B's result fields, by the MIME type each holds.
_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "e2b/data": "data",
    "e2b/chart": "chart",
    CHART_MIME: "chart",
    TABLE_MIME: "data",
}
#: Fields whose value is a JSON object, not text.
_OBJECTS = frozenset({"json", "data", "chart"})
#: How a run the runtime stopped is named in its ``error`` event.
_STOPPED = {
    "timeout": "TimeoutError",
    "interrupted": "KeyboardInterrupt",
    "memory_limit": "MemoryLimitExceeded",
    "cpu_limit": "CpuLimitExceeded",
    "process_limit": "ProcessLimitExceeded",
    "disk_limit": "DiskLimitExceeded",
    "file_size_limit": "FileSizeLimitExceeded",
    "kernel_died": "KernelDied",
    "restarted": "ContextRestarting",
    "aborted": "ExecutionAborted",
    "closed": "SandboxClosed",
    "backend_error": "BackendError",
    "unavailable": "LanguageUnavailable",
    "not_understood": "InvalidRequest",
    "malformed": "InvalidRequest",
    "server_lost": "ServerLost",
}


#: The refusals of a run that never ran, by their status, as the error's name.
_REFUSALS = {
    "not_understood": "InvalidRequest",
    "malformed": "InvalidRequest",
}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()


def _text(value: Any) -> str:
    return "".join(str(v) for v in value) if isinstance(value, list) else str(value)


def end_of_execution() -> dict[str, Any]:
    return {"type": "end_of_execution"}


def error_event(name: str, value: str, traceback: str = "") -> dict[str, Any]:
    return {"type": "error", "name": name, "value": value, "traceback": traceback}


def result_event(data: Mapping[str, Any], *, main: bool) -> dict[str, Any]:
    """A ``result`` event of the MIME bundle ``data``; types E2B has no field for
    go into ``extra``."""
    event: dict[str, Any] = {"type": "result", "is_main_result": main}
    extra: dict[str, Any] = {}
    for mime, value in data.items():
        field = _FIELDS.get(mime)
        if field is None:
            extra[mime] = value
        elif field in _OBJECTS:
            if isinstance(value, dict):
                event.setdefault(field, value)
        else:
            event[field] = _text(value)
    text = event.get("text")
    if isinstance(text, str) and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        event["text"] = text[1:-1]  # a string's repr, as E2B shows it
    if extra:
        event["extra"] = extra
    return event


def _error_parts(message: Message, name: str) -> tuple[str, str]:
    """An error output's value and traceback."""
    extras = message.extras or {}
    trace = str(message.content or "")
    value = extras.get("error_value")
    if isinstance(value, str):
        return value, trace
    last = next((line for line in reversed(trace.splitlines()) if name in line), "")
    _, _, said = last.partition(name)
    return said.lstrip(":").strip() or last.strip(), trace


class Events:
    """The events of one execution, fed its LMC messages in order."""

    def __init__(self) -> None:
        self.errored = False
        self.execution_count: int | None = None
        #: The run's final status, once it ended.
        self.status: str | None = None
        #: The runtime's last notice of each status (why the run ended so).
        self._notices: dict[str, str] = {}

    def feed(self, message: Message) -> list[dict[str, Any]]:
        """What ``message`` sends to E2B's client (often nothing)."""
        extras = message.extras or {}
        display = extras.get(DISPLAY_KEY)
        if isinstance(display, dict):
            return [] if display.get("part") else [self._display(message, display)]
        if message.type == "console" and message.format == "active_line":
            return self._final(extras) if message.content is None else []
        if message.type == "image":
            mime = "image/jpeg" if message.format == "base64.jpeg" else "image/png"
            data: dict[str, Any] = {mime: message.content}
            if isinstance(extras.get("chart"), dict):
                data[CHART_MIME] = extras["chart"]
            return [result_event(data, main=False)]
        if message.type == "code" and message.format == "html":
            return [result_event({"text/html": message.content}, main=False)]
        if message.type != "console" or not isinstance(message.content, str):
            return []
        name = extras.get("error")
        if isinstance(name, str) and name:
            return self._error(message, name)
        refused = _REFUSALS.get(str(extras.get("status")))
        if refused is not None and not self.errored:
            # The run was refused before it ran (an invalid variable name):
            # the reason, as the run's error.
            self.errored = True
            reason = extras.get("reason")
            return [error_event(refused, str(reason if reason else message.content).strip())]
        if "status" in extras:
            self._notices[str(extras["status"])] = message.content
        stream = "stderr" if extras.get("stream") == "stderr" or "status" in extras else "stdout"
        return [{"type": stream, "text": message.content, "timestamp": _now()}]

    def _display(self, message: Message, display: Mapping[str, Any]) -> dict[str, Any]:
        data = dict(display.get("data") or {})
        shown = display.get("shown")
        if isinstance(shown, str):
            data[shown] = message.content
        elif message.type == "console" and not data:
            # A runner's value (JavaScript, TypeScript): its text, as a kernel's.
            data["text/plain"] = str(message.content).removesuffix("\n")
        chart = (message.extras or {}).get("chart")
        if isinstance(chart, dict):
            data.setdefault(CHART_MIME, chart)
        return result_event(data, main=bool(display.get("main")))

    def _error(self, message: Message, name: str) -> list[dict[str, Any]]:
        if self.errored:
            return []
        self.errored = True
        value, trace = _error_parts(message, name)
        return [error_event(name, value, trace)]

    def _final(self, extras: Mapping[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        count = extras.get("execution_count")
        if isinstance(count, int) and not isinstance(count, bool):
            self.execution_count = count
        status = self.status = str(extras.get("status") or "ok")
        if status not in ("ok", "error", "truncated") and not self.errored:
            self.errored = True
            name = _STOPPED.get(status, status)
            ended = f"the execution ended: {status.replace('_', ' ')}"
            said = self._notices.get(status, "").strip().removeprefix("[lmc]").strip()
            out.append(error_event(name, f"{ended}: {said}" if said else ended))
        elif status == "error" and not self.errored:
            self.errored = True
            name = str(extras.get("error") or "Error")
            code = extras.get("exit_code")
            said = f"exit code {code}" if code is not None else "the execution failed"
            out.append(error_event(name, said))
        return out
