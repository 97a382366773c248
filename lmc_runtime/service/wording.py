"""A request that does not validate, said in the API's own words.

Pydantic's text names its own error types, echoes the input and links to its
documentation; a client is told instead, for each field, its path (``limits.memory_bytes``,
``languages[0]``) and a short sentence in JSON's terms ("must be an integer").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

__all__ = ["MOST_SHOWN", "invalid_fields", "plain_reason", "validation_text"]

#: The most fields one answer names; the others are counted.
MOST_SHOWN = 5

_KINDS = {
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "string_unicode": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a JSON array",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object",
    "missing": "is required",
    "extra_forbidden": "is not a field of this request",
    "json_invalid": "is not valid JSON",
}

#: Bounds, by error type: the sentence and the key of the bound in the error's ctx.
_BOUNDS = {
    "greater_than_equal": ("must be at least {}", "ge"),
    "greater_than": ("must be more than {}", "gt"),
    "less_than_equal": ("must be at most {}", "le"),
    "less_than": ("must be less than {}", "lt"),
    "string_too_short": ("must be at least {} characters long", "min_length"),
    "string_too_long": ("must be at most {} characters long", "max_length"),
    "too_short": ("must have at least {} items", "min_length"),
    "too_long": ("must have at most {} items", "max_length"),
    "literal_error": ("must be {}", "expected"),
    "enum": ("must be {}", "expected"),
}

_PREFIXES = ("Value error, ", "Assertion failed, ", "Input should be ")


def plain_reason(error: Mapping[str, Any]) -> str:
    """One pydantic error's reason as a short sentence, without the input."""
    kind = str(error.get("type", ""))
    if kind in _KINDS:
        return _KINDS[kind]
    ctx = error.get("ctx") or {}
    if kind in _BOUNDS and _BOUNDS[kind][1] in ctx:
        sentence, key = _BOUNDS[kind]
        return sentence.format(ctx[key])
    message = str(error.get("msg", "is not valid"))
    for prefix in _PREFIXES:
        if message.startswith(prefix):
            rest = message[len(prefix) :]
            return f"must be {rest}" if prefix == "Input should be " else rest
    return message


def _path(loc: Iterable[object], located: bool) -> str:
    """``limits.memory_bytes``, ``languages[0]``; with ``located`` (FastAPI's errors)
    the first part says where (the body, a query parameter...)."""
    parts = list(loc)
    where = ""
    if located and parts and parts[0] in ("body", "query", "path", "header"):
        where = "" if parts[0] == "body" else f"{parts[0]} parameter "
        parts = parts[1:]
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif "[" not in str(part):  # a validator's own step (function-after[...]), not a field
            text += f".{part}" if text else str(part)
    return f"{where}{text}" if text else "the body"


def invalid_fields(errors: Iterable[Mapping[str, Any]], *, located: bool = False) -> str:
    """Each field that failed, as ``path: reason``, joined by ``; ``; ``located``:
    each error's location starts with where it is (FastAPI's request errors)."""
    said: list[str] = []
    for error in errors:
        line = f"{_path(error.get('loc', ()), located)}: {plain_reason(error)}"
        if line not in said:
            said.append(line)
    if not said:
        return "invalid request"
    shown = "; ".join(said[:MOST_SHOWN])
    more = len(said) - MOST_SHOWN
    return f"{shown}; and {more} more" if more > 0 else shown


def validation_text(exc: ValueError) -> str:
    """What a client is told of ``exc``: pydantic's errors in the API's words, or a
    plain ValueError's own sentence."""
    if isinstance(exc, ValidationError):
        return invalid_fields(exc.errors(include_url=False, include_input=False))
    return str(exc)
