"""``python`` and ``pip`` in a sandbox's shell commands are the Python its code
runs on, as E2B's images have them (E2B's own tests call ``python`` from
commands), in a login shell too (E2B's commands run ``bash -l -c``)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(180)


def test_python_in_a_command_is_the_codes_python(sandbox) -> None:  # type: ignore[no-untyped-def]
    where = "import os, sys; print(os.path.realpath(sys.executable))"
    kernels = sandbox.run_code(where).logs.stdout[0].strip()
    done = sandbox.commands.run(f"python -c '{where}'")
    assert done.stdout.strip() == kernels
    assert sandbox.commands.run("python3 -c 'print(6 * 7)'").stdout == "42\n"
    assert sandbox.commands.run("pip --version").stdout.startswith("pip ")
    shell = sandbox.run_code("python -c 'print(6 * 7)'", language="bash")
    assert "".join(shell.logs.stdout) == "42\n"
