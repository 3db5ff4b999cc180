"""HTTP requests with a body on the websocket port: the one POST endpoint (`/api/report/chat`) needs one.

The websockets server reads requests for handshakes, which have no body, and refuses any that
has one. `BodyConnection` reads the request itself, body included (at most `MAX_BODY` bytes
kept; a longer one is read and dropped, and answered 413), then hands a websocket handshake's
stream to websockets as before. It also bounds the time a client has to send its request (`REQUEST_TIMEOUT_S`, what
websockets' `open_timeout` did), so that answering it may take as long as a chat answer takes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import InvalidMessage
from websockets.http11 import Request, parse_headers, parse_line
from websockets.protocol import Protocol
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

MAX_BODY = 256 * 1024
MAX_DRAINED = 16 * 1024 * 1024  # a larger body is not read at all
REQUEST_TIMEOUT_S = 10.0


class BodyConnection(ServerConnection):
    """A server connection whose request may carry a body (`body`), read before `process_request` runs."""

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, *args, **kwargs)
        self.body = b""
        self.too_large = False
        protocol.parser = self._parse(protocol)  # no byte has arrived yet: the handshake parser is replaced
        next(protocol.parser)

    async def handshake(self, *args: Any, **kwargs: Any) -> None:
        """The request must arrive within REQUEST_TIMEOUT_S; answering it is bounded by the work itself."""
        await asyncio.wait([self.request_rcvd, self.connection_lost_waiter], timeout=REQUEST_TIMEOUT_S,
                           return_when=asyncio.FIRST_COMPLETED)
        if not self.request_rcvd.done() and not self.connection_lost_waiter.done():
            raise TimeoutError(f"no complete request within {REQUEST_TIMEOUT_S:g}s")
        await super().handshake(*args, **kwargs)

    def _parse(self, protocol: ServerProtocol) -> Generator[None]:
        try:
            request = yield from self._read_request(protocol.reader)
        except Exception as exc:  # as websockets does: no valid request, no answer
            protocol.handshake_exc = InvalidMessage("did not receive a valid HTTP request")
            protocol.handshake_exc.__cause__ = exc
            protocol.send_eof()
            protocol.parser = protocol.discard()
            next(protocol.parser)
            yield
            return
        protocol.events.append(request)
        if request.method == "GET":  # a websocket handshake, perhaps: frames follow once it is accepted
            yield from Protocol.parse(protocol)
        while True:  # the answer to any other request closes the connection
            yield

    def _read_request(self, reader: StreamReader) -> Generator[None, None, Request]:
        line = yield from parse_line(reader.read_line)
        method, path, version = line.decode("ascii").split(" ", 2)
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise ValueError(f"unsupported protocol {version!r}")
        headers = yield from parse_headers(reader.read_line)
        if "Transfer-Encoding" in headers:
            raise NotImplementedError("transfer codings aren't supported")
        lengths = set(headers.get_all("Content-Length")) or {"0"}
        if len(lengths) > 1 or not next(iter(lengths)).isdigit():
            raise ValueError("bad Content-Length")
        length = int(next(iter(lengths)))
        if length > MAX_DRAINED:
            raise ValueError(f"a body of {length} bytes")  # not even read: the connection is dropped
        if length > MAX_BODY:
            self.too_large = True  # read and dropped, a chunk at a time, so the client hears the 413
            for start in range(0, length, MAX_BODY):
                yield from reader.read_exact(min(MAX_BODY, length - start))
        elif length:
            self.body = bytes((yield from reader.read_exact(length)))
        return Request(path, headers, method, version)
