"""Malformed, odd and hostile messages: one clear answer each, never an exception."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from lmc_runtime import Computer, Timeouts, UsageError

from ..conftest import run
from .conftest import assert_well_formed, code_msg, collect

NON_STR_KEY: dict[Any, Any] = {**code_msg("1"), 1: 2}


@pytest.mark.parametrize("message", [None, 5, b"print(1)"], ids=["None", "int", "bytes"])
def test_what_is_no_message_at_all_raises_type_error(c: Computer, message: Any) -> None:
    """A caller's bug, not the model's: it raises at once instead of becoming a reply."""
    with pytest.raises(TypeError, match="takes an LMC message"):
        c.run(message)


@pytest.mark.parametrize(
    ("message", "phrase"),
    [
        pytest.param({}, "role", id="empty-dict"),
        pytest.param(code_msg(None), "must be a string", id="content-None"),
        pytest.param(code_msg({"nested": {"a": [1]}}), "must be a string", id="content-dict"),
        pytest.param(code_msg(b"print(1)"), "must be a string", id="content-bytes"),
        pytest.param(code_msg("1", id=5), "id", id="int-id"),
        pytest.param(code_msg("1", id=float("nan")), "id", id="nan-id"),
        pytest.param(code_msg("1", created_at=float("nan")), "created_at", id="nan-created_at"),
        pytest.param(code_msg("1", extras=float("nan")), "extras", id="nan-extras"),
        pytest.param(NON_STR_KEY, "Keys should be strings", id="non-str-key"),
        pytest.param({**code_msg("1"), "format": None}, "language", id="format-None"),
        pytest.param({**code_msg("1"), "format": "py thon"}, "language", id="format-space"),
    ],
)
def test_malformed_messages_get_one_not_understood_reply(
    c: Computer, message: Any, phrase: str
) -> None:
    replies = list(c.run(message))
    assert len(replies) == 1
    (reply,) = replies
    assert reply.role == "computer" and reply.format == "output"
    assert reply.content.startswith("[lmc] not understood:")
    assert phrase in reply.content
    assert reply.extras and reply.extras["status"] == "malformed"


def test_odd_but_valid_messages_run(c: Computer) -> None:
    huge_id = "x" * 100_000
    result = collect(c, code_msg("print(3)", id=huge_id))
    assert_well_formed(result, huge_id)
    assert result.output == "3\n"
    # Language names are case-insensitive; a missing id gets a fresh one.
    result = collect(c, {**code_msg("print(2)", id=None), "format": "PYTHON"})
    assert_well_formed(result)
    assert result.output == "2\n" and result.final.in_reply_to
    # Cyclic extras cannot be written as JSON: one not-understood reply that
    # names the field, never a hang or a traceback.
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    (reply,) = list(c.run(code_msg("1", extras=cyclic)))
    assert reply.content.startswith("[lmc] not understood:") and "'extras'" in reply.content


def test_nul_bytes_in_code_are_a_python_syntax_error(c: Computer) -> None:
    result = run(c, "x = 1\x00")
    assert_well_formed(result)
    assert result.status == "error"
    assert "null bytes" in result.output


def test_huge_code_runs(c: Computer) -> None:
    result = run(c, "x = 1\n" + "#" * 5_000_000 + "\nprint('big code ok')")
    assert_well_formed(result)
    assert result.output == "big code ok\n"


def test_code_with_a_lone_surrogate_is_answered_as_malformed() -> None:
    """Code holding a lone surrogate cannot be encoded for any interpreter: it is
    refused as malformed with the reason, and the session goes on."""
    with Computer(timeouts=Timeouts(execution=10)) as comp:
        (reply,) = comp.run("python", "print('\ud800')")
        assert reply.extras["status"] == "malformed"  # type: ignore[index]
        assert "lone surrogate" in reply.content
        assert run(comp, "print('fine')").output == "fine\n"


def test_a_mapping_that_raises_is_answered_not_raised(c: Computer) -> None:
    """A Mapping whose item access and iteration raise is answered with one
    not-understood reply, never raised into the caller's loop."""

    class Broken(Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise RuntimeError("broken mapping")

        def __iter__(self) -> Iterator[str]:
            raise RuntimeError("broken mapping")

        def __len__(self) -> int:
            return 4

    replies = list(c.run(Broken()))
    assert len(replies) == 1 and replies[0].content.startswith("[lmc] not understood")


@pytest.mark.parametrize("timeout", [float("nan"), -1.0, 0.0])
def test_a_bad_per_run_timeout_is_refused(c: Computer, timeout: float) -> None:
    """``run(timeout=...)`` is checked as ``Timeouts`` checks its fields: NaN,
    negative and zero are refused before anything runs."""
    with pytest.raises((UsageError, ValueError)):
        list(c.run("python", "print(1)", timeout=timeout))
