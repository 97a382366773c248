"""The arguments of the Python API, checked: a programmer's misuse raises at once.

``run``/``arun`` take a message in several shapes (:data:`MessageInput`) and the
keyword options of :class:`RunOptions`; ``Computer(python=, node=, r=)`` takes
interpreters, ``Computer(gateway_url=, gateway_token=)`` a Jupyter gateway. A wrong
type raises :class:`~lmc_runtime.errors.ArgumentTypeError`
(a ``TypeError``), a wrong value :class:`~lmc_runtime.errors.ArgumentValueError`
(a ``ValueError``), before anything runs. What a message *holds* is not checked
here: that is answered with a not-understood reply (see :mod:`lmc_runtime.intake`).
"""

from __future__ import annotations

import math
import os
import reprlib
from collections.abc import Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any, TypedDict

from .errors import ArgumentTypeError, ArgumentValueError
from .messages import Message

if TYPE_CHECKING:
    from .backends.jupyter.gateway.rest import Gateway
    from .backends.registry import Registry

__all__ = [
    "MessageInput",
    "RunOptions",
    "check_call",
    "check_env",
    "check_options",
    "check_run",
    "env_problem",
    "gateway",
    "interpreters",
    "registry_of",
]

#: What ``run``/``arun`` accept: an LMC dict, a :class:`Message`, a ``(language, code)``
#: tuple, or a language name (with the code as the second argument).
MessageInput = Message | Mapping[str, Any] | tuple[str, str] | str


class RunOptions(TypedDict, total=False):
    """The keyword options of :meth:`Computer.run` and :meth:`Computer.arun`."""

    #: Seconds this execution may take (None: the Computer's ``timeouts.execution``).
    timeout: float | None
    #: Variables set for this execution only, then restored.
    env: Mapping[str, str] | None


def interpreters(**chosen: str | PathLike[str] | None) -> dict[str, str | None]:
    """The interpreters chosen for ``Computer(python=, node=, r=)``, as strings."""
    found: dict[str, str | None] = {}
    for name, value in chosen.items():
        if value is not None and not isinstance(value, str | PathLike):
            raise ArgumentTypeError(f"{name}= must be a path or a name, not {value!r}")
        found[name] = None if value is None else os.fspath(value)
        if found[name] == "":
            raise ArgumentValueError(f"{name}= is empty")
    return found


def gateway(url: object, token: object) -> Gateway | None:
    """The gateway of ``Computer(gateway_url=, gateway_token=)``; without a URL, that of
    ``LMC_GATEWAY_URL`` and ``LMC_GATEWAY_TOKEN``, if set; else None."""
    for name, value in (("gateway_url", url), ("gateway_token", token)):
        if value is not None and not isinstance(value, str):
            raise ArgumentTypeError(f"{name}= must be a string, not {type(value).__name__}")
    assert url is None or isinstance(url, str)
    assert token is None or isinstance(token, str)
    from .backends.jupyter.gateway.rest import Gateway

    try:
        return Gateway.chosen(url, token)
    except ValueError as exc:
        raise ArgumentValueError(f"gateway_url= (or LMC_GATEWAY_URL): {exc}") from exc


def registry_of(
    registry: Registry | None,
    python: str | PathLike[str] | None,
    node: str | PathLike[str] | None,
    r: str | PathLike[str] | None,
    gateway_url: object,
    gateway_token: object,
) -> Registry:
    """The registry of ``Computer(registry=)``, or the default one built from the
    interpreters and the gateway it was given (not both)."""
    chosen = interpreters(python=python, node=node, r=r)
    if registry is not None and (python, node, r, gateway_url, gateway_token) != (None,) * 5:
        raise ArgumentTypeError("give python=, node=, r= and gateway_url= or a registry=, not both")
    if registry is not None:
        return registry
    from .backends.registry import Registry

    return Registry(
        python=chosen["python"],
        node=chosen["node"],
        r=chosen["r"],
        gateway=gateway(gateway_url, gateway_token),
    )


def check_call(message: object, code: object) -> tuple[MessageInput, str | None]:
    """``run``/``arun``'s arguments as ``(message, code)``, or ArgumentTypeError at once.

    Misuse by the programmer raises; only what a message *holds* (its fields,
    its language) is answered with a not-understood reply.
    """
    if isinstance(message, tuple):
        if code is not None:
            raise ArgumentTypeError("give (language, code) as one tuple or two arguments, not both")
        if len(message) != 2 or not all(isinstance(part, str) for part in message):
            raise ArgumentTypeError(
                "a tuple message must be (language, code), two strings; "
                f"got {reprlib.repr(message)}"
            )
        return message[0], message[1]
    if isinstance(message, str):
        if code is None:
            raise ArgumentTypeError(
                f"run({reprlib.repr(message)}) has no code: call run(language, code), "
                "run((language, code)) or run(message_dict)"
            )
        if not isinstance(code, str):
            raise ArgumentTypeError(f"code must be a string, not {type(code).__name__}")
        return message, code
    if isinstance(message, Message | Mapping):
        if code is not None:
            raise ArgumentTypeError("pass either a message or (language, code), not both")
        return message, None
    raise ArgumentTypeError(
        "run() takes an LMC message (a dict or a Message), (language, code) or "
        f"language, code; not {type(message).__name__}"
    )


#: Linux's longest ``NAME=value`` string (``MAX_ARG_STRLEN``, with its NUL).
_ENV_ENTRY_MAX = 128 * 1024 - 1
#: The most an environment may hold in all, well within ``ARG_MAX`` (2 MiB).
_ENV_TOTAL_MAX = 1024 * 1024


def env_problem(env: object) -> str | None:
    """Why ``env`` is not a mapping of variable names to values a process can be
    started with (UTF-8, no NUL, within the kernel's sizes), or None."""
    if not isinstance(env, Mapping):
        return f"must be an object of names to strings, not {type(env).__name__}"
    total = 0
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            return f"has an invalid variable name {reprlib.repr(name)}"
        if not isinstance(value, str):
            return f"{name} must be a string, not {type(value).__name__}"
        if "\0" in value:
            return f"{name} holds a NUL character"
        try:
            size = len(name.encode()) + len(value.encode()) + 1
        except UnicodeEncodeError:
            return f"{reprlib.repr(name)} or its value is not valid UTF-8 (a lone surrogate)"
        if size > _ENV_ENTRY_MAX:
            return f"{name} is longer than {_ENV_ENTRY_MAX} bytes with its name"
        total += size + 1
    if total > _ENV_TOTAL_MAX:
        return f"holds {total} bytes; at most {_ENV_TOTAL_MAX} are allowed"
    return None


def check_env(env: object) -> dict[str, str]:
    """``env=`` of ``run``/``arun`` as a dict; ArgumentTypeError/ValueError at once."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise ArgumentTypeError(f"env must be a mapping of str to str, not {type(env).__name__}")
    problem = env_problem(env)
    if problem is not None:
        raise ArgumentValueError(f"env {problem}")
    return dict(env)


def check_options(options: RunOptions) -> tuple[float | None, dict[str, str]]:
    """The ``timeout`` and ``env`` of ``options``, checked."""
    unknown = options.keys() - RunOptions.__annotations__.keys()
    if unknown:
        raise ArgumentTypeError(f"unexpected keyword argument {min(unknown)!r}")
    timeout = options.get("timeout")
    if timeout is not None and not _seconds(timeout):
        shown = _shown(timeout)
        raise ArgumentValueError(
            f"timeout must be a positive number of seconds or None, not {shown}"
        )
    return timeout, check_env(options.get("env"))


def check_run(
    message: object, code: object, options: RunOptions
) -> tuple[MessageInput, str | None, float | None, dict[str, str]]:
    """The arguments of ``run``/``arun``, checked: the message, its code, ``timeout``, ``env``."""
    message, code = check_call(message, code)
    return (message, code, *check_options(options))


def _shown(value: object) -> str:
    """``value`` for an error message: a huge integer by its number of digits."""
    if isinstance(value, int) and abs(value) > 10**30:
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)[:100]


def _seconds(value: object) -> bool:
    """Whether ``value`` is a finite positive number (an integer past a float's range is not)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value > 0
    except OverflowError:
        return False
