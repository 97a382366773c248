"""uvicorn's httptools protocol with the deadlines and the cap of :mod:`.connections`
(imported only when httptools is installed)."""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .bodies import invalid_http_body
from .connections import BODY, HEADERS, LINGER
from .guarded import Guarding

__all__ = ["GuardedHttpToolsProtocol"]


class GuardedHttpToolsProtocol(Guarding, HttpToolsProtocol):
    """uvicorn's httptools protocol, guarded. The parser reports the request's
    progress by callbacks; ``_reading`` keeps where the current one is."""

    #: Where the parser is in the current request: "headers", then "body", then "done".
    _reading = "headers"

    def data_received(self, data: bytes) -> None:
        self.guard.received(len(data))
        super().data_received(data)
        self.guard.update()

    def send_400_response(self, msg: str) -> None:
        """A request HTTP cannot parse is answered with a JSON problem, as every
        other error is (uvicorn's own answer is plain text)."""
        body = invalid_http_body(msg)
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join([*head, body]))
        self.transport.close()

    def on_headers_complete(self) -> None:
        self._reading = "body"
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading = "done"

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.guard.update()

    def handle_websocket_upgrade(self) -> None:
        self.guard.upgraded()
        super().handle_websocket_upgrade()

    def current_phase(self) -> str | None:
        answered = self.cycle is not None and self.cycle.response_complete
        if self._reading == "body":
            return LINGER if answered else BODY
        if self._reading == "done" and not answered:
            return None
        return HEADERS
