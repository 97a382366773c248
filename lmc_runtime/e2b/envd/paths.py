"""Where a path E2B code names is, and who asks.

E2B code names files inside the sandbox: absolute (``/home/user/data.csv``) or
relative to the user's home (``data.csv``). The home, ``/home/user``, is the
session's working directory, which the host reaches only through held
descriptors (:mod:`lmc_runtime.sandbox.fileops`): a path becomes a path
relative to it, walked component by component, never through a link.

Paths outside the home (``/tmp``, ``/etc``, ``/``) are refused with 403: the
rest of the sandbox's tree is the host's own folders seen read-only or a
scratch space the host has no safe way into. ``..`` is refused too (400), as
the lmc API refuses it; ``.`` and empty components are dropped.

envd's users: the sandbox has one, ``user`` (the default); the files the host
makes belong to the session's user. Any other name, ``root`` too, is 400, as
for commands: nothing here acts as root.
"""

from __future__ import annotations

import base64
import binascii

from starlette.requests import HTTPConnection

from ...sandbox.files import MAX_DEPTH
from ...sandbox.view import SANDBOX_HOME, SANDBOX_USER
from ..errors import E2BError

__all__ = ["HOME", "BadSandboxPath", "OutsideHome", "inside", "relpath_of", "user_of"]

HOME = SANDBOX_HOME
_HOME_PARTS = HOME.strip("/").split("/")
#: The users envd answers for: the sandbox's one user.
USERS = (SANDBOX_USER,)
#: The longest path taken, in characters.
MAX_PATH = 4096


class BadSandboxPath(E2BError):
    """A path that cannot be used: empty, too long, a NUL byte, ``..``."""

    status = 400


class OutsideHome(E2BError):
    """A path outside ``/home/user``, which this server does not serve."""

    status = 403

    def __init__(self, path: str) -> None:
        super().__init__(
            f"{path[:200]!r} is outside {HOME}: this server (lmc-runtime) serves files "
            f"of the sandbox's home, {HOME}, only"
        )


def relpath_of(path: str, *, allow_home: bool = True) -> str:
    """``path`` (absolute, or relative to the home) relative to the home; ``""``
    for the home itself (refused unless ``allow_home``)."""
    if not path or len(path) > MAX_PATH or "\x00" in path:
        raise BadSandboxPath("the path is empty, too long or has a NUL byte")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise BadSandboxPath(f"'..' is not allowed in a path: {path[:200]!r}")
    if path.startswith("/"):
        if parts[: len(_HOME_PARTS)] != _HOME_PARTS:
            raise OutsideHome(path)
        parts = parts[len(_HOME_PARTS) :]
    if len(parts) > MAX_DEPTH:
        raise BadSandboxPath(f"paths may have at most {MAX_DEPTH} components")
    if not parts and not allow_home:
        raise BadSandboxPath(f"{HOME} itself cannot be changed")
    return "/".join(parts)


def inside(relpath: str) -> str:
    """Where ``relpath`` (relative to the home) is seen in the sandbox."""
    return f"{HOME}/{relpath}" if relpath else HOME


def _check_user(name: str) -> str:
    if name not in USERS:
        raise BadSandboxPath(
            f"this sandbox has one user, {SANDBOX_USER!r}: nothing acts as {name[:60]!r}"
        )
    return name


def user_of(connection: HTTPConnection) -> str:
    """The user a request acts as: envd's ``Authorization: Basic <user:>`` header
    (RPC) or its ``username`` parameter (``/files``); ``user`` by default."""
    named = connection.query_params.get("username") or connection.query_params.get("user")
    if named:
        return _check_user(named)
    header = connection.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic" or not value:
        return SANDBOX_USER
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise BadSandboxPath("the Authorization header is not Basic user:") from None
    return _check_user(decoded.partition(":")[0] or SANDBOX_USER)
