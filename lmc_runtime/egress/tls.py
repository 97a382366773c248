"""Byte channels for the secrets broker: a TCP connection's asyncio streams
(with the bytes the gateway already read from it put back in front), and TLS
over such a channel, done with ``ssl``'s memory BIOs (so that a connection whose
first bytes were read already, a ClientHello, can still be terminated).

Every wait is bounded by an idle timeout: a connection on which nothing moves,
either way, for that long ends (:class:`TimeoutError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from typing import Protocol

__all__ = ["Activity", "Channel", "StreamChannel", "TlsChannel", "TlsFailed"]

#: How much one read asks for.
CHUNK = 64 * 1024


class TlsFailed(Exception):
    """A TLS handshake failed (its reason, for the log: never a secret)."""


class Channel(Protocol):
    async def read(self, n: int = CHUNK) -> bytes:
        """Up to ``n`` bytes; b"" at the end."""
        ...

    async def write(self, data: bytes) -> None:
        """Send ``data`` (flow-controlled)."""
        ...

    async def finish(self) -> None:
        """Say that nothing more will be written (TLS close_notify, or TCP EOF)."""
        ...

    def close(self) -> None: ...


class Activity:
    """When bytes last moved on either side of a relayed connection: one side
    waits for its peer as long as the whole connection is not idle (a client
    silent while a long response streams to it is not cut off)."""

    def __init__(self, idle: float = 300.0) -> None:
        self.idle = idle
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()

    def left(self) -> float:
        """Seconds until the connection has been idle for ``idle``."""
        return self.last + self.idle - time.monotonic()


class StreamChannel:
    """A TCP connection's streams; ``head``: bytes already read from it, read
    first; ``activity``: the relayed connection's, shared with its other side."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        head: bytes = b"",
        activity: Activity | None = None,
    ) -> None:
        self.reader, self.writer = reader, writer
        self._head = head
        self.activity = activity or Activity()

    def unread(self, data: bytes) -> None:
        """Put ``data`` back in front of what comes next."""
        self._head = data + self._head

    async def read(self, n: int = CHUNK) -> bytes:
        if self._head:
            data, self._head = self._head[:n], self._head[n:]
            return data
        while (left := self.activity.left()) > 0:
            try:  # a cancelled read loses nothing: what came stays buffered
                data = await asyncio.wait_for(self.reader.read(n), left)
            except TimeoutError:
                continue  # the other side may have moved meanwhile
            self.activity.touch()
            return data
        raise TimeoutError(f"nothing moved for {self.activity.idle:g} s")

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await asyncio.wait_for(self.writer.drain(), self.activity.idle)
        self.activity.touch()

    async def finish(self) -> None:
        if self.writer.can_write_eof() and not self.writer.is_closing():
            with contextlib.suppress(OSError):
                self.writer.write_eof()

    def close(self) -> None:
        self.writer.close()


class TlsChannel:
    """TLS over ``raw``: the server side (``server_hostname`` None) or the client's."""

    def __init__(
        self, raw: Channel, context: ssl.SSLContext, *, server_hostname: str | None = None
    ) -> None:
        self.raw = raw
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(
            self._incoming,
            self._outgoing,
            server_side=server_hostname is None,
            server_hostname=server_hostname,
        )
        self._ended = False

    async def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            await self.raw.write(data)

    async def _fill(self) -> None:
        """Feed the TLS object what the peer sends next (its EOF at the end)."""
        await self._flush()
        data = await self.raw.read()
        if data:
            self._incoming.write(data)
        else:
            self._incoming.write_eof()

    async def handshake(self) -> None:
        """The TLS handshake; :class:`TlsFailed` when it fails."""
        while True:
            try:
                self._tls.do_handshake()
            except ssl.SSLWantReadError:
                await self._fill()
                continue
            except (ssl.SSLError, ssl.CertificateError) as exc:
                with contextlib.suppress(OSError, TimeoutError):
                    await self._flush()  # the alert, if one was made
                raise TlsFailed(getattr(exc, "reason", None) or str(exc)) from None
            await self._flush()
            return

    @property
    def alpn(self) -> str | None:
        return self._tls.selected_alpn_protocol()

    async def read(self, n: int = CHUNK) -> bytes:
        while not self._ended:
            try:
                return self._tls.read(n)
            except ssl.SSLWantReadError:
                await self._fill()
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                self._ended = True
            except ssl.SSLError as exc:
                raise TlsFailed(getattr(exc, "reason", None) or str(exc)) from None
        return b""

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self._tls.write(view[:CHUNK])
            view = view[written:]
            await self._flush()

    async def finish(self) -> None:
        with contextlib.suppress(ssl.SSLError):
            self._tls.unwrap()
        await self._flush()

    def close(self) -> None:
        self.raw.close()
