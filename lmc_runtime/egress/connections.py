"""How the gateway serves one connection of a session: redirected (transparent)
or through its explicit proxy. See :mod:`.gateway` for the rules."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .entries import normalize_name
from .sniff import ClientHello, HttpHead, Sniffed, read_head
from .splice import Refused, authority, close_writer, one_request_head, proxy_reply, splice

if TYPE_CHECKING:
    from .gateway import SessionEgress

__all__ = ["serve_proxy", "serve_transparent"]

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def _address(text: str) -> str | None:
    """``text`` as an address in its plain form (v4-mapped as IPv4), or None."""
    try:
        address = ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def _named(egress: SessionEgress, found: Sniffed, where: str) -> str | None:
    """The name a ClientHello or request head gives (None: none, or an IP literal)."""
    if isinstance(found, ClientHello):
        raw = found.server_name
    elif isinstance(found, HttpHead):
        if found.header_count("host") > 1:
            raise egress.refuse(where, "more than one Host header")
        host = found.header("host")
        parsed = authority(host, 80) if host else None
        if host and parsed is None:
            raise egress.refuse(where, f"a malformed Host header {host[:100]!r}")
        raw = parsed[0] if parsed else None
    else:
        return None
    if raw is None or _address(raw) is not None:
        return None
    name = normalize_name(raw)
    if name is None:
        raise egress.refuse(where, f"{raw[:100]!r} is not a host name")
    return name


def _outgoing(head: bytes, found: Sniffed) -> bytes:
    if isinstance(found, HttpHead):
        return one_request_head(found) + head[found.size :]
    return head


async def serve_transparent(
    egress: SessionEgress, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A connection the namespace's firewall redirected: see :mod:`.gateway`."""
    gateway = egress.gateway
    original = gateway.original_destination(writer.get_extra_info("socket"))
    ip, port = _address(original[0]), original[1]
    if ip is None:
        raise egress.refuse(str(original), "no original destination")
    where = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
    head, found = await read_head(reader, gateway.limits.head_timeout)
    name = _named(egress, found, where)
    if name is None:
        if not egress.policy.allows_address(ip, port):
            raise egress.refuse(where, "an address without a name that the policy does not list")
        upstream = await gateway.connect([ip], port)
    else:
        what = f"{name} at {where}"
        if not egress.policy.allows_name(name, port):
            raise egress.refuse(what, "the name is not allowed")
        addresses = await egress.resolve(name)
        known = {_address(a) for a in addresses}
        known |= {_address(a) for a in egress.dns.answered(name)}
        if ip not in known:
            raise egress.refuse(what, "the name does not resolve to the address dialled")
        interceptor = egress.interceptor
        if interceptor is not None and interceptor.wants(egress.key, name, port):
            await interceptor.serve(egress.key, name, port, head, (reader, writer), egress.dial)
            return
        upstream = await egress.dial(name, port, prefer=ip, found=addresses)
    upstream[1].write(_outgoing(head, found))
    await splice((reader, writer), upstream, gateway.limits)


async def serve_proxy(
    egress: SessionEgress, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A connection to the explicit proxy: ``CONNECT`` or an absolute URI."""
    head, found = await read_head(reader, egress.gateway.limits.head_timeout)
    rest = head[found.size :] if isinstance(found, HttpHead) else b""
    try:
        if not isinstance(found, HttpHead):
            raise egress.refuse("a proxy request", "not an HTTP request").with_status(400)
        if found.method == "CONNECT":
            await _tunnel(egress, found, rest, (reader, writer))
        else:
            await _forward(egress, found, head, (reader, writer))
    except Refused as exc:
        await _reply(writer, exc.status, exc.reason)
    except (OSError, TimeoutError) as exc:
        await _reply(writer, 502, f"could not connect: {exc or 'timed out'}")


async def _reply(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    if writer.is_closing():
        return
    writer.write(proxy_reply(status, reason))
    await asyncio.wait_for(writer.drain(), 5)


async def _open(egress: SessionEgress, host: str, port: int) -> Stream:
    """A checked connection to ``host`` (a name or an address literal) at ``port``."""
    where = f"{host}:{port}"
    ip = _address(host)
    if ip is not None:
        if not egress.policy.allows_address(ip, port):
            raise egress.refuse(where, "the address is not allowed")
        return await egress.gateway.connect([ip], port)
    return await egress.dial(host, port)


def _checked(egress: SessionEgress, host: str, port: int) -> str:
    name = host if _address(host) is not None else normalize_name(host)
    if name is None:
        raise egress.refuse(f"{host[:100]}:{port}", "not a host name").with_status(400)
    if _address(name) is None and not egress.policy.allows_name(name, port):
        raise egress.refuse(f"{name}:{port}", "the name is not allowed")
    return name


async def _tunnel(egress: SessionEgress, head: HttpHead, rest: bytes, client: Stream) -> None:
    target = authority(head.target, None)
    if target is None:
        raise egress.refuse(head.target[:100], "CONNECT takes host:port").with_status(400)
    host, port = _checked(egress, *target), target[1]
    interceptor = egress.interceptor
    wanted = (
        interceptor is not None
        and _address(host) is None
        and interceptor.wants(egress.key, host, port)
    )
    upstream = None if wanted else await _open(egress, host, port)
    try:
        client[1].write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await asyncio.wait_for(client[1].drain(), egress.gateway.limits.head_timeout)
        first, found = await read_head(client[0], egress.gateway.limits.head_timeout, initial=rest)
        where = f"{host}:{port}"
        if isinstance(found, ClientHello) and found.server_name is not None:
            if normalize_name(found.server_name) != host:
                raise egress.refuse(
                    where, f"the TLS server name {found.server_name[:100]!r} is another"
                )
        elif isinstance(found, HttpHead):
            named = _named(egress, found, where)
            if named is not None and named != host:
                raise egress.refuse(where, f"the Host header names another, {named!r}")
    except (OSError, TimeoutError):  # refused (a Refused is an OSError) or gone, after the 200
        if upstream is not None:
            close_writer(upstream[1])
        return
    if upstream is None:
        assert interceptor is not None
        await interceptor.serve(egress.key, host, port, first, client, egress.dial)
        return
    upstream[1].write(_outgoing(first, found))
    await splice(client, upstream, egress.gateway.limits)


async def _forward(egress: SessionEgress, head: HttpHead, raw: bytes, client: Stream) -> None:
    url = urlsplit(head.target)
    target = authority(url.netloc, 80) if url.scheme == "http" and "@" not in url.netloc else None
    if target is None:
        raise egress.refuse(
            head.target[:100], "the proxy takes CONNECT, or http:// URIs"
        ).with_status(400)
    host, port = _checked(egress, *target), target[1]
    stated = head.header("host")
    if head.header_count("host") > 1 or (
        stated is not None and authority(stated, 80) != (host, port)
    ):
        raise egress.refuse(f"{host}:{port}", "the Host header differs from the URI's host")
    interceptor = egress.interceptor
    if (
        interceptor is not None
        and _address(host) is None
        and interceptor.wants(egress.key, host, port)
    ):
        await interceptor.serve(egress.key, host, port, raw, client, egress.dial)
        return
    upstream = await _open(egress, host, port)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    upstream[1].write(one_request_head(head, path) + raw[head.size :])
    await splice(client, upstream, egress.gateway.limits)
