"""The code message check the service shares with the executor (lmc_runtime.intake)."""

from __future__ import annotations

import pytest

from lmc_runtime.errors import MessageError
from lmc_runtime.intake import code_message, raw_id

CODE = {"role": "assistant", "type": "code", "format": "python", "content": "1"}


def test_a_code_message_gets_an_id_and_keeps_its_own() -> None:
    assert code_message(CODE).id
    assert code_message({**CODE, "id": "m-1"}).id == "m-1"


def test_the_language_is_not_looked_up() -> None:
    assert code_message({**CODE, "format": "klingon"}).format == "klingon"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"role": "user", "type": "message", "content": "hi"}, "only assistant code messages"),
        ({**CODE, "content": "\ud800"}, "lone surrogate"),
        ([], ""),
        ({"role": "assistant", "type": "code", "content": "no format"}, ""),
    ],
)
def test_what_cannot_run_is_a_message_error(data: object, words: str) -> None:
    with pytest.raises(MessageError) as refused:
        code_message(data)  # type: ignore[arg-type]
    assert words in refused.value.reason


def test_raw_id_is_the_id_of_anything_that_has_a_usable_one() -> None:
    assert raw_id({"id": "m-1", "role": 3}) == "m-1"
    assert raw_id({"id": 7}) is None
    assert raw_id([1]) is None
    assert raw_id("text") is None
