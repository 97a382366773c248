"""RemoteComputer runs code like Computer: the same messages, streamed as they come,
over HTTP and over the WebSocket; interrupt, restart, languages and session options."""

from __future__ import annotations

import gc
import logging
import threading

import pytest

from lmc_runtime import Message
from lmc_runtime.remote import RemoteComputer, Transport

from ..service.server import TOKEN, Server
from .conftest import RemoteFactory

GUARD = 60.0


def texts(messages: list[Message]) -> str:
    return "".join(str(m.content) for m in messages if m.format == "output")


def test_run_streams_the_messages_and_keeps_state(
    remote: RemoteFactory, transport: Transport
) -> None:
    computer = remote(transport=transport)
    message = {"role": "assistant", "type": "code", "format": "python", "id": "m-1"}
    first = list(computer.run({**message, "content": "kept = 41\nprint(kept + 1)"}))
    assert all(isinstance(m, Message) and m.role == "computer" for m in first)
    assert [m.in_reply_to for m in first] == ["m-1"] * len(first)
    assert first[-1].is_final and first[-1].status == "ok"
    assert texts(first) == "42\n"
    second = list(computer.run("python", "print(kept)", timeout=GUARD))
    assert texts(second) == "41\n" and second[-1].is_final


def test_messages_arrive_while_the_code_still_runs(
    remote: RemoteFactory, transport: Transport
) -> None:
    """Regression guard against buffering: the code waits for a file that the test
    uploads only after it has seen the code's first line."""
    computer = remote(transport=transport)
    code = (
        "import os, time\nprint('waiting', flush=True)\n"
        "while not os.path.exists('go'):\n    time.sleep(0.02)\nprint('went')"
    )
    seen: list[Message] = []
    for reply in computer.run("python", code, timeout=GUARD):
        seen.append(reply)
        if reply.content == "waiting\n":
            computer.upload("go", b"")
    assert texts(seen) == "waiting\nwent\n"
    assert seen[-1].status == "ok"


def test_env_of_one_run(remote: RemoteFactory, transport: Transport) -> None:
    computer = remote(transport=transport)
    show = "import os\nprint(os.environ.get('ONE_RUN', '<unset>'))"
    assert texts(list(computer.run("python", show, env={"ONE_RUN": "yes"}))) == "yes\n"
    assert texts(list(computer.run("python", show))) == "<unset>\n"


def test_interrupt_stops_the_code_and_keeps_state(
    remote: RemoteFactory, transport: Transport
) -> None:
    computer = remote(transport=transport)
    list(computer.run("python", "kept = 'still here'"))
    ticking = threading.Event()

    def interrupter() -> None:
        if ticking.wait(GUARD):
            computer.interrupt()

    thread = threading.Thread(target=interrupter)
    thread.start()
    code = "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.05)"
    replies = []
    for reply in computer.run("python", code, timeout=GUARD):
        replies.append(reply)
        ticking.set()
    thread.join(GUARD)
    assert replies[-1].status == "interrupted", replies[-1]
    assert texts(list(computer.run("python", "print(kept)"))) == "still here\n"


def test_timeout_over_http_is_the_servers(remote: RemoteFactory) -> None:
    computer = remote()
    replies = list(computer.run("python", "import time\ntime.sleep(30)", timeout=1))
    assert replies[-1].status == "timeout"


def test_timeout_over_the_websocket_is_the_servers(remote: RemoteFactory) -> None:
    """Guards: over the WebSocket the client interrupted the run at its deadline
    itself, so a timed-out run ended "interrupted", not "timeout"."""
    computer = remote(transport="websocket")
    replies = list(computer.run("python", "import time\ntime.sleep(30)", timeout=1))
    assert replies[-1].status == "timeout", replies[-1]
    assert replies[-1].extras and replies[-1].extras.get("state_lost") is False
    assert texts(list(computer.run("python", "print('next')"))) == "next\n"


def test_restart_loses_the_state(remote: RemoteFactory, transport: Transport) -> None:
    computer = remote(transport=transport)
    list(computer.run("python", "kept = 1"))
    computer.restart("python")
    after = list(computer.run("python", "print('kept' in globals())"))
    assert texts(after) == "False\n"


def test_not_understood_is_a_message(remote: RemoteFactory, transport: Transport) -> None:
    computer = remote(transport=transport)
    unknown = list(computer.run("no-such-language", "1"))
    assert len(unknown) >= 1 and unknown[0].status == "not_understood"
    malformed = list(computer.run({"role": "assistant", "type": "code", "content": "1"}))
    assert [m.status for m in malformed] == ["malformed"]
    bad_env = {"role": "assistant", "type": "code", "format": "python", "content": "1"}
    refused = list(computer.run({**bad_env, "extras": {"env": {"A": 1}}}))
    assert refused[0].status == "not_understood" and "extras.env" in str(refused[0].content)


def test_a_language_outside_the_session_is_not_understood(remote: RemoteFactory) -> None:
    computer = remote(languages=["python"])
    replies = list(computer.run("shell", "echo hi"))
    assert replies[0].status == "not_understood", replies
    assert "python" in str(replies[0].content)
    assert "hi\n" not in texts(replies)


def test_languages_come_from_the_server(remote: RemoteFactory) -> None:
    computer = remote(languages=["python"])
    languages = computer.languages
    assert languages["python"].available and "py" in languages["python"].aliases
    assert not languages["shell"].available
    assert computer.resolve("py") == "python" and computer.resolve("nope") is None


def test_session_options(remote: RemoteFactory) -> None:
    computer = remote(languages=["python", "shell"], cwd="work/sub", env={"GREETING": "hi"})
    assert computer.info["cwd"] == "work/sub" and computer.info["env"] == ["GREETING"]
    shown = texts(list(computer.run("shell", "echo $GREETING; pwd")))
    assert shown.splitlines() == ["hi", "/home/user/work/sub"]
    python = texts(list(computer.run("python", "import os\nprint(os.environ['GREETING'])")))
    assert python == "hi\n"
    # The files API's paths are relative to the session's cwd, as the code's are.
    computer.upload("in.txt", b"uploaded")
    read = texts(list(computer.run("python", "print(open('in.txt').read())")))
    assert read == "uploaded\n"
    assert [entry.path for entry in computer.list()] == ["in.txt"]


def test_attach_shares_the_session_and_leaves_it_alive(server: Server) -> None:
    with RemoteComputer(server.url, token=TOKEN) as owner:
        list(owner.run("python", "kept = 'shared'"))
        session = owner.session_id
        assert session is not None
        with RemoteComputer.attach(server.url, session, token=TOKEN) as guest:
            assert texts(list(guest.run("python", "print(kept)"))) == "shared\n"
        assert texts(list(owner.run("python", "print(kept)"))) == "shared\n"
    with pytest.raises(Exception) as gone:
        RemoteComputer.attach(server.url, session, token=TOKEN).__enter__()
    assert type(gone.value).__name__ in ("RemoteSessionNotFound", "RemoteSessionEnded")


@pytest.mark.anyio
async def test_arun_in_async_code(server: Server, transport: Transport) -> None:
    async with RemoteComputer(server.url, token=TOKEN, transport=transport) as computer:
        replies = [m async for m in computer.arun("python", "print(6 * 7)")]
        assert texts(replies) == "42\n" and replies[-1].is_final
        await computer.ainterrupt()
        await computer.arestart("python")
        assert computer.session_id is not None


def test_regression_a_run_left_by_the_callers_error_closes_quietly_with_its_computer(
    server: Server, transport: Transport, caplog: pytest.LogCaptureFixture
) -> None:
    """The caller's loop raised mid-run, inside ``with RemoteComputer``: the computer
    closes (the run's stream still open) and the stream is closed after it. Its end
    must not try to interrupt through the closed computer: that raised UsageError
    in the generator's close, logged as "an error occurred during closing of
    asynchronous generator" with a traceback."""
    code = "import time\nprint('started', flush=True)\ntime.sleep(30)"
    with caplog.at_level(logging.ERROR), pytest.raises(ZeroDivisionError):
        with RemoteComputer(server.url, token=TOKEN, transport=transport) as computer:
            # Held past the computer's close, as a comprehension's frame holds it.
            replies = computer.run("python", code, timeout=GUARD)
            for reply in replies:
                if reply.content == "started\n":
                    raise ZeroDivisionError("the caller's own error")
    del replies
    gc.collect()
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert said == []
