"""Answers too long to hold, written a page at a time as the client reads them (docs/protocol.md#security).

A report's whole agent log can be tens of megabytes (a model's replies are kept whole). Built
whole for each asker, thirty clients that never read it held a gigabyte, and kept it after they
left. Here a page (about PAGE_BYTES) is read from the read models, in a worker thread, only once
the client has taken the one before (uvicorn sends the next only when its write buffer has
drained), so a reader holds about two pages; one that takes nothing for WRITE_TIMEOUT_S is
dropped (one log line per period, with the count), and one that leaves stops the reading.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
from starlette.types import Receive, Scope, Send

from simreportd.daemon.host import Host
from simreportd.projections import report_queries
from simreportd.projections.sqlite import reading

from .connections import CONNECTION
from .edge import OncePerPeriod

log = logging.getLogger("simreportd.daemon.server.streaming")
PAGE_BYTES = 256 * 1024  # read from the read models at once for one client (a longer line is a page of its own)
WRITE_TIMEOUT_S = 30.0  # for a client to take a page; past it the connection is dropped
slow_readers = OncePerPeriod(log, f"dropped %d reader(s) that took nothing for {WRITE_TIMEOUT_S:g} s")

Lines = Callable[[sqlite3.Connection, str, int], Iterator[str]]


class Dropped:
    """Readers the streams dropped since the start: the server gives their memory back after (app.py; what a
    cancelled write leaves is held in reference cycles until a collection)."""

    total = 0


def page(views: Path, lines: Lines, report_id: str, start: int) -> list[str]:
    """The report's lines from `start` on, as many as fill PAGE_BYTES (at least one, if any are left)."""
    with reading(views) as conn:
        taken: list[str] = []
        size = 0
        for line in lines(conn, report_id, start):
            taken.append(line)
            size += len(line)
            if size >= PAGE_BYTES:
                break
        return taken


class LogAnswer:
    """MiroFish's agent or console log of one report (`table`), written a page at a time (an ASGI app): from
    line `start` on, `{"success": true, "data": {"from_line", "has_more", "logs", "total_lines"}}`, or, with
    `start` None, the whole log as `/stream` answers it, `{"success": true, "data": {"logs", "count"}}`."""

    def __init__(self, daemon: Host, table: str, report_id: str, start: int | None) -> None:
        self.daemon, self.table, self.report_id, self.start = daemon, table, report_id, start

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        lines, as_json = LOGS[self.table]
        first, count, views = self.start or 0, 0, self.daemon.views
        taken = await views.in_thread(page, views.path, lines, self.report_id, first)  # a missing file: still a 503
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"Content-Type", b"application/json"), (b"Cache-Control", b"no-store"),
            (b"X-Content-Type-Options", b"nosniff")]})
        writer = Writer(send, scope.get("state", {}).get(CONNECTION))
        body = b'{"success": true, "data": {' + \
            (b"" if self.start is None else b'"from_line": %d, "has_more": false, ' % first) + b'"logs": ['
        while taken:
            body += (b"," if count else b"") + ",".join(map(as_json, taken)).encode()
            count += len(taken)
            if not await writer.write(body):
                return
            body = b""
            taken = await views.in_thread(page, views.path, lines, self.report_id, first + count)
        if self.start is None:
            await writer.end(body + b'], "count": %d}}' % count)
        else:
            total = await views.in_thread(log_length, views.path, self.table, self.report_id)
            await writer.end(body + b'], "total_lines": %d}}' % total)


class Writer:
    """Body chunks for one connection: each within WRITE_TIMEOUT_S, or the connection is dropped."""

    def __init__(self, send: Send, connection: Any) -> None:
        self.send, self.connection = send, connection  # the EdgeH11 the request came on

    async def write(self, body: bytes) -> bool:
        """Send `body`; whether the client is still there to read more."""
        with anyio.move_on_after(WRITE_TIMEOUT_S) as late:
            await self.send({"type": "http.response.body", "body": body, "more_body": True})
        if late.cancelled_caught:
            slow_readers.count(f"a reader of {len(body)} bytes at {self.connection.client if self.connection else '?'}")
            Dropped.total += 1
            if self.connection is not None:
                self.connection.transport.abort()  # its unsent bytes are freed now, not when it reads
            await self.end(b"")  # returns once uvicorn has seen the connection go
            return False
        return self.connection is None or not self.connection.transport.is_closing()

    async def end(self, body: bytes) -> None:
        await self.send({"type": "http.response.body", "body": body, "more_body": False})


def log_length(views: Path, table: str, report_id: str) -> int:
    with reading(views) as conn:
        return report_queries.log_length(conn, table, report_id)


def json_string(line: str) -> str:
    return json.dumps(line, ensure_ascii=False)


# a log's lines, and how one becomes a JSON value: agent-log lines are JSON text already, console-log lines text
LOGS: dict[str, tuple[Lines, Callable[[str], str]]] = {
    "agent_log": (report_queries.agent_log_lines, str), "console_log": (report_queries.console_log_lines, json_string)}
