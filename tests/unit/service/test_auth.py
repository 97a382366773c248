"""Token parsing and checking, and the WebSocket Origin rule."""

from __future__ import annotations

import pytest

from lmc_runtime.errors import HostNotAllowed, OriginNotAllowed, ServiceError, TokenRejected
from lmc_runtime.service.problems import problem_for
from lmc_runtime.web.auth import (
    Authenticator,
    bearer_from_header,
    host_is_loopback,
    origin_allowed,
    token_from_subprotocols,
)


def _status(exc: ServiceError) -> int:
    problem = problem_for(exc)
    assert problem is not None
    return problem.status


def test_bearer_header_parsing() -> None:
    assert bearer_from_header("Bearer abc") == "abc"
    assert bearer_from_header("bearer   abc ") == "abc"
    assert bearer_from_header("Basic abc") is None
    assert bearer_from_header("Bearer ") is None
    assert bearer_from_header(None) is None


def test_token_from_subprotocols() -> None:
    assert token_from_subprotocols(["lmc", "lmc.token.s3cret"]) == "s3cret"
    assert token_from_subprotocols(["lmc"]) is None


def test_authenticator_accepts_only_the_token() -> None:
    auth = Authenticator("right")
    assert auth.valid("right")
    assert not auth.valid("wrong") and not auth.valid(None) and not auth.valid("righ")
    auth.check_http({"authorization": "Bearer right"})
    with pytest.raises(TokenRejected) as missing:
        auth.check_http({})
    assert _status(missing.value) == 401 and "missing" in missing.value.message
    with pytest.raises(TokenRejected) as wrong:
        auth.check_http({"authorization": "Bearer nope"})
    assert wrong.value.message == "invalid bearer token"


def test_disabled_authenticator_lets_everyone_in() -> None:
    auth = Authenticator(None, enabled=False)
    assert auth.valid(None)
    auth.check_http({})
    auth.check_http({"host": "127.0.0.1:8765"})
    with pytest.raises(ValueError):
        Authenticator(None)


@pytest.mark.parametrize(
    "host",
    ["evil.example:8765", "evil.example", "10.0.0.5:8765", "[fe80::1]:8765", "localhost.evil"],
)
def test_no_auth_refuses_dns_rebinding_hosts(host: str) -> None:
    """Regression: without a token, a page rebinding its name to 127.0.0.1 got in."""
    auth = Authenticator(None, enabled=False)
    with pytest.raises(HostNotAllowed) as refused:
        auth.check_http({"host": host, "origin": f"http://{host}"})
    assert _status(refused.value) == 403


@pytest.mark.parametrize(
    "host", ["localhost:8765", "127.0.0.1:8765", "127.0.0.1", "[::1]:8765", "LOCALHOST"]
)
def test_host_is_loopback(host: str) -> None:
    assert host_is_loopback(host)


def test_cross_origin_requests_are_refused_on_http_too() -> None:
    """Regression: only the WebSocket checked Origin; a page could POST to a no-auth server."""
    for auth in (Authenticator(None, enabled=False), Authenticator("right")):
        with pytest.raises(OriginNotAllowed) as refused:
            auth.check_http(
                {
                    "host": "127.0.0.1:8765",
                    "origin": "https://evil.example",
                    "authorization": "Bearer right",
                }
            )
        assert _status(refused.value) == 403
    Authenticator("right").check_http(
        {
            "host": "127.0.0.1:8765",
            "origin": "http://127.0.0.1:8765",
            "authorization": "Bearer right",
        }
    )


@pytest.mark.parametrize(
    ("origin", "host", "allowed", "expected"),
    [
        (None, "127.0.0.1:8765", (), True),  # not a browser
        ("http://127.0.0.1:8765", "127.0.0.1:8765", (), True),  # the server's own page
        ("https://evil.example", "127.0.0.1:8765", (), False),
        ("http://127.0.0.1:9999", "127.0.0.1:8765", (), False),
        ("null", "127.0.0.1:8765", (), False),
        ("https://app.example", "127.0.0.1:8765", ("https://app.example/",), True),
        ("http://localhost", "localhost:80", (), True),
    ],
)
def test_origin_rule(
    origin: str | None, host: str, allowed: tuple[str, ...], expected: bool
) -> None:
    assert origin_allowed(origin, host, allowed) is expected
