"""Secrets that never enter the sandbox: the broker that puts them in on the way out.

A session that asks for a secret gets a placeholder in its environment, a
random token of its own (``lmc-secret-<name>-<32 hex>``). The gateway hands the
broker (an :class:`~.hooks.Interceptor`) every allowed connection of such a
session to a host the secret goes to; the broker terminates its TLS with a leaf
certificate of the server's CA (:mod:`.ca`), which the session trusts, reads its
HTTP/1.1 requests, replaces the session's own placeholders by the values in
their headers, and sends them on over TLS to the real host, verifying its
certificate. Plain HTTP (port 80) is relayed the same way, without TLS.
Responses come back unchanged. Nothing here logs a header or a value.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import secrets as random
import ssl
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .ca import EgressCA
from .hooks import Dial, Interceptor, SessionSockets
from .http1 import BadRequest, Requests, error_response, relay_requests
from .secret_specs import SecretSpec
from .tls import Activity, Channel, StreamChannel, TlsChannel, TlsFailed

__all__ = [
    "BrokeredGateway",
    "SecretBroker",
    "UnknownSecret",
    "placeholder",
    "upstream_context",
]

logger = logging.getLogger(__name__)

#: The first byte of a TLS record carrying a handshake (a ClientHello).
_HANDSHAKE = b"\x16"


class UnknownSecret(LookupError):
    """A session asked for a secret the server has not been given."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        known = sorted(known)
        offered = ", ".join(known) if known else "none (see `lmc serve --secret`)"
        super().__init__(f"unknown secret {name[:80]!r}; this server's secrets: {offered}")


def placeholder(name: str) -> str:
    """A new placeholder for the secret ``name``: it says which, and 128 random bits."""
    return f"lmc-secret-{name.lower().replace('_', '-')}-{random.token_hex(16)}"


def upstream_context(ca_file: Path | None = None) -> ssl.SSLContext:
    """How the broker checks the real hosts: the system's CAs, and ``ca_file``'s."""
    context = ssl.create_default_context()
    if ca_file is not None:
        context.load_verify_locations(cafile=str(ca_file))
    context.set_alpn_protocols(["http/1.1"])
    return context


@dataclass(frozen=True)
class _Grant:
    """A session's placeholders, by secret name."""

    placeholders: Mapping[str, str]


class SecretBroker:
    """Puts the secrets' values in place of sessions' placeholders (an Interceptor)."""

    def __init__(
        self,
        specs: Iterable[SecretSpec],
        values: Mapping[str, bytes],
        *,
        ca: EgressCA | None = None,
        upstream: ssl.SSLContext | None = None,
        idle: float = 300.0,
    ) -> None:
        self.specs = {spec.name: spec for spec in specs}
        missing = set(self.specs) - set(values)
        if missing:
            raise ValueError(f"no value for the secrets {', '.join(sorted(missing))}")
        self._values = {name: values[name] for name in self.specs}
        self.ca = ca or EgressCA()
        self.upstream = upstream or upstream_context()
        self.idle = idle
        self._grants: dict[str, _Grant] = {}

    def __repr__(self) -> str:
        return f"SecretBroker(secrets={sorted(self.specs)}, sessions={len(self._grants)})"

    # -- sessions ------------------------------------------------------------

    def check(self, names: Iterable[str]) -> None:
        """:class:`UnknownSecret` for the first of ``names`` the server has not."""
        for name in names:
            if name not in self.specs:
                raise UnknownSecret(name, self.specs)

    def open(self, session: str, names: Iterable[str]) -> dict[str, str]:
        """Give ``session`` a placeholder for each of ``names``: its variables."""
        names = list(dict.fromkeys(names))
        self.check(names)
        grant = _Grant({name: placeholder(name) for name in names})
        self._grants[session] = grant
        return dict(grant.placeholders)

    def close(self, session: str) -> None:
        """Forget ``session``'s placeholders: they mean nothing any more."""
        self._grants.pop(session, None)

    def replacements(self, session: str, name: str, port: int) -> dict[bytes, bytes]:
        """What the requests of ``session`` to ``name:port`` have replaced: its
        own placeholders of the secrets that go there, by their values."""
        # The gateway keys each network namespace of a session "<session>/<n>".
        grant = self._grants.get(session) or self._grants.get(session.partition("/")[0])
        if grant is None:
            return {}
        return {
            token.encode(): self._values[secret]
            for secret, token in grant.placeholders.items()
            if self.specs[secret].goes_to(name, port)
        }

    # -- the Interceptor -----------------------------------------------------

    def wants(self, session: str, name: str, port: int) -> bool:
        return bool(self.replacements(session, name, port))

    async def serve(
        self,
        session: str,
        name: str,
        port: int,
        head: bytes,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        dial: Dial,
    ) -> None:
        activity = Activity(self.idle)
        raw = StreamChannel(*client, head=head, activity=activity)
        channels: list[Channel] = [raw]
        try:
            await self._serve(session, name, port, raw, dial, channels)
        except (OSError, TimeoutError, BadRequest, TlsFailed) as exc:
            logger.info("session %s: the connection to %s:%d ended: %s", session, name, port, exc)
        finally:
            for channel in channels:
                channel.close()

    async def _serve(
        self,
        session: str,
        name: str,
        port: int,
        raw: StreamChannel,
        dial: Dial,
        channels: list[Channel],
    ) -> None:
        first = await raw.read(1)
        if not first:
            return
        raw.unread(first)
        tls = first == _HANDSHAKE
        client: Channel = raw
        if tls:
            server = TlsChannel(raw, self.ca.server_context(name))
            try:
                await server.handshake()
            except TlsFailed as exc:
                logger.info("session %s: TLS from the sandbox to %s failed: %s", session, name, exc)
                return
            client = server
        try:
            reader, writer = await dial(name, port)
        except OSError as exc:
            logger.info("session %s: cannot reach %s:%d: %s", session, name, port, exc)
            await client.write(error_response(502, "Bad Gateway", f"cannot reach {name}"))
            return
        up_raw = StreamChannel(reader, writer, activity=raw.activity)
        channels.append(up_raw)
        upstream: Channel = up_raw
        if tls:
            upstream = TlsChannel(up_raw, self.upstream, server_hostname=name)
            try:
                await upstream.handshake()
            except TlsFailed as exc:
                logger.warning("session %s: TLS to %s:%d failed: %s", session, name, port, exc)
                message = f"{name}'s certificate was not accepted: {exc}"
                await client.write(error_response(502, "Bad Gateway", message))
                return
        replacements = self._replacements(session, name, port, in_clear=not tls)
        what = f"session {session}: a request to {name}"
        await _relay(client, upstream, _requests(client, upstream, replacements, what))

    def _replacements(
        self, session: str, name: str, port: int, *, in_clear: bool
    ) -> dict[bytes, bytes]:
        """:meth:`replacements`, looked up once a connection (a session's
        connections end with it). Plain HTTP gets values on port 80 only:
        elsewhere (443, a secret's own port) the client would have them cross the
        network in the clear to a port where TLS was meant; its placeholders stay
        placeholders."""
        if in_clear and port != 80:
            logger.info("session %s: plain HTTP to %s:%d, no secret put in", session, name, port)
            return {}
        return self.replacements(session, name, port)


async def _relay(
    client: Channel, upstream: Channel, requests_sent: Coroutine[Any, Any, None]
) -> None:
    """Requests one way (``requests_sent`` sends them), responses the other, until
    the upstream ends, or the client has ended and the upstream answered."""
    responses = asyncio.create_task(_pipe(upstream, client))
    requests = asyncio.create_task(requests_sent)
    try:
        done, _ = await asyncio.wait({requests, responses}, return_when=asyncio.FIRST_COMPLETED)
        if requests in done and requests.exception() is None and not responses.done():
            await upstream.finish()
            await responses
        for task in done:
            task.result()
    finally:
        for task in (requests, responses):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.gather(requests, responses, return_exceptions=True)


async def _requests(
    client: Channel, upstream: Channel, replacements: dict[bytes, bytes], what: str
) -> None:
    """The client's requests to the upstream, ``replacements`` made; a request
    refused is answered 400 (``what`` names it in the log)."""
    try:
        await relay_requests(Requests(client), upstream, replacements)
    except BadRequest as exc:
        logger.info("%s refused: %s", what, exc)
        await client.write(error_response(400, "Bad Request", str(exc)))
        raise


class _Gateway(Protocol):
    def attach(
        self, key: str, policy: Any, sockets: SessionSockets, interceptor: Interceptor | None
    ) -> object: ...

    def detach(self, key: str) -> object: ...


class BrokeredGateway:
    """``gateway`` as a session's handover attaches to it, every session with
    ``broker`` as its interceptor (it takes only the connections of sessions
    holding secrets, to their hosts)."""

    def __init__(self, gateway: _Gateway, broker: SecretBroker) -> None:
        self.gateway, self.broker = gateway, broker

    async def attach(self, key: str, policy: Any, sockets: SessionSockets) -> None:
        result = self.gateway.attach(key, policy, sockets, self.broker)
        if inspect.isawaitable(result):
            await result

    async def detach(self, key: str) -> None:
        result = self.gateway.detach(key)
        if inspect.isawaitable(result):
            await result


async def _pipe(source: Channel, sink: Channel) -> None:
    """Copy ``source`` to ``sink`` until its end, then end ``sink``'s writing."""
    while data := await source.read():
        await sink.write(data)
    await sink.finish()
