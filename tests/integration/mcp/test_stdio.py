"""``lmc mcp`` over stdio, on this machine's interpreters, driven by the SDK's client."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

pytest.importorskip("mcp_types", reason="the [mcp] extra (mcp 2.x) is not installed")

from .client import Client, images, status, stdio_client_of, texts

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """One server for the module: its tests leave the interpreters as they found them."""
    with stdio_client_of() as opened:
        yield opened


def test_tools_without_a_sandbox_have_no_file_tools(client: Client) -> None:
    assert client.tools() == ["execute", "interrupt", "restart", "languages"]


def test_output_comes_back_as_text_with_the_status_and_progress(client: Client) -> None:
    said: list[str] = []
    result = client.call("execute", said.append, language="python", code="print('hello')\n6 * 7")
    assert not result.is_error
    assert "hello\n" in texts(result) and "42" in texts(result)
    assert result.structured_content is not None
    assert result.structured_content["status"] == "ok"
    assert isinstance(result.structured_content["execution_count"], int)
    assert '"status": "ok"' in texts(result)  # for clients that read only the content
    assert "hello\n" in said


def test_a_matplotlib_plot_is_image_content(client: Client) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
    result = client.execute(code)
    assert status(result) == "ok", texts(result)
    (png,) = images(result)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_an_error_in_the_code_is_an_error_result_with_its_traceback(client: Client) -> None:
    result = client.execute("1 / 0")
    assert result.is_error and status(result) == "error"
    assert "ZeroDivisionError" in texts(result)


def test_a_timeout_stops_the_code_and_says_so(client: Client) -> None:
    result = client.execute("import time\ntime.sleep(60)\nslept = True", timeout=1)
    assert result.is_error and status(result) == "timeout"
    assert "[lmc]" in texts(result)
    assert "False" in texts(client.execute("'slept' in globals()"))


def test_a_not_understood_language_gets_the_computers_own_reply(client: Client) -> None:
    result = client.execute("DISPLAY 'HI'.", language="cobol")
    assert result.is_error and status(result) == "not_understood"
    assert texts(result).startswith("[lmc] not understood:")
    assert "cobol" in texts(result)


def test_bad_arguments_are_an_error_result_not_a_crash(client: Client) -> None:
    result = client.call("execute", language="python")
    assert result.is_error and "code" in texts(result)
    result = client.call("execute", language="python", code="1", timeout=-1)
    assert result.is_error and "timeout" in texts(result)
    assert client.call("read_file", path="x").is_error  # no files without a sandbox
    assert status(client.execute("1")) == "ok"


def test_cancelling_the_call_stops_the_code_and_keeps_the_state(client: Client) -> None:
    """Regression guard: an MCP cancellation (notifications/cancelled) must interrupt
    the running code, not leave it running behind the next call."""
    client.execute("kept = 'still here'")
    running = threading.Event()

    def on_progress(message: str) -> None:
        if "started" in message:
            running.set()

    code = "import time\nprint('started', flush=True)\ntime.sleep(60)\nfinished = True"
    call = client.start("execute", on_progress, language="python", code=code)
    assert running.wait(60), "the code did not start"
    call.cancel()
    result = client.execute("print('finished' in globals(), kept)")
    assert status(result) == "ok", texts(result)
    assert "False still here" in texts(result)


def test_interrupt_and_restart_tools(client: Client) -> None:
    running = threading.Event()
    code = "import time\nprint('started', flush=True)\ntime.sleep(60)"
    call = client.start(
        "execute", lambda m: "started" in m and running.set(), language="python", code=code
    )
    assert running.wait(60), "the code did not start"
    assert not client.call("interrupt").is_error
    interrupted = call.result(timeout=60)
    assert status(interrupted) == "interrupted"
    client.execute("forgotten = 1")
    assert not client.call("restart", language="python").is_error
    assert "False" in texts(client.execute("'forgotten' in globals()"))
    assert client.call("restart", language="cobol").is_error


def test_languages_lists_what_runs_here(client: Client) -> None:
    result = client.call("languages")
    assert result.structured_content is not None
    names = {entry["name"]: entry for entry in result.structured_content["languages"]}
    assert names["python"]["available"] is True
    assert "python" in texts(result)
