"""uvicorn, in the one module that touches it: the embedded server and the protocol classes it runs for each
connection (its own, with what the edge needs added).

`EmbeddedUvicorn` is uvicorn's server without its signal handlers, accepting a few connections at a time.

`EdgeH11` is uvicorn's h11 protocol with a deadline for the request head (h11 has none: a
client that opens a socket and sends nothing, or a byte at a time, would hold a file
descriptor for ever) and the connection limits, checked as the connection opens (and the
websocket limit as it asks to upgrade) and carried to the app in the request's `state`
(uvicorn copies `app_state` into every scope, and hands the same dict to the websocket
protocol on an upgrade).

`FramesProtocol` is uvicorn's protocol on the `websockets` library's sans-I/O core, with our
compression (small frames plain, `deflate.py`) and a way to write many frames in one `send()`:
ASGI has one message per `websocket.send`, so a burst of events would cost a system call per
frame per client. It is offered to the app as the ASGI extension `FRAMES_EXTENSION`. Frames
sent uncompressed are the same bytes on every connection (a server does not mask), so
`TextFrames` serializes them once for all the clients a burst goes to.

All three subclass uvicorn's classes and use attributes it does not document (`conn`, `transport`, `cycle`,
`server_state`...): uvicorn is pinned to a minor range in pyproject.toml for that reason, and
tests/daemon/test_uvicorn.py lists every one relied on, so an upgrade that moves one fails there, by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.extensions.base import Extension
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol

from .deflate import MIN_COMPRESSED, SmallFramesPlain, SmallFramesPlainFactory
from .edge import REQUEST_TIMEOUT_S, ConnectionLimits, Refusal

PING_INTERVAL_S = 20.0  # idle websockets are pinged, so that proxies keep them and dead peers are found
PING_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5  # for HTTP requests in flight when the server stops
ACCEPT_BURST = 32  # connections accepted at once (asyncio takes uvicorn's backlog for both), within the file limit
FRAMES_EXTENSION = "simreportd.frames"  # scope["extensions"][FRAMES_EXTENSION]["sink"] is the FramesProtocol
REFUSED = "refused"  # scope["state"][REFUSED]: the edge.Refusal of a connection beyond the limits, or None
CONNECTION = "connection"  # scope["state"][CONNECTION]: the EdgeH11 the request came on (its `who`, set by the edge)
H11_REASONS = {"Found multiple Host: headers": "more than one Host header"}  # h11's words, where ours are clearer
OVERDUE = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
FULL_TEXT = b"the server holds its limit of connections ([server] max_connections); try again later\n"
FULL = (b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 5\r\nContent-Type: text/plain\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(FULL_TEXT), FULL_TEXT))


class EdgeH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline for each request head and the connection limits."""

    limits: ConnectionLimits  # set by `h11_for`

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, dict(app_state), _loop)  # a copy: this connection's own state
        self.app_state[CONNECTION] = self
        self.who: str | None = None  # the client a trusted proxy forwards on this connection (`forwarded`)
        self.deadline: asyncio.TimerHandle | None = None
        self.idle_since = self.loop.time()  # when it opened or last finished an answer

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        clients = map(client_of, self.connections)
        refusal = self.app_state[REFUSED] = self.limits.admit(self.client[0] if self.client else None, clients)
        if refusal is not None and refusal.code == "server_full" and self._evict_idle():
            refusal = self.app_state[REFUSED] = None  # an idle connection made room: this one is served
        if refusal is not None and refusal.code == "server_full":  # the file limit is near: answer now, not
            transport.write(FULL)  # when (or if) the request head comes, so the descriptor is free at once
            transport.close()
            return
        self._arm()

    def _evict_idle(self) -> bool:
        """Close the connection idle the longest: one that has not sent a request head (a slowloris socket
        holds a descriptor and asks nothing) or a kept-alive one between requests, so that a full server
        still answers whoever asks; whether one was."""
        idle = [c for c in self.connections if isinstance(c, EdgeH11) and c is not self and c.waiting()]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c.idle_since)
        oldest.transport.write(OVERDUE)
        oldest.transport.close()
        return True

    def forwarded(self, who: str) -> Refusal | None:
        """Count this connection as `who`'s, the client a trusted proxy says it forwards (its request's
        headers name it); the refusal if `who` already holds its limit of connections."""
        if who == self.who:
            return None
        self.who = who
        return self.limits.admit_forwarded(who, map(client_of, self.connections))

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.idle_since = self.loop.time()
        self._arm()  # the next request on this connection has the same time for its head

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        """uvicorn's, after the websocket limit is checked: a websocket beyond it is refused (close 1013) by
        the app, which reads the refusal from the state the websocket protocol is given."""
        if self.app_state.get(REFUSED) is None:
            websockets = sum(isinstance(c, FramesProtocol) for c in self.connections)
            self.app_state[REFUSED] = self.limits.admit_websocket(websockets)
        super().handle_websocket_upgrade(event)

    def waiting(self) -> bool:
        """Whether this connection waits for a request head (none sent yet, or its last one answered)."""
        waiting = self.cycle is None or self.cycle.response_complete
        return waiting and self.transport.get_protocol() is self and not self.transport.is_closing()

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse, answered with h11's reason (uvicorn says only "Invalid HTTP request").

        uvicorn calls this in its `except h11.RemoteProtocolError` block: the exception is the one handled."""
        cause = sys.exc_info()[1]
        reason = H11_REASONS.get(str(cause), str(cause)) if cause is not None else msg
        super().send_400_response(f"invalid HTTP request: {reason}".encode("ascii", "replace").decode())

    def _arm(self) -> None:
        self._disarm()
        self.deadline = self.loop.call_later(REQUEST_TIMEOUT_S, self._overdue)

    def _disarm(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def _overdue(self) -> None:
        """No request head in time: answer 408 and close, unless a request is being answered or the
        connection became a websocket (its protocol is another object then)."""
        self.deadline = None
        if self.waiting():
            self.transport.write(OVERDUE)
            self.transport.close()


def client_of(connection: Any) -> str | None:
    """Whose an open connection is: the client a trusted proxy forwards on it, else its peer's address (a
    websocket keeps the state dict, and so the EdgeH11, of the connection it was upgraded from)."""
    edge = getattr(connection, "app_state", {}).get(CONNECTION)
    if edge is not None and edge.who is not None:
        return str(edge.who)
    return peer[0] if (peer := getattr(connection, "client", None)) else None


def h11_for(limits: ConnectionLimits) -> type[EdgeH11]:
    """`EdgeH11` bound to one server's limits (uvicorn takes a class and builds one per connection)."""
    return type("EdgeH11", (EdgeH11,), {"limits": limits})


class TextFrames:
    """Text messages (UTF-8 already) bound for one or many connections; their uncompressed wire form is
    made once, on first use, and written as it is to each connection that sends them plain."""

    def __init__(self, payloads: list[bytes]) -> None:
        self.payloads = payloads
        self.largest = max(map(len, payloads), default=0)

    @cached_property
    def plain(self) -> bytes:
        return b"".join(Frame(Opcode.TEXT, data).serialize(mask=False) for data in self.payloads)


class FramesProtocol(WebSocketsSansIOProtocol):
    """uvicorn's websocket protocol with small frames sent plain and a batched writer (the app's frame sink)."""

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.conn = ServerProtocol(extensions=[SmallFramesPlainFactory()], max_size=config.ws_max_size,
                                   logger=logging.getLogger("uvicorn.error"))

    async def run_asgi(self) -> None:
        self.scope["extensions"][FRAMES_EXTENSION] = {"sink": self}
        await super().run_asgi()

    async def send(self, message: Any) -> None:
        """uvicorn's, and a refused handshake (a denial response: 401, 403, 503) counted as an answered one:
        uvicorn logs an error per refusal otherwise ("returned without completing handshake")."""
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True

    @property
    def extensions(self) -> list[Extension]:
        """The extensions agreed in the handshake (ours, when the client offered permessage-deflate)."""
        return list(self.conn.extensions)

    def open(self) -> bool:
        return self.handshake_complete and self.conn.state is State.OPEN and not (
            self.close_sent or self.disconnected or self.transport.is_closing())

    def write_frames(self, frames: TextFrames) -> bool:
        """Text frames in one write, without waiting: the caller bounds what is unsent. Their shared wire
        form when this connection sends them plain (no compression agreed, or all below MIN_COMPRESSED)."""
        if not self.open():
            return False
        if self._sends_plain(frames.largest):
            self.transport.write(frames.plain)
            return True
        for data in frames.payloads:
            self.conn.send_text(data)
        self.transport.write(b"".join(self.conn.data_to_send()))
        return True

    async def send_texts(self, frames: list[bytes]) -> bool:
        """`write_frames` once the client has read enough of what was written before (flow control)."""
        await self.writable.wait()
        return self.write_frames(TextFrames(frames))

    def _sends_plain(self, largest: int) -> bool:
        """Whether messages up to `largest` bytes leave this connection uncompressed (see deflate.py)."""
        extensions = self.conn.extensions
        return not extensions or (len(extensions) == 1 and isinstance(extensions[0], SmallFramesPlain)
                                  and largest < MIN_COMPRESSED)

    def unsent_bytes(self) -> int:
        """Bytes written to this connection that the client has not taken yet."""
        return self.transport.get_write_buffer_size()

    def abort(self) -> None:
        """Drop the connection at once (a client that does not even read its close frame)."""
        self.transport.abort()


class EmbeddedUvicorn(uvicorn.Server):
    """uvicorn without its signal handlers (the daemon owns signals and stops it with `stop`), accepting
    connections a few at a time.

    asyncio accepts up to its `backlog` connections each time a listening socket is readable, before
    any of them is counted against the limits: with uvicorn's 2048 a burst of clients ran the process
    out of descriptors (ingest could not open a file, accept() failed for a second at a time). So
    uvicorn is given ACCEPT_BURST, and the kernel's queue is set back to `backlog` once it listens.
    """

    def __init__(self, config: Config, backlog: int) -> None:
        super().__init__(config)
        self.backlog = backlog
        logging.getLogger("uvicorn.error").setLevel(logging.ERROR)  # a line per bad request is not for our log

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        for sock in sockets or []:
            sock.listen(self.backlog)

    def grown_sets(self) -> tuple[set[Any], set[Any]]:
        """The server's sets of open connections and of their tasks (tables that keep the size they grew to)."""
        return self.server_state.connections, self.server_state.tasks

    def stop(self, force: bool = False) -> None:
        """Stop listening and finish the requests in flight (within STOP_TIMEOUT_S), or, forced, at once."""
        if force:
            self.force_exit = True
        self.should_exit = True


def server_config(app: ASGIApp, limits: ConnectionLimits, ws_max_size: int) -> Config:
    """uvicorn's settings for the daemon's one port: our protocols, no logging or signals of its own."""
    return Config(app, http=h11_for(limits), ws=FramesProtocol, ws_max_size=ws_max_size,
                  ws_ping_interval=PING_INTERVAL_S, ws_ping_timeout=PING_TIMEOUT_S, lifespan="off", log_config=None,
                  access_log=False, server_header=False, headers=[("Server", "simreportd")],
                  timeout_graceful_shutdown=STOP_TIMEOUT_S, proxy_headers=False, backlog=ACCEPT_BURST)
