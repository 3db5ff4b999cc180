"""Browser pages whose origin may not use the server, told once each (docs/protocol.md#security).

A page on an origin that is not allowed gets no CORS answers: its browser blocks every call, and
all its user sees is a page that waits forever ("Waiting for Report Agent..."). So the first
request from each such origin is logged with the setting that allows it; the requests themselves
go on to the CORS middleware and the guard, which refuse them as before.
"""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from simreportd.daemon.config import ServerConfig

from .edge import header, origin_allowed

log = logging.getLogger("simreportd.daemon.server.origins")

MAX_TOLD = 64  # origins told at most: a flood of made-up origins must not grow a set or the log without bound


class RefusedOriginsTold:
    """ASGI middleware: log the first request of each origin `[server] allowed_origins` does not allow."""

    def __init__(self, app: ASGIApp, config: ServerConfig) -> None:
        self.app, self.config = app, config
        self.told: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            self.notice(header(scope["headers"], b"origin"), header(scope["headers"], b"host") or "")
        await self.app(scope, receive, send)

    def notice(self, origin: str | None, host: str) -> None:
        """Log `origin` if it is refused and not told yet; past MAX_TOLD origins, one last line says so."""
        if origin is None or origin in self.told or len(self.told) > MAX_TOLD or \
                origin_allowed(origin, host, self.config):
            return
        self.told.add(origin)
        if len(self.told) > MAX_TOLD:
            log.warning("more origins that are not allowed are calling; no more of them will be logged")
            return
        log.warning("pages on origin %s cannot use this server (the browser blocks their calls): add it to "
                    "[server] allowed_origins (or SIMREPORTD_SERVER_ALLOWED_ORIGINS) if they may; allowed now: %s",
                    origin[:200], ", ".join(self.config.allowed_origins) or "none")
