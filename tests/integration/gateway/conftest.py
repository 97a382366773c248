"""Fixtures of the gateway tests: one real Kernel Gateway for the session, Computers on it."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import Registry
from lmc_runtime.backends.jupyter.gateway.rest import Gateway

from .server import KernelGateway

pytest.importorskip("kernel_gateway", reason="jupyter-kernel-gateway is not installed")
pytest.importorskip("websockets", reason="the [gateway] extra (websockets) is not installed")


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """Kernels run as they do outside pytest (ipykernel looks for PYTEST_CURRENT_TEST)."""
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    return (yield)


@pytest.fixture(scope="session")
def kernel_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGateway]:
    """One Kernel Gateway on a free loopback port for every test that only uses it."""
    gateway = KernelGateway(tmp_path_factory.mktemp("kernel-gateway"))
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


def on(gateway: KernelGateway, *, reconnect: float = 3.0, grace: float = 2.0) -> Computer:
    """A Computer whose Python and R kernels run on ``gateway`` (not opened yet)."""
    registry = Registry(gateway=Gateway(gateway.url, gateway.token, reconnect=reconnect))
    return Computer(registry=registry, timeouts=Timeouts(interrupt_grace=grace, startup=60))


@pytest.fixture(scope="module")
def shared(kernel_gateway: KernelGateway) -> Iterator[Computer]:
    """One Computer on the gateway for a module's tests that keep its kernel usable."""
    with on(kernel_gateway) as computer:
        yield computer


@pytest.fixture
def own(kernel_gateway: KernelGateway) -> Iterator[Computer]:
    """A Computer of the test's own, for tests that end or lose its kernel (and
    wait for code that ignores an interrupt for 1 s, not 2)."""
    with on(kernel_gateway, grace=1.0) as computer:
        yield computer
