"""A channels connection that drops while the kernel on the gateway lives: the
run in progress goes on over a new connection (the gateway replays what it
buffered meanwhile; what was in flight is lost, and a note says output may be
missing), a run whose end was lost in flight still ends, and if no connection
can be made within ``Gateway.reconnect`` the run ends with a message saying so;
either way the next run works.

The drops are made by a TCP proxy between the Computer and a real Kernel Gateway.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import Registry
from lmc_runtime.backends.jupyter.gateway.rest import Gateway

from ..conftest import run
from .actions import run_then
from .proxy import Proxy, proxy_to
from .server import KernelGateway

pytestmark = pytest.mark.integration

COUNT = "import time\nfor i in range(20):\n    print(i, flush=True)\n    time.sleep(0.05)"
DROPPED = "the connection to the Jupyter gateway dropped and was restored"


@pytest.fixture
def proxy(kernel_gateway: KernelGateway) -> Iterator[Proxy]:
    with proxy_to(kernel_gateway.port) as proxy:
        yield proxy


def through(proxy: Proxy, token: str, reconnect: float) -> Computer:
    gateway = Gateway(proxy.url, token, reconnect=reconnect)
    return Computer(registry=Registry(gateway=gateway), timeouts=Timeouts(startup=60))


@pytest.fixture
def restoring(proxy: Proxy, kernel_gateway: KernelGateway) -> Iterator[Computer]:
    """A Computer through ``proxy`` that may reconnect for 10 s, with ``kept`` defined."""
    with through(proxy, kernel_gateway.token, reconnect=10.0) as computer:
        run(computer, "kept = 'state'")
        yield computer


def assert_restored(computer: Computer, proxy: Proxy, kept: str) -> None:
    """The channels were connected again, and the kernel still has ``kept``."""
    assert proxy.channels >= 2, "the channels were not connected again"
    after = run(computer, "print(kept)")
    assert after.output == f"{kept}\n" and after.status == "ok"


def test_a_dropped_channels_connection_is_restored_and_the_run_goes_on(
    restoring: Computer, proxy: Proxy
) -> None:
    result = run_then(restoring, COUNT, proxy.cut)
    assert result.status == "ok" and (result.final.extras or {}).get("state_lost") is not True
    assert DROPPED in result.output
    # What the gateway buffered meanwhile is replayed (only what was in flight is lost).
    numbers = [int(line) for line in result.output.splitlines() if line.isdigit()]
    assert numbers == sorted(set(numbers)) and numbers[-1] == 19
    assert_restored(restoring, proxy, "state")


def test_a_run_whose_reply_was_lost_in_the_drop_still_ends(
    restoring: Computer, proxy: Proxy
) -> None:
    proxy.lose(b'"msg_type": "execute_reply"')
    result = run(restoring, "print('ran')\nkept = 'changed'", timeout=30)
    assert "how it ended was lost" in result.output
    assert result.status == "backend_error" and (result.final.extras or {})["state_lost"] is False
    assert_restored(restoring, proxy, "changed")


def test_a_connection_not_restored_in_time_ends_the_run_with_a_message(
    proxy: Proxy, kernel_gateway: KernelGateway
) -> None:
    with through(proxy, kernel_gateway.token, reconnect=1.0) as computer:
        result = run_then(computer, COUNT, proxy.close)
        assert result.status == "kernel_died" and (result.final.extras or {})["state_lost"] is True
        assert "not restored within 1 s" in result.output
        assert "Traceback" not in result.output
        proxy.open()  # on the same port
        after = run(computer, "print('back')")
        assert after.output.endswith("back\n") and after.status == "ok"
