"""A connection flood against a daemon held to 1,024 open files: does it stay up, answer and stay small?

Run by hand: `python bench/abuse.py [WEBSOCKETS] [IDLE] [LOG_COPY]` (defaults 2000 and 1000), or
`python bench/abuse.py --tiny` (20 and 10, a short flood: to check the script runs, not to measure). It writes a small
finished simulation, starts `simreportd run` under `prlimit --nofile=1024` with its report written,
then, from many loopback addresses (127.0.1.x and 127.0.2.x, as many clients would come from many
hosts), opens WEBSOCKETS websocket connections that subscribe from position 0, and IDLE TCP sockets
that never send a byte (slowloris). Meanwhile it asks `/api/reports` from 127.0.0.1 once a second.

Printed: how many websockets were accepted and refused (1013), the slowest answer to the
authorised request during the flood, the daemon's log lines during it, its RSS before, at the
peak and after the clients left (from /proc), and whether ingest still worked (a second
simulation written during the flood is ingested).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus, WebSocketException

PORT = 0  # a free one, found at start (`free_port`)
FLOOD_S, SETTLE_S = 15.0, 12.0  # the flood's length; the wait for the daemon to give memory back after it
TOKEN = os.environ.get("ABUSE_TOKEN", "")  # set: the daemon requires it; only the measured request has it
AFTER = os.environ.get("ABUSE_AFTER", "0")  # the position subscribers start after (0: the whole log; or "head")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def simreportd(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "simreportd", *args], cwd=cwd, check=True, capture_output=True)


def _after() -> int:
    if AFTER != "head":
        return int(AFTER)
    with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{PORT}/healthz",
                                headers={"Authorization": f"Bearer {TOKEN}"}), timeout=10) as answer:
        return int(json.loads(answer.read())["position"])


async def websocket(n: int, held: list, outcome: dict[str, int]) -> None:
    """One client from its own loopback address, subscribed from the start of the log, never reading fast."""
    source = (f"127.0.{1 + n // 250}.{1 + n % 250}", 0)
    try:
        ws = await connect(f"ws://127.0.0.1:{PORT}/ws", open_timeout=30, close_timeout=2, sock=await _bound(source))
        if not os.environ.get("ABUSE_QUIET"):
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": _after()}))
        held.append(ws)
        outcome["accepted"] += 1
    except InvalidStatus as exc:
        outcome[f"refused {exc.response.status_code}"] = outcome.get(f"refused {exc.response.status_code}", 0) + 1
    except (WebSocketException, OSError, TimeoutError) as exc:
        outcome[type(exc).__name__] = outcome.get(type(exc).__name__, 0) + 1


async def _bound(source: tuple[str, int]) -> socket.socket:
    """A socket connected to the daemon from `source`: the daemon sees each client at its own address."""
    sock = socket.socket()
    sock.bind(source)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", PORT))
    return sock


def idle(n: int) -> socket.socket | None:
    try:
        sock = socket.socket()
        sock.bind((f"127.0.{3 + n // 250}.{1 + n % 250}", 0))
        sock.connect(("127.0.0.1", PORT))
        return sock
    except OSError:
        return None


def slowest_answer(seconds: float) -> float:
    """Ask /api/reports once a second for `seconds`; the slowest answer (s), or inf if one failed."""
    worst, until = 0.0, time.monotonic() + seconds
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            request = urllib.request.Request(f"http://127.0.0.1:{PORT}/api/reports",
                                             headers={"Authorization": f"Bearer {TOKEN}"} if TOKEN else {})
            with urllib.request.urlopen(request, timeout=10) as answer:
                answer.read()
            worst = max(worst, time.monotonic() - started)
        except OSError:
            return float("inf")
        time.sleep(1)
    return worst


async def flood(count: int, idle_count: int, pid: int, work: Path) -> dict[str, object]:
    held: list = []
    outcome = {"accepted": 0}
    sockets = [s for s in (idle(n) for n in range(idle_count)) if s is not None]
    for start in range(0, count, 200):
        await asyncio.gather(*(websocket(n, held, outcome) for n in range(start, min(count, start + 200))))
    simreportd("simulate", str(work / "sims" / "sim_during"), "--agents", "8", "--rounds", "3", cwd=work)
    worst = await asyncio.to_thread(slowest_answer, FLOOD_S)
    peak = rss_mb(pid)
    await asyncio.gather(*(ws.close() for ws in held))  # at once: each may wait out its close timeout
    for sock in sockets:
        sock.close()
    return {"outcome": outcome, "idle sockets held": len(sockets), "slowest answer s": round(worst, 3),
            "peak RSS MB": round(peak, 1)}


def main(args: list[str]) -> None:
    count = int(args[0]) if len(args) > 0 else 2000
    idle_count = int(args[1]) if len(args) > 1 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        simreportd("simulate", str(work / "sims" / "sim_flood"), "--agents", "16", "--rounds", "6", cwd=work)
        (work / "config.toml").write_text(f'[store]\npath = "state/events.sqlite3"\n[watch]\nroots = ["sims"]\n'
                                          f'rescan_seconds = 1\n[reports]\noutput_dir = "reports"\n'
                                          f'[server]\nport = {PORT}\ntoken = "{TOKEN}"\n')
        simreportd("-c", "config.toml", "report", "sims/sim_flood", "--wait", cwd=work)
        log = (work / "daemon.log").open("w")
        daemon = subprocess.Popen(["prlimit", "--nofile=1024", sys.executable, "-m", "simreportd", "-c", "config.toml",
                                   "run"], cwd=work, stderr=log)
        try:
            print("daemon log:", work / "daemon.log", file=sys.stderr)
            while slowest_answer(0.1) == float("inf"):
                time.sleep(0.2)
            before, lines_before = rss_mb(daemon.pid), len((work / "daemon.log").read_text().splitlines())
            started = time.monotonic()
            figures = asyncio.run(flood(count, idle_count, daemon.pid, work))
            minutes = (time.monotonic() - started) / 60
            lines = len((work / "daemon.log").read_text().splitlines()) - lines_before
            time.sleep(SETTLE_S)  # the daemon gives memory back within its next check (every 5 s) after a crowd left
            after = rss_mb(daemon.pid)
            ingested = json.loads(urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{PORT}/api/simulations", headers={"Authorization": f"Bearer {TOKEN}"}),
                timeout=10).read())
            print(json.dumps({**figures, "RSS before MB": round(before, 1), "RSS after MB": round(after, 1),
                              "log lines during the flood": lines, "flood minutes": round(minutes, 2),
                              "ingested during the flood": any(s["simulation_id"] == "sim_during"
                                                               for s in ingested["simulations"]),
                              "daemon alive": daemon.poll() is None}, indent=2))
        finally:
            daemon.terminate()
            daemon.wait(timeout=30)
            keep = Path(args[2]) if len(args) > 2 else None
            if keep:
                keep.write_bytes((work / "daemon.log").read_bytes())


if __name__ == "__main__":
    PORT = free_port()
    if sys.argv[1:] == ["--tiny"]:
        FLOOD_S, SETTLE_S = 2.0, 0.0
        main(["20", "10"])
    else:
        main(sys.argv[1:])
