"""Structured concurrency (docs/architecture.md#concurrency-and-ownership): no stray tasks or threads, bounded cancellation."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import anyio
import pytest

from simreportd.projections.sqlite import connect_views, in_thread, reading

ROOT = Path(__file__).resolve().parents[2]
LONG_QUERY = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000000)"
              " SELECT count(*) FROM n")


def test_package_code_starts_no_task_or_thread_outside_anyio() -> None:
    stray = re.compile(r"asyncio\.(create_task|ensure_future|to_thread|gather|wait_for|TaskGroup)\b|"
                       r"loop\.run_in_executor|threading\.Thread\(")
    found = [f"{path.relative_to(ROOT)}:{n}" for folder in ("events", "projections", "analysis", "agent", "daemon")
             for path in (ROOT / folder).rglob("*.py")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if stray.search(line)]
    assert found == []


@pytest.mark.anyio
async def test_a_cancelled_reader_interrupts_its_query_and_never_abandons_the_thread(tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite3"
    connect_views(views, readonly=False).close()
    started, finished = anyio.Event(), []

    def scan() -> int:
        with reading(views) as conn:
            anyio.from_thread.run_sync(started.set)
            try:
                return conn.execute(LONG_QUERY).fetchone()[0]
            finally:
                finished.append(True)  # the thread got back before its caller returned

    with anyio.fail_after(30):  # the scan alone would run for hours
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(in_thread, scan)
            await started.wait()
            tasks.cancel_scope.cancel()
    assert finished == [True]


@pytest.mark.anyio
async def test_an_uncancelled_query_error_still_reaches_the_caller(tmp_path: Path) -> None:
    views = tmp_path / "views.sqlite3"
    connect_views(views, readonly=False).close()

    def broken() -> None:
        with reading(views) as conn:
            conn.execute("SELECT * FROM no_such_table")

    with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
        await in_thread(broken)


class TricklingServer:
    """An HTTP server on 127.0.0.1 that answers one byte at a time, slower than any read timeout notices."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        with self.sock.accept()[0] as conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
            while not self.stop.wait(0.1):  # one byte every 0.1 s: each socket read succeeds
                try:
                    conn.sendall(b" ")
                except OSError:
                    return


@pytest.mark.anyio
async def test_an_llm_call_has_a_deadline_for_the_whole_answer_not_each_read() -> None:
    from simreportd.agent.llm.providers import OpenAIProvider
    from simreportd.errors import LLMError
    from simreportd.events.models import LLMRequested

    server = TricklingServer()
    provider = OpenAIProvider(server.base_url, "", timeout_s=1.0, max_concurrency=1)
    request = LLMRequested(report_id="r", call_id="c1", purpose="section", model="m", messages_added=[],
                           fingerprint="")
    try:
        with anyio.fail_after(20):  # a read timeout alone would wait for all 100,000 bytes (hours)
            with pytest.raises(LLMError, match=r"within 1s \(\[llm\] timeout_s\)"):
                await provider.complete(request, [{"role": "user", "content": "hi"}], 1)
    finally:
        server.stop.set()
        await provider.close()
