"""Refusals become typed exceptions; a broken connection raises ConnectionLost
promptly, and the session can be attached to again, with its state."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from lmc_runtime import Message
from lmc_runtime.errors import (
    ConnectionLost,
    RemoteBusy,
    RemoteError,
    RemoteSessionNotFound,
    RemoteUnauthorized,
    UsageError,
)
from lmc_runtime.remote import RemoteComputer, RemoteTimeouts, Transport

from ...contract.harness import wait_for
from ..service.server import TOKEN, Server
from .conftest import RemoteFactory
from .proxy import proxy_to

GUARD = 60.0
TICK = "import time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.05)"


def test_a_wrong_token_is_unauthorized(server: Server) -> None:
    with pytest.raises(RemoteUnauthorized) as refused:
        RemoteComputer(server.url, token="not-the-token").__enter__()
    assert refused.value.status == 401 and refused.value.code == "unauthorized"


def test_an_unknown_session_is_not_found(server: Server) -> None:
    with pytest.raises(RemoteSessionNotFound) as missing:
        RemoteComputer.attach(server.url, "no-such-session", token=TOKEN).__enter__()
    assert missing.value.status == 404


def test_an_unknown_language_to_restart_is_a_usage_error(remote: RemoteFactory) -> None:
    with pytest.raises(UsageError):
        remote().restart("no-such-language")


def test_a_second_run_in_a_busy_session_is_refused(
    remote: RemoteFactory, transport: Transport
) -> None:
    owner = remote()
    guest = remote(session=owner.session_id, transport=transport)
    running = owner.run("python", TICK, timeout=GUARD)
    assert next(running).content == "tick\n"
    with pytest.raises(RemoteBusy) as busy:
        list(guest.run("python", "print(1)"))
    assert busy.value.code == "busy"
    owner.interrupt()
    assert list(running)[-1].status == "interrupted"


def test_misuse_raises_before_anything_is_sent(server: Server) -> None:
    computer = RemoteComputer(server.url, token=TOKEN)
    with pytest.raises(UsageError):
        computer.arun("python", "1")
    with pytest.raises(ValueError):
        RemoteComputer(server.url, transport="pigeon")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        RemoteComputer(server.url, languages="python")  # type: ignore[arg-type]


def _tick_then(computer: RemoteComputer, action: Callable[[], None]) -> list[Message]:
    """Run the ticking loop; call ``action`` at its first tick; what came before it raised."""
    seen: list[Message] = []
    for reply in computer.run("python", TICK, timeout=GUARD):
        seen.append(reply)
        if len(seen) == 1:
            action()
    return seen


def _idle(computer: RemoteComputer) -> bool:
    computer.refresh()
    return bool(computer.info["state"] == "idle")


def test_a_cut_connection_raises_connection_lost_and_the_session_lives_on(
    server: Server, transport: Transport
) -> None:
    with proxy_to(server.port) as proxy:
        computer = RemoteComputer(proxy.url, token=TOKEN, transport=transport)
        with computer:
            list(computer.run("python", "kept = 'survived'"))
            with pytest.raises(ConnectionLost) as lost:
                _tick_then(computer, proxy.cut)
            assert lost.value.session_id == computer.session_id
            session = computer.detach()
    assert session is not None
    with RemoteComputer.attach(server.url, session, token=TOKEN, transport=transport) as again:
        _wait_idle(again)
        replies = list(again.run("python", "print(kept)", timeout=GUARD))
        assert "survived\n" in "".join(str(m.content) for m in replies)
        again.close()  # an attached session is left alive unless asked
        assert _exists(server, session)
    with RemoteComputer.attach(server.url, session, token=TOKEN, delete_on_close=True):
        pass
    assert not _exists(server, session)


def test_a_silent_network_is_found_by_the_read_bound_or_pings(
    server: Server, transport: Transport
) -> None:
    """No FIN and no RST: only the client's own bound (the run's timeout plus the
    margin over HTTP, pings over the WebSocket) ends the wait."""
    timeouts = RemoteTimeouts(margin=1, ping=1, keepalive=1)
    with proxy_to(server.port) as proxy:
        computer = RemoteComputer(
            proxy.url,
            token=TOKEN,
            transport=transport,
            timeouts=timeouts,
            delete_on_close=False,
        )
        with computer:
            with pytest.raises(ConnectionLost):
                for _ in computer.run("python", "import time\ntime.sleep(2)", timeout=2):
                    proxy.freeze()
            session = computer.session_id
    assert session is not None
    with RemoteComputer.attach(server.url, session, token=TOKEN, delete_on_close=True) as owner:
        _wait_idle(owner)


def _wait_idle(computer: RemoteComputer) -> None:
    """The server notices the client left and stops its run; wait (bounded) for that."""
    wait_for(lambda: _idle(computer), "the session becoming idle", GUARD)


def _exists(server: Server, session: str) -> bool:
    with server.client() as client:
        return client.get(f"/v1/sessions/{session}").status_code == 200


def test_error_bodies_keep_their_code_and_status(remote: RemoteFactory) -> None:
    computer = remote()
    with pytest.raises(RemoteError) as refused:
        computer.download("../outside")
    assert refused.value.status == 400 and refused.value.code == "bad_path"


def test_two_runs_at_once_on_one_computer_get_the_run_and_a_busy_refusal(
    server: Server, transport: Transport
) -> None:
    """Guards: two runs at once on one RemoteComputer (from two threads) shared its
    one connection, and failed with anyio's BusyResourceError and ConnectionLost
    instead of one run and a RemoteBusy."""
    with RemoteComputer(server.url, token=TOKEN, transport=transport) as computer:
        assert list(computer.run("python", "print(0)"))[-1].status == "ok"
        outcomes: list[str] = []

        def one(code: str) -> None:
            try:
                outcomes.append(str(list(computer.run("python", code, timeout=GUARD))[-1].status))
            except RemoteBusy as exc:
                outcomes.append(exc.code)

        threads = [
            threading.Thread(target=one, args=(code,))
            for code in ("import time\ntime.sleep(1)\nprint('slow')", "print('fast')")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(GUARD)
        assert sorted(outcomes) == ["busy", "ok"], outcomes
        assert list(computer.run("python", "print('after')"))[-1].status == "ok"
