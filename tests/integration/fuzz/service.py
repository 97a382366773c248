"""What the service fuzz tests share: the server, its session, the checks after a batch,
and strategies for the service's own request bodies."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from hypothesis import strategies as st

from ..service.server import Server, output
from .checks import GUARD, descendants, new_processes
from .strategies import bad_values, hostile_numbers, nested, odd_strings

__all__ = ["Target", "content_types", "create_bodies", "problem_of", "target"]

#: The languages of the fuzzed session: those :data:`strategies.SAFE_CODE` runs.
LANGUAGES = ["python", "shell"]


@dataclass
class Target:
    """A running server, one session on it, and its processes once warm."""

    server: Server
    session_id: str
    processes: set[int]

    def assert_healthy(self) -> None:
        """The server lives, runs ``print(1)`` in the session, and left nothing behind."""
        assert self.server.process.poll() is None, self.server.log()
        assert output(self.server.execute(self.session_id, "print(1)")) == "1\n"
        left = new_processes(self.processes, self.server.process.pid)
        assert not left, f"processes left behind: {sorted(left)}"


def target(server: Server) -> Iterator[Target]:
    """A session with its languages warm (their interpreters started), deleted after."""
    session_id = server.create(languages=LANGUAGES)
    try:
        for language, code in (("python", "print(0)"), ("shell", "echo 0")):
            assert output(server.execute(session_id, code, language=language)) == "0\n"
        yield Target(server, session_id, descendants(server.process.pid))
    finally:
        server.delete(session_id)


def problem_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON problem body of a 4xx; fails on a 5xx or another body."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    body = response.json()
    assert isinstance(body["error"]["code"], str) and body["error"]["message"], body
    return dict(body["error"])


def content_types() -> st.SearchStrategy[str | None]:
    """The Content-Type of a request: none, JSON, or one that does not fit the body."""
    return st.sampled_from(
        [None, "application/json", "text/plain", "application/x-www-form-urlencoded",
         "multipart/form-data; boundary=x", "application/json; charset=latin-1",
         "application/octet-stream", "x/\x7f", ""]
    )  # fmt: skip


def _limits() -> st.SearchStrategy[dict[str, Any]]:
    fields = ["memory_bytes", "cpu_seconds", "wall_seconds", "processes", "file_size_bytes",
              "disk_bytes", "output_bytes", "cpu_quota", "bogus"]  # fmt: skip
    value = st.one_of(hostile_numbers(), st.just(1 << 70), st.integers(), bad_values())
    return st.dictionaries(st.sampled_from(fields), value, min_size=1, max_size=3)


def create_bodies() -> st.SearchStrategy[Any]:
    """Bodies for ``POST /v1/sessions`` that no session may come of: wrong types,
    hostile limits, odd languages, paths and variables. (A body that happens to be
    valid makes a session, which the test deletes.)"""
    return st.one_of(
        st.fixed_dictionaries({"languages": st.lists(odd_strings(12), min_size=1, max_size=3)}),
        st.fixed_dictionaries({"languages": bad_values()}),
        st.fixed_dictionaries({"limits": _limits()}),
        st.fixed_dictionaries({"limits": bad_values()}),
        st.fixed_dictionaries({"network": bad_values() | odd_strings(5)}),
        st.fixed_dictionaries({"title": bad_values() | st.just("t" * 201)}),
        st.fixed_dictionaries(
            {"cwd": odd_strings(20).map(lambda text: "../" + text) | st.just("/etc")}
        ),
        st.fixed_dictionaries(
            {"env": st.dictionaries(odd_strings(8), odd_strings(8) | bad_values(), min_size=1)}
        ),
        st.fixed_dictionaries({"env": st.just({"LD_PRELOAD": "x"}) | bad_values()}),
        st.builds(nested, st.integers(2, 500), st.sampled_from(["list", "dict"])),
        st.dictionaries(odd_strings(8), bad_values(), min_size=1, max_size=2),
    )


def bounded_client(server: Server) -> httpx.Client:
    """A client of ``server`` whose every request is bounded by :data:`GUARD`."""
    client = server.client()
    client.timeout = httpx.Timeout(GUARD)
    return client
