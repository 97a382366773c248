"""``lmc serve`` over HTTP given fuzzed bodies: ``POST /v1/sessions`` and
``POST /v1/sessions/{id}/execute`` with bad JSON, invalid UTF-8, wrong content
types and hostile values, and ``?timeout=`` values. Every request gets a 200 with
valid replies, a 201, or a 4xx with a JSON problem body; never a 5xx or a hang.
After each batch the server runs ``print(1)`` and left no process behind."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from .checks import GUARD, Tally, check_dicts, fuzz_settings
from .service import Target, bounded_client, content_types, create_bodies, problem_of
from .strategies import Wire, wires

pytestmark = pytest.mark.integration

#: The server's request limit (its default): a larger body is a 413.
MAX_REQUEST_BYTES = 1 << 20


def _headers(content_type: str | None) -> dict[str, str]:
    return {} if content_type is None else {"Content-Type": content_type}


def _check_execute(fuzzed: Target, wire: Wire, content_type: str | None, query: Any) -> None:
    url = f"/v1/sessions/{fuzzed.session_id}/execute"
    params = {} if query is None else {"timeout": query}
    with bounded_client(fuzzed.server) as client:
        response = client.post(
            url, content=wire.data, headers=_headers(content_type), params=params
        )
    if response.status_code != 200:
        problem = problem_of(response)
        too_large = len(wire.data) > MAX_REQUEST_BYTES
        bad_header = content_type is not None and not content_type.isprintable()
        refused = too_large or bad_header or query is not None
        assert wire.expect != "run" or refused, (wire.label, problem)
        return
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert wire.expect != "context", "ran a message that is not code"
    # Split on newlines only: str.splitlines() also splits at U+2028 and others,
    # which a line may hold as they are.
    check_dicts([json.loads(line) for line in response.content.split(b"\n") if line], wire)


_QUERIES = st.none() | st.sampled_from(["nan", "inf", "-1", "0", "1e400", "abc", "", "30"])


@fuzz_settings(15)
@given(
    batch=st.lists(
        st.tuples(wires(), content_types(), st.none() | _QUERIES), min_size=1, max_size=6
    )
)
def test_execute_answers_every_body_with_replies_or_a_problem(
    fuzzed: Target, batch: list[tuple[Wire, str | None, Any]]
) -> None:
    tally = Tally("serve: POST execute")
    for wire, content_type, query in batch:
        with tally.trying(wire.label, (wire.data, content_type, query)):
            _check_execute(fuzzed, wire, content_type, query)
    with tally.trying("health", "print(1) after the batch"):
        fuzzed.assert_healthy()


def _check_create(fuzzed: Target, body: bytes, content_type: str | None) -> None:
    with bounded_client(fuzzed.server) as client:
        response = client.post("/v1/sessions", content=body, headers=_headers(content_type))
        if response.status_code == 201:  # a valid body after all: a session, deleted
            client.delete(f"/v1/sessions/{response.json()['id']}")
            return
    problem_of(response)


@fuzz_settings(10)
@given(
    batch=st.lists(
        st.tuples(
            create_bodies().map(lambda body: json.dumps(body).encode())
            | wires().map(lambda wire: wire.data),
            content_types(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_create_answers_every_body_with_a_session_or_a_problem(
    fuzzed: Target, batch: list[tuple[bytes, str | None]]
) -> None:
    tally = Tally("serve: POST sessions")
    for body, content_type in batch:
        with tally.trying("create", body):
            _check_create(fuzzed, body, content_type)
    with tally.trying("health", "print(1) after the batch"):
        fuzzed.assert_healthy()


def test_a_request_http_cannot_parse_gets_a_json_problem(fuzzed: Target) -> None:
    """Regression: a request the HTTP parser refuses (here a header value holding
    DEL) was answered by uvicorn in plain text; it is a JSON problem like every error."""
    request = (
        b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: x/\x7f\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    with socket.create_connection(("127.0.0.1", fuzzed.server.port), timeout=GUARD) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), head
    assert b"content-type: application/json" in head.lower(), head
    problem = json.loads(body)["error"]
    assert problem["code"] == "bad_request" and "not a valid HTTP request" in problem["message"]


@pytest.mark.parametrize(
    "body",
    [{"limits": {"file_size_bytes": True}}, {"limits": {"processes": "64"}}, {"network": "no"}],
)
def test_a_limit_or_flag_of_the_wrong_json_type_is_refused(
    fuzzed: Target, body: dict[str, Any]
) -> None:
    """Regression: lax validation took ``true`` as the limit 1 (a 1-byte file size,
    under which no kernel starts: a 503 after the start failed), and strings as
    numbers or booleans; a JSON value of the wrong type is a 400."""
    with bounded_client(fuzzed.server) as client:
        response = client.post("/v1/sessions", json=body)
    assert response.status_code == 400, response.text
    assert problem_of(response)["code"] == "bad_request"
