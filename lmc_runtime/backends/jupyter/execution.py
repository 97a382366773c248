"""A run on a Jupyter kernel: the core's :class:`~..core.Execution` plus the kernel's
own messages (results, displays, errors, pager payloads) and input requests.

An interrupt waits until the code itself is about to run: the kernel's startup
code says so (``lmc_begun``, see :class:`.Progress`), or, if it never does, a
moment after the kernel began the request. An idle kernel ignores SIGINT, IPython
swallows one in a ``pre_run_cell`` hook and R ends on one outside the code's
evaluation: sent earlier, the interrupt was lost (or R died), and the ladder
restarted a kernel whose code never saw it. One that still lands before the code
runs makes ipykernel end the request with no reply at all; the kernel's ``idle``
for it, then no reply within :data:`REPLY_GRACE`, ends the run as stopped, its
state kept. CPython runs a SIGINT's handler between two bytecodes: one that lands
just before a blocking call (``time.sleep``, a read) waits until the call returns,
so a kernel whose startup code handles :attr:`JupyterExecution.wake_signal` is
sent it a few times after an interrupt (:data:`WAKES`): the call is interrupted,
and the pending handler runs.

An announced input request comes twice (on stdin, and a copy on IOPub): the n-th
is answered on whichever channel brings it first; its echo waits for the IOPub
copy, which is ordered with the output before it.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from ... import replies
from ...media import SvgRenderer
from ...messages import Message
from ...replies import Status
from ..base import ExecutionOptions
from ..core import Execution, Finished, Interpreter, Route, Supervisor
from ..core.turns import first_of
from ..inputs import ask_input, unanswered_input
from .interpreter import JupyterInterpreter
from .items import InputRequest, Progress, Reply
from .translate import translate_iopub, translate_payload

__all__ = ["REPLY_GRACE", "WAKES", "JupyterExecution", "KernelRoute", "PythonExecution"]

logger = logging.getLogger(__name__)

#: How long a stopped run's reply may trail the kernel's ``idle`` for it.
REPLY_GRACE = 1.0
#: How long after ``begun`` an unannounced evaluation is taken to have started.
UNANNOUNCED = 1.0
#: The pauses before each wake-up that follows an interrupt, while the run goes on.
WAKES = (0.05, 0.2, 1.0)
#: The error of a read of input with no callback: ipykernel's, and lmc-r's (``lmc_startup.R``).
_NO_STDIN_ERROR = "StdinNotImplementedError"
_NO_STDIN_R = "input is not available: this execution has no input callback"


class KernelRoute(Route):
    """A run's route that also knows how far the kernel got with it (see :class:`.Progress`)."""

    def __init__(self, key: object, tag: str, svg: SvgRenderer | None = None) -> None:
        super().__init__(key, tag)
        self.reached = {state: anyio.Event() for state in ("begun", "evaluating", "idle")}
        #: Renders the run's SVG displays as the session's own processes.
        self.svg = svg

    def absorb(self, item: Any) -> bool:
        if isinstance(item, Progress):  # the route's news: no run reads it
            self.reached[item.state].set()
            return True
        return super().absorb(item)


class JupyterExecution(Execution):
    """One ``execute_request`` in flight; the kernel's sampler paces active lines."""

    dwell = 0.0
    #: After interrupting code that waits for input, also answer it with ``"\x04"``
    #: (Jupyter's end of input), for kernels whose wait an interrupt may not reach.
    wakes_input_with_eof = False
    #: A signal the kernel handles by doing nothing, sent after an interrupt to
    #: interrupt a blocking call that holds up the interrupt's handler (None: none).
    wake_signal: int | None = None

    def __init__(self, supervisor: Supervisor, route: Route, options: ExecutionOptions) -> None:
        super().__init__(supervisor, route, options)
        self._requests: dict[str, int] = {}  # input requests seen, per channel
        self._answered = 0
        self._echoes: dict[int, Message] = {}  # waiting for their IOPub copy
        self._asking: anyio.CancelScope | None = None
        self._waiting: InputRequest | None = None  # asked, not answered yet
        self._interruptible = False  # the code's start was not announced in time
        self._deferred = False  # an interrupt was asked before the code could take it
        self._waking = False

    def _not_yet(self) -> bool:
        """Whether an interrupt must wait: the code is not about to run yet."""
        route = self.route
        return isinstance(route, KernelRoute) and not (
            self._interruptible or route.reached["evaluating"].is_set()
        )

    async def interrupt_code(self) -> None:
        self._deferred = self._not_yet()
        if self._deferred:
            return  # :meth:`insist` sends it once the kernel can take it
        if self._asking is not None:
            self._asking.cancel()  # a callback still thinking is abandoned
        await super().interrupt_code()
        current = self.supervisor.current
        if self.wake_signal is not None and not self._waking and current is not None:
            self._waking = True
            self.supervisor.start_soon(lambda: self._wake(current))
        waiting, self._waiting = self._waiting, None
        if waiting is not None and self.wakes_input_with_eof:
            waiting.answer("\x04")

    async def _wake(self, kernel: Interpreter) -> None:
        """Send :attr:`wake_signal` to a local ``kernel`` after each of :data:`WAKES`,
        until the run ends or the kernel is replaced (a gateway's takes no signal)."""
        finished, signum = self.route.finished, self.wake_signal
        if signum is None or not isinstance(kernel, JupyterInterpreter):
            return
        for pause in WAKES:
            with anyio.move_on_after(pause):
                await finished.wait()
            if finished.is_set() or self.supervisor.current is not kernel:
                return
            try:
                await kernel.send_signal(signum)
            except Exception:  # a kernel that just ended: its watcher reports that
                logger.info("waking %s failed", self.who, exc_info=True)
                return

    async def insist(self) -> None:
        """Send an interrupt asked before the code could take it once it can; end
        the run if the kernel went idle without a reply (see the module's doc)."""
        route = self.route
        if not isinstance(route, KernelRoute):
            return
        if self._not_yet():
            evaluating, begun = route.reached["evaluating"], route.reached["begun"]
            await first_of(evaluating, begun, route.finished)
            with anyio.move_on_after(UNANNOUNCED):
                await first_of(evaluating, route.finished)
            if route.finished.is_set():
                return
            self._interruptible = True
        if self._deferred:  # the code may have announced its start since it was asked
            await self.interrupt_code()
        await first_of(route.reached["idle"], route.finished)
        with anyio.move_on_after(REPLY_GRACE):
            await route.finished.wait()
        if not route.finished.is_set():
            await route.put(Finished(Status.INTERRUPTED))

    async def handle(self, item: Any) -> AsyncIterator[Any]:
        if isinstance(item, InputRequest):
            async for message in self._answer(item):
                yield message
        elif isinstance(item, Reply) and item.channel == "iopub":
            svg = self.route.svg if isinstance(self.route, KernelRoute) else None
            for message in await translate_iopub(item.msg, self.reply_to, svg=svg):
                yield message
            reading = _unanswered_read(item.msg) if self.options.on_input is None else None
            if reading is not None:
                yield replies.notice(unanswered_input(reading), Status.ERROR, self.reply_to)
        elif isinstance(item, Reply) and item.msg["msg_type"] == "execute_reply":
            payload = item.msg["content"].get("payload") or []
            for message in translate_payload(payload, self.reply_to):
                yield message

    async def _answer(self, request: InputRequest) -> AsyncIterator[Message]:
        """Answer one copy of a request; yield what the caller should see."""
        channel = request.channel
        number = self._requests[channel] = self._requests.get(channel, 0) + 1
        if number <= self._answered:
            if channel == "iopub" and number in self._echoes:
                yield self._echoes.pop(number)
            return
        self._answered += 1
        prompt = str(request.content.get("prompt", ""))
        value, failure = None, None  # so if an interrupt abandons the callback
        self._waiting = request
        with anyio.CancelScope() as self._asking:
            value, failure = await ask_input(self.options, prompt)
        self._asking = None
        if (value is None and failure is None) or self.stop_reason is not None:
            return
        if value is None:
            text = f"input({prompt!r}) could not be answered: {failure}"
            yield replies.notice(text, Status.ERROR, self.reply_to)
            await self.request_stop("input")
            return
        self._waiting = None
        request.answer(value)
        shown = "*" * len(value) if request.content.get("password") else value
        echo = replies.output(f"{prompt}{shown}\n", self.reply_to)
        if channel == "iopub" or not request.announced:
            yield echo
        else:
            self._echoes[number] = echo

    def finish(self, done: Finished) -> list[Message]:
        """Echoes of answered input whose IOPub copy never came, then the end."""
        out = [self._echoes[n] for n in sorted(self._echoes)]
        if done.status == Status.ABORTED and self.stop_reason is None:
            text = "The kernel aborted this execution without running it."
            out.append(replies.notice(text, Status.ABORTED, self.reply_to))
        return out + super().finish(done)


class PythonExecution(JupyterExecution):
    """A run on the Python kernel, whose startup code handles SIGURG by doing nothing."""

    wake_signal = signal.SIGURG


def _unanswered_read(msg: Mapping[str, Any]) -> str | None:
    """What the code called to read input, if ``msg`` is the error of a read with
    nothing to answer it (Python's ``input()``, R's ``readline()``)."""
    if msg.get("msg_type") != "error":
        return None
    content = msg.get("content") or {}
    if content.get("ename") == _NO_STDIN_ERROR:
        return "input()"
    return "readline()" if _NO_STDIN_R in str(content.get("evalue")) else None
