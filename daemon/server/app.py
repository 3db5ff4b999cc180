"""The websocket and HTTP server (docs/protocol.md): one port, uvicorn serving `asgi.build_app`.

The port is bound here, not by uvicorn, so that a port in use is a `ConfigError` naming
`[server] port`; uvicorn runs in the daemon's task group without signal handlers of its own
(the daemon owns SIGTERM, SIGINT and SIGHUP). Stopping closes every websocket with 1001
(going away) first, then lets uvicorn finish the HTTP requests in flight.
"""

from __future__ import annotations

import contextlib
import logging
import socket

import anyio

from simreportd.daemon import hygiene
from simreportd.daemon.config import ServerConfig
from simreportd.daemon.host import Host
from simreportd.errors import ConfigError

from .asgi import build_app
from .connections import STOP_TIMEOUT_S, EmbeddedUvicorn, server_config
from .edge import AcceptErrorsOnce, ConnectionLimits, within_file_limit
from .fanout import MAX_MESSAGE, Fanout
from .streaming import Dropped

log = logging.getLogger("simreportd.daemon.server.app")

BACKLOG = 512  # connections the kernel queues for us to accept


class Server:
    """Serves `/ws`, the JSON API, the MiroFish endpoints and the dashboard for a running Daemon."""

    def __init__(self, daemon: Host, config: ServerConfig) -> None:
        config.refuse_if_exposed()
        self.daemon, self.config = daemon, config
        self.fanout = Fanout(daemon, config.send_buffer_mb << 20)
        self.sockets: list[socket.socket] = []
        self._uvicorn: EmbeddedUvicorn | None = None
        self._stopped = anyio.Event()
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Server:
        start = await self.daemon.store.last_position()
        self.sockets = listen(self.config)
        self.limits = ConnectionLimits(within_file_limit(self.config.max_connections),
                                       self.config.max_connections_per_client, self.config.http_reserve,
                                       trusted_proxies=self.config.trusted_proxies)
        app = build_app(self.daemon, self.fanout, self.config)
        self._uvicorn = EmbeddedUvicorn(server_config(app, self.limits, MAX_MESSAGE), BACKLOG)
        accept_errors = AcceptErrorsOnce()
        logging.getLogger("asyncio").addFilter(accept_errors)
        self._stack.callback(logging.getLogger("asyncio").removeFilter, accept_errors)
        tasks = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tasks.cancel_scope.cancel)  # the broadcaster stops after the connections close
        self._stack.push_async_callback(self._close)
        tasks.start_soon(self._serve, name="uvicorn")
        tasks.start_soon(self.fanout.broadcast, start, name="broadcaster")
        tasks.start_soon(self.fanout.progress.run, name="progress")
        tasks.start_soon(self._give_back_memory, name="memory")
        log.info("serving on http://%s:%d/", self.config.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    @property
    def port(self) -> int:
        return int(self.sockets[0].getsockname()[1])

    async def _serve(self) -> None:
        """uvicorn's own start and stop, shielded: a cancelled daemon still stops it by `_close`."""
        assert self._uvicorn is not None
        try:
            with anyio.CancelScope(shield=True):
                await self._uvicorn.serve(sockets=self.sockets)
        finally:
            self._stopped.set()

    async def _give_back_memory(self) -> None:
        """Return what a crowd of connections leaves behind to the system.

        A connection ends with its tasks cancelled, and their exceptions, tracebacks and frames form
        reference cycles that hold its buffers (290 MB after 832 subscribers left): Python frees them
        only at a full collection, which may not come for minutes, so one is run at a check when CHURN
        connections have opened since the last. Once the crowd has gone (down to a tenth of its peak), or
        a slow reader of a long answer was dropped (streaming.py),
        a collection, the rebuilding of the server's sets of connections, tasks and sessions (tables sized for
        the crowd), the clearing of Python's type attribute cache (it holds the names of up to 4096 lookups,
        strings made during the crowd, each keeping a page of the heap) and the C allocator's trim run at each
        of TRIM_CHECKS checks, as what it left is freed over seconds (its last sessions end, the store's reader
        thread finishes the history pages already asked for).
        """
        peak = trims_left = opened = dropped = 0
        while self._uvicorn is not None:
            await anyio.sleep(TRIM_EVERY_S)
            connections, tasks = self._uvicorn.grown_sets()
            open_now, peak = len(connections), max(peak, len(connections))
            if (peak >= TRIM_AFTER_PEAK and open_now * 10 <= peak) or Dropped.total != dropped:
                peak, trims_left, dropped = open_now, TRIM_CHECKS, Dropped.total
            if self.limits.opened - opened >= CHURN or trims_left:
                opened = self.limits.opened
                hygiene.collect()
            if trims_left:
                hygiene.shrink((connections, tasks, self.fanout.sessions))
                hygiene.forget_lookups()
                hygiene.trim_heap()
            trims_left = max(0, trims_left - 1)

    async def _close(self) -> None:
        """Websockets closed with 1001, then uvicorn stopped (it stops listening and finishes what is in flight)."""
        assert self._uvicorn is not None
        with anyio.CancelScope(shield=True):
            await self.fanout.close()
            self._uvicorn.stop()
            with anyio.move_on_after(STOP_TIMEOUT_S + 2) as late:
                await self._stopped.wait()
            if late.cancelled_caught:
                self._uvicorn.stop(force=True)
                await self._stopped.wait()


TRIM_EVERY_S, TRIM_AFTER_PEAK, TRIM_CHECKS, CHURN = 5.0, 100, 6, 500


def listen(config: ServerConfig) -> list[socket.socket]:
    """Listening sockets for every address of `[server] host` (one port for all), or a ConfigError naming the key."""
    try:
        addresses = socket.getaddrinfo(config.host or None, config.port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise ConfigError(f"cannot listen on [server] host = {config.host!r} ({exc}); set [server] host") from None
    sockets: list[socket.socket] = []
    port = config.port
    try:
        for family, kind, proto, _, address in dict.fromkeys(addresses):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # "::" and "0.0.0.0" side by side
            sock.bind((address[0], port, *address[2:]))
            port = sock.getsockname()[1]  # port 0: the others take the one the first was given
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ConfigError(f"cannot listen on {config.host}:{config.port} ({exc.strerror}); stop the other process "
                          "or set [server] port") from None
    return sockets
