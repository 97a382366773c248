"""The small values the fuzz strategies are made of, each usable in any field:
odd strings, hostile numbers (as values and as JSON number texts), nesting,
values of the wrong type, invalid UTF-8 and garbage JSON text; and :func:`mix`,
which weighs strategies evenly."""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from hypothesis import strategies as st

__all__ = [
    "NUMBER_TEXTS",
    "ODD_CHARACTERS",
    "bad_values",
    "code_message",
    "garbage_texts",
    "hostile_numbers",
    "invalid_utf8",
    "mix",
    "nested",
    "number_texts",
    "odd_strings",
]


def code_message(language: str, content: Any, **fields: Any) -> dict[str, Any]:
    """An assistant code message in ``language``."""
    return {"role": "assistant", "type": "code", "format": language, "content": content, **fields}


def mix(*kinds: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """One of ``kinds``, each as likely (list one twice to weigh it double).

    ``st.one_of`` would do, but it leans toward the kinds whose examples are
    small: hostile inputs are often large, and would come up rarely.
    """
    return st.integers(0, len(kinds) - 1).flatmap(lambda index: kinds[index])


# -- small values, each usable in any field ---------------------------------------

#: Characters that break naive handling: NUL, lone surrogates, bidi overrides,
#: zero widths, escapes, a BOM, noncharacters and the last code point.
ODD_CHARACTERS = (
    "\x00", "\ud800", "\udfff", "\u202e", "\u200f", "\u200b", "\x1b[2J", "\r", "\x7f",
    "\x85", "\u2028", "\ufeff", "\uffff", "\U0010ffff", "\\", '"', "\n",
)  # fmt: skip


def odd_strings(max_size: int = 40) -> st.SearchStrategy[str]:
    """Text mixing odd characters (:data:`ODD_CHARACTERS`) with any code point."""
    odd = st.sampled_from(ODD_CHARACTERS)
    anything = st.characters(codec=None, exclude_categories=())
    return st.lists(st.one_of(odd, anything), max_size=max_size).map("".join)


def hostile_numbers() -> st.SearchStrategy[float | int]:
    """Numbers at the edges: NaN, infinities, the largest float, -0, 2**64 and beyond."""
    return st.sampled_from(
        [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0, -1, 2**63, 2**64, -(2**64)]
    )


def nested(depth: int, kind: Literal["list", "dict"]) -> Any:
    """Lists or dicts ``depth`` levels deep, built without recursion."""
    value: Any = 0
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def bad_values() -> st.SearchStrategy[Any]:
    """Values of the wrong type for any scalar field: numbers, bools, lists, nested dicts."""
    return st.one_of(
        st.integers(),
        hostile_numbers(),
        st.booleans(),
        st.lists(st.integers(), max_size=3),
        st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
        st.builds(nested, st.integers(2, 30), st.sampled_from(["list", "dict"])),
    )


#: JSON number texts no float holds or no strict parser takes.
NUMBER_TEXTS = (
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e308", "-0", "-0.0", "1e-400",
    "18446744073709551616", "1E+99999", "0." + "0" * 5000 + "1", "1" * 5000, "-" + "9" * 4301,
    "1" + "0" * 400, "-" + "1" * 4300,
)  # fmt: skip


def number_texts() -> st.SearchStrategy[str]:
    """Raw JSON number texts (:data:`NUMBER_TEXTS`)."""
    return st.sampled_from(NUMBER_TEXTS)


def invalid_utf8() -> st.SearchStrategy[bytes]:
    """Bytes that are not UTF-8: stray continuation and lead bytes, overlong forms,
    encoded surrogates, code points past U+10FFFF, and random bytes around them."""
    bad = st.sampled_from(
        [b"\xff", b"\xfe", b"\x80", b"\xc3\x28", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80",
         b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82"]
    )  # fmt: skip
    return st.tuples(st.binary(max_size=8), bad, st.binary(max_size=8)).map(b"".join)


def garbage_texts() -> st.SearchStrategy[str]:
    """Text that is not one JSON object: truncations, trailing commas, other values,
    two objects, a BOM, comments, or any text at all."""
    whole = json.dumps(code_message("python", "print(1)"))
    fixed = st.sampled_from(
        ["", " ", "{", "}", "[]", "null", "true", "42", '"text"', "{}{}", "\ufeff{}",
         '{"role": "assistant",}', "// comment\n{}", "{'role': 'assistant'}", "{\"a\" 1}",
         whole + whole, whole[:-1], "\x00"]
    )  # fmt: skip
    cut = st.integers(1, len(whole) - 1).map(lambda n: whole[:n])
    return st.one_of(fixed, cut, st.text(max_size=60))
