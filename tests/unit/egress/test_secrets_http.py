"""Placeholders replaced in a request's headers, and nowhere else."""

from __future__ import annotations

import pytest

from lmc_runtime.egress.http1 import BadRequest, _framing, rewrite_head

TOKEN, VALUE = b"lmc-secret-key-" + b"a" * 32, b"sk-real-value"


def test_only_header_values_are_rewritten() -> None:
    head = (
        b"GET /x?key=" + TOKEN + b" HTTP/1.1\r\nHost: a.test\r\n"
        b"Authorization: Bearer " + TOKEN + b"\r\nX-Other: lmc-secret-key-" + b"b" * 32 + b"\r\n"
        b"X-" + TOKEN + b": 1\r\n\r\n"
    )
    rewritten, fields = rewrite_head(head, {TOKEN: VALUE})
    lines = rewritten.split(b"\r\n")
    assert lines[0] == b"GET /x?key=" + TOKEN + b" HTTP/1.1"  # the request line is kept
    assert lines[2] == b"Authorization: Bearer " + VALUE
    assert lines[3] == b"X-Other: lmc-secret-key-" + b"b" * 32  # not this session's token
    assert lines[4] == b"X-" + TOKEN + b": 1"  # a header's name is not a value
    assert rewritten.endswith(b"\r\n\r\n")
    assert (b"authorization", b"Bearer " + VALUE) in fields


def test_a_proxys_absolute_form_goes_on_as_the_origins() -> None:
    head = b"GET http://a.test/x?y=1 HTTP/1.1\r\nHost: a.test\r\n\r\n"
    assert rewrite_head(head, {})[0].startswith(b"GET /x?y=1 HTTP/1.1\r\n")
    assert rewrite_head(b"GET http://a.test HTTP/1.0\r\n\r\n", {})[0] == b"GET / HTTP/1.0\r\n\r\n"


@pytest.mark.parametrize(
    "head",
    [
        b"GET / HTTP/1.1\r\nHost: a\r\n continued\r\n\r\n",  # folded
        b"GET / HTTP/1.1\r\nHost: a\nX: 1\r\n\r\n",  # a bare LF
        b"GET / HTTP/2\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        b"TRACE / HTTP/1.1\r\nHost: a\r\n\r\n",  # the upstream would echo the value back
    ],
)
def test_a_malformed_head_is_refused(head: bytes) -> None:
    with pytest.raises(BadRequest):
        rewrite_head(head, {TOKEN: VALUE})


def test_a_body_is_framed_one_way_only() -> None:
    assert _framing([]) == 0
    assert _framing([(b"content-length", b"12")]) == 12
    assert _framing([(b"transfer-encoding", b"chunked")]) is None
    for fields in (
        [(b"content-length", b"1"), (b"transfer-encoding", b"chunked")],
        [(b"content-length", b"1"), (b"content-length", b"2")],
        [(b"content-length", b"-1")],
        [(b"transfer-encoding", b"gzip, chunked")],
    ):
        with pytest.raises(BadRequest):
            _framing(fields)
