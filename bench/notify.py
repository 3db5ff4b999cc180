"""Websocket fan-out: 100 clients subscribed while events are appended at 200 per second.

Run by hand: `python bench/notify.py [CLIENTS] [RATE] [SECONDS] [PROCESSES] [--without-fold]`.
Two servers, one after the other, for the same clients in the same run:

- simreportd: a child process runs the daemon (store, projections, server) and appends
  small events arriving at RATE per second (each append starts on time, without waiting
  for the one before to commit: the store's group commit takes what has arrived), and
  clients subscribe to the `events` topic;
- bare: a child process runs a plain `websockets` server that, at the same rate, puts one
  pre-encoded frame of the same shape on each client's queue, and a task per client sends
  it (no compression, no store): the least work a fan-out can do with this library.

The clients run in PROCESSES processes, so the server is what is measured. For every
delivered frame the time from its commit (`recorded_at`) to its receipt is recorded; p50 and
p99 are over every frame sent, a frame never delivered counting as infinitely late, so a
server that drops frames cannot show a good p99. The default rate, 200 events a second, is
one the bare sender delivers in full on a 2-core machine shared with other work (at 1,000 it
delivered under half of its frames, and its percentiles then said nothing).

CPU is given for the server (simreportd's daemon process and, apart, its fold child) and for the
clients: on a shared machine a server that burns CPU after each event delays the clients' wake-ups,
and so their latencies, even when it writes every frame at once. `--without-fold` runs the daemon
without its fold child (a diagnostic, not a way to run it: the read models stay empty), to show what
the fold's work costs the clients. The clients offer permessage-deflate, as browsers do; simreportd
agrees to it and sends these small frames plain (deflate.py), the bare server declines it: on the
wire both send the same uncompressed frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.asyncio.server import serve

GOALS = "goals: 100% delivered, p50 and p99 <= 2x bare's, over every frame sent"


async def send_at_rate(rate: int, seconds: float, send) -> None:  # noqa: ANN001
    interval, started = 1 / rate, time.perf_counter()
    for n in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, started + n * interval - time.perf_counter()))
        await send(n)


async def serve_simreportd(folder: Path, rate: int, seconds: float, fold: bool = True) -> None:
    from simreportd.daemon import fold_child
    from simreportd.daemon.config import Config
    from simreportd.daemon.service import Daemon
    from simreportd.events.models import PlanningStarted

    if not fold:  # the diagnostic: no fold child is started (nothing in the bench waits for the read models)
        async def no_fold(self: fold_child.FoldChild) -> None:
            await asyncio.Event().wait()

        fold_child.FoldChild.run = no_fold  # type: ignore[method-assign]

    config = Config().with_paths(folder / "events.sqlite3", [folder / "sims"], folder / "reports")
    config = config.model_copy(update={"server": config.server.model_copy(update={"port": 0})})
    async with Daemon(config) as daemon:
        task = asyncio.create_task(daemon.run(ingest=False, serve=True))
        while daemon.server is None:
            await asyncio.sleep(0.01)
        print(daemon.server.port, flush=True)
        await wait_for_go()  # the clients are connected
        appends: set[asyncio.Task] = set()

        async def arrive(n: int) -> None:  # events arrive at the rate, whatever a commit takes
            appends.add(task := asyncio.create_task(daemon.store.append(
                "report-bench", [PlanningStarted(report_id="bench")])))
            task.add_done_callback(appends.discard)

        await send_at_rate(rate, seconds, arrive)
        await asyncio.gather(*appends)
        await asyncio.sleep(2)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task  # before the store closes: the daemon's last fold needs it
    print_cpu()


async def serve_bare(rate: int, seconds: float) -> None:
    queues: set[asyncio.Queue[str | None]] = set()

    async def handler(ws) -> None:  # noqa: ANN001
        await ws.recv()  # the subscribe frame
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        queues.add(queue)
        await ws.send(json.dumps({"type": "caught_up", "position": 0}))
        while (frame := await queue.get()) is not None:
            await ws.send(frame)

    async def fan_out(n: int) -> None:
        frame = json.dumps({"type": "event", "position": n + 1, "stream": "report-bench", "version": n + 1,
                            "event_type": "PlanningStarted", "data": {"report_id": "bench"},
                            "recorded_at": datetime.now(UTC).isoformat(), "event_id": f"{n:032x}"})
        for queue in queues:
            queue.put_nowait(frame)

    async with serve(handler, "127.0.0.1", 0, compression=None) as server:
        print(server.sockets[0].getsockname()[1], flush=True)
        await wait_for_go()
        await send_at_rate(rate, seconds, fan_out)
        await asyncio.sleep(2)
        for queue in queues:
            queue.put_nowait(None)  # the handlers end, so the server can close
    print_cpu()


def print_cpu() -> None:
    """The server's CPU seconds, its own and its ended children's (the fold child), for `run` to read."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(json.dumps({"cpu_s": own.ru_utime + own.ru_stime, "children_cpu_s": children.ru_utime + children.ru_stime}),
          flush=True)


async def clients(url: str, count: int, expected: int, seconds: float) -> None:
    """`count` clients in this process; prints how many frames arrived and their latencies (ms)."""
    latencies: list[float] = []
    ready = [asyncio.Event() for _ in range(count)]
    got = [0] * count

    async def one(i: int) -> None:
        async with connect(url, max_queue=None) as ws:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
            async for message in ws:
                received = time.time()
                if '"caught_up"' in message:
                    ready[i].set()
                    continue
                start = message.index('"recorded_at": "') + 16
                recorded = message[start:message.index('"', start)]
                latencies.append((received - datetime.fromisoformat(recorded).timestamp()) * 1000)
                got[i] += 1
                if got[i] == expected:
                    return

    tasks = [asyncio.create_task(one(i)) for i in range(count)]
    for r in ready:
        await r.wait()
    print("ready", flush=True)
    await wait_for_go()
    await asyncio.wait(tasks, timeout=seconds + 10)
    for t in tasks:
        t.cancel()
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"delivered": sum(got), "latencies": [round(x, 2) for x in latencies],
                      "cpu_s": own.ru_utime + own.ru_stime}), flush=True)


async def wait_for_go() -> None:
    """A child's start signal, its parent's "go"; then it ends the moment its parent does (stdin closes), so a
    bench stopped or killed half-way leaves no server or clients behind, each in a session of its own."""
    if not await asyncio.to_thread(sys.stdin.readline):
        os._exit(1)

    def exit_with_parent() -> None:
        sys.stdin.read()
        os._exit(1)

    threading.Thread(target=exit_with_parent, daemon=True).start()


def child(*args: str) -> subprocess.Popen:
    """A server or a group of clients, each in a session of its own: Linux shares the CPU between sessions
    (autogroup) before processes, so the clients do not take the server's share (they would be on other
    machines), and a loaded machine delays both servers alike."""
    return subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)


def go(process: subprocess.Popen) -> None:
    process.stdin.write("go\n")
    process.stdin.flush()


def run(server_args: list[str], count: int, rate: int, seconds: float, processes: int) -> dict[str, float]:
    server = child(*server_args)
    url = f"ws://127.0.0.1:{int(server.stdout.readline())}/ws"
    expected = int(rate * seconds)
    shares = [count // processes + (i < count % processes) for i in range(processes)]
    groups = [child("--clients", url, str(n), str(expected), str(seconds)) for n in shares if n]
    for g in groups:
        assert g.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    for p in (*groups, server):
        go(p)
    results = [json.loads(g.stdout.readline()) for g in groups]
    elapsed = time.perf_counter() - started
    cpu = json.loads(server.stdout.readline())
    server.wait(timeout=60)
    delivered = sum(r["delivered"] for r in results)
    never = [math.inf] * (expected * count - delivered)  # every frame sent counts: a lost one as never arriving
    latencies = sorted([x for r in results for x in r["latencies"]] + never)
    return {"delivered": delivered, "expected": expected * count, "p50": statistics.median(latencies),
            "p99": latencies[int(len(latencies) * 0.99)], "per_second": delivered / min(elapsed, seconds + 10),
            "cpu_s": cpu["cpu_s"] + cpu["children_cpu_s"], "fold_cpu_s": cpu["children_cpu_s"],
            "clients_cpu_s": sum(r["cpu_s"] for r in results)}


def main(count: int, rate: int, seconds: float, processes: int, fold: bool = True) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ours = run(["--serve", tmp, str(rate), str(seconds), *([] if fold else ["--without-fold"])],
                   count, rate, seconds, processes)
    bare = run(["--bare", str(rate), str(seconds)], count, rate, seconds, processes)
    print(f"{count} clients in {processes} processes, {rate} events/s for {seconds:g} s"
          f"{'' if fold else ', simreportd without its fold child'} ({GOALS})")
    print(f"{'server':<12}{'delivered':>22}{'p50 ms':>9}{'p99 ms':>9}{'deliveries/s':>14}{'server CPU s':>14}"
          f"{'of it fold':>12}{'clients CPU s':>15}")
    for name, r in (("simreportd", ours), ("bare", bare)):
        print(f"{name:<12}{r['delivered']:>10,} of {r['expected']:>7,} ({r['delivered'] / r['expected']:>4.0%})"
              f"{r['p50']:>9.1f}{r['p99']:>9.1f}{r['per_second']:>14,.0f}{r['cpu_s']:>14.1f}{r['fold_cpu_s']:>12.1f}"
              f"{r['clients_cpu_s']:>15.1f}")
    print(f"simreportd / bare: deliveries per second {ours['per_second'] / bare['per_second']:.2f}x, "
          f"p50 {ours['p50'] / bare['p50']:.2f}x, p99 {ours['p99'] / bare['p99']:.2f}x, "
          f"server CPU {ours['cpu_s'] / bare['cpu_s']:.2f}x")


if __name__ == "__main__":
    mode = sys.argv[1:2]
    if mode == ["--serve"]:
        asyncio.run(serve_simreportd(Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                                     "--without-fold" not in sys.argv))
    elif mode == ["--bare"]:
        asyncio.run(serve_bare(int(sys.argv[2]), float(sys.argv[3])))
    elif mode == ["--clients"]:
        asyncio.run(clients(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])))
    else:
        given = [a for a in sys.argv[1:] if a != "--without-fold"]
        args = [int(a) for a in given[0:2]] + [float(a) for a in given[2:3]] + [int(a) for a in given[3:4]]
        main(*(args + [100, 200, 10.0, 4][len(args):]), fold="--without-fold" not in sys.argv)  # type: ignore[arg-type]
