"""A kernel that cannot start is a clear message, quickly, never a hang."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import BackendEntry, Registry
from lmc_runtime.backends.jupyter import JupyterBackend
from lmc_runtime.backends.jupyter.provisioner import PROVISIONER_NAME


class BrokenBackend(JupyterBackend):
    """A kernelspec whose process exits at once with code 3."""

    kernel_name = "broken"

    def __init__(self, spec_dir: Path) -> None:
        self.spec_dir = spec_dir

    def spec_manager(self) -> KernelSpecManager:
        return KernelSpecManager(kernel_dirs=[str(self.spec_dir)])


def make_spec(root: Path, provisioner: str | None = PROVISIONER_NAME) -> Path:
    spec = root / "broken"
    spec.mkdir(parents=True)
    argv = [
        sys.executable,
        "-c",
        "import sys; print('cannot start', file=sys.stderr); sys.exit(3)",
        "{connection_file}",
    ]
    metadata = {"kernel_provisioner": {"provisioner_name": provisioner}} if provisioner else {}
    (spec / "kernel.json").write_text(
        json.dumps(
            {"argv": argv, "display_name": "broken", "language": "none", "metadata": metadata}
        )
    )
    return root


def test_a_kernel_that_dies_while_starting_is_reported_at_once(tmp_path: Path) -> None:
    """A kernel that exits while starting is reported at once, with its exit code
    and what it printed, on every run: never a wait for the startup timeout."""
    registry = Registry([])
    registry.add(
        BackendEntry("broken", "unused:unused"), BrokenBackend(make_spec(tmp_path / "specs"))
    )
    started = time.monotonic()
    with Computer(registry=registry, timeouts=Timeouts(startup=30)) as computer:
        replies = list(computer.run("broken", "anything"))
        again = list(computer.run("broken", "anything"))
    assert time.monotonic() - started < 20
    for answer in (replies, again):
        notice, final = answer
        assert notice.extras["status"] == "backend_error"  # type: ignore[index]
        assert "exited with code 3 while starting" in notice.content
        assert "cannot start" in notice.content
        assert final.format == "active_line" and final.content is None
        assert final.extras["status"] == "backend_error"  # type: ignore[index]


@pytest.mark.parametrize(
    ("provisioner", "reason"),
    [(None, "names no provisioner"), ("no-such-provisioner", "provisioner is not installed")],
)
def test_a_kernelspec_without_a_usable_provisioner_is_unavailable(
    tmp_path: Path, provisioner: str | None, reason: str
) -> None:
    backend = BrokenBackend(make_spec(tmp_path / "specs", provisioner))
    availability = backend.availability()
    assert not availability.available
    assert reason in str(availability.reason)
