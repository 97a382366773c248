"""Token parsing and checking, and the WebSocket Origin rule."""

from __future__ import annotations

import pytest

from lmc_runtime.service.auth import (
    Authenticator,
    bearer_from_header,
    origin_allowed,
    token_from_subprotocols,
)
from lmc_runtime.service.problems import ApiError


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
    with pytest.raises(ApiError) as missing:
        auth.check_http({})
    assert missing.value.status == 401 and "missing" in missing.value.message
    with pytest.raises(ApiError) as wrong:
        auth.check_http({"authorization": "Bearer nope"})
    assert wrong.value.message == "invalid bearer token"


def test_disabled_authenticator_lets_everyone_in() -> None:
    auth = Authenticator(None, enabled=False)
    assert auth.valid(None)
    auth.check_http({})
    with pytest.raises(ValueError):
        Authenticator(None)


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
