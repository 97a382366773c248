"""envd's Connect protocol server side, driven over HTTP by a test client:
unary calls in JSON and binary, streams and their envelopes, errors as
Connect's JSON with their status, compression and timeouts, and lmc's own
refusals told as Connect codes."""

from __future__ import annotations

import gzip
import json
import struct
from collections.abc import AsyncGenerator, AsyncIterator

import anyio
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from lmc_runtime.e2b.envd.codes import ConnectError, connect_error_of
from lmc_runtime.e2b.envd.connect import Call, Service
from lmc_runtime.e2b.envd.proto import filesystem_pb2 as fs
from lmc_runtime.e2b.envd.proto import process_pb2 as proc
from lmc_runtime.e2b.envd.wire import MAX_MESSAGE
from lmc_runtime.sandbox import fileops

JSON = {"content-type": "application/json"}
STREAM_JSON = {"content-type": "application/connect+json"}


def _service() -> Service:
    service = Service("filesystem.Filesystem")

    @service.unary("Stat", fs.StatRequest)
    async def stat(request: fs.StatRequest, call: Call) -> fs.StatResponse:
        if request.path == "missing":
            raise fileops.NoSuchFile(request.path)
        if request.path == "exists":
            raise fileops.AlreadyExists(request.path)
        if request.path == "refused":
            raise ConnectError("permission_denied", "not yours")
        if request.path == "bug":
            raise RuntimeError("/host/secret/path")
        if request.path == "slow":
            await anyio.sleep(30)
        return fs.StatResponse(entry=fs.EntryInfo(name=request.path, size=2**40))

    @service.server_stream("WatchDir", fs.WatchDirRequest)
    async def watch(
        request: fs.WatchDirRequest, call: Call
    ) -> AsyncGenerator[fs.WatchDirResponse, None]:
        yield fs.WatchDirResponse(start=fs.WatchDirResponse.StartEvent())
        for name in ("a", "b"):
            event = fs.FilesystemEvent(name=name, type=fs.EVENT_TYPE_CREATE)
            yield fs.WatchDirResponse(filesystem=event)
        if request.path == "fails":
            raise fileops.NoSuchFile(request.path)
        if request.path == "forever":
            await anyio.sleep(30)

    process = Service("process.Process")

    @process.client_stream("StreamInput", proc.StreamInputRequest)
    async def stream_input(
        requests: AsyncIterator[proc.StreamInputRequest], call: Call
    ) -> proc.StreamInputResponse:
        seen = b""
        async for request in requests:
            seen += request.data.input.stdin
        if seen != b"hello":
            raise ConnectError("invalid_argument", f"got {seen!r}")
        return proc.StreamInputResponse()

    service.extra = process  # type: ignore[attr-defined]
    return service


@pytest.fixture(scope="module")
def client() -> TestClient:
    service = _service()
    routes = service.routes() + service.extra.routes()  # type: ignore[attr-defined]
    return TestClient(Starlette(routes=routes))


def _envelopes(body: bytes) -> list[tuple[int, bytes]]:
    out = []
    while body:
        flags, size = struct.unpack(">BI", body[:5])
        out.append((flags, body[5 : 5 + size]))
        body = body[5 + size :]
    return out


def _envelope(data: bytes, flags: int = 0) -> bytes:
    return struct.pack(">BI", flags, len(data)) + data


def test_unary_json_round_trip(client: TestClient) -> None:
    answer = client.post("/filesystem.Filesystem/Stat", content=b'{"path":"x"}', headers=JSON)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {"entry": {"name": "x", "size": str(2**40)}}


def test_unary_binary_round_trip(client: TestClient) -> None:
    body = fs.StatRequest(path="y").SerializeToString()
    answer = client.post(
        "/filesystem.Filesystem/Stat", content=body, headers={"content-type": "application/proto"}
    )
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/proto"
    assert fs.StatResponse.FromString(answer.content).entry.name == "y"


def test_unary_json_ignores_unknown_fields_and_takes_charset(client: TestClient) -> None:
    headers = {"content-type": "application/json; charset=utf-8"}
    answer = client.post(
        "/filesystem.Filesystem/Stat", content=b'{"path":"z","newer":1}', headers=headers
    )
    assert answer.json()["entry"]["name"] == "z"


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("missing", 404, "not_found"),
        ("exists", 409, "already_exists"),
        ("refused", 403, "permission_denied"),
        ("bug", 500, "internal"),
    ],
)
def test_unary_errors_are_connect_json(
    client: TestClient, path: str, status: int, code: str
) -> None:
    answer = client.post("/filesystem.Filesystem/Stat", json={"path": path}, headers=JSON)
    assert answer.status_code == status
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["code"] == code
    assert "/host/secret" not in answer.text


@pytest.mark.parametrize("body", [b"{not json", b'{"path": 5}', b"[1,2]", b'{"path":"\xff"}'])
def test_malformed_json_is_invalid_argument(client: TestClient, body: bytes) -> None:
    answer = client.post("/filesystem.Filesystem/Stat", content=body, headers=JSON)
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid_argument")


def test_malformed_binary_is_invalid_argument(client: TestClient) -> None:
    headers = {"content-type": "application/proto"}
    answer = client.post("/filesystem.Filesystem/Stat", content=b"\xff\xff\xff", headers=headers)
    assert (answer.status_code, answer.json()["code"]) == (400, "invalid_argument")


def test_unknown_content_type_is_415(client: TestClient) -> None:
    headers = {"content-type": "text/plain"}
    answer = client.post("/filesystem.Filesystem/Stat", content=b"x", headers=headers)
    assert answer.status_code == 415


def test_gzip_request_is_read(client: TestClient) -> None:
    headers = {**JSON, "content-encoding": "gzip"}
    body = gzip.compress(b'{"path":"zipped"}')
    answer = client.post("/filesystem.Filesystem/Stat", content=body, headers=headers)
    assert answer.json()["entry"]["name"] == "zipped"


def test_gzip_bomb_stops_at_the_bound(client: TestClient) -> None:
    headers = {**JSON, "content-encoding": "gzip"}
    body = gzip.compress(b'{"path":"' + b"a" * (MAX_MESSAGE + 10) + b'"}')
    assert len(body) < MAX_MESSAGE
    answer = client.post("/filesystem.Filesystem/Stat", content=body, headers=headers)
    assert (answer.status_code, answer.json()["code"]) == (429, "resource_exhausted")


def test_unknown_compression_is_unimplemented(client: TestClient) -> None:
    headers = {**JSON, "content-encoding": "br"}
    answer = client.post("/filesystem.Filesystem/Stat", content=b"{}", headers=headers)
    assert (answer.status_code, answer.json()["code"]) == (501, "unimplemented")


def test_oversized_request_is_refused(client: TestClient) -> None:
    body = b'{"path":"' + b"a" * MAX_MESSAGE + b'"}'
    answer = client.post("/filesystem.Filesystem/Stat", content=body, headers=JSON)
    assert answer.json()["code"] == "resource_exhausted"


def test_timeout_header_bounds_a_unary_call(client: TestClient) -> None:
    headers = {**JSON, "connect-timeout-ms": "200"}
    answer = client.post("/filesystem.Filesystem/Stat", json={"path": "slow"}, headers=headers)
    assert (answer.status_code, answer.json()["code"]) == (504, "deadline_exceeded")


@pytest.mark.parametrize(
    ("name", "value"), [("connect-timeout-ms", "soon"), ("connect-protocol-version", "2")]
)
def test_bad_protocol_headers_are_invalid_argument(
    client: TestClient, name: str, value: str
) -> None:
    headers = {**JSON, name: value}
    answer = client.post("/filesystem.Filesystem/Stat", json={"path": "x"}, headers=headers)
    assert answer.json()["code"] == "invalid_argument"


def test_server_stream_sends_envelopes_then_the_end(client: TestClient) -> None:
    body = _envelope(b'{"path":"dir"}')
    answer = client.post("/filesystem.Filesystem/WatchDir", content=body, headers=STREAM_JSON)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/connect+json"
    envelopes = _envelopes(answer.content)
    assert [flags for flags, _ in envelopes] == [0, 0, 0, 2]
    assert json.loads(envelopes[0][1]) == {"start": {}}
    assert json.loads(envelopes[1][1]) == {"filesystem": {"name": "a", "type": "EVENT_TYPE_CREATE"}}
    assert json.loads(envelopes[-1][1]) == {}


def test_server_stream_binary(client: TestClient) -> None:
    body = _envelope(fs.WatchDirRequest(path="dir").SerializeToString())
    headers = {"content-type": "application/connect+proto"}
    answer = client.post("/filesystem.Filesystem/WatchDir", content=body, headers=headers)
    envelopes = _envelopes(answer.content)
    assert fs.WatchDirResponse.FromString(envelopes[1][1]).filesystem.name == "a"
    assert envelopes[-1] == (2, b"{}")


def test_server_stream_error_ends_the_stream(client: TestClient) -> None:
    body = _envelope(b'{"path":"fails"}')
    answer = client.post("/filesystem.Filesystem/WatchDir", content=body, headers=STREAM_JSON)
    flags, end = _envelopes(answer.content)[-1]
    assert flags == 2
    assert json.loads(end)["error"]["code"] == "not_found"


def test_server_stream_timeout_ends_it_with_deadline_exceeded(client: TestClient) -> None:
    body = _envelope(b'{"path":"forever"}')
    headers = {**STREAM_JSON, "connect-timeout-ms": "300"}
    answer = client.post("/filesystem.Filesystem/WatchDir", content=body, headers=headers)
    envelopes = _envelopes(answer.content)
    assert len(envelopes) == 4
    assert json.loads(envelopes[-1][1])["error"]["code"] == "deadline_exceeded"


@pytest.mark.parametrize(
    "body",
    [b"", b"\x00\x00\x00", b"\x00\x00\x00\x00\x09{}", struct.pack(">BI", 0, MAX_MESSAGE + 1)],
)
def test_broken_stream_requests_end_with_an_error(client: TestClient, body: bytes) -> None:
    answer = client.post("/filesystem.Filesystem/WatchDir", content=body, headers=STREAM_JSON)
    assert answer.status_code == 200
    flags, end = _envelopes(answer.content)[-1]
    assert flags == 2
    assert json.loads(end)["error"]["code"] in ("invalid_argument", "resource_exhausted")


def test_compressed_stream_envelope(client: TestClient) -> None:
    body = _envelope(gzip.compress(b'{"path":"dir"}'), 1)
    headers = {**STREAM_JSON, "connect-content-encoding": "gzip"}
    answer = client.post("/filesystem.Filesystem/WatchDir", content=body, headers=headers)
    assert _envelopes(answer.content)[-1] == (2, b"{}")


def test_client_stream_reads_every_message(client: TestClient) -> None:
    start = proc.StreamInputRequest(start={"process": {"pid": 1}})
    parts = [start] + [
        proc.StreamInputRequest(data={"input": {"stdin": chunk}}) for chunk in (b"hel", b"lo")
    ]
    body = b"".join(_envelope(p.SerializeToString()) for p in parts)
    headers = {"content-type": "application/connect+proto"}
    answer = client.post("/process.Process/StreamInput", content=body, headers=headers)
    assert _envelopes(answer.content) == [(0, b""), (2, b"{}")]


def test_client_stream_error(client: TestClient) -> None:
    body = _envelope(b'{"data":{"input":{"stdin":"eA=="}}}')
    answer = client.post("/process.Process/StreamInput", content=body, headers=STREAM_JSON)
    flags, end = _envelopes(answer.content)[-1]
    assert (flags, json.loads(end)["error"]["code"]) == (2, "invalid_argument")


def test_unknown_method_is_404(client: TestClient) -> None:
    answer = client.post("/filesystem.Filesystem/Nope", content=b"{}", headers=JSON)
    assert answer.status_code == 404


def test_refusals_keep_their_sentence() -> None:
    error = connect_error_of(fileops.NotEmpty("d"))
    assert (error.code, error.message) == (
        "failed_precondition",
        "'d' is a directory that is not empty",
    )
    assert connect_error_of(OSError(28, "No space left")).code == "resource_exhausted"
    with pytest.raises(ValueError):
        ConnectError("no_such_code", "x")
