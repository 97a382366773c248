"""ask_input: the one way every backend asks the input callback for a line, and says
why there is none."""

from __future__ import annotations

import anyio
import pytest

from lmc_runtime.backends import ExecutionOptions
from lmc_runtime.backends.inputs import ask_input
from lmc_runtime.config import InputCallback

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _options(callback: InputCallback | None, timeout: float | None = 5.0) -> ExecutionOptions:
    return ExecutionOptions(reply_to="tag", on_input=callback, input_timeout=timeout)


async def test_ask_input_gets_a_plain_or_async_callbacks_line_for_the_prompt() -> None:
    """Both kinds of callback are asked with the prompt; the line comes back whole."""

    async def coroutine(prompt: str) -> str:
        return f"async {prompt}\nsecond"

    assert await ask_input(_options(lambda prompt: f"plain {prompt}"), "name? ") == (
        "plain name? ",
        None,
    )
    assert await ask_input(_options(coroutine), "age? ") == ("async age? \nsecond", None)


async def test_ask_input_says_why_a_failing_slow_or_wrong_callback_gave_no_line() -> None:
    """A raise, a wait past input_timeout, a non-str and text that is not UTF-8 are
    each told, never raised into the run."""

    def fails(prompt: str) -> str:
        raise RuntimeError("no keyboard")

    async def slow(prompt: str) -> str:
        await anyio.sleep_forever()
        raise AssertionError

    assert await ask_input(_options(fails), "") == (None, "RuntimeError('no keyboard')")
    assert await ask_input(_options(slow, timeout=0.05), "") == (None, "no answer in time")
    value, failure = await ask_input(_options(lambda prompt: 42), "")  # type: ignore[arg-type,return-value]
    assert value is None and failure is not None and "returned int, not str" in failure
    value, failure = await ask_input(_options(lambda prompt: "\ud800"), "")
    assert value is None and failure is not None and "UnicodeEncodeError" in failure


async def test_ask_input_without_a_callback_says_nothing_answers() -> None:
    """No callback: no line, and a reason instead of an error."""
    assert await ask_input(_options(None), "?") == (None, "nothing answers input here")
