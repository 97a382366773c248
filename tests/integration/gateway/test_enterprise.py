"""Enterprise Gateway: a smoke test of the same provider against it.

Enterprise Gateway 3.3 pins jupyter_server < 2, jupyter_client < 7 and pyzmq < 25
(this project's environment has newer ones; 2.5 needs ``notebook.notebookapp``,
gone in notebook 7), so it runs from a virtualenv of its own, built once per
machine (:mod:`..venvs`), with an ipykernel 6 for its kernels, which it starts
on this machine through its local process proxy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lmc_runtime import Computer

from ..conftest import run
from ..venvs import cached_venv
from .actions import assert_an_interrupt_keeps_the_state
from .conftest import on
from .server import EnterpriseGateway

# The first run may build the virtualenv (pip, about a minute with a warm pip cache).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

EG_VERSION = "3.3.0"
REQUIREMENTS = [f"jupyter-enterprise-gateway=={EG_VERSION}", "ipykernel>=6.29,<7"]


@pytest.fixture(scope="module")
def enterprise_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EnterpriseGateway]:
    python = cached_venv(
        f"enterprise-gateway-{EG_VERSION}", REQUIREMENTS, what="Enterprise Gateway"
    )
    gateway = EnterpriseGateway(tmp_path_factory.mktemp("enterprise-gateway"), python)
    gateway.start()
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="module")
def computer(enterprise_gateway: EnterpriseGateway) -> Iterator[Computer]:
    with on(enterprise_gateway) as computer:
        yield computer


def test_code_runs_in_a_kernel_enterprise_gateway_started(
    computer: Computer, enterprise_gateway: EnterpriseGateway
) -> None:
    result = run(computer, "import os, sys\nprint(os.getppid())\nprint(sys.prefix)")
    assert result.status == "ok", result.output
    parent, prefix = result.output.splitlines()
    gateway = [enterprise_gateway.process_info(), *enterprise_gateway.kernels()]
    assert int(parent) in {p.pid for p in gateway}
    assert Path(prefix) == Path(enterprise_gateway.python).parent.parent  # its virtualenv


def test_an_interrupt_through_enterprise_gateway_keeps_the_state(computer: Computer) -> None:
    assert_an_interrupt_keeps_the_state(computer)
