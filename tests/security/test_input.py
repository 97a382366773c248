"""Hostile input to the message intake: ``lmc run`` lines and the dicts given to
``Computer.run``. Every hostile input gets exactly one "not understood" reply;
nothing raises, nothing aborts a batch, no reply grows with the input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from lmc_runtime.computer import Computer
from lmc_runtime.errors import MessageError
from lmc_runtime.messages import parse_message

NOT_UNDERSTOOD = "[lmc] not understood: "
#: No not-understood reply quotes more of the input than this.
REPLY_CHARS = 2000


def code(content: str, **fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "type": "code", "format": "python", "content": content, **fields}


def _code_line(content_json: str, extra: str = "") -> bytes:
    head = '{"role":"assistant","type":"code","format":"python","content":'
    return (head + content_json + extra + "}").encode()


def _nested(depth: int, inner: Any = 1) -> Any:
    value = inner
    for _ in range(depth):
        value = [value]
    return value


def _nested_objects(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


#: name -> one line of ``lmc run`` input that must not run and must not stop the batch.
HOSTILE_LINES: dict[str, bytes] = {
    "100k [": b"[" * 100_000,
    "100k {": b'{"a":' * 100_000,
    "deep closed arrays": b"[" * 50_000 + b"]" * 50_000,
    "deep extras": _code_line('"print(0)"', ',"extras":' + '{"a":' * 900 + "1" + "}" * 900),
    "100k-digit integer": b"1" * 100_000,
    "100k-digit content": _code_line("1" * 100_000),
    "1e999": _code_line('"print(0)"', ',"extras":{"x":1e999}'),
    "long float": _code_line('"print(0)"', ',"extras":{"x":' + "9" * 5000 + ".5}"),
    "NaN": _code_line('"print(0)"', ',"extras":{"x":NaN}'),
    "-Infinity": _code_line('"print(0)"', ',"extras":{"x":-Infinity}'),
    "invalid UTF-8": b'\xff\xfe{"role":"assistant"}',
    "invalid UTF-8 in a string": _code_line('"print(1)"').replace(b"(1)", b"(\xc3\x28)"),
    "50 MB line": _code_line('"#' + "a" * (50 << 20) + '"'),
    "a list": b"[1, 2, 3]",
    "a string": b'"python"',
    "null": b"null",
    "a number": b"42",
    "true": b"true",
    "lone surrogate in content": _code_line("\"print('\\ud800')\""),
    "lone surrogate in id": _code_line('"print(0)"', ',"id":"\\udfff"'),
    "huge role": b'{"role":"' + b"x" * (1 << 20) + b'","type":"code","content":""}',
    "deep role": b'{"role":' + b"[" * 500 + b"]" * 500 + b',"type":"code","content":""}',
    "NUL bytes": b"\x00\x00\x00",
    "not JSON": b"{'role': 'assistant'}",
}


def _batch() -> tuple[bytes, list[str]]:
    """Good code lines ``good-0`` .. ``good-N`` with one hostile line between each two."""
    lines = [json.dumps(code("print('good 0')", id="good-0")).encode()]
    names = list(HOSTILE_LINES)
    for number, name in enumerate(names, 1):
        lines.append(HOSTILE_LINES[name])
        lines.append(json.dumps(code(f"print('good {number}')", id=f"good-{number}")).encode())
    return b"\n".join(lines) + b"\n", names


def _groups(out: list[dict[str, Any]], count: int) -> Iterator[list[dict[str, Any]]]:
    """The replies written between the answers to ``good-k`` and ``good-(k+1)``."""
    index = 0
    for number in range(count + 1):
        between: list[dict[str, Any]] = []
        while out[index].get("in_reply_to") != f"good-{number}":
            between.append(out[index])
            index += 1
        if number:
            yield between
        while index < len(out) and out[index].get("in_reply_to") == f"good-{number}":
            index += 1


def test_lmc_run_answers_each_hostile_line_once_and_goes_on() -> None:
    """Guards `lmc run` against a hostile line aborting the batch (RecursionError,
    int conversion limit, ...) or running: each gets one bounded not-understood reply,
    and the good lines after it still run."""
    batch, names = _batch()
    done = subprocess.run(
        [sys.executable, "-m", "lmc_runtime", "run", "-"],
        input=batch,
        capture_output=True,
        timeout=300,
        check=False,
    )
    # 1: lines were not understood (each got its reply), and the batch still ran to its end
    assert done.returncode == 1, done.stderr.decode(errors="replace")[-3000:]
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")[-3000:]
    out = [json.loads(line) for line in done.stdout.splitlines()]
    for number in range(len(names) + 1):
        printed = "".join(
            m["content"]
            for m in out
            if m.get("in_reply_to") == f"good-{number}" and m["format"] == "output"
        )
        assert printed == f"good {number}\n", (number, printed)
    for name, between in zip(names, _groups(out, len(names)), strict=True):
        assert len(between) == 1, (name, [str(m["content"])[:200] for m in between])
        reply = between[0]
        assert reply["role"] == "computer", name
        assert reply["content"].startswith(NOT_UNDERSTOOD), (name, reply["content"][:200])
        assert len(reply["content"]) < REPLY_CHARS, (name, len(reply["content"]))
        assert reply["extras"]["status"] in ("malformed", "not_understood"), name
        assert "RecursionError" not in reply["content"], name


def _cyclic() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["a"] = value
    return value


#: name -> a message dict a caller might hand ``Computer.run``.
HOSTILE_DICTS: dict[str, dict[str, Any]] = {
    "deep list in extras": code("print(0)", extras={"a": _nested(100_000)}),
    "deep objects in extras": code("print(0)", extras=_nested_objects(100_000)),
    "cyclic extras": code("print(0)", extras=_cyclic()),
    "deep list as content": code("print(0)") | {"content": _nested(100_000)},
    "deep list as role": code("print(0)") | {"role": _nested(100_000)},
    "deep list as format": code("print(0)") | {"format": _nested(100_000)},
    "huge string as role": code("print(0)") | {"role": "x" * (10 << 20)},
    "huge int as content": code("print(0)") | {"content": 10**5000},
    "infinite created_at": code("print(0)", created_at=float("inf")),
    "NaN in extras": code("print(0)", extras={"x": float("nan")}),
}


@pytest.mark.parametrize("name", list(HOSTILE_DICTS))
def test_parse_message_refuses_hostile_structures_with_a_message_error(name: str) -> None:
    """Guards the shared validation layer: deep, cyclic or non-JSON content is a
    MessageError with a short reason, never a RecursionError or an accepted message
    that a later json.dumps cannot write."""
    with pytest.raises(MessageError) as caught:
        parse_message(HOSTILE_DICTS[name])
    assert len(caught.value.reason) < REPLY_CHARS
    assert "RecursionError" not in caught.value.reason


def test_parse_message_keeps_ordinary_nesting() -> None:
    """Guards against the depth limit refusing reasonable provider data in extras."""
    message = parse_message(code("print(0)", extras={"provider": _nested(30, {"k": [1, 2.5]})}))
    assert message.extras is not None


def test_computer_run_answers_hostile_dicts_with_one_not_understood() -> None:
    """Guards Computer.run: a hostile dict gets exactly one short not-understood reply
    and runs nothing."""
    with Computer() as computer:
        for name, message in HOSTILE_DICTS.items():
            out = list(computer.run(message))
            assert len(out) == 1, (name, [str(m.content)[:200] for m in out])
            assert isinstance(out[0].content, str), name
            assert out[0].content.startswith(NOT_UNDERSTOOD), (name, out[0].content[:200])
            assert len(out[0].content) < REPLY_CHARS, (name, len(out[0].content))
            assert "RecursionError" not in out[0].content, name
