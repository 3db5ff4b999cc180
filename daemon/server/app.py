"""The websocket and HTTP server (docs/protocol.md): one port, `/ws` for websockets, GETs for the rest.

One broadcaster task follows the log and offers each event to every session. A session
that subscribes with `after` first reads the history itself (buffering what the
broadcaster offers meanwhile), then goes live: no gap, nothing twice.

Live frames are written by the broadcaster straight into every connection that has nothing
queued: all the frames of one read of the log in one write per client, so a burst of events
costs each client one `send()`, not one per event, and no task switch. Everything else
(history, replies, frames behind those) goes through the session's bounded queue and its
sender task, so order is kept. A client that stops reading is disconnected (code 4008) when
its queue or its unsent bytes pass a bound, instead of slowing anyone else.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
from websockets.asyncio.server import Server as WSServer
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.protocol import State

from simreportd.daemon import actions
from simreportd.daemon.chat import answer_frame, chat_request, chat_target, step_frame
from simreportd.daemon.config import ServerConfig, is_loopback
from simreportd.daemon.server import http_api
from simreportd.errors import ConfigError, SimreportdError, StoreClosed
from simreportd.events.codec import Recorded
from simreportd.events.models import ChatEvent
from simreportd.events.store import CaughtUp
from simreportd.events.streams import is_report_stream
from simreportd.projections.failures import fold_failures
from simreportd.projections.runner import reading

from .deflate import SmallFramesPlainFactory
from .posts import BodyConnection
from .protocol import (
    Chat,
    EventFrames,
    GenerateReport,
    HandedOver,
    Interview,
    ProtocolError,
    ReportInfo,
    Subscribe,
    encode,
    parse_message,
)

log = logging.getLogger("simreportd.daemon.server.app")

QUEUE_FRAMES = 1000  # frames a client may fall behind by before it is disconnected
UNSENT_BYTES = 1 << 20  # bytes written to a client's connection but not yet sent, before it is disconnected
BUFFER_EVENTS = 10_000
MAX_MESSAGE = 64 * 1024
SLOW_CLIENT = 4008


def host_name(header: str) -> str:
    """The name part of a Host header: `[::1]:8765` -> `::1`, `Example.org:80` -> `example.org`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str, config: ServerConfig) -> bool:
    """Whether a Host header names this server: loopback, the configured host, or [server] allowed_hosts.

    This is what stops DNS rebinding: a page on evil.com that resolves to 127.0.0.1 still sends
    `Host: evil.com`. A wildcard listen address with no allowed_hosts accepts any name (the
    token, required there, is the guard).
    """
    name, allowed = host_name(header), [h.lower() for h in config.allowed_hosts]
    if header.strip().lower() in allowed or name in allowed or is_loopback(name) or name == config.host.lower():
        return True
    return config.host in WILDCARDS and not allowed


WILDCARDS = ("0.0.0.0", "::", "")
SINGLE_HEADERS = ("Host", "Authorization", "Origin")
POST_PATHS = frozenset({"/api/report/chat"})  # MiroFish's chat endpoint; everything else is GET


class Session:
    """One websocket client: its subscription, its history/live hand-over, its bounded queue."""

    def __init__(self, ws: ServerConnection, queue_frames: int) -> None:
        self.ws = ws
        self.queue, self.outbox = anyio.create_memory_object_stream[bytes](queue_frames)  # encoded frames
        self.too_slow = anyio.Event()
        self.sub: Subscribe | None = None
        self.live = False
        self.last = 0
        self.buffer: list[EventFrames] = []
        self.overflowed = False
        self.queued = 0  # frames in the queue or being sent from it: live frames may skip it only at 0

    def start(self, sub: Subscribe) -> None:
        self.sub, self.live, self.last, self.buffer, self.overflowed = sub, False, sub.after, [], False

    def offer(self, frames: EventFrames, direct: dict[ServerConnection, list[bytes]]) -> None:
        """Called by the broadcaster for every new event; never blocks. Frames this connection can take
        at once are added to `direct[connection]`, for the broadcaster to write in one go."""
        if self.sub is None:
            return
        if not self.live:
            if len(self.buffer) >= BUFFER_EVENTS:
                self.buffer, self.overflowed = [], True  # the history reader will read these again
            else:
                self.buffer.append(frames)
            return
        self._deliver(frames, direct)

    def go_live(self) -> None:
        """After the history: deliver what was buffered beyond it, then take events as they come."""
        buffered, self.buffer = self.buffer, []
        self.live = True
        for frames in buffered:
            self._deliver(frames, None)

    async def send_history(self, data: bytes) -> None:
        """Queue a frame of the history: it may wait for the client, live frames never do."""
        await self.queue.send(data)
        self.queued += 1

    def sent(self) -> None:
        self.queued -= 1

    def _deliver(self, frames: EventFrames, direct: dict[ServerConnection, list[bytes]] | None) -> None:
        if frames.recorded.position <= self.last or self.sub is None:
            return
        self.last = frames.recorded.position
        for data in frames.for_subscription(self.sub):
            if direct is not None and self.queued == 0 and not self._behind():
                direct.setdefault(self.ws, []).append(data)
            else:
                self._enqueue(data)

    def _behind(self) -> bool:
        """Too many bytes written and not yet sent: the client stopped reading."""
        transport = self.ws.transport
        if transport is None or transport.get_write_buffer_size() <= UNSENT_BYTES:
            return False
        self._too_slow(transport.get_write_buffer_size(), "bytes")
        return True

    def push(self, frame: dict[str, Any]) -> None:
        """Queue a reply to this client alone."""
        self._enqueue(encode(frame))

    def _enqueue(self, data: bytes) -> None:
        if self.too_slow.is_set():
            return
        try:
            self.queue.send_nowait(data)
            self.queued += 1
        except anyio.WouldBlock:
            self._too_slow(self.queue.statistics().current_buffer_used, "frames")

    def _too_slow(self, behind: int, unit: str) -> None:
        self.sub = None
        log.warning("disconnecting a websocket client that fell %d %s behind", behind, unit)
        self.too_slow.set()  # the session's own task closes the connection


class Server:
    """Serves `/ws`, the JSON API, the MiroFish endpoints and the dashboard for a running Daemon."""

    def __init__(self, daemon: Any, config: ServerConfig) -> None:
        config.refuse_if_exposed()
        self.daemon, self.config = daemon, config
        self.sessions: set[Session] = set()
        self.reports: dict[str, ReportInfo] = {}
        self._ws: WSServer | None = None
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Server:
        start = await self.daemon.store.last_position()
        try:
            self._ws = await serve(self._handler, self.config.host, self.config.port, max_size=MAX_MESSAGE,
                                   process_request=self._process_request, server_header="simreportd",
                                   extensions=[SmallFramesPlainFactory()], create_connection=BodyConnection,
                                   open_timeout=None)  # BodyConnection bounds the wait for the request
        except OSError as exc:
            raise ConfigError(f"cannot listen on {self.config.host}:{self.config.port} ({exc.strerror}); "
                                  "stop the other process or set [server] port") from exc
        self._stack.push_async_callback(self._close)
        tasks = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tasks.cancel_scope.cancel)  # the broadcaster stops first
        tasks.start_soon(self._broadcast, start, name="broadcaster")
        log.info("serving on http://%s:%d/", self.config.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def _close(self) -> None:
        """Close every connection with 1001 (going away), shielded so a stopping daemon still says goodbye."""
        assert self._ws is not None
        with anyio.CancelScope(shield=True):
            self._ws.close(close_connections=True)
            with anyio.move_on_after(5):
                await self._ws.wait_closed()

    @property
    def port(self) -> int:
        assert self._ws is not None
        return int(self._ws.sockets[0].getsockname()[1])

    # --- HTTP -----------------------------------------------------------------------------------

    async def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        query = dict(parse_qsl(url.query))
        if refused := self._refusal(request):
            return refused
        if self.config.token and not self._authorized(request, query):
            return _response(401, "text/plain", b"a token is required: Authorization: Bearer <token> or ?token=")
        if url.path == "/ws":
            origin = request.headers.get("Origin")
            if origin and origin not in self.config.allowed_origins \
                    and urlsplit(origin).netloc != request.headers.get("Host"):
                return _response(403, "text/plain", f"origin {origin} is not allowed".encode())
            return None
        if request.method == "POST":
            assert isinstance(connection, BodyConnection)
            status, reply = await chat_request(self.daemon.chats, self.daemon.views, connection.body,
                                               connection.too_large)
            return _response(*http_api.json_reply(reply, status))
        if url.path == "/healthz":
            return _response(*http_api.json_reply(await self._health()))
        if url.path == "/metrics":
            return _response(200, http_api.TEXT, (await self._metrics()).encode())
        status, kind, body = await self.daemon.views.in_thread(http_api.handle, self.daemon.views.path, url.path,
                                                               query)
        return _response(status, kind, body)

    def _refusal(self, request: Request) -> Response | None:
        """The answer to a request we do not serve at all: bad method, doubled header, foreign Host."""
        allowed = "POST" if urlsplit(request.path).path in POST_PATHS else "GET"
        if request.method != allowed:
            response = _response(405, "text/plain", f"{request.method} is not allowed here; use {allowed}".encode())
            response.headers["Allow"] = allowed
            return response
        for name in SINGLE_HEADERS:
            if len(request.headers.get_all(name)) > 1:
                return _response(400, "text/plain", f"more than one {name} header".encode())
        host = request.headers.get("Host", "")
        if not host_allowed(host, self.config):
            return _response(403, "text/plain", f"host {host!r} is not allowed; add it to [server] "
                                                  "allowed_hosts if this server is meant to answer to it".encode())
        return None

    def _authorized(self, request: Request, query: dict[str, str]) -> bool:
        header = request.headers.get("Authorization", "")
        given = header[7:] if header.startswith("Bearer ") else query.get("token", "")
        return hmac.compare_digest(given.encode(), self.config.token.encode())

    async def _health(self) -> dict[str, Any]:
        head = await self.daemon.store.last_position()

        def failures() -> int:
            with reading(self.daemon.views.path) as conn:
                return len(fold_failures(conn))

        problems = [p for p in (self.daemon.store.problem, self.daemon.views.problem) if p]
        return {"status": "degraded" if problems else "ok", "problems": problems, "position": head,
                "projection_position": self.daemon.views.position, "websocket_clients": len(self.sessions),
                "fold_failures": await self.daemon.views.in_thread(failures)}

    async def _metrics(self) -> str:
        head = await self.daemon.store.last_position()

        def read() -> str:
            with reading(self.daemon.views.path) as conn:
                return http_api.metrics(conn, head, self.daemon.views.position, len(self.sessions))

        return str(await self.daemon.views.in_thread(read))

    # --- websockets -----------------------------------------------------------------------------

    async def _handler(self, ws: ServerConnection) -> None:
        """One connection: its sender, its history reader and its commands live in one task group."""
        session = Session(ws, QUEUE_FRAMES)
        self.sessions.add(session)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._send, session)
                tasks.start_soon(self._close_when_too_slow, session)
                await self._receive(session, tasks)
                tasks.cancel_scope.cancel()
        finally:
            self.sessions.discard(session)

    async def _receive(self, session: Session, tasks: anyio.abc.TaskGroup) -> None:
        reader: anyio.CancelScope | None = None
        with contextlib.suppress(ConnectionClosed):
            async for message in session.ws:
                command = parse_message(message)
                if isinstance(command, Subscribe) and command.after > (head := await self.daemon.store.last_position()):
                    session.push(ProtocolError("bad_after", f"after={command.after} is beyond the last position "
                                                            f"{head}; subscribe with after <= {head}").frame())
                elif isinstance(command, Subscribe):
                    if reader is not None:
                        reader.cancel()
                    session.start(command)
                    reader = await tasks.start(self._catch_up, session, command)
                else:
                    await self._command(session, command)

    async def _send(self, session: Session) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for data in session.outbox:
                await session.ws.send(data, text=True)
                session.sent()

    async def _close_when_too_slow(self, session: Session) -> None:
        await session.too_slow.wait()
        await session.ws.close(SLOW_CLIENT, f"too slow: reconnect with after={session.last}")

    async def _catch_up(self, session: Session, sub: Subscribe,
                        task_status: anyio.abc.TaskStatus[anyio.CancelScope] = anyio.TASK_STATUS_IGNORED) -> None:
        """History from `after`, `caught_up`, then live: the hand-over described at the top."""
        with anyio.CancelScope() as scope:
            task_status.started(scope)  # a new subscribe cancels this one
            position = sub.after
            while True:
                batch = await self.daemon.store.read_all(position, 500)
                for recorded in batch:
                    for data in EventFrames(recorded, await self.report_info(recorded)).for_subscription(sub):
                        await session.send_history(data)
                    position = session.last = recorded.position
                if len(batch) < 500 and not session.overflowed:
                    break
                session.overflowed = False
            await session.send_history(encode({"type": "caught_up", "position": position}))
            session.go_live()

    async def _command(self, session: Session,
                       command: GenerateReport | Interview | Chat | HandedOver | ProtocolError) -> None:
        if isinstance(command, ProtocolError):
            session.push(command.frame())
        elif isinstance(command, Chat):
            await self._chat(session, command)
        elif isinstance(command, HandedOver):
            await self._handed_over(session, command)
        elif isinstance(command, GenerateReport):
            try:
                report_id = await self.daemon.reports.request(command.simulation_id, trigger="websocket")
            except SimreportdError as exc:
                session.push(ProtocolError(exc.code, str(exc)).frame())
                return
            session.push({"type": "report_status", "report_id": report_id, "simulation_id": command.simulation_id,
                          "status": "pending"})
        else:
            await self._interview(session, command)

    async def _handed_over(self, session: Session, command: HandedOver) -> None:
        """A CLI command's work, done here because this daemon holds the store."""
        try:
            result = await self._perform(command)
        except SimreportdError as exc:
            session.push(ProtocolError(exc.code, str(exc)).frame())
            return
        session.push({"type": "command_result", "op": command.op, **result})

    async def _perform(self, command: HandedOver) -> dict[str, Any]:
        daemon = self.daemon
        if command.op == "ingest":
            return {"simulation_id": await actions.ingest_folder(daemon, Path(command.folder or ""))}
        if command.op == "request_report":
            return {"report_id": await actions.request_report(daemon, Path(command.folder or ""))}
        if command.op == "resume":
            overrides = actions.resume_overrides(command.max_tokens, command.timeout_s)
            note = await actions.resume_report(daemon, command.report_id or "", command.provider, command.model,
                                               overrides)
            return {"report_id": command.report_id, "note": note}
        if command.op == "fork":
            return {"report_id": await actions.fork(daemon, command.report_id or "", command.at or 0,
                                                    command.provider, command.model)}
        rebuilt = await actions.rebuild(daemon)
        return {"before": rebuilt.before, "after": rebuilt.after, "position": rebuilt.position,
                "position_before": rebuilt.position_before}

    async def _interview(self, session: Session, command: Interview) -> None:
        interviews = getattr(self.daemon, "interviews", None)
        if interviews is None:
            session.push(ProtocolError("unsupported", "interviews are not available in this daemon").frame())
            return
        try:
            answer = await interviews.ask(command.report_id or command.simulation_id, command.agent_id,
                                          command.question, command.platform)
        except SimreportdError as exc:
            session.push(ProtocolError(exc.code, str(exc)).frame())
            return
        session.push({"type": "interview_answer", **answer})

    async def _chat(self, session: Session, command: Chat) -> None:
        """Open a chat (no question) or answer a question in it, its steps streamed as `chat_answer` frames."""
        chats = self.daemon.chats
        try:
            chat_id, report_id = await chat_target(chats, command.report_id, command.chat_id, "websocket")
            if command.question is None:
                session.push({"type": "chat_opened", "chat_id": chat_id, "report_id": report_id})
                return

            async def step(event: ChatEvent) -> None:
                if (frame := step_frame(chat_id, event)) is not None:
                    session.push(frame)

            answered = await chats.ask(chat_id, command.question, command.history, on_event=step)
        except SimreportdError as exc:
            session.push(ProtocolError(exc.code, str(exc)).frame())
            return
        session.push(answer_frame(chat_id, report_id, answered))

    async def _broadcast(self, after: int) -> None:
        with contextlib.suppress(StoreClosed):  # the daemon is shutting down
            async for batch in self.daemon.store.subscribe_batches(after=after):
                if isinstance(batch, CaughtUp):
                    continue
                infos = [await self.report_info(recorded) for recorded in batch]  # before: no await below
                direct: dict[ServerConnection, list[bytes]] = {}
                for recorded, info in zip(batch, infos, strict=True):
                    frames = EventFrames(recorded, info)  # encoded once for every client
                    for session in list(self.sessions):
                        session.offer(frames, direct)
                for connection, data in direct.items():  # nothing was queued meanwhile: order is kept
                    write_frames(connection, data)

    async def report_info(self, recorded: Recorded) -> ReportInfo | None:
        """The report's simulation and section count, for notifications (cached, filled from the log)."""
        if not is_report_stream(recorded.stream):
            return None
        report_id = recorded.data["report_id"]
        if recorded.type == "OutlinePlanned" and report_id in self.reports:
            self.reports[report_id] = ReportInfo(self.reports[report_id].simulation_id,
                                                 len(recorded.data["sections"]))
        if report_id not in self.reports:
            events = await self.daemon.store.read_stream(recorded.stream)
            outline = [r for r in events if r.type == "OutlinePlanned" and r.position <= recorded.position]
            total = len(outline[-1].data["sections"]) if outline else 0
            requested = [r for r in events if r.type == "ReportRequested"]
            simulation_id = requested[0].data["simulation_id"] if requested else ""
            self.reports[report_id] = ReportInfo(simulation_id, total)
        return self.reports[report_id]


def write_frames(connection: ServerConnection, frames: list[bytes]) -> None:
    """Text frames to one client in one write: what `websockets.broadcast` does for one frame, for many."""
    if connection.protocol.state is not State.OPEN or connection.transport.is_closing():
        return
    for data in frames:
        connection.protocol.send_text(data)
    chunks = connection.protocol.data_to_send()
    connection.transport.write(b"".join(chunks))
    if b"" in chunks and connection.transport.can_write_eof():  # only after a close: as websockets does
        connection.transport.write_eof()


def _response(status: int, content_type: str, body: bytes) -> Response:
    headers = Headers([("Content-Type", content_type), ("Content-Length", str(len(body))),
                       ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")])
    return Response(status, HTTPStatus(status).phrase, headers, body)
