"""``RemoteComputer``: ``Computer``'s API, run by a remote ``lmc serve``.

It creates a session when it opens and deletes it when it closes (or attaches
to an existing one, which it then leaves alive), and streams the session's
messages as they arrive, over HTTP (NDJSON) or one WebSocket. The sync methods
drive the same async core through a blocking portal, as ``Computer`` does.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any, Literal, TypeVar, Unpack

import anyio

from .. import replies
from ..arguments import MessageInput, RunOptions, check_run
from ..errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ConnectionLost,
    RemoteError,
    RemoteSessionNotFound,
    UsageError,
)
from ..language_status import LanguageStatus
from ..messages import Message
from ..sync import iterate_in_portal
from .branching import RemoteBranching
from .files import FileMethods
from .languages import language_statuses, resolve
from .models import RemoteTimeouts
from .rest import Api, ExecutionRefused
from .spec import session_spec
from .sync_layer import SyncLayer
from .websocket import WebSocketChannel
from .wire import ANSWERED, REFUSED_STATUS, code_body, from_wire

__all__ = ["RemoteComputer", "Transport"]

logger = logging.getLogger(__name__)

Transport = Literal["http", "websocket"]
T = TypeVar("T")


class RemoteComputer(SyncLayer, FileMethods, RemoteBranching):
    """Runs LMC code messages in a session of a remote ``lmc serve``.

    ``token`` defaults to ``$LMC_TOKEN``. ``languages``, ``cwd`` (relative to the
    session's working directory), ``env``, ``network`` (``True``, ``False``, or an
    egress policy: ``{"allow": [...], "deny": [...]}`` within the server's
    ``--allow-network`` list), ``limits`` (a mapping of
    the server's limit names), ``title``, ``environment`` (the name of one of
    the server's environments) and ``secrets`` (names of the server's secrets:
    the session sees placeholders) describe the session it creates;
    ``session=`` attaches to an existing session instead, which ``close`` leaves
    alive unless ``delete_on_close=True``. ``transport`` is ``"http"`` (one
    streamed request per run) or ``"websocket"`` (one connection for every run).
    ``close``/``aclose`` close the connection and delete the session unless it
    is to stay.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        languages: list[str] | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        network: bool | Mapping[str, Sequence[str]] | None = None,
        limits: Mapping[str, Any] | None = None,
        title: str = "",
        transport: Transport = "http",
        session: str | None = None,
        delete_on_close: bool | None = None,
        timeouts: RemoteTimeouts | None = None,
        environment: str | None = None,
        secrets: Sequence[str] | None = None,
    ) -> None:
        if isinstance(languages, str) or not all(isinstance(n, str) for n in languages or ()):
            raise ArgumentTypeError(f"languages must be a list of names, not {languages!r}")
        if transport not in ("http", "websocket"):
            raise ArgumentValueError(f"transport must be 'http' or 'websocket', not {transport!r}")
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("LMC_TOKEN") or None
        self.transport: Transport = transport
        self.timeouts = timeouts or RemoteTimeouts()
        self._spec = session_spec(
            languages or ["python"], title, cwd, env, network, limits, environment, secrets
        )
        self._session_id = session
        self._delete = delete_on_close if delete_on_close is not None else session is None
        self.info: dict[str, Any] = {}
        self._languages: list[dict[str, Any]] = []
        self._api: Api | None = None
        self._channel: WebSocketChannel | None = None
        #: The runs a caller may have left open (closed with the computer).
        self._runs: weakref.WeakSet[AsyncGenerator[Message, None]] = weakref.WeakSet()
        self._closing = False

    @classmethod
    def attach(cls, url: str, session_id: str, **kwargs: Any) -> RemoteComputer:
        """A RemoteComputer on the existing session ``session_id`` (after a
        :class:`~lmc_runtime.errors.ConnectionLost`, say); its state is as the code left it."""
        return cls(url, session=session_id, **kwargs)

    @property
    def session_id(self) -> str | None:
        """The id of the session, once it is created (or the one attached to)."""
        return self._session_id

    def detach(self) -> str | None:
        """Leave the session alive when this RemoteComputer closes; its id."""
        self._delete = False
        return self._session_id

    # -- languages -------------------------------------------------------------------

    @property
    def languages(self) -> dict[str, LanguageStatus]:
        """Every language the server knows; those outside this session are unavailable."""
        return language_statuses(self._languages, self.info.get("languages"))

    def resolve(self, language: str) -> str | None:
        """The server's name for ``language`` (a name or an alias, in any case), or
        None if the server knows no such language (none before it opens)."""
        return resolve(self._languages, language)

    async def arefresh(self) -> None:
        """Fetch the session's information and the server's languages again."""
        api = await self._open_api()
        self.info = await api.json("GET", api.path())
        await self._fetch_languages(api)

    async def _fetch_languages(self, api: Api) -> None:
        try:
            known = await api.json("GET", "/v1/languages")
        except RemoteSessionNotFound:  # a server older than the route: none listed
            logger.info("%s does not list its languages", self.url)
            known = {}
        self._languages = list(known.get("languages", []))

    # -- lifecycle -------------------------------------------------------------------

    @asynccontextmanager
    async def _lifespan(self) -> AsyncIterator[None]:
        if self._closed:
            raise UsageError("this RemoteComputer is closed; create a new one")
        api = Api(self.url, self.token, self.timeouts)
        created = self._session_id is None
        try:
            if created:
                self.info = await api.json("POST", "/v1/sessions", json=self._spec)
                self._session_id = str(self.info["id"])
                api.session_id = self._session_id
            else:
                api.session_id = self._session_id
            self._api = api
            try:
                if created:  # the creation's answer is the session's information
                    await self._fetch_languages(api)
                else:
                    await self.arefresh()
                if self.transport == "websocket":
                    self._channel = WebSocketChannel(api)
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await self._close_runs()
                    await self._end(api)
        finally:
            self._api = None
            self._closed = True
            with anyio.CancelScope(shield=True):
                await api.aclose()

    async def _close_runs(self) -> None:
        """Close the runs a caller left open (a run held past the computer's
        close, by a comprehension's frame, say), one after the other, each with
        the stream under it. Left to the event loop's end, each generator would
        be closed at once with the streams under it, in any order, and log an
        error. The server stops their code: their connections close."""
        self._closing = True
        for run in list(self._runs):
            try:
                await run.aclose()
            except RuntimeError as exc:  # running in a task that is ending with the loop
                logger.debug("a run left open was not closed: %s", exc)

    async def _end(self, api: Api) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.aclose()
        if not self._delete:
            return
        try:
            await api.request("DELETE", api.path())
        except RemoteSessionNotFound:
            pass
        except (ConnectionLost, RemoteError) as exc:
            logger.warning("could not delete session %s: %s", self._session_id, exc)

    async def _open_api(self) -> Api:
        if self._api is None:
            raise UsageError("open the RemoteComputer first: `async with RemoteComputer(url):`")
        return self._api

    # -- execution -------------------------------------------------------------------

    def arun(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> AsyncGenerator[Message, None]:
        """Execute one code message in the session; yield its messages as they arrive.

        The same arguments and messages as :meth:`Computer.arun`. A broken
        connection raises :class:`~lmc_runtime.errors.ConnectionLost`; a refused
        request the :class:`~lmc_runtime.errors.RemoteError` that says why.
        """
        if self._api is None:
            raise UsageError("open the RemoteComputer first: `async with RemoteComputer(url):`")
        run = self._arun(*check_run(message, code, options))
        self._runs.add(run)
        return run

    async def _arun(
        self, message: MessageInput, code: str | None, timeout: float | None, env: dict[str, str]
    ) -> AsyncGenerator[Message, None]:
        api = await self._open_api()
        body = code_body(message, code, env)
        if isinstance(body, Message):
            yield body
            return
        timeout = timeout if timeout is not None else self.timeouts.execution
        channel = self._channel
        lines = channel.execute(body, timeout) if channel else api.execute(body, timeout)
        ended = False
        async with aclosing(lines) as stream:
            try:
                async for data in stream:
                    out = from_wire(data)
                    ended = out.is_final or out.status in ANSWERED
                    yield out
            except ExecutionRefused as exc:
                status = REFUSED_STATUS.get(exc.code, replies.Status.NOT_UNDERSTOOD)
                yield replies.not_understood(exc.message, body["id"], status=status)
                return
            except GeneratorExit:
                if not ended:
                    await self._abandon(stream)
                raise
        if not ended:
            raise ConnectionLost(
                f"the stream from {self.url} ended before the run did", self._session_id
            )

    async def _abandon(self, stream: AsyncGenerator[dict[str, Any], None]) -> None:
        """The caller left a run before its end: interrupt the code and read the run
        to its end (bounded), as ``Computer`` stops it, so the state is kept and the
        session is free for the next run. A failure leaves it to the server, which
        stops the code when the connection closes, as does the computer's close."""
        if self._closing:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeouts.margin):
            try:
                await self.ainterrupt()
                async for data in stream:
                    if data.get("format") == "active_line" and data.get("content") is None:
                        return
            except RemoteError as exc:
                logger.info("stopping an abandoned run failed: %s", exc)

    async def ainterrupt(self, language: str | None = None) -> None:
        """Interrupt the code running in the session (every language: the server
        interrupts the session as a whole)."""
        api = await self._open_api()
        if self._channel is not None and await self._channel.interrupt():
            return
        await api.request("POST", api.path("/interrupt"))

    async def arestart(self, language: str) -> None:
        """Restart ``language``'s interpreter in the session; its state is lost."""
        api = await self._open_api()
        try:
            self.info = await api.json("POST", api.path("/restart"), json={"language": language})
        except RemoteError as exc:
            if exc.code == "unknown_language":
                raise UsageError(exc.message) from exc
            raise

    # -- the sync layer --------------------------------------------------------------

    def run(
        self, message: MessageInput, code: str | None = None, **options: Unpack[RunOptions]
    ) -> Iterator[Message]:
        """The sync form of :meth:`arun`; misuse raises here, before anything runs."""
        portal = self._ensure_portal()
        stream = self.arun(message, code, **options)
        return iterate_in_portal(portal, stream, cancel_wait=self.timeouts.connect)

    def interrupt(self, language: str | None = None) -> None:
        """The sync form of :meth:`ainterrupt`; safe to call from any thread."""
        if self._portal is not None:
            self._portal.call(self.ainterrupt, language)

    def restart(self, language: str) -> None:
        """The sync form of :meth:`arestart`."""
        self._call(self.arestart, language)

    def refresh(self) -> None:
        """The sync form of :meth:`arefresh`."""
        self._call(self.arefresh)
