"""Route: the stream of one request's replies."""

from __future__ import annotations

import anyio
import pytest

from lmc_runtime.backends.jupyter.routing import Route

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _msg(msg_type: str, **content: object) -> dict[str, object]:
    return {"msg_type": msg_type, "content": content}


async def test_an_abandoned_route_never_blocks_the_reader_and_still_finishes() -> None:
    """Regression (wedge): output for a run whose caller left filled the route's
    buffer and blocked the one reader that serves every request of the kernel."""
    route = Route("m")
    route.receive.close()  # what Execution.abandon does
    with anyio.fail_after(5):
        for i in range(5000):
            await route.put(("iopub", _msg("stream", name="stdout", text=f"{i}\n")))
        assert not route.finished.is_set()
        await route.put(("iopub", _msg("status", execution_state="idle")))
        await route.put(("shell", _msg("execute_reply", status="ok")))
    assert route.finished.is_set(), "the watchdog still learns the kernel is done"
