"""``ComputerLike``: the one interface that ``Computer`` and ``RemoteComputer`` share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import lmc_runtime
from lmc_runtime import Computer, ComputerLike
from lmc_runtime.remote import RemoteComputer


@pytest.fixture
def computer() -> Iterator[Computer]:
    made = Computer()
    try:
        yield made
    finally:
        made.close()


def test_computer_is_computer_like(computer: Computer) -> None:
    """A local Computer has every member of the protocol."""
    assert isinstance(computer, ComputerLike)


def test_remote_computer_is_computer_like() -> None:
    """A RemoteComputer (not yet open: no server is needed) has every member too."""
    remote = RemoteComputer("http://127.0.0.1:9", token="t")
    try:
        assert isinstance(remote, ComputerLike)
    finally:
        remote.close()


def test_an_object_without_resolve_is_not_computer_like() -> None:
    """The check looks at the members: one missing makes an object something else."""

    class Partial:
        languages: dict[str, object] = {}

        def run(self) -> None: ...
        def arun(self) -> None: ...
        def interrupt(self) -> None: ...
        async def ainterrupt(self) -> None: ...
        def restart(self) -> None: ...
        async def arestart(self) -> None: ...
        def close(self) -> None: ...
        async def aclose(self) -> None: ...
        async def __aenter__(self) -> None: ...
        async def __aexit__(self) -> None: ...

    assert not isinstance(Partial(), ComputerLike)
    Partial.resolve = lambda self, language: None  # type: ignore[attr-defined]
    assert isinstance(Partial(), ComputerLike)


def test_computer_like_is_exported() -> None:
    """``from lmc_runtime import ComputerLike`` is the public name."""
    assert "ComputerLike" in lmc_runtime.__all__


def test_computer_resolves_names_and_aliases(computer: Computer) -> None:
    """``Computer.resolve`` answers as the REPL needs: a name or alias in any case, or None."""
    assert computer.resolve("PYTHON") == "python"
    assert computer.resolve("py") == "python"
    assert computer.resolve("nope") is None


def test_remote_computer_has_no_registry() -> None:
    """RemoteComputer no longer carries a stand-in for Computer's backend registry."""
    remote = RemoteComputer("http://127.0.0.1:9", token="t")
    try:
        assert not hasattr(remote, "registry")
    finally:
        remote.close()
