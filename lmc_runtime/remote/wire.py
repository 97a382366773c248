"""Code messages onto the wire and computer messages off it.

What a message *holds* is checked here, before anything is sent, as
``Computer`` checks it: a malformed message, one that is not code, or an
``extras.env`` that is not a mapping of names to strings gets its
not-understood reply locally, and never reaches the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .. import replies
from ..arguments import MessageInput, env_problem
from ..errors import MessageError, RemoteError
from ..intake import raw_id, read_message
from ..messages import Message, new_id

__all__ = ["ANSWERED", "REFUSED_STATUS", "code_body", "from_wire"]

#: The statuses of a reply that answers a run in place of its execution (it has no
#: final message after it).
ANSWERED = frozenset({"malformed", "not_understood", "unavailable"})

#: The not-understood status of each execution the server refuses as the user's error.
REFUSED_STATUS = {
    "malformed": replies.Status.MALFORMED,
    "unknown_language": replies.Status.NOT_UNDERSTOOD,
    "language_unavailable": replies.Status.UNAVAILABLE,
}


def code_body(
    message: MessageInput, code: str | None, env: Mapping[str, str]
) -> dict[str, Any] | Message:
    """The JSON body that runs ``message`` (``env`` added to its ``extras.env``), or
    the one reply it gets when it cannot run at all."""
    try:
        msg = read_message(message, code)
    except MessageError as exc:
        return replies.not_understood(exc.reason, raw_id(message), status="malformed")
    except Exception as exc:  # a hostile Mapping, an object that cannot be read
        reason = f"the message could not be read ({type(exc).__name__})"
        return replies.not_understood(reason, None, status="malformed")
    reply_to = msg.id or new_id()
    if msg.type != "code" or msg.role != "assistant":
        reason = f"only assistant code messages can be run, got a {msg.role} {msg.type} message"
        return replies.not_understood(reason, reply_to)
    extras = dict(msg.extras or {})
    given = extras.get("env")
    problem = None if given is None else env_problem(given)
    if problem is not None:
        return replies.not_understood(f"extras.env {problem}", reply_to)
    if env:
        extras["env"] = {**(given or {}), **env}
    body = msg.to_dict()
    body["id"] = reply_to
    if extras:
        body["extras"] = extras
    return body


def from_wire(data: dict[str, Any]) -> Message:
    """A computer message the server sent; :class:`RemoteError` if it is not one."""
    try:
        return Message.model_validate(data)
    except ValidationError as exc:
        raise RemoteError(
            f"the server sent a message that is not valid LMC: {exc.errors()[0]['msg']}",
            code="protocol",
        ) from exc
