"""A kernel's messages read off the wire as jupyter-client's Session reads them,
but for its dates."""

from __future__ import annotations

from typing import Any

import pytest
from jupyter_client.session import Session

from lmc_runtime.backends.jupyter.wire import deserialize


def _frames(session: Session, msg_type: str = "stream", **content: Any) -> list[bytes]:
    parent = session.msg_header("execute_request")
    msg = session.msg(msg_type, content or {"name": "stdout", "text": "1\n"}, parent=parent)
    return [b"kernel.abc.stream", *session.serialize(msg)]


def test_a_message_reads_as_the_session_reads_it_but_for_its_dates() -> None:
    """Guards the saved time: no string of the header is parsed as a date (32 of
    the Session's 53 µs a message); all else is the same."""
    session = Session(key=b"secret")
    frames = _frames(session)
    ours = deserialize(session, frames)
    theirs = Session(key=b"secret").deserialize(session.feed_identities(frames)[1])
    assert isinstance(ours["header"]["date"], str)
    assert isinstance(ours["parent_header"]["date"], str)
    for part in ("header", "parent_header"):
        ours[part].pop("date")
        theirs[part].pop("date")
    assert {k: v for k, v in ours.items() if k != "buffers"} == {
        k: v for k, v in theirs.items() if k != "buffers"
    }


def test_the_content_stays_packed_until_asked() -> None:
    session = Session(key=b"secret")
    packed = deserialize(session, _frames(session), content=False)["content"]
    assert isinstance(packed, bytes) and session.unpack(packed)["text"] == "1\n"


def test_a_wrong_or_missing_signature_is_refused() -> None:
    session = Session(key=b"secret")
    frames = _frames(Session(key=b"other"))
    with pytest.raises(ValueError, match="Invalid Signature"):
        deserialize(session, frames)
    unsigned = _frames(session)
    unsigned[2] = b""
    with pytest.raises(ValueError, match="Unsigned"):
        deserialize(session, unsigned)


def test_a_short_message_is_refused() -> None:
    session = Session(key=b"secret")
    with pytest.raises(TypeError, match="malformed"):
        deserialize(session, _frames(session)[:4])


def test_a_message_of_protocol_4_is_adapted() -> None:
    session = Session(key=b"secret")
    header = session.msg_header("pyout")
    header["version"] = "4.1"
    msg = session.msg("pyout", {"data": {"text/plain": "1"}, "prompt_number": 1}, header=header)
    frames = [b"kernel", *session.serialize(msg)]
    read = deserialize(session, frames)
    theirs = Session(key=b"secret").deserialize(session.feed_identities(frames)[1])
    assert read["msg_type"] == theirs["msg_type"] == "execute_result"
    assert read["content"] == theirs["content"] and read["header"]["version"].startswith("5")
