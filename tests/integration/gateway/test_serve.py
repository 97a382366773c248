"""``lmc serve --gateway-url``: a session's Python runs in a kernel the gateway
started (outside the sandbox, with the session's own variables), its shell on
the server's machine inside the sandbox."""

from __future__ import annotations

import os

import pytest

from lmc_runtime.sandbox import sandbox_available

from ..service.server import final_status, output, running_server
from .server import KernelGateway

pytestmark = pytest.mark.integration


def test_a_sessions_python_runs_on_the_gateway_and_its_shell_in_the_sandbox(
    kernel_gateway: KernelGateway,
) -> None:
    availability = sandbox_available()
    assert availability.available, f"this test needs bubblewrap: {availability.reason}"
    flags = ["--gateway-url", kernel_gateway.url, "--gateway-token", kernel_gateway.token]
    with running_server("--pool-size", "0", "--max-sessions", "2", *flags) as server:
        session_id = server.create(languages=["python", "shell"], env={"LMC_GW_SESSION": "mine"})
        try:
            code = "import os\nprint(os.getppid(), os.readlink('/proc/self/ns/pid'))\n"
            code += "print(os.environ.get('LMC_GW_SESSION'))"
            python = server.execute(session_id, code)
            assert final_status(python) == "ok", python
            (parent, namespace), variable = (line.split() for line in output(python).splitlines())
            gateway = [kernel_gateway.process_info(), *kernel_gateway.kernels()]
            assert int(parent) in {p.pid for p in gateway}
            host_namespace = os.readlink("/proc/self/ns/pid")
            assert namespace == host_namespace and variable == ["mine"]

            shell = server.execute(session_id, "readlink /proc/self/ns/pid", language="shell")
            assert final_status(shell) == "ok", shell
            assert output(shell).strip() not in ("", host_namespace)  # a namespace of its own
        finally:
            server.delete(session_id)
