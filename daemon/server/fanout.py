"""The websocket fan-out (docs/protocol.md): sessions, their history/live hand-over, one broadcaster.

One broadcaster task follows the log and offers each event to every session. A session
that subscribes with `after` first reads the history itself (buffering what the
broadcaster offers meanwhile), then goes live: no gap, nothing twice.

Live frames are written by the broadcaster straight into every connection that has nothing
queued: all the frames of one read of the log in one write per client (`FrameSink.write_frames`),
so a burst of events costs each client one `send()`, not one per event, and no task switch. The
frames of a read are chosen and serialized once per kind of subscription, not once per client:
the broadcaster holds the event loop for a time that grows with the clients or with the events,
not with their product (a read of 500 events for 100 clients took the loop 0.5 s, delaying the
commits behind it, and so the next read grew).
Everything else (history, replies, frames behind those) goes through the session's bounded
queue and its sender task, so order is kept. A client that stops reading is disconnected
(code 4008) when its queue or its unsent bytes pass a bound, instead of slowing anyone else.

What all the clients together hold in the daemon (frames queued, and written but not yet sent) has
one owner, `SendBudget`, and one limit, `[server] send_buffer_mb`: past it the clients holding the
most are disconnected (4008) until it is kept again, so that a crowd that subscribes and does not
read costs bounded memory whatever the per-client bounds add up to.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, Protocol

import anyio
import anyio.abc
from starlette.websockets import WebSocket

from simreportd.daemon.host import Host
from simreportd.errors import StoreClosed, WaitTimeout
from simreportd.events.codec import Recorded
from simreportd.events.positions import Position
from simreportd.events.streams import is_report_stream, report_id_of
from simreportd.projections.standing import FOLDED, Standing, standing_of

from .connections import FRAMES_EXTENSION, TextFrames
from .edge import OncePerPeriod
from .protocol import EventFrames, ProtocolError, Subscribe, encode, notifies, parse_message
from .run_progress import PROGRESSING, SimulationProgress
from .ws_commands import client_address, perform

log = logging.getLogger("simreportd.daemon.server.fanout")

QUEUE_FRAMES = 1000  # frames a client may fall behind by before it is disconnected
UNSENT_BYTES = 1 << 20  # bytes written to a client's connection but not yet sent, before it is disconnected
BUFFER_EVENTS = 10_000
MAX_MESSAGE = 64 * 1024
SLOW_CLIENT = 4008
GOING_AWAY = 1001
CLOSE_TIMEOUT_S = 5.0  # for a close frame to get past what a slow client has not read yet
HISTORY_READERS = 8  # subscribers whose next page of history is read and encoded at once: a crowd subscribing
# from position 0 takes its turns, and the event loop keeps time for plain requests (bench/abuse.py)
HISTORY_PAGES = (20, 500)  # events of history read at once for one client: a page doubles while the client
# keeps up and drops to the least when it has to be waited for (decoded events cost ~10x their frames)
FOLDED_WAIT_S = 5.0  # how long a report's frames wait for the read models to fold its events (a stalled fold:
# a full disk, a rebuild) before they go anyway
BROADCAST_PAGE = 500  # events of a live read of the log
KEPT_ALONE = sorted(PROGRESSING)  # what the broadcaster reads of the log passed while no session was open
IDLE_S = 3600.0  # a wait for the next commit; polls for other processes' appends meanwhile (`wait_for`)
HISTORY_BYTES = 64 * 1024  # history frames queued for a client before its history reader waits for it; a page
# of history is encoded up to this many bytes too, so a client that does not read holds at most twice it


SubscriptionKey = tuple[frozenset[str], str | None, str | None]  # what a subscription's frames depend on


class SendBudget:
    """What all the websocket clients hold in the daemon, and its limit (`[server] send_buffer_mb`).

    `used` counts the frames queued for every session, as they are queued and sent; the bytes
    written to a connection and not yet sent are read from it when the budget is kept (`keep`),
    once per read of the log and whenever `used` alone passes the limit.
    """

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0
        self.disconnected = OncePerPeriod(log, "disconnected %d websocket client(s) that did not read (code 4008)")

    def keep(self, sessions: Iterable[Session]) -> None:
        """Disconnect the clients holding the most until the others together hold no more than the limit
        (what a disconnected client holds is on its way out: it counts no more)."""
        held = [(session.held(), session) for session in sessions if not session.too_slow.is_set()]
        total = sum(size for size, _ in held)
        for size, session in sorted(held, key=lambda pair: pair[0], reverse=True):
            if total <= self.limit:
                return
            session.disconnect(f"it held {size} bytes when all clients held {total}, more than "
                               f"[server] send_buffer_mb = {self.limit >> 20}")
            total -= size


class FrameSink(Protocol):
    """Where a session's frames go: the connection (`connections.FramesProtocol`)."""

    def write_frames(self, frames: TextFrames) -> bool: ...

    async def send_texts(self, frames: list[bytes]) -> bool: ...

    def unsent_bytes(self) -> int: ...

    def abort(self) -> None: ...


class Session:
    """One websocket client: its subscription, its history/live hand-over, its bounded queue."""

    def __init__(self, websocket: WebSocket, sink: FrameSink, queue_frames: int, budget: SendBudget) -> None:
        self.websocket, self.sink, self.budget = websocket, sink, budget
        self.queue, self.outbox = anyio.create_memory_object_stream[bytes](queue_frames)  # encoded frames
        self.too_slow = anyio.Event()
        self.sub: Subscribe | None = None
        self.live = False
        self.last = 0
        self.buffer: list[EventFrames] = []
        self.overflowed = False
        self.queued = 0  # frames in the queue or being sent from it: live frames may skip it only at 0
        self.queued_bytes = 0  # their size: what this client costs in memory (counted in `budget` too)
        self._room = anyio.Event()

    def start(self, sub: Subscribe) -> None:
        self.sub, self.live, self.last, self.buffer, self.overflowed = sub, False, sub.after, [], False

    def offer(self, read: list[EventFrames], shared: dict[SubscriptionKey, TextFrames]) -> None:
        """Called by the broadcaster with each read of the log; never blocks. A connection with nothing
        queued is written the read's frames at once, those of its kind of subscription (`shared`)."""
        if self.sub is None:
            return
        if not self.live:
            for frames in read:
                if len(self.buffer) >= BUFFER_EVENTS:
                    self.buffer, self.overflowed = [], True  # the history reader will read these again
                else:
                    self.buffer.append(frames)
            return
        if self.queued or read[0].recorded.position <= self.last:
            for frames in read:
                self._deliver(frames)
            return
        key = (self.sub.topics, self.sub.report_id, self.sub.simulation_id)
        if (out := shared.get(key)) is None:
            out = shared[key] = TextFrames([data for frames in read for data in frames.for_subscription(self.sub)])
        self.last = read[-1].recorded.position
        if out.payloads and not self._behind():
            self.sink.write_frames(out)

    def go_live(self) -> None:
        """After the history: deliver what was buffered beyond it, then take events as they come."""
        buffered, self.buffer = self.buffer, []
        self.live = True
        for frames in buffered:
            self._deliver(frames)

    async def room(self) -> bool:
        """Wait until this client has taken its queued frames down to HISTORY_BYTES; whether it had to."""
        waited = False
        while self.queued_bytes > HISTORY_BYTES:
            self._room, waited = anyio.Event(), True
            await self._room.wait()
        return waited

    async def send_history(self, page: list[bytes]) -> None:
        """Queue a page of the history (read once `room` was made): it may wait for the client, live frames
        never do. A client that does not read holds at most 2 x HISTORY_BYTES of history, however long the log."""
        for data in page:
            await self.queue.send(data)
            self._count(1, len(data))

    def push(self, frame: dict[str, Any]) -> None:
        """Queue a reply to this client alone."""
        self._enqueue(encode(frame))

    async def send_queued(self) -> None:
        """The sender task: the queue's frames, in order, as fast as the client reads them."""
        async for data in self.outbox:
            if not await self.sink.send_texts([data]):
                return
            self._count(-1, -len(data))
            if self.queued_bytes <= HISTORY_BYTES:
                self._room.set()

    def held(self) -> int:
        """Bytes this client costs the daemon now: frames queued, and written to it but not yet sent."""
        return self.queued_bytes + self.sink.unsent_bytes()

    def drop(self) -> None:
        """Give back to the budget what is queued for a client that is gone or being closed."""
        self._count(-self.queued, -self.queued_bytes)

    async def close_when_too_slow(self) -> None:
        await self.too_slow.wait()
        # not `self.last`: that is the last event taken in, and what was queued behind the client is dropped
        await close(self, SLOW_CLIENT, "too slow: reconnect with after = the position of the last event you got")

    def _deliver(self, frames: EventFrames) -> None:
        """One event's frames through the queue, behind what is queued already."""
        if frames.recorded.position <= self.last or self.sub is None:
            return
        self.last = frames.recorded.position
        for data in frames.for_subscription(self.sub):
            self._enqueue(data)

    def _behind(self) -> bool:
        """Too many bytes written and not yet sent: the client stopped reading."""
        unsent = self.sink.unsent_bytes()
        if unsent <= UNSENT_BYTES:
            return False
        self.disconnect(f"fell {unsent} bytes behind")
        return True

    def _enqueue(self, data: bytes) -> None:
        if self.too_slow.is_set():
            return
        try:
            self.queue.send_nowait(data)
            self._count(1, len(data))
        except anyio.WouldBlock:
            self.disconnect(f"fell {self.queue.statistics().current_buffer_used} frames behind")

    def _count(self, frames: int, size: int) -> None:
        self.queued += frames
        self.queued_bytes += size
        self.budget.used += size

    def disconnect(self, why: str) -> None:
        """Disconnect this client (4008, by its own task); counted in one log line per period for all of them."""
        if self.too_slow.is_set():
            return
        self.sub = None
        self.budget.disconnected.count(why)
        self.too_slow.set()


async def close(session: Session, code: int, reason: str) -> None:
    """Close with `code`; a client that does not take the close frame in time is dropped."""
    with anyio.move_on_after(CLOSE_TIMEOUT_S) as waited, contextlib.suppress(RuntimeError, OSError):
        await session.websocket.close(code, reason)  # RuntimeError: closed already
    if waited.cancelled_caught:
        session.sink.abort()


class Fanout:
    """Every websocket session of the server, and the broadcaster that feeds them from the log."""

    def __init__(self, daemon: Host, send_buffer: int = 64 << 20) -> None:
        self.daemon = daemon
        self.budget = SendBudget(send_buffer)
        self.sessions: set[Session] = set()
        self.reports: dict[str, tuple[int, Standing]] = {}  # report id -> (version, standing then)
        self.closing = False
        self.ended = anyio.Event()  # set whenever the last session ends while closing
        self.history_reads = anyio.CapacityLimiter(HISTORY_READERS)
        self.gave_up_at: Position | None = None  # a wait for the fold ran out here; none again until it is folded
        self.progress = SimulationProgress(self.sessions)  # live `simulation_progress` frames (run_progress.py)
        self.position = Position(0)  # how far the broadcaster has read the log
        self.unseen: Position | None = None  # from here to `position` the log passed while no session was open

    async def serve(self, websocket: WebSocket) -> None:
        """One connection (the `/ws` route): its sender, its history reader and its commands in one task group."""
        await websocket.accept()
        session = Session(websocket, websocket.scope["extensions"][FRAMES_EXTENSION]["sink"], QUEUE_FRAMES,
                          self.budget)
        if self.closing:
            await close(session, GOING_AWAY, "the server is stopping")
            return
        self.sessions.add(session)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(session.send_queued)
                tasks.start_soon(session.close_when_too_slow)
                await self._receive(session, tasks)
                tasks.cancel_scope.cancel()
        finally:
            self.sessions.discard(session)
            session.drop()
            if self.closing and not self.sessions:
                self.ended.set()

    async def close(self) -> None:
        """Close every session with 1001 (going away) and wait, bounded, for them to end."""
        self.closing = True
        for session in list(self.sessions):
            session.sub = None  # no more live frames: the close frame is the last
            with anyio.CancelScope(shield=True):
                await close(session, GOING_AWAY, "the server is stopping")
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT_S):
            if self.sessions:
                await self.ended.wait()

    async def _receive(self, session: Session, tasks: anyio.abc.TaskGroup) -> None:
        reader: anyio.CancelScope | None = None
        while (message := await session.websocket.receive())["type"] == "websocket.receive":
            command = parse_message(message.get("text") or message.get("bytes") or b"")
            if isinstance(command, Subscribe) and command.after > (head := await self.daemon.store.last_position()):
                session.push(ProtocolError("bad_after", f"after={command.after} is beyond the last position "
                                                        f"{head}; subscribe with after <= {head}").frame())
            elif isinstance(command, Subscribe):
                if command.simulation_id:  # a folder's name or config id filters as the id it stands for
                    command = replace(command, simulation_id=await self.daemon.reports.simulation_named(
                        command.simulation_id))
                if reader is not None:
                    reader.cancel()
                session.start(command)
                reader = await tasks.start(self._catch_up, session, command)
            else:
                await perform(self.daemon, command, session.push, client_address(session.websocket))

    async def _catch_up(self, session: Session, sub: Subscribe,
                        task_status: anyio.abc.TaskStatus[anyio.CancelScope] = anyio.TASK_STATUS_IGNORED) -> None:
        """History from `after`, `caught_up`, then live: the hand-over described at the top."""
        with anyio.CancelScope() as scope:
            task_status.started(scope)  # a new subscribe cancels this one
            position, page = sub.after, HISTORY_PAGES[0]
            while True:
                waited = await session.room()  # a page is read only when the client has taken the last one
                page = HISTORY_PAGES[0] if waited else min(HISTORY_PAGES[1], page * 2)
                async with self.history_reads:  # sent outside it: a slow client holds no place
                    batch = await self.daemon.store.read_all(position, page)
                    frames, at, taken = await self._history_page(batch, sub)
                read, batch = len(batch), []  # only the frames are kept while the client is waited for
                await session.send_history(frames)
                if self.budget.used > self.budget.limit:
                    self.budget.keep(self.sessions)
                position = session.last = at if taken else position
                if taken < read:  # the page's bytes were reached: read no more events than fitted
                    page = max(HISTORY_PAGES[0], taken)
                elif read < page and not session.overflowed:
                    break
                session.overflowed = False
            await session.send_history([encode({"type": "caught_up", "position": position})])
            session.go_live()

    async def _history_page(self, batch: list[Recorded], sub: Subscribe) -> tuple[list[bytes], int, int]:
        """The frames of a page of history, up to HISTORY_BYTES (and at least one event's): the frames, the
        position of the last event they cover, and how many events of `batch` they cover."""
        frames: list[bytes] = []
        size = at = taken = 0
        for recorded in batch:
            if size >= HISTORY_BYTES:
                break
            more = EventFrames(recorded, await self.report_info(recorded)).for_subscription(sub)
            frames += more
            size += sum(map(len, more))
            at, taken = recorded.position, taken + 1
        return frames, at, taken

    async def broadcast(self, after: int) -> None:
        """Follow the log from `after` and offer each event to every session, until the store closes.

        While no session is open nothing is read: a session opened later reads its history itself, and the
        runs' progress passed meanwhile is read once a session is there to be told (reading a big ingest's
        every event for nobody cost the daemon a read and a row an event, a daemon with no dashboard open)."""
        store, self.position = self.daemon.store, Position(after)
        with contextlib.suppress(StoreClosed):  # the daemon is shutting down
            while True:
                try:
                    head = await store.wait_for(Position(self.position + 1), timeout=IDLE_S)  # the head in hand
                except WaitTimeout:
                    continue
                if not self.sessions:
                    self.unseen = self.position if self.unseen is None else self.unseen
                    self.position = head
                    self.reports.clear()  # a report's outline may pass unseen
                    continue
                if self.unseen is not None:
                    await self._see_progress(self.unseen, self.position)
                while self.position < head:
                    batch = await store.read_all(self.position, BROADCAST_PAGE, until=head)
                    self.position = batch[-1].position if batch else head
                    if batch:
                        await self._offer(batch)

    async def _see_progress(self, after: Position, until: Position) -> None:
        """Note the runs' progress the log passed while no session was open, up to `until`."""
        while after < until:
            batch = await self.daemon.store.read_all(after, BROADCAST_PAGE, types=KEPT_ALONE, until=until)
            after = batch[-1].position if batch else until
            self.progress.saw(batch)
        self.unseen = None

    async def _offer(self, batch: list[Recorded]) -> None:
        """One read of the log to every session. Its frames live only here, not until the next read: after a
        crowd has gone, frames made during it would keep whole allocator arenas from being given back."""
        if (notifying := [r.position for r in batch if notifies(r)]) and self._told_of_notifications():
            await self._folded(notifying[-1])
        read = [EventFrames(recorded, await self.report_info(recorded)) for recorded in batch]
        shared: dict[SubscriptionKey, TextFrames] = {}  # encoded once for every client
        for session in list(self.sessions):
            session.offer(read, shared)
        self.progress.saw(batch)
        self.budget.keep(self.sessions)

    def _told_of_notifications(self) -> bool:
        """Whether any session takes notifications: event frames alone never wait for the fold (a wait for
        the fold child's round trip was most of a subscriber's latency at 200 events a second)."""
        return any(session.sub is not None and "notifications" in session.sub.topics for session in self.sessions)

    async def _folded(self, position: Position) -> None:
        """Wait until the read models include `position`: a notification (section_ready, report_status...) makes
        a client read the report view, which must then show what it announced. Other frames do not wait. Once a
        wait has run out (a stalled fold, a rebuild), notifications go at once until the fold passes where it
        ran out: a stall delays one batch by FOLDED_WAIT_S, not each batch that comes during it."""
        if self.gave_up_at is not None and self.daemon.views.position < self.gave_up_at:
            return
        self.gave_up_at = None
        try:
            await self.daemon.views.wait_for(position, timeout=FOLDED_WAIT_S)
        except WaitTimeout:
            self.gave_up_at = position

    async def report_info(self, recorded: Recorded) -> Standing | None:
        """Where the event's report stands once the event is folded (standing.py's rule, as the report view
        says it): folded on from the report's last event seen, else from the stream's events that move it (a
        report first seen mid-stream, a history page behind the live one)."""
        if not is_report_stream(recorded.stream):
            return None
        report_id = report_id_of(recorded.stream)
        version, standing = self.reports.get(report_id, (0, Standing(report_id)))
        if recorded.version == version:
            return standing
        if recorded.version != version + 1:
            moves = await self.daemon.store.read_stream(recorded.stream, types=sorted(FOLDED))
            standing = standing_of((r.event for r in moves if r.version < recorded.version), report_id)
        if recorded.type in FOLDED:  # decoded only then: most of a report's events do not move it
            standing = standing.after(recorded.event)
        self.reports[report_id] = recorded.version, standing
        return standing
