"""Hypothesis strategies for valid and hostile LMC input, at two levels.

- :func:`cases`: Python values, as a caller hands them to ``Computer.run``: valid
  code messages with small safe code, every field with a wrong type, huge
  contents, deep nesting, hostile numbers, odd strings, unknown roles, types and
  languages, and valid messages that are not code. Each is a :class:`Case` that
  says what a reply to it must be.
- :func:`wires`: bytes, as a client puts them on a wire (a JSONL line, a request
  body, a frame): every case written as JSON, and what no Python value writes:
  raw hostile number texts, nesting thousands of levels deep, invalid UTF-8 and
  garbage JSON text.

The smaller strategies they are made of (in :mod:`.values`, re-exported here)
compose: :func:`bad_values`, :func:`odd_strings`, :func:`number_texts`,
:func:`invalid_utf8` and :func:`garbage_texts` can be fed to any field. Valid code is one of :data:`SAFE_CODE`; nothing generated here
runs anything but ``print``/``echo`` of a number, or Python code that is not
valid Python (a syntax or name error at worst).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from hypothesis import strategies as st

from .values import (
    bad_values,
    code_message,
    garbage_texts,
    hostile_numbers,
    invalid_utf8,
    mix,
    nested,
    number_texts,
    odd_strings,
)

__all__ = [
    "SAFE_CODE",
    "Case",
    "Wire",
    "bad_values",
    "cases",
    "code_message",
    "garbage_texts",
    "hostile_numbers",
    "invalid_utf8",
    "lone_surrogate",
    "mix",
    "nested",
    "number_texts",
    "odd_strings",
    "wires",
]

#: What a reply must be: ``run`` (a run that ends with a final message and
#: ``output``), ``refuse`` (exactly one not-understood reply), ``context`` (a
#: valid message that is not runnable code: ``lmc run`` passes over it, the
#: others refuse it), ``any`` (either a run or a refusal).
Expect = Literal["run", "refuse", "context", "any"]

#: Small safe code per language: code for a number, and the output it prints.
SAFE_CODE: dict[str, tuple[str, str]] = {
    "python": ("print({n})", "{n}\n"),
    "shell": ("echo {n}", "{n}\n"),
}

MiB = 1 << 20


@dataclass(frozen=True)
class Case:
    """A Python value for ``run``, what its reply must be, and a label for tallies."""

    value: Any
    expect: Expect
    label: str
    output: str | None = None


@dataclass(frozen=True)
class Wire:
    """Bytes for a wire, what a reply to them must be, and a label for tallies."""

    data: bytes
    expect: Expect
    label: str
    output: str | None = None

    @property
    def text(self) -> str | None:
        """The bytes as text (for a text frame), or None if they are not UTF-8."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


# -- Python-level cases ------------------------------------------------------------


@st.composite
def valid_code(draw: st.DrawFn) -> Case:
    """A code message in a known language that prints a number."""
    language = draw(st.sampled_from(sorted(SAFE_CODE)))
    number = draw(st.integers(0, 10**6))
    code, output = (part.format(n=number) for part in SAFE_CODE[language])
    extras = draw(st.none() | st.fixed_dictionaries({"note": odd_strings(10)}))
    fields = {} if extras is None else {"extras": extras}
    return Case(code_message(language, code, **fields), "run", "valid", output)


#: The fields of a code message, and whether None is allowed in each.
_FIELDS = {"role": False, "type": False, "format": False, "content": False, "id": True}
_OPTIONAL = ("in_reply_to", "conversation_id", "created_at", "extras")


@st.composite
def wrong_types(draw: st.DrawFn) -> Case:
    """A valid code message with one field holding a value of the wrong type."""
    field = draw(st.sampled_from([*_FIELDS, *_OPTIONAL]))
    value = draw(bad_values() | st.none())
    if value is None and (_FIELDS.get(field, True)):
        value = [None]
    if field == "created_at" and isinstance(value, int | float) and not isinstance(value, bool):
        value = draw(st.sampled_from([math.nan, math.inf, -math.inf, [value], "1"]))
    if field == "extras" and isinstance(value, dict):
        value = [value]
    message = code_message("python", "print(1)", id="wrong-type")
    message[field] = value
    return Case(message, "refuse", f"wrong type: {field}")


@st.composite
def huge(draw: st.DrawFn) -> Case:
    """A MiB or more in one field: code, extras, the id (all run) or the language (refused)."""
    size = draw(st.integers(MiB, 3 * MiB))
    where = draw(st.sampled_from(["content", "extras", "id", "format"]))
    if where == "content":
        value = code_message("python", "x = 1\n#" + "x" * size + "\nprint(7)")
        return Case(value, "run", "huge: content", "7\n")
    if where == "format":
        return Case(code_message("p" * size, "print(1)"), "refuse", "huge: format")
    fields = {"extras": {"blob": "b" * size}} if where == "extras" else {"id": "i" * size}
    return Case(code_message("python", "print(7)", **fields), "run", f"huge: {where}", "7\n")


@st.composite
def deep(draw: st.DrawFn, max_depth: int = 5000) -> Case:
    """Lists or dicts nested past what a message may hold (100), up to thousands deep."""
    depth = draw(st.integers(101, max_depth))
    kind = draw(st.sampled_from(["list", "dict"]))
    field = draw(st.sampled_from(["extras", "content", "id"]))
    message = code_message("python", "print(1)")
    message[field] = {"deep": nested(depth, kind)} if field == "extras" else nested(depth, kind)
    return Case(message, "refuse", "deep")


@st.composite
def numbers(draw: st.DrawFn) -> Case:
    """Hostile numbers in the extras (NaN and infinities are refused; others run)."""
    number = draw(hostile_numbers() | st.just(1 << 20000))
    refused = (isinstance(number, float) and not math.isfinite(number)) or number == 1 << 20000
    message = code_message("python", "print(1)", extras={"n": number})
    return Case(message, "refuse" if refused else "run", "numbers", None if refused else "1\n")


@st.composite
def odd(draw: st.DrawFn) -> Case:
    """Odd strings as Python code (runs, or is refused for a lone surrogate), as the
    language (refused unless it happens to name one) or in the id and extras (run)."""
    text = draw(odd_strings())
    field = draw(st.sampled_from(["content", "format", "id", "extras"]))
    if field == "content":
        return Case(code_message("python", text), "any", "odd: content")
    if field == "format":
        return Case(code_message(text, "print(1)"), "any", "odd: format")
    fields = {"id": text} if field == "id" else {"extras": {text: text}}
    return Case(code_message("python", "print(5)", **fields), "run", f"odd: {field}", "5\n")


@st.composite
def unknown(draw: st.DrawFn) -> Case:
    """Roles, types and languages the protocol or this computer does not have."""
    field = draw(st.sampled_from(["role", "type", "format"]))
    names = {
        "role": ["system", "tool", "Assistant", "", "function", "computer "],
        "type": ["function", "Code", "", "tool_call", "image_url"],
        "format": ["cobol", "brainfuck", "pythonx", "applescript", "PY THON", "", "?"],
    }
    value = draw(st.sampled_from(names[field]) | st.text(max_size=8).map(lambda t: "xq" + t))
    return Case({**code_message("python", "print(1)"), field: value}, "refuse", f"unknown: {field}")


def context() -> st.SearchStrategy[Case]:
    """Valid LMC messages that are not assistant code: nothing to run."""
    return st.sampled_from(
        [
            {"role": "user", "type": "message", "content": "hello"},
            {"role": "assistant", "type": "message", "content": "I will run it"},
            {"role": "computer", "type": "console", "format": "output", "content": "1\n"},
            {"role": "user", "type": "code", "format": "python", "content": "print(1)"},
            {"role": "computer", "type": "console", "format": "active_line", "content": None},
        ]
    ).map(lambda value: Case(value, "context", "context"))


def cases(json_only: bool = False) -> st.SearchStrategy[Case]:
    """Every kind of :class:`Case`; ``json_only``: only those JSON can write."""
    # json.dumps recurses: deeper nesting goes on the wire as text (see wires()).
    depth = 500 if json_only else 5000
    kinds = [valid_code(), wrong_types(), huge(), deep(depth), odd(), unknown(), context()]
    if not json_only:
        kinds.append(numbers())
    return mix(*kinds)


# -- wire-level input --------------------------------------------------------------


def _dump(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def lone_surrogate(value: Any) -> bool:
    """Whether a string in ``value`` holds a lone surrogate (no UTF-8 writes one)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and not _is_utf8(item.encode("utf-8", "surrogatepass")):
            return True
        if isinstance(item, dict):
            stack.extend(item.items())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _wire_of(case: Case) -> Wire:
    """``case`` as JSON. A lone surrogate goes out as its escape, which some readers
    refuse (``lmc run``) and others take: either answer is right."""
    if lone_surrogate(case.value):
        return Wire(_dump(case.value), "any", case.label)
    return Wire(_dump(case.value), case.expect, case.label, case.output)


def _garbage(text: str) -> Wire:
    data = text.encode("utf-8", "surrogatepass")
    # A blank line is passed over by lmc run, as a message that is not code is.
    return Wire(data, "refuse" if data.strip() else "context", "wire: garbage")


def _slotted(field: str, raw: str) -> bytes:
    """A valid code message's JSON text with ``field`` holding ``raw`` JSON text."""
    message = code_message("python", "print(1)", extras={})
    message[field] = "\x00SLOT\x00"
    return _dump(message).replace(b'"\\u0000SLOT\\u0000"', raw.encode("utf-8"))


@st.composite
def _numbers_on_the_wire(draw: st.DrawFn) -> Wire:
    field = draw(st.sampled_from(["content", "id", "created_at", "extras", "format"]))
    raw = draw(number_texts())
    if field == "extras":  # a field of its own, or one a reader takes a number from
        key = draw(st.sampled_from(["n", "timeout", "env"]))
        raw = f'{{"{key}": {raw}}}'
    data = _slotted(field, raw)
    return Wire(data, "any", "wire: numbers")


@st.composite
def _deep_on_the_wire(draw: st.DrawFn) -> Wire:
    depth = draw(st.integers(101, 200_000))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    raw = opener * depth + "1" + closer * depth
    whole = draw(st.booleans())
    data = raw.encode() if whole else _slotted("extras", raw)
    return Wire(data, "refuse", "wire: deep")


@st.composite
def _invalid_utf8_on_the_wire(draw: st.DrawFn) -> Wire:
    bad = draw(invalid_utf8())
    text = _dump(code_message("python", "print(1)"))
    at = text.index(b"print(1)")
    data = draw(st.sampled_from([text[:at] + bad + text[at:], bad, text + bad]))
    # Random bytes next to a broken sequence can complete it: then it is UTF-8 after all.
    return Wire(data, "any" if _is_utf8(data) else "refuse", "wire: invalid UTF-8")


def wires() -> st.SearchStrategy[Wire]:
    """Every kind of :class:`Wire`: the JSON cases, and what only a wire can carry."""
    return mix(
        cases(json_only=True).map(_wire_of),
        cases(json_only=True).map(_wire_of),
        _numbers_on_the_wire(),
        _deep_on_the_wire(),
        _invalid_utf8_on_the_wire(),
        garbage_texts().map(_garbage),
    )
