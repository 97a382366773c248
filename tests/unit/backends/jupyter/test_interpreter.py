"""JupyterInterpreter without a kernel: what it does once it has been killed."""

from __future__ import annotations

from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from lmc_runtime.backends.base import ExecutionOptions, SessionSettings
from lmc_runtime.backends.core import Route
from lmc_runtime.backends.jupyter.interpreter import JupyterInterpreter

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _interpreter(tmp_path: Path) -> JupyterInterpreter:
    return JupyterInterpreter(
        KernelSpecManager(kernel_dirs=[str(tmp_path)]),
        "none",
        SessionSettings(cwd=tmp_path, work_dir=tmp_path),
        {},
    )


async def test_a_run_sent_to_a_kernel_that_just_ended_is_left_to_its_watcher(
    tmp_path: Path,
) -> None:
    """Regression: a run sent while the supervisor was still cleaning up after a
    death (the kernel killed, its channels closed) failed with an internal error
    instead of ending with the death."""
    interpreter = _interpreter(tmp_path)
    await interpreter.kill()
    await interpreter.kill()  # idempotent
    await interpreter.submit("print(1)", ExecutionOptions(reply_to="r"), Route("k", "r"))
