"""What happens when the gateway's side goes wrong: a kernel killed there is
reported like a local death (``state_lost``) and the next run gets a fresh one;
a gateway that cannot be reached, or is stopped in the middle of a run, gets a
clear message, never a hang or a traceback, and once it is back the Computer
works again."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer
from lmc_runtime.backends import Registry
from lmc_runtime.backends.jupyter.gateway.rest import Gateway

from ..conftest import run
from .actions import run_then
from .conftest import on
from .server import KernelGateway, free_port

pytestmark = pytest.mark.integration

SLOW_COUNT = "import time\nfor i in range(600):\n    print(i, flush=True)\n    time.sleep(0.05)"


def kill_kernels(gateway: KernelGateway) -> None:
    kernels = gateway.kernels()
    assert kernels, "the gateway has no kernel to kill"
    for kernel in kernels:
        kernel.send_signal(signal.SIGKILL)


def test_a_kernel_killed_on_the_gateway_is_a_death_and_the_next_run_gets_a_new_one(
    own: Computer, kernel_gateway: KernelGateway
) -> None:
    run(own, "kept = 1")
    result = run_then(own, SLOW_COUNT, lambda: kill_kernels(kernel_gateway))
    assert result.status == "kernel_died" and result.final.extras["state_lost"] is True
    assert "the gateway found its process ended" in result.output
    after = run(own, "print('kept' in globals())\nkept = 2")
    assert after.output == "False\n" and after.status == "ok"
    # Killed between runs: the next run starts with the note, on a new kernel.
    seen = len(kernel_gateway.log)
    kill_kernels(kernel_gateway)
    # Noticed: the kernel is replaced by a new one (the gateway logs its start).
    kernel_gateway.wait_for_log("POST /api/kernels", after=seen)
    result = run(own, "print('kept' in globals())")
    assert result.output.endswith("False\n") and result.status == "ok"
    notes = [m for m in result.messages if (m.extras or {}).get("status") == "kernel_died"]
    assert notes and "the gateway found its process ended" in notes[0].content


def test_an_unreachable_gateway_gets_one_clear_reply() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with Computer(gateway_url=url) as computer:
        result = run(computer, "print(1)")
    assert result.status == "backend_error"
    assert f"the Jupyter gateway at {url} cannot be reached" in result.output
    assert "Traceback" not in result.output


@pytest.fixture
def lone_gateway(tmp_path: Path) -> Iterator[KernelGateway]:
    """A gateway of the test's own, which it stops and starts again."""
    gateway = KernelGateway(tmp_path)
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


def test_a_gateway_stopped_mid_run_then_started_again(lone_gateway: KernelGateway) -> None:
    with on(lone_gateway, reconnect=1.0) as computer:
        result = run_then(computer, SLOW_COUNT, lone_gateway.stop)
        assert result.status == "kernel_died" and result.final.extras["state_lost"] is True
        notice = [m for m in result.messages if (m.extras or {}).get("status") == "kernel_died"]
        assert notice and "gateway" in notice[0].content
        assert "Traceback" not in result.output
        lone_gateway.start()  # on the same port
        after = run(computer, "print('back')")
        assert after.output.endswith("back\n") and after.status == "ok"


def test_the_environment_variables_choose_the_gateway(
    kernel_gateway: KernelGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LMC_GATEWAY_URL", kernel_gateway.url)
    monkeypatch.setenv("LMC_GATEWAY_TOKEN", kernel_gateway.token)
    with Computer() as computer:
        result = run(computer, "import os\nprint(os.getppid())")
    parents = {p.pid for p in [kernel_gateway.process_info(), *kernel_gateway.kernels()]}
    assert int(result.output) in parents


def test_python_given_stays_local_beside_a_gateway(kernel_gateway: KernelGateway) -> None:
    with Computer(gateway_url=kernel_gateway.url, gateway_token="x", python="python3") as computer:
        backend = computer.registry.get("python")
    assert getattr(backend, "gateway", None) is None
    assert Registry(gateway=Gateway(kernel_gateway.url)).get("python").gateway is not None  # type: ignore[attr-defined]
