"""The E2B door's router: ASGI middleware in front of ``lmc serve``'s own routes.

E2B's SDKs reach three services, all on the server's one port:

- the control plane (``POST /sandboxes``, ``GET /v2/sandboxes``, ...), at
  ``E2B_API_URL`` or ``https://api.<E2B_DOMAIN>``;
- a sandbox's envd (files, commands) and code interpreter, at ``E2B_SANDBOX_URL``
  with the ``E2b-Sandbox-Id`` and ``E2b-Sandbox-Port`` headers, or at
  ``https://<port>-<sandbox id>.<E2B_DOMAIN>`` behind a TLS proxy.

Everything else goes on to the lmc API, untouched. Sandbox traffic is
authenticated by its sandbox id (a 160-bit capability, :mod:`.ids`), and by the
sandbox's access token when it was made with ``secure=True``. Before that, the
router refuses what the lmc API refuses of a web page (a foreign Origin; without
a token, a rebinding Host), sandbox headers that are sent twice or disagree with
the Host, and a control-plane body past ``max_request_bytes`` (:mod:`.guards`).
"""

from __future__ import annotations

import logging
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..service.logs import hide_sandbox_ids
from .door import DOOR_KEY, ENVD_PORT, INTERPRETER_PORT, SANDBOX_KEY, Door
from .envd.drain import answered_after_body
from .errors import E2BError, SandboxGone, e2b_response
from .guards import browser_check, buffered_body, header, host_of, port_of
from .ids import same, shown
from .registry import E2BSandbox
from .signatures import FILES_PATH, signed, signer_of

__all__ = ["CONTROL_PREFIXES", "E2BRouter"]

logger = logging.getLogger(__name__)

#: The control plane's paths (each also with anything below it).
CONTROL_PREFIXES = (
    "/sandboxes",
    "/v2/sandboxes",
    "/templates",
    "/v2/templates",
    "/v3/templates",
    "/snapshots",
    "/volumes",
    "/secrets",
    "/teams",
    "/health",
)

#: envd answers its health check without a token, as E2B's does.
_OPEN_PATHS = frozenset({"/health"})


def _opened(port: int, path: str) -> bool:
    """Whether ``path`` on ``port`` is reached without the access token. E2B's SDKs
    send it to the code interpreter with ``/execute`` only: its contexts are
    reached by the sandbox id alone, as on E2B (running code takes the token)."""
    if path in _OPEN_PATHS:
        return True
    return port == INTERPRETER_PORT and (path == "/contexts" or path.startswith("/contexts/"))


def _signed(scope: Scope, token: str) -> bool:
    """Whether the request is a files URL signed with ``token`` (:mod:`.signatures`)."""
    return scope["type"] == "http" and signed(
        scope["method"], scope["path"], scope["query_string"], token
    )


def _is_control(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in CONTROL_PREFIXES)


class E2BRouter:
    """Routes E2B's traffic to the door's apps and the rest to ``app``."""

    def __init__(
        self, app: ASGIApp, *, door: Door, control: ASGIApp, envd: ASGIApp, interpreter: ASGIApp
    ) -> None:
        self.app = app
        self.door = door
        self.control = control
        self.ports = {ENVD_PORT: envd, INTERPRETER_PORT: interpreter}
        domain = (door.domain or "").lower().strip(".")
        self._api_host = f"api.{domain}" if domain else None
        self._sandbox_host = (
            re.compile(r"([0-9]{1,5})-([a-z0-9]{1,63})\." + re.escape(domain)) if domain else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        try:
            target = self._target(scope)
            signer = self._signer(scope) if target is None else None
            if signer is not None:
                app = self._enter(scope, signer, ENVD_PORT)
            elif target is None and not (scope["type"] == "http" and _is_control(scope["path"])):
                app = None
            elif target is None:
                browser_check(self.door.service.auth, scope, own_host=self._own_host(scope))
                limit = self.door.service.settings.max_request_bytes
                receive = await buffered_body(scope, receive, limit)
                app = self.control
            else:
                sandbox_id, port, named = target
                auth = self.door.service.auth
                browser_check(auth, scope, own_host=named or self._own_host(scope))
                app = self._sandbox_app(scope, sandbox_id, port)
        except E2BError as exc:
            if scope["type"] == "http":
                refusal: ASGIApp = e2b_response(exc.status, exc.message)
                if scope["path"] == FILES_PATH:  # an upload's, after its body (.envd.drain)
                    refusal = answered_after_body(refusal)
                await refusal(scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": 1008, "reason": exc.message})
            return
        if app is None:
            await self.app(scope, receive, send)
        else:
            await self._guarded(app, scope, receive, send)

    def _own_host(self, scope: Scope) -> bool:
        """Whether the Host is the control plane's own name (``api.<domain>``)."""
        return self._api_host is not None and host_of(scope) == self._api_host

    def _named(self, scope: Scope) -> tuple[str, int] | None:
        """The sandbox and port the Host names (``<port>-<id>.<domain>``), or None."""
        if self._sandbox_host is None:
            return None
        match = self._sandbox_host.fullmatch(host_of(scope))
        if match is None:
            return None
        return match.group(2), int(match.group(1))

    def _target(self, scope: Scope) -> tuple[str, int, bool] | None:
        """The sandbox and port the request is for, and whether its Host named
        them; None if it is not sandbox traffic. The headers and the Host must
        agree when both are sent (E2B's SDKs send both to ``<port>-<id>.<domain>``)."""
        sandbox_id = header(scope, b"e2b-sandbox-id", "E2b-Sandbox-Id")
        port_text = header(scope, b"e2b-sandbox-port", "E2b-Sandbox-Port")
        named = self._named(scope)
        if named is None:
            if sandbox_id is None:
                return None
            return sandbox_id, ENVD_PORT if port_text is None else port_of(port_text), False
        port = named[1] if port_text is None else port_of(port_text)
        if sandbox_id is None:
            sandbox_id = named[0]
        if not same(sandbox_id, named[0]) or port != named[1]:
            raise E2BError(
                "the Host names another sandbox or port than the E2b-Sandbox-Id and "
                "E2b-Sandbox-Port headers",
                400,
            )
        return sandbox_id, port, True

    def _sandbox_app(self, scope: Scope, sandbox_id: str, port: int) -> ASGIApp:
        sandboxes = self.door.sandboxes
        sandbox = sandboxes.find(sandbox_id)
        if sandbox is None:
            raise SandboxGone(shown(sandbox_id))
        app = self.ports.get(port)
        if app is None:
            raise E2BError(f"nothing listens on port {port} in sandbox {sandbox.shown}", 502)
        token = sandbox.access_token
        opened = _opened(port, scope["path"])
        given = header(scope, b"x-access-token", "X-Access-Token")
        authorized = (
            token is None or same(given, token) or (port == ENVD_PORT and _signed(scope, token))
        )
        if not authorized and not opened:
            raise E2BError("this sandbox is secure: its access token is missing or wrong", 401)
        # Paused: refused, unless it was made with autoResume and the request
        # holds all it takes to reach it (a health check without the token does not).
        resumed = sandbox.paused_at is None or (
            sandbox.auto_resume and authorized and sandboxes.resume(sandbox)
        )
        if not resumed:
            raise SandboxGone(sandbox.shown, "is paused: resume it first (Sandbox.connect)")
        return self._enter(scope, sandbox, port)

    def _signer(self, scope: Scope) -> E2BSandbox | None:
        """The sandbox a signed files URL is for, when it names none (E2B_SANDBOX_URL)."""
        if scope["type"] != "http":
            return None
        method, path, query = scope["method"], scope["path"], scope["query_string"]
        sandbox = signer_of(self.door.sandboxes, method, path, query)
        if sandbox is None and path == FILES_PATH and b"signature=" in query:
            raise E2BError("the URL's signature is invalid or has expired", 401)
        if sandbox is not None and sandbox.paused_at is not None:
            raise SandboxGone(sandbox.shown, "is paused: resume it first (Sandbox.connect)")
        return sandbox

    def _enter(self, scope: Scope, sandbox: E2BSandbox, port: int) -> ASGIApp:
        scope[DOOR_KEY] = self.door
        scope[SANDBOX_KEY] = sandbox
        return self.ports[port]

    async def _guarded(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Run ``app`` with the door in the scope; an error nothing mapped is a 500
        in E2B's shape (logged with its traceback), never a bare one."""
        scope[DOOR_KEY] = self.door
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] in ("http.response.start", "websocket.accept")
            await send(message)

        try:
            await app(scope, receive, tracked)
        except Exception:
            path = hide_sandbox_ids(scope["path"])
            logger.exception("internal error in the E2B door on %s", path)
            if started or scope["type"] != "http":
                raise
            await e2b_response(500, "internal error; see the server log")(scope, receive, send)
