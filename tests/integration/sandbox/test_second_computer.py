"""Regression: a sandbox's further Computers need folders of their own.

Interpreters name their files in a Computer's control and shared folders by
language (``python/connection.json``, ``python-kernel-N`` sockets). Two E2B
code contexts once shared the sandbox's: two Python kernels starting at once
bound the same sockets and took each other's (a run failed as a backend error,
or waited 60 s for a kernel that never answered). A second Computer on the
same folders is now refused, and one with folders of its own starts its
kernel beside the first.
"""

from __future__ import annotations

import pytest

from lmc_runtime.errors import UsageError
from lmc_runtime.sandbox import SandboxPolicy
from lmc_runtime.sandbox.fileops import make_directory

from .conftest import Opener, needs_bwrap, run, text

pytestmark = [pytest.mark.anyio, pytest.mark.integration, needs_bwrap]


async def test_a_second_computer_on_the_sandboxs_folders_is_refused(sandboxed: Opener) -> None:
    async with sandboxed(SandboxPolicy()) as (sandbox, computer):
        with pytest.raises(UsageError, match="folders"):
            sandbox.computer()
        with pytest.raises(UsageError, match="folders"):
            sandbox.computer(work_dir=sandbox.control_dir / "other")
        control = sandbox.control_dir / "other"
        control.mkdir()
        make_directory(sandbox.shared_dir, "other", parents=False, owner=sandbox.owner)
        second = sandbox.computer(work_dir=control, shared_dir=sandbox.shared_dir / "other")
        code = (
            "import json\nfrom ipykernel.kernelapp import IPKernelApp\n"
            "print(json.load(open(IPKernelApp.instance().connection_file))['ip'])"
        )
        async with second:
            first, other = text(await run(computer, code)), text(await run(second, code))
        # Each kernel's sockets in its Computer's shared folder.
        assert first.strip().endswith("/python-kernel"), first
        assert other.strip() == first.strip().replace("/python-kernel", "/other/python-kernel")
