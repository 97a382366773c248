"""What the framework integrations' tests share: the computers they drive (a
local Computer, or a RemoteComputer on the shared ``lmc serve``), and importing
an integration in a Python process where its framework is not installed."""

from __future__ import annotations

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.remote import RemoteComputer

from ..service.server import TOKEN

#: The computers every test that takes one runs on.
KINDS = ["local", "remote"]

#: The languages of the remote sessions: those the tests run.
REMOTE_LANGUAGES = ["python", "shell", "sh", "javascript"]


def new_computer(kind: str, request: pytest.FixtureRequest) -> Computer | RemoteComputer:
    """A Computer (``local``) or a RemoteComputer making a session on the shared
    ``lmc serve`` (``remote``), not open yet: open it with ``with`` or ``async with``."""
    if kind == "remote":
        server = request.getfixturevalue("lmc_server")
        return RemoteComputer(server.url, token=TOKEN, languages=REMOTE_LANGUAGES)
    return Computer(timeouts=Timeouts(interrupt_grace=2.0))


def kind_of(computer: object) -> str:
    """Which of :data:`KINDS` ``computer`` is."""
    return "remote" if isinstance(computer, RemoteComputer) else "local"


def install_line(module: str, extra: str) -> str:
    """What :func:`import_without` prints for an integration missing its extra."""
    return (
        f"True lmc_runtime.integrations.{module} needs the [{extra}] extra: "
        f"pip install 'lmc-runtime[{extra}]'\n"
    )
