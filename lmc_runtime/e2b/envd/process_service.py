"""envd's ``process.Process`` service, as E2B's SDKs call it: ``commands.run``,
``list``, ``kill``, ``send_stdin``, ``connect``, ``close_stdin``, and the PTYs.

- ``Start`` streams a start event (the command's pid), its output as data
  events, keepalives (every ``Keepalive-Ping-Interval`` seconds while it is
  quiet), then its end: exit code, status, error.
- A client that leaves a stream (or whose ``timeout`` runs out) leaves the
  command running, as E2B's envd does: ``connect`` finds it again, ``kill``
  ends it, and the sandbox's end ends it in any case.
- ``user``: the sandbox has one user, ``user``; a command asked to run as
  anyone else (``root``) is refused with ``permission_denied``.
"""

from __future__ import annotations

import base64
import binascii
import math
import signal
from collections.abc import AsyncGenerator, AsyncIterator

import anyio
from starlette.routing import Route

from ..door import door_of, sandbox_of
from .codes import ConnectError
from .connect import Call, Service
from .process_command import Command, Ended, Event, Output
from .process_launch import Launch, LaunchRefused, check_user
from .process_table import ProcessTable, table_of
from .proto import process_pb2 as pb

__all__ = ["process_routes"]

process = Service("process.Process")

#: The keepalive interval when the client names none, and the shortest honoured.
_KEEPALIVE = 50.0
_KEEPALIVE_MIN = 1.0
#: A terminal's size when the client gives none, and the largest accepted.
_PTY_DEFAULT = (80, 24)
_PTY_MAX = 10_000
_SIGNALS = {pb.SIGNAL_SIGKILL: signal.SIGKILL, pb.SIGNAL_SIGTERM: signal.SIGTERM}


def process_routes() -> list[Route]:
    """The routes of ``process.Process`` (``POST /process.Process/Start``, ...)."""
    return process.routes()


async def _table(call: Call) -> ProcessTable:
    return await table_of(sandbox_of(call.request), door_of(call.request).sandboxes)


async def _found(call: Call, selector: pb.ProcessSelector) -> Command:
    table = await _table(call)
    which = selector.WhichOneof("selector")
    if which == "pid":
        command = table.find(pid=selector.pid)
        name = f"pid {selector.pid}"
    elif which == "tag":
        command = table.find(tag=selector.tag)
        name = f"tag {selector.tag[:80]!r}"
    else:
        raise ConnectError("invalid_argument", "name the process by its pid or its tag")
    if command is None:
        raise ConnectError("not_found", f"process with {name} not found")
    return command


def _user(call: Call) -> str | None:
    """The user the client asks for (``Authorization: Basic base64(user:)``)."""
    header = call.request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise ConnectError("invalid_argument", "the Authorization header cannot be read") from None
    return decoded.partition(":")[0]


def _keepalive(call: Call) -> float:
    header = call.request.headers.get("keepalive-ping-interval", "")
    try:
        seconds = float(header) if header else _KEEPALIVE
    except ValueError:
        return _KEEPALIVE
    return min(max(seconds, _KEEPALIVE_MIN), _KEEPALIVE) if math.isfinite(seconds) else _KEEPALIVE


def _size(pty: pb.PTY) -> tuple[int, int]:
    columns, rows = pty.size.cols or _PTY_DEFAULT[0], pty.size.rows or _PTY_DEFAULT[1]
    if columns > _PTY_MAX or rows > _PTY_MAX:
        raise ConnectError(
            "invalid_argument", f"a terminal has at most {_PTY_MAX} columns and rows"
        )
    return columns, rows


def _launch(request: pb.StartRequest) -> Launch:
    config = request.process
    return Launch(
        cmd=config.cmd,
        args=tuple(config.args),
        envs=dict(config.envs),
        cwd=config.cwd if config.HasField("cwd") else None,
        pty=_size(request.pty) if request.HasField("pty") else None,
        # Older SDKs say nothing and expect a stdin (envd's default).
        stdin=request.stdin if request.HasField("stdin") else True,
    )


def _event(event: Event) -> pb.ProcessEvent:
    if isinstance(event, Output):
        data = pb.ProcessEvent.DataEvent(**{event.stream: event.data})
        return pb.ProcessEvent(data=data)
    return pb.ProcessEvent(end=_end(event))


def _end(ended: Ended) -> pb.ProcessEvent.EndEvent:
    end = pb.ProcessEvent.EndEvent(
        exit_code=ended.exit_code, exited=ended.exited, status=ended.status
    )
    if ended.error is not None:
        end.error = ended.error
    return end


async def _events(command: Command, call: Call) -> AsyncIterator[pb.ProcessEvent]:
    """The start event, then the command's events (keepalives while it is quiet),
    until its end; leaving early leaves the command running."""
    yield pb.ProcessEvent(start=pb.ProcessEvent.StartEvent(pid=command.pid))
    interval = _keepalive(call)
    receive = command.subscribe()
    with receive:
        while True:
            event: Event | None = None
            with anyio.move_on_after(interval):
                try:
                    event = await receive.receive()
                except anyio.EndOfStream:
                    return
            if event is None:
                yield pb.ProcessEvent(keepalive=pb.ProcessEvent.KeepAlive())
                continue
            if isinstance(event, Ended) and command.cut:
                # As E2B's clients see a sandbox that ends under a command: its
                # connection ends, and they ask the sandbox's health why.
                raise ConnectError("unavailable", "the sandbox ended while the command ran")
            yield _event(event)
            if isinstance(event, Ended):
                return


@process.unary("List", pb.ListRequest)
async def list_processes(request: pb.ListRequest, call: Call) -> pb.ListResponse:
    answer = pb.ListResponse()
    for command in await _table(call):
        launch = command.launch
        info = answer.processes.add(pid=command.pid)
        if command.tag is not None:
            info.tag = command.tag
        info.config.cmd = launch.cmd
        info.config.args.extend(launch.args)
        info.config.envs.update(launch.envs)
        if launch.cwd is not None:
            info.config.cwd = launch.cwd
    return answer


@process.server_stream("Start", pb.StartRequest)
async def start(request: pb.StartRequest, call: Call) -> AsyncGenerator[pb.StartResponse, None]:
    try:
        check_user(_user(call))
    except LaunchRefused as exc:
        raise ConnectError("permission_denied", str(exc)) from None
    table = await _table(call)
    tag = request.tag if request.HasField("tag") else None
    try:
        command = await table.start(_launch(request), tag)
    except LaunchRefused as exc:
        code = "resource_exhausted" if "at once" in str(exc) else "invalid_argument"
        raise ConnectError(code, str(exc)) from None
    except OSError as exc:
        raise ConnectError("internal", f"the command could not be started: {exc}") from None
    async for event in _events(command, call):
        yield pb.StartResponse(event=event)


@process.server_stream("Connect", pb.ConnectRequest)
async def connect(
    request: pb.ConnectRequest, call: Call
) -> AsyncGenerator[pb.ConnectResponse, None]:
    command = await _found(call, request.process)
    async for event in _events(command, call):
        yield pb.ConnectResponse(event=event)


async def _write(command: Command, data: pb.ProcessInput) -> None:
    which = data.WhichOneof("input")
    if which is None:
        return
    try:
        await command.write(getattr(data, which), pty=which == "pty")
    except OSError as exc:
        raise ConnectError("failed_precondition", f"cannot write to the process: {exc}") from None


@process.unary("SendInput", pb.SendInputRequest)
async def send_input(request: pb.SendInputRequest, call: Call) -> pb.SendInputResponse:
    await _write(await _found(call, request.process), request.input)
    return pb.SendInputResponse()


@process.client_stream("StreamInput", pb.StreamInputRequest)
async def stream_input(
    requests: AsyncIterator[pb.StreamInputRequest], call: Call
) -> pb.StreamInputResponse:
    command: Command | None = None
    async for message in requests:
        which = message.WhichOneof("event")
        if which == "start":
            command = await _found(call, message.start.process)
        elif which == "data":
            if command is None:
                raise ConnectError("invalid_argument", "the stream must start with a start event")
            await _write(command, message.data.input)
    return pb.StreamInputResponse()


@process.unary("SendSignal", pb.SendSignalRequest)
async def send_signal(request: pb.SendSignalRequest, call: Call) -> pb.SendSignalResponse:
    signum = _SIGNALS.get(request.signal)
    if signum is None:
        raise ConnectError("invalid_argument", "the signal must be SIGKILL or SIGTERM")
    (await _found(call, request.process)).kill(signum)
    return pb.SendSignalResponse()


@process.unary("CloseStdin", pb.CloseStdinRequest)
async def close_stdin(request: pb.CloseStdinRequest, call: Call) -> pb.CloseStdinResponse:
    command = await _found(call, request.process)
    try:
        command.close_stdin()
    except OSError as exc:
        raise ConnectError("failed_precondition", str(exc.strerror or exc)) from None
    return pb.CloseStdinResponse()


@process.unary("Update", pb.UpdateRequest)
async def update(request: pb.UpdateRequest, call: Call) -> pb.UpdateResponse:
    command = await _found(call, request.process)
    if request.HasField("pty"):
        try:
            command.resize(*_size(request.pty))
        except OSError as exc:
            raise ConnectError("failed_precondition", str(exc.strerror or exc)) from None
    return pb.UpdateResponse()
