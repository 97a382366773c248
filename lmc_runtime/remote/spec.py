"""The body of a request for a new session, from :class:`~.computer.RemoteComputer`'s
arguments (the server checks what it means; this checks only the types)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..arguments import check_env
from ..errors import ArgumentTypeError

__all__ = ["session_spec"]


def _names(what: str, value: object) -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"{what} must be a list of strings, not {value!r}")
    if not all(isinstance(each, str) for each in value):
        raise ArgumentTypeError(f"{what} must be a list of strings, not {value!r}")
    return list(value)


def session_spec(
    languages: Sequence[str],
    title: str,
    cwd: str | None,
    env: Mapping[str, str] | None,
    network: bool | Mapping[str, Sequence[str]] | None,
    limits: Mapping[str, Any] | None,
    environment: str | None,
    secrets: Sequence[str] | None,
) -> dict[str, Any]:
    """``POST /v1/sessions``'s body: what is given, nothing for what is not."""
    spec: dict[str, Any] = {"languages": list(languages), "title": title}
    if cwd:
        spec["cwd"] = cwd
    if env:
        spec["env"] = check_env(env)
    if isinstance(network, Mapping):  # an egress policy: lists of entries
        spec["network"] = {key: _names(f"network[{key!r}]", v) for key, v in network.items()}
    elif network is not None:
        spec["network"] = network
    if limits:
        spec["limits"] = dict(limits)
    if environment is not None:
        spec["environment"] = environment
    if secrets is not None:
        spec["secrets"] = _names("secrets", secrets)
    return spec
