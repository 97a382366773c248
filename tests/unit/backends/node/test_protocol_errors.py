"""Runner output that reports an error names the error's class, and keeps that mark."""

from __future__ import annotations

import json

import pytest

from lmc_runtime.backends.core import Output
from lmc_runtime.backends.core.runner.wire import Decoder, decode_event


def _lines(*events: dict[str, object]) -> bytes:
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)


def test_an_error_output_event_decodes_with_the_error_s_class() -> None:
    """Regression: the "n" of an output event (the error it reports) was dropped."""
    event = decode_event(b'{"k":"e","n":"TypeError","d":"Uncaught TypeError: x\\n"}')
    assert event == Output("Uncaught TypeError: x\n", "stderr", "TypeError")
    assert decode_event(b'{"k":"e","d":"plain"}') == Output("plain", "stderr", None)


def test_error_output_is_not_joined_with_the_stderr_around_it() -> None:
    """Regression: joining an error's text with the code's own stderr lost or spread the mark."""
    data = _lines(
        {"k": "e", "d": "before\n"},
        {"k": "e", "n": "RangeError", "d": "Uncaught RangeError: "},
        {"k": "e", "n": "RangeError", "d": "too far\n"},
        {"k": "e", "n": "TypeError", "d": "Uncaught TypeError\n"},
        {"k": "e", "d": "after\n"},
    )
    assert Decoder().feed(data) == [
        Output("before\n", "stderr"),
        Output("Uncaught RangeError: too far\n", "stderr", "RangeError"),
        Output("Uncaught TypeError\n", "stderr", "TypeError"),
        Output("after\n", "stderr"),
    ]


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_an_error_output_longer_than_the_limit_keeps_its_mark(size: int) -> None:
    """Regression: a long error event (past the fast path's heads) was dropped as garbage."""
    text = 'Uncaught Error: "\\' + "x\u00e9" * 300 + "\n"
    data = _lines({"k": "e", "d": "before\n"}, {"k": "e", "n": 'My"Error', "d": text})
    data += _lines({"k": "o", "d": "next\n"})
    decoder = Decoder(limit=64)
    got: list[object] = []
    for start in range(0, len(data), size):
        got.extend(decoder.feed(data[start : start + size]))
    errors = [e for e in got if isinstance(e, Output) and e.error is not None]
    assert "".join(e.text for e in errors) == text
    assert {e.error for e in errors} == {'My"Error'}
    assert got[0] == Output("before\n", "stderr") and got[-1] == Output("next\n", "stdout")
    assert decoder.held == 0
