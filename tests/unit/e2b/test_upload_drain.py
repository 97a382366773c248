"""An upload's answer starts only once the upload's body has come
(:mod:`lmc_runtime.e2b.envd.drain`): an application answering at the headers
is held until the rest of the body is read and dropped, within a bound of
bytes and of time; past either, the answer closes the connection."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from lmc_runtime.e2b.envd import drain
from lmc_runtime.e2b.envd.drain import answered_after_body

HTTP: Scope = {"type": "http", "method": "POST", "path": "/files", "headers": []}
START: Message = {"type": "http.response.start", "status": 400, "headers": []}
END: Message = {"type": "http.response.body", "body": b'{"code":400}'}


class Client:
    """The body's messages as a client sends them, and what it is answered, in order."""

    def __init__(self, pieces: list[bytes], *, ends: bool = True) -> None:
        self.pieces = pieces
        self.ends = ends
        self.events: list[str] = []
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        if not self.pieces:
            if not self.ends:
                await anyio.sleep_forever()
            raise AssertionError("the body was read past its end")
        piece = self.pieces.pop(0)
        self.events.append(f"body {len(piece)}")
        more = bool(self.pieces) or not self.ends
        return {"type": "http.request", "body": piece, "more_body": more}

    async def send(self, message: Message) -> None:
        self.events.append(message["type"])
        self.sent.append(message)

    def connection(self) -> bytes | None:
        headers = dict(self.sent[0].get("headers", []))
        return headers.get(b"connection")


App = Callable[[Scope, Receive, Send], Awaitable[None]]


async def refuses_at_once(scope: Scope, receive: Receive, send: Send) -> None:
    await send(START)
    await send(END)


async def reads_then_answers(scope: Scope, receive: Receive, send: Send) -> None:
    while (await receive()).get("more_body"):
        pass
    await send({**START, "status": 200})
    await send(END)


def _serve(app: App, client: Client) -> None:
    async def main() -> None:
        with anyio.fail_after(10):
            await answered_after_body(app)(HTTP, client.receive, client.send)

    anyio.run(main)


def test_an_answer_at_the_headers_waits_for_the_whole_body() -> None:
    client = Client([b"a" * 10, b"b" * 20, b"c" * 30])
    _serve(refuses_at_once, client)
    assert client.events == [
        "body 10",
        "body 20",
        "body 30",
        "http.response.start",
        "http.response.body",
    ]
    assert client.connection() is None  # the connection serves the next request


def test_an_application_that_read_the_body_is_answered_as_it_answers() -> None:
    client = Client([b"a" * 10, b"b" * 20])  # reading past the end fails the test
    _serve(reads_then_answers, client)
    assert client.events == ["body 10", "body 20", "http.response.start", "http.response.body"]
    assert client.sent[0]["status"] == 200 and client.connection() is None


def test_a_body_past_the_bound_is_not_read_whole_and_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(drain, "DRAIN_BYTES", 100)
    client = Client([b"x" * 60] * 10)
    _serve(refuses_at_once, client)
    assert client.events.count("body 60") == 2  # 120 bytes: past the bound, no more
    assert client.sent[0]["status"] == 400 and client.connection() == b"close"
    assert client.sent[1] == END


def test_a_body_that_never_ends_is_answered_after_the_deadline_and_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(drain, "DRAIN_SECONDS", 0.05)
    client = Client([b"x" * 5], ends=False)
    _serve(refuses_at_once, client)
    assert client.events == ["body 5", "http.response.start", "http.response.body"]
    assert client.connection() == b"close"


def test_an_application_s_own_connection_header_is_replaced_not_repeated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(drain, "DRAIN_SECONDS", 0.05)

    async def keeps_alive(scope: Scope, receive: Receive, send: Send) -> None:
        await send({**START, "headers": [(b"Connection", b"keep-alive")]})
        await send(END)

    client = Client([b"x"], ends=False)
    _serve(keeps_alive, client)
    assert client.sent[0]["headers"] == [(b"connection", b"close")]


def test_a_client_gone_mid_body_ends_the_wait() -> None:
    messages: list[Message] = [
        {"type": "http.request", "body": b"x", "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    async def main() -> None:
        with anyio.fail_after(10):
            await answered_after_body(refuses_at_once)(HTTP, receive, send)

    anyio.run(main)
    assert not messages and [m["type"] for m in sent] == [START["type"], END["type"]]


def test_other_scopes_pass_untouched() -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    async def never() -> Message:
        raise AssertionError("nothing is read for a lifespan scope")

    async def ignore(message: Message) -> None:
        raise AssertionError("nothing is sent")

    anyio.run(answered_after_body(app), {"type": "lifespan"}, never, ignore)
    assert seen == ["lifespan"]
