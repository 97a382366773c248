"""``lmc serve``'s WebSocket given fuzzed frames: text frames with every wire input,
binary frames (some not UTF-8), frames over the size limit, control and hello
frames with bad fields, and chunk sequences with bad fields.

After each frame a sentinel ``print`` runs: every message that came before its
reply answers the fuzzed frame, and must be one valid answer (or none, for a
hello or an interrupt). A frame over the limit is answered by closing with 1009
("message too big"), and the next frame goes on a new connection. After each
batch the server runs ``print(1)`` and left no process behind.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from lmc_runtime import Message
from lmc_runtime.adapters.chunks import ChunkAssembler
from lmc_runtime.messages import parse_message

from ..service.server import TOKEN
from .checks import GUARD, NOT_UNDERSTOOD, Tally, answers, check_replies, fuzz_settings
from .service import Target
from .strategies import Wire, bad_values, code_message, mix, odd_strings, wires

pytestmark = pytest.mark.integration

MAX_FRAME = 1 << 20
_HEADER = {"role": "assistant", "type": "code", "format": "python"}


@dataclass(frozen=True)
class Frame:
    """One fuzzed frame (or chunk sequence), and what must answer it."""

    data: list[str | bytes]
    expect: Literal["any", "none", "maybe"]
    label: str
    wire: Wire | None = None


def _from_wire(wire: Wire, binary: bool) -> Frame:
    text = wire.text
    if binary or text is None:
        return Frame([wire.data], "any", "ws: binary", wire)
    return Frame([text], "any", wire.label, wire)


def _deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


def _control() -> st.SearchStrategy[Frame]:
    value = st.one_of(
        bad_values().map(json.dumps),
        odd_strings().map(json.dumps),
        st.integers(100, 3000).map(_deep_text),
        st.just(json.dumps("c" * (MAX_FRAME - 100))),
    )
    return value.map(lambda raw: Frame(['{"control": ' + raw + "}"], "any", "ws: control"))


def _hello() -> st.SearchStrategy[Frame]:
    value = st.one_of(
        bad_values().map(json.dumps),
        st.fixed_dictionaries({"chunks": bad_values()}).map(json.dumps),
    )
    # A bad one is answered "not understood"; {} or a boolean chunks is a hello.
    hello = value.map(lambda raw: Frame(['{"hello": ' + raw + "}"], "maybe", "ws: hello"))
    # Nested too deeply to parse, it is answered; less deeply, it is a hello.
    deep = st.integers(100, 3000).map(
        lambda depth: Frame(['{"hello": ' + _deep_text(depth) + "}"], "maybe", "ws: hello")
    )
    return hello | deep


@st.composite
def _chunks(draw: st.DrawFn) -> Frame:
    """A start, content and end chunk of a safe message, one field of one made bad."""
    chunks: list[dict[str, Any]] = [
        {**_HEADER, "start": True, "id": "chunked"},
        {**_HEADER, "content": "print(3)"},
        {**_HEADER, "end": True},
    ]
    which = draw(st.integers(0, 2))
    field = draw(st.sampled_from(["start", "content", "end", "role", "type", "format", "id"]))
    chunks[which][field] = draw(bad_values() | odd_strings(8) | st.none())
    texts = [json.dumps(chunk) for chunk in chunks]
    return Frame(texts, "any", f"ws: chunk {field}")


def frames() -> st.SearchStrategy[Frame]:
    text = st.builds(_from_wire, wires(), st.just(False))
    return mix(
        text,
        text,
        text,
        st.builds(_from_wire, wires(), st.just(True)),
        _control(),
        _hello(),
        _chunks(),
    )


class _Socket:
    """One connection, with the reading and the sentinel runs the checks need."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.numbers = itertools.count()

    async def message(self) -> Message:
        """The next message, assembled if it comes as chunks (after a hello asked)."""
        assembler = ChunkAssembler()
        with anyio.fail_after(GUARD):
            while True:
                frame = json.loads(await self.ws.recv())
                if "start" not in frame and not assembler.open:
                    return parse_message(frame)
                whole = assembler.feed(frame)
                if whole is not None and not assembler.open:
                    return whole

    async def sentinel(self) -> list[Message]:
        """Run a sentinel ``print``; every other message that came before its final."""
        number = next(self.numbers)
        sentinel = f"sentinel-{number}"
        text = json.dumps(code_message("python", f"print({number})", id=sentinel))
        others: list[Message] = []
        other_ended = waiting = False
        await self.ws.send(text)
        while True:
            message = await self.message()
            if message.in_reply_to != sentinel:
                others.append(message)
                ends = message.is_final or message.status in NOT_UNDERSTOOD  # a refusal ends too
                other_ended = other_ended or ends
                if ends and waiting:  # what kept the sentinel busy has ended
                    waiting = False
                    await self.ws.send(text)
            elif message.status == "busy":  # a fuzzed message runs: again once it ends
                waiting = not other_ended
                if other_ended:
                    await self.ws.send(text)
            elif message.is_final:
                assert message.status == "ok", message
                return others


@asynccontextmanager
async def _connected(fuzzed: Target) -> AsyncIterator[_Socket]:
    url = f"{fuzzed.server.ws_url}/v1/sessions/{fuzzed.session_id}/ws?token={TOKEN}"
    async with connect(url, max_size=None, open_timeout=GUARD) as ws:
        yield _Socket(ws)


def _check_answer(frame: Frame, answer: list[Message]) -> None:
    if frame.expect == "none":
        assert not answer, f"a {frame.label} frame was answered: {answer!r:.300}"
        return
    assert answer or frame.expect == "maybe", f"no answer to a {frame.label} frame"
    wire = frame.wire
    groups = answers(answer)
    if wire is not None and len(frame.data) == 1:
        assert len(groups) == 1, f"{len(groups)} answers to one frame: {answer!r:.300}"
        expected = wire if frame.label != "ws: binary" else Wire(b"", "refuse", "binary")
        check_replies(groups[0], expected)
        return
    for group in groups:
        check_replies(group, Wire(b"", "any", frame.label))


async def _fuzz(fuzzed: Target, batch: list[Frame], tally: Tally) -> None:
    socket_cm = _connected(fuzzed)
    socket = await socket_cm.__aenter__()
    try:
        for frame in batch:
            with tally.trying(frame.label, frame.data):
                if sum(len(part) for part in frame.data) > MAX_FRAME:
                    await socket.ws.send(frame.data[0])
                    with pytest.raises(ConnectionClosed) as closed, anyio.fail_after(GUARD):
                        while True:
                            await socket.ws.recv()
                    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
                    await socket_cm.__aexit__(None, None, None)
                    socket_cm = _connected(fuzzed)
                    socket = await socket_cm.__aenter__()
                    continue
                for part in frame.data:
                    await socket.ws.send(part)
                _check_answer(frame, await socket.sentinel())
    finally:
        await socket_cm.__aexit__(None, None, None)


@fuzz_settings(15)
@given(batch=st.lists(frames(), min_size=1, max_size=8))
def test_every_frame_is_answered_and_the_connection_kept(
    fuzzed: Target, batch: list[Frame]
) -> None:
    tally = Tally("serve: WebSocket")
    anyio.run(_fuzz, fuzzed, batch, tally)
    with tally.trying("health", "print(1) after the batch"):
        fuzzed.assert_healthy()


def test_a_timeout_too_large_for_a_float_is_refused_and_the_connection_kept(
    fuzzed: Target,
) -> None:
    """Regression: ``extras.timeout`` as a JSON integer past a float's range made
    ``math.isfinite`` raise OverflowError, and the WebSocket closed with 1011."""

    async def scenario() -> list[Message]:
        async with _connected(fuzzed) as socket:
            huge = json.dumps(code_message("python", "print(1)", id="huge-timeout"))
            await socket.ws.send(huge[:-1] + ', "extras": {"timeout": 1' + "0" * 400 + "}}")
            return await socket.sentinel()

    (answer,) = anyio.run(scenario)
    assert answer.status == "malformed" and "extras.timeout" in str(answer.content)
    assert answer.in_reply_to == "huge-timeout" and len(str(answer.content)) < 300
