"""Websocket fan-out: 100 clients subscribed while events are appended at 1,000 per second.

Run by hand: `python bench/notify.py [CLIENTS] [RATE] [SECONDS]`. A child process runs the
daemon (store, projections, server) and appends small events at RATE per second; this
process holds the clients and measures, for every delivered event, the time from its
commit (`recorded_at`, set at commit time) to its receipt.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from websockets.asyncio.client import connect


async def serve_and_append(folder: Path, rate: int, seconds: float) -> None:
    from simreportd.daemon.config import Config
    from simreportd.daemon.service import Daemon
    from simreportd.events.models import PlanningStarted

    config = Config().with_paths(folder / "events.sqlite3", [folder / "sims"], folder / "reports")
    config = config.model_copy(update={"server": config.server.model_copy(update={"port": 0})})
    async with Daemon(config) as daemon:
        task = asyncio.create_task(daemon.run(ingest=False, serve=True))
        while daemon.server is None or daemon.server._ws is None:
            await asyncio.sleep(0.01)
        print(daemon.server.port, flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # the clients are connected
        interval, started = 1 / rate, time.perf_counter()
        for n in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, started + n * interval - time.perf_counter()))
            await daemon.store.append("report-bench", [PlanningStarted(report_id="bench")])
        await asyncio.sleep(2)
        task.cancel()


async def client(url: str, latencies: list[float], ready: asyncio.Event, total: list[int]) -> None:
    async with connect(url, max_queue=None) as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
        async for message in ws:
            received = time.time()
            if '"caught_up"' in message:
                ready.set()
                continue
            recorded = json.loads(message)["recorded_at"]
            latencies.append(received - datetime.fromisoformat(recorded).timestamp())
            total[0] += 1


async def main(clients: int, rate: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen([sys.executable, __file__, "--serve", tmp, str(rate), str(seconds)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = int(server.stdout.readline())
        latencies: list[float] = []
        total = [0]
        readies = [asyncio.Event() for _ in range(clients)]
        tasks = [asyncio.create_task(client(f"ws://127.0.0.1:{port}/ws", latencies, r, total)) for r in readies]
        for r in readies:
            await r.wait()
        started = time.perf_counter()
        server.stdin.write("go\n")
        server.stdin.flush()
        expected = clients * int(rate * seconds)
        while total[0] < expected and time.perf_counter() - started < seconds + 30:
            await asyncio.sleep(0.2)
        elapsed = time.perf_counter() - started
        for t in tasks:
            t.cancel()
        server.wait(timeout=60)
    latencies.sort()
    print(f"clients {clients}, {rate} events/s for {seconds:g} s: {total[0]:,} of {expected:,} deliveries")
    print(f"commit to receipt: p50 {statistics.median(latencies) * 1000:.1f} ms, "
          f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms (goal: p99 under 50 ms)")
    print(f"deliveries per second: {total[0] / elapsed:,.0f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(serve_and_append(Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
    else:
        args = [int(a) for a in sys.argv[1:3]] + [float(a) for a in sys.argv[3:4]]
        asyncio.run(main(*(args + [100, 1000, 10.0][len(args):])))  # type: ignore[arg-type]
