"""The server's ASGI app (Starlette): the routing table, the edge's middleware, the handlers of our own.

A request passes, in order: `EdgeMiddleware` (connection limits, doubled headers, Host),
`RefusedOriginsTold` (logs the first request of each origin that is not allowed),
Starlette's `CORSMiddleware` (answers preflights from `[server] allowed_origins`: a browser
sends them without a token), `GuardMiddleware` (token, Origin of a websocket or a
state-changing request, its body type), then `routes`. To add a route, add it to `routes`:
a read of the read models is an `@http_api.route` function, served by `read_route`; anything
else is a Starlette `Route` whose handler reads a POST or DELETE body with `json_body`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from simreportd.daemon.chat_answers import chat_request
from simreportd.daemon.client_json import checked
from simreportd.daemon.config import ServerConfig
from simreportd.daemon.host import Host
from simreportd.errors import LimitReached
from simreportd.projections.failures import fold_failures
from simreportd.projections.sqlite import ViewsMissing, reading

from . import http_api, mirofish, mirofish_interviews, mirofish_simulation
from .connections import CONNECTION, REFUSED
from .edge import (
    MAX_BODY,
    REQUEST_TIMEOUT_S,
    Refusal,
    body_refusal,
    error_body,
    first_refusal,
    forwarded_client,
    guard_refusal,
    trusted,
)
from .fanout import Fanout
from .origins import RefusedOriginsTold
from .streaming import LogAnswer
from .ws_commands import client_address

TRY_AGAIN_LATER = 1013  # the websocket close code of a connection beyond the limits
HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
REBUILD_RETRY_S = 2  # the Retry-After of a read while the read models are rebuilt (their runner checks each second)
CODES = {404: "not_found", 405: "method_not_allowed", 408: "request_timeout", 413: "too_large"}


def build_app(daemon: Host, fanout: Fanout, config: ServerConfig) -> Starlette:
    """The app uvicorn serves for this daemon."""
    table = routes(daemon, fanout)
    cors = Middleware(CORSMiddleware, allow_origins=config.allowed_origins, allow_methods=["GET", "POST", "DELETE"],
                      allow_headers=["Content-Type", "Authorization"])
    guard = Middleware(GuardMiddleware, config=config, table=table)
    told = Middleware(RefusedOriginsTold, config=config)
    return Starlette(routes=table, middleware=[Middleware(EdgeMiddleware, config=config), told, cors, guard],
                     exception_handlers={HTTPException: http_error,  # type: ignore[dict-item]
                                         ViewsMissing: rebuilding})


def routes(daemon: Host, fanout: Fanout) -> list[BaseRoute]:
    """Every path the server answers, with its methods: the one routing table."""
    handlers = Handlers(daemon, fanout)
    return [
        route("/", handlers.dashboard, "GET"),
        route("/healthz", handlers.health, "GET"),
        route("/metrics", handlers.metrics, "GET"),
        route("/api/report/chat", handlers.chat, "POST"),
        *(log_route(f"/api/report/{{report_id}}/{name}", daemon, table, whole)
          for name, table in (("agent-log", "agent_log"), ("console-log", "console_log"))
          for whole in (False, True)),
        *mirofish_routes(daemon),
        *(read_route(path, fn, daemon) for path, fn in http_api.ROUTES),
        WebSocketRoute("/ws", fanout.serve),
    ]


def route(path: str, endpoint: Any, *methods: str) -> Route:
    """A Route answering exactly `methods` (Starlette adds HEAD to GET; a HEAD here is a 405 like any other)."""
    made = Route(path, endpoint, methods=list(methods))
    made.methods = set(methods)
    return made


def read_route(path: str, fn: Any, daemon: Host) -> Route:
    """A GET served by an `http_api` read function, in a worker thread on the read models."""
    async def endpoint(request: Request) -> Response:
        query = dict(request.query_params)
        args = [str(v) for v in request.path_params.values()]
        return reply(*await daemon.views.in_thread(http_api.answer, daemon.views.path, fn, query, args))
    return route(path, endpoint, "GET")


def log_route(path: str, daemon: Host, table: str, whole: bool) -> Route:
    """MiroFish's agent or console log (`table`) from `from_line` on, or the whole of it at `path`/stream:
    written a page at a time as the client reads it (streaming.py)."""
    async def endpoint(request: Request) -> Any:
        try:
            start = None if whole else mirofish.from_line(dict(request.query_params))
        except mirofish.Absurd as exc:
            return _mirofish_reply(mirofish.failed(400, str(exc), code="bad_request"))
        return LogAnswer(daemon, table, str(request.path_params["report_id"]), start)
    return route(path + "/stream" if whole else path, endpoint, "GET")


def mirofish_routes(daemon: Host) -> list[Route]:
    """MiroFish's report API (mirofish.py): one Route per path, with every method its handlers take."""
    by_path: dict[str, dict[str, Any]] = {}
    for method, path, reader in [*mirofish.READERS, *mirofish_simulation.READERS]:
        by_path.setdefault(path, {})[method] = partial(_read, daemon, reader)
    for method, path, actor in [*mirofish.ACTORS, *mirofish_simulation.ACTORS, *mirofish_interviews.ACTORS]:
        by_path.setdefault(path, {})[method] = partial(actor, daemon)

    def endpoint(handlers: dict[str, Any]) -> Any:
        async def answer(request: Request) -> Response:
            try:
                ask = mirofish.Ask(dict(request.path_params), dict(request.query_params), await _json(request),
                                   client_address(request))
            except ValueError as exc:
                return _mirofish_reply(mirofish.failed(400, str(exc)))
            try:
                return _mirofish_reply(await handlers[request.method](ask))
            except mirofish.Absurd as exc:
                return _mirofish_reply(mirofish.failed(400, str(exc), code="bad_request"))
            except LimitReached as exc:
                return limited(exc)
        return answer

    return [route(path, endpoint(handlers), *handlers) for path, handlers in by_path.items()]


async def _read(daemon: Host, reader: mirofish.Reader, ask: mirofish.Ask) -> mirofish.Reply:
    def read(path: Path) -> mirofish.Reply:
        with reading(path) as conn:
            return reader(conn, ask)

    return await daemon.views.in_thread(read, daemon.views.path)


async def _json(request: Request) -> Any:
    """The request's JSON body (None when it has none: a GET, a DELETE); ValueError if it is not JSON."""
    if request.method == "GET":
        return None
    body = await json_body(request)
    try:
        value = json.loads(body) if body.strip() else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"the body is not JSON: {exc}") from None
    except RecursionError:
        raise ValueError("the body nests its JSON too deep") from None
    return checked(value)  # BadText, a ValueError, if a string in it is not text


def _mirofish_reply(answer: mirofish.Reply) -> Response:
    if isinstance(answer.body, bytes):
        return reply(answer.status, answer.content_type, answer.body, answer.headers)
    return reply(*http_api.json_reply(answer.body, answer.status), answer.headers)


def limited(exc: LimitReached) -> Response:
    """429 with Retry-After, in MiroFish's error shape (only its chat is gated over HTTP)."""
    return reply(429, http_api.JSON, json.dumps({"success": False, "error": str(exc), "code": exc.code}).encode(),
                 {"Retry-After": str(exc.retry_after_s)})


def reply(status: int, content_type: str, body: bytes, headers: Mapping[str, str] | None = None) -> Response:
    """A response with our headers, their names capitalised as HTTP writes them (Starlette lower-cases them)."""
    response = Response(body, status, {**HEADERS, **(headers or {})}, media_type=content_type)
    response.raw_headers = [(name.title(), value) for name, value in response.raw_headers]
    return response


async def json_body(request: Request) -> bytes:
    """A POST's or DELETE's body, at most MAX_BODY bytes, arriving within REQUEST_TIMEOUT_S (else 413 or 408:
    the connection is closed then, so the rest of a body is not read for nothing). The edge checked its type."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY:
        raise too_large()
    body = bytearray()
    with anyio.move_on_after(REQUEST_TIMEOUT_S) as late:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise too_large()
    if late.cancelled_caught:
        raise HTTPException(408, f"the body did not arrive within {REQUEST_TIMEOUT_S:g} s", {"Connection": "close"})
    return bytes(body)


def too_large() -> HTTPException:
    return HTTPException(413, f"the request body is larger than {MAX_BODY // 1024} KiB: send less",
                         {"Connection": "close"})


async def http_error(request: Request, exc: HTTPException) -> Response:
    """Starlette's 404, 405 and our own HTTPExceptions, in the error shape of the route's clients."""
    message, headers = exc.detail, dict(exc.headers or {})
    if exc.status_code == 404:
        message = f"no route for {request.url.path}"
    elif exc.status_code == 405:
        headers["Allow"] = ", ".join(sorted(headers.get("Allow", "GET").split(", ")))  # Starlette joins a set
        message = f"{request.method} is not allowed here; use {headers['Allow']}"
    body = error_body(request.url.path, CODES.get(exc.status_code, "error"), message)
    return reply(exc.status_code, http_api.JSON, body, headers)


async def rebuilding(request: Request, exc: Exception) -> Response:
    """A read while the read-model file is missing (deleted, or not made yet): 503 with Retry-After, in the
    route's error shape, while its runner makes it again from the log; no traceback, no 500."""
    body = error_body(request.url.path, "rebuilding", "the read models are being rebuilt from the log; "
                                                      f"try again in {REBUILD_RETRY_S} s")
    return reply(503, http_api.JSON, body, {"Retry-After": str(REBUILD_RETRY_S)})


async def refuse(scope: Scope, receive: Receive, send: Send, refusal: Refusal) -> None:
    """Answer a refused request: a websocket beyond the limits is accepted and closed with 1013 (try again
    later, which clients understand); any other refusal is an HTTP answer, before any upgrade."""
    if scope["type"] == "websocket" and refusal.status == 503:
        websocket = WebSocket(scope, receive, send)
        await websocket.accept()
        await websocket.close(TRY_AGAIN_LATER, refusal.message.encode()[:120].decode(errors="ignore"))
        return
    response = reply(refusal.status, http_api.JSON, error_body(scope["path"], refusal.code, refusal.message),
                     {"Connection": "close"} if refusal.status == 503 or refusal.close else None)
    if scope["type"] == "websocket":
        await WebSocket(scope, receive, send).send_denial_response(response)
    else:
        await response(scope, receive, send)


def forwarded(scope: Scope, config: ServerConfig) -> Refusal | None:
    """Behind a proxy in `[server] trusted_proxies`, the client is the one its X-Forwarded-For or Forwarded
    header names: the scope's client becomes it (every per-client limit then counts that client), and its
    connection counts against that client's limit (the refusal if it holds it)."""
    peer = scope.get("client")
    if peer is None or not trusted(peer[0], config.trusted_proxies):
        return None
    who = forwarded_client(scope["headers"], config.trusted_proxies)
    if who is None:
        return None
    scope["client"] = (who, peer[1])
    connection = scope.get("state", {}).get(CONNECTION)
    return connection.forwarded(who) if connection is not None else None


class EdgeMiddleware:
    """What every request must pass first: the connection limits (decided as it opened), one Host,
    Authorization and Origin header each, a Host this server answers to, and the client a trusted proxy
    forwards (`forwarded`)."""

    def __init__(self, app: ASGIApp, config: ServerConfig) -> None:
        self.app, self.config = app, config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = scope.get("state", {}).get(REFUSED) or first_refusal(scope["headers"], self.config) \
                or forwarded(scope, self.config)
            if refusal is not None:
                await refuse(scope, receive, send, refusal)
                return
        await self.app(scope, receive, send)


class GuardMiddleware:
    """After CORS: the token, the Origin of a websocket or a state-changing request, and the body type of a
    request a route takes (one no route takes is answered 404 or 405 by the router, as it should be)."""

    def __init__(self, app: ASGIApp, config: ServerConfig, table: list[BaseRoute]) -> None:
        self.app, self.config, self.table = app, config, table

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            token = dict(parse_qsl(scope["query_string"].decode("latin-1"))).get("token", "")
            method, headers = scope.get("method", "GET"), scope["headers"]
            refusal = guard_refusal(method, headers, token, scope["type"] == "websocket", self.config)
            if refusal is None and any(r.matches(scope)[0] is Match.FULL for r in self.table):
                refusal = body_refusal(method, headers)
            if refusal is not None:
                await refuse(scope, receive, send, refusal)
                return
        await self.app(scope, receive, send)


class Handlers:
    """The routes that are not reads of `http_api`: the dashboard, health, metrics, MiroFish's chat."""

    def __init__(self, daemon: Host, fanout: Fanout) -> None:
        self.daemon, self.fanout = daemon, fanout

    async def dashboard(self, request: Request) -> Response:
        return reply(*http_api.dashboard())

    async def chat(self, request: Request) -> Response:
        body = await json_body(request)
        try:
            with self.daemon.chat_gate.admit(client_address(request)):
                status, answer = await chat_request(self.daemon.chats, self.daemon.views, body)
        except LimitReached as exc:
            return limited(exc)
        return reply(*http_api.json_reply(answer, status))

    async def health(self, request: Request) -> Response:
        daemon = self.daemon
        head = await daemon.store.last_position()

        def failures(path: Path) -> int:
            with reading(path) as conn:
                return len(fold_failures(conn))

        problems = [p for p in (daemon.store.problem, daemon.views.problem) if p]
        return reply(*http_api.json_reply({
            "status": "degraded" if problems else "ok", "problems": problems, "position": head,
            "projection_position": daemon.views.position, "websocket_clients": len(self.fanout.sessions),
            "fold_failures": await daemon.views.in_thread(failures, daemon.views.path)}))

    async def metrics(self, request: Request) -> Response:
        head, views, clients = await self.daemon.store.last_position(), self.daemon.views, len(self.fanout.sessions)

        def read(path: Path) -> str:
            with reading(path) as conn:
                return http_api.metrics(conn, head, views.position, clients)

        return reply(200, http_api.TEXT, (await views.in_thread(read, views.path)).encode())
