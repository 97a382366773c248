"""``lmc mcp --remote``: the client's code runs in a session of a real ``lmc serve``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from lmc_runtime.sandbox import sandbox_available

from ..service.server import TOKEN as SERVE_TOKEN
from ..service.server import running_server
from .client import Client, status, stdio_client_of, texts

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    availability = sandbox_available()
    if not availability.available:
        pytest.skip(f"lmc serve needs bubblewrap: {availability.reason}")
    with running_server("--pool-size", "0", "--max-sessions", "2") as serve:
        args = ("--remote", serve.url, "--remote-token", SERVE_TOKEN, "--languages", "shell")
        with stdio_client_of(*args) as opened:
            yield opened


def test_code_and_files_go_to_the_remote_session(client: Client) -> None:
    assert {"read_file", "write_file", "list_files"} <= set(client.tools())
    assert not client.call("write_file", path="numbers.txt", content="6 7").is_error
    result = client.execute("read a b < numbers.txt; echo $((a * b))", language="shell")
    assert status(result) == "ok" and "42" in texts(result), texts(result)
    client.execute("printf 42 > answer.txt", language="shell")
    assert texts(client.call("read_file", path="answer.txt")) == "42"


def test_a_language_outside_the_session_gets_its_not_understood_reply(client: Client) -> None:
    result = client.execute("print('hi')", language="python")
    assert result.is_error and status(result) == "not_understood"
    assert texts(result).startswith("[lmc] not understood:")
