"""Fixtures of the contract: every test runs once per language, on a fresh Computer.

A language whose interpreter or backend is not available here is skipped with
the reason the registry gives (``lmc setup`` installs them all); every other
failure is a real one.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from lmc_runtime import Computer, Timeouts
from lmc_runtime.backends import Registry

from .harness import GRACE, GUARD, ComputerFactory
from .languages import PROFILES, Profile


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
    profile = PROFILES[request.param]
    available, reason = availability(profile.name)
    if not available:
        pytest.skip(f"{profile.name} is not available here: {reason}")
    return profile


@pytest.fixture
def make_computer(tmp_path: Path) -> Iterator[ComputerFactory]:
    """Opens fresh Computers (short grace, working in ``tmp_path``); closes them after the test."""
    opened: list[Computer] = []

    def make(**kwargs: Any) -> Computer:
        kwargs.setdefault("cwd", tmp_path)
        kwargs.setdefault("timeouts", Timeouts(execution=GUARD, interrupt_grace=GRACE))
        computer = Computer(**kwargs)
        computer.__enter__()
        opened.append(computer)
        return computer

    yield make
    for computer in opened:
        computer.close()


@pytest.fixture
def computer(make_computer: ComputerFactory) -> Computer:
    """A fresh Computer with the contract's defaults."""
    return make_computer()
