"""Fixtures of the contract: every test runs once per language, on a fresh Computer,
in-process (``local``) and over the wire (``remote``).

A language whose interpreter or backend is not available here is skipped with
the reason the registry gives (``lmc setup`` installs them all); every other
failure is a real one.

``remote`` runs the same test on a :class:`~lmc_runtime.remote.RemoteComputer`
whose session (of the profile's language) lives in one sandboxed ``lmc serve``
shared by the whole test run. A test whose subject only exists in-process (host
process ids, host paths, ``on_input`` callbacks, Computer options the service
does not offer) is marked ``@pytest.mark.local_only("why")`` and runs locally only.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import Registry

from ..integration.service.server import TOKEN, Server, running_server
from .harness import GRACE, GUARD, ComputerFactory
from .languages import PROFILES, Profile

#: Where a contract test's Computer runs: in this process, or in a session of ``lmc serve``.
SIDES = ("local", "remote")
#: The ``make_computer`` keywords a RemoteComputer takes as well.
_REMOTE_KEYWORDS = frozenset({"env", "timeouts"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A remote run that meets a known failure of the server is a strict xfail: it
    turns into a failure once the server is fixed, so that the mark goes too."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("side") != "remote":
            continue
        for mark in item.iter_markers("remote_xfail"):
            if all(params.get(name) in values for name, values in mark.kwargs.items()):
                item.add_marker(pytest.mark.xfail(reason=mark.args[0], strict=True))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that opens a Computer runs on both sides, unless it is local only."""
    if "side" in metafunc.fixturenames:
        local_only = metafunc.definition.get_closest_marker("local_only") is not None
        metafunc.parametrize("side", ["local"] if local_only else list(SIDES))


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """Interpreters run as they do outside pytest: ipykernel stops capturing the
    output of child processes when it sees ``PYTEST_CURRENT_TEST``, which pytest
    sets while a test runs and which every interpreter would inherit."""
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    return (yield)


@functools.cache
def availability(name: str) -> tuple[bool, str | None]:
    found = Registry().availability(name)
    return found.available, found.reason


@pytest.fixture(params=list(PROFILES))
def lang(request: pytest.FixtureRequest) -> Profile:
    """The profile of one language; skipped when that language cannot run here."""
    return available_profile(request.param)


def available_profile(name: str) -> Profile:
    """The profile of ``name``; the test is skipped when that language cannot run here."""
    profile = PROFILES[name]
    available, reason = availability(profile.name)
    if not available:
        pytest.skip(f"{profile.name} is not available here: {reason}")
    return profile


@pytest.fixture(scope="session")
def contract_server() -> Iterator[Server]:
    """One sandboxed ``lmc serve`` for every remote contract test (started at the first)."""
    with running_server("--pool-size", "1", "--max-sessions", "32") as server:
        yield server


def _remote_factory(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Opens a RemoteComputer on a new session in the language of the test's profile."""
    from lmc_runtime.remote import RemoteComputer, RemoteTimeouts

    server: Server = request.getfixturevalue("contract_server")
    profile = request.getfixturevalue("lang") if "lang" in request.fixturenames else None
    languages = [profile.name] if profile is not None else ["python"]

    def make(**kwargs: Any) -> RemoteComputer:
        unsupported = kwargs.keys() - _REMOTE_KEYWORDS
        assert not unsupported, f"{sorted(unsupported)} cannot go over the wire: mark it local_only"
        return RemoteComputer(
            server.url,
            token=TOKEN,
            languages=languages,
            env=kwargs.get("env"),
            timeouts=RemoteTimeouts(execution=GUARD),
        )

    return make


@pytest.fixture
def make_computer(
    tmp_path: Path, side: str, request: pytest.FixtureRequest
) -> Iterator[ComputerFactory]:
    """Opens fresh Computers (short grace, working in ``tmp_path``), or RemoteComputers
    on the ``remote`` side; closes them after the test."""
    opened: list[Any] = []
    remote = _remote_factory(request) if side == "remote" else None

    def make(**kwargs: Any) -> Computer:
        kwargs.setdefault("timeouts", Timeouts(execution=GUARD, interrupt_grace=GRACE))
        if remote is not None:
            computer: Any = remote(**kwargs)
        else:
            kwargs.setdefault("cwd", tmp_path)
            computer = Computer(**kwargs)
        computer.__enter__()
        opened.append(computer)
        return computer  # type: ignore[no-any-return]

    yield make
    for computer in opened:
        computer.close()


@pytest.fixture
def computer(make_computer: ComputerFactory) -> Computer:
    """A fresh Computer with the contract's defaults."""
    return make_computer()
