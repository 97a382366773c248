"""LastResort, the service's outermost middleware: an exception nothing mapped is a
JSON 500 without its traceback; other scopes, and a response already started, are
left as they are."""

from __future__ import annotations

import json

import pytest
from starlette.types import Message, Receive, Scope, Send

from lmc_runtime.service.problems import LastResort

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _nothing() -> Message:
    return {"type": "http.disconnect"}


async def _call(app: LastResort, scope: Scope) -> list[Message]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, _nothing, send)
    return sent


def _http() -> Scope:
    return {"type": "http", "method": "GET", "path": "/x", "headers": [], "query_string": b""}


async def test_an_unmapped_exception_is_a_json_500_without_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def failing(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("secret detail")

    sent = await _call(LastResort(failing), _http())
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 500
    body = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))
    assert body == {"error": {"code": "internal", "message": "internal error; see the server log"}}
    assert "secret detail" not in json.dumps(body)
    assert any(r.exc_info and "GET /x" in r.getMessage() for r in caplog.records)


async def test_a_failure_after_the_response_started_is_raised() -> None:
    async def half(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("mid-response")

    with pytest.raises(RuntimeError, match="mid-response"):
        await _call(LastResort(half), _http())


@pytest.mark.parametrize("kind", ["websocket", "lifespan"])
async def test_other_scopes_pass_through_untouched(kind: str) -> None:
    seen: list[tuple[Scope, Receive, Send]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append((scope, receive, send))
        raise RuntimeError("not ours")

    scope: Scope = {"type": kind}
    with pytest.raises(RuntimeError, match="not ours"):
        await _call(LastResort(app), scope)
    assert seen[0][0] is scope and seen[0][1] is _nothing
