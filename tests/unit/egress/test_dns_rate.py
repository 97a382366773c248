"""A session's DNS resolves the names its policy allows, and only as fast as a
program that uses them needs: random names under an allowed wildcard
(``<data>.pythonhosted.org``) must not turn the server into a stream of queries
to its resolver, each carrying what the session put in the name."""

from __future__ import annotations

import time

import pytest

from lmc_runtime.egress import dns
from lmc_runtime.egress.dnswire import SERVFAIL, A, build_query, parse_response
from lmc_runtime.egress.policy import EgressPolicy, parse_entries


class Counting:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def resolve(self, name: str) -> list[str]:
        self.asked.append(name)
        return ["93.184.215.14"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_names_are_resolved_at_a_bounded_rate() -> None:
    resolver = Counting()
    server = dns.SessionDns("s1", EgressPolicy(parse_entries(["*.wild.test"], "allow")), resolver)
    started = time.monotonic()
    codes = []
    for i in range(1000):
        query = build_query(i, f"{i:x}-data.wild.test", A)
        assert query is not None
        answer = await server.answer(query)
        assert answer is not None
        parsed = parse_response(answer, i, A)
        assert parsed is not None
        codes.append(parsed[0])
    elapsed = time.monotonic() - started
    assert dns.BURST <= len(resolver.asked) <= dns.BURST + dns.RATE * elapsed + 1
    assert codes[: dns.BURST] == [0] * dns.BURST  # a burst a program makes passes
    assert codes[-1] == SERVFAIL
