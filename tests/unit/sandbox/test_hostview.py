"""HostView: what every sandbox on the host shares, looked up once per ``ttl``."""

from __future__ import annotations

import pytest

from lmc_runtime.backends.base import Availability
from lmc_runtime.sandbox import hostview
from lmc_runtime.sandbox.hostview import HostFacts, HostView

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    seen: list[bool] = []

    def look_up(sandboxed: bool) -> HostFacts:
        seen.append(sandboxed)
        return HostFacts(Availability.yes(), "/usr/bin/bwrap" if sandboxed else None, (), ())

    monkeypatch.setattr(hostview, "look_up", look_up)
    return seen


async def test_the_facts_are_looked_up_once_within_the_ttl(lookups: list[bool]) -> None:
    view = HostView(ttl=3600)
    first = await view.facts(sandboxed=True)
    assert await view.facts(sandboxed=True) is first
    await view.facts(sandboxed=False)  # kept apart: no bwrap to look for
    assert lookups == [True, False]


async def test_a_ttl_of_0_looks_them_up_at_every_call(lookups: list[bool]) -> None:
    view = HostView(ttl=0)
    await view.facts(sandboxed=True)
    await view.facts(sandboxed=True)
    assert lookups == [True, True]
