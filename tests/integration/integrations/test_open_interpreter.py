"""Open Interpreter on lmc-runtime (``use_lmc``): OI's ``computer.run`` and chat loop,
in OI's own virtualenv, get OI's chunks from lmc-runtime's interpreters, locally
and from a remote ``lmc serve``.

One script (``oi_script.py``) runs everything through OI's API per side and writes
what OI returned; each test asserts one behaviour on it.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime.sandbox import sandbox_available

from ..service.server import TOKEN, Server, running_server
from .oi_venv import checkout_metadata, open_interpreter_python, script_env

# The first test may build the virtualenv (pip, minutes on an empty cache).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

SCRIPT = Path(__file__).with_name("oi_script.py")
Chunks = list[dict[str, Any]]


@pytest.fixture(scope="module")
def oi_python() -> Path:
    return open_interpreter_python()


@pytest.fixture(scope="module")
def metadata(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return checkout_metadata(tmp_path_factory.mktemp("oi-metadata"))


def drive(python: Path, metadata: Path, tmp: Path, *args: str, **env: str) -> dict[str, Any]:
    out = tmp / "result.json"
    done = subprocess.run(
        [str(python), str(SCRIPT), str(out), *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env=script_env(metadata, **env),
        cwd=tmp,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.fixture(scope="module")
def local(
    oi_python: Path, metadata: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    return drive(oi_python, metadata, tmp_path_factory.mktemp("oi-local"))


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    availability = sandbox_available()
    assert availability.available, f"lmc serve needs bubblewrap: {availability.reason}"
    with running_server("--pool-size", "0", "--max-sessions", "2") as running:
        yield running


@pytest.fixture(scope="module")
def remote(
    oi_python: Path, metadata: Path, server: Server, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("oi-remote")
    return drive(oi_python, metadata, tmp, server.url, LMC_TOKEN=TOKEN)


@pytest.fixture(params=["local", "remote"])
def result(request: pytest.FixtureRequest) -> dict[str, Any]:
    found: dict[str, Any] = request.getfixturevalue(request.param)
    return found


def outputs(chunks: Chunks) -> str:
    return "".join(c["content"] for c in chunks if c.get("format") == "output")


def lines(chunks: Chunks) -> list[Any]:
    return [c["content"] for c in chunks if c.get("format") == "active_line"]


def index(chunks: Chunks, **fields: Any) -> int:
    return next(i for i, c in enumerate(chunks) if all(c.get(k) == v for k, v in fields.items()))


def test_runs_on_the_computer_use_lmc_chose(result: dict[str, Any], request: Any) -> None:
    expected = "Computer" if "local" in request.node.callspec.id else "RemoteComputer"
    assert result["computer"] == expected


def test_run_returns_oi_merged_output_without_active_lines(result: dict[str, Any]) -> None:
    assert result["runs"]["python"] == [{"type": "console", "format": "output", "content": "42\n"}]


def test_chunks_have_oi_shape_and_no_final_active_line(result: dict[str, Any]) -> None:
    """OI's languages yield type, format and content only, and never the null active
    line: OI's chat loop adds that one itself."""
    for name, chunks in result["runs"].items():
        for chunk in chunks:
            assert set(chunk) == {"type", "format", "content"}, (name, chunk)
            assert chunk["content"] is not None, (name, chunk)


def test_python_streams_active_lines_then_output(result: dict[str, Any]) -> None:
    chunks = result["runs"]["python_stream"]
    assert outputs(chunks) == "a\nb\n"
    assert 3 in lines(chunks)  # time.sleep(0.3)
    assert index(chunks, format="active_line", content=3) < index(chunks, content="b\n")


def test_shell_streams_active_lines_and_keeps_state_across_aliases(result: dict[str, Any]) -> None:
    chunks = result["runs"]["shell"]
    assert outputs(chunks) == "one\ntwo\n"
    assert index(chunks, content="one\n") < index(chunks, format="active_line", content=3)
    assert index(chunks, format="active_line", content=3) < index(chunks, content="two\n")
    # "bash" is OI's alias of Shell: the same shell, still in the directory "cd" chose.
    assert outputs(result["runs"]["bash_state"]) == "/tmp\n"


def test_javascript_streams_active_lines_and_keeps_state(result: dict[str, Any]) -> None:
    chunks = result["runs"]["javascript"]
    assert outputs(chunks) == "21\n"
    assert 2 in lines(chunks)  # the awaited timer
    assert outputs(result["runs"]["javascript_state"]) == "40\n"


def test_python_keeps_state_between_runs(result: dict[str, Any]) -> None:
    assert outputs(result["runs"]["python_state"]) == "6\n"


def test_errors_come_back_as_output(result: dict[str, Any]) -> None:
    runs = result["runs"]
    assert "ZeroDivisionError" in outputs(runs["python_error"])
    assert "No such file or directory" in outputs(runs["shell_error"])
    assert "Error: boom" in outputs(runs["javascript_error"])


def test_python_plot_is_a_png_image_chunk(result: dict[str, Any]) -> None:
    images = [c for c in result["runs"]["python_plot"] if c["type"] == "image"]
    assert len(images) == 1 and images[0]["format"] == "base64.png"
    assert base64.b64decode(images[0]["content"]).startswith(b"\x89PNG\r\n\x1a\n")


def test_stop_interrupts_the_code_and_keeps_state(result: dict[str, Any]) -> None:
    stop = result["stop"]
    assert stop["stop_returned"], "computer.stop() did not end the run"
    assert "looping\n" in outputs(stop["stop_chunks"])
    assert "interrupted" in outputs(stop["stop_chunks"])
    assert outputs(stop["after_stop"]) == "yes\n"


def test_an_async_interpreters_stop_event_interrupts_the_code(result: dict[str, Any]) -> None:
    stop = result["stop"]
    assert stop["stop_event_returned"], "stop_event.set() did not end the run"
    assert "interrupted" in outputs(stop["stop_event_chunks"])


def test_leaving_a_stream_early_stops_the_code_and_the_shell_runs_on(
    result: dict[str, Any],
) -> None:
    stop = result["stop"]
    assert stop["left_at"]["content"] == "first\n"
    assert outputs(stop["after_leaving"]) == "again\n"


def test_terminate_loses_the_state(result: dict[str, Any]) -> None:
    assert outputs(result["stop"]["after_terminate"]) == "False\n"


def test_typescript_runs_where_the_computer_has_it(result: dict[str, Any], request: Any) -> None:
    """TypeScript is added to OI's languages; the remote session was made without it,
    so there it answers why (and OI's terminate() of every language went through)."""
    text = outputs(result["stop"]["typescript"])
    if "local" in request.node.callspec.id:
        assert text == "1\n"
    else:
        assert "typescript" in text and "not understood" in text


def test_chat_runs_the_models_code_and_loops_to_its_answer(result: dict[str, Any]) -> None:
    returned = result["chat"]["returned"]
    code = [m for m in returned if m["type"] == "code"]
    assert code == [
        {"role": "assistant", "type": "code", "format": "python", "content": "\nprint(6 * 7)\n"}
    ]
    assert {
        "role": "computer",
        "type": "console",
        "format": "output",
        "content": "42\n",
    } in returned
    assert returned[-1] == {"role": "assistant", "type": "message", "content": "The answer is 42."}


def test_streamed_chat_frames_the_computers_output_with_oi_flags(result: dict[str, Any]) -> None:
    chat = result["chat"]
    streamed: Chunks = chat["streamed"]
    start = streamed.index({"role": "computer", "type": "console", "start": True})
    end = streamed.index({"role": "computer", "type": "console", "end": True})
    block = streamed[start + 1 : end]
    assert outputs(block) == "hello-oi\n"
    assert all(c["role"] == "computer" and c["type"] == "console" for c in block)
    # One null active line, the chat loop's own, closes the run.
    assert [c for c in block if c["format"] == "active_line" and c["content"] is None] == [
        block[-1]
    ]
    assert streamed[-3:] == [
        {"role": "assistant", "type": "message", "start": True},
        {"role": "assistant", "type": "message", "content": "Done."},
        {"role": "assistant", "type": "message", "end": True},
    ]
    # The output went back to the model before its answer.
    assert "Code output: hello-oi" in chat["llm_saw"]
