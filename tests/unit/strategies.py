"""Hypothesis strategies for valid LMC messages, shared by the unit tests."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

from lmc_runtime.messages import CODE_FORMATS, ROLES, Message

_text = st.text(max_size=200)
_base64 = st.binary(max_size=64).map(lambda b: base64.b64encode(b).decode("ascii"))
_language = st.one_of(
    st.sampled_from(CODE_FORMATS),
    st.from_regex(r"[A-Za-z][A-Za-z0-9_+.#-]{0,31}", fullmatch=True),
)

#: (type, format, content) triples that fit together.
bodies: st.SearchStrategy[tuple[str, str | None, Any]] = st.one_of(
    st.tuples(st.just("message"), st.none(), _text),
    st.tuples(
        st.just("console"),
        st.just("active_line"),
        st.one_of(st.none(), st.integers(min_value=1, max_value=10**9)),
    ),
    st.tuples(st.just("console"), st.just("output"), _text),
    st.tuples(st.just("image"), st.sampled_from(["base64", "base64.png", "base64.jpeg"]), _base64),
    st.tuples(st.just("image"), st.just("path"), _text),
    st.tuples(st.just("code"), _language, _text),
    st.tuples(st.just("audio"), st.just("wav"), _base64),
)

_json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values: st.SearchStrategy[Any] = st.recursive(
    _json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """Any valid message, with or without each optional field."""
    type_, format_, content = draw(bodies)
    return Message(
        role=draw(st.sampled_from(ROLES)),
        type=type_,
        format=format_,
        content=content,
        id=draw(st.none() | st.text(max_size=32)),
        in_reply_to=draw(st.none() | st.text(max_size=32)),
        created_at=draw(st.none() | st.floats(0, 4e9, allow_nan=False)),
        extras=draw(st.none() | st.dictionaries(st.text(max_size=10), json_values, max_size=4)),
    )
